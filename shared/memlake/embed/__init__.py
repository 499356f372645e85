"""Text embeddings: the Embedder contract, a local numpy MiniLM, Bedrock Titan, chunking.

Backends are imported lazily (`make_embedder`, or `memlake.embed.minilm` / `.bedrock`) so that
importing this package does not load model weights, tokenizers or boto3.
"""

from memlake.embed.base import Embedder, EmbeddingError
from memlake.embed.factory import EMBEDDER_KINDS, make_embedder

__all__ = ["EMBEDDER_KINDS", "Embedder", "EmbeddingError", "make_embedder"]
