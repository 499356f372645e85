"""Turn-aware passages (memlake.embed.turns, memlake.search.index.passages.plan): turns detected
conservatively, whole turns grouped up to a token budget, one shared turn, exact offsets."""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlake.embed.minilm import MiniLMEmbedder
from memlake.embed.turns import CharMeasure, TokenMeasure, find_turns, spans
from memlake.search.index import passages
from memlake.search.index.passages import HEADER, Passage, plan

_WORDS = (
    "lake river trip photo pottery camping kids painting garden adoption support group concert"
    " guitar novel bakery bicycle marathon sunrise beach museum recipe violin"
)
WORDS = _WORDS.split()


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder.shared()


def sentence(rng: random.Random, words: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return body[0].upper() + body[1:] + rng.choice([".", "!", "?"])


def chat(turns: int, seed: int = 1, names: tuple[str, str] = ("Caroline", "Melanie")) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(turns):
        said = " ".join(sentence(rng, rng.randint(4, 14)) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:
            said += " [shares a photo of a sunset over the lake]"
        lines.append(f"{names[i % 2]}: {said}")
    return "\n".join(lines) + "\n"


def content_passages(text: str, embedder: Any) -> list[Passage]:
    out = plan({"content": text}, embedder)
    assert all(p.start != HEADER for p in out)
    return out


def assert_exact_and_covering(text: str, out: list[Passage]) -> None:
    assert out[0].start == 0 and out[-1].end == len(text)
    for p in out:
        assert text[p.start : p.end] == p.text and p.start < p.end
    for prev, nxt in zip(out, out[1:], strict=False):
        assert prev.start < nxt.start <= prev.end  # no gap, always progress


def assert_within(model: MiniLMEmbedder, out: list[Passage], tokens: int) -> None:
    """Re-tokenised alone, with [CLS]/[SEP], no passage exceeds `tokens`."""
    assert max(model.count_tokens(p.text) + 2 for p in out) <= tokens


# --- detection -------------------------------------------------------------------------------


def test_two_speaker_chat_is_turns_per_line() -> None:
    text = chat(12)
    turns = find_turns(text)
    assert len(turns) == 12
    assert {t.speaker for t in turns} == {"caroline", "melanie"}
    starts = [0] + [i + 1 for i, ch in enumerate(text[:-1]) if ch == "\n"]
    assert [t.start for t in turns] == starts


@pytest.mark.parametrize(
    ("text", "speakers"),
    [
        ("**Alice**: hi there\n**Bob**: hello\n**Alice**: how was it?\n**Bob**: great\n", 4),
        ("**Alice:** hi there\n**Bob:** hello\n**Alice:** how was it?\n**Bob:** fine\n", 4),
        ("### user\nHow do I\nrotate keys?\n\n### assistant\nUse KMS.\n### user\nThanks\n", 3),
        ("- 10:42 Alice: hi\n- 10:43 Bob: hey\n- 10:44 Alice: lunch?\n- 10:45 Bob: yes\n", 4),
        ("[10:42] Alice Smith: hi\n[10:43] Bob Jones: hey\n[10:44] Alice Smith: ok\n", 3),
        ("[2024-05-01 10:42] Ann: a\n[2024-05-01 10:43] Ben: b\n[2024-05-01 10:50] Ann: c\n", 3),
    ],
)
def test_markdown_chat_labels(text: str, speakers: int) -> None:
    assert len(find_turns(text)) == speakers


def test_thread_rendered_chat_turns_span_lines() -> None:
    # GIVEN thread messages rendered "role: text", each several lines and paragraphs long
    text = (
        "user: I want to move the photos bucket.\n\nIt has 2 TB in it.\nAny advice?\n"
        "assistant: Use S3 Batch Replication.\nThen switch the readers.\n\nFinally delete.\n"
        "user: And the old keys?\n"
        "assistant: Keep them until the readers moved.\n"
    )
    turns = find_turns(text)
    # THEN only the labelled lines open turns; the other lines continue them
    assert [t.speaker for t in turns] == ["user", "assistant", "user", "assistant"]
    assert text[turns[1].start :].startswith("assistant: Use S3")


@pytest.mark.parametrize(
    "text",
    [
        "Note: the bucket is versioned.\nWe copy it tonight.\nWarning: costs apply.\nDone.\n",
        "Note: one.\nNote: two.\nWarning: three.\nWarning: four.\nThe plan is simple.\n",
        "See http://example.com/a for details.\nhttp://example.com/b\nhttps://x.io/c\n" * 3,
        "10:42\nThe meeting started.\n10:55\nIt ended.\n10:58\nWe left.\n",
        "Q: what is the cap?\nIt is 16,000 bytes, measured on tools/list.\nWe keep it.\n",
        "Summary: fine.\nIt went well, as said before: twice.\nTo be honest: yes.\n",
    ],
)
def test_label_false_positives_are_prose(text: str) -> None:
    assert find_turns(text) == []


def test_mixed_prose_then_chat(model: MiniLMEmbedder) -> None:
    # GIVEN a prose introduction followed by a chat
    rng = random.Random(3)
    intro = " ".join(sentence(rng, 12) for _ in range(14)) + "\n\n"
    text = intro + chat(20, seed=4)
    out = content_passages(text, model)
    assert_exact_and_covering(text, out)
    # THEN the introduction is cut on sentence ends and the chat on turn starts
    chat_starts = {t.start for t in find_turns(text)}
    for p in out[1:]:
        if p.start < len(intro):
            assert text[p.start - 2 : p.start - 1] in ".!?"
        else:
            assert p.start in chat_starts


# --- grouping --------------------------------------------------------------------------------


def test_chat_passages_are_whole_turns_sharing_exactly_one(model: MiniLMEmbedder) -> None:
    text = chat(60)
    starts = [t.start for t in find_turns(text)]
    out = content_passages(text, model)
    assert len(out) > 5
    assert_exact_and_covering(text, out)
    for p in out:  # whole turns: a passage starts and ends on turn boundaries
        assert p.start in starts and (p.end in starts or p.end == len(text))
    budget = passages.CHUNK_TOKENS - 2
    shared = 0
    for prev, nxt in zip(out, out[1:], strict=False):
        # the next passage starts at the LAST turn of the previous one (one shared turn), unless
        # that turn and the one after it do not fit together
        last = max(s for s in starts if prev.start <= s < prev.end)
        after = min([s for s in starts if s > prev.end] + [len(text)])
        if model.count_tokens(text[last:after]) <= budget:
            assert nxt.start == last and prev.start < last
            shared += 1
        else:
            assert nxt.start == prev.end
    assert shared >= len(out) // 2


def test_no_passage_above_the_token_limit(model: MiniLMEmbedder) -> None:
    text = chat(200, seed=9) + " ".join(sentence(random.Random(2), 80) for _ in range(3))
    out = content_passages(text, model)
    assert_exact_and_covering(text, out)
    assert_within(model, out, passages.CHUNK_TOKENS)
    assert passages.CHUNK_TOKENS <= 128  # what MiniLM was trained to read


def test_budget_never_above_the_embedders_truncation(model: MiniLMEmbedder) -> None:
    class Short:  # an embedder reading only 40 word pieces
        raw_tokenizer = model.raw_tokenizer
        max_tokens = 40
        name, dim = "short", 4

    out = content_passages(chat(30), Short())
    assert_within(model, out, 40)


def test_long_single_turn_is_cut_on_sentence_ends(model: MiniLMEmbedder) -> None:
    # GIVEN a chat where one turn is far over the budget
    rng = random.Random(5)
    long_turn = " ".join(sentence(rng, 10) for _ in range(30))
    text = f"Ann: hi\nBen: hello there\nAnn: {long_turn}\nBen: wow\nAnn: yes\n"
    out = content_passages(text, model)
    assert_exact_and_covering(text, out)
    assert_within(model, out, passages.CHUNK_TOKENS)
    at = text.index("Ann: " + long_turn[:10])
    inner = [p for p in out if at < p.start < at + len(long_turn)]
    assert len(inner) >= 3  # cut inside the long turn ...
    for p in inner:  # ... only after a sentence end
        assert text[p.start - 2] in ".!?" and text[p.start - 1] == " "


def test_sentence_over_the_budget_falls_back_to_token_windows(model: MiniLMEmbedder) -> None:
    words = " ".join(random.Random(6).choice(WORDS) for _ in range(400))  # no sentence end
    out = content_passages(words, model)
    assert len(out) >= 4
    assert_exact_and_covering(words, out)
    assert_within(model, out, passages.CHUNK_TOKENS)


def test_prose_is_cut_on_sentences_sharing_one(model: MiniLMEmbedder) -> None:
    rng = random.Random(7)
    sents = [sentence(rng, rng.randint(5, 20)) for _ in range(40)]
    text = " ".join(sents)
    out = content_passages(text, model)
    assert_exact_and_covering(text, out)
    ends = {m + 2 for m in range(len(text) - 2) if text[m] in ".!?" and text[m + 1] == " "}
    for prev, nxt in zip(out, out[1:], strict=False):
        assert nxt.start in ends and prev.end in ends  # whole sentences
        assert nxt.start < prev.end  # sharing the last sentence of the previous one
        assert text[prev.end - 1] == " " and "." not in text[nxt.start : prev.end - 2][:-1]


def test_short_text_is_one_passage_and_header_unchanged(model: MiniLMEmbedder) -> None:
    row = {"content": "Ann: hi\nBen: hey\n", "title": "Greeting"}
    out = plan(row, model)
    assert out[0].start == out[0].end == HEADER and "Greeting" in out[0].text
    assert out[1:] == [Passage(0, len(row["content"]), row["content"])]
    assert plan({"content": "  \n "}, model) == []


def test_character_budget_without_a_tokenizer() -> None:
    class Remote:  # like Bedrock: no local tokenizer
        name, dim = "remote", 4

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.zeros((len(texts), 4), np.float32)

    text = chat(300, seed=8)
    out = content_passages(text, Remote())
    assert_exact_and_covering(text, out)
    starts = {t.start for t in find_turns(text)}
    assert all(len(p.text) <= passages.CHAR_WINDOW and p.start in starts for p in out)
    assert len(out) > 3


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Ann: ", "Ben: ", "**Ann**: ", "", "Note: ", "- Ben: "]),
            st.text(alphabet="ab cd.!?\n", min_size=0, max_size=300),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(min_value=8, max_value=60),
)
def test_spans_cover_exactly(parts: list[tuple[str, str]], budget: int) -> None:
    text = "\n".join(label + body for label, body in parts)
    for measure in (CharMeasure(text, budget), TokenMeasure(text, _TOKENIZER(), budget)):
        got = spans(text, budget, measure)
        if not text:
            assert got == []
            continue
        assert got[0][0] == 0 and got[-1][1] == len(text)
        for (a, b), (c, d) in zip(got, got[1:], strict=False):
            assert a < c <= b and a < b and c < d
        if isinstance(measure, CharMeasure):
            assert all(b - a <= budget for a, b in got)


def _TOKENIZER() -> Any:  # noqa: N802
    return MiniLMEmbedder.shared().raw_tokenizer


def test_a_256_kib_conversation_plans_in_under_a_second(model: MiniLMEmbedder) -> None:
    text = chat(4_000, seed=10)
    while len(text) < 256 * 1024:
        text += text
    text = text[: 256 * 1024]
    plan({"content": "warm up"}, model)
    t0 = time.perf_counter()
    out = content_passages(text, model)
    took = time.perf_counter() - t0
    print(f"256 KiB conversation: {len(out)} passages planned in {took * 1000:.0f} ms")
    assert took < 1.0
    assert_exact_and_covering(text, out)
