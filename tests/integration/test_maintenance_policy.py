"""Every door maintains a tenant through one function (maintenance.maintain_tenant) with the
thresholds maintenance_policy derives from Settings: the maintenance Lambda and
`memlake maintain` run the very same pass, `memlake compact` / `gc` one step of it, and the
local server's tick its own cadence of the same knobs (docs/decisions/1155)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlake import cli, maintenance
from memlake.lake.gc import GRACE_SECONDS
from memlake.maintenance import Maintenance, MaintenancePolicy
from memlake.services import default_services

from .lambda_helpers import Stack


def test_the_lambda_the_cli_and_the_tick_share_one_policy_from_settings(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the functions' environment with two maintenance knobs turned
    stack.use(
        "MaintenanceFunction", MEMLAKE_COMPACT_MIN_SEGMENTS="12", MEMLAKE_EMBED_BATCH_PASSAGES="7"
    )
    seen: dict[str, list[tuple[str, MaintenancePolicy]]] = {}
    door = ""
    real = maintenance.maintain_tenant

    def spy(services: Any, tenant: str, policy: MaintenancePolicy, **kw: Any) -> Any:
        seen.setdefault(door, []).append((tenant, policy))
        return real(services, tenant, policy, **kw)

    monkeypatch.setattr(maintenance, "maintain_tenant", spy)
    for tenant in ("t1", "t2"):
        episode = {"tenant": tenant, "arguments": {"content": f"{tenant} notes"}}
        stack.invoke("AddEpisodeFunction", episode)
    # WHEN each door runs its maintenance
    door = "lambda"
    report = stack.invoke("MaintenanceFunction", {"detail-type": "Scheduled Event"})
    capsys.readouterr()  # the handlers' Powertools log lines
    door = "cli maintain"
    assert cli.main(["maintain", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tenants"] == 2
    door = "cli compact"
    assert cli.main(["compact", "--tenant", "t1"]) == 0
    door = "cli gc"
    assert cli.main(["gc", "--tenant", "t1", "--grace-seconds", "3600"]) == 0
    door = "tick"
    Maintenance(default_services()).tick()
    # THEN the Lambda and `memlake maintain` ran the same pass over every tenant, with the
    # thresholds from the settings (a quarter of the segments, 16 batches of 7 passages)
    scheduled = MaintenancePolicy(
        compact_at=1, merge_run=3, embed_passages=112, embed_budget=None,
        gc_grace_seconds=GRACE_SECONDS, merge_tier=3, merge_limit=None, merge_memory=None,
    )  # fmt: skip
    assert report["tenants"] == 2 and report["failed"] == []
    assert seen["lambda"] == seen["cli maintain"] == [("t1", scheduled), ("t2", scheduled)]
    # the operator's steps: compaction alone (any run of 2), GC alone at the grace asked for
    assert seen["cli compact"] == [("t1", MaintenancePolicy(1, 2, 0, None, None))]
    assert seen["cli gc"] == [("t1", MaintenancePolicy(0, 2, 0, None, 3600.0))]
    # the local tick: compact at 12 segments merging runs of 6, one batch over all tenants,
    # one index shard merge per tenant, no GC before the hour is up
    assert {p for _, p in seen["tick"]} == {MaintenancePolicy(12, 6, 7, 7, None, 3, 1)}
