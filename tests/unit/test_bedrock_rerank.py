"""BedrockReranker against a stubbed bedrock-agent-runtime client (no network, no credentials)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from memlake.search.query.rerank import rerank_hits
from memlake.search.query.rerank_bedrock import MAX_CHARS, BedrockReranker
from memlake.search.query.reranker import RerankError
from tests.support.stubbed import offline_client, stubbed
from tests.unit.test_rerank import hit

ARN = "arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0"


@pytest.fixture
def client() -> Any:
    return offline_client("bedrock-agent-runtime", "us-west-2")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with stubbed(client) as stub:
        yield stub


def request(query: str, texts: list[str], arn: str = ARN) -> dict[str, Any]:
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {
                "type": "INLINE",
                "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": t}},
            }
            for t in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "modelConfiguration": {"modelArn": arn},
                "numberOfResults": len(texts),
            },
        },
    }


def answer(scores: list[float]) -> dict[str, Any]:
    """Bedrock's answer: best first, each with its document's index."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return {"results": [{"index": i, "relevanceScore": scores[i]} for i in order]}


def test_request_shape_and_scores_back_in_document_order(client: Any, stubber: Stubber) -> None:
    texts = ["the heron nests", "invoices are due", "heron by the lake"]
    stubber.add_response("rerank", answer([0.61, 0.02, 0.93]), request("heron", texts))
    reranker = BedrockReranker("cohere.rerank-v3-5:0", client=client)
    assert reranker.model_arn == ARN
    assert reranker.score("heron", texts) == pytest.approx([0.61, 0.02, 0.93])


def test_long_lists_go_in_batches_and_texts_are_cut_to_the_api_limits(
    client: Any, stubber: Stubber
) -> None:
    texts = ["a", "", "c" * (MAX_CHARS + 5), "d", "e"]
    sent = ["a", " ", "c" * MAX_CHARS, "d", "e"]
    stubber.add_response("rerank", answer([0.1, 0.2]), request("q", sent[:2]))
    stubber.add_response("rerank", answer([0.3, 0.4]), request("q", sent[2:4]))
    stubber.add_response("rerank", answer([0.5]), request("q", sent[4:]))
    reranker = BedrockReranker("cohere.rerank-v3-5:0", client=client, batch_size=2)
    assert reranker.score("q", texts) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


def test_a_model_arn_is_used_as_given(client: Any, stubber: Stubber) -> None:
    arn = "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    stubber.add_response("rerank", answer([0.7]), request("q", ["t"], arn))
    assert BedrockReranker(arn, client=client).score("q", ["t"]) == pytest.approx([0.7])


def test_scores_outside_0_1_are_clamped(client: Any, stubber: Stubber) -> None:
    stubber.add_response("rerank", answer([1.3, -0.1]), request("q", ["a", "b"]))
    assert BedrockReranker(client=client).score("q", ["a", "b"]) == [1.0, 0.0]


@pytest.mark.parametrize(
    ("code", "retryable", "hint"),
    [
        ("ThrottlingException", True, ""),
        ("AccessDeniedException", False, "bedrock:Rerank"),
        ("ResourceNotFoundException", False, "not offered in this region"),
        ("ValidationException", False, "MEMLAKE_RERANK_MODEL"),
    ],
)
def test_service_errors_become_rerank_errors(
    client: Any, stubber: Stubber, code: str, retryable: bool, hint: str
) -> None:
    stubber.add_client_error("rerank", service_error_code=code, service_message="nope")
    with pytest.raises(RerankError) as info:
        BedrockReranker(client=client).score("q", ["a"])
    assert f"{code}: nope" in info.value.message
    assert info.value.retryable is retryable
    assert hint in info.value.hint


def test_an_answer_missing_a_document_is_an_error(client: Any, stubber: Stubber) -> None:
    stubber.add_response("rerank", {"results": [{"index": 0, "relevanceScore": 0.5}]})
    with pytest.raises(RerankError, match="scored 1 of 2"):
        BedrockReranker(client=client).score("q", ["a", "b"])
    stubber.add_response("rerank", {"results": [{"index": 7, "relevanceScore": 0.5}]})
    with pytest.raises(RerankError, match="unknown document index 7"):
        BedrockReranker(client=client).score("q", ["a"])


def test_a_throttled_rerank_keeps_the_fused_order(client: Any, stubber: Stubber) -> None:
    stubber.add_client_error("rerank", service_error_code="ThrottlingException")
    hits = [hit("a", 0.9), hit("b", 0.8)]
    out = rerank_hits(hits, "q", BedrockReranker(client=client), ["a", "b"], top=2)
    assert [(h.id, h.score, h.breakdown["rerank"]) for h in out] == [
        ("a", 0.9, None),
        ("b", 0.8, None),
    ]


def test_batch_size_is_bounded() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        BedrockReranker(batch_size=1001)
