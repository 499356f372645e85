"""unlink_episode_from_concept: remove an episode-concept link (both sides in one commit)."""

from __future__ import annotations

from pydantic import Field

from memlake.lake import Transaction
from memlake.layers import links
from memlake.layers.fields import ConceptId
from memlake.layers.models import BothSides
from memlake.models import EpisodeId, Input
from memlake.tools.base import Annotations, ToolContext, ToolSpec


class UnlinkEpisodeFromConceptInput(Input):
    episode_id: EpisodeId
    concept_id: ConceptId


class UnlinkEpisodeFromConceptOutput(BothSides):
    episode_id: str
    concept_id: str
    unlinked: int = Field(description="1 if the link existed and is now gone, else 0")


def run(ctx: ToolContext, args: UnlinkEpisodeFromConceptInput) -> UnlinkEpisodeFromConceptOutput:
    def change(txn: Transaction) -> UnlinkEpisodeFromConceptOutput:
        unlinked = links.unlink(txn, args.episode_id, args.concept_id)
        return UnlinkEpisodeFromConceptOutput(
            episode_id=args.episode_id,
            concept_id=args.concept_id,
            unlinked=unlinked,
            **links.both_sides(txn, args.episode_id, args.concept_id),
        )

    return ctx.lake.commit(ctx.tenant, change)


SPEC = ToolSpec(
    name="unlink_episode_from_concept",
    title="Unlink episode from concept",
    description=(
        "Remove the link between an episode and a concept; a pair not linked returns unlinked=0."
    ),
    input_model=UnlinkEpisodeFromConceptInput,
    output_model=UnlinkEpisodeFromConceptOutput,
    annotations=Annotations(read_only=False, destructive=True, idempotent=True),
    run=run,
)
