"""get_episode_history: earlier revisions of an episode (point-in-time reads of the lake)."""

from __future__ import annotations

from pydantic import Field

from memlake.episodes import public_view
from memlake.layers import episode_versions
from memlake.layers.models import EpisodeBase
from memlake.models import EpisodeId, Input, Output
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class GetEpisodeHistoryInput(Input):
    id: EpisodeId
    limit: int = Field(10, ge=1, le=50)
    from_version: int | None = Field(None, ge=1, description="next_version of the last page")
    full_content: bool = Field(False, description="Events in full, not cut to 500 chars")


class Revision(Output):
    version: int = Field(description="Store version that wrote this revision")
    episode: EpisodeBase


class GetEpisodeHistoryOutput(Output):
    id: str
    revisions: list[Revision]
    count: int
    next_version: int | None = Field(None, description="Pass as from_version for older revisions")
    older_collected: bool = Field(
        description="True when older revisions are gone (the 7-day window, or an erasure)"
    )


def run(ctx: ToolContext, args: GetEpisodeHistoryInput) -> GetEpisodeHistoryOutput:
    found, next_version, collected = episode_versions.history(
        ctx.lake, ctx.tenant, args.id, limit=args.limit, from_version=args.from_version
    )
    revisions = [
        Revision(version=v, episode=EpisodeBase(**public_view(row, full_content=args.full_content)))
        for v, row in found
    ]
    return GetEpisodeHistoryOutput(
        id=args.id,
        revisions=revisions,
        count=len(revisions),
        next_version=next_version,
        older_collected=collected,
    )


SPEC = ToolSpec(
    name="get_episode_history",
    title="Get episode history",
    description=(
        "Earlier revisions of an episode changed by upsert_episode, newest first (kept"
        " 7 days by default)."
    ),
    input_model=GetEpisodeHistoryInput,
    output_model=GetEpisodeHistoryOutput,
    annotations=READ_ONLY,
    run=run,
)
