"""`memlake check --erased`: that no object of a tenant holds what its receipts say was erased.

Every object is read and decoded (memlake.erasure.holds): a segment must hold no row of an
erased episode or thread (by id and commit version: tombstones, receipts and the audit's ids
are kept by design), a shard no doc of an erased episode (so neither its terms nor its
vectors: a shard is built from its docs only). The history must be cut: every manifest in the
range a receipt names (from the first written after its target, up to the pass's version) is a
marker, and none of the objects a receipt lists as rewritten is still stored. Requests not
erased yet are listed: the next maintenance pass finishes them (`memlake maintain`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memlake.erasure import requests
from memlake.erasure.holds import held
from memlake.erasure.rules import Targets
from memlake.lake import Lake, keys
from memlake.lake.manifest_log import CUT_MARKER


@dataclass
class ErasedReport:
    tenant: str
    erased: int = 0  # receipts checked
    pending: list[str] = field(default_factory=list)  # requested, not erased yet
    objects_checked: int = 0
    #: what still holds an erased target: "<key>: <ids>"
    found: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.found and not self.pending

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean}


def verify_erased(lake: Lake, tenant: str) -> ErasedReport:
    report = ErasedReport(tenant)
    snap = lake.snapshot(tenant)
    receipts = requests.receipts(snap)
    report.erased = len(receipts)
    report.pending = [r.id for r in requests.pending(snap)]
    if not receipts:
        return report
    targets = Targets()
    for r in receipts:  # each erased up to its delete's version
        kind = targets.threads if r.kind == "thread" else targets.episodes
        kind[r.id] = max(kind.get(r.id, 0), r.requested_seq)
    cut_ranges = [(r.history_from, r.erased_version) for r in receipts]
    rewritten = {key for r in receipts for key in r.rewritten}
    for obj in lake.store.list(keys.tenant_prefix(tenant)):
        report.objects_checked += 1
        version = keys.version_of_manifest_key(obj.key) if "/manifest/" in obj.key else None
        if version is not None:
            cut = next(((a, b) for a, b in cut_ranges if a <= version < b), None)
            if cut is not None and lake.store.get(obj.key) != CUT_MARKER:
                report.found.append(f"{obj.key}: a manifest the cut of [{cut[0]}, {cut[1]}) kept")
            continue
        if obj.key in rewritten:
            report.found.append(f"{obj.key}: an object an erasure replaced is still stored")
            continue
        ids = held(lake.store, obj.key, targets)
        if ids:
            report.found.append(f"{obj.key}: {', '.join(sorted(ids))}")
    return report
