"""The embedder contract shared by the local MiniLM model and Amazon Bedrock Titan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memlake.errors import MemlakeError

FloatMatrix = npt.NDArray[np.float32]


class EmbeddingError(MemlakeError):
    """An embedding backend failed (model files missing, service error, malformed response).

    A subclass of MemlakeError (and so of Exception) so the MCP layer can report it like any
    other domain error. `retryable` is set per instance for throttling/unavailable services.
    """

    code = "embedding_error"

    def __init__(self, message: str, *, hint: str = "", retryable: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    `name` identifies the model and its output space (vectors from embedders with different names
    must never be compared); `dim` is the vector width; `max_tokens` is how much of one text the
    model reads (longer texts are truncated, or chunked where the backend says so).
    An embedder behind a network endpoint says `remote = True` (a class attribute, optional):
    writes and searches then wait for it within a short deadline (deferred_embedding).
    """

    name: str
    dim: int
    max_tokens: int

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Return a float32 array of shape (len(texts), dim) whose rows have L2 norm 1."""
        ...


def l2_normalise(vectors: FloatMatrix, eps: float = 1e-12) -> FloatMatrix:
    """Row-wise L2 normalisation in place (rows of zeros stay zero); returns `vectors`."""
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
    np.maximum(norms, eps, out=norms)
    vectors /= norms[:, None]
    return vectors
