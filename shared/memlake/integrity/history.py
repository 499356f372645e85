"""What older manifests still hold: the inputs a damaged compacted segment was merged from.

Compaction replaces a run of segments of one table by one merged segment in a commit of its
own, so the version where a segment first appears, compared with the version before it, shows
what it replaced: when it is the only new segment of its table there and some segments went,
those are its inputs, with their own seqs, and listing them in its place reads the same rows.
An input that is itself damaged or collected is recovered the same way, further back. GC keeps
every manifest of its history window and every object they name (memlake.lake.gc), so this
reaches back as far as that window.
"""

from __future__ import annotations

from memlake.errors import CorruptObject, NotFound
from memlake.integrity.check import inspect_object
from memlake.lake import manifest_log
from memlake.lake.manifest import Manifest, SegmentRef
from memlake.store.base import ObjectStore


class History:
    """The stored manifests of one tenant, read on demand (versions `oldest`..`newest`)."""

    def __init__(self, store: ObjectStore, tenant: str, oldest: int, newest: int) -> None:
        self.store, self.tenant = store, tenant
        self.oldest, self.newest = oldest, newest
        self._manifests: dict[int, Manifest | None] = {}

    def manifest(self, version: int) -> Manifest | None:
        """That version, or None when it is damaged, missing or outside the history."""
        if not self.oldest <= version <= self.newest:
            return None
        if version not in self._manifests:
            try:
                found = manifest_log.load_manifest(self.store, self.tenant, version)
            except (CorruptObject, NotFound):
                found = None
            self._manifests[version] = found
        return self._manifests[version]

    def _holds(self, version: int, table: str, key: str) -> bool | None:
        m = self.manifest(version)
        return None if m is None else any(s.key == key for s in m.segments(table))

    def first_with(self, table: str, key: str, upto: int) -> int | None:
        """The first version that names `key` (which `upto` names): a segment stays named from
        the commit that adds it until one replaces it, so a binary search finds it, or a walk
        down from `upto` when a damaged version is in the way."""
        lo, hi = self.oldest, upto
        while lo < hi:
            mid = (lo + hi) // 2
            holds = self._holds(mid, table, key)
            if holds is None:
                return self._walk_down(table, key, upto)
            if holds:
                hi = mid
            else:
                lo = mid + 1
        return hi if self._holds(hi, table, key) else None

    def _walk_down(self, table: str, key: str, upto: int) -> int | None:
        first = None
        for version in range(upto, self.oldest - 1, -1):
            holds = self._holds(version, table, key)
            if not holds:
                return first if holds is False else None
            first = version
        return first

    def intact(self, ref: SegmentRef) -> bool:
        return not inspect_object(self.store, ref.key, "segment", ref.bytes, ref.sha256)[1]

    def inputs_of(self, table: str, ref: SegmentRef, upto: int) -> list[SegmentRef] | None:
        """Intact segments that hold what `ref` (named by version `upto`) held, or None when
        history cannot tell (a commit's own segment, a compaction older than the history)."""
        added = self.first_with(table, ref.key, upto)
        before = self.manifest(added - 1) if added else None
        after = self.manifest(added) if added else None
        if added is None or before is None or after is None:
            return None
        now_keys = {s.key for s in after.segments(table)}
        old_keys = {s.key for s in before.segments(table)}
        consumed = [s for s in before.segments(table) if s.key not in now_keys]
        produced = [s.key for s in after.segments(table) if s.key not in old_keys]
        if ref.key not in produced or not consumed:  # (a compaction writes one or more parts)
            return None
        out: list[SegmentRef] = []
        for seg in consumed:
            if self.intact(seg):
                out.append(seg)
                continue
            deeper = self.inputs_of(table, seg, added - 1)
            if deeper is None:
                return None
            out.extend(deeper)
        return out
