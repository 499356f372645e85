"""get_episode: one episode with its full content."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memlake.episodes import TABLE, not_found, public_view
from memlake.models import EpisodeId, Input, Output
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetEpisodeInput(Input):
    id: EpisodeId
    include_entities: bool = Field(False, description="Also return the linked concepts")


class GetEpisodeOutput(Output):
    id: str
    content: str
    content_truncated: bool
    summary: str | None
    context: str | None
    metadata: dict[str, Any]
    entity_ids: list[str]
    created_at: str
    started_at: str | None
    ended_at: str | None
    entities: list[dict[str, Any]] | None = Field(
        None, description="Linked concepts, when include_entities is true"
    )


def run(ctx: ToolContext, args: GetEpisodeInput) -> GetEpisodeOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    row = snap.table(TABLE).get(args.id)
    if row is None:
        raise not_found(args.id)
    out = GetEpisodeOutput(**public_view(row))
    if args.include_entities:
        out.entities = []
    return out


SPEC = ToolSpec(
    name="get_episode",
    title="Get episode",
    description="Retrieve one episodic memory by id, with its full content.",
    input_model=GetEpisodeInput,
    output_model=GetEpisodeOutput,
    annotations=READ_ONLY,
    run=run,
)
