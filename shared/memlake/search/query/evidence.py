"""Evidence: the turns that answer a query, across the episodes a search found, best first,
until a character budget is spent (search_episodes content="evidence"; docs/decisions/2401).

The episode search ranks sessions; an agent reads text. So the hits' contents are cut into
*units* at the granularity evidence lives at: a conversation's turns (a turn over UNIT_CHARS
into its sentences), any other text's sentences. Every unit of every hit is scored together:

- words: BM25 over the units' texts without their speaker labels, idf over all units of all
  hits (a word rare among them counts most), over the query's total idf (0..1);
- meaning: the best cosine to the query vector of the stored passages that overlap the unit
  (the vectors the search already has: no model runs here), from the cosine floor (0..1);
- speaker: 1 when the query names the unit's speaker ("What did Caroline research?"), by a
  part of a handle ("ines_k") or a name friends call them (memlake.search.query.speakers);
- episode: the hit's score relative to the best hit's (the session-level evidence).

First, in each of the top `seed` hits, the best unit inside the passage the episode search
matched (SearchHit.passage: its own fusion of words and meaning, which carries paraphrases
that a unit's words miss), within `seed_share` of the budget; then the other units best
first. Each is shown with the short units of the same speaker beside it (chat splits one
thought into several messages), merged where spans touch, until the budget is spent as
`costs` counts it (text characters, or the answer's JSON: memlake.search.answers.AsSent). A
hit shows its spans in reading order; hits come in the order of their best unit's score, and
a hit with no unit taken is not shown (decisions 2401, 4501).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from memlake.search.index.text import unique_terms
from memlake.search.query.params import SearchHit
from memlake.search.query.speakers import named
from memlake.search.query.unit_pool import Pool

MIN_CHARS = 40  # less budget than this left: stop


@dataclass(frozen=True)
class EvidenceParams:
    """The weights of a unit's score and the window rule (the grid is in decision 2401)."""

    episode: float = 0.2
    bm25: float = 0.5
    vector: float = 0.4
    speaker: float = 0.2
    cos_floor: float = 0.2  # a cosine at or below it counts 0 for meaning
    #: the units of the passage the episode search matched (SearchHit.passage) in this many
    #: top hits go first, the best unit of each (the search's own pick carries its fusion)
    seed: int = 20
    #: the seeds together spend at most this share of the budget (at 4,000 characters twenty
    #: one-liners and their episodes would take it all before the best units get theirs)
    seed_share: float = 0.5
    #: which adjacent units (of the same episode, at most neighbour_chars long) are shown with
    #: the one taken: "short" any, "qa" the next one when the unit taken is a question,
    #: "speaker" those of the same speaker (a message chat splits one thought into), "run"
    #: both of these, "none" none
    neighbours: Literal["short", "qa", "speaker", "run", "none"] = "speaker"
    neighbour_chars: int = 240


DEFAULT_EVIDENCE = EvidenceParams()


class Costs(Protocol):
    """What the budget counts: an episode shown, before its excerpts, and each excerpt."""

    def episode(self, hit: SearchHit) -> int: ...
    def excerpt(self, text: str) -> int: ...


class TextChars:
    """The budget counts characters of text shown (decision 2401's measure)."""

    def episode(self, hit: SearchHit) -> int:
        return 0

    def excerpt(self, text: str) -> int:
        return len(text)


TEXT_CHARS = TextChars()


@dataclass(frozen=True)
class Shown:
    """One span of a hit's content that is shown: content[start:end], the speaker of its best
    unit, and that unit's score (0..1)."""

    start: int
    end: int
    speaker: str | None
    score: float


@dataclass(frozen=True)
class Evidence:
    hit: SearchHit
    spans: list[Shown]  # reading order


def _scores(pool: Pool, params: EvidenceParams, query: list[str], text: str) -> np.ndarray:
    """Each unit's score, 0..1 (see the module doc); `text`: the query as asked."""
    qvec = pool.qvec
    meaning = np.zeros(len(pool.units))
    if qvec is not None and params.vector > 0:
        cos = pool.cosines(qvec)
        meaning = np.clip((cos - params.cos_floor) / (1 - params.cos_floor), 0, 1)
    total = params.episode + params.bm25 + params.vector + params.speaker or 1.0
    return (
        params.episode * pool.episode
        + params.bm25 * pool.words(query)
        + params.vector * meaning
        + params.speaker * named(pool.units, pool.hit_of, pool.counts, text, set(query))
    ) / total


def _window(pool: Pool, contents: list[str], i: int, params: EvidenceParams) -> tuple[int, int]:
    """Unit i widened by the adjacent units params.neighbours asks for."""
    units, hit_of = pool.units, pool.hit_of
    u = units[i]
    start, end = u.start, u.end
    if params.neighbours == "none":
        return start, end
    text = contents[hit_of[i]]
    for j in (i - 1, i + 1):
        if not (0 <= j < len(units)) or hit_of[j] != hit_of[i]:
            continue
        other = units[j]
        if other.end - other.start > params.neighbour_chars:
            continue
        mode = params.neighbours
        asks = mode in ("qa", "run") and j > i and text[u.start : u.end].endswith("?")
        same = mode in ("speaker", "run") and u.speaker is not None and other.speaker == u.speaker
        if mode == "short" or asks or same:
            start, end = min(start, other.start), max(end, other.end)
    return start, end


def _merged(spans: list[list[Any]], content: str) -> list[list[Any]]:
    """Spans [start, end, unit, score] sorted and merged where only whitespace parts them;
    a merged span keeps its best unit."""
    out: list[list[Any]] = []
    for span in sorted(spans, key=lambda s: s[0]):
        if out and not content[out[-1][1] : span[0]].strip():
            last = out[-1]
            keep = last if last[3] >= span[3] else span
            out[-1] = [last[0], max(last[1], span[1]), keep[2], keep[3]]
        else:
            out.append(list(span))
    return out


def select(
    hits: list[SearchHit],
    chunks: dict[str, dict[str, Any] | None],
    query: str,
    model: str,
    budget: int,
    max_hits: int | None = None,
    params: EvidenceParams = DEFAULT_EVIDENCE,
    costs: Costs = TEXT_CHARS,
) -> list[Evidence]:
    """The best units of `hits` with their windows, within `budget` as `costs` counts it, from
    at most `max_hits` hits (all when None)."""
    contents = [h.row.get("content") or "" for h in hits]
    pool = Pool(hits, chunks, model)
    units = pool.units
    if not units:
        return []
    asked = unique_terms([query])
    score = _scores(pool, params, asked, query)
    order = np.argsort(-score, kind="stable").tolist()
    seeds = 0
    if params.seed:  # the passages the episode search matched in its top hits go first
        best_of: dict[int, int] = {}
        for i in order:
            if pool.matched[i] and pool.hit_of[i] < params.seed:
                best_of.setdefault(pool.hit_of[i], i)
        seeded = [best_of[hit] for hit in sorted(best_of)]
        seeds = len(seeded)
        order = seeded + order  # a seed skipped for its share is tried again in its place
    heads: dict[int, int] = {}
    excerpts: dict[tuple[int, int, int], int] = {}  # (hit, start, end): its cost, once

    def cost(hit: int, spans: list[list[Any]]) -> int:
        if not spans:
            return 0
        if hit not in heads:
            heads[hit] = costs.episode(hits[hit])
        total = heads[hit]
        for s in spans:
            key = (hit, s[0], s[1])
            if key not in excerpts:
                excerpts[key] = costs.excerpt(contents[hit][s[0] : s[1]])
            total += excerpts[key]
        return total

    shown: dict[int, list[list[Any]]] = {}
    spent = 0
    for n, i in enumerate(order):
        if budget - spent < MIN_CHARS:
            break
        u, hit = units[i], pool.hit_of[i]
        if hit not in shown and len(shown) == max_hits:
            continue
        room = budget - spent
        if n < seeds:
            room = min(room, int(params.seed_share * budget) - spent)
        have = shown.get(hit, [])
        for start, end in (_window(pool, contents, i, params), (u.start, u.end)):
            trial = _merged([*have, [start, end, i, float(score[i])]], contents[hit])
            if trial == have:
                break
            grew = cost(hit, trial) - cost(hit, have)
            if grew <= room:
                shown[hit] = trial
                spent += grew
                break
    return [
        Evidence(
            hits[hit],
            [Shown(s, e, units[i].speaker, round(sc, 6)) for s, e, i, sc in spans],
        )
        for hit, spans in sorted(shown.items(), key=lambda kv: -max(s[3] for s in kv[1]))
    ]
