"""A cold search's requests on the S3 model (decision 4401): a budget of sequential round trips
and requests that fails when one creeps back, the manifest found in two round trips, and the
array table in the manifest that opens a big shard without its directory and headers."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import CorruptObject, StorageFull
from memlake.lake import head_copy, keys, manifest_log, snapshot
from memlake.lake.manifest import Manifest
from memlake.search.index import cache, npz_layout, term_postings
from memlake.search.index.ranges import RangedNpz
from memlake.search.index.shard import Shard
from memlake.search.index.state import EXTRA_KEY, SearchState
from memlake.search.query.hits_ahead import HitsAhead
from memlake.store.latency import LatencyModel, LatencyStore
from memlake.store.local import LocalStore
from memlake.tools import add_episode
from tests.integration.test_search_index import HashEmbedder, T
from tests.unit.test_cold_ranges import DIM, _lazy_infos, _run, _searcher, built  # noqa: F401
from tests.wiring import bare_lake, indexed_context

#: first-byte latency of these tests: far above the CPU between two rounds of this small
#: tenant, so requests meant to overlap do (depth counts requests that waited for others)
FIRST = 0.05
#: the budget: the hint, the manifest, the shards' arrays, postings and probed lists, the
#: re-scored rows beside the hits' rows (named by the BM25 side, read ahead: 4401)
DEPTH_BUDGET = 5


@pytest.fixture(autouse=True)
def _nothing_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold search alone: no background fetch of whole shards or build of the id index
    after its answer (they read on, but nobody waits for them)."""
    monkeypatch.setattr(cache, "PROMOTE", False)
    monkeypatch.setattr(snapshot, "INDEX_AFTER_LOOKUP", False)


def _cold(world: dict[str, Any], query: str) -> tuple[list[Any], LatencyStore]:
    store = LatencyStore(LocalStore(world["root"]), LatencyModel(first_byte=FIRST), trace=True)
    lake = bare_lake(store, dim=world["lake"].dim)
    hits = _run(lake, _searcher(world["emb"]), query)
    return hits, store


@pytest.mark.parametrize(
    ("query", "request_budget"),  # requests measured: 15 and 13 (24 and 16 before postings
    [("w3 w17 w250", 17), ("w120", 15)],  # by term; a creep of a few fails)
)
def test_a_cold_search_stays_within_its_round_trips_and_requests(
    built: dict[str, Any],  # noqa: F811
    query: str,
    request_budget: int,
) -> None:
    # GIVEN a tenant with a big sealed shard opened by ranges and a small tail read whole
    assert _lazy_infos(built["lake"]) and all(i.arrays for i in _lazy_infos(built["lake"]))
    # WHEN a fresh process searches it on the S3 model
    hits, store = _cold(built, query)
    # THEN it answers what a warm searcher does, in a handful of round trips
    assert hits == _run(built["lake"], _searcher(built["emb"]), query)
    stats = store.stats
    trace = "\n".join(f"{r.depth} {r.op} {r.key[-20:]} {r.nbytes}" for r in store.trace)
    assert stats.depth <= DEPTH_BUDGET, trace
    assert stats.requests <= request_budget, trace
    assert stats.counts["head"] <= 1  # the next manifest's existence, nothing else


def test_without_the_array_table_a_cold_search_pays_two_more_round_trips(
    built: dict[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The budget above holds because of the table: a shard opened from its own directory and
    headers needs one round for the directory and one for the headers of its big arrays."""
    _, with_table = _cold(built, "w3 w17 w250")
    monkeypatch.setattr(cache, "_layout", lambda info: None)
    _, without = _cold(built, "w3 w17 w250")
    assert without.stats.depth >= with_table.stats.depth + 1
    assert without.stats.requests > with_table.stats.requests


def test_without_reading_the_hits_ahead_a_cold_search_pays_a_round_trip_more(
    built: dict[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hits' rows come in the round of the re-score rows because the BM25 side names
    them once it is scored, while those rows are read (hits_ahead)."""
    hits, ahead = _cold(built, "w3 w17 w250")
    monkeypatch.setattr(HitsAhead, "bm25", lambda self, shards, tops: None)
    again, after = _cold(built, "w3 w17 w250")
    assert again == hits
    assert after.stats.depth == ahead.stats.depth + 1
    assert after.stats.requests == ahead.stats.requests  # the same segments, a round later


def test_with_the_manifests_copy_a_cold_search_reads_its_shards_a_round_trip_sooner(
    built: dict[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shards' first reads go out beside the reads that check the copy of the newest
    manifest (head_copy), not after the manifest's own GET."""
    hits, ahead = _cold(built, "w3 w17 w250")
    assert ahead.stats.counts["head"] == 1  # the next version's, beside the manifest's GET
    monkeypatch.setattr(head_copy, "_read_copy", lambda store, tenant: (None, b""))
    again, after = _cold(built, "w3 w17 w250")
    assert again == hits
    assert after.stats.depth == ahead.stats.depth + 1


def test_a_cold_search_from_a_stale_copy_answers_from_the_newest_manifest(
    tmp_path: Path,
) -> None:
    """A copy left behind (another writer's copy landed first, or the writer stopped before
    its copy) is found out by the next version's HEAD: the search is done again on the
    newest, and what that version added is found."""
    local = LocalStore(tmp_path)
    emb = HashEmbedder(dim=DIM)
    ctx = indexed_context(Principal(T), bare_lake(local, dim=DIM), Settings(data_dir=tmp_path), emb)
    add_episode.run(ctx, add_episode.AddEpisodeInput(content="alpha bravo charlie"))
    stale = local.get(head_copy.head_key(T))
    added = add_episode.run(ctx, add_episode.AddEpisodeInput(content="zulu yankee xray")).id
    ctx.lake.settle_hint(T)  # its hint's put ends before the hint is set back
    local.put(head_copy.head_key(T), stale)  # and the hint: the writer stopped before both
    local.put(keys.hint_key(T), str(Manifest.from_bytes(stale).version).encode())
    fresh = bare_lake(local, dim=DIM)
    behind, settled = fresh.snapshot_ahead(T)
    assert behind.version < bare_lake(local).snapshot(T).version and not settled()
    assert [h[0] for h in _run(fresh, _searcher(emb), "zulu")][:1] == [added]
    # a damaged copy, or one of another tenant: the hint's path
    other = stale.replace(f'"tenant":"{T}"'.encode(), b'"tenant":"other"')
    for bad in (b"{not json", other):
        local.put(head_copy.head_key(T), bad)
        assert [h[0] for h in _run(bare_lake(local, dim=DIM), _searcher(emb), "zulu")][:1] == [
            added
        ]


class _ManifestPutFails(LocalStore):
    """The manifest's put fails (a full disk) while its copy, put beside it, is stored."""

    def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        if if_absent and key.startswith(keys.object_key(T, keys.MANIFEST_DIR, "")):
            raise StorageFull("no space left")
        super().put(key, data, if_absent=if_absent)


def test_a_copy_put_beside_a_manifest_that_did_not_land_is_not_read(tmp_path: Path) -> None:
    """The copy is put beside its manifest, not after it: when the manifest's put fails, a
    copy of a version that does not exist sends a cold reader down the hint's path, to the
    newest stored version; a writer after it commits that version number for itself."""
    lake = bare_lake(LocalStore(tmp_path))
    lake.commit(T, lambda txn: txn.put("episodes", {"id": "kept", "content": "x"}))
    lake.settle_hint(T)
    failing = bare_lake(_ManifestPutFails(tmp_path))
    with pytest.raises(StorageFull):
        failing.commit(T, lambda txn: txn.put("episodes", {"id": "lost", "content": "y"}))
    local = LocalStore(tmp_path)
    assert Manifest.from_bytes(local.get(head_copy.head_key(T))).version == 2  # ahead
    assert not local.exists(keys.manifest_key(T, 2))
    fresh = bare_lake(local)
    _, settled = fresh.snapshot_ahead(T)
    assert not settled()
    snap = fresh.snapshot(T)
    assert snap.version == 1 and snap.table("episodes").get("lost") is None
    assert snap.table("episodes").get("kept") is not None
    writer = bare_lake(local)
    writer.commit(T, lambda txn: txn.put("episodes", {"id": "next", "content": "z"}))
    writer.settle_hint(T)
    again = bare_lake(local)
    snap, settled = again.snapshot_ahead(T)
    assert settled() and snap.version == 2 and snap.table("episodes").get("next") is not None


def test_a_copy_of_a_damaged_manifest_is_not_read_around_it(tmp_path: Path) -> None:
    """The copy is checked against the stored manifest's bytes: a damaged newest manifest is
    reported, and writes refused, as without the copy."""
    local = LocalStore(tmp_path)
    lake = bare_lake(local)
    for i in range(3):
        lake.commit(T, lambda txn, i=i: txn.put("episodes", {"id": f"e{i}", "content": "x"}))
    local.put(keys.manifest_key(T, 3), b"{not json")
    fresh = bare_lake(local)
    snap, settled = fresh.snapshot_ahead(T)
    assert not settled()
    assert fresh.snapshot(T).damage is not None
    assert bare_lake(local).snapshot(T).version == 2


def test_the_array_table_is_where_the_arrays_are(built: dict[str, Any]) -> None:  # noqa: F811
    info = _lazy_infos(built["lake"])[0]
    data = LocalStore(built["root"]).get(info.key)
    table = npz_layout.from_json(info.key, info.array_table(), info.bytes)
    with np.load(io.BytesIO(data)) as npz:
        assert set(table) == set(npz.files)
        for name, at in table.items():
            array = npz[name]
            assert (at.dtype, at.shape) == (array.dtype, array.shape)
            assert data[at.start : at.start + at.nbytes] == array.tobytes()
    # the table survives the manifest's JSON
    again = SearchState.from_extra({EXTRA_KEY: state_json(built)})
    assert again is not None and [s.arrays for s in again.shards] == [
        s.arrays for s in SearchState.from_extra(built["lake"].snapshot(T).extra).shards
    ]


def state_json(world: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = world["lake"].snapshot(T).extra[EXTRA_KEY]
    return doc


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: {"ids": t["ids"]},  # arrays missing: the eager read names them
        lambda t: {**t, "ids": [t["ids"][0], "|O", t["ids"][2]]},  # pickled objects
        lambda t: {**t, "ids": [-1, "|u1", [1]]},  # before the object
        lambda t: {**t, "vectors": [t["vectors"][0], t["vectors"][1], [10**9, 384]]},  # past it
        lambda t: {**t, "ids": [t["seq"][0], "|u1", t["ids"][2]]},  # on top of another
        lambda t: {**t, "ids": ["0", "|u1", [1]]},  # not a number
        lambda t: [],  # not a table
    ],
)
def test_a_damaged_array_table_is_a_clear_error(
    built: dict[str, Any],  # noqa: F811
    damage: Any,
) -> None:
    info = _lazy_infos(built["lake"])[0]
    bad_table = damage(info.array_table())
    with pytest.raises((CorruptObject, KeyError)) as err:
        npz_layout.from_json(info.key, bad_table, info.bytes)
        damaged = replace(
            info, arrays=tuple((n, *v[:2], tuple(v[2])) for n, v in bad_table.items())
        )
        cache.ShardCache(1 << 30).load_many(LocalStore(built["root"]), [info.key], [damaged])
    if err.type is CorruptObject:
        assert info.key in str(err.value)


def test_a_cold_reader_finds_the_newest_manifest_in_two_round_trips(tmp_path: Path) -> None:
    local = LocalStore(tmp_path)
    lake = bare_lake(local)
    for i in range(5):
        lake.commit(T, lambda txn, i=i: txn.put("episodes", {"id": f"e{i}", "content": "x"}))
    lake.settle_hint(T)
    # GIVEN the hint names the newest version: two round trips (the hint and the manifest's
    # copy, then the manifest and the next version's existence)
    store = LatencyStore(local, LatencyModel(first_byte=0.01))
    assert bare_lake(store).snapshot(T).version == 5
    assert store.stats.depth == 2 and store.stats.requests == 4
    # the hint's own path, for tenants without the copy (written before it)
    local.delete(head_copy.head_key(T))
    store = LatencyStore(local, LatencyModel(first_byte=0.01))
    assert bare_lake(store).snapshot(T).version == 5
    assert store.stats.depth == 2 and store.stats.requests == 4  # the copy asked for, missing
    # GIVEN a stale hint (a writer died between its manifest and the hint): still the newest
    local.put(keys.hint_key(T), b"3")
    assert bare_lake(LatencyStore(local, LatencyModel(first_byte=0.0))).snapshot(T).version == 5
    # a hint one version behind (a Lambda frozen before its hint): two round trips more
    local.put(keys.hint_key(T), b"4")
    store = LatencyStore(local, LatencyModel(first_byte=0.01))
    assert bare_lake(store).snapshot(T).version == 5
    assert store.stats.depth == 4  # on from version 5, not the probing path from the start
    # GIVEN the hinted manifest was removed (GC, repair): the probing path finds the newest
    local.put(keys.hint_key(T), b"9")
    assert bare_lake(LatencyStore(local, LatencyModel(first_byte=0.0))).snapshot(T).version == 5
    # GIVEN a damaged hinted manifest: the probing path reads around it, as before
    local.put(keys.hint_key(T), b"5")
    good = local.get(keys.manifest_key(T, 5))
    local.put(keys.manifest_key(T, 5), b"{not json")
    assert manifest_log.newest_from_hint(local, T) is None
    snap = bare_lake(local).snapshot(T)
    assert snap.version == 4 and snap.damage is not None
    local.put(keys.manifest_key(T, 5), good)


def test_a_cold_re_score_reads_rows_in_list_order(built: dict[str, Any]) -> None:  # noqa: F811
    """The candidates' rows come from the list-ordered copy (a few ranges), not row by row."""
    info = _lazy_infos(built["lake"])[0]
    table = npz_layout.from_json(info.key, info.array_table(), info.bytes)
    copy, rows = table["list_vectors"], table["vectors"]
    _, store = _cold(built, "w3 w17 w250")
    ranged = [r for r in store.trace if r.key == info.key and r.op == "get_range"]
    assert any(copy.start <= (r.range_start or 0) < copy.start + copy.nbytes for r in ranged)
    assert not any(rows.start <= (r.range_start or 0) < rows.start + rows.nbytes for r in ranged)
    # the copy holds the rows in the lists' order, and a whole load leaves it out (and the
    # postings by term, the other copy read by ranges only)
    with np.load(io.BytesIO(LocalStore(built["root"]).get(info.key))) as npz:
        assert (npz["list_vectors"] == npz["vectors"][npz["ivf_rows"]]).all()
    by_term = table[term_postings.TERM_POSTINGS]
    assert cache.resident(info) == info.bytes - copy.nbytes - by_term.nbytes


def test_a_cold_search_reads_a_term_of_both_kinds_in_one_range(
    built: dict[str, Any],  # noqa: F811
) -> None:
    """The big shard's postings come from TERM_POSTINGS, a range a term, never from the four
    CSR arrays (which a whole load keeps)."""
    info = _lazy_infos(built["lake"])[0]
    table = npz_layout.from_json(info.key, info.array_table(), info.bytes)
    _, store = _cold(built, "w3 w17 w250")
    starts = [r.range_start or 0 for r in store.trace if r.key == info.key]

    def inside(name: str) -> int:
        at = table[name]
        return sum(at.start <= s < at.start + at.nbytes for s in starts)

    assert 1 <= inside(term_postings.TERM_POSTINGS) <= 3  # three terms, perhaps coalesced
    assert not any(inside(n) for n in ("indices", "tf", "p_indices", "p_tf"))


def test_postings_by_term_are_the_csr_arrays_again(built: dict[str, Any]) -> None:  # noqa: F811
    """TERM_POSTINGS split by term gives every term's docs and tf of both kinds, bit for bit."""
    info = _lazy_infos(built["lake"])[0]
    with np.load(io.BytesIO(LocalStore(built["root"]).get(info.key))) as npz:
        arrays = {n: npz[n] for n in npz.files}
    words = arrays[term_postings.TERM_POSTINGS]
    ptr, p_ptr = arrays["indptr"], arrays["p_indptr"]
    assert (term_postings.build(arrays) == words).all()
    for t in range(len(ptr) - 1):
        a, b = term_postings.span(ptr, p_ptr, t)
        n, pn = int(ptr[t + 1] - ptr[t]), int(p_ptr[t + 1] - p_ptr[t])
        got = term_postings.split(words[a:b], n, pn)
        for kind, p in (("", ptr), ("p_", p_ptr)):
            docs, tf = got[kind]
            assert (docs == arrays[kind + "indices"][p[t] : p[t + 1]]).all()
            assert (tf == arrays[kind + "tf"][p[t] : p[t + 1]].astype(np.float32)).all()
    with pytest.raises(ValueError, match="holds not"):
        term_postings.split(words[:5], 1, 1)


def test_a_shard_without_postings_by_term_reads_the_csr_arrays(
    built: dict[str, Any],  # noqa: F811
) -> None:
    """A shard written before TERM_POSTINGS (the copy left out, no array table) answers the
    same, from its four CSR arrays."""
    info = _lazy_infos(built["lake"])[0]
    local = LocalStore(built["root"])
    with np.load(io.BytesIO(local.get(info.key))) as npz:
        arrays = {n: npz[n] for n in npz.files if n != term_postings.TERM_POSTINGS}
    sink = io.BytesIO()
    np.savez(sink, **arrays)
    old_key = info.key.replace(".npz", "-old.npz")
    local.put(old_key, sink.getvalue())
    shards = {}
    for key in (info.key, old_key):
        npz = RangedNpz(local, key)
        shards[key] = Shard.from_ranges(npz)
    assert shards[info.key]._source.together and not shards[old_key]._source.together
    ids = shards[info.key].term_ids(["w3", "w17", "nothing-like-it", "w250"])
    new, old = (shards[k].read_postings(ids) for k in (info.key, old_key))
    for kind in ("", "p_"):
        for a, b in zip(new[kind], old[kind], strict=True):
            same = a is None and b is None
            assert same or all((x == y).all() for x, y in zip(a, b, strict=True))


def test_postings_by_term_of_another_size_are_a_clear_error(
    built: dict[str, Any],  # noqa: F811
) -> None:
    info = _lazy_infos(built["lake"])[0]
    table = info.array_table()
    start, dtype, (words,) = table[term_postings.TERM_POSTINGS]
    table[term_postings.TERM_POSTINGS] = [start, dtype, [words - 2]]
    arrays = tuple((name, *v[:2], tuple(v[2])) for name, v in table.items())
    with pytest.raises(CorruptObject, match="does not hold its postings"):
        cache.ShardCache(1 << 30).load_many(
            LocalStore(built["root"]), [info.key], [replace(info, arrays=arrays)]
        )


def test_a_list_copy_that_is_not_a_copy_is_a_clear_error(built: dict[str, Any]) -> None:  # noqa: F811
    info = _lazy_infos(built["lake"])[0]
    table = info.array_table()
    start, dtype, (n, dim) = table["list_vectors"]
    table["list_vectors"] = [start, dtype, [n - 1, dim]]
    arrays = tuple((name, *v[:2], tuple(v[2])) for name, v in table.items())
    with pytest.raises(CorruptObject, match="not a copy"):
        cache.ShardCache(1 << 30).load_many(
            LocalStore(built["root"]), [info.key], [replace(info, arrays=arrays)]
        )
