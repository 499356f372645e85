"""Numeric settings are bounded: a value that would break the server is refused at startup."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.config import Settings
from memlake.errors import ConfigurationError


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("MEMLAKE_HTTP_WORKERS", "0", "at least 1"),
        ("MEMLAKE_HTTP_BACKLOG", "-5", "at least 1"),
        ("MEMLAKE_HTTP_IDLE_TIMEOUT", "0", "at least 1"),
        ("MEMLAKE_HTTP_BODY_TIMEOUT", "-1", "at least 1"),
        ("MEMLAKE_HTTP_MAX_CONNECTIONS", "0", "at least 1"),
        ("MEMLAKE_IDEMPOTENCY_TTL_SECONDS", "0", "at least 1"),
        ("MEMLAKE_EMBED_BATCH_PASSAGES", "0", "at least 1"),
        ("MEMLAKE_EMBED_SYNC_PASSAGES", "-1", "at least 0"),
        ("MEMLAKE_EMBED_THREADS", "9", "at most 8"),
        ("MEMLAKE_HTTP_WORKERS", "many", "must be an integer"),
        ("MEMLAKE_TOOLS_PAGE_SIZE", "0", "at least 1"),
        ("MEMLAKE_COMPACT_MIN_SEGMENTS", "1", "at least 2"),
        ("MEMLAKE_MAX_CONTENT_BYTES", "0", "at least 1"),
        ("MEMLAKE_MAX_REQUEST_BYTES", "10", "at least 1024"),
        ("MEMLAKE_CACHE_BYTES", "-1", "at least 0"),
        ("MEMLAKE_SHARD_CACHE_BYTES", "-1", "at least 0"),
    ],
)
def test_a_bad_number_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=needle) as err:
        Settings.from_env()
    assert name in str(err.value)


def test_the_defaults_load(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMLAKE_HTTP_WORKERS", "MEMLAKE_EMBED_SYNC_PASSAGES"):
        monkeypatch.delenv(name, raising=False)
    cfg = Settings.from_env()
    assert (cfg.http_workers, cfg.embed_sync_passages, cfg.idempotency_ttl_seconds) == (
        16,
        64,
        86400,
    )


MIB = 1 << 20


@pytest.mark.parametrize(
    ("env", "segments", "shards"),
    [
        ({}, 1 << 30, 1 << 30),
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 128 * MIB, 256 * MIB),
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "10240"}, 1280 * MIB, 2560 * MIB),
        ({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 1 << 30, 1 << 30),
        ({"MEMLAKE_CACHE_BYTES": "5000"}, 5000, 5000),  # one knob for both, as before
        ({"MEMLAKE_CACHE_BYTES": "5000", "MEMLAKE_SHARD_CACHE_BYTES": "7000"}, 5000, 7000),
        (
            {"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024", "MEMLAKE_SHARD_CACHE_BYTES": "9"},
            128 * MIB,
            9,
        ),
    ],
)
def test_caches_fit_the_lambda_function_memory(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], segments: int, shards: int
) -> None:
    """In a Lambda function the caches default to shares of its memory: a 1 GiB shard cache in
    a 1,024 MB function would be killed for memory once a tenant outgrew it."""
    for name in (
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
        "MEMLAKE_CACHE_BYTES",
        "MEMLAKE_SHARD_CACHE_BYTES",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    got = Settings.from_env()
    assert (got.cache_bytes, got.shard_cache_bytes) == (segments, shards)


def test_the_search_cache_gets_the_shard_cache_bound(tmp_path: Path) -> None:
    from memlake.services import Services

    cfg = Settings(data_dir=tmp_path, cache_bytes=3 * MIB, shard_cache_bytes=40 * MIB)
    services = Services.build(cfg)
    cache = services.search.shards
    assert cache.max_bytes + cache.ranges.max_bytes == 40 * MIB
    assert services.lake.cache.max_bytes == 3 * MIB


def test_embed_threads_out_of_range_is_a_configuration_error() -> None:
    for bad in (-1, 9):
        with pytest.raises(ConfigurationError, match="embed_threads must be in 0..8"):
            Settings(embed_threads=bad)
    assert Settings(embed_threads=8).embed_threads == 8
