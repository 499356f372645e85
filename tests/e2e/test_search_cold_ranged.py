"""A user's search through /mcp reaches the cold ranged path (issue 13, decision 1306): a fresh
server opens a big sealed IVF shard (format 3) by byte ranges, on the local lake and on S3 over
real HTTP (moto's server), answers exactly what a warm server with whole shards answers, never
reads that shard whole nor writes anything, and, when the tenant fits, promotes it to a whole
shard in the background so the next search reads no shard bytes at all.

The sizes that make a shard big (ivf.IVF_MIN_ROWS, cache.LAZY_MIN_BYTES) and the tail size are
shrunk in-process, so ~80 real MiniLM passages make one such shard. At that size a query re-scores
most rows, so the share of bytes a cold search reads is left to tests/unit/test_cold_ranges.py
(the same shrinking, below the tools); here it is which requests reach the store."""

from __future__ import annotations

import contextlib
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from memlake.config import Settings
from memlake.lake import compaction
from memlake.lake.compaction import compact
from memlake.mcp.server import build_app
from memlake.search.index import cache, ivf, layout
from memlake.search.index.backlog import pending_map
from memlake.search.index.state import SearchState
from memlake.services import Services
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from tests.support.counting import CountingStore

from .conftest import API_KEYS, TOKENS
from .mcp_helpers import call, connect, free_port, run, serve_in_thread

TENANT = "alpha"
TAIL = 16  # episodes a tail shard takes before it is sealed
EPISODES = TAIL + 4  # one sealed shard of 16 episodes, a tail of 4
NEEDLE, GONE = 5, 9  # both in the sealed shard
CONTEXTS = ("harbour", "orchard")

SUBJECTS = ["The night crew", "Our survey team", "The duty engineer", "A volunteer diver"]
SUBJECTS += ["The lab assistant", "The ferry captain", "Two apprentices", "The beekeeper"]
VERBS = ["inspected", "recalibrated", "cleaned", "photographed", "repainted", "measured"]
VERBS += ["dismantled", "logged", "tested", "moved"]
THINGS = ["the tide gauge", "a rusty bilge pump", "the solar panels", "the cider press"]
THINGS += ["the weather vane", "a cracked greenhouse pane", "the mooring chains", "the hives"]
THINGS += ["the diesel generator", "the apple grader", "the radio mast", "a leaking valve"]
PLACES = ["near the north pier", "behind the packing shed", "on the breakwater"]
PLACES += ["in the lower orchard", "beside the slipway", "under the old crane"]
WHEN = ["before dawn", "after the storm", "during the spring tide", "at the end of the shift"]


def _content(i: int) -> str:
    """Eleven sentences (~5 MiniLM passages of 64 tokens), varied so the vectors spread."""
    rng = random.Random(i)
    out = []
    for j in range(11):
        words = (rng.choice(xs) for xs in (SUBJECTS, VERBS, THINGS, PLACES, WHEN))
        reading = rng.randint(10, 999)
        out.append(" ".join(words) + f", and wrote reading {reading} on sheet {i}-{j}.")
    if i == NEEDLE:
        out.insert(4, "The anemometer was finally replaced by a technician named Oyelaran.")
    if i == GONE:
        out.insert(2, "A surveyor called Quillfeather borrowed the theodolite.")
    return " ".join(out)


class KeyedStore(CountingStore):
    """Counts requests, and which keys were read whole (get) and by ranges (get_range)."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.whole: Counter[str] = Counter()
        self.ranged: Counter[str] = Counter()
        self._keys = threading.Lock()

    def get(self, key: str) -> bytes:
        data = super().get(key)
        with self._keys:
            self.whole[key] += 1
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        data = super().get_range(key, start, end)
        with self._keys:
            self.ranged[key] += 1
        return data

    def clear(self) -> tuple[Counter[str], Counter[str], Counter[str]]:
        """(request counts, whole gets per key, range gets per key) so far, all zeroed."""
        with self._keys:
            out = self.reset(), self.whole, self.ranged
            self.whole, self.ranged = Counter(), Counter()
        return out


@dataclass
class World:
    """A written lake: a way to open it again, what was written, what a warm server found."""

    new_store: Callable[[], ObjectStore]
    settings: Settings
    ids: list[str]
    big: str  # the key of the big sealed shard
    warm: dict[str, Any] = field(default_factory=dict)  # query name -> warm search output


@contextlib.contextmanager
def server(world: World) -> Iterator[tuple[str, Services, KeyedStore]]:
    """A fresh server on the world's store: new Services, empty caches, nothing in memory."""
    store = KeyedStore(world.new_store())
    services = Services.build(world.settings, store)
    with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
        yield url, services, store


def _queries(ids: list[str]) -> dict[str, dict[str, Any]]:
    base = {"limit": 10, "recency": False}
    return {
        "needle": {**base, "query": "Oyelaran"},
        "meaning": {**base, "query": "who fixed the wind speed instrument?"},
        "words": {**base, "query": "rusty bilge pump on the breakwater after the storm"},
        "context": {**base, "query": "cleaned the hives before dawn", "context": CONTEXTS[1]},
        "gone": {**base, "query": "Quillfeather borrowed the theodolite", "limit": 50},
    }


async def _search_all(url: str, queries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    async with connect(url, TOKENS[TENANT]) as client:
        out = {}
        for name, args in queries.items():
            got = await call(client, "search_episodes", args)
            assert not got["is_error"], got
            out[name] = got
        return out


def _shrunk(mp: pytest.MonkeyPatch) -> None:
    """Small shards count as big: an IVF from 64 rows (8 a list, 3 probed), ranged from 64 KiB."""
    mp.setattr(layout, "TAIL_DOCS", TAIL)
    mp.setattr(ivf, "IVF_MIN_ROWS", 64)
    mp.setattr(ivf, "ROWS_PER_LIST", 8)
    mp.setattr(ivf, "NPROBE", 3)
    mp.setattr(ivf, "EXACT_BELOW", 0)  # the context filter goes through the IVF as well
    mp.setattr(cache, "LAZY_MIN_BYTES", 64 << 10)
    mp.setattr(cache, "LAZY_GAP", 1 << 10)  # scaled down with the shard


async def _add_all(client: Any, world: World, count: int) -> None:
    """`count` episodes through /mcp (`_content`, contexts in turn), their ids in world.ids."""
    for i in range(count):
        args = {"content": _content(i), "context": CONTEXTS[i % 2]}
        out = await call(client, "add_episode", args)
        assert not out["is_error"], out
        world.ids.append(out["id"])


def _write(world: World) -> None:
    """Episodes through /mcp on a server that then searches its own whole shards (warm)."""
    with server(world) as (url, services, _):

        async def write() -> None:
            async with connect(url, TOKENS[TENANT]) as client:
                await _add_all(client, world, EPISODES)
                out = await call(client, "delete_episode", {"id": world.ids[GONE]})
                assert not out["is_error"], out

        run(write())
        snapshot = services.lake.snapshot(TENANT)
        state = SearchState.from_extra(snapshot.extra)
        assert state is not None and [s.docs for s in state.shards] == [TAIL, EPISODES - TAIL]
        big = [s for s in state.shards if not s.tail]  # sealed, format 3 with an IVF, big
        assert len(big) == 1 and big[0].format >= 4 and big[0].chunks >= ivf.IVF_MIN_ROWS
        assert big[0].bytes >= cache.LAZY_MIN_BYTES
        assert big[0].dead == (world.ids[GONE],) and not pending_map(snapshot)  # all embedded
        world.big = big[0].key
        whole = services.search.shards.cached(world.big)
        assert whole is not None and not whole.lazy and whole.ivf_index() is not None
        world.warm = run(_search_all(url, _queries(world.ids)))
        assert services.search.shards.cached(world.big) is whole  # searched whole


@contextlib.contextmanager
def local_lake(tmp_path: Path) -> Iterator[World]:
    settings = Settings(store="local", data_dir=tmp_path, api_keys=tuple(API_KEYS.split(",")))
    yield World(lambda: LocalStore(tmp_path), settings, [], "")


@contextlib.contextmanager
def s3_lake(tmp_path: Path) -> Iterator[World]:
    """moto's server on a real socket: every range GET travels over HTTP."""
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:

        def client() -> Any:
            return boto3.client(
                "s3",
                region_name="us-east-1",
                endpoint_url=f"http://127.0.0.1:{port}",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )

        # a bucket of its own: moto's state is the process's, not one server's, so a bucket
        # of the same name would hold another module's world (its order then mattered)
        bucket = f"memlake-ranged-{uuid.uuid4().hex[:12]}"
        client().create_bucket(Bucket=bucket)
        settings = Settings(store="s3", bucket=bucket, api_keys=tuple(API_KEYS.split(",")))
        yield World(lambda: S3Store(bucket, client=client()), settings, [], "")
    finally:
        moto.stop()


@pytest.fixture(scope="module", params=[local_lake, s3_lake], ids=["local", "s3"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        _shrunk(mp)
        with request.param(tmp_path_factory.mktemp("ranged")) as w:
            _write(w)
            yield w


def test_a_cold_server_searches_the_big_shard_by_ranges_and_finds_what_a_warm_one_finds(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "PROMOTE", False)  # it stays ranged
    with server(world) as (url, services, store):
        cold = run(_search_all(url, _queries(world.ids)))
        counts, whole, ranged = store.clear()
        shard = services.search.shards.cached(world.big)
    # the big shard was opened by ranges, never read whole; nothing was written
    assert world.big not in whole and ranged[world.big] > 0
    assert set(ranged) == {world.big}
    assert any("/search/" in k for k in whole)  # the tail was read whole (it is small)
    assert counts["put"] == counts["delete"] == 0
    assert shard is not None and shard.lazy
    assert cold == world.warm  # same ids, scores, breakdowns and passages
    ids = world.ids
    assert cold["needle"]["episodes"][0]["id"] == ids[NEEDLE]
    assert cold["meaning"]["episodes"][0]["id"] == ids[NEEDLE]
    hits = cold["context"]["episodes"]
    assert all(h["context"] == CONTEXTS[1] for h in hits)
    live = {ids[i] for i in range(1, EPISODES, 2)} - {ids[GONE]}  # its 9 live episodes
    assert {h["id"] for h in hits} == live  # filtered inside the search: no short top-k
    assert ids[GONE] not in {h["id"] for h in cold["gone"]["episodes"]}
    assert cold["gone"]["count"] > 0  # others, by meaning; not the one its words name


def test_a_tenant_that_fits_is_promoted_and_then_read_from_memory(world: World) -> None:
    assert cache.PROMOTE  # the default
    queries = _queries(world.ids)
    with server(world) as (url, services, store):
        first = run(_search_all(url, {"words": queries["words"]}))
        shards = services.search.shards
        shards.wait_promotions()
        _, whole, ranged = store.clear()
        assert ranged[world.big] > 0 and whole[world.big] == 1  # promoted: fetched whole once
        promoted = shards.cached(world.big)
        assert promoted is not None and not promoted.lazy
        again = run(_search_all(url, queries))
        counts, whole, ranged = store.clear()
    assert first["words"] == again["words"] == world.warm["words"]
    assert again == world.warm
    # no shard read at all: one existence check a search for a newer manifest (freshness),
    # and the episodes segments the first search did not read (its hits were found by id
    # range; the id index is built in the background), each read once
    assert not ranged and not [k for k in whole if "/search/" in k]
    assert all("/tables/episodes/" in k and n == 1 for k, n in whole.items())
    assert set(counts) <= {"head", "get"} and counts["head"] <= len(queries)
    assert counts["put"] == counts["delete"] == 0


def test_after_compaction_a_cold_server_reads_each_hits_part_not_the_whole_table(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's compaction (what maintenance runs) writes the episodes as parts of about
    SEGMENT_BYTES in id order (decision 4401): a fresh server through /mcp answers what the
    warm one did and reads, for its hits, the parts that hold them, each once. (Last in this
    module: it compacts the world's lake.)"""
    monkeypatch.setattr(cache, "PROMOTE", False)
    store = world.new_store()
    before = Services.build(world.settings, store).lake.snapshot(TENANT).manifest
    # parts of a commit's segment's size (these 20 episodes merge into ~15 KB), and every
    # commit's segment merged, whatever its size
    size = max(s.bytes for s in before.tables["episodes"])
    monkeypatch.setattr(compaction, "SEGMENT_BYTES", size)
    monkeypatch.setattr(compaction, "_small", lambda seg, target_rows: not seg.compacted)
    report = compact(Services.build(world.settings, store).lake, TENANT, min_segments=2)
    parts = Services.build(world.settings, store).lake.snapshot(TENANT).manifest
    parts_of = {s.key: s for s in parts.tables["episodes"]}
    assert report.merged["episodes"] == len(before.tables["episodes"])
    assert len(parts_of) >= 2 and all(s.compacted for s in parts_of.values())
    with server(world) as (url, _, keyed):
        cold = run(_search_all(url, _queries(world.ids)))

        async def needle() -> dict[str, Any]:
            async with connect(url, TOKENS[TENANT]) as client:
                return await call(client, "get_episode", {"id": world.ids[NEEDLE]})

        got = run(needle())
        counts, whole, _ = keyed.clear()
    assert cold == world.warm  # the same ids, scores, breakdowns and passages
    assert not got["is_error"] and "Oyelaran" in got["content"]
    # the parts holding the hits and the episode asked for, each read once, and no other
    wanted = {h["id"] for out in cold.values() for h in out["episodes"]} | {world.ids[NEEDLE]}
    holding = {k for k, p in parts_of.items() for i in wanted if p.min_id <= i <= p.max_id}
    read = {k: n for k, n in whole.items() if "/tables/episodes/" in k}
    assert set(read) == holding and set(read.values()) == {1}
    assert counts["put"] == counts["delete"] == 0
