"""Compaction: merge runs of small segments into one and drop rows that are dead.

A run is a contiguous stretch (in commit order) of segments smaller than `target_rows`. The
merged segment keeps every row's commit seq in `_seq`, keeps only the newest version of each
id within the run, and drops tombstones when nothing older than the run could still hold the
id (the run starts at the first segment). The manifest swap is a conditional commit: if the
consumed segments are no longer in the newest manifest, that table's merge is abandoned (its
object becomes garbage for GC).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from memlake.lake.engine import Lake
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.lake.schema import TableSpec
from memlake.lake.segments import write_segment
from memlake.lake.snapshot import Snapshot


@dataclass
class CompactionReport:
    version: int | None = None
    merged: dict[str, int] = field(default_factory=dict)  # table -> segments consumed
    rows_written: int = 0
    rows_dropped: int = 0


def _pick_run(segs: tuple[SegmentRef, ...], target_rows: int, min_segments: int) -> range | None:
    best: range | None = None
    start = None
    for i, seg in enumerate((*segs, None)):
        small = seg is not None and seg.rows < target_rows
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


def compact(
    lake: Lake, tenant: str, *, target_rows: int = 4096, min_segments: int = 8
) -> CompactionReport:
    report = CompactionReport()
    snap = lake.snapshot(tenant)
    plans: dict[str, tuple[tuple[str, ...], SegmentRef]] = {}
    for table, segs in snap.manifest.tables.items():
        run = _pick_run(segs, target_rows, min_segments)
        if run is None:
            continue
        spec = lake.spec(table)
        merged, dropped = _merge(snap, spec, run)
        ref = write_segment(lake.store, tenant, table, merged, spec.stat_columns)
        ref = replace(ref, seq=max(segs[i].seq for i in run), compacted=True)
        plans[table] = (tuple(segs[i].key for i in run), ref)
        report.rows_written += merged.num_rows
        report.rows_dropped += dropped
        report.merged[table] = len(run)
    if not plans:
        return report

    def build(latest: Snapshot) -> Manifest | None:
        tables = dict(latest.manifest.tables)
        applied = 0
        for table, (consumed, ref) in plans.items():
            current = tables.get(table, ())
            keys_now = [s.key for s in current]
            try:
                at = keys_now.index(consumed[0])
            except ValueError:
                continue
            if tuple(keys_now[at : at + len(consumed)]) != consumed:
                continue
            tables[table] = current[:at] + (ref,) + current[at + len(consumed) :]
            applied += 1
        if not applied:
            return None
        return latest.manifest.next(tables, latest.manifest.extra)

    manifest = lake.replace_segments(tenant, build)
    report.version = manifest.version if manifest is not None else None
    return report
