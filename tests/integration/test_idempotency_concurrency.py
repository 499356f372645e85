"""Retries racing the first attempt with the same idempotency key: exactly one write.

Each racer has its own Lake (no shared in-process lock, like two Lambda instances), so only the
store's conditional manifest write orders them: create-exclusive on the local store, If-None-Match
over HTTP on moto's ThreadedMotoServer (mock_aws alone is not atomic). The loser re-runs its
commit function against the winner's snapshot, finds the key and returns the winner's result.
One more case shares one Lake, where group commit puts the racers in the same batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.errors import Conflict
from memlake.lake import Lake
from memlake.lake.commit_state import RetryPolicy
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.tools import add_episode, add_thread
from tests.wiring import bare_lake, tool_context

from .conftest import s3_client

RACERS, ROUNDS = 4, 5


def race(lakes: list[Lake], calls: list[Callable[[ToolContext], Any]]) -> list[Any]:
    """Run calls[i] on lakes[i] at once; each one's result (a dict) or exception."""
    out: list[Any] = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def go(i: int) -> None:
        ctx = tool_context(Principal("race"), lakes[i], Settings())
        barrier.wait()
        try:
            out[i] = calls[i](ctx).model_dump(mode="json")
        except Exception as e:  # noqa: BLE001 - asserted by the caller
            out[i] = e

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return out


def episode(content: str, key: str) -> Callable[[ToolContext], Any]:
    args = add_episode.AddEpisodeInput(content=content, idempotency_key=key)
    return lambda ctx: add_episode.run(ctx, args)


def thread(title: str, key: str) -> Callable[[ToolContext], Any]:
    args = add_thread.AddThreadInput(title=title, idempotency_key=key)
    return lambda ctx: add_thread.run(ctx, args)


def check_races(make_lake: Callable[[], Lake]) -> None:
    for n in range(ROUNDS):
        key = f"retry-key-{n:04d}"
        lakes = [make_lake() for _ in range(RACERS)]
        results = race(lakes, [episode(f"round {n}", key)] * RACERS)
        assert all(isinstance(r, dict) for r in results), results
        assert len({r["id"] for r in results}) == 1  # every racer got the one episode's id
        assert all(r == results[0] for r in results)
        threads = race(lakes, [thread(f"round {n}", key)] * RACERS)  # same key, other tool
        assert len({r["id"] for r in threads}) == 1
        # a racer with other arguments under the same key: one write, the others refused
        mixed = race(
            lakes, [episode(f"round {n} a", key + "-x"), episode(f"round {n} b", key + "-x")]
        )
        assert sum(isinstance(r, dict) for r in mixed) == 1
        assert sum(isinstance(r, Conflict) for r in mixed) == 1
    snap = make_lake().snapshot("race")
    episodes = snap.table("episodes")
    contents = sorted(episodes.get(i)["content"] for i in episodes.ids())
    assert len(contents) == 2 * ROUNDS and len([c for c in contents if c[-1].isdigit()]) == ROUNDS
    assert snap.table("threads").count() == ROUNDS
    assert snap.table("idempotency_keys").count() == 3 * ROUNDS


def fast_retry() -> RetryPolicy:
    return RetryPolicy(attempts=200, max_delay=0.05)


def test_racing_retries_on_the_local_store(tmp_path: Path) -> None:
    check_races(lambda: bare_lake(LocalStore(tmp_path), retry=fast_retry()))


def test_racing_retries_in_one_lake_group_commit(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path), retry=fast_retry())
    check_races(lambda: lake)


@pytest.mark.slow
def test_racing_retries_on_moto_server(moto_endpoint: str) -> None:
    s3_client(moto_endpoint).create_bucket(Bucket="idem-race")

    def make_store() -> ObjectStore:
        return S3Store("idem-race", client=s3_client(moto_endpoint))

    check_races(lambda: bare_lake(make_store(), retry=fast_retry()))
