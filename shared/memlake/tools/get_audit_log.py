"""get_audit_log: who changed the relationship graph, what and when (newest first)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from memlake import audit
from memlake.cursors import ID, Cursor, pager
from memlake.models import EpisodeId, Input, Output
from memlake.relationships.models import RelationshipId
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetAuditLogInput(Input):
    relationship_id: RelationshipId | None = None
    episode_id: EpisodeId | None = None
    action: Literal["add_relationship", "remove_relationship", "cascade_delete"] | None = None
    limit: int = Field(20, ge=1, le=100)
    cursor: Cursor = None


class AuditRecord(Output):
    id: str
    created_at: str = Field(description="When the change committed (UTC)")
    tenant: str
    token_id: str = Field(description="Non-secret id of the caller's token")
    action: str
    relationship_id: str | None = None
    from_episode_id: str | None = None
    to_episode_id: str | None = None
    relationship_type: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class GetAuditLogOutput(Output):
    records: list[AuditRecord]
    count: int
    next_cursor: str | None = Field(
        None, description="Pass as cursor for the next page; absent at the end"
    )


def run(ctx: ToolContext, args: GetAuditLogInput) -> GetAuditLogOutput:
    cursors = pager(
        ctx.lake.store,
        ctx.tenant,
        "audit",
        (ID,),
        args.relationship_id,
        args.episode_id,
        args.action,
        configured_key=ctx.settings.cursor_key,
    )
    before = str(cursors.decode(args.cursor)[0]) if args.cursor else None
    records, more = audit.newest_first(
        ctx.lake.snapshot(ctx.tenant),
        limit=args.limit,
        before_id=before,
        relationship_id=args.relationship_id,
        episode_id=args.episode_id,
        action=args.action,
    )
    next_cursor = cursors.encode([records[-1]["id"]]) if more else None
    return GetAuditLogOutput(
        records=[AuditRecord(**r) for r in records], count=len(records), next_cursor=next_cursor
    )


SPEC = ToolSpec(
    name="get_audit_log",
    title="Get audit log",
    description=("Who added or removed which relationship, and when, newest first."),
    input_model=GetAuditLogInput,
    output_model=GetAuditLogOutput,
    annotations=READ_ONLY,
    run=run,
)
