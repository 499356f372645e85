"""chunk_for_embedding: token-exact windows, overlap, boundaries, full coverage."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from memlake.embed.chunking import Chunk, chunk_for_embedding
from memlake.embed.minilm import MiniLMEmbedder


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder.shared()


def pieces(model: MiniLMEmbedder, text: str) -> int:
    return model.count_tokens(text)


def assert_covers(text: str, chunks: list[Chunk]) -> None:
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)
    for c in chunks:
        assert c.text == text[c.start_char : c.end_char]
        assert c.start_char < c.end_char
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert prev.start_char < nxt.start_char <= prev.end_char  # no gap, always progress


def test_empty_and_blank_text_give_no_chunk(model: MiniLMEmbedder) -> None:
    assert chunk_for_embedding("", model) == []
    assert chunk_for_embedding("  \n\t ", model) == []


def test_short_text_is_one_chunk(model: MiniLMEmbedder) -> None:
    text = "  A short episode about S3 keys.\n"
    assert chunk_for_embedding(text, model) == [Chunk(0, len(text), text)]


def test_exactly_window_tokens_is_one_chunk(model: MiniLMEmbedder) -> None:
    text = " ".join(["lake"] * 18)  # 18 word pieces
    assert pieces(model, text) == 18
    assert len(chunk_for_embedding(text, model, max_tokens=20, overlap=4)) == 1
    assert len(chunk_for_embedding(text + " lake", model, max_tokens=20, overlap=4)) == 2


def test_long_text_windows_respect_the_limit(model: MiniLMEmbedder) -> None:
    text = " ".join(f"Sentence {i} says the manifest moved to version {i * 7}." for i in range(150))
    assert pieces(model, text) > 1000
    chunks = chunk_for_embedding(text, model, max_tokens=200, overlap=40)
    assert_covers(text, chunks)
    assert len(chunks) >= 6
    for c in chunks:
        assert pieces(model, c.text) <= 198
    for c in chunks[:-1]:
        assert c.text.rstrip().endswith(".")  # cut at a sentence end, which is always near


def test_overlap_is_about_the_requested_size(model: MiniLMEmbedder) -> None:
    text = " ".join(f"word{i}" for i in range(600))  # no sentence or line breaks
    chunks = chunk_for_embedding(text, model, max_tokens=100, overlap=30)
    assert_covers(text, chunks)
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        shared = text[nxt.start_char : prev.end_char]
        assert 15 <= pieces(model, shared) <= 30


def test_zero_overlap_chunks_abut(model: MiniLMEmbedder) -> None:
    text = "alpha beta gamma delta. " * 100
    chunks = chunk_for_embedding(text, model, max_tokens=50, overlap=0)
    assert_covers(text, chunks)
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start_char == prev.end_char
    assert "".join(c.text for c in chunks) == text


def test_prefers_paragraph_breaks(model: MiniLMEmbedder) -> None:
    para = "This paragraph talks about retries, backoff and jitter."
    assert pieces(model, para) == 13  # a break is always within the lookback (58 // 4 = 14)
    text = "\n\n".join([para] * 30)
    chunks = chunk_for_embedding(text, model, max_tokens=60, overlap=10)
    assert_covers(text, chunks)
    for c in chunks[:-1]:
        assert c.text.endswith("\n\n")


def test_never_cuts_inside_a_word_when_a_space_is_near(model: MiniLMEmbedder) -> None:
    text = " ".join(["unbelievably", "counterintuitive", "hyperparameterisation"] * 60)
    chunks = chunk_for_embedding(text, model, max_tokens=40, overlap=8)
    assert_covers(text, chunks)
    words = set(text.split())
    for c in chunks:
        assert set(c.text.split()) <= words


def test_unicode_offsets_are_characters(model: MiniLMEmbedder) -> None:
    text = "Café naïve résumé 日本語のテキスト 🚀 Übergröße. " * 40
    chunks = chunk_for_embedding(text, model, max_tokens=32, overlap=6)
    assert_covers(text, chunks)
    for c in chunks:
        assert pieces(model, c.text) <= 30


def test_accepts_a_tokenizer_with_truncation(model: MiniLMEmbedder) -> None:
    tok = Tokenizer.from_str(model.raw_tokenizer.to_str())
    tok.enable_truncation(max_length=16)
    tok.enable_padding(length=16)
    text = "one two three four five six seven eight nine ten " * 30
    via_tok = chunk_for_embedding(text, tok, max_tokens=64, overlap=8)
    assert via_tok == chunk_for_embedding(text, model, max_tokens=64, overlap=8)
    assert via_tok[-1].end_char == len(text)  # the truncation at 16 was ignored
    assert tok.truncation is not None  # the caller's tokenizer was not changed


def test_bad_arguments(model: MiniLMEmbedder) -> None:
    with pytest.raises(ValueError):
        chunk_for_embedding("x", model, max_tokens=2)
    with pytest.raises(ValueError):
        chunk_for_embedding("x", model, max_tokens=100, overlap=60)
    with pytest.raises(ValueError):
        chunk_for_embedding("x", model, max_tokens=300)  # model reads 256
    with pytest.raises(ValueError):
        chunk_for_embedding("x", model, max_tokens=100, lookback=98)
    with pytest.raises(TypeError):
        chunk_for_embedding("x", object())  # type: ignore[arg-type]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.lists(
        st.sampled_from(list("ab cd.\n\t,é日🚀\x07\u0301") + ["lake ", "compaction. ", "\n\n"]),
        max_size=300,
    ).map("".join),
    max_tokens=st.integers(min_value=3, max_value=40),
    overlap_frac=st.floats(min_value=0.0, max_value=0.5),
)
def test_coverage_property(
    model: MiniLMEmbedder, text: str, max_tokens: int, overlap_frac: float
) -> None:
    overlap = int((max_tokens - 2) // 2 * overlap_frac)
    chunks = chunk_for_embedding(text, model, max_tokens=max_tokens, overlap=overlap)
    if model.count_tokens(text) == 0:
        assert chunks == []
        return
    assert_covers(text, chunks)
