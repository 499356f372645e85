"""Numeric settings are bounded: a value that would break the server is refused at startup."""

from __future__ import annotations

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
        ("MEMLAKE_HTTP_WORKERS", "many", "must be an integer"),
        ("MEMLAKE_TOOLS_PAGE_SIZE", "0", "at least 1"),
        ("MEMLAKE_COMPACT_MIN_SEGMENTS", "1", "at least 2"),
        ("MEMLAKE_MAX_CONTENT_BYTES", "0", "at least 1"),
        ("MEMLAKE_MAX_REQUEST_BYTES", "10", "at least 1024"),
        ("MEMLAKE_CACHE_BYTES", "-1", "at least 0"),
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
