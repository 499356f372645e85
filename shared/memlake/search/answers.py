"""What search_episodes answers, in its content mode, from one call into the search runtime
(docs/decisions/4501): the episode search, then for "evidence" the turns selected within the
answer's size as sent, for the other modes each hit's passage. The tool only maps the answer
to its output model.

content="evidence" is lean, because the agent pays for every character of it: an episode says
once what it has once (`id`, `at` to the minute, `context`, `title`, `score` to two places)
and each excerpt is its text alone, a turn's speaker label included as the content has it;
`context` is left out when the search was filtered by it (the caller said it).
No offsets: get_episode cannot use them, and it shows the whole episode by its id.
`budget` bounds the JSON of the whole result as the server sends it (compact separators,
memlake.mcp.errors.ToolOutcome.to_mcp): every episode and excerpt is counted as its JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memlake.embed.base import EmbeddingError
from memlake.jsonshape import compact as dumps
from memlake.search.hybrid import search
from memlake.search.query.params import DEFAULT_PARAMS, SearchHit

if TYPE_CHECKING:
    from memlake.lake import Lake
    from memlake.search.query.best_passage import Span
    from memlake.search.searcher import Searcher

ContentMode = Literal["full", "passage", "evidence", "none"]
#: content="evidence": its turns are drawn from at least this many episodes (decision 2401)
EVIDENCE_EPISODES = 20
#: the answer around the episodes: {"episodes":[],"evidence":[…],"count":N} at most
ENVELOPE = len('{"episodes":[],"evidence":[],"count":1000}')


def minute(value: Any) -> str | None:
    """A time to the minute, UTC: 2024-05-01T14:02Z."""
    if not isinstance(value, datetime):
        return None
    at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def header(hit: SearchHit, asked: str | None = None) -> dict[str, Any]:
    """What an evidence episode says once, nulls left out as the result leaves them out, and
    its context when it is the one `asked` for."""
    row = hit.row
    context = row.get("context")
    out = {
        "id": hit.id,
        "at": minute(row.get("started_at") or row.get("created_at")),
        "context": None if context == asked else context,
        "title": row.get("title"),
        "score": round(hit.score, 2),
    }
    return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class AsSent:
    """Costs of evidence as the answer's JSON: an episode is its header with the excerpts'
    brackets and a comma; an excerpt its quoted, escaped text and a comma (an upper bound by
    one comma per list). `asked`: the context the search was filtered by."""

    asked: str | None = None

    def episode(self, hit: SearchHit) -> int:
        return len(dumps(header(hit, self.asked) | {"excerpts": []})) + 1

    def excerpt(self, text: str) -> int:
        return len(dumps(text)) + 1


@dataclass(frozen=True)
class Answer:
    """The hits (full, passage and none modes) with each one's passage, or the evidence
    episodes as sent; `degraded` says what was left out when a service failed."""

    hits: list[SearchHit] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    degraded: str | None = None


@dataclass(frozen=True)
class Ask:
    """search_episodes' arguments, validated by its input model (bounds and times)."""

    query: str
    mode: ContentMode = "full"
    limit: int = 10
    budget: int = 8_000
    context: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    recency: bool = True
    min_score: float | None = None


def answer(lake: Lake, searcher: Searcher, tenant: str, ask: Ask) -> Answer:
    """search_episodes' answer to `ask` in its mode. When the embedding endpoint is down or
    throttled the search answers by words alone and says so (decision 4702)."""
    evidence = ask.mode == "evidence"
    limit = max(ask.limit, EVIDENCE_EPISODES) if evidence else ask.limit
    kwargs: dict[str, Any] = {
        "query": ask.query, "limit": limit, "context": ask.context, "start": ask.start,
        "end": ask.end, "recency": ask.recency, "read_vectors": evidence,
    }  # fmt: skip
    degraded = None
    try:
        hits = search(lake, searcher, tenant, **kwargs)
    except EmbeddingError as e:
        if not e.retryable:
            raise
        words = replace(DEFAULT_PARAMS, weights={"bm25": 1.0, "vector": 0.0})
        hits = search(lake, searcher, tenant, params=words, **kwargs)
        degraded = (
            f"Search by meaning was left out ({e.message}): these hits match the query's"
            " words only. Search again later for both."
        )
    if ask.min_score is not None:
        hits = [h for h in hits if h.score >= ask.min_score]
    if not hits:
        return Answer(degraded=degraded)
    if evidence:
        room = ask.budget - ENVELOPE - (len(dumps(degraded)) + 12 if degraded else 0)
        found = evidence_of(searcher, hits, ask.query, room, ask.context)
        return Answer(evidence=found, degraded=degraded)
    return Answer(hits=hits, spans=_spans(searcher, hits, ask.query), degraded=degraded)


def evidence_of(
    searcher: Searcher, hits: list[SearchHit], query: str, room: int, asked: str | None = None
) -> list[dict[str, Any]]:
    """The evidence episodes (memlake.search.query.evidence, decisions 2401 and 4501) whose
    JSON together takes at most `room` characters."""
    from memlake.search.query.evidence import select

    model = searcher.embedder.name
    found = select(hits, _passages_of(hits, model), query, model, room, costs=AsSent(asked))
    out = []
    for e in found:
        content = e.hit.row.get("content") or ""
        texts = [content[s.start : s.end] for s in e.spans]
        out.append(header(e.hit, asked) | {"excerpts": texts})
    return out


def _passages_of(hits: list[SearchHit], model: str) -> dict[str, dict[str, Any] | None]:
    """The hits' stored passages and vectors: from the shards that found them (a hit's rows by
    range, memlake.search.query.hit_vectors), else their `episode_chunks` rows (a cold store
    reads a chunk segment whole)."""
    from memlake.search.query.best_passage import chunk_rows
    from memlake.search.query.hit_vectors import stored_passages

    chunks: dict[str, dict[str, Any] | None] = dict(stored_passages(hits, model))
    unknown = [h.id for h in hits if h.id not in chunks]
    if unknown:
        chunks |= chunk_rows(hits[0].snapshot, unknown)
    return chunks


def _spans(searcher: Searcher, hits: list[SearchHit], query: str) -> list[Span]:
    """Each hit's passage: the search's (SearchHit.passage) or best_span's pick."""
    from memlake.search.query.best_passage import hit_span

    unknown = [h for h in hits if h.passage is None]
    chunks = _passages_of(unknown, searcher.embedder.name) if unknown else {}
    embedder = searcher.embedder
    return [
        hit_span(embedder, h.row, chunks.get(h.id), query, h.query_vector, h.passage) for h in hits
    ]
