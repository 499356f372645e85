"""get_concept: a concept with its place in the hierarchy and the episodes it came from."""

from __future__ import annotations

from pydantic import Field

from memlake import episodes
from memlake.layers import concepts, links
from memlake.layers.fields import ConceptId
from memlake.layers.models import MAX_LISTED_IDS, ConceptView, LinkedEpisode
from memlake.layers.tables import CONCEPTS
from memlake.models import Input, Output
from memlake.timeutil import iso
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec

EPISODE_COLUMNS = ["id", "title", "started_at", "created_at"]


class GetConceptInput(Input):
    id: ConceptId
    episode_limit: int = Field(50, ge=0, le=200)


class ConceptRef(Output):
    id: str
    name: str


class GetConceptOutput(Output):
    concept: ConceptView
    ancestors: list[ConceptRef] = Field(
        default_factory=list, description="Parent first, up to the root"
    )
    children: list[ConceptRef] = Field(
        default_factory=list, description="Direct child concepts (first 1,000)"
    )
    episodes: list[LinkedEpisode] = Field(description="Linked episodes, oldest link first")
    episode_ids: list[str] = Field(description="Ids of linked episodes (first 1,000)")
    episode_count: int


def run(ctx: ToolContext, args: GetConceptInput) -> GetConceptOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    row = snap.table(CONCEPTS).get(args.id)
    if row is None:
        raise concepts.not_found(args.id)
    linked = links.links_of_concept(snap, args.id)
    shown = linked[: args.episode_limit]
    rows = snap.table(episodes.TABLE).rows([lk["episode_id"] for lk in shown], EPISODE_COLUMNS)
    by_id = {r["id"]: r for r in rows}
    described = [
        LinkedEpisode(
            episode_id=lk["episode_id"],
            title=by_id[lk["episode_id"]].get("title"),
            started_at=iso(by_id[lk["episode_id"]].get("started_at")),
            created_at=iso(by_id[lk["episode_id"]].get("created_at")),
            **links.link_fields(lk),
        )
        for lk in shown
        if lk["episode_id"] in by_id
    ]
    kids = concepts.children(snap, args.id)[:MAX_LISTED_IDS]
    return GetConceptOutput(
        concept=ConceptView(**concepts.view(row)),
        ancestors=[ConceptRef(**a) for a in concepts.ancestors(snap, row)],
        children=[ConceptRef(id=k["id"], name=k.get("name") or "") for k in kids],
        episodes=described,
        episode_ids=[lk["episode_id"] for lk in linked[:MAX_LISTED_IDS]],
        episode_count=len(linked),
    )


SPEC = ToolSpec(
    name="get_concept",
    title="Get concept",
    description=("Read a concept with its ancestors, children and the episodes it came from."),
    input_model=GetConceptInput,
    output_model=GetConceptOutput,
    annotations=READ_ONLY,
    run=run,
)
