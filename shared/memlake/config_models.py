"""The model settings: which embedder and reranker the server runs and how to reach them
(README "Models"; docs/decisions/2601). memlake.config reads every variable (through the
readers it hands `models_from_env`); this module says what the model ones may hold, so that
config.py stays one list.

Embedders: "minilm" (local numpy model, the default; its files found as memlake.embed.model_files
says: MEMLAKE_MODEL_DIR, the installed wheel, MEMLAKE_MODEL_CACHE, a download from HF_ENDPOINT
when MEMLAKE_MODEL_DOWNLOAD=1), "bedrock" (Titan Text Embeddings v2),
"openai" (any OpenAI-compatible /embeddings: MEMLAKE_EMBED_MODEL and MEMLAKE_EMBED_DIM, at
OPENAI_BASE_URL with OPENAI_API_KEY, the variables OpenAI's own clients read; on AWS the key
from a Secrets Manager secret, MEMLAKE_EMBED_API_KEY_SECRET, or an SSM SecureString,
MEMLAKE_EMBED_API_KEY_PARAMETER: memlake.embed.api_keys).
Rerankers: "none" (the default), "bedrock" (Bedrock Rerank, MEMLAKE_RERANK_MODEL a Bedrock
model id), "http" (a /rerank endpoint at MEMLAKE_RERANK_URL with MEMLAKE_RERANK_API_KEY).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from memlake.config_values import is_bedrock_model
from memlake.errors import ConfigurationError

EMBEDDERS = ("minilm", "bedrock", "openai")
RERANKERS = ("none", "bedrock", "http")
OPENAI_BASE_URL = "https://api.openai.com/v1"
BEDROCK_RERANK_MODEL = "cohere.rerank-v3-5:0"


class ModelSettings(Protocol):
    """The fields of Settings that check_models reads (read-only: Settings is frozen)."""

    @property
    def embedder(self) -> str: ...
    @property
    def embed_model(self) -> str: ...
    @property
    def embed_dimensions(self) -> int: ...
    @property
    def openai_base_url(self) -> str: ...
    @property
    def openai_api_key(self) -> str: ...
    @property
    def openai_api_key_secret(self) -> str: ...
    @property
    def openai_api_key_parameter(self) -> str: ...
    @property
    def hf_endpoint(self) -> str: ...
    @property
    def reranker(self) -> str: ...
    @property
    def rerank_model(self) -> str: ...
    @property
    def rerank_url(self) -> str: ...


def _choice(
    text_of: Callable[[str], str], name: str, choices: tuple[str, ...], default: str
) -> str:
    kind = text_of(name).lower() or default
    if kind not in choices:
        listed = ", ".join(f"'{c}'" for c in choices)
        raise ConfigurationError(f"{name} must be one of {listed}, got {kind[:40]!r}")
    return kind


def default_model_cache(text_of: Callable[[str], str] = lambda _name: "") -> Path:
    """~/.cache/memlake/models, under XDG_CACHE_HOME when that is set; under the temporary
    directory where the process has no home (a Lambda function's user has none: Path.home()
    raises there, and config must still load)."""
    base = text_of("XDG_CACHE_HOME")
    if base:
        return Path(base) / "memlake" / "models"
    try:
        home = Path.home()
    except (RuntimeError, KeyError):
        return Path(tempfile.gettempdir()) / "memlake-models"
    return home / ".cache" / "memlake" / "models"


def models_from_env(text_of: Callable[[str], str], int_of: Callable[..., int]) -> dict[str, Any]:
    """The model fields of Settings; `text_of(name)` is a variable's stripped text ("" when
    unset), `int_of` config's integer reader."""
    reranker = _choice(text_of, "MEMLAKE_RERANKER", RERANKERS, "none")
    default_model = "" if reranker == "http" else BEDROCK_RERANK_MODEL
    return {
        "embedder": _choice(text_of, "MEMLAKE_EMBEDDER", EMBEDDERS, "minilm"),
        "model_dir": text_of("MEMLAKE_MODEL_DIR"),
        "model_cache": Path(text_of("MEMLAKE_MODEL_CACHE") or default_model_cache(text_of)),
        "model_download": _flag(text_of, "MEMLAKE_MODEL_DOWNLOAD"),
        "hf_endpoint": text_of("HF_ENDPOINT") or "https://huggingface.co",
        "bedrock_model": text_of("MEMLAKE_BEDROCK_MODEL") or "amazon.titan-embed-text-v2:0",
        "bedrock_dimensions": int_of("MEMLAKE_BEDROCK_DIMENSIONS", 1024, low=1),
        "embed_model": text_of("MEMLAKE_EMBED_MODEL"),
        "embed_dimensions": int_of("MEMLAKE_EMBED_DIM", 0, low=0, high=65_536),
        "openai_base_url": text_of("OPENAI_BASE_URL") or OPENAI_BASE_URL,
        "openai_api_key": text_of("OPENAI_API_KEY"),
        "openai_api_key_secret": text_of("MEMLAKE_EMBED_API_KEY_SECRET"),
        "openai_api_key_parameter": text_of("MEMLAKE_EMBED_API_KEY_PARAMETER"),
        "reranker": reranker,
        "rerank_model": text_of("MEMLAKE_RERANK_MODEL") or default_model,
        "rerank_url": text_of("MEMLAKE_RERANK_URL"),
        "rerank_api_key": text_of("MEMLAKE_RERANK_API_KEY"),
    }


def _flag(text_of: Callable[[str], str], name: str) -> bool:
    raw = text_of(name).lower()
    if raw not in ("", "0", "1", "true", "false", "yes", "no", "on", "off"):
        raise ConfigurationError(f"{name} must be 1 or 0, got {raw[:40]!r}")
    return raw in ("1", "true", "yes", "on")


def _endpoint(name: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise ConfigurationError(f"{name} must be an http(s) URL, got {url[:80]!r}")


def check_models(s: ModelSettings) -> None:
    """Raise ConfigurationError naming the variable to set when the model settings cannot work."""
    if s.embedder not in EMBEDDERS:
        raise ConfigurationError(f"embedder must be one of {EMBEDDERS}, got {s.embedder!r}")
    if s.embedder == "openai":
        if not s.embed_model or s.embed_dimensions < 1:
            raise ConfigurationError(
                "MEMLAKE_EMBEDDER=openai needs MEMLAKE_EMBED_MODEL (the model name the endpoint"
                " serves) and MEMLAKE_EMBED_DIM (its vectors' width, e.g. 768 for"
                " nomic-embed-text, 1536 for text-embedding-3-small)"
            )
        _endpoint("OPENAI_BASE_URL", s.openai_base_url)
        keys = [s.openai_api_key, s.openai_api_key_secret, s.openai_api_key_parameter]
        if sum(bool(k) for k in keys) > 1:
            raise ConfigurationError(
                "set one of OPENAI_API_KEY, MEMLAKE_EMBED_API_KEY_SECRET (a Secrets Manager"
                " secret) and MEMLAKE_EMBED_API_KEY_PARAMETER (an SSM SecureString), not several"
            )
    _endpoint("HF_ENDPOINT", s.hf_endpoint)
    if s.reranker not in RERANKERS:
        raise ConfigurationError(f"reranker must be one of {RERANKERS}, got {s.reranker!r}")
    if s.reranker == "bedrock" and s.rerank_model and not is_bedrock_model(s.rerank_model):
        raise ConfigurationError(
            "MEMLAKE_RERANK_MODEL must be a Bedrock rerank model id (cohere.rerank-v3-5:0,"
            f" amazon.rerank-v1:0) or a model ARN, got {s.rerank_model[:80]!r}"
        )
    if s.reranker == "http":
        if not s.rerank_url:
            raise ConfigurationError(
                "MEMLAKE_RERANKER=http needs MEMLAKE_RERANK_URL, the full rerank URL (e.g."
                " https://api.cohere.com/v2/rerank, http://localhost:8080/rerank)"
            )
        _endpoint("MEMLAKE_RERANK_URL", s.rerank_url)
