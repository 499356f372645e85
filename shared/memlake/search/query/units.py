"""The units evidence is scored in (memlake.search.query.evidence): a conversation's turns (a
turn over UNIT_CHARS cut into its sentences), any other text's sentences; each with where its
text starts after the speaker label, the speaker as written, and its BM25 terms.

Cutting and stemming an episode costs ~0.4 ms per 1,000 characters, paid by every search that
shows its evidence, so the cut of recently searched episodes is kept (UnitCache: by episode id
and revision, checked against the content's length and hash).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass

from memlake.embed.turns import find_turns, label, sentences
from memlake.search.index.text import terms_of_each

UNIT_CHARS = 800  # a longer turn is scored by its sentences
CACHED_EPISODES = 2_048


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    body: int  # where the text after the speaker label starts
    speaker: str | None


@dataclass(frozen=True)
class EpisodeUnits:
    """One content's units, their BM25 terms (label excluded) and each term's count per unit
    (what scoring asks: a query term's frequency, whether a unit has it)."""

    units: list[Unit]
    terms: list[list[str]]
    counts: list[dict[str, int]]


def _trimmed(content: str, start: int, end: int) -> tuple[int, int]:
    while start < end and content[start].isspace():
        start += 1
    while end > start and content[end - 1].isspace():
        end -= 1
    return start, end


def units_of(content: str) -> list[Unit]:
    """The units of one content, whitespace trimmed, empty ones dropped."""
    turns = find_turns(content)
    pieces: list[tuple[int, int, int, str | None]] = []
    if turns:
        who = {t.start for t in turns}
        bounds = sorted({0, *who, len(content)})
        for a, b in zip(bounds, bounds[1:], strict=False):
            found = label(content[a:b]) if a in who else None
            name, body = (found[0], a + found[1]) if found else (None, a)
            while body < b and content[body].isspace():
                body += 1
            if b - a <= UNIT_CHARS:
                pieces.append((a, b, body, name))
                continue
            for s, e in sentences(content, a, b):
                pieces.append((s, e, max(s, body), name))
    else:
        pieces = [(s, e, s, None) for s, e in sentences(content, 0, len(content))]
    out: list[Unit] = []
    for a, b, body, name in pieces:
        s, e = _trimmed(content, a, b)
        if s < e:
            out.append(Unit(s, e, min(max(body, s), e), name))
    return out


def cut(content: str) -> EpisodeUnits:
    units = units_of(content)
    terms = terms_of_each([content[u.body : u.end] for u in units])
    return EpisodeUnits(units, terms, [dict(Counter(t)) for t in terms])


class UnitCache:
    """The cut of recently searched episodes, least recently used out first."""

    def __init__(self, size: int = CACHED_EPISODES) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, int, int, int], EpisodeUnits] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, episode_id: str, revision: int, content: str) -> EpisodeUnits:
        key = (episode_id, revision, len(content), hash(content))
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        made = cut(content)
        with self._lock:
            self._items[key] = made
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return made


UNITS = UnitCache()
