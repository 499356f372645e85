"""get_audit_log: who changed the relationship graph, what and when (newest first)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from memlake import audit
from memlake.errors import InvalidArgument
from memlake.ids import ID_PATTERN
from memlake.models import EpisodeId, Input, Output
from memlake.relationships.models import RelationshipId
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetAuditLogInput(Input):
    relationship_id: RelationshipId | None = Field(None, description="Only this relationship")
    episode_id: EpisodeId | None = Field(None, description="Only relationships of this episode")
    action: Literal["add_relationship", "remove_relationship", "cascade_delete"] | None = None
    limit: int = Field(20, ge=1, le=100, description="Page size, 1-100")
    cursor: str | None = Field(None, max_length=512, description="next_cursor of the last page")


class AuditRecord(Output):
    id: str
    created_at: str = Field(description="When the change committed (UTC)")
    tenant: str
    token_id: str = Field(description="Non-secret id of the caller's token")
    action: str
    relationship_id: str | None
    from_episode_id: str | None
    to_episode_id: str | None
    relationship_type: str | None
    details: dict[str, Any]


class GetAuditLogOutput(Output):
    records: list[AuditRecord]
    count: int
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null at end")


def _fingerprint(args: GetAuditLogInput) -> str:
    raw = json.dumps([args.relationship_id, args.episode_id, args.action])
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def _decode_cursor(cursor: str, fp: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        last_id, got_fp = json.loads(raw)
        if not isinstance(last_id, str) or not ID_PATTERN.match(last_id):
            raise ValueError
    except (ValueError, TypeError):
        raise InvalidArgument(
            "cursor is not valid", hint="Pass next_cursor exactly as a previous call returned it."
        ) from None
    if got_fp != fp:
        raise InvalidArgument(
            "cursor belongs to a listing with other filters",
            hint="Keep relationship_id, episode_id and action the same while paging.",
        )
    return last_id


def run(ctx: ToolContext, args: GetAuditLogInput) -> GetAuditLogOutput:
    fp = _fingerprint(args)
    before = _decode_cursor(args.cursor, fp) if args.cursor else None
    records, more = audit.newest_first(
        ctx.lake.snapshot(ctx.tenant),
        limit=args.limit,
        before_id=before,
        relationship_id=args.relationship_id,
        episode_id=args.episode_id,
        action=args.action,
    )
    next_cursor = None
    if more:
        raw = json.dumps([records[-1]["id"], fp]).encode()
        next_cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return GetAuditLogOutput(
        records=[AuditRecord(**r) for r in records], count=len(records), next_cursor=next_cursor
    )


SPEC = ToolSpec(
    name="get_audit_log",
    title="Get audit log",
    description=(
        "The relationship graph's audit trail, newest first: every add, remove and cascade"
        " (relationships removed with a deleted episode), with who (token id), when and what."
        " Filter by relationship_id, episode_id or action; page with next_cursor."
    ),
    input_model=GetAuditLogInput,
    output_model=GetAuditLogOutput,
    annotations=READ_ONLY,
    run=run,
)
