"""Every combination of up to two filters (all of them for tools with three or fewer) of every
finder and lister, through /mcp with the official client, against a plain-Python reference
filter over the same known data (finder_world.py); listings with a cursor are also paged two
at a time and must give the same rows, none twice, none missed.

The filter fields come from each tool's inputSchema as the server lists it: a filter added to
a finder without a reference here fails test_every_filter_field_is_covered.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from mcp.client import Client

from .conftest import TOKENS, ServerUnderTest
from .finder_world import DAY0, Ep, World, build_world, ok
from .mcp_helpers import call, connect, run

#: Inputs of a finder that are not filters: page size, paging, ranking.
NOT_FILTERS = {
    "limit",
    "cursor",
    "recency",
    "content",
    "budget",
    "min_score",
}  # how hits are shown;
# min_score (a score threshold, no reference model for it) is tested in test_search_episodes.py
PAGE = 2  # small page size: every filtered listing spans several pages


def _day(n: float) -> str:
    return (DAY0 + timedelta(days=n)).isoformat()


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value)


EPISODE_FILTERS: dict[str, Callable[[Ep, Any], bool]] = {
    "context": lambda e, v: e.context == v,
    "time_start": lambda e, v: e.end >= _at(v),  # the episode's span overlaps the range
    "time_end": lambda e, v: e.start <= _at(v),
    "platform": lambda e, v: e.platform == v,
    "tags": lambda e, v: all(t in e.tags for t in v),
    "thread_id": lambda e, v: e.thread_id == v,
    "concept_id": lambda e, v: v in e.concept_ids,
    "query": lambda e, v: True,  # search: checked against the matches in _check_search
}


@dataclass
class Finder:
    tool: str
    items: str  # the output's list field
    values: Callable[[World], dict[str, list[Any]]]  # filter field -> values to try
    expect: Callable[[World, dict[str, Any]], list[Any]]  # reference keys, in order
    key: Callable[[dict[str, Any]], Any] = lambda row: row["id"]
    subject: str | None = None  # a required non-filter field (the episode looked at)
    subjects: Callable[[World], list[Any]] = lambda w: [None]
    fixed: dict[str, Any] = field(default_factory=dict)
    ordered: bool = True  # compare the order too (else as sets)
    paged: bool = True  # takes a cursor
    search: bool = False  # a query ranks by relevance (episodes only)


def _episodes(w: World, args: dict[str, Any]) -> list[Any]:
    return [
        e.id
        for e in w.episode_order()
        if all(EPISODE_FILTERS[k](e, v) for k, v in args.items() if k in EPISODE_FILTERS)
    ]


def _episode_values(w: World) -> dict[str, list[Any]]:
    ids = list(w.episodes)
    return {
        "context": ["ctx-a", "ctx-b"],
        "time_start": [_day(3), _day(5.5)],
        "time_end": [_day(6), _day(10)],
        "platform": ["claude", "chatgpt"],
        "tags": [["x"], ["y", "x"]],
        "thread_id": [w.episodes[ids[1]].thread_id, w.episodes[ids[2]].thread_id],
        "concept_id": [list(w.concepts)[0], list(w.concepts)[3]],
        "query": ["memlake", "parquet"],
    }


def _concepts(w: World, args: dict[str, Any]) -> list[Any]:
    episode = w.episodes.get(args.get("episode_id", ""))
    linked = set(episode.concept_ids) if episode else set()
    q = str(args.get("query", "")).lower()
    rows = [
        c
        for c in w.concepts.values()
        if (q in c.name.lower() or q in (c.description or "").lower())
        and args.get("kind", c.kind) == c.kind
        and ("parent_id" not in args or c.parent_id == args["parent_id"])
        and ("episode_id" not in args or c.id in linked)
    ]
    return [c.id for c in sorted(rows, key=lambda c: (c.name.lower(), c.id))]


def _audit(w: World, args: dict[str, Any]) -> list[Any]:
    return [
        (r["action"], r["relationship_id"])
        for r in reversed(w.audit)
        if args.get("action", r["action"]) == r["action"]
        and args.get("relationship_id", r["relationship_id"]) == r["relationship_id"]
        and ("episode_id" not in args or args["episode_id"] in (r["from"], r["to"]))
    ]


def _pending(w: World, args: dict[str, Any]) -> list[Any]:
    return [
        tid
        for tid, (ctx, status) in w.threads.items()
        if status == "pending" and args.get("context", ctx) == ctx
    ]


def _episode_rels(w: World, args: dict[str, Any]) -> list[Any]:
    ep, direction = args["episode_id"], args.get("direction", "both")
    return sorted(
        (
            r.id
            for r in w.relationships.values()
            if (
                (direction != "incoming" and r.from_id == ep)
                or (direction != "outgoing" and r.to_id == ep)
            )
            and r.strength >= args.get("min_strength", 0.0)
            and args.get("relationship_type", r.type) == r.type
        ),
        reverse=True,
    )


def _related(w: World, args: dict[str, Any]) -> list[Any]:
    """Best path product to every episode within max_depth hops, by brute force."""
    types = args.get("relationship_types")
    direction = args.get("direction", "both")
    arcs = [
        (a, b, r.strength)
        for r in w.relationships.values()
        if types is None or r.type in types
        for a, b in (
            ([(r.from_id, r.to_id)] if direction != "incoming" else [])
            + ([(r.to_id, r.from_id)] if direction != "outgoing" else [])
        )
    ]
    best: dict[str, float] = {}

    def walk(node: str, product: float, seen: set[str], depth: int) -> None:
        if depth == args.get("max_depth", 2):
            return
        for a, b, s in arcs:
            if a == node and b not in seen:
                best[b] = max(best.get(b, 0.0), product * s)
                walk(b, product * s, seen | {b}, depth + 1)

    start = args["episode_id"]
    walk(start, 1.0, {start}, 0)
    floor = args.get("min_strength", 0.5)
    return sorted((k, round(v, 9)) for k, v in best.items() if v >= floor)


FINDERS = [
    Finder("list_episodes", "episodes", lambda w: _subset(_episode_values(w), "time_"), _episodes),
    Finder(
        "find_episodes",
        "episodes",
        _episode_values,
        _episodes,
        search=True,
    ),
    Finder(
        "search_episodes",
        "episodes",
        lambda w: {**_subset(_episode_values(w), "time_"), "query": ["memlake", "parquet"]},
        _episodes,
        fixed={"query": "memlake", "limit": 50},
        paged=False,
        search=True,
    ),
    Finder("get_pending_threads", "threads", lambda w: {"context": ["ctx-a", "ctx-b"]}, _pending),
    Finder(
        "find_concepts",
        "concepts",
        lambda w: {
            "query": ["par", "B"],
            "kind": ["technology", "person"],
            "parent_id": list(w.concepts)[:2],
            "episode_id": list(w.episodes)[:2],
        },
        _concepts,
    ),
    Finder(
        "get_audit_log",
        "records",
        lambda w: {
            "relationship_id": [w.removed[0], w.cascaded[0]],
            "episode_id": [list(w.episodes)[1], w.deleted_episode],
            "action": ["add_relationship", "remove_relationship", "cascade_delete"],
        },
        _audit,
        key=lambda row: (row["action"], row["relationship_id"]),
    ),
    Finder(
        "get_episode_relationships",
        "relationships",
        lambda w: {
            "direction": ["outgoing", "incoming"],
            "relationship_type": ["follows", "related_to"],
            "min_strength": [0.5, 0.85],
        },
        _episode_rels,
        subject="episode_id",
        subjects=lambda w: [list(w.episodes)[i] for i in (0, 1, 2, 9)],
        paged=False,
    ),
    Finder(
        "find_related_episodes",
        "related_episodes",
        lambda w: {
            "max_depth": [1, 3],
            "relationship_types": [["follows"], ["follows", "related_to", "causes"]],
            "min_strength": [0.3, 0.7],
            "direction": ["outgoing", "incoming"],
        },
        _related,
        key=lambda row: (row["episode_id"], round(row["total_strength"], 9)),
        subject="episode_id",
        subjects=lambda w: [list(w.episodes)[i] for i in (0, 2, 5)],
        ordered=False,
        paged=False,
    ),
]


def _subset(values: dict[str, list[Any]], *prefixes: str) -> dict[str, list[Any]]:
    keep = ("context", *prefixes)
    return {k: v for k, v in values.items() if k.startswith(keep)}


def combos(values: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """Every filter alone and every pair (every subset when there are three or fewer)."""
    fields = sorted(values)
    most = len(fields) if len(fields) <= 3 else 2
    for size in range(most + 1):
        for chosen in itertools.combinations(fields, size):
            for picked in itertools.product(*(values[f] for f in chosen)):
                yield dict(zip(chosen, picked, strict=True))


@pytest.fixture(scope="module")
def world(local_server: ServerUnderTest) -> World:
    async def scenario() -> World:
        async with connect(local_server.url, TOKENS["alpha"]) as client:
            return await build_world(client)

    return run(scenario())  # type: ignore[no-any-return]


def test_every_filter_field_is_covered(local_server: ServerUnderTest, world: World) -> None:
    async def scenario() -> dict[str, set[str]]:
        async with connect(local_server.url, TOKENS["alpha"]) as client:
            tools = (await client.list_tools()).tools
            return {t.name: set(t.input_schema["properties"]) for t in tools}

    schema = run(scenario())
    for finder in FINDERS:
        fields = schema[finder.tool] - NOT_FILTERS - {finder.subject}
        assert fields == set(finder.values(world)), finder.tool
        assert ("cursor" in schema[finder.tool]) is finder.paged, finder.tool


@pytest.mark.parametrize("finder", FINDERS, ids=lambda f: f.tool)
def test_filter_combinations_match_the_reference(
    local_server: ServerUnderTest, world: World, finder: Finder
) -> None:
    checked = 0

    async def scenario() -> None:
        nonlocal checked
        async with connect(local_server.url, TOKENS["alpha"]) as client:
            for subject in finder.subjects(world):
                for combo in combos(finder.values(world)):
                    args = {**finder.fixed, **combo}
                    if finder.subject:
                        args[finder.subject] = subject
                    await _check(client, finder, world, args)
                    checked += 1

    run(scenario())
    assert checked > 0


async def _check(client: Client, finder: Finder, world: World, args: dict[str, Any]) -> None:
    expected = finder.expect(world, args)
    if finder.search and "query" in args:
        return await _check_search(client, finder, world, args, expected)
    full = await ok(client, finder.tool, {**args, "limit": 100})
    got = [finder.key(r) for r in full[finder.items]]
    assert len(got) == len(set(got)), (finder.tool, args, got)
    if finder.ordered:
        assert got == expected, (finder.tool, args)
    else:
        assert sorted(got) == sorted(expected), (finder.tool, args)
    if finder.tool == "get_audit_log":  # newest first: ids descend
        ids = [r["id"] for r in full["records"]]
        assert ids == sorted(ids, reverse=True), args
    if finder.paged:
        assert full.get("next_cursor") is None, args
        paged = await _pages(client, finder, args)
        assert paged == got, (finder.tool, args, "paging")
    elif expected:  # a limit cuts the list and says so
        one = await ok(client, finder.tool, {**args, "limit": 1})
        assert one["count"] == 1 and one["truncated"] is (len(expected) > 1), args
        assert one["total"] == len(expected), args
        if finder.ordered:
            assert [finder.key(r) for r in one[finder.items]] == expected[:1], args


async def _pages(client: Client, finder: Finder, args: dict[str, Any]) -> list[Any]:
    seen: list[Any] = []
    cursor = None
    for _ in range(100):
        page = await ok(client, finder.tool, {**args, "limit": PAGE, "cursor": cursor})
        assert page["count"] == len(page[finder.items]) <= PAGE, args
        seen += [finder.key(r) for r in page[finder.items]]
        cursor = page.get("next_cursor")
        if cursor is None:
            return seen
        assert page["count"] == PAGE, args  # a page is short only at the end
    raise AssertionError(f"{finder.tool} {args}: paging did not end")


async def _check_search(
    client: Client, finder: Finder, world: World, args: dict[str, Any], expected: list[Any]
) -> None:
    """Search ranks by relevance: every filtered episode that mentions the term is found,
    nothing outside the filters is; a query every episode matches finds them all."""
    out = await call(client, finder.tool, {**args, "limit": 50})
    assert not out["is_error"], (finder.tool, args, out)
    got = [r["id"] for r in out["episodes"]]
    assert len(got) == len(set(got)), args
    assert set(got) <= set(expected), (finder.tool, args)
    mentions = [e for e in expected if args["query"] == "memlake" or world.episodes[e].parquet]
    assert set(mentions) <= set(got), (finder.tool, args)
    if finder.paged:
        assert out.get("next_cursor") is None, args
