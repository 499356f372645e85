"""Compaction writes its merge as segments of about SEGMENT_BYTES each, in id order (decision
4401): a cold search reads its hits' segments whole, and one merged segment of a tenant was
megabytes read and decoded for ten rows. Each part holds its own id range, a full part is not
merged again, and repair restores damaged parts from the compaction's inputs once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memlake.integrity.check import check_tenant
from memlake.integrity.repair import repair_tenant
from memlake.lake import compaction
from memlake.lake.compaction import compact
from memlake.store.latency import LatencyModel, LatencyStore
from memlake.store.local import LocalStore
from tests.integration.test_damage_repair import T, fresh, readable, truncate
from tests.integration.test_search_index import HashEmbedder, make, put

PART = 24 << 10  # bytes a part is cut at here (a commit's one-row segment here: ~8 KB)


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "SEGMENT_BYTES", PART)


def _lake(root: Path, n: int) -> tuple[object, dict[str, str]]:
    lake, _ = make(root, HashEmbedder())
    written = {}
    for i in range(n):
        rng = random.Random(i)  # words that do not compress away: ~2 KB of Parquet a row
        text = f"note {i} " + " ".join(f"{rng.getrandbits(40):x}" for _ in range(300))
        written[put(lake, text)] = text
    return lake, written


def test_a_merge_is_written_as_parts_of_their_own_id_ranges(tmp_path: Path) -> None:
    lake, written = _lake(tmp_path, 24)
    report = compact(lake, T, min_segments=2)
    segs = lake.snapshot(T).manifest.tables["episodes"]
    assert report.merged["episodes"] == 24
    assert len(segs) >= 2 and all(s.compacted for s in segs)
    assert all(s.bytes <= 2 * PART for s in segs)
    ranges = [(s.min_id, s.max_id) for s in segs]
    assert all(lo <= hi for lo, hi in ranges)
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # disjoint, in order
    assert sum(s.rows for s in segs) == 24
    assert readable(tmp_path, written) == set(written)
    # a cold lookup of one row reads one part, not the whole merge
    store = LatencyStore(LocalStore(tmp_path), LatencyModel(first_byte=0.0))
    view = fresh(tmp_path).snapshot(T).table("episodes")
    view._store = store  # the segments only
    one = next(iter(written))
    assert view.lookup([one])[one]["content"] == written[one]
    assert store.stats.counts["get"] == 1 and store.stats.bytes_read <= 2 * PART


def test_full_parts_are_not_merged_again(tmp_path: Path) -> None:
    lake, _ = _lake(tmp_path, 24)
    compact(lake, T, min_segments=2)
    full = [s.key for s in lake.snapshot(T).manifest.tables["episodes"] if s.bytes >= PART // 2]
    assert full
    put(lake, "one more note")
    put(lake, "and another")
    compact(lake, T, min_segments=2)
    keys = [s.key for s in lake.snapshot(T).manifest.tables["episodes"]]
    assert set(full) <= set(keys)


def test_repair_restores_two_damaged_parts_of_one_merge_from_its_inputs_once(
    tmp_path: Path,
) -> None:
    lake, written = _lake(tmp_path, 24)
    compact(lake, T, min_segments=2)
    parts = lake.snapshot(T).manifest.tables["episodes"]
    truncate(tmp_path / parts[0].key)
    truncate(tmp_path / parts[-1].key)
    lake2, ctx2 = make(tmp_path, HashEmbedder())
    done = repair_tenant(lake2, ctx2.services.search, T, apply=True)
    assert done.rows_lost == 0
    keys = [s.key for s in lake2.snapshot(T).manifest.tables["episodes"]]
    assert len(keys) == len(set(keys))  # the inputs once, not once a damaged part
    assert check_tenant(lake2.store, T).clean
    assert readable(tmp_path, written) == set(written)


def test_a_segment_compacted_whole_before_is_cut_into_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant compacted before merges were cut holds one big segment: the next compaction
    cuts it, alone, into parts (min_segments does not hold it back)."""
    lake, written = _lake(tmp_path, 24)
    monkeypatch.setattr(compaction, "SEGMENT_BYTES", 1 << 30)  # as before: one segment
    compact(lake, T, min_segments=2)
    assert len(lake.snapshot(T).manifest.tables["episodes"]) == 1
    whole = lake.snapshot(T).manifest.tables["episodes"][0].bytes
    part = whole // 6  # the whole segment: past OVERSIZED_PARTS parts
    monkeypatch.setattr(compaction, "SEGMENT_BYTES", part)
    report = compact(lake, T, min_segments=8)
    segs = lake.snapshot(T).manifest.tables["episodes"]
    assert report.merged["episodes"] == 1 and len(segs) >= 3
    assert all(s.bytes <= 2 * part for s in segs)
    assert readable(tmp_path, written) == set(written)
    again = compact(lake, T, min_segments=8)  # its parts are not cut again
    assert "episodes" not in again.merged
