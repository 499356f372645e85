"""Per-tool functions invoked directly ({"tenant", "arguments"}) and the maintenance function,
on moto S3 with the environment template.yaml gives them."""

from __future__ import annotations

from typing import Any

import pytest

from memlake.config import Settings
from memlake.maintenance import discover_tenants, maintenance_policy, run_maintenance
from memlake.services import default_services
from tests.wiring import bare_lake, services_for

from .lambda_helpers import Stack


@pytest.fixture
def tools(stack: Stack) -> Stack:
    """The stack with the per-tool functions' environment (they all share it)."""
    return stack.use("AddEpisodeFunction")


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        ("not an object", "JSON object"),
        ({"arguments": {}}, "tenant"),
        ({"tenant": 7, "arguments": {}}, "tenant"),
        ({"tenant": "../other", "arguments": {}}, "not valid"),
        ({"tenant": "Alice", "arguments": {}}, "not valid"),
        ({"tenant": "demo", "arguments": []}, "arguments must be an object"),
        ({"tenant": "demo", "arguments": {}, "principal": "x"}, "unknown event keys"),
    ],
)
def test_bad_events_are_clear_errors(tools: Stack, event: Any, needle: str) -> None:
    result = tools.invoke("ListEpisodesFunction", event)
    assert result["isError"] is True
    assert result["error"]["code"] == "invalid_argument"
    assert needle in result["error"]["message"]
    assert result["error"]["hint"]


def test_bad_arguments_come_back_as_the_tool_error(tools: Stack) -> None:
    result = tools.invoke("GetEpisodeFunction", {"tenant": "demo", "arguments": {"id": "a/b"}})
    assert result["isError"] is True and result["error"]["code"] == "invalid_argument"
    result = tools.invoke(
        "AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "x", "colour": "red"}}
    )
    assert "unknown argument" in result["error"]["message"]
    assert tools.object_keys() == []


def test_the_tenant_of_the_event_is_the_only_one_reached(tools: Stack) -> None:
    added = tools.invoke(
        "AddEpisodeFunction", {"tenant": "team-a", "arguments": {"content": "team a only"}}
    )
    as_b = {"tenant": "team-b", "arguments": {"id": added["id"]}}
    assert tools.invoke("GetEpisodeFunction", as_b)["error"]["code"] == "not_found"
    assert tools.invoke("DeleteEpisodeFunction", as_b)["deleted"] == 0
    listed = tools.invoke("ListEpisodesFunction", {"tenant": "team-b", "arguments": {}})
    assert listed["episodes"] == []
    mine = {"tenant": "team-a", "arguments": {"id": added["id"]}}
    assert tools.invoke("GetEpisodeFunction", mine)["content"] == "team a only"


def test_functions_return_the_compact_json_of_tools_call(tools: Stack) -> None:
    """The per-tool functions answer what tools/call's structuredContent holds: no nulls or
    empty attributes, the write's ids and counts, the search's content modes."""
    added = tools.invoke(
        "AddEpisodeFunction", {"tenant": "demo", "arguments": {"content": "lake notes on parquet"}}
    )
    assert set(added) == {"id", "content", "created_at", "linked_entities"}, added
    found = tools.invoke(
        "SearchEpisodesFunction",
        {"tenant": "demo", "arguments": {"query": "parquet", "content": "none"}},
    )
    (hit,) = found["episodes"]
    assert hit["id"] == added["id"] and "content" not in hit and hit["content_chars"] == 21
    assert None not in hit.values() and None not in hit["breakdown"].values()


def test_maintenance_covers_every_tenant(tools: Stack) -> None:
    # GIVEN two tenants with many small segments each
    for tenant in ("t1", "t2"):
        for i in range(10):
            event = {"tenant": tenant, "arguments": {"content": f"{tenant} {i}"}}
            tools.invoke("AddEpisodeFunction", event)
    lake = default_services().lake
    assert discover_tenants(lake.store) == ["t1", "t2"]
    before = {t: len(lake.snapshot(t).manifest.segments("episodes")) for t in ("t1", "t2")}
    # WHEN the scheduled function runs with its sample event
    report = tools.invoke("MaintenanceFunction", {"detail-type": "Scheduled Event"})
    # THEN both were compacted (GC keeps the fresh garbage: it is inside the grace period)
    assert report["tenants"] == 2 and report["failed"] == []
    assert report["compacted_tables"] >= 2
    for tenant in ("t1", "t2"):
        segs = lake.snapshot(tenant).manifest.segments("episodes")
        assert len(segs) < before[tenant]
        listed = tools.handler("ListEpisodesFunction")(
            {"tenant": tenant, "arguments": {"limit": 50}},
            None,  # no context: still answers
        )
        assert listed["count"] == 10


def test_discover_tenants_on_a_local_lake(tmp_path: Any) -> None:
    from memlake.store.local import LocalStore

    lake = bare_lake(LocalStore(tmp_path))
    lake.commit("zeta", lambda txn: txn.put("episodes", {"id": "e1", "content": "z"}))
    lake.commit("alpha", lambda txn: txn.put("episodes", {"id": "e1", "content": "a"}))
    (tmp_path / "tenants" / "Not_Valid!").mkdir()
    (tmp_path / "tenants" / "Not_Valid!" / "x").write_text("stray")
    assert discover_tenants(lake.store) == ["alpha", "zeta"]
    policy = maintenance_policy(Settings(), "scheduled")
    assert run_maintenance(services_for(lake), policy).tenants == 2
