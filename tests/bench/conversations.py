"""A generated corpus of two-friend chats for retrieval quality (LoCoMo-style, deterministic).

Each conversation is between two named friends: 18-26 dated sessions a few days to three weeks
apart, each 300-700 words of speaker-prefixed turns ("Name: text", one turn per line) of small
talk, reactions and topic chatter, with image captions inside some turns. Personal facts (pets,
instruments, concerts, camping trips, city trips, books, volunteering, events, hobbies, kids,
races, cooking, a job and a job change) are each stated once, in passing, by their owner; the
same topics recur elsewhere as distractors (the other friend's facts of the same type, vague
chatter, later callbacks that name the fact's noun without its content). Questions name a
person and usually a thing, as real ones do:

- single-hop: one session holds the answer ("What kind of animal is Pickles?");
- multi-hop: 2-3 sessions of the same person and topic ("What pets does Ines have?");
- temporal: "When did ...?", the session of the event (its date is the answer);
- inference: "Is Ines an animal lover?", the owner's sessions with facts of that topic group.

No network, no model: seeded `random` over the pools in chat_facts.py and chat_talk.py.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from tests.bench import chat_facts as facts
from tests.bench import chat_talk as talk
from tests.bench.sessions import Question

NAMES = [
    "Caroline",
    "Melanie",
    "Jon",
    "Gina",
    "Maria",
    "Joanna",
    "Nate",
    "Tim",
    "Audrey",
    "Andrew",
    "Deborah",
    "Jolene",
    "Evan",
    "Calvin",
    "Priya",
    "Marco",
    "Leila",
    "Oskar",
    "Ines",
    "Kwame",
    "Rosa",
    "Dmitri",
    "Hana",
    "Felix",
    "Nadia",
    "Joaquin",
    "Greta",
    "Yusuf",
]
KINDS = ("single-hop", "multi-hop", "temporal", "inference")
_SLOT = re.compile(r"\{(x:)?(\w+)\}")
_JOB_FOLLOW = [
    "Ugh, that sounds intense. Do you still like it there?",
    "Oof. Are they at least treating you well?",
    "Do you ever think about doing something else?",
]
_JOB_MORE = [
    "Some days yes, some days I dream about quitting and opening a tiny bookshop haha.",
    "The people are great, the hours are not.",
    "I'm thinking about it more and more lately honestly.",
]
_CHANGE_FOLLOW = [
    "WHAT. Congrats!! I'm so proud of you.",
    "Oh wow, huge step! How are you feeling?",
    "Finally!! You've been talking about this forever.",
]
_CHANGE_MORE = [
    "Nervous and excited. It was time for something new.",
    "Scared but it feels right. Better hours too.",
]


@dataclass
class Conversation:
    name: str
    sessions: list[str] = field(default_factory=list)
    titles: list[str | None] = field(default_factory=list)
    dates: list[datetime] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class _Fact:
    owner: str
    other: str
    kind: str  # a chat_facts type name, "job" or "jobchange"
    slots: dict[str, str]
    session: int = -1
    said: str = ""  # the turn that states it (its evidence), once the session is written


Turns = list[tuple[str, str]]


def _fill(template: str, rng: random.Random, values: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1):  # {x:slot}: any value of that slot's pool
            pools = [t.slots[m.group(2)] for t in facts.TYPES if m.group(2) in t.slots]
            return rng.choice(pools[0])
        return values[m.group(2)]

    return _SLOT.sub(one, template)


def _draw(pool: list[str], taken: set[str], rng: random.Random) -> str:
    free = [v for v in pool if v not in taken] or pool
    value = rng.choice(free)
    taken.add(value)
    return value


def _plan_facts(a: str, b: str, rng: random.Random) -> list[_Fact]:
    taken: dict[str, set[str]] = {}
    out: list[_Fact] = []
    for owner, other in ((a, b), (b, a)):
        for t in facts.TYPES:
            n = min(t.most, rng.choice([0, 1, 1, 2, 2, 3]))
            for _ in range(n):
                slots = {
                    s: _draw(pool, taken.setdefault(s, set()), rng) for s, pool in t.slots.items()
                }
                out.append(_Fact(owner, other, t.name, slots))
        if rng.random() < 0.8:
            job = {s: _draw(p, taken.setdefault(s, set()), rng) for s, p in facts.JOB_SLOTS.items()}
            new = {
                s + "2": _draw(p, taken.setdefault(s, set()), rng)
                for s, p in facts.JOB_SLOTS.items()
            }
            out.append(_Fact(owner, other, "job", job))
            out.append(_Fact(owner, other, "jobchange", job | new))
    return out


def _place(plan: list[_Fact], n: int, rng: random.Random) -> None:
    load = [0] * n
    for f in plan:
        if f.kind == "job":
            choices = list(range(0, n // 2))
        elif f.kind == "jobchange":
            start = next(g.session for g in plan if g.kind == "job" and g.owner == f.owner)
            choices = list(range(max(start + 2, n // 2), n))
        else:
            busy = {g.session for g in plan if g.owner == f.owner and g.kind == f.kind}
            choices = [s for s in range(n) if s not in busy]
        best = min(load[s] for s in choices)
        f.session = rng.choice([s for s in choices if load[s] <= best + 1])
        load[f.session] += 1


def _fact_turns(f: _Fact, rng: random.Random) -> Turns:
    o, t = f.owner, f.other
    if f.kind in ("job", "jobchange"):
        say, follow, more = (
            (facts.JOB_SAY, _JOB_FOLLOW, _JOB_MORE)
            if f.kind == "job"
            else (facts.JOB_CHANGE, _CHANGE_FOLLOW, _CHANGE_MORE)
        )
    else:
        ft = facts.TYPE[f.kind]
        say, follow, more = ft.say, ft.follow, ft.more
    values = f.slots | {"other": t}
    turns = [(o, _fill(rng.choice(say), rng, values)), (t, _fill(rng.choice(follow), rng, values))]
    turns.append((o, _fill(rng.choice(more), rng, values)))
    f.said = turns[0][1]
    if rng.random() < 0.5:
        turns.append((t, rng.choice(talk.REACT)))
    return turns


def _callback_turns(f: _Fact, rng: random.Random) -> Turns:
    ask, answer = rng.choice(facts.TYPE[f.kind].callback)
    return [(f.other, _fill(ask, rng, f.slots)), (f.owner, _fill(answer, rng, f.slots))]


def _filler_turns(a: str, b: str, rng: random.Random, used: set[str]) -> Turns:
    x, y = rng.sample([a, b], 2)
    roll = rng.random()
    if roll < 0.4:
        group = rng.choice(sorted(talk.CHATTER))
        first = _fill(_pick(talk.CHATTER[group], rng, used), rng, {})
    elif roll < 0.55:
        first = _pick(talk.ASK, rng, used)
    else:
        first = _pick(talk.FILLER, rng, used)
    if rng.random() < 0.12:
        first += f" [shares a photo of {_pick(talk.PHOTOS, rng, used)}]"
    second = _pick(talk.FILLER, rng, used)
    if rng.random() < 0.6:
        second = _pick(talk.REACT, rng, used) + " " + second
    turns = [(x, first), (y, second)]
    if rng.random() < 0.3:
        turns.append((x, _pick(talk.REACT, rng, used)))
    return turns


def _pick(pool: list[str], rng: random.Random, used: set[str]) -> str:
    """A line of the pool not yet used in this session (real chat does not repeat itself)."""
    free = [line for line in pool if line not in used] or pool
    line = rng.choice(free)
    used.add(line)
    return line


def _words(turns: Turns) -> int:
    return sum(len(text.split()) + 1 for _, text in turns)


def _session(a: str, b: str, required: list[Turns], rng: random.Random) -> str:
    x, y = rng.sample([a, b], 2)
    opening = [(x, _fill(rng.choice(talk.OPEN), rng, {"other": y}))]
    opening.append((y, _fill(rng.choice(talk.GREET_BACK), rng, {"other": x})))
    closing = [(x, _fill(rng.choice(talk.CLOSE), rng, {"other": y}))]
    closing.append((y, _fill(rng.choice(talk.CLOSE_BACK), rng, {"other": x})))
    segments = list(required)
    rng.shuffle(segments)
    target = rng.randint(330, 660)
    used: set[str] = set()
    while _words(opening + closing) + sum(map(_words, segments)) < target:
        segments.insert(rng.randint(0, len(segments)), _filler_turns(a, b, rng, used))
    merged: Turns = []
    for speaker, text in opening + [t for seg in segments for t in seg] + closing:
        if merged and merged[-1][0] == speaker:
            merged[-1] = (speaker, merged[-1][1] + " " + text)
        else:
            merged.append((speaker, text))
    return "\n".join(f"{speaker}: {text}" for speaker, text in merged)


def _specific(template: str) -> bool:
    return any(m.group(2) not in ("p", "other") for m in _SLOT.finditer(template))


def _questions(plan: list[_Fact], rng: random.Random) -> list[Question]:
    out: list[Question] = []

    def ask(templates: list[str], values: dict[str, str], about: list[_Fact], kind: str) -> None:
        relevant = sorted({f.session for f in about})
        evidence = [(f.session, f.said) for f in about]
        out.append(Question(_fill(rng.choice(templates), rng, values), relevant, kind, evidence))

    for f in plan:
        values = f.slots | {"p": f.owner, "other": f.other}
        if f.kind == "jobchange":
            start = next(g for g in plan if g.kind == "job" and g.owner == f.owner)
            ask(facts.JOB_ASK[1:], values, [f], "single-hop")
            ask(facts.JOB_INFER, values, [start, f], "inference")
            if rng.random() < 0.5:
                ask(facts.JOB_WHEN, values, [f], "temporal")
        elif f.kind == "job":
            if rng.random() < 0.5:
                ask(facts.JOB_ASK[:1], values, [f], "single-hop")
        else:
            ft = facts.TYPE[f.kind]
            templates = ft.ask
            if sum(g.owner == f.owner and g.kind == f.kind for g in plan) > 1:
                templates = [t for t in ft.ask if _specific(t)]  # a vague one would match all
            if templates and rng.random() < 0.75:
                ask(templates, values, [f], "single-hop")
            if ft.when and rng.random() < 0.45:
                ask(ft.when, values, [f], "temporal")
    owners = sorted({f.owner for f in plan})
    for owner in owners:
        mine = [f for f in plan if f.owner == owner and f.kind in facts.TYPE]
        for t in facts.TYPES:
            same = [f for f in mine if f.kind == t.name]
            if t.many and len(same) >= 2:
                ask(t.many, {"p": owner}, same, "multi-hop")
        for group, templates in facts.INFER.items():
            hits = [f for f in mine if facts.TYPE[f.kind].group == group]
            if hits and rng.random() < 0.6:
                ask(templates, {"p": owner}, hits, "inference")
    return out


def conversation(name: str, rng: random.Random) -> Conversation:
    a, b = rng.sample(NAMES, 2)
    n = rng.randint(18, 26)
    plan = _plan_facts(a, b, rng)
    _place(plan, n, rng)
    required: list[list[Turns]] = [[] for _ in range(n)]
    for f in plan:
        required[f.session].append(_fact_turns(f, rng))
        if f.kind in facts.TYPE and f.session < n - 1 and rng.random() < 0.35:
            required[rng.randrange(f.session + 1, n)].append(_callback_turns(f, rng))
    conv = Conversation(name)
    when = datetime(2023, rng.randint(1, 6), rng.randint(1, 28), rng.randint(9, 21), tzinfo=UTC)
    for s in range(n):
        conv.sessions.append(_session(a, b, required[s], rng))
        conv.titles.append(None)
        conv.dates.append(when)
        when += timedelta(days=rng.randint(2, 21), minutes=rng.randint(-300, 300))
    conv.questions = _questions(plan, rng)
    return conv


def corpus(conversations: int = 6, seed: int = 11) -> list[Conversation]:
    rng = random.Random(seed)
    return [conversation(f"chat-{c:02d}", rng) for c in range(conversations)]


if __name__ == "__main__":
    convs = corpus()
    c = convs[0]
    print(c.sessions[0], "\n")
    for q in c.questions:
        print(q.kind, q.relevant, q.text)
