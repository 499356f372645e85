"""Build an embedder by name, importing its backend only when it is asked for."""

from __future__ import annotations

from typing import Any

from memlake.embed.base import Embedder

EMBEDDER_KINDS = ("minilm", "bedrock", "openai")


def make_embedder(kind: str, **opts: Any) -> Embedder:
    """An Embedder of `kind` ("minilm", "bedrock" or "openai"), built with `opts`.

    "minilm" without options (or with model_dir only) returns the process-wide MiniLMEmbedder of
    that folder (weights load once); with other options (max_tokens, batch_size, threads) a new
    instance, still sharing the weights.
    "bedrock" passes `opts` to BedrockTitanEmbedder (model_id, dimensions, normalize, client,
    region_name, max_chars).
    "openai" passes `opts` to OpenAIEmbedder (model, dimensions, base_url, api_key, batch_size,
    timeout). Unknown kinds raise ValueError.
    """
    key = kind.strip().lower()
    if key == "minilm":
        from memlake.embed.minilm import MiniLMEmbedder

        if set(opts) <= {"model_dir"}:
            return MiniLMEmbedder.shared(opts.get("model_dir"))
        return MiniLMEmbedder(**opts)
    if key == "bedrock":
        from memlake.embed.bedrock import BedrockTitanEmbedder

        return BedrockTitanEmbedder(**opts)
    if key == "openai":
        from memlake.embed.openai_compat import OpenAIEmbedder

        return OpenAIEmbedder(**opts)
    raise ValueError(f"unknown embedder kind {kind!r}; expected one of {EMBEDDER_KINDS}")
