"""get_episode: one episode with its full content."""

from __future__ import annotations

from pydantic import Field

from memlake.episodes import (
    TABLE,
    EpisodeFields,
    VectorsPending,
    not_found,
    public_view,
    unreadable,
    view_or_skip,
)
from memlake.layers.links import linked_concepts, links_of_episode
from memlake.layers.models import LinkedConcept
from memlake.models import EpisodeId, Input
from memlake.search.index.backlog import vectors_pending
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetEpisodeInput(Input):
    id: EpisodeId
    include_entities: bool = Field(False, description="Also return its concepts")


class GetEpisodeOutput(EpisodeFields):
    concept_ids: list[str] = Field(
        default_factory=list, description="Concepts linked to this episode now"
    )
    entities: list[LinkedConcept] | None = Field(
        None, description="Linked concepts, with position and confidence, when include_entities"
    )
    vectors_pending: VectorsPending = 0


def run(ctx: ToolContext, args: GetEpisodeInput) -> GetEpisodeOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    row = snap.table(TABLE).get(args.id)
    if row is None:
        raise not_found(args.id)
    concept_ids = [lk["concept_id"] for lk in links_of_episode(snap, args.id)]
    pending = vectors_pending(snap, args.id)
    out = view_or_skip(
        row,
        lambda r: GetEpisodeOutput(
            **public_view(r), concept_ids=concept_ids, vectors_pending=pending
        ),
    )
    if out is None:
        raise unreadable(args.id)
    if args.include_entities:
        out.entities = [LinkedConcept(**c) for c in linked_concepts(snap, args.id)]
    return out


SPEC = ToolSpec(
    name="get_episode",
    title="Get episode",
    description=("Read one episode in full by id."),
    input_model=GetEpisodeInput,
    output_model=GetEpisodeOutput,
    annotations=READ_ONLY,
    run=run,
)
