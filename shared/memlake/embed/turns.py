"""Turn-aware passages: cut a text on speaker turns, then sentences, up to a size budget.

Conversations arrive as speaker turns: "Name: text" lines, thread messages rendered as
"role: text", markdown events ("**Name**: text", "### user", "- 10:42 Alice: ..."). A line that
starts with such a label opens a turn; the turn runs until the next labelled line. A text is a
conversation only when labels recur (two speakers with at least two turns each, two chat roles
such as user and assistant, or at least three labelled lines, one label recurring, on at least
half of the non-empty lines), so a stray
"Note:" or "Q:" line does not turn prose into a chat (docs/decisions/1205).

`spans(text, budget, measure)` returns passages as (start, end) character offsets:
- units are the turns of a conversation (text before the first label is one more unit), or the
  sentences of any other text;
- a passage is a run of consecutive whole units whose cost (`measure.cost`) fits `budget`;
  consecutive passages share ONE unit (the last of one is the first of the next) unless that
  unit and the next do not fit together;
- a unit over the budget is cut into its sentences, grouped the same way, and a sentence over
  the budget into `measure.split` windows (the token windows of memlake.embed.chunking).
The spans are contiguous and cover the whole text: the first starts at 0, the last ends at
len(text), each starts no later than the previous one ends.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # tokenizers loads with the model, never at import (cold start)
    from tokenizers import Tokenizer

Span = tuple[int, int]

_LABEL = re.compile(
    r"""[ \t]*(?:[-*+\u2022][ \t]+)?                               # a list bullet
    (?:(?:\d{4}-\d{2}-\d{2}[ T])?\[?\(?\d{1,2}:\d{2}(?::\d{2})?     # a time stamp, maybe dated,
       (?:[ \t]?[AaPp]\.?[Mm]\.?)?\)?\]?[ \t]+                      # in brackets, with am/pm
      |\[[^\]\n]{1,40}\][ \t]*)?                                    # or any [stamp]
    (?:\*\*(?P<bold>[^*:\n]{1,40}?)[ \t]*(?::\*\*|\*\*[ \t]*:)      # **Name**: or **Name:**
      |(?P<name>[A-Za-z][\w.'\u2019-]{0,30}(?:[ \t][A-Z][\w.'\u2019-]{0,30}){0,2})
       [ \t]*:(?!//))                                                # Name: / Name Surname:
    (?=\s|$)""",
    re.X,
)
_HEADING = re.compile(r"[ \t]*\#{1,6}[ \t]+(?P<name>[A-Za-z][\w.' -]{0,40}?)[ \t]*:?[ \t]*$")
_NOT_SPEAKERS = re.compile(  # labels of notes and fields, not of people
    r"notes?|nb|warning|caution|danger|tip|hint|important|examples?|summary|update|edit|ps"
    r"|todo|fixme|sources?|see|step|results?|output|input|errors?|reason|status|date|time"
    r"|subject|from|to|cc|re|title|tags?|link|url|answer|question|problem|solution|fix|cause"
    r"|context|goals?|description|details"
)
_ROLES = frozenset(["user", "assistant", "system", "human", "ai", "bot", "model", "tool"])
_SENTENCE = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*\s+|\n\s*")


@dataclass(frozen=True, slots=True)
class Turn:
    """A labelled line: where it starts and who speaks (casefolded label)."""

    start: int
    speaker: str


class Measure(Protocol):
    def cost(self, start: int, end: int) -> int:
        """The size of text[start:end] (word pieces or characters)."""
        ...

    def split(self, start: int, end: int) -> list[Span]:
        """Last resort: contiguous windows of at most the budget covering start..end."""
        ...


def label(line: str) -> tuple[str, int] | None:
    """(speaker as written, where the label ends) when `line` opens a turn, else None."""
    m = _LABEL.match(line) or _HEADING.match(line)
    if m is None:
        return None
    groups = m.groupdict()
    name = " ".join((groups.get("bold") or groups.get("name") or "").split())
    return (name, m.end()) if name and not _NOT_SPEAKERS.fullmatch(name.casefold()) else None


def speaker(line: str) -> str | None:
    """The speaker a line opens a turn for (casefolded), or None."""
    found = label(line)
    return None if found is None else found[0].casefold()


def find_turns(text: str) -> list[Turn]:
    """The turns of `text` when it is a conversation, else []."""
    turns: list[Turn] = []
    nonempty, at = 0, 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            nonempty += 1
            who = speaker(line)
            if who is not None:
                turns.append(Turn(at, who))
        at += len(line)
    counts = Counter(t.speaker for t in turns)
    recurring = sum(1 for c in counts.values() if c >= 2)
    roles = len(_ROLES.intersection(counts))
    if (
        recurring >= 2
        or roles >= 2
        or (recurring and len(turns) >= 3 and 2 * len(turns) >= nonempty)
    ):
        return turns
    return []


def sentences(text: str, start: int, end: int) -> list[Span]:
    """text[start:end] cut after sentence ends and line breaks (contiguous, covering)."""
    cuts = [m.end() for m in _SENTENCE.finditer(text, start, end) if start < m.end() < end]
    bounds = [start, *cuts, end]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def group(text: str, units: list[Span], budget: int, measure: Measure, turns: bool) -> list[Span]:
    """Runs of whole units up to `budget`, sharing one unit; oversized units cut finer."""
    out: list[Span] = []
    i, n = 0, len(units)
    while i < n:
        a, b = units[i]
        if measure.cost(a, b) > budget:  # too big alone: its sentences, or token windows
            inner = sentences(text, a, b) if turns else []
            fine = len(inner) > 1
            out.extend(group(text, inner, budget, measure, False) if fine else measure.split(a, b))
            i += 1
            continue
        j = i + 1
        while j < n and measure.cost(a, units[j][1]) <= budget:
            j += 1
        out.append((a, units[j - 1][1]))
        if j == n:
            break
        k = j - 1  # the shared unit, when it is not the whole passage and fits with the next
        i = k if k > i and measure.cost(units[k][0], units[j][1]) <= budget else j
    return out


def spans(text: str, budget: int, measure: Measure) -> list[Span]:
    """Passages of `text` (see the module doc); [] for an empty text."""
    if not text:
        return []
    starts = [t.start for t in find_turns(text)]
    if starts:
        bounds = sorted({0, *starts, len(text)})
        units = list(zip(bounds, bounds[1:], strict=False))
        return group(text, units, budget, measure, True)
    return group(text, sentences(text, 0, len(text)), budget, measure, False)


class TokenMeasure:
    """Word pieces from ONE encoding of the whole text (no re-tokenising per unit)."""

    def __init__(self, text: str, tokenizer: Tokenizer, budget: int) -> None:
        from memlake.embed.chunking import _offsets_tokenizer

        self.text, self.budget = text, budget
        self.tokenizer = _offsets_tokenizer(tokenizer)
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        self.starts = [s for s, _ in enc.offsets]

    def cost(self, start: int, end: int) -> int:
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def split(self, start: int, end: int) -> list[Span]:
        from memlake.embed.chunking import chunk_for_embedding

        window = self.budget + 2  # chunk_for_embedding counts [CLS]/[SEP]
        piece = self.text[start:end]
        chunks = chunk_for_embedding(piece, self.tokenizer, window, min(16, self.budget // 4))
        return [(start + c.start_char, start + c.end_char) for c in chunks] or [(start, end)]


class CharMeasure:
    """Characters, for embedders without a local tokenizer (Bedrock)."""

    def __init__(self, text: str, budget: int) -> None:
        self.text, self.budget = text, budget

    def cost(self, start: int, end: int) -> int:
        return end - start

    def split(self, start: int, end: int) -> list[Span]:
        from memlake.embed.bedrock import split_by_chars

        out: list[Span] = []
        for piece in split_by_chars(self.text[start:end], self.budget):
            out.append((start, start + len(piece)))
            start += len(piece)
        return out
