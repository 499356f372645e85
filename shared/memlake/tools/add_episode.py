"""add_episode: store a conversation or experience as an episode."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memlake import idempotency
from memlake.episodes import TABLE, EpisodeInput, VectorsPending, public_view, to_columns
from memlake.errors import InvalidArgument
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.layers.links import link_extracted
from memlake.models import (
    MAX_ENTITY_IDS,
    MAX_SUMMARY_CHARS,
    Context,
    EntityId,
    IsoTime,
    Output,
)
from memlake.search.indexing import embed_ahead
from memlake.timeutil import now
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class AddEpisodeInput(EpisodeInput):
    content: str = Field(min_length=1)
    summary: str | None = Field(None, max_length=MAX_SUMMARY_CHARS)
    metadata: dict[str, Any] | None = None
    context: Context | None = Field(None, description="Project; default: the server's")
    entity_ids: list[EntityId] | None = Field(
        None, max_length=MAX_ENTITY_IDS, description="Concept ids it mentions (linked)"
    )
    started_at: IsoTime | None = Field(None, description="When it began (ISO 8601)")
    ended_at: IsoTime | None = Field(None, description="When it ended (ISO 8601)")
    idempotency_key: idempotency.IdempotencyKey | None = idempotency.key_field()


class EntityLinkFailure(Output):
    entity_id: str
    reason: str


class AddEpisodeOutput(Output):
    """What a write returns (docs/decisions/1112): the id, times and counts, plus the fields
    seed 000/001 lists for add_episode (a 500-character content preview, summary, metadata,
    context); the rest of the episode is get_episode's."""

    id: str
    content: str = Field(description="The first 500 characters of the content")
    content_truncated: bool = Field(False, description="True when content is longer")
    summary: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    context: str | None = None
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    linked_entities: int = Field(description="How many entity_ids were linked to known concepts")
    failed_entity_ids: list[EntityLinkFailure] = Field(default_factory=list)
    vectors_pending: VectorsPending = 0


def _created(row: dict[str, Any]) -> dict[str, Any]:
    view = public_view(row, full_content=False)
    return {k: view[k] for k in AddEpisodeOutput.model_fields if k in view}


def run(ctx: ToolContext, args: AddEpisodeInput) -> AddEpisodeOutput:
    size = len(args.content.encode())
    if size > ctx.settings.max_content_bytes:
        raise InvalidArgument(
            f"content is {size:,} bytes; the limit is {ctx.settings.max_content_bytes:,}",
            hint="Split it into several episodes, or store a summary with the key passages.",
        )
    scope = idempotency.Scope.of(SPEC.name, args, ctx.settings.idempotency_ttl_seconds)
    first = idempotency.earlier_result(ctx.lake, ctx.tenant, scope, AddEpisodeOutput)
    if first is not None:  # a retry: no embedding, no write
        return first
    episode_id = new_id()
    created = now()
    entity_ids = list(dict.fromkeys(args.entity_ids or []))
    given = args.model_dump(include={"content", "summary", "metadata", "started_at", "ended_at"})
    row = {
        "id": episode_id,
        **to_columns(given),
        "context": args.context or ctx.settings.default_context,
        "entity_ids": entity_ids,
        "created_at": created,
        "updated_at": created,
    }

    def change(txn: Transaction) -> AddEpisodeOutput:
        txn.put(TABLE, row)
        # seed 000's extracted_from: each existing concept is linked at its position (1.0)
        missing = link_extracted(txn, episode_id, entity_ids)
        failures = [
            EntityLinkFailure(entity_id=e, reason="no concept with this id") for e in missing
        ]
        return AddEpisodeOutput(
            **_created(row),
            linked_entities=len(entity_ids) - len(failures),
            failed_entity_ids=failures,
            vectors_pending=pending,
        )

    pending = embed_ahead(
        ctx.services.search, row
    )  # outside the commit lock, bounded (search indexing)
    # the key's record commits with the episode; a racing retry gets this result back
    return idempotency.commit_once(ctx.lake, ctx.tenant, scope, AddEpisodeOutput, change)


SPEC = ToolSpec(
    name="add_episode",
    title="Add episode",
    description=(
        "Save a memory (conversation, decision, notes) with when it happened and its"
        " project. To edit it or add title, tags, platform, use upsert_episode."
        " idempotency_key makes retries safe."
    ),
    input_model=AddEpisodeInput,
    output_model=AddEpisodeOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
)
