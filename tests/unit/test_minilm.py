"""memlake's numpy all-MiniLM-L6-v2 against vectors from the real sentence-transformers model.

The fixture comes from tests/fixtures/make_minilm_reference.py (run in a separate venv with
torch and sentence-transformers; neither is a memlake dependency).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.embed import Embedder, EmbeddingError, make_embedder, minilm
from memlake.embed.minilm import MAX_SEQ_LENGTH, MiniLMEmbedder, default_model_dir
from memlake.search.searcher import Searcher

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder.shared()


def test_fixture_is_varied(reference: dict[str, Any]) -> None:
    items = reference["items"]
    assert len(items) == 20
    assert reference["dim"] == 384 and reference["max_seq_length"] == MAX_SEQ_LENGTH
    assert any(it["tokens"] > MAX_SEQ_LENGTH for it in items), "no text exercises truncation"
    assert any(len(it["text"].split()) == 1 for it in items)


def test_matches_sentence_transformers(model: MiniLMEmbedder, reference: dict[str, Any]) -> None:
    texts = [it["text"] for it in reference["items"]]
    expected = np.array([it["embedding"] for it in reference["items"]], dtype=np.float32)
    got = model.embed(texts)
    cosines = np.einsum("ij,ij->i", got, expected) / np.linalg.norm(expected, axis=1)
    for text, cos in zip(texts, cosines, strict=True):
        assert cos > 0.999, f"cosine {cos:.6f} for {text[:60]!r}"


def test_token_counts_match_reference(model: MiniLMEmbedder, reference: dict[str, Any]) -> None:
    for it in reference["items"]:
        assert model.count_tokens(it["text"]) + 2 == it["tokens"], it["text"][:60]


def test_shape_dtype_and_unit_norm(model: MiniLMEmbedder) -> None:
    out = model.embed(["a", "", "a somewhat longer sentence about Parquet files", "x " * 600])
    assert out.shape == (4, 384)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(out).all()


def test_empty_batch(model: MiniLMEmbedder) -> None:
    out = model.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_rejects_bare_string(model: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        model.embed("not a list")  # type: ignore[arg-type]


def test_batch_matches_single_and_keeps_order(model: MiniLMEmbedder) -> None:
    texts = [
        "short",
        "a much longer text " * 20,
        "medium length text about memory",
        "short",
        "Q: what? A: nothing.",
    ]
    batched = MiniLMEmbedder(batch_size=2).embed(texts)  # several batches, sorted by length
    singles = np.stack([model.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    # the same text twice in one batch: equal up to BLAS's sums, which on some CPUs (OpenBLAS's
    # Zen kernels) add a matrix's rows in another order by their place in it (1.5e-7 apart)
    np.testing.assert_allclose(batched[0], batched[3], rtol=0, atol=1e-6)


def test_batches_shared_over_two_threads_give_the_same_vectors(
    model: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"passage {i} about {'memory ' * (i % 7)}and search" for i in range(9)]
    alone = MiniLMEmbedder(threads=1).embed(texts)
    threads: list[str] = []
    forward = minilm._forward

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return forward(*args)

    monkeypatch.setattr(minilm, "_forward", spy)
    shared = MiniLMEmbedder(threads=2).embed(texts)
    np.testing.assert_allclose(shared, alone, atol=1e-6)
    assert len(threads) == 2 and any(n.startswith("memlake-minilm") for n in threads)
    threads.clear()
    MiniLMEmbedder(threads=2).embed(["one query"])  # one text: no helper
    assert threads == [threading.current_thread().name]


def test_the_searcher_embeds_on_the_configured_threads(model: MiniLMEmbedder) -> None:
    assert Searcher(Settings()).embedder is model  # 0 = the shared instance, on up to 2
    assert 1 <= model.threads <= 2
    assert Searcher(Settings(embed_threads=3)).embedder.threads == 3  # type: ignore[attr-defined]


def test_truncates_at_256_tokens(model: MiniLMEmbedder) -> None:
    head = "the quick brown fox jumps over the lazy dog " * 40  # > 256 word pieces
    a, b = model.embed([head, head + " completely different tail about databases"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    enc = model.tokenizer.encode(head)
    assert len(enc.ids) == MAX_SEQ_LENGTH


def test_tokenizer_pads_dynamically(model: MiniLMEmbedder) -> None:
    encs = model.tokenizer.encode_batch(["one", "one two three"])
    assert len(encs[0].ids) == len(encs[1].ids) == 5  # longest in batch, not a fixed 128
    assert encs[0].attention_mask == [1, 1, 1, 0, 0]


def test_the_raw_tokenizer_is_made_at_first_use_once() -> None:
    """A search only embeds: the unpadded, untruncated tokenizer (chunking's) is made when a
    write first asks for it, once however many threads ask at that moment."""
    fresh = MiniLMEmbedder(max_tokens=MAX_SEQ_LENGTH, batch_size=8)  # not the shared instance
    fresh.embed(["a query"])
    assert fresh._raw is None
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(fresh.raw_tokenizer)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(t) for t in got}) == 1 and got[0] is fresh.raw_tokenizer
    raw = got[0]
    assert raw.padding is None and raw.truncation is None
    long = "word " * 600
    assert fresh.count_tokens(long) == 600 and len(fresh.tokenizer.encode(long).ids) == 256


def test_semantics(model: MiniLMEmbedder) -> None:
    q, near, far = model.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten account password",
            "The recipe needs two cups of flour",
        ]
    )
    assert float(q @ near) > float(q @ far) + 0.2


def test_protocol_factory_and_shared_instance(model: MiniLMEmbedder) -> None:
    assert isinstance(model, Embedder)
    assert model.dim == 384 and model.max_tokens == 256 and model.name == "all-MiniLM-L6-v2"
    assert make_embedder("minilm") is MiniLMEmbedder.shared()
    other = make_embedder("MiniLM", batch_size=4)
    assert isinstance(other, MiniLMEmbedder) and other is not model
    assert other._w is model._w  # weights are loaded once per model folder
    assert model.load_seconds >= 0
    with pytest.raises(ValueError):
        make_embedder("word2vec")


def test_model_dir_is_inside_the_wheel() -> None:
    folder = default_model_dir()
    assert (folder / "model.safetensors").is_file()
    assert (folder / "tokenizer.json").is_file()


def test_missing_model_dir_raises_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError):
        MiniLMEmbedder(tmp_path)


def test_bad_options() -> None:
    with pytest.raises(ValueError):
        MiniLMEmbedder(max_tokens=1000)
    with pytest.raises(ValueError):
        MiniLMEmbedder(batch_size=0)
    for threads in (0, 9):
        with pytest.raises(ValueError):
            MiniLMEmbedder(threads=threads)


def test_embed_chunks(model: MiniLMEmbedder) -> None:
    text = "\n\n".join(f"Paragraph {i}. " + "Some words about the lake. " * 12 for i in range(12))
    chunks, vectors = model.embed_chunks(text)
    assert len(chunks) > 1
    assert vectors.shape == (len(chunks), 384)
    np.testing.assert_allclose(vectors, model.embed([c.text for c in chunks]), atol=1e-6)
    empty_chunks, empty_vectors = model.embed_chunks("")
    assert empty_chunks == [] and empty_vectors.shape == (0, 384)
