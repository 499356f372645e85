"""Maintenance outlives failures: one tenant's broken embedding never stops compaction, GC or
the other tenants, and the local background thread survives any error of a tick."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlake import maintenance
from memlake.config import Settings
from memlake.lake import Lake
from memlake.store.local import LocalStore
from tests.wiring import bare_lake, services_for


def lake_with_small_segments(root: Path) -> Lake:
    lake = bare_lake(LocalStore(root))
    for tenant in ("alpha", "beta"):
        for i in range(6):
            lake.commit(
                tenant, lambda txn, i=i: txn.put("episodes", {"id": f"e{i}", "content": "x"})
            )
    return lake


def test_a_failing_embedding_pass_still_compacts_every_tenant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = maintenance.embed_pending

    def broken(lake: Lake, searcher: Any, tenant: str, **kw: Any) -> Any:
        if tenant == "alpha":
            raise RuntimeError("the model would not load")
        return real(lake, searcher, tenant, **kw)

    lake = lake_with_small_segments(tmp_path)
    monkeypatch.setattr(maintenance, "embed_pending", broken)
    policy = maintenance.maintenance_policy(Settings(), "operator")
    report = maintenance.run_maintenance(services_for(lake), replace(policy, embed_passages=64))
    assert report.tenants == 2 and report.failed == ["alpha"]
    for tenant in ("alpha", "beta"):
        assert len(lake.snapshot(tenant).manifest.segments("episodes")) == 1


def test_the_background_thread_survives_a_failing_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = threading.Semaphore(0)

    class Flaky(maintenance.Maintenance):
        def tick(self) -> None:
            ticks.release()
            raise OSError("disk hiccup")

    thread = Flaky(services=None, interval=0.01)  # type: ignore[arg-type]
    thread.start()
    try:
        assert ticks.acquire(timeout=5) and ticks.acquire(timeout=5)  # a second tick came
        assert thread.is_alive()
    finally:
        thread.stop_event.set()
        thread.join(5)
