"""Writers racing to close cycles: follows/causes stay acyclic, duplicates land once.

Every writer has its own Lake (like separate processes or Lambdas), so the only thing that
serialises them is the store's conditional manifest write: create-exclusive on a LocalStore
directory, If-None-Match over HTTP on moto's ThreadedMotoServer. A lost writer re-runs its
validation against the newer snapshot. One more run shares a single Lake between threads, so
writers are batched by group commit and validated one after another in one transaction.

Scenarios per round, all writers released by one barrier:
* ring: writer i adds follows/causes e[i] -> e[i+1 mod n]; any n-1 of them form a path, all n
  a cycle, so exactly one must fail with Conflict;
* duplicates: every writer adds the same (a, b, related_to); exactly one succeeds.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.errors import AlreadyExists, Conflict
from memlake.lake import Lake
from memlake.lake.commit_state import RetryPolicy
from memlake.relationships import relationship_index
from memlake.store.base import ObjectStore, PreconditionFailed
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.tools import add_episode, add_episode_relationship
from tests.support.counting import CountingStore
from tests.wiring import bare_lake, tool_context

from .conftest import s3_client

WRITERS, ROUNDS = 6, 4
TENANT = "race"


class RaceCountingStore(CountingStore):
    """Counts conditional writes that lost (proof that the writers really raced)."""

    lost = 0
    _lost_lock = threading.Lock()

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        try:
            super().put(key, data, if_absent=if_absent)
        except PreconditionFailed:
            with RaceCountingStore._lost_lock:
                RaceCountingStore.lost += 1
            raise


def context(lake: Lake, writer: int) -> ToolContext:
    return tool_context(Principal(TENANT, f"writer-{writer}"), lake, Settings())


def race(lakes: list[Lake], jobs: list[dict[str, Any]]) -> list[BaseException | str]:
    """Run one add_episode_relationship per writer at once; the id or the error of each."""
    outcomes: list[BaseException | str] = [RuntimeError("did not run")] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def writer(n: int) -> None:
        ctx = context(lakes[n % len(lakes)], n)
        args = add_episode_relationship.AddEpisodeRelationshipInput(**jobs[n])
        barrier.wait()
        try:
            outcomes[n] = add_episode_relationship.run(ctx, args).relationship_id
        except BaseException as e:  # noqa: BLE001 - collected and asserted by the caller
            outcomes[n] = e

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(jobs))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return outcomes


def run_races(lakes: list[Lake], reader: Callable[[], Lake]) -> None:
    ctx = context(lakes[0], 0)
    acknowledged: set[str] = set()
    for round_ in range(ROUNDS):
        ring = [
            add_episode.run(ctx, add_episode.AddEpisodeInput(content=f"r{round_} e{i}")).id
            for i in range(WRITERS)
        ]
        jobs = [
            {
                "from_episode_id": ring[i],
                "to_episode_id": ring[(i + 1) % WRITERS],
                "relationship_type": "follows" if i % 2 else "causes",
            }
            for i in range(WRITERS)
        ]
        outcomes = race(lakes, jobs)
        failed = [o for o in outcomes if not isinstance(o, str)]
        assert len(failed) == 1 and isinstance(failed[0], Conflict), outcomes
        acknowledged |= {o for o in outcomes if isinstance(o, str)}

        same = {
            "from_episode_id": ring[0],
            "to_episode_id": ring[2],
            "relationship_type": "refines",
        }
        outcomes = race(lakes, [same] * WRITERS)
        kinds = Counter(type(o).__name__ for o in outcomes)
        assert kinds == {"str": 1, "AlreadyExists": WRITERS - 1}, outcomes
        assert all(isinstance(o, str | AlreadyExists) for o in outcomes)
        acknowledged |= {o for o in outcomes if isinstance(o, str)}

    # a fresh reader (another process) sees exactly the acknowledged relationships
    fresh = reader()
    snap = fresh.snapshot(TENANT)
    index = relationship_index(snap)
    assert set(index.rows) == acknowledged
    order = nx.DiGraph()
    order.add_edges_from(
        (r.from_id, r.to_id) for r in index.rows.values() if r.type in ("follows", "causes")
    )
    assert nx.is_directed_acyclic_graph(order)
    audited = [
        row["relationship_id"]
        for row in snap.table("audit").live_table().to_pylist()
        if row["action"] == "add_relationship"
    ]
    assert Counter(audited) == Counter(acknowledged)  # one audit record per acknowledged add


def separate_lakes(make_store: Callable[[], ObjectStore]) -> list[Lake]:
    retry = RetryPolicy(attempts=200, max_delay=0.2)
    return [bare_lake(RaceCountingStore(make_store()), retry=retry) for _ in range(WRITERS)]


def test_local_store_separate_writers(tmp_path: Path) -> None:
    RaceCountingStore.lost = 0
    run_races(separate_lakes(lambda: LocalStore(tmp_path)), lambda: bare_lake(LocalStore(tmp_path)))
    assert RaceCountingStore.lost > 0  # writers did lose races and re-validated


def test_local_store_one_lake_group_commit(tmp_path: Path) -> None:
    lake = bare_lake(LocalStore(tmp_path))
    run_races([lake], lambda: bare_lake(LocalStore(tmp_path)))


def test_moto_server_separate_writers(moto_endpoint: str) -> None:
    s3_client(moto_endpoint).create_bucket(Bucket="graph-race")

    def make_store() -> ObjectStore:
        return S3Store("graph-race", client=s3_client(moto_endpoint))

    RaceCountingStore.lost = 0
    run_races(separate_lakes(make_store), lambda: bare_lake(make_store()))
    assert RaceCountingStore.lost > 0
