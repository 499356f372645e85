"""link_episode_to_concept: link an episode and a concept (both sides in one commit)."""

from __future__ import annotations

from pydantic import Field

from memlake.lake import Transaction
from memlake.layers import links
from memlake.layers.fields import ConceptId
from memlake.layers.models import BothSides
from memlake.models import EpisodeId, Input
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class LinkEpisodeToConceptInput(Input):
    episode_id: EpisodeId
    concept_id: ConceptId
    position: int | None = Field(None, ge=0, le=100_000, description="Order within the episode")
    confidence: float = Field(1.0, ge=0.0, le=1.0)


class LinkEpisodeToConceptOutput(BothSides):
    episode_id: str
    concept_id: str
    created: bool = Field(description="False when the link existed (position/confidence updated)")
    position: int | None = None
    confidence: float


def run(ctx: ToolContext, args: LinkEpisodeToConceptInput) -> LinkEpisodeToConceptOutput:
    def change(txn: Transaction) -> LinkEpisodeToConceptOutput:
        created = links.link(txn, args.episode_id, args.concept_id, args.position, args.confidence)
        return LinkEpisodeToConceptOutput(
            episode_id=args.episode_id,
            concept_id=args.concept_id,
            created=created,
            position=args.position,
            confidence=args.confidence,
            **links.both_sides(txn, args.episode_id, args.concept_id),
        )

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="link_episode_to_concept",
    title="Link episode to concept",
    description=("Record that a concept was drawn from an episode; linking again updates it."),
    input_model=LinkEpisodeToConceptInput,
    output_model=LinkEpisodeToConceptOutput,
    annotations=Annotations(read_only=False, destructive=False, idempotent=True),
    run=run,
)
