"""Maintenance's compaction and GC meet a transient store failure (issue 47's soak: 1% of
requests failing failed whole passes): the step is tried again and the pass goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.maintenance import maintenance_policy, run_maintenance
from memlake.store.faults import Fault, FaultyStore
from memlake.store.local import LocalStore
from tests.wiring import bare_lake, services_for

T = "acme"


@pytest.mark.parametrize(
    "fault",
    [
        Fault("put", "/tables/", when="after"),  # a compacted part stored, its answer lost
        Fault("get", "/tables/"),  # a segment read for the merge fails
        Fault("list", ""),  # GC's listing fails
        Fault("put", "/manifest/0", when="after"),  # compaction's manifest: answer lost
    ],
)
def test_a_store_fault_costs_a_retry_not_the_pass(tmp_path: Path, fault: Fault) -> None:
    plain = bare_lake(LocalStore(tmp_path))
    for i in range(6):
        plain.commit(
            T,
            lambda txn, i=i: txn.put(
                "episodes", {"id": f"e{i}", "content": "x", "created_at": None}
            ),
        )  # type: ignore[misc]
    faulty = FaultyStore(LocalStore(tmp_path), [fault])
    lake = bare_lake(faulty)
    services = services_for(lake)
    report = run_maintenance(
        services, maintenance_policy(services.settings, "operator"), tenants=[T]
    )
    assert sum(faulty.fired.values()) == 1, faulty.fired
    assert report.failed == [] and report.compacted_tables >= 1, report
    assert sorted(lake.snapshot(T).table("episodes").ids()) == [f"e{i}" for i in range(6)]
