"""Embeddings from any server that speaks OpenAI's POST {base}/embeddings: OpenAI itself,
Ollama, LM Studio, llama.cpp's server, vLLM, Hugging Face TEI (docs/decisions/2601).

The request is the shape every one of them reads: {"model", "input": [texts]}, nothing more
(a "dimensions" field is refused by servers whose model cannot shorten its vectors, so the
model's own width is used and MEMLAKE_EMBED_DIM must name it). The answer's "data" rows carry
"embedding" and "index"; rows are put back in input order by index, each vector checked (its
width, finite numbers) and L2-normalised (Ollama and TEI answer unnormalised vectors for some
models). Texts go in batches of `batch_size` (TEI refuses more than 32 by default). Transport
failures are retried (memlake.http_json); what is left raises EmbeddingError, retryable when
a later try may succeed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memlake.embed.api_keys import KeySource
from memlake.embed.base import EmbeddingError, FloatMatrix, l2_normalise
from memlake.http_json import HttpJsonError, post_json

OPENAI_BASE_URL = "https://api.openai.com/v1"
BATCH = 32
_HINTS = {
    401: "set OPENAI_API_KEY to a key the endpoint accepts",
    403: "the key may not use this model: check OPENAI_API_KEY and MEMLAKE_EMBED_MODEL",
    404: "OPENAI_BASE_URL must end where /embeddings is served, usually /v1"
    " (http://localhost:11434/v1 for Ollama); check MEMLAKE_EMBED_MODEL is served there",
}


class OpenAIEmbedder:
    """Embedder of `model` (`dimensions` wide) behind an OpenAI-compatible endpoint."""

    max_tokens = 512  # what most embedding models read; passages are cut by characters
    remote = True  # writes and searches wait for it within a deadline (deferred_embedding)

    def __init__(
        self,
        model: str,
        dimensions: int,
        base_url: str = OPENAI_BASE_URL,
        api_key: KeySource = "",
        *,
        batch_size: int = BATCH,
        timeout: float = 60.0,
        attempts: int = 4,
        post: Callable[..., Any] = post_json,
    ) -> None:
        if not model.strip():
            raise ValueError("model must be named (MEMLAKE_EMBED_MODEL)")
        if dimensions < 1 or batch_size < 1:
            raise ValueError("dimensions and batch_size must be >= 1")
        self.model = model
        self.dim = dimensions
        self.url = base_url.rstrip("/") + "/embeddings"
        self.name = f"openai:{model}:{dimensions}"
        self._key = api_key  # the key, or its reader (memlake.embed.api_keys: AWS's stores)
        self._batch = batch_size
        self._timeout = timeout
        self._attempts = attempts
        self._post = post

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if any(not t.strip() for t in texts):
            raise EmbeddingError(
                "an embedding endpoint cannot embed an empty or whitespace-only text",
                hint="drop empty texts before embedding",
            )
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch):
            batch = list(texts[start : start + self._batch])
            out[start : start + len(batch)] = self._embed_batch(batch)
        return l2_normalise(out)

    def _headers(self) -> dict[str, str]:
        key = self._key() if callable(self._key) else self._key
        return {"authorization": f"Bearer {key}"} if key else {}

    def _embed_batch(self, batch: list[str]) -> FloatMatrix:
        try:
            answer = self._post(
                self.url,
                {"model": self.model, "input": batch},
                headers=self._headers(),
                timeout=self._timeout,
                attempts=self._attempts,
            )
        except HttpJsonError as e:
            raise EmbeddingError(
                f"embedding endpoint failed: {e}",
                hint=_HINTS.get(e.status or 0, ""),
                retryable=e.retryable,
            ) from e
        return self._vectors(answer, len(batch))

    def _vectors(self, answer: Any, expected: int) -> FloatMatrix:
        rows = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else "no 'data' list"
            raise EmbeddingError(f"{self.url} answered {got} embeddings for {expected} texts")
        indices = [r.get("index") if isinstance(r, dict) else None for r in rows]
        if sorted(i for i in indices if isinstance(i, int)) == list(range(expected)):
            rows = [rows[indices.index(i)] for i in range(expected)]
        out = np.empty((expected, self.dim), dtype=np.float32)
        for i, row in enumerate(rows):
            vector = row.get("embedding") if isinstance(row, dict) else None
            if not isinstance(vector, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                for x in vector
            ):
                raise EmbeddingError(f"{self.url} answered an embedding that is not numbers")
            if len(vector) != self.dim:
                raise EmbeddingError(
                    f"{self.model} answered {len(vector)}-dim vectors; this server is set to"
                    f" {self.dim}",
                    hint=f"set MEMLAKE_EMBED_DIM={len(vector)}",
                )
            out[i] = vector
        return out
