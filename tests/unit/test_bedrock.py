"""BedrockTitanEmbedder against a stubbed bedrock-runtime client (no network, no credentials)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import boto3
import numpy as np
import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from memlake.embed import Embedder, EmbeddingError, make_embedder
from memlake.embed.bedrock import TITAN_V2, BedrockTitanEmbedder, split_by_chars
from tests.support.stubbed import offline_client, stubbed


@pytest.fixture
def client() -> object:
    return offline_client("bedrock-runtime", "us-east-1")


@pytest.fixture
def stubber(client: object) -> Iterator[Stubber]:
    with stubbed(client) as stub:
        yield stub


def body(payload: object) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def expect(
    stub: Stubber, text: str, vector: list[float], *, dims: int = 256, normalize: bool = True
) -> None:
    request = json.dumps({"inputText": text, "dimensions": dims, "normalize": normalize})
    stub.add_response(
        "invoke_model",
        {"body": body({"embedding": vector, "inputTextTokenCount": 3}), "contentType": "json"},
        {
            "modelId": TITAN_V2,
            "body": request,
            "contentType": "application/json",
            "accept": "application/json",
        },
    )


def unit(seed: int, dims: int = 256) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(dims)
    return [float(x) for x in v / np.linalg.norm(v)]


def test_embeds_each_text(client: object, stubber: Stubber) -> None:
    expect(stubber, "first", unit(1))
    expect(stubber, "second", unit(2))
    emb = BedrockTitanEmbedder(dimensions=256, client=client)
    out = emb.embed(["first", "second"])
    assert out.shape == (2, 256) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], unit(1), atol=1e-6)
    np.testing.assert_allclose(out[1], unit(2), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_contract_and_factory(client: object) -> None:
    emb = make_embedder("bedrock", dimensions=512, client=client)
    assert isinstance(emb, BedrockTitanEmbedder) and isinstance(emb, Embedder)
    assert emb.dim == 512 and emb.max_tokens == 8192
    assert emb.name == "bedrock:amazon.titan-embed-text-v2:0:512"
    assert emb.embed([]).shape == (0, 512)


def test_client_error_is_wrapped(client: object, stubber: Stubber) -> None:
    stubber.add_client_error(
        "invoke_model",
        service_error_code="ValidationException",
        service_message="Malformed input request",
        http_status_code=400,
    )
    emb = BedrockTitanEmbedder(dimensions=256, client=client)
    with pytest.raises(EmbeddingError) as info:
        emb.embed(["boom"])
    assert "ValidationException" in str(info.value)
    assert info.value.retryable is False
    assert isinstance(info.value.__cause__, ClientError)  # raise ... from e


def test_throttling_is_retryable(client: object, stubber: Stubber) -> None:
    stubber.add_client_error(
        "invoke_model", service_error_code="ThrottlingException", http_status_code=429
    )
    with pytest.raises(EmbeddingError) as info:
        BedrockTitanEmbedder(dimensions=256, client=client).embed(["x"])
    assert info.value.retryable is True


@pytest.mark.parametrize(
    "payload",
    [{"embedding": [0.1, 0.2]}, {"nothing": 1}, {"embedding": ["a"] * 256}, [1, 2, 3]],
)
def test_malformed_response(client: object, stubber: Stubber, payload: object) -> None:
    stubber.add_response("invoke_model", {"body": body(payload), "contentType": "json"})
    with pytest.raises(EmbeddingError):
        BedrockTitanEmbedder(dimensions=256, client=client).embed(["x"])


def test_body_not_json(client: object, stubber: Stubber) -> None:
    stubber.add_response(
        "invoke_model", {"body": StreamingBody(io.BytesIO(b"<html>"), 6), "contentType": "x"}
    )
    with pytest.raises(EmbeddingError):
        BedrockTitanEmbedder(dimensions=256, client=client).embed(["x"])


def test_empty_text_is_refused_without_a_call(client: object, stubber: Stubber) -> None:
    with pytest.raises(EmbeddingError):
        BedrockTitanEmbedder(dimensions=256, client=client).embed(["  "])


def test_long_text_is_split_and_averaged(client: object, stubber: Stubber) -> None:
    text = "word " * 10  # 50 chars
    first, second = text[:25], text[25:]
    assert split_by_chars(text, 25) == [first, second]
    expect(stubber, first, unit(3))
    expect(stubber, second, unit(4))
    out = BedrockTitanEmbedder(dimensions=256, client=client, max_chars=25).embed([text])
    mean = (np.array(unit(3)) + np.array(unit(4))) / 2
    np.testing.assert_allclose(out[0], mean / np.linalg.norm(mean), atol=1e-6)


def test_normalize_false_returns_raw_vectors(client: object, stubber: Stubber) -> None:
    raw = [2.0] * 256
    expect(stubber, "x", raw, normalize=False)
    out = BedrockTitanEmbedder(dimensions=256, normalize=False, client=client).embed(["x"])
    np.testing.assert_allclose(out[0], raw)


def test_split_by_chars() -> None:
    text = "aaaa bbbb cccc dddd"
    parts = split_by_chars(text, 8)
    assert "".join(parts) == text
    assert all(len(p) <= 8 for p in parts)
    assert parts[0] == "aaaa "  # cut after whitespace in the second half
    assert split_by_chars("x" * 20, 8) == ["x" * 8, "x" * 8, "x" * 4]  # no whitespace: hard cut
    assert split_by_chars("", 8) == [""]
    with pytest.raises(ValueError):
        split_by_chars("x", 0)


def test_bad_dimensions() -> None:
    with pytest.raises(ValueError):
        BedrockTitanEmbedder(dimensions=384)


def test_client_is_created_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str | None]] = []

    def fake_client(service: str, region_name: str | None = None) -> str:
        calls.append((service, region_name))
        return "client"

    monkeypatch.setattr(boto3, "client", fake_client)
    emb = BedrockTitanEmbedder(region_name="eu-west-1")
    assert calls == []
    assert emb.client == "client" and emb.client == "client"
    assert calls == [("bedrock-runtime", "eu-west-1")]
