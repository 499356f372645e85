"""Compaction: merge runs of small segments into one and drop rows that are dead.

A run is a contiguous stretch (in commit order) of small segments: fewer than `target_rows`
rows and under half of SEGMENT_BYTES. The merge keeps every row's commit seq in `_seq`, keeps
only the newest version of each id within the run, and drops tombstones when nothing older
than the run could still hold the id (the run starts at the first segment). It is written as
segments of about SEGMENT_BYTES each, in id order (so each holds its own id range): a cold
search reads its hits' segments whole, and one merged segment of a 10k-episode tenant was
11 MB read and decoded for ten rows (a cold search 300 -> 680 ms on the S3 model; decision
4401). The manifest swap is a conditional commit: if the consumed segments are no longer in
the newest manifest, that table's merge is abandoned (its objects become garbage for GC).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from memlake.lake.engine import Lake
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.lake.schema import TableSpec
from memlake.lake.segments import encode_table, write_segment
from memlake.lake.snapshot import Snapshot
from memlake.pools import STORE_IO


@dataclass
class CompactionReport:
    version: int | None = None
    merged: dict[str, int] = field(default_factory=dict)  # table -> segments consumed
    rows_written: int = 0
    rows_dropped: int = 0


#: Parquet bytes a compacted segment is cut at: a cold search's hit reads one whole and decodes
#: it (~6 ms for 512 KiB of chat), and a segment of at least half of it is not merged again.
#: 256 KiB since stop 52: three compactions of one 10k x 20 tenant, the same cold searches
#: alternating, 512 KiB parts 347 ms on the S3 model, 256 KiB 265, never compacted (~70 KB
#: segments) 244; the manifest holds a line a part (10k: 16 / 27 / 82 KB; decision 4401)
SEGMENT_BYTES = 256 << 10
#: a segment of more than this many parts' bytes is cut into parts by the next compaction
OVERSIZED_PARTS = 4


def _small(seg: SegmentRef, target_rows: int) -> bool:
    return seg.rows < target_rows and seg.bytes < SEGMENT_BYTES // 2


def _pick_run(segs: tuple[SegmentRef, ...], target_rows: int, min_segments: int) -> range | None:
    best: range | None = None
    start = None
    for i, seg in enumerate((*segs, None)):
        small = seg is not None and _small(seg, target_rows)
        if small and start is None:
            start = i
        elif not small and start is not None:
            if i - start >= min_segments and (best is None or i - start > len(best)):
                best = range(start, i)
            start = None
    return best


def _merge(snap: Snapshot, spec: TableSpec, run: range) -> tuple[pa.Table, int]:
    view = snap.table(spec.name)
    segs = view.segments
    parts = []
    for pos in run:
        t = view.segment_table(pos)
        seq = pc.fill_null(t.column("_seq"), pa.scalar(segs[pos].seq, pa.int64()))
        t = t.set_column(t.schema.get_field_index("_seq"), "_seq", seq)
        parts.append(
            t.append_column(
                "__order", pa.array([pos * (1 << 32) + r for r in range(t.num_rows)], pa.int64())
            )
        )
    merged = pa.concat_tables(parts)
    total = merged.num_rows
    # newest (seq, order) per id wins
    merged = merged.sort_by(
        [("id", "ascending"), ("_seq", "descending"), ("__order", "descending")]
    )
    ids = merged.column("id").to_pylist()
    keep = [i for i in range(len(ids)) if i == 0 or ids[i] != ids[i - 1]]
    merged = merged.take(pa.array(keep, pa.int64()))
    expired = spec.expired
    if expired is not None:  # expired rows become tombstones (then dropped like any tombstone)
        dead = pc.or_(merged.column("_deleted"), expired(merged))
        at = merged.schema.get_field_index("_deleted")
        merged = merged.set_column(at, pa.field("_deleted", pa.bool_(), nullable=False), dead)
    if run.start == 0:
        merged = merged.filter(pc.invert(merged.column("_deleted")))
    merged = merged.drop_columns(["__order"])
    return merged, total - merged.num_rows


#: rows encoded to learn what a row of a merge takes in Parquet (a small segment's own bytes a
#: row count its footer many times over: parts cut by them came out at a fraction of the size)
SAMPLE_ROWS = 256


def _oversized(segs: tuple[SegmentRef, ...]) -> range | None:
    """The first segment of many rows past OVERSIZED_PARTS parts' bytes (one a compaction
    wrote before it cut its merges, say: 11 MB at 10k episodes), as a run of its own: merged
    alone, it is written again as parts."""
    for i, seg in enumerate(segs):
        if seg.rows > 1 and seg.bytes > OVERSIZED_PARTS * SEGMENT_BYTES:
            return range(i, i + 1)
    return None


def _parts(merged: pa.Table) -> list[pa.Table]:
    """The merged rows (in id order) cut into about equal parts of about SEGMENT_BYTES each,
    by the Parquet bytes a row of a sample of them takes; at least one part (an empty merge
    is an empty segment)."""
    rows = merged.num_rows
    sample = merged.slice(0, SAMPLE_ROWS)
    per_row = len(encode_table(sample)) / max(1, sample.num_rows)
    per_part = max(1, int(SEGMENT_BYTES / per_row))
    count = max(1, -(-rows // per_part))
    size = -(-rows // count) if rows else 0
    return [merged.slice(at, size) for at in range(0, rows, size)] if rows else [merged]


def compact(
    lake: Lake, tenant: str, *, target_rows: int = 4096, min_segments: int = 8
) -> CompactionReport:
    report = CompactionReport()
    snap = lake.snapshot(tenant)
    plans: dict[str, tuple[tuple[str, ...], tuple[SegmentRef, ...]]] = {}
    for table, segs in snap.manifest.tables.items():
        run = _pick_run(segs, target_rows, min_segments) or _oversized(segs)
        if run is None:
            continue
        spec = lake.spec(table)
        merged, dropped = _merge(snap, spec, run)
        seq = max(segs[i].seq for i in run)

        def put(part: pa.Table, spec: TableSpec = spec, seq: int = seq) -> SegmentRef:
            ref = write_segment(lake.store, tenant, spec.name, part, spec.stat_columns)
            return replace(ref, seq=seq, compacted=True)

        refs = tuple(STORE_IO.get().map(put, _parts(merged)))
        plans[table] = (tuple(segs[i].key for i in run), refs)
        report.rows_written += merged.num_rows
        report.rows_dropped += dropped
        report.merged[table] = len(run)
    if not plans:
        return report

    def build(latest: Snapshot) -> Manifest | None:
        tables = dict(latest.manifest.tables)
        applied = 0
        for table, (consumed, refs) in plans.items():
            current = tables.get(table, ())
            keys_now = [s.key for s in current]
            try:
                at = keys_now.index(consumed[0])
            except ValueError:
                continue
            if tuple(keys_now[at : at + len(consumed)]) != consumed:
                continue
            tables[table] = current[:at] + refs + current[at + len(consumed) :]
            applied += 1
        if not applied:
            return None
        return latest.manifest.next(tables, latest.manifest.extra)

    manifest = lake.replace_segments(tenant, build)
    report.version = manifest.version if manifest is not None else None
    return report
