"""Amazon Bedrock's Rerank API (bedrock-agent-runtime `rerank`, boto3) as a Reranker.

One request carries one text query and up to MAX_DOCUMENTS inline text documents (the API
takes 1..1000 sources, each text 1..32,000 characters); longer lists go in several requests,
whose scores are comparable (a cross-encoder scores each query/document pair on its own). The
model is named by ARN, built from the client's partition and region and the model id
(arn:aws:bedrock:<region>::foundation-model/<model id>); a full ARN is used as given. The
answer lists {index, relevanceScore} best first; scores come back in the documents' order,
clamped to 0..1 (both models answer in 0..1). Errors raise RerankError: throttling and
unavailability retryable, access denied and a model missing in the region with a hint.
docs/decisions/1210-reranking-stage.md has the limits and prices.
"""

from __future__ import annotations

from typing import Any

from memlake.search.query.reranker import RerankError, checked_scores

AMAZON_RERANK = "amazon.rerank-v1:0"
COHERE_RERANK = "cohere.rerank-v3-5:0"
MODELS = (AMAZON_RERANK, COHERE_RERANK)
MAX_DOCUMENTS = 1000  # sources per request (botocore's RerankSourcesList max)
MAX_CHARS = 32_000  # characters per text (RerankTextDocumentTextString max)
_RETRYABLE = frozenset(
    {
        "ThrottlingException",
        "ServiceQuotaExceededException",
        "InternalServerException",
        "BadGatewayException",
        "DependencyFailedException",
        "ServiceUnavailableException",
    }
)
_HINTS = {
    "AccessDeniedException": (
        "grant the function bedrock:Rerank and bedrock:InvokeModel on the model"
        " (template.yaml's Reranker parameter does) and enable access to the model in the"
        " Bedrock console"
    ),
    "ResourceNotFoundException": (
        "the model is not offered in this region: amazon.rerank-v1:0 is not in us-east-1,"
        " cohere.rerank-v3-5:0 is in more regions (set MEMLAKE_RERANK_MODEL)"
    ),
    "ValidationException": "check MEMLAKE_RERANK_MODEL (a Bedrock rerank model id or ARN)",
}


class BedrockReranker:
    """Reranker backed by Bedrock Rerank; `client` is a boto3 "bedrock-agent-runtime" client
    (created on first use with the default credential chain and `region_name` when None)."""

    def __init__(
        self,
        model_id: str = COHERE_RERANK,
        client: Any | None = None,
        *,
        region_name: str | None = None,
        batch_size: int = MAX_DOCUMENTS,
    ) -> None:
        if not 1 <= batch_size <= MAX_DOCUMENTS:
            raise ValueError(f"batch_size must be in 1..{MAX_DOCUMENTS}, not {batch_size}")
        self.model_id = model_id
        self.region_name = region_name
        self.batch_size = batch_size
        self.name = f"bedrock:{model_id}"
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-agent-runtime", region_name=self.region_name)
        return self._client

    @property
    def model_arn(self) -> str:
        if self.model_id.startswith("arn:"):
            return self.model_id
        meta = self.client.meta
        partition = getattr(meta, "partition", "aws") or "aws"
        return f"arn:{partition}:bedrock:{meta.region_name}::foundation-model/{self.model_id}"

    def score(self, query: str, passages: list[str]) -> list[float]:
        scores: list[float] = []
        for at in range(0, len(passages), self.batch_size):
            scores.extend(self._call(query, passages[at : at + self.batch_size]))
        return checked_scores(scores, len(passages), self.name)

    def _call(self, query: str, texts: list[str]) -> list[float]:
        from botocore.exceptions import BotoCoreError, ClientError

        request = {
            "queries": [{"type": "TEXT", "textQuery": {"text": _text(query)}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": _text(t)}},
                }
                for t in texts
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "modelConfiguration": {"modelArn": self.model_arn},
                    "numberOfResults": len(texts),
                },
            },
        }
        try:
            response = self.client.rerank(**request)
        except ClientError as e:
            err = e.response.get("Error", {})
            code = str(err.get("Code", "ClientError"))
            raise RerankError(
                f"Bedrock Rerank {self.model_id} failed: {code}: {err.get('Message', '')}",
                hint=_HINTS.get(code, ""),
                retryable=code in _RETRYABLE,
            ) from e
        except BotoCoreError as e:
            raise RerankError(f"Bedrock Rerank {self.model_id} failed: {e}") from e
        out: list[float | None] = [None] * len(texts)
        for result in response.get("results", []):
            index = result.get("index")
            if not isinstance(index, int) or not 0 <= index < len(texts):
                raise RerankError(f"Bedrock Rerank returned an unknown document index {index!r}")
            out[index] = result.get("relevanceScore")
        if any(s is None for s in out):
            raise RerankError(
                f"Bedrock Rerank scored {sum(s is not None for s in out)} of {len(texts)} texts"
            )
        return [float(s) for s in out if s is not None]


def _text(text: str) -> str:
    """A text the API accepts: 1..MAX_CHARS characters (blank becomes one space)."""
    return text[:MAX_CHARS] if text else " "
