"""The model endpoints a user brings (docs/decisions/2601): OpenAI-compatible embeddings and
/rerank in each documented shape, against a local fake server (tests/support/fake_models.py),
with the faults real ones have: 429 with Retry-After, 5xx, slow answers, malformed JSON,
wrong widths, refused connections, bad keys."""

from __future__ import annotations

import socket
from functools import partial
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.embed.base import EmbeddingError
from memlake.embed.openai_compat import OpenAIEmbedder
from memlake.errors import ConfigurationError
from memlake.http_json import HttpJsonError, post_json
from memlake.search.query.rerank import make_reranker
from memlake.search.query.rerank_http import HttpReranker
from memlake.search.query.reranker import RerankError
from tests.support.fake_models import Fault, bag_vector, fake_models

TEXTS = ["the heron fishes at dawn", "budget review on friday", "heron nests by the river"]


def no_wait(waits: list[float]) -> Any:
    return partial(post_json, sleep=waits.append)


def test_embeddings_are_batched_reordered_normalised_and_sent_with_the_key() -> None:
    with fake_models(dim=16) as fake:
        emb = OpenAIEmbedder("bag", 16, fake.url + "/v1/", "sk-test", batch_size=2)
        got = emb.embed(TEXTS)
    assert emb.name == "openai:bag:16" and got.shape == (3, 16) and got.dtype == np.float32
    want = np.array([bag_vector(t, 16) for t in TEXTS], np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got, want, atol=1e-6)  # the fake answers rows in reverse index order
    assert [len(body["input"]) for _, _, body in fake.requests] == [2, 1]
    path, headers, body = fake.requests[0]
    assert path == "/v1/embeddings" and body == {"model": "bag", "input": TEXTS[:2]}
    assert headers["authorization"] == "Bearer sk-test"


def test_no_key_sends_no_authorization_header() -> None:
    with fake_models(dim=8) as fake:
        OpenAIEmbedder("bag", 8, fake.url + "/v1").embed(["one text"])
    assert "authorization" not in fake.requests[0][1]


def test_throttling_and_outages_are_retried_with_retry_after_honoured() -> None:
    waits: list[float] = []
    with fake_models(dim=8) as fake:
        fake.fail_next(
            Fault(429, {"error": {"message": "slow down"}}, headers={"retry-after": "3"}),
            Fault(503, b"upstream busy"),
        )
        emb = OpenAIEmbedder("bag", 8, fake.url + "/v1", post=no_wait(waits))
        assert emb.embed(["retried text"]).shape == (1, 8)
    assert len(fake.requests) == 3 and waits[0] == 3.0 and 0 < waits[1] <= 10


def test_an_outage_that_lasts_is_a_retryable_error_naming_the_server_message() -> None:
    waits: list[float] = []
    with fake_models(dim=8) as fake:
        fake.fail_next(*[Fault(500, {"detail": "model is loading"})] * 4)
        emb = OpenAIEmbedder("bag", 8, fake.url + "/v1", attempts=4, post=no_wait(waits))
        with pytest.raises(EmbeddingError, match="500: model is loading") as err:
            emb.embed(["x words"])
    assert err.value.retryable and len(fake.requests) == 4 and len(waits) == 3


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "OPENAI_API_KEY"), (404, "OPENAI_BASE_URL"), (400, "")]
)
def test_client_errors_fail_at_once_with_a_hint(status: int, hint: str) -> None:
    with fake_models(dim=8) as fake:
        fake.fail_next(Fault(status, {"error": {"message": "no such thing"}}))
        with pytest.raises(EmbeddingError, match=f"{status}: no such thing") as err:
            OpenAIEmbedder("bag", 8, fake.url + "/v1", "sk-secret").embed(["x words"])
    assert not err.value.retryable and len(fake.requests) == 1
    assert hint in err.value.hint and "sk-secret" not in str(err.value) + err.value.hint


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"<html>gateway</html>", "not JSON"),
        ({"object": "list"}, "no 'data' list"),
        ({"data": []}, "0 embeddings for 1 texts"),
        ({"data": [{"index": 0, "embedding": ["a"] * 8}]}, "not numbers"),
        ({"data": [{"index": 0, "embedding": [float("nan")] * 8}]}, "not JSON|not numbers"),
        ({"data": [{"index": 0, "embedding": [0.5] * 12}]}, "12-dim vectors"),
    ],
)
def test_malformed_answers_are_clear_errors(answer: Any, message: str) -> None:
    with fake_models(dim=8) as fake:
        fake.fail_next(Fault(200, answer))
        with pytest.raises(EmbeddingError, match=message) as err:
            OpenAIEmbedder("bag", 8, fake.url + "/v1").embed(["x words"])
    assert not err.value.retryable
    if "dim" in message:
        assert "MEMLAKE_EMBED_DIM=12" in err.value.hint


def test_a_slow_answer_times_out_and_a_closed_port_is_refused() -> None:
    waits: list[float] = []
    with fake_models(dim=8) as fake:
        fake.fail_next(Fault(delay=1.0), Fault(delay=1.0))
        emb = OpenAIEmbedder("bag", 8, fake.url + "/v1", timeout=0.2, attempts=2)
        emb._post = no_wait(waits)
        with pytest.raises(EmbeddingError, match="no answer within 0.2 s") as err:
            emb.embed(["x words"])
        assert err.value.retryable
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HttpJsonError, match="cannot connect") as refused:
        post_json(f"http://127.0.0.1:{port}/v1/embeddings", {}, attempts=1)
    assert refused.value.retryable


def test_empty_texts_are_refused_before_any_request() -> None:
    with fake_models(dim=8) as fake:
        with pytest.raises(EmbeddingError, match="empty"):
            OpenAIEmbedder("bag", 8, fake.url + "/v1").embed(["fine", "  "])
        assert OpenAIEmbedder("bag", 8, fake.url + "/v1").embed([]).shape == (0, 8)
    assert fake.requests == []


@pytest.mark.parametrize("shape", ["cohere", "voyage", "tei"])
def test_rerank_shapes_give_scores_in_document_order(shape: str) -> None:
    docs = ["herons fish at dawn", "budget friday", "the heron at dawn by the river"]
    with fake_models(rerank_shape=shape) as fake:
        reranker = HttpReranker(fake.url + "/rerank", "rk-key", "rerank-lite")
        first = reranker.score("heron at dawn", docs)
        again = reranker.score("budget", docs)
    assert first == pytest.approx([2 / 3, 0.0, 1.0]) and again == pytest.approx([0, 1, 0])
    path, headers, body = fake.requests[0]
    assert path == "/rerank" and headers["authorization"] == "Bearer rk-key"
    assert body == {"query": "heron at dawn", "documents": docs, "model": "rerank-lite"}
    if shape == "tei":  # refused once with 422 naming texts; then TEI's dialect for good
        assert [sorted(b) for _, _, b in fake.requests] == [
            ["documents", "model", "query"],
            ["model", "query", "texts"],
            ["model", "query", "texts"],
        ]
    else:
        assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"results": [{"index": 0, "relevance_score": 0.5}]}, "scored 1 of 2"),
        ({"results": [{"index": 5, "relevance_score": 0.5}]}, "usable index"),
        ({"results": [{"index": 0}, {"index": 1}]}, "without a score"),
        ({"answer": 1}, "no 'results' list"),
        (b"not json", "not JSON"),
    ],
)
def test_malformed_rerank_answers_are_rerank_errors(answer: Any, message: str) -> None:
    with fake_models() as fake:
        fake.fail_next(Fault(200, answer))
        with pytest.raises(RerankError, match=message):
            HttpReranker(fake.url + "/rerank").score("q words", ["a doc", "b doc"])


def test_rerank_throttling_is_retried_once_then_retryable() -> None:
    waits: list[float] = []
    with fake_models() as fake:
        fake.fail_next(Fault(429, {"message": "rate limited"}), Fault(429, {"message": "again"}))
        reranker = HttpReranker(fake.url + "/rerank", post=no_wait(waits))
        with pytest.raises(RerankError, match="429: again") as err:
            reranker.score("q words", ["a doc"])
        assert err.value.retryable and len(waits) == 1
        assert reranker.score("doc", ["a doc"]) == [1.0]


def test_settings_choose_the_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_EMBEDDER", "openai")
    monkeypatch.setenv("MEMLAKE_EMBED_MODEL", "nomic-embed-text")
    monkeypatch.setenv("MEMLAKE_EMBED_DIM", "768")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-printed")
    monkeypatch.setenv("MEMLAKE_RERANKER", "http")
    monkeypatch.setenv("MEMLAKE_RERANK_URL", "http://localhost:7997/rerank")
    monkeypatch.delenv("MEMLAKE_RERANK_MODEL", raising=False)
    cfg = Settings.from_env()
    assert (cfg.embedder, cfg.embed_dim, cfg.openai_base_url, cfg.rerank_model) == (
        "openai",
        768,
        "http://localhost:11434/v1",
        "",
    )
    assert "sk-never-printed" not in repr(cfg)
    reranker = make_reranker(cfg)
    assert isinstance(reranker, HttpReranker) and reranker.name == "http:localhost:7997"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMLAKE_EMBEDDER": "openai"}, "MEMLAKE_EMBED_MODEL"),
        ({"MEMLAKE_EMBEDDER": "openai", "MEMLAKE_EMBED_MODEL": "m"}, "MEMLAKE_EMBED_DIM"),
        (
            {"MEMLAKE_EMBEDDER": "openai", "MEMLAKE_EMBED_MODEL": "m", "MEMLAKE_EMBED_DIM": "8"}
            | {"OPENAI_BASE_URL": "localhost:11434"},
            "OPENAI_BASE_URL must be an http",
        ),
        ({"MEMLAKE_EMBED_DIM": "lots"}, "MEMLAKE_EMBED_DIM must be an integer"),
        ({"MEMLAKE_RERANKER": "http"}, "MEMLAKE_RERANK_URL"),
        ({"MEMLAKE_RERANKER": "http", "MEMLAKE_RERANK_URL": "ftp://x/rerank"}, "http\\(s\\) URL"),
        ({"MEMLAKE_RERANKER": "local"}, "'none', 'bedrock', 'http'"),
    ],
)
def test_incomplete_model_settings_say_what_to_set(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name in (
        "OPENAI_BASE_URL",
        "MEMLAKE_EMBED_MODEL",
        "MEMLAKE_EMBED_DIM",
        "MEMLAKE_RERANK_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env()


def test_an_answer_cut_short_is_retried_then_a_retryable_error() -> None:
    """A server that announces a body and closes half way (a proxy dropping the connection):
    http.client raises IncompleteRead, which is neither OSError nor URLError; it must become
    a retryable HttpJsonError, never escape as a raw exception (a 500 to the agent)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Cut(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "1000")
            self.end_headers()
            self.wfile.write(b'{"data": [')
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Cut)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    waits: list[float] = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
        with pytest.raises(HttpJsonError, match="broke off") as err:
            post_json(url, {"input": ["x"]}, attempts=2, sleep=waits.append)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert err.value.retryable and len(waits) == 1


def test_settings_load_where_the_process_has_no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Lambda function's user has no home directory: Path.home() raises there. Settings (in
    code and from the environment) must still load, with the model cache under the temporary
    directory."""
    import tempfile
    from pathlib import Path

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("MEMLAKE_MODEL_CACHE", raising=False)
    expected = Path(tempfile.gettempdir()) / "memlake-models"
    assert Settings().model_cache == expected
    assert Settings.from_env().model_cache == expected
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/app")
    assert Settings.from_env().model_cache == Path("/var/cache/app/memlake/models")
