"""Evidence selection (memlake.search.query.evidence, decision 2401): the turns that answer,
across hits, best first, within a character budget, at exact offsets."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np

from memlake.search.query.evidence import DEFAULT_EVIDENCE, EvidenceParams, select
from memlake.search.query.params import SearchHit
from memlake.search.query.units import UNIT_CHARS, UnitCache, units_of

CHAT_A = "\n".join(
    [
        "Caroline: Morning! How was the weekend?",
        "Melanie: Lovely, we went to the lake with the kids.",
        "Caroline: I spent Saturday researching adoption agencies for the first time.",
        "Melanie: That is huge! Which one are you looking at?",
        "Caroline: Probably Bright Futures, they work with single parents.",
        "Melanie: Sounds like a good fit. Any plans for dinner?",
        "Caroline: Pasta, as always haha.",
    ]
)
CHAT_B = "\n".join(
    [
        "Melanie: I finished researching pottery classes near the river.",
        "Caroline: Oh fun, which studio?",
        "Melanie: Clay Corner, Tuesdays at six.",
        "Caroline: Nice. Talk soon!",
    ]
)


def hit(i: int, content: str, score: float, vector: np.ndarray | None = None) -> SearchHit:
    row = {"id": f"ep{i}", "content": content, "revision": 1}
    return SearchHit(id=f"ep{i}", score=score, breakdown={}, row=row, query_vector=vector)


def texts(found: Any) -> list[list[str]]:
    return [[e.hit.row["content"][s.start : s.end] for s in e.spans] for e in found]


def test_units_are_turns_with_their_speaker_as_written_and_text_after_the_label() -> None:
    units = units_of(CHAT_A)
    assert len(units) == 7
    first = units[0]
    assert CHAT_A[first.start : first.end] == "Caroline: Morning! How was the weekend?"
    assert CHAT_A[first.body : first.end] == "Morning! How was the weekend?"
    assert [u.speaker for u in units[:2]] == ["Caroline", "Melanie"]


def test_a_long_turn_is_scored_by_its_sentences_and_prose_by_sentences() -> None:
    long = "Ann: " + " ".join(f"Sentence number {i} is here." for i in range(60))
    chat = f"{long}\nBob: ok\nAnn: fine\nBob: sure"
    assert len(long) > UNIT_CHARS
    units = units_of(chat)
    ann = [u for u in units if u.speaker == "Ann" and u.end <= len(long)]
    assert len(ann) == 60 and all(chat[u.start : u.end].endswith("here.") for u in ann)
    assert chat[ann[0].body : ann[0].end] == "Sentence number 0 is here."
    prose = "The build failed. We pinned numpy. It passed again."
    assert [prose[u.start : u.end] for u in units_of(prose)] == [
        "The build failed.",
        "We pinned numpy.",
        "It passed again.",
    ]
    assert all(u.speaker is None for u in units_of(prose))


def test_the_answering_turn_comes_first_within_a_small_budget() -> None:
    hits = [hit(0, CHAT_A, 0.8), hit(1, CHAT_B, 0.6)]
    found = select(hits, {}, "Which adoption agency is Caroline looking at?", "m", budget=160)
    best = max(found[0].spans, key=lambda s: s.score)
    assert "adoption agencies" in CHAT_A[best.start : best.end]
    total = sum(s.end - s.start for e in found for s in e.spans)
    assert total <= 160
    for e in found:  # offsets are exact, spans in reading order, never overlapping
        spans = [(s.start, s.end) for s in e.spans]
        assert spans == sorted(spans)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_the_speaker_named_in_the_question_wins_a_tie_of_words() -> None:
    hits = [hit(0, CHAT_A, 0.7), hit(1, CHAT_B, 0.7)]
    found = select(hits, {}, "What did Caroline research?", "m", budget=90)
    assert found[0].spans[0].speaker == "Caroline"
    assert "researching adoption" in texts(found)[0][0]
    plain = EvidenceParams(speaker=0.0)
    found = select(hits, {}, "What did Caroline research?", "m", budget=90, params=plain)
    # without it, the shorter turn with the same word scores best
    assert found[0].spans[0].speaker == "Melanie"


def test_a_question_taken_brings_its_answer_and_touching_spans_merge() -> None:
    hits = [hit(0, CHAT_B, 1.0)]
    found = select(hits, {}, "which studio", "m", budget=80)
    (only,) = texts(found)
    assert only == ["Caroline: Oh fun, which studio?\nMelanie: Clay Corner, Tuesdays at six."]
    assert found[0].spans[0].speaker == "Caroline"  # the speaker of the best unit
    alone = EvidenceParams(neighbours="none")
    none = select(hits, {}, "which studio", "m", budget=45, params=alone)
    assert texts(none) == [["Caroline: Oh fun, which studio?"]]


def test_the_budget_is_spent_and_hits_without_a_turn_are_left_out() -> None:
    hits = [hit(0, CHAT_A, 0.9), hit(1, CHAT_B, 0.5)]
    whole = len(CHAT_A) + len(CHAT_B)
    everything = select(hits, {}, "weekend", "m", budget=10_000)
    assert sum(s.end - s.start for e in everything for s in e.spans) <= whole
    assert {e.hit.id for e in everything} == {"ep0", "ep1"}
    few = select(hits, {}, "weekend", "m", budget=60)
    assert [e.hit.id for e in few] == ["ep0"]
    assert select(hits, {}, "weekend", "m", budget=10) == []  # under MIN_CHARS: nothing


def test_meaning_picks_the_turn_when_no_word_matches() -> None:
    dim = 4
    q = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    units = units_of(CHAT_A)
    target = units[4]  # "Probably Bright Futures ..."
    far = np.array([0.0, 1.0, 0.0, 0.0], np.float32)
    starts = [u.start for u in units]
    ends = [u.end for u in units]
    vectors = [q if u is target else far for u in units]
    chunks = {
        "ep0": {
            "model": "m",
            "content_hash": "h",
            "starts": starts,
            "ends": ends,
            "vectors": np.stack(vectors).tolist(),
        }
    }
    found = select([hit(0, CHAT_A, 1.0, q)], chunks, "zzz qqq", "m", budget=80)
    assert texts(found) == [[CHAT_A[target.start : target.end]]]
    # another model's vectors are not read
    other = select([hit(0, CHAT_A, 1.0, q)], chunks, "zzz qqq", "other", budget=80)
    assert texts(other) != texts(found)
    assert dim == q.shape[0]


def test_the_unit_cache_recuts_a_changed_episode() -> None:
    cache = UnitCache(size=2)
    first = cache.get("a", 1, CHAT_A)
    assert cache.get("a", 1, CHAT_A) is first
    assert cache.get("a", 2, CHAT_B) is not first  # upserted: revision and content changed
    cache.get("b", 1, CHAT_B)
    cache.get("c", 1, CHAT_B)
    assert cache.get("a", 1, CHAT_A) is not first  # evicted, least recently used first


def test_default_weights_are_the_measured_ones() -> None:
    # decision 2401's grid chose them (4501 the neighbours and the seeds' share); a change must
    # update the record
    d = DEFAULT_EVIDENCE
    assert (d.episode, d.bm25, d.vector, d.speaker) == (0.2, 0.5, 0.4, 0.2)
    assert (d.neighbours, d.seed, d.seed_share) == ("speaker", 20, 0.5)


def test_the_passage_the_episode_search_matched_goes_first() -> None:
    # a paraphrase: no word of the query is in the turn the search's own fusion matched
    units = units_of(CHAT_A)
    target = units[4]
    matched = replace(hit(0, CHAT_A, 0.9), passage=(target.start, target.end))
    whole = EvidenceParams(seed_share=1.0)
    found = select([matched], {}, "weekend plans", "m", budget=80, params=whole)
    assert texts(found) == [[CHAT_A[target.start : target.end]]]
    alone = select([matched], {}, "weekend plans", "m", budget=80, params=EvidenceParams(seed=0))
    assert "weekend" in texts(alone)[0][0]
    # the seeds spend at most their share of the budget: 80 * 0.5 holds no seed here
    shared = select([matched], {}, "weekend plans", "m", budget=80)
    assert texts(shared) == texts(alone)


def test_small_budgets_are_not_spent_on_one_seed_per_hit() -> None:
    """Twenty hits each seeded by a filler line: at a small budget the seeds take at most half,
    and the turn that answers (in the last hit, no passage matched) still gets its place."""
    filler = [hit(i, CHAT_B, 0.9 - i * 0.01) for i in range(19)]
    filler = [replace(h, passage=(0, 40)) for h in filler]
    answer = hit(19, CHAT_A, 0.5)
    found = select([*filler, answer], {}, "adoption agencies Bright Futures", "m", budget=400)
    shown = [t for e in found for t in texts([e])[0]]
    assert any("Bright Futures" in t for t in shown), shown
    before = select(
        [*filler, answer], {}, "adoption agencies Bright Futures", "m", budget=400,
        params=EvidenceParams(seed_share=1.0),
    )  # fmt: skip
    assert not any("Bright Futures" in t for e in before for t in texts([e])[0])


def test_a_run_of_messages_by_one_person_is_shown_together() -> None:
    chat = "\n".join(
        [
            "ana: hey!!",
            "kw4me: ok so big news",
            "kw4me: we adopted a puppy from the shelter",
            "kw4me: his name is biscuit",
            "ana: omg",
        ]
    )
    found = select([hit(0, chat, 0.9)], {}, "what is the puppy called", "m", budget=100)
    assert texts(found) == [
        [
            "kw4me: ok so big news\nkw4me: we adopted a puppy from the shelter"
            "\nkw4me: his name is biscuit"
        ]
    ]
    qa = EvidenceParams(neighbours="qa")
    alone = select([hit(0, chat, 0.9)], {}, "what is the puppy called", "m", budget=50, params=qa)
    assert texts(alone) == [["kw4me: we adopted a puppy from the shelter"]]
    # a run that does not fit is not forced: the best message alone
    assert texts(select([hit(0, chat, 0.9)], {}, "what is the puppy called", "m", 50)) == texts(
        alone
    )


def test_terms_of_each_equals_terms_one_by_one() -> None:
    from memlake.search.index.text import terms, terms_of_each

    lines = [*CHAT_A.splitlines(), *CHAT_B.splitlines(), "", "Running runners ran; RUN!"]
    assert terms_of_each(lines) == [terms(line) for line in lines]


def test_chunk_rows_reads_each_rows_own_vectors_as_an_array(tmp_path: Any) -> None:
    """A search reads its hits' stored passage vectors from Arrow as one float32 array: the
    row asked for, from the middle of a segment of many (a slice's child values are the whole
    segment's), equal to the stored lists; a row without vectors has none; a deleted row is
    None."""
    from memlake.lake import Transaction
    from memlake.search.index.chunks import CHUNKS_TABLE
    from memlake.search.index.passages import Embedded
    from memlake.search.query.best_passage import chunk_rows
    from memlake.store.local import LocalStore
    from tests.wiring import bare_lake

    lake, rng = bare_lake(LocalStore(tmp_path)), np.random.default_rng(5)
    stored = {f"e{i}": rng.standard_normal((i % 4, 384)).astype(np.float32) for i in range(9)}

    def put(txn: Transaction) -> None:
        for rid, vectors in stored.items():
            emb = Embedded("h" + rid, list(range(4)), list(range(1, 5)), vectors)
            txn.put(CHUNKS_TABLE, emb.row(rid, "m"))

    lake.commit("t", put)
    lake.commit("t", lambda txn: txn.delete(CHUNKS_TABLE, "e7"))
    got = chunk_rows(lake.snapshot("t"), ["e5", "e4", "e7", "e9"])
    assert got["e7"] is None and got["e9"] is None
    for rid in ("e5", "e4"):
        row = got[rid]
        assert row is not None and row["model"] == "m" and row["content_hash"] == "h" + rid
        assert row["starts"] == [0, 1, 2, 3] and row["ends"] == [1, 2, 3, 4]
        assert row["vectors"].dtype == np.float32 and row["vectors"].shape == (int(rid[1]) % 4, 384)
        assert np.array_equal(row["vectors"], stored[rid])
        assert np.array_equal(Embedded.from_row(row, 384).vectors, stored[rid])


def test_terms_of_each_matches_terms_through_its_stem_memo(monkeypatch: Any) -> None:
    """The cut's terms are terms() of each text, also when the stem memo is replaced mid-way
    (it is never cleared under a reader) and with words bm25s's pattern keeps or drops."""
    from memlake.search.index import text

    texts = ["Caroline's café: naïve résumés, x y z_1 __ 42 running runners!", CHAT_A, CHAT_B]
    bm25s_pattern = re.compile(r"(?u)\b\w\w+\b")
    for t in texts:
        assert text._TOKEN.findall(t.lower()) == bm25s_pattern.findall(t.lower())
    first: dict[str, str] = {}
    monkeypatch.setattr(text, "STEM_MEMO", 12)
    monkeypatch.setattr(text, "_stems", first)
    for _ in range(2):
        assert text.terms_of_each(texts) == [text.terms(t) for t in texts]
    assert text._stems is not first  # replaced when it outgrew STEM_MEMO
