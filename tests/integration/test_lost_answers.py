"""Writes through S3's everyday faults (issue 47, decision 4701): a manifest put whose answer is
lost after S3 stored it (the caller sees a reset, or botocore's retry sees 412 for our own
object), a put that fails before storing, 503 SlowDown. For each, the tools that write answer
once and their write is there exactly once; a write that did not land answers an error. On the
local lake and on moto's S3, through the tools as an agent calls them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memlake.context import Principal
from memlake.errors import StorageError
from memlake.lake import commit_state, engine, keys, manifest_put
from memlake.lake.manifest import Manifest
from memlake.mcp.dispatch import call_tool
from memlake.store.base import PreconditionFailed
from memlake.store.faults import Fault, FaultyStore
from memlake.store.latency import SlowDown
from tests.support.stores import local_or_s3
from tests.wiring import bare_lake, tool_context

T = "acme"


def _reset(op: str, key: str) -> Exception:
    return StorageError(f"S3 {op} failed for {key}: Connection reset by peer")


def _own_412(op: str, key: str) -> Exception:
    """botocore retried a put S3 had stored: the retry's answer is 412 for our own object."""
    return PreconditionFailed(f"{key} already exists")


def _slow_down(op: str, key: str) -> Exception:
    return SlowDown(f"S3 {op} failed for {key}: SlowDown (503)")


FAULTS: dict[str, Fault] = {
    "lost answer, then a reset": Fault("put", "/manifest/0", when="after", error=_reset),
    "lost answer, then 412 for our own put": Fault(
        "put", "/manifest/0", when="after", error=_own_412
    ),
    "failed before storing": Fault("put", "/manifest/0", when="before", error=_reset),
    "SlowDown twice": Fault("put", "/manifest/0", when="before", times=2, error=_slow_down),
}


@pytest.fixture(params=["local", "s3"])
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    monkeypatch.setattr(manifest_put, "BASE_DELAY", 0.001)
    monkeypatch.setattr(engine, "STORE_BACKOFF", 0.001)
    with local_or_s3(request.param, tmp_path) as inner:
        store = FaultyStore(inner, [])
        lake = bare_lake(store)
        yield {"store": store, "ctx": tool_context(Principal(T), lake), "lake": lake}


def call(world: dict[str, Any], name: str, **arguments: Any) -> dict[str, Any]:
    outcome = call_tool({"name": name, "arguments": arguments}, world["ctx"])
    assert not outcome.is_error, outcome.error
    return outcome.structured  # type: ignore[no-any-return]


def _thread(world: dict[str, Any]) -> str:
    got = call(world, "add_thread", title="t", messages=[{"role": "user", "content": "hi"}])
    return str(got["id"])


def arm(world: dict[str, Any]) -> None:
    """The fault under test, for the next write only (the setup's writes go through)."""
    world["store"].faults[:] = [world["fault"]]


WRITES: dict[str, Callable[[dict[str, Any]], Callable[[], None]]] = {}


def write(name: str) -> Callable[..., Any]:
    def register(fn: Callable[[dict[str, Any]], Callable[[], None]]) -> Any:
        WRITES[name] = fn
        return fn

    return register


@write("append_thread_messages")
def _append(world: dict[str, Any]) -> Callable[[], None]:
    thread = _thread(world)
    arm(world)
    call(
        world,
        "append_thread_messages",
        thread_id=thread,
        messages=[{"role": "assistant", "content": "the lost answer"}],
    )

    def check() -> None:
        got = call(world, "get_thread", id=thread)
        assert [m["content"] for m in got["messages"]] == ["hi", "the lost answer"]

    return check


@write("add_episode")
def _add(world: dict[str, Any]) -> Callable[[], None]:
    arm(world)
    got = call(world, "add_episode", content="a fact said once", context="c1")

    def check() -> None:
        ids = [e["id"] for e in call(world, "list_episodes", limit=50)["episodes"]]
        assert ids == [got["id"]]

    return check


@write("add_episode_relationship")
def _relate(world: dict[str, Any]) -> Callable[[], None]:
    a = call(world, "add_episode", content="first", context="c1")["id"]
    b = call(world, "add_episode", content="second", context="c1")["id"]
    arm(world)
    call(
        world,
        "add_episode_relationship",
        from_episode_id=a,
        to_episode_id=b,
        relationship_type="follows",
    )

    def check() -> None:
        got = call(world, "get_episode_relationships", episode_id=a)
        assert len(got["relationships"]) == 1, got

    return check


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("tool", list(WRITES))
def test_a_write_through_a_fault_is_there_exactly_once(
    world: dict[str, Any], tool: str, fault: str
) -> None:
    store: FaultyStore = world["store"]
    world["fault"] = Fault(**{**FAULTS[fault].__dict__})  # a fresh count of times
    check = WRITES[tool](world)
    assert sum(store.fired.values()) == FAULTS[fault].times  # the fault did happen
    check()
    # the newest manifest names its own version in its commit id
    key = keys.manifest_key(T, world["lake"].snapshot(T).version)
    newest = Manifest.from_bytes(store.inner.get(key))
    assert str(newest.extra[manifest_put.COMMIT_KEY]).startswith(f"{newest.version}:")


def test_a_write_that_never_lands_answers_an_error_and_leaves_nothing(
    world: dict[str, Any],
) -> None:
    thread = _thread(world)
    version = world["lake"].snapshot(T).version
    world["store"].faults[:] = [Fault("put", "/manifest/0", when="before", times=-1)]
    outcome = call_tool(
        {
            "name": "append_thread_messages",
            "arguments": {"thread_id": thread, "messages": [{"role": "user", "content": "x"}]},
        },
        world["ctx"],
    )
    assert outcome.is_error and outcome.error is not None and outcome.error.retryable
    assert outcome.error.code == "unavailable" and "nothing was written" in outcome.error.message
    # each of the commit's attempts tried its manifest put four times
    tries = manifest_put.ATTEMPTS * commit_state.STORE_FAILURES
    assert sum(world["store"].fired.values()) == tries
    world["store"].faults[:] = []
    assert world["lake"].snapshot(T).version == version
    got = call(world, "get_thread", id=thread)
    assert [m["content"] for m in got["messages"]] == ["hi"]


@pytest.mark.parametrize(
    ("holder", "landed"),
    [("ours", True), ("another", False), ("one without an id", False)],
)
def test_a_412_is_ours_only_when_the_manifest_there_has_our_commit_id(
    world: dict[str, Any], holder: str, landed: bool
) -> None:
    """After a 412 the put reads the version back: our commit id means our put landed (its
    first answer was lost); another's, or none, is another writer's win: a lost race."""
    store = world["store"].inner
    key = keys.manifest_key(T, 7)
    ours = manifest_put.stamped(Manifest.empty(T).next({}, {}))
    there = {
        "ours": ours,
        "another": manifest_put.stamped(ours),
        "one without an id": Manifest.empty(T).next({}, {}),
    }[holder]
    store.put(key, there.to_bytes())
    if landed:
        manifest_put.put_manifest(store, key, ours)
    else:
        with pytest.raises(PreconditionFailed):
            manifest_put.put_manifest(store, key, ours)


def test_a_commit_the_store_throttles_is_tried_again_then_says_when_to_retry(
    world: dict[str, Any],
) -> None:
    """503 SlowDown on a commit's segment puts: the commit is tried again with backoff (new
    objects, none named yet), and lands once; when the store keeps refusing, the agent hears
    `unavailable` with when to retry, and nothing was written."""
    thread = _thread(world)
    store: FaultyStore = world["store"]
    store.faults[:] = [Fault("put", "/tables/", times=2, error=_slow_down)]
    call(
        world,
        "append_thread_messages",
        thread_id=thread,
        messages=[{"role": "user", "content": "a"}],
    )
    assert store.fired[("put", "before")] == 2
    version = world["lake"].snapshot(T).version
    store.faults[:] = [Fault("put", "/tables/", times=-1, error=_slow_down)]
    outcome = call_tool(
        {
            "name": "append_thread_messages",
            "arguments": {"thread_id": thread, "messages": [{"role": "user", "content": "b"}]},
        },
        world["ctx"],
    )
    assert outcome.is_error and outcome.error is not None
    assert outcome.error.code == "unavailable" and outcome.error.retryable
    assert "few seconds" in outcome.error.hint and "SlowDown" in outcome.error.message
    store.faults[:] = []
    assert world["lake"].snapshot(T).version == version
    got = call(world, "get_thread", id=thread)
    assert [m["content"] for m in got["messages"]] == ["hi", "a"]
