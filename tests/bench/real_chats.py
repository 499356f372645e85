"""A generated corpus shaped like real people's messaging-app chats (deterministic, labelled).

The LoCoMo-like chats of tests/bench/conversations.py are tidy: one long, well-spelt turn per
speaker, the speakers' real names as labels, 300-700 words a session. Real chats exported from
a messaging app gave lower evidence coverage than those, so this corpus keeps the same facts
and questions (chat_facts.py, chat_talk.py and conversations.py's plan and question templates,
imported) but reproduces the measured traits of real chats:

- short messages (median ~60 characters, where a LoCoMo-style turn is one long line): a turn
  is split at sentence and clause boundaries into several messages of the same person (more
  than half of all messages follow one of the same speaker), with short standalone ones
  ("lol", "wait", "haha same");
- one message a line, "handle: text"; handles are lowercase chat handles, most with the first
  name in them ("ines_k", "marco"), about one person in twelve without it ("bluefox88",
  "kw4me"). Questions name people by first name, which the chat itself shows now and then
  ("morning kwame", "haha ines ur crazy");
- messy text: mostly lowercase, dropped apostrophes, abbreviations (u, ur, tbh, rn, idk), a
  few typos (3-5% of words, almost never in a key noun), no final full stop. A fact's key nouns
  (pet names, places, titles) stay whole, sometimes lowercased;
- one session a day, days to weeks apart, 1 to ~180 messages (median ~28, skewed: many short
  check-ins, a few long evenings), facts said in passing among chatter, topics recurring as
  distractors (callbacks, the other person's facts of the same type);
- a fact stated over two messages has both as evidence; multi-hop evidence spans sessions.

Each evidence entry is (session, a message's exact text after "handle: "), unique in its
session up to that message, so `sessions[s].index(said)` finds that message. No network, no
model: seeded `random`.
"""

from __future__ import annotations

import math
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

if __package__ in (None, ""):  # run as a script: python tests/bench/real_chats.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench import chat_facts as facts  # noqa: E402
from tests.bench import chat_talk as talk  # noqa: E402
from tests.bench import conversations as chat  # noqa: E402


def _p(raw: str) -> list[str]:
    return raw.split("|")


SHORT = _p(
    "lol|omg|wait|yeah|haha same|ok|okk|lmao|hahaha|nooo|yesss|true|same|ikr|wait what|oh no"
    "|nice|aw|for real|hmm|yep|nah|right??|omg stop|wow|haha|sure|ugh|oof|fair"
)
PINGS = _p(
    "omw|running late sorry|call me when ur free?|u up?|did u get my email|at the station"
    "|ok see u at 7|happy friday!!|lol look at this|can u talk rn|home safe|just landed"
    "|thinking of u|sorry missed ur call|{n} u there?|happy bday {n}!!|good luck today {n}"
    "|u coming tonight?|left my charger at urs i think"
)
ADDRESS = _p(
    "haha {n} ur crazy|morning {n}|{n}!!|omg {n} stop|ok {n} whatever u say|night {n}"
    "|love u {n} lol|{n} u have to see this|miss u {n}|lol {n} no|{n} ur the best"
)
NOT_NAMED = _p(
    "bluefox88|nightowl_3|tacocat|moth.man|sunnyside22|zestylemon|pixelgoblin|dr_waffles"
    "|rainyday.99|okbuddy|quietstorm|marsbar_7"
)
_TAGS = [" lol", "!!", " haha", " tbh", " btw"]
_SHORTHAND = dict(
    pair.split("=")
    for pair in _p(
        "you are=ur|you're=ur|your=ur|you=u|to be honest=tbh|honestly=tbh|right now=rn"
        "|i don't know=idk|because=bc|though=tho|okay=ok|people=ppl|tomorrow=tmrw|please=pls"
        "|thanks=thx|oh my god=omg|by the way=btw|going to=gonna|want to=wanna|kind of=kinda"
        "|probably=prob|seriously=srsly"
    )
)
_ABBR = re.compile(
    r"\b(" + "|".join(map(re.escape, sorted(_SHORTHAND, key=len, reverse=True))) + r")\b", re.I
)
_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
_PHOTO = re.compile(r"\s*\[shares a photo of ([^\]]*)\]\s*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CLAUSE = re.compile(r"(?<=[.!?]) |, |: |; | - ")
_KEY = re.compile(r"\x00(\d+)\x00")
_LEET = {"a": "4", "e": "3", "i": "1", "o": "0"}

Msg = tuple[str, str, object | None]  # speaker's name, text, the fact it states (evidence)


@dataclass
class Conversation(chat.Conversation):
    handles: dict[str, str] = field(default_factory=dict)  # first name -> chat handle


@dataclass(frozen=True)
class _Style:
    """How one person types: shares of lowercased messages, abbreviated words, dropped
    apostrophes and typos; how often sentences stay together; the longest clause kept whole."""

    lower: float
    abbr: float
    apos: float
    typo: float
    join: float
    limit: int


def _style(rng: random.Random) -> _Style:
    return _Style(
        lower=rng.uniform(0.75, 0.97),
        abbr=rng.uniform(0.25, 0.7),
        apos=rng.uniform(0.6, 0.95),
        typo=rng.uniform(0.03, 0.05),
        join=rng.uniform(0.8, 0.95),
        limit=rng.randint(95, 130),
    )


def _handle(name: str, other: str, named: bool, rng: random.Random) -> str:
    n = name.lower()
    c = rng.choice("abcdghklmnprstvwz")
    if named:
        forms = [n, n, f"{n}_{c}", f"{n}.{c}", f"{n}{rng.randint(2, 99)}", f"its{n}", f"{n}xo"]
    else:
        leet = [n[:i] + _LEET[ch] + n[i + 1 :] for i, ch in enumerate(n) if ch in _LEET][:1]
        forms = [*leet, f"{n[:2]}{rng.randint(10, 99)}", *NOT_NAMED]
    forms = [f for f in forms if other.lower() not in f and (n in f) == named]
    return rng.choice(forms)


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    op = rng.randrange(3)
    if op == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + word[i + 1 :] if op == 1 else word[:i] + word[i] + word[i:]


def _clauses(sentence: str, limit: int) -> list[str]:
    """A long sentence cut at the clause boundary nearest its middle, recursively."""
    if len(sentence) <= limit:
        return [sentence]
    cuts = [m for m in _CLAUSE.finditer(sentence) if 15 <= m.start() <= len(sentence) - 15]
    if not cuts:
        return [sentence]
    cut = min(cuts, key=lambda m: abs(m.start() - len(sentence) / 2))
    return _clauses(sentence[: cut.start()], limit) + _clauses(sentence[cut.end() :], limit)


def _mess(text: str, st: _Style, rng: random.Random) -> tuple[str, bool]:
    """One message typed carelessly; and whether it was lowercased."""
    lowered = rng.random() < st.lower
    if lowered:
        text = text.lower()
    text = _ABBR.sub(
        lambda m: _SHORTHAND[m.group().lower()] if rng.random() < st.abbr else m.group(), text
    )
    if rng.random() < st.apos:
        text = text.replace("'", "")
    text = _WORD.sub(lambda m: _typo(m[0], rng) if rng.random() < st.typo else m[0], text)
    if rng.random() < 0.35:
        text = text.replace(",", "")
    text = text.strip()
    if text.endswith(".") and not text.endswith(".."):
        text = text.rstrip(".")
    elif text.endswith("!"):
        r = rng.random()
        text = text.rstrip("!") + ("" if r < 0.4 else "!!" if r < 0.6 else "!")
    elif text.endswith("?") and rng.random() < 0.35:
        text = text.rstrip("?")
    return text, lowered


def _messages(
    text: str, st: _Style, rng: random.Random, keep: Iterable[str] = (), join: float = -1
) -> list[tuple[str, bool]]:
    """A turn as the messages its author sends, each with whether it holds a key noun (one of
    `keep`, shielded from casing, typos and cuts); `join`: the author's habit unless given."""
    values = sorted(set(keep), key=len, reverse=True)
    for i, value in enumerate(values):
        text = text.replace(value, f"\x00{i}\x00")
    join = st.join if join < 0 else join
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(_PHOTO.split(text)):
        if i % 2:
            photo = _keys(_mess(part, st, rng), values, rng)
            out.append((f"[photo: {photo}]", "\x00" in part))
            continue
        joined: list[str] = []
        for s in _SENTENCE.split(part.strip()):
            if joined and rng.random() < join and len(joined[-1]) + len(s) < 150:
                joined[-1] += " " + s
            elif s:
                joined.append(s)
        for chunk in [c for s in joined for c in _clauses(s, st.limit)]:
            body = _keys(_mess(chunk, st, rng), values, rng)
            if body:
                out.append((body, "\x00" in chunk))
    return out


def _keys(typed: tuple[str, bool], values: list[str], rng: random.Random) -> str:
    """The key nouns back in a typed message, sometimes lowercased, very rarely misspelt."""

    def one(m: re.Match[str]) -> str:
        value = values[int(m[1])]
        if typed[1] and rng.random() < 0.3:
            value = value.lower()
        if " " not in value and len(value) >= 5 and rng.random() < 0.02:
            value = _typo(value, rng)
        return value

    return _KEY.sub(one, typed[0])


Required = tuple[chat.Turns, tuple[str, ...], chat._Fact | None]


class _Pair:
    """Two friends chatting: who they are, their handles and typing habits."""

    def __init__(self, rng: random.Random, hidden: tuple[bool, bool]) -> None:
        self.rng = rng
        self.people = a, b = rng.sample(chat.NAMES, 2)
        self.hidden = {p for p, h in zip(self.people, hidden, strict=True) if h}
        self.handles = {a: _handle(a, b, not hidden[0], rng), b: ""}
        while self.handles[b] in ("", self.handles[a]):
            self.handles[b] = _handle(b, a, not hidden[1], rng)
        self.styles = {a: _style(rng), b: _style(rng)}

    def block(self, turns: chat.Turns, keep: Iterable[str] = (), fact: object = None) -> list[Msg]:
        """The messages of some turns; those of the first turn naming a key noun state `fact`."""
        out: list[Msg] = []
        keep = tuple(keep)
        for i, (who, text) in enumerate(turns):
            st = self.styles[who]
            sent = _messages(text, st, self.rng, keep, 0.3 if i == 0 and fact else -1)
            anykey = any(key for _, key in sent)  # (else the whole statement is the evidence)
            out += [(who, b, fact if i == 0 and (key or not anykey) else None) for b, key in sent]
            if self.rng.random() < 0.16:  # an afterthought
                out.append((who, self.rng.choice(SHORT), None))
        return out

    def session(self, size: int, required: list[Required]) -> list[Msg]:
        """A day's messages: the required turns among small talk, `size` messages or so."""
        rng = self.rng
        x, y = rng.sample(self.people, 2)
        called = {p: p.lower() if rng.random() < 0.7 else p for p in self.people}
        if not required and size <= 4:  # a check-in
            out: list[Msg] = [(x, rng.choice(PINGS).format(n=called[y]), None)]
            while len(out) < size:
                out.append((rng.choice([x, y, y]), rng.choice(SHORT), None))
            return out
        blocks = [self.block(turns, keep, f) for turns, keep, f in required]
        rng.shuffle(blocks)
        for p, q in ((x, y), (y, x)):  # the friend's name in the chat, more often if hidden
            if rng.random() < (0.5 if q in self.hidden else 0.15):
                line = rng.choice(ADDRESS).format(n=called[q])
                blocks.insert(rng.randint(min(1, len(blocks)), len(blocks)), [(p, line, None)])
        ends: list[list[Msg]] = []
        for first, reply, odds in (
            (talk.OPEN, talk.GREET_BACK, 0.5),
            (talk.CLOSE, talk.CLOSE_BACK, 0.35),
        ):
            said = chat._fill(rng.choice(first), rng, {"other": called[y]})
            back = chat._fill(rng.choice(reply), rng, {"other": called[x]})
            ends.append(self.block([(x, said), (y, back)]) if rng.random() < odds else [])
        used: set[str] = set()
        while sum(map(len, ends + blocks)) < size:
            blocks.insert(rng.randint(0, len(blocks)), self.block(self.chatter(used)))
        return ends[0] + [m for b in blocks for m in b] + ends[1]

    def chatter(self, used: set[str]) -> chat.Turns:
        """Small talk: each says a few things in a row, the second one reacting first."""
        rng = self.rng

        def line() -> str:
            roll = rng.random()
            if roll < 0.35:
                group = talk.CHATTER[rng.choice(sorted(talk.CHATTER))]
                text = chat._fill(chat._pick(group, rng, used), rng, {})
            else:
                text = chat._pick(talk.ASK if roll < 0.45 else talk.FILLER, rng, used)
            if rng.random() < 0.04:
                text += f" [shares a photo of {chat._pick(talk.PHOTOS, rng, used)}]"
            return text

        x, y = rng.sample(self.people, 2)
        turns = []
        for i, who in enumerate((x, y, x)[: rng.choice([2, 2, 3])]):
            said = [line() for _ in range(rng.choice([1, 2, 3, 3, 4]))]
            if i and rng.random() < 0.6:
                said.insert(0, chat._pick(talk.REACT, rng, used))
            turns.append((who, " ".join(said)))
        return turns

    def render(self, msgs: list[Msg]) -> str:
        """The session's text; an evidence message found earlier in it is tagged till unique."""
        for _ in range(50):
            lines = [f"{self.handles[who]}: {body}" for who, body, _ in msgs]
            text = "\n".join(lines)
            at, clash = 0, False
            for i, (who, body, f) in enumerate(msgs):
                if f is not None and text.index(body) != at + len(self.handles[who]) + 2:
                    msgs[i] = (who, body + self.rng.choice(_TAGS), f)
                    clash = True
                at += len(lines[i]) + 1
            if not clash:
                return text
        raise RuntimeError("evidence message not unique in its session")


def _place(plan: list[chat._Fact], sizes: list[int], rng: random.Random) -> None:
    """Facts into sessions of 8 messages or more, more into long ones; a person's facts of one
    type in different sessions; a job in the first half, the change at least two later."""
    n = len(sizes)
    load = [0] * n
    for f in plan:
        if f.kind == "job":
            base = list(range(n // 2))
        elif f.kind == "jobchange":
            start = next(g.session for g in plan if g.kind == "job" and g.owner == f.owner)
            base = list(range(max(start + 2, n // 2), n))
        else:
            busy = {g.session for g in plan if g.owner == f.owner and g.kind == f.kind}
            base = [s for s in range(n) if s not in busy]
        choices = [s for s in base if sizes[s] >= 8] or base
        f.session = rng.choices(choices, [sizes[s] / (1 + 2 * load[s]) for s in choices])[0]
        load[f.session] += 1


def conversation(
    name: str, rng: random.Random, hidden: tuple[bool, bool] = (False, False)
) -> Conversation:
    """One chat of two friends; `hidden`: whose handle does not show the first name."""
    pair = _Pair(rng, hidden)
    n, mid = rng.randint(26, 38), math.log(30)
    sizes = [  # a few check-ins, mostly evenings of a few dozen messages, a few long ones
        rng.randint(1, 4) if rng.random() < 0.12 else min(178, round(rng.lognormvariate(mid, 0.85)))
        for _ in range(n)
    ]
    plan = chat._plan_facts(*pair.people, rng)
    _place(plan, sizes, rng)
    required: list[list[Required]] = [[] for _ in range(n)]
    for f in plan:
        keep = tuple(f.slots.values())
        required[f.session].append((chat._fact_turns(f, rng), keep, f))
        if f.kind in facts.TYPE and f.session < n - 1 and rng.random() < 0.35:
            later = [s for s in range(f.session + 1, n) if sizes[s] >= 5] or [n - 1]
            required[rng.choice(later)].append((chat._callback_turns(f, rng), keep, None))
    conv = Conversation(name, handles=pair.handles)
    day = datetime(2023, rng.randint(1, 6), rng.randint(1, 28), tzinfo=UTC)
    stated: dict[tuple[int, str], list[tuple[int, str]]] = {}
    for s in range(n):
        msgs = pair.session(sizes[s], required[s])
        conv.sessions.append(pair.render(msgs))
        conv.titles.append(None)
        conv.dates.append(day + timedelta(hours=rng.randint(7, 23), minutes=rng.randint(0, 59)))
        day += timedelta(days=rng.choice([1, 2, 3, 3, 4, 5, 6, 7, 9, 12, 14, 20]))
        for f in [f for _, _, f in required[s] if f is not None]:
            said = [(s, body) for _, body, g in msgs if g is f]
            f.said = said[0][1]
            stated[(s, f.said)] = said
    conv.questions = chat._questions(plan, rng)
    for q in conv.questions:  # a fact over two messages: both are evidence
        q.evidence = [e for key in q.evidence for e in stated[key]]
    return conv


def corpus(conversations: int = 6, seed: int = 23) -> list[Conversation]:
    """`conversations` chats "real-00"...; one person in twelve (at least one) goes by a handle
    without their first name."""
    rng = random.Random(seed)
    people = 2 * conversations
    hidden = set(rng.sample(range(people), max(1, round(people / 12))))
    return [
        conversation(f"real-{c:02d}", rng, (2 * c in hidden, 2 * c + 1 in hidden))
        for c in range(conversations)
    ]


def messages(session: str) -> list[tuple[str, str]]:
    """(handle, text) of each message of a session."""
    return [(h, text) for h, _, text in (line.partition(": ") for line in session.split("\n"))]


def stats(convs: Sequence[Conversation]) -> dict[str, Any]:
    """The traits the corpus imitates, measured (questions naming nobody are not counted in
    `name_not_in_handle`)."""
    chars: list[int] = []
    per: list[int] = []
    same = 0
    named = masked = 0
    for c in convs:
        for session in c.sessions:
            rows = messages(session)
            per.append(len(rows))
            chars += [len(text) for _, text in rows]
            same += sum(rows[i][0] == rows[i - 1][0] for i in range(1, len(rows)))
        for q in c.questions:
            for person, handle in c.handles.items():
                if re.search(rf"\b{person}\b", q.text):
                    named += 1
                    masked += person.lower() not in handle
                    break
    kinds = Counter(q.kind for c in convs for q in c.questions)
    return {
        "conversations": len(convs),
        "sessions": len(per),
        "messages": len(chars),
        "median_message_chars": median(chars),
        "same_speaker_share": round(same / len(chars), 3),
        "messages_per_session": {"min": min(per), "median": median(per), "max": max(per)},
        "name_not_in_handle_share": round(masked / max(1, named), 3),
        "questions": sum(len(c.questions) for c in convs),
        "questions_per_kind": dict(sorted(kinds.items())),
    }


if __name__ == "__main__":
    import json

    convs = corpus()
    print(json.dumps(stats(convs), indent=1))
    c = convs[0]
    print("handles:", c.handles)
    asked = {s for q in c.questions for s, _ in q.evidence}
    s = min(asked, key=lambda s: abs(len(messages(c.sessions[s])) - 30))
    print(f"\n--- {c.name} session {s}, {c.dates[s]:%Y-%m-%d} ---\n{c.sessions[s]}\n")
    for q in c.questions:
        if s in q.relevant:
            print(q.kind, q.relevant, q.text, "\n   ", q.evidence)
