"""Forgetting as a person meets it (issue 48), through /mcp with the mcp client, on the local
lake (a `memlake serve` process: its maintenance tick erases) and on moto S3 (`memlake
maintain`'s pass): after delete_episode and one pass, no object of the tenant holds the
episode's words, id or vectors, `memlake check --erased` agrees, and everything else is found."""

from __future__ import annotations

import time

import pytest

from memlake.erasure.verify import verify_erased
from memlake.maintenance import maintenance_policy, run_maintenance
from tests.support.erasure_scan import scan

from .test_damage_mcp import Lakes, local_lakes, s3_lakes, tools  # noqa: F401 (fixtures)

WORD = "quetzalmarmot"


@pytest.mark.parametrize("where", ["local", "s3"])
def test_delete_then_one_pass_erases_through_mcp(
    where: str, request: pytest.FixtureRequest
) -> None:
    lakes: Lakes = request.getfixturevalue(f"{where}_lakes")
    with lakes.serve() as url:
        added = tools(
            url,
            *[("add_episode", {"content": f"garden log {i}: watered the beans"}) for i in range(8)],
            ("add_episode", {"content": f"the {WORD} hides in the attic", "context": "attic"}),
        )
        victim = added[-1]["id"]
        (before,) = tools(url, ("search_episodes", {"query": WORD}))
        assert [e["id"] for e in before["episodes"]] == [victim]
        deleted, after = tools(
            url, ("delete_episode", {"id": victim}), ("search_episodes", {"query": WORD})
        )
        assert not deleted["is_error"] and deleted["deleted"] == 1, deleted
        assert victim not in {e["id"] for e in after.get("episodes", [])}, after
        if where == "local":  # the server's own tick (every 2 s) erases
            deadline = time.monotonic() + 60
            while verify_erased(lakes.services().lake, "default").pending:
                assert time.monotonic() < deadline, "the tick did not erase within 60 s"
                time.sleep(0.5)
    if where == "s3":  # the scheduled function's pass (`memlake maintain`)
        services = lakes.services()
        report = run_maintenance(
            services, maintenance_policy(services.settings, "scheduled"), tenants=["default"]
        )
        assert report.erased == 1 and not report.failed, report
    left = scan(lakes.store, "default", words=[WORD, "attic"], ids=[victim])
    assert left == [], "\n".join(left)
    check = verify_erased(lakes.services().lake, "default")
    assert check.clean and check.erased == 1, check
    with lakes.serve() as url:
        found, listed = tools(
            url, ("search_episodes", {"query": "garden beans"}), ("list_episodes", {"limit": 50})
        )
    assert {e["id"] for e in listed["episodes"]} == {a["id"] for a in added[:-1]}
    assert len(found["episodes"]) >= 1
