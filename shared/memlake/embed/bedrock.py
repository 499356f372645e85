"""Amazon Titan Text Embeddings V2 through the Bedrock runtime API (boto3).

One InvokeModel call per text: the request body is {"inputText", "dimensions", "normalize"}
and the response body carries "embedding". Titan V2 reads at most 8,192 tokens (about 50,000
characters of English); a text longer than `max_chars` characters is split into pieces of at
most `max_chars` (cut at whitespace where possible), each piece is embedded, and the text's
vector is the length-weighted mean of the pieces, L2-normalised again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlake.embed.base import EmbeddingError, FloatMatrix, l2_normalise

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (1024, 512, 256)
DEFAULT_MAX_CHARS = 20_000
# Error codes worth retrying later (botocore already retried them a few times).
_RETRYABLE = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)


def split_by_chars(text: str, max_chars: int) -> list[str]:
    """Consecutive pieces of at most `max_chars` characters that concatenate back to `text`.

    Each cut goes after the last whitespace in the second half of the piece when there is one.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    pieces: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        end = start + max_chars
        cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
        if cut >= start + max_chars // 2:
            end = cut + 1
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


class BedrockTitanEmbedder:
    """Embedder backed by Bedrock Titan Text Embeddings V2.

    `client` is a boto3 "bedrock-runtime" client; when None one is created on first use with
    boto3's default credential chain and `region_name`. Failures (botocore ClientError or
    BotoCoreError, a malformed response) raise EmbeddingError, chained with `from`; throttling
    and unavailability are marked retryable. With `normalize=False` the service's raw vectors
    are returned, which does not meet the Embedder contract (unit length): only for callers who
    need magnitudes.
    """

    max_tokens = 8192
    remote = True  # writes and searches wait for it within a deadline (deferred_embedding)

    def __init__(
        self,
        model_id: str = TITAN_V2,
        dimensions: int = 1024,
        normalize: bool = True,
        client: Any | None = None,
        *,
        region_name: str | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        if dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"dimensions must be one of {TITAN_V2_DIMENSIONS}, not {dimensions}")
        if max_chars < 1:
            raise ValueError("max_chars must be >= 1")
        self.model_id = model_id
        self.dim = dimensions
        self.normalize = normalize
        self.max_chars = max_chars
        self.region_name = region_name
        self.name = f"bedrock:{model_id}:{dimensions}"
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("bedrock-runtime", region_name=self.region_name)
        return self._client

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._embed_long(text)
        return l2_normalise(out) if self.normalize else out

    def _embed_long(self, text: str) -> np.ndarray:
        if not text.strip():
            raise EmbeddingError(
                "Titan cannot embed an empty or whitespace-only text",
                hint="drop empty texts before embedding",
            )
        pieces = [p for p in split_by_chars(text, self.max_chars) if p.strip()]
        if len(pieces) == 1:
            return self._invoke(pieces[0])
        weights = np.array([len(p) for p in pieces], dtype=np.float32)
        vectors = np.stack([self._invoke(p) for p in pieces])
        return np.asarray(weights @ vectors / weights.sum(), dtype=np.float32)

    def _invoke(self, text: str) -> np.ndarray:
        from botocore.exceptions import BotoCoreError, ClientError

        body = json.dumps({"inputText": text, "dimensions": self.dim, "normalize": self.normalize})
        try:
            response = self.client.invoke_model(
                modelId=self.model_id,
                body=body,
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
        except ClientError as e:
            err = e.response.get("Error", {})
            code = str(err.get("Code", "ClientError"))
            raise EmbeddingError(
                f"Bedrock InvokeModel {self.model_id} failed: {code}: {err.get('Message', '')}",
                retryable=code in _RETRYABLE,
            ) from e
        except BotoCoreError as e:
            raise EmbeddingError(f"Bedrock InvokeModel {self.model_id} failed: {e}") from e
        except ValueError as e:  # json.JSONDecodeError
            raise EmbeddingError(f"Bedrock returned a body that is not JSON: {e}") from e
        vector = payload.get("embedding") if isinstance(payload, dict) else None
        if not isinstance(vector, list) or len(vector) != self.dim:
            got = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise EmbeddingError(f"Bedrock response has no {self.dim}-dim 'embedding' ({got})")
        try:
            return np.asarray(vector, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise EmbeddingError("Bedrock 'embedding' is not a list of numbers") from e
