"""Idempotency keys in-process on a local lake: replay, mismatch, expiry (injected clock),
per-tool and per-tenant scope, key format, the record in the same commit, compaction."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memlake import idempotency
from memlake.errors import Conflict
from memlake.lake.commit_state import Hooks
from memlake.lake.compaction import compact
from memlake.store.local import LocalStore
from memlake.timeutil import now
from tests.wiring import bare_lake

from .tools.support import Harness

KEY = "3f6c1e0a-8a8e-4c8e-9a51-5d1f0f2b7c11"


def stored(h: Harness, table: str) -> int:
    return h.lake.snapshot(h.ctx.tenant).table(table).count()


class Clock:
    def __init__(self) -> None:
        self.at = now()

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(idempotency, "clock", fake)
    return fake


@pytest.mark.parametrize(
    ("tool", "args", "table", "id_of"),
    [
        ("add_episode", {"content": "we chose parquet"}, "episodes", lambda r: r["id"]),
        ("add_thread", {"messages": [{"role": "user", "content": "hi"}]}, "threads", None),
        ("upsert_concept", {"name": "Parquet", "kind": "tech"}, "concepts", None),
    ],
)
def test_retry_returns_the_first_result_and_writes_once(
    tmp_path: Path, tool: str, args: dict[str, Any], table: str, id_of: Any
) -> None:
    h = Harness(tmp_path)
    first = h.call(tool, idempotency_key=KEY, **args)
    version = h.lake.snapshot("t").version
    again = h.call(tool, idempotency_key=KEY, **args)
    assert again == first  # same id, same fields (created_at too)
    assert h.lake.snapshot("t").version == version  # the replay committed nothing
    assert stored(h, table) == 1
    # without a key the tool still writes every time
    h.call(tool, **args)
    assert stored(h, table) == 2


def test_other_arguments_under_a_used_key_are_a_conflict(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.call("add_episode", content="first", idempotency_key=KEY)
    before = h.objects()
    with pytest.raises(Conflict) as err:
        h.call("add_episode", content="something else", idempotency_key=KEY)
    assert "different arguments" in err.value.message and KEY in err.value.message
    assert "new key" in err.value.hint
    assert h.objects() == before and stored(h, "episodes") == 1


def test_an_expired_key_writes_again(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path)
    first = h.call("add_episode", content="daily note", idempotency_key=KEY)
    clock.at += timedelta(hours=23, minutes=59)
    assert h.call("add_episode", content="daily note", idempotency_key=KEY) == first
    clock.at += timedelta(minutes=2)  # past 24 h: the key is forgotten
    second = h.call("add_episode", content="daily note", idempotency_key=KEY)
    assert second["id"] != first["id"] and stored(h, "episodes") == 2
    # the key now remembers the second write, for another 24 h
    assert h.call("add_episode", content="daily note", idempotency_key=KEY) == second
    # and after expiry another payload is no longer a conflict
    clock.at += timedelta(hours=25)
    h.call("add_episode", content="other text", idempotency_key=KEY)
    assert stored(h, "episodes") == 3


def test_keys_are_scoped_per_tool_and_per_tenant(tmp_path: Path) -> None:
    alpha = Harness(tmp_path, tenant="alpha")
    beta = Harness(tmp_path, tenant="beta", lake=alpha.lake)
    ep = alpha.call("add_episode", content="alpha's", idempotency_key=KEY)
    thread = alpha.call("add_thread", idempotency_key=KEY)  # same key, other tool: independent
    other = beta.call("add_episode", content="beta's other text", idempotency_key=KEY)
    assert ep["id"] != other["id"] and thread["id"] not in (ep["id"], other["id"])
    assert stored(alpha, "episodes") == 1 and stored(beta, "episodes") == 1
    assert beta.call("add_episode", content="beta's other text", idempotency_key=KEY) == other


@pytest.mark.parametrize(
    "key",
    ["short", "x" * 129, "../../manifest/00000001.json", "has space 12345", "-leading-dash", ""],
)
def test_bad_keys_are_refused_before_anything_runs(tmp_path: Path, key: str) -> None:
    h = Harness(tmp_path)
    with pytest.raises(ValidationError) as err:
        h.call("add_episode", content="x", idempotency_key=key)
    assert "idempotency_key" in str(err.value)
    assert h.objects() == {}


def test_the_record_commits_with_the_write_or_not_at_all(tmp_path: Path) -> None:
    def crash(_tenant: str, _version: int) -> None:
        raise RuntimeError("crash before the manifest")

    h = Harness(
        tmp_path, lake=bare_lake(LocalStore(tmp_path), hooks=Hooks(before_manifest_put=crash))
    )
    with pytest.raises(RuntimeError):
        h.call("add_episode", content="lost", idempotency_key=KEY)
    fresh = Harness(tmp_path)
    assert stored(fresh, "episodes") == 0 and stored(fresh, "idempotency_keys") == 0
    out = fresh.call("add_episode", content="lost", idempotency_key=KEY)  # the retry writes
    snap = fresh.lake.snapshot("t")
    assert snap.table("episodes").ids() == [out["id"]]
    segments = snap.manifest.tables
    assert segments["episodes"][-1].seq == segments["idempotency_keys"][-1].seq  # one version


def test_compaction_drops_expired_keys(tmp_path: Path, clock: Clock) -> None:
    h = Harness(tmp_path)
    for n in range(4):
        h.call("add_thread", idempotency_key=f"old-key-{n:04d}")
    clock.at += timedelta(hours=25)
    for n in range(4):
        h.call("add_thread", idempotency_key=f"new-key-{n:04d}")
    report = compact(h.lake, "t", min_segments=2)
    assert report.merged["idempotency_keys"] == 8
    view = h.lake.snapshot("t").table("idempotency_keys")
    assert sorted(view.get(i)["key"] for i in view.ids()) == [f"new-key-{n:04d}" for n in range(4)]
    assert stored(h, "threads") == 8  # only the keys go, never the writes
