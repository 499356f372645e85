"""Memory layers under concurrent agents, each with its own Lake (no shared in-process lock):
exclusion comes from the store's conditional write alone, on the local store and over HTTP on
moto's ThreadedMotoServer.

- 8 agents work through 20 pending threads (claim, write the episode, complete): every thread
  is claimed exactly once and ends completed with its episode bound on both sides.
- link/unlink storms: both sides stay identical; pairs owned by one agent end in its last state.
- links racing episode/concept deletes: no link survives to a deleted row.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import Conflict, NotFound
from memlake.lake.commit_state import RetryPolicy
from memlake.layers.tables import LINKS
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.tools.registry import get_tool
from tests.wiring import bare_lake, tool_context

from .conftest import s3_client

AGENTS, THREADS = 8, 20
TENANT = "layers"


class Agent:
    def __init__(self, store: ObjectStore, name: str) -> None:
        lake = bare_lake(store, retry=RetryPolicy(attempts=200, max_delay=0.2))
        self.ctx = tool_context(Principal(TENANT, name), lake, Settings())

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None
        return spec.run(self.ctx, spec.input_model.model_validate(args)).model_dump(mode="json")


@pytest.fixture(params=["local", "moto"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], ObjectStore]:
    if request.param == "local":
        return lambda: LocalStore(tmp_path)
    endpoint = request.getfixturevalue("moto_endpoint")
    bucket = f"layers-{uuid.uuid4().hex[:10]}"
    s3_client(endpoint).create_bucket(Bucket=bucket)
    return lambda: S3Store(bucket, client=s3_client(endpoint))


def together(work: Callable[[int], None], n: int = AGENTS) -> None:
    """Run work(0..n-1) on n threads released at once; re-raise the first failure."""
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def go(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    workers = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    [w.start() for w in workers]
    [w.join() for w in workers]
    if errors:
        raise errors[0]


def test_eight_agents_claim_twenty_threads_exactly_once(
    make_store: Callable[[], ObjectStore],
) -> None:
    setup = Agent(make_store(), "setup")
    ids = [setup.call("add_thread", title=f"t{i}")["id"] for i in range(THREADS)]
    claims: list[tuple[str, str]] = []
    lock = threading.Lock()

    def agent(n: int) -> None:
        me = Agent(make_store(), f"agent-{n}")
        while True:
            pending = me.call("get_pending_threads", limit=100)["threads"]
            if not pending:
                return
            start = n % len(pending)
            for t in pending[start:] + pending[:start]:
                try:
                    me.call("mark_thread_status", id=t["id"], status="processing")
                except Conflict as e:  # another agent was faster (and maybe already done)
                    assert "already processing" in e.message or "from completed" in e.message
                    continue
                with lock:
                    claims.append((t["id"], f"agent-{n}"))
                me.call("upsert_episode", events=f"processed by {n}", source_thread_id=t["id"])
                me.call("mark_thread_status", id=t["id"], status="completed")
                break

    together(agent)
    counts = Counter(tid for tid, _ in claims)
    assert sorted(counts) == sorted(ids) and set(counts.values()) == {1}
    reader = Agent(make_store(), "reader")
    for tid, who in claims:
        thread = reader.call("get_thread", id=tid)["thread"]
        assert thread["processing_status"] == "completed" and thread["claimed_by"] == who
        episode = reader.call("get_episode", id=thread["episode_id"])
        assert episode["source_thread_id"] == tid
        assert episode["content"] == f"processed by {who.removeprefix('agent-')}"


def both_sides(reader: Agent, episodes: list[str], concepts: list[str]) -> set[tuple[str, str]]:
    """The link relation read from episodes and from concepts; asserts the two agree. (An
    episode or concept left with no links has no such field: compact results drop empty
    lists, so a storm that unlinks all of one, as the agents' interleaving sometimes does,
    reads as none.)"""
    get_e = (reader.call("get_episode", id=e).get("concept_ids", []) for e in episodes)
    get_c = (reader.call("get_concept", id=c).get("episode_ids", []) for c in concepts)
    from_e = {(e, c) for e, linked in zip(episodes, get_e, strict=True) for c in linked}
    from_c = {(e, c) for c, linked in zip(concepts, get_c, strict=True) for e in linked}
    assert from_e == from_c
    return from_e


def test_link_unlink_storm_leaves_both_sides_identical(
    make_store: Callable[[], ObjectStore],
) -> None:
    setup = Agent(make_store(), "setup")
    episodes = [setup.call("upsert_episode", events=f"e{i}")["id"] for i in range(4)]
    concepts = [setup.call("upsert_concept", name=f"c{i}")["concept"]["id"] for i in range(4)]
    pairs = [(e, c) for e in episodes for c in concepts]
    shared = pairs[:4]  # every agent fights over these
    owned = {n: pairs[4 + n :: AGENTS] for n in range(AGENTS)}  # one agent each
    final: dict[tuple[str, str], bool] = {}
    lock = threading.Lock()

    def agent(n: int) -> None:
        me, rng = Agent(make_store(), f"agent-{n}"), random.Random(n)
        plan = [(p, True) for p in owned[n]] * 2 + [(p, False) for p in owned[n]]
        plan += [(rng.choice(shared), rng.random() < 0.5) for _ in range(4)]
        rng.shuffle(plan)
        for (e, c), linked in plan:
            tool = "link_episode_to_concept" if linked else "unlink_episode_from_concept"
            out = me.call(tool, episode_id=e, concept_id=c)
            assert ((e, c) in {(e, x) for x in out.get("concept_ids", [])}) is linked
            if (e, c) in owned[n]:
                with lock:
                    final[(e, c)] = linked

    together(agent)
    relation = both_sides(Agent(make_store(), "reader"), episodes, concepts)
    for pair, linked in final.items():
        assert (pair in relation) is linked, pair


def test_links_racing_deletes_leave_no_dangling_link(
    make_store: Callable[[], ObjectStore],
) -> None:
    setup = Agent(make_store(), "setup")
    episodes = [setup.call("upsert_episode", events=f"e{i}")["id"] for i in range(6)]
    concepts = [setup.call("upsert_concept", name=f"c{i}")["concept"]["id"] for i in range(3)]
    doomed_e, doomed_c = set(episodes[:3]), {concepts[0]}

    def agent(n: int) -> None:
        me, rng = Agent(make_store(), f"agent-{n}"), random.Random(100 + n)
        if n == 0:
            for e in sorted(doomed_e):
                me.call("delete_episode", id=e)
            me.call("delete_concept", id=concepts[0])
            return
        for _ in range(6):
            try:
                me.call(
                    "link_episode_to_concept",
                    episode_id=rng.choice(episodes),
                    concept_id=rng.choice(concepts),
                )
            except NotFound:
                pass  # lost to a delete: refused, nothing written

    together(agent, 5)
    reader = Agent(make_store(), "reader")
    alive_e = [e for e in episodes if e not in doomed_e]
    alive_c = [c for c in concepts if c not in doomed_c]
    relation = both_sides(reader, alive_e, alive_c)
    snap = reader.ctx.lake.snapshot(TENANT)
    rows = snap.table(LINKS).live_table().to_pylist()
    assert {(r["episode_id"], r["concept_id"]) for r in rows} == relation
    assert not {r["episode_id"] for r in rows} & doomed_e
    assert not {r["concept_id"] for r in rows} & doomed_c


def test_both_sides_reads_links_all_undone(make_store: Callable[[], ObjectStore]) -> None:
    """The storm's reader on the end state it sometimes meets (once it failed on it): an
    episode and a concept linked, then unlinked, so neither result has the list at all."""
    agent = Agent(make_store(), "alone")
    e = agent.call("upsert_episode", events="e")["id"]
    c = agent.call("upsert_concept", name="c")["concept"]["id"]
    agent.call("link_episode_to_concept", episode_id=e, concept_id=c)
    assert both_sides(agent, [e], [c]) == {(e, c)}
    agent.call("unlink_episode_from_concept", episode_id=e, concept_id=c)
    assert "concept_ids" not in agent.call("get_episode", id=e)
    assert both_sides(agent, [e], [c]) == set()
