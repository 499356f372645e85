"""Every environment variable memlake reads, in one place."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from memlake.config_models import (
    OPENAI_BASE_URL,
    check_models,
    default_model_cache,
    models_from_env,
)
from memlake.config_values import TOOLSET_NAMES, checked_url, parse_latency, parse_toolsets
from memlake.errors import ConfigurationError


def _int(name: str, default: int, *, low: int | None = None, high: int | None = None) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw.strip() else default
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if low is not None and value < low:
        raise ConfigurationError(f"{name} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ConfigurationError(f"{name} must be at most {high}, got {value}")
    return value


def _text(name: str) -> str:
    return os.environ.get(name, "").strip()


def _latency(text: str) -> str:
    """MEMLAKE_STORE_LATENCY, checked now (a typo fails at start, not at the first request)."""
    if text:
        try:
            parse_latency(text)
        except ValueError as e:
            raise ConfigurationError(f"MEMLAKE_STORE_LATENCY: {e}") from None
    return text


MAX_RETENTION_DAYS = 100_000
MAX_RETENTION_CONTEXTS = 1_000


def _retention(text: str) -> tuple[tuple[str, int], ...]:
    """MEMLAKE_RETENTION_CONTEXT_DAYS: a JSON object, context -> days (>= 1)."""
    if not text:
        return ()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if (
        not isinstance(doc, dict)
        or len(doc) > MAX_RETENTION_CONTEXTS
        or not all(
            isinstance(k, str)
            and 1 <= len(k) <= 128
            and isinstance(v, int)
            and not isinstance(v, bool)
            and 1 <= v <= MAX_RETENTION_DAYS
            for k, v in doc.items()
        )
    ):
        raise ConfigurationError(
            "MEMLAKE_RETENTION_CONTEXT_DAYS must be a JSON object of at most"
            f" {MAX_RETENTION_CONTEXTS} contexts (1-128 characters) -> days (a whole number,"
            f' 1 to {MAX_RETENTION_DAYS}), like {{"scratch": 7}}'
        )
    return tuple(sorted(doc.items()))


def _list(name: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in os.environ.get(name, "").split(",") if p.strip())


@dataclass(frozen=True)
class Settings:
    #: "local" (a directory) or "s3"
    store: str = "local"
    data_dir: Path = Path("./memlake-data")
    bucket: str = ""
    prefix: str = ""
    #: "" or a model of S3's timing put on every request, "25ms,90MB/s" (memlake.store.latency):
    #: to see locally what a change costs where the lake lives (decision 4401)
    store_latency: str = ""
    #: "token:tenant" pairs; empty means one tenant, "default", on loopback only
    api_keys: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    #: OAuth issuers that mint tokens for this server, named in its protected resource
    #: metadata (RFC 9728); on AWS the JWT authorizer's issuer (docs/decisions/1131)
    authorization_servers: tuple[str, ...] = ()
    #: the externally visible origin (scheme://host[:port]); "" = from the request's Host
    public_url: str = ""
    default_context: str | None = None
    max_content_bytes: int = 256 * 1024
    max_request_bytes: int = 16 * 1024 * 1024
    #: decoded table segments in memory (memlake.lake)
    cache_bytes: int = 1 << 30
    #: search shards, their IVF lists and byte ranges in memory (memlake.search.index.cache); with
    #: cache_bytes, what bounds a process's memory whatever the tenant's size
    shard_cache_bytes: int = 1 << 30
    tools_page_size: int = 100
    #: API Gateway JWT claim that names the tenant
    tenant_claim: str = "sub"
    #: tenant of MCP requests without JWT claims, under `sam local` only (it has no JWT
    #: authorizer); read only when AWS_SAM_LOCAL=true, which SAM CLI sets (docs/decisions/1160)
    sam_local_tenant: str = ""
    compact_min_segments: int = 32
    #: the highest index shard tier maintenance merges into (docs/decisions/2501): 3 (32,768
    #: episodes), 4 (262,144: ~3x its shards' bytes of memory, a big host only), 2: none;
    #: and the memory one merge may take by its estimate (0: no bound; a Lambda function: 3/4
    #: of its memory), a bigger merge waits for a host that has it
    shard_merge_tier: int = 3
    shard_merge_memory_bytes: int = 0
    #: search embeddings: "minilm" (local numpy model), "bedrock" (Titan Text Embeddings v2)
    #: or "openai" (an OpenAI-compatible endpoint); memlake.config_models says what each needs
    embedder: str = "minilm"
    bedrock_model: str = "amazon.titan-embed-text-v2:0"
    bedrock_dimensions: int = 1024
    #: minilm: a folder holding the model's files; the cache `memlake model fetch` fills;
    #: whether a first use may download into it; the Hugging Face hub to download from
    model_dir: str = ""
    model_cache: Path = field(default_factory=default_model_cache)
    model_download: bool = False
    hf_endpoint: str = "https://huggingface.co"
    embed_model: str = ""  # openai: the model the endpoint serves, and its vectors' width
    embed_dimensions: int = 0
    openai_base_url: str = OPENAI_BASE_URL
    openai_api_key: str = field(default="", repr=False)
    #: on AWS: the key read at run time from a Secrets Manager secret or an SSM SecureString
    #: parameter instead (memlake.embed.api_keys)
    openai_api_key_secret: str = ""
    openai_api_key_parameter: str = ""
    #: the reranking stage (docs/decisions/1210): "none", "bedrock" (Bedrock Rerank with
    #: `rerank_model`, cohere.rerank-v3-5:0 when empty) or "http" (a /rerank endpoint at
    #: `rerank_url`), over the first `rerank_candidates` fused hits
    reranker: str = "none"
    rerank_model: str = ""
    rerank_url: str = ""
    rerank_api_key: str = field(default="", repr=False)
    rerank_candidates: int = 20
    #: where loaded index shards are also kept on disk ("" = memory only; /tmp on Lambda)
    shard_cache_dir: str = ""
    #: how long an idempotency key's first result is replayed (docs/decisions/1051)
    idempotency_ttl_seconds: int = 24 * 3600
    #: retention (memlake.erasure.retention): maintenance deletes and erases episodes older
    #: than this many days (0: kept until deleted), and per context ((context, days), ...),
    #: which overrides it for that context
    retention_days: int = 0
    retention_context_days: tuple[tuple[str, int], ...] = ()
    #: signs page cursors; "" = a random key kept once in the store (docs/decisions/1021)
    cursor_key: str = field(default="", repr=False)
    #: `memlake serve`: seconds a connection may take to send a request's headers (after it
    #: opens or after the previous response), and seconds for a whole request body
    http_idle_timeout: int = 15
    http_body_timeout: int = 60
    #: `memlake serve`: open connections beyond which requests get 503; threads running tools;
    #: listen backlog
    http_max_connections: int = 512
    http_workers: int = 16
    http_backlog: int = 1024
    #: passages a write embeds before it answers (per tool call and per commit); the rest of a
    #: long episode is embedded later by maintenance (docs/decisions/1041-bounded-embedding.md)
    embed_sync_passages: int = 64
    #: passages the deferred embedding pass embeds per commit (and per local maintenance tick)
    embed_batch_passages: int = 256
    #: threads one MiniLM embedding call shares its batches over; 0 = min(2, usable CPUs)
    #: (docs/decisions/1319-embedding-on-two-threads.md)
    embed_threads: int = 0
    #: which tools tools/list offers and tools/call accepts on the MCP doors (TOOLSET_NAMES)
    toolsets: tuple[str, ...] = ("all",)
    #: the CLI's logging level (a name like INFO or a number); the Lambda doors use Powertools'
    log_level: str = "WARNING"
    #: the search's per-shard kernels: "auto", "numba" or "numpy" (`kernel_settings`, 2502)
    kernels: str = "auto"
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [n for n in self.toolsets if n not in TOOLSET_NAMES]
        if unknown or not self.toolsets:
            what = f"unknown toolset {unknown[0][:40]!r}" if unknown else "no toolset chosen"
            raise ConfigurationError(f"{what}; choose from {', '.join(TOOLSET_NAMES)}")
        check_models(self)
        if not 1 <= self.rerank_candidates <= RERANK_MAX:
            raise ConfigurationError(
                f"rerank_candidates must be in 1..{RERANK_MAX}, got {self.rerank_candidates}"
            )
        if not 0 <= self.embed_threads <= EMBED_THREADS_MAX:  # the embedder would refuse it later
            raise ConfigurationError(
                f"embed_threads must be in 0..{EMBED_THREADS_MAX} (0: automatic),"
                f" got {self.embed_threads}"
            )

    @property
    def embed_dim(self) -> int:
        if self.embedder == "openai":
            return self.embed_dimensions
        return self.bedrock_dimensions if self.embedder == "bedrock" else 384

    @classmethod
    def from_env(cls) -> Settings:
        store = os.environ.get("MEMLAKE_STORE", "").strip() or (
            "s3" if os.environ.get("MEMLAKE_BUCKET") else "local"
        )
        if store not in ("local", "s3"):
            raise ConfigurationError(f"MEMLAKE_STORE must be 'local' or 's3', got {store!r}")
        return cls(
            store=store,
            data_dir=Path(os.environ.get("MEMLAKE_DATA_DIR", "./memlake-data")),
            bucket=os.environ.get("MEMLAKE_BUCKET", ""),
            prefix=os.environ.get("MEMLAKE_PREFIX", ""),
            store_latency=_latency(_text("MEMLAKE_STORE_LATENCY")),
            api_keys=_list("MEMLAKE_API_KEYS"),
            allowed_origins=_list("MEMLAKE_ALLOWED_ORIGINS"),
            authorization_servers=tuple(
                checked_url("MEMLAKE_AUTHORIZATION_SERVERS", u, issuer=True)
                for u in _list("MEMLAKE_AUTHORIZATION_SERVERS")
            ),
            public_url=checked_url(
                "MEMLAKE_PUBLIC_URL", os.environ.get("MEMLAKE_PUBLIC_URL", "").strip()
            ),
            default_context=os.environ.get("MEMLAKE_DEFAULT_CONTEXT") or None,
            max_content_bytes=_int("MEMLAKE_MAX_CONTENT_BYTES", 256 * 1024, low=1),
            max_request_bytes=_int("MEMLAKE_MAX_REQUEST_BYTES", 16 * 1024 * 1024, low=1024),
            cache_bytes=_int("MEMLAKE_CACHE_BYTES", _cache_default(SEGMENT_SHARE), low=0),
            shard_cache_bytes=_int(
                "MEMLAKE_SHARD_CACHE_BYTES",
                _int("MEMLAKE_CACHE_BYTES", _cache_default(SHARD_SHARE), low=0),
                low=0,
            ),
            tools_page_size=_int("MEMLAKE_TOOLS_PAGE_SIZE", 100, low=1),
            tenant_claim=os.environ.get("MEMLAKE_TENANT_CLAIM", "sub"),
            sam_local_tenant=os.environ.get("MEMLAKE_SAM_LOCAL_TENANT", "").strip()
            if os.environ.get("AWS_SAM_LOCAL") == "true"
            else "",
            compact_min_segments=_int("MEMLAKE_COMPACT_MIN_SEGMENTS", 32, low=2),
            shard_merge_tier=_int("MEMLAKE_SHARD_MERGE_TIER", 3, low=2, high=4),
            shard_merge_memory_bytes=_int(
                "MEMLAKE_SHARD_MERGE_MEMORY_BYTES", _merge_memory_default(), low=0
            ),
            **models_from_env(_text, _int),
            rerank_candidates=_int("MEMLAKE_RERANK_CANDIDATES", 20, low=1, high=RERANK_MAX),
            idempotency_ttl_seconds=_int("MEMLAKE_IDEMPOTENCY_TTL_SECONDS", 24 * 3600, low=1),
            retention_days=_int("MEMLAKE_RETENTION_DAYS", 0, low=0, high=MAX_RETENTION_DAYS),
            retention_context_days=_retention(_text("MEMLAKE_RETENTION_CONTEXT_DAYS")),
            embed_sync_passages=_int("MEMLAKE_EMBED_SYNC_PASSAGES", 64, low=0),
            embed_batch_passages=_int("MEMLAKE_EMBED_BATCH_PASSAGES", 256, low=1),
            embed_threads=_int("MEMLAKE_EMBED_THREADS", 0, low=0, high=EMBED_THREADS_MAX),
            shard_cache_dir=os.environ.get(
                "MEMLAKE_SHARD_CACHE_DIR",
                "/tmp/memlake-shards" if in_lambda() else "",
            ),
            cursor_key=_cursor_key(),
            http_idle_timeout=_int("MEMLAKE_HTTP_IDLE_TIMEOUT", 15, low=1),
            http_body_timeout=_int("MEMLAKE_HTTP_BODY_TIMEOUT", 60, low=1),
            http_max_connections=_int("MEMLAKE_HTTP_MAX_CONNECTIONS", 512, low=1),
            http_workers=_int("MEMLAKE_HTTP_WORKERS", 16, low=1),
            http_backlog=_int("MEMLAKE_HTTP_BACKLOG", 1024, low=1),
            toolsets=parse_toolsets(os.environ.get("MEMLAKE_TOOLSETS", "")),
            log_level=os.environ.get("MEMLAKE_LOG_LEVEL", "WARNING"),
            kernels=kernel_settings().mode,
        )


def _cursor_key() -> str:
    key = os.environ.get("MEMLAKE_CURSOR_KEY", "").strip()
    if key and len(key) < 32:
        raise ConfigurationError(
            "MEMLAKE_CURSOR_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`),"
            " or unset to keep a generated key in the lake"
        )
    return key


#: most hits one search reranks (each is a passage the reranker reads: latency and cost)
RERANK_MAX = 100
EMBED_THREADS_MAX = 8  # threads one MiniLM embedding call may use (docs/decisions/1319)


# What the platform sets, read live on every call (tests and Lambda flip them per process) ----
#: shares of a Lambda function's memory the caches get by default (1024 MB: 128 and 256 MiB),
#: leaving the rest to the runtime, the model and a search's working arrays
SEGMENT_SHARE = 1 / 8
SHARD_SHARE = 1 / 4


def _cache_default(share: float) -> int:
    """1 GiB, or in a Lambda function `share` of its memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    in MB, set by the runtime and by `sam local`): a cache bigger than the function would end
    in an out-of-memory kill once a tenant outgrows it."""
    raw = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "").strip()
    if not raw.isdigit() or int(raw) <= 0:
        return 1 << 30
    return int(int(raw) * (1 << 20) * share)


def _merge_memory_default() -> int:
    """0 (no bound), or in a Lambda function 3/4 of its memory: a shard merge estimated to
    need more is not started there (the runtime, caches and model take the rest)."""
    raw = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "").strip()
    if not raw.isdigit() or int(raw) <= 0:
        return 0
    return int(raw) * (1 << 20) * 3 // 4


def in_lambda() -> bool:
    """Inside a Lambda function (the runtime sets AWS_LAMBDA_FUNCTION_NAME)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def tracing_enabled() -> bool:
    """X-Ray active tracing is on (Lambda sets AWS_XRAY_DAEMON_ADDRESS) and Powertools'
    POWERTOOLS_TRACE_DISABLED does not turn it off."""
    disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower()
    if disabled in ("1", "true", "yes", "on"):
        return False
    return bool(os.environ.get("AWS_XRAY_DAEMON_ADDRESS"))


KERNEL_MODES = ("auto", "numba", "numpy")


@dataclass(frozen=True)
class KernelSettings:
    """How the search's per-shard kernels load (memlake.search.index.kernels, decision 2502)."""

    #: MEMLAKE_KERNELS: "auto" (numba when its kernels are cached, else numpy), "numba"
    #: (compile what the cache lacks), "numpy" (never import numba)
    mode: str = "auto"
    #: MEMLAKE_KERNEL_CACHE_DIR: where numba keeps the compiled kernels (writable)
    cache_dir: str = ""
    #: MEMLAKE_KERNEL_CACHE_SEED: a cache built ahead (read-only, an image's), copied into
    #: cache_dir when that lacks it; in a Lambda function LAMBDA_TASK_ROOT/kernel-cache
    cache_seed: str = ""
    #: NUMBA_CPU_NAME: the one CPU the code is compiled for and the cache keyed by; empty:
    #: the best of the levels the cache holds that this host runs (kernels.LEVELS, 2507)
    cpu_name: str = ""


def kernel_settings() -> KernelSettings:
    """The kernel settings, read live (tests switch them; the kernels load once a process)."""
    mode = _text("MEMLAKE_KERNELS").lower() or "auto"
    if mode not in KERNEL_MODES:
        raise ConfigurationError(
            f"MEMLAKE_KERNELS must be one of {', '.join(KERNEL_MODES)}, got {mode[:40]!r}"
        )
    cache_dir = _text("MEMLAKE_KERNEL_CACHE_DIR")
    if not cache_dir and in_lambda():
        cache_dir = "/tmp/memlake-kernels"  # the only writable place
    elif not cache_dir:  # beside the model cache: ~/.cache/memlake (or XDG_CACHE_HOME's)
        models = default_model_cache(_text)
        cache_dir = str(models.parent / "kernels" if models.name == "models" else "")
        cache_dir = cache_dir or str(Path(tempfile.gettempdir()) / "memlake-kernels")
    seed = _text("MEMLAKE_KERNEL_CACHE_SEED")
    if not seed and in_lambda() and _text("LAMBDA_TASK_ROOT"):
        seed = str(Path(_text("LAMBDA_TASK_ROOT")) / "kernel-cache")
    return KernelSettings(mode, cache_dir, seed, _text("NUMBA_CPU_NAME"))


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings.from_env()
