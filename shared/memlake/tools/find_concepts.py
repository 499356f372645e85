"""find_concepts: concepts by name/description text, kind, parent or episode."""

from __future__ import annotations

from collections import Counter

from pydantic import Field

from memlake.cursors import ID, TEXT, Cursor, pager
from memlake.lake.partial import unreadable_note
from memlake.layers import concepts, links
from memlake.layers.fields import ConceptId, ConceptKind, ConceptQuery
from memlake.layers.models import ConceptView
from memlake.layers.tables import CONCEPTS, LINKS
from memlake.models import EpisodeId, Input, Output, Unreadable
from memlake.tools.base import READ_ONLY, ToolContext, ToolSpec


class FindConceptsInput(Input):
    query: ConceptQuery | None = None
    kind: ConceptKind | None = None
    parent_id: ConceptId | None = None
    episode_id: EpisodeId | None = None
    limit: int = Field(20, ge=1, le=100)
    cursor: Cursor = None


class ConceptSummary(ConceptView):
    episode_count: int


class FindConceptsOutput(Output):
    concepts: list[ConceptSummary]
    count: int
    next_cursor: str | None = Field(
        None, description="Pass as cursor for the next page; absent at the end"
    )
    unreadable: Unreadable = None


def run(ctx: ToolContext, args: FindConceptsInput) -> FindConceptsOutput:
    snap = ctx.lake.snapshot(ctx.tenant)
    filters = (args.query, args.kind, args.parent_id, args.episode_id)
    cursors = pager(
        ctx.lake.store,
        ctx.tenant,
        "find_concepts",
        (TEXT, ID),
        *filters,
        configured_key=ctx.settings.cursor_key,
    )
    linked = None
    if args.episode_id is not None:
        linked = [lk["concept_id"] for lk in links.links_of_episode(snap, args.episode_id)]
    page, next_cursor = concepts.find_page(
        snap,
        query=args.query,
        kind=args.kind,
        parent_id=args.parent_id,
        concept_ids=linked,
        limit=args.limit,
        cursor=args.cursor,
        pager=cursors,
    )
    counts = Counter(
        lk["concept_id"] for lk in snap.where(LINKS, "concept_id", [r["id"] for r in page])
    )
    found = [ConceptSummary(**concepts.view(r), episode_count=counts[r["id"]]) for r in page]
    return FindConceptsOutput(
        concepts=found,
        count=len(found),
        next_cursor=next_cursor,
        unreadable=unreadable_note(snap.table(CONCEPTS)),
    )


SPEC = ToolSpec(
    name="find_concepts",
    title="Find concepts",
    description=("List concepts A-Z by text, kind, parent or linked episode."),
    input_model=FindConceptsInput,
    output_model=FindConceptsOutput,
    annotations=READ_ONLY,
    run=run,
)
