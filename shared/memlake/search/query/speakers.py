"""Whom a query asks about, among the speakers of the evidence units (the `speaker` score of
memlake.search.query.evidence; decision 4501).

A unit scores 1 when the query names its speaker. Chat labels are rarely plain names: people
write as handles ("ines_k", "jon50"), so a label is matched by its letter runs ("ines", "jon")
stemmed as the query's words are. A question may also name someone by a name no label holds
("What pets does Kwame have?" in a chat between "bluefox88" and "ana"): friends use it when
they talk to that person ("morning kwame!"), so a name the query capitalises that no label
holds is taken for the label of the one speaker who never uses it while the others do, in at
least ALIAS_EPISODES of the episodes found (a topic word that only one person says is used in
fewer, and when both say it neither is named).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Container, Sequence

import numpy as np

from memlake.search.index.text import terms
from memlake.search.query.units import Unit

_LETTERS = re.compile(r"[^\W\d_]{2,}")
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z][^\W\d_]+")
ALIAS_EPISODES = 3


def label_terms(label: str | None) -> set[str]:
    """A speaker label's name parts as query terms: "ines_k" -> {"ine"}, "Jon50" -> {"jon"}."""
    return set(terms(" ".join(_LETTERS.findall(label or ""))))


def asked_names(query: str) -> set[str]:
    """The terms of the words the query capitalises, its first word aside."""
    words = _CAPITALISED.findall(query)
    first = re.match(r"\W*(\w+)", query)
    lead = first.group(1) if first else None
    return {t for w in words if w != lead for t in terms(w)}


def named(
    units: Sequence[Unit],
    hit_of: Sequence[int],
    counts: Sequence[Container[str]],
    query: str,
    asked: set[str],
) -> np.ndarray:
    """Per unit, 1.0 when the query names its speaker by a label part or an alias, else 0."""
    parts = {s: label_terms(s) for s in {u.speaker for u in units} if s is not None}
    who = {s for s, p in parts.items() if p & asked}
    known = set().union(*parts.values()) if parts else set()
    for name in asked_names(query) - known:
        alias = _alias_of(units, hit_of, counts, name)
        if alias is not None:
            who.add(alias)
    return np.array([1.0 if u.speaker in who else 0.0 for u in units])


def _alias_of(
    units: Sequence[Unit], hit_of: Sequence[int], counts: Sequence[Container[str]], name: str
) -> str | None:
    """The speaker `name` stands for: the only one of the episodes where others say it who
    never says it, in at least ALIAS_EPISODES episodes; else None."""
    users: set[str] = set()
    said_in: set[int] = set()
    for u, hit, terms_of in zip(units, hit_of, counts, strict=True):
        if u.speaker is not None and name in terms_of:
            users.add(u.speaker)
            said_in.add(hit)
    if len(said_in) < ALIAS_EPISODES:
        return None
    silent = {
        (hit, u.speaker)
        for u, hit in zip(units, hit_of, strict=True)
        if hit in said_in and u.speaker is not None and u.speaker not in users
    }
    present = Counter(speaker for _, speaker in silent)
    fits = [s for s, n in present.items() if n >= ALIAS_EPISODES]
    return fits[0] if len(fits) == 1 else None
