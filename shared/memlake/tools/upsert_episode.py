"""upsert_episode: create or update a structured episode (events, timing, platform, links)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memlake.episodes import TABLE, EpisodeInput, VectorsPending, public_view
from memlake.errors import InvalidArgument
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.layers import episode_versions, links
from memlake.layers.fields import (
    MAX_CONCEPT_IDS,
    MAX_MODALITIES,
    MAX_TAGS,
    ClientName,
    ConceptId,
    Modality,
    ModelName,
    Platform,
    Tag,
    ThreadId,
    Timezone,
    Title,
    unique,
)
from memlake.models import (
    MAX_SUMMARY_CHARS,
    Context,
    EpisodeId,
    IsoTime,
    Output,
)
from memlake.timeutil import now
from memlake.tools.base import Annotations, ToolContext, ToolSpec

LIST_FIELDS = ("tags", "input_modalities", "output_modalities", "concept_ids")


class UpsertEpisodeInput(EpisodeInput):
    id: EpisodeId | None = Field(None, description="Episode to update; omit to create")
    events: str | None = Field(
        None, min_length=1, description="Markdown narration with times (needed to create)"
    )
    source_title: Title | None = None
    summary: str | None = Field(None, max_length=MAX_SUMMARY_CHARS)
    context: Context | None = None
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    started_at: IsoTime | None = Field(None, description="When it began (ISO 8601)")
    ended_at: IsoTime | None = Field(None, description="When it ended (ISO 8601)")
    timezone: Timezone | None = None
    platform: Platform | None = None
    client: ClientName | None = None
    model: ModelName | None = None
    voice_mode: bool | None = None
    input_modalities: list[Modality] | None = Field(None, max_length=MAX_MODALITIES)
    output_modalities: list[Modality] | None = Field(None, max_length=MAX_MODALITIES)
    qualities: dict[str, Any] | None = None
    source_thread_id: ThreadId | None = Field(None, description="Its thread; fixed once set")
    concept_ids: list[ConceptId] | None = Field(
        None,
        max_length=MAX_CONCEPT_IDS,
        description="Replaces its concept links (in order)",
    )


class UpsertEpisodeOutput(Output):
    """Ids, times and counts of the write (docs/decisions/1112); get_episode shows the episode."""

    id: str
    created: bool = Field(description="True when the episode was new")
    revision: int = Field(description="1 when created, +1 per update that changed something")
    version: int = Field(description="Store version of this revision (see get_episode_history)")
    created_at: str
    updated_at: str | None = None
    source_thread_id: str | None = Field(None, description="The thread it derives from")
    concept_ids: list[str] = Field(default_factory=list, description="Its concepts now")
    vectors_pending: VectorsPending = 0


def _given(args: UpsertEpisodeInput) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for key in args.model_fields_set - {"id"}:
        value = getattr(args, key)
        if key in LIST_FIELDS:
            value = unique(value)
        given[key] = value
    return given


def run(ctx: ToolContext, args: UpsertEpisodeInput) -> UpsertEpisodeOutput:
    size = len((args.events or "").encode())
    if size > ctx.settings.max_content_bytes:
        raise InvalidArgument(
            f"events is {size:,} bytes; the limit is {ctx.settings.max_content_bytes:,}",
            hint="Split the experience into several episodes, or keep the key passages.",
        )
    episode_id = args.id or new_id()
    given = _given(args)
    at = now()
    # search: embed new text before the commit lock (loaded here, not at tools/list)
    from memlake.search.index.backlog import vectors_pending
    from memlake.search.index.text import vector_texts
    from memlake.search.indexing import embed_ahead

    existing = ctx.lake.snapshot(ctx.tenant).table(TABLE).get(episode_id) if args.id else None
    preview = episode_versions.preview(existing, given)
    new_text = existing is None or vector_texts(preview) != vector_texts(existing)
    pending = embed_ahead(ctx.services.search, preview) if new_text else None

    def change(txn: Transaction) -> UpsertEpisodeOutput:
        row, created, version = episode_versions.upsert(
            txn, episode_id, given, at=at, default_context=ctx.settings.default_context
        )
        concept_ids = [lk["concept_id"] for lk in links.links_of_episode(txn, episode_id)]
        view = public_view(row, full_content=False)
        return UpsertEpisodeOutput(
            id=view["id"],
            revision=view["revision"],
            created_at=view["created_at"],
            updated_at=view["updated_at"],
            source_thread_id=view["source_thread_id"],
            concept_ids=concept_ids,
            created=created,
            version=version,
            vectors_pending=vectors_pending(txn.snapshot, episode_id, rewritten=True)
            if pending is None
            else pending,
        )

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="upsert_episode",
    title="Upsert episode",
    description=(
        "Create or update a structured episode. With id: given fields replace, omitted"
        " ones stay, null clears. For a plain memory, add_episode is simpler."
    ),
    input_model=UpsertEpisodeInput,
    output_model=UpsertEpisodeOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=False),
    run=run,
    null_clears=True,
)
