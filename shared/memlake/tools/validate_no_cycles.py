"""validate_no_cycles: would a follows/causes relationship close a cycle? (changes nothing)"""

from __future__ import annotations

from pydantic import Field, field_validator

from memlake.models import EpisodeId, Input, Output
from memlake.relationships import ORDER_TYPES, EdgeView
from memlake.relationships.models import RelationshipType
from memlake.relationships.ops import describe_path
from memlake.relationships.views import require_episodes
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class ValidateNoCyclesInput(Input):
    from_episode_id: EpisodeId
    to_episode_id: EpisodeId
    relationship_type: RelationshipType = Field(description="follows or causes")

    @field_validator("relationship_type")
    @classmethod
    def _ordering(cls, value: str) -> str:
        if value not in ORDER_TYPES:
            raise ValueError(
                f"only follows and causes must stay acyclic; {value} relationships may form"
                " cycles, so there is nothing to validate"
            )
        return value


class ValidateNoCyclesOutput(Output):
    valid: bool = Field(description="True when adding the relationship keeps the graph acyclic")
    cycle_detected: bool
    cycle_path: list[str] | None = Field(
        None, description="Episode ids of the cycle it would close: [from, to, ..., from]"
    )
    message: str


def run(ctx: ToolContext, args: ValidateNoCyclesInput) -> ValidateNoCyclesOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    require_episodes(snap, [args.from_episode_id], field="from_episode_id")
    require_episodes(snap, [args.to_episode_id], field="to_episode_id")
    cycle = EdgeView.of_snapshot(snap).cycle_if_added(args.from_episode_id, args.to_episode_id)
    if cycle is None:
        return ValidateNoCyclesOutput(
            valid=True,
            cycle_detected=False,
            cycle_path=None,
            message="No cycle: the relationship can be added",
        )
    return ValidateNoCyclesOutput(
        valid=False,
        cycle_detected=True,
        cycle_path=cycle,
        message=f"Adding this relationship would create a cycle: {describe_path(cycle)}",
    )


SPEC = ToolSpec(
    name="validate_no_cycles",
    title="Validate no cycles",
    description=(
        "Whether a follows or causes link from -> to would close a cycle, and which;"
        " writes nothing."
    ),
    input_model=ValidateNoCyclesInput,
    output_model=ValidateNoCyclesOutput,
    annotations=READ_ONLY,
    run=run,
)
