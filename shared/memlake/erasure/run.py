"""The erasure pass: what maintenance runs for a tenant before GC (memlake.maintenance).

1. The pending requests (memlake.erasure.requests) are gathered into one set of targets.
2. The segments and shards of the newest manifest that hold them are rewritten without them
   and swapped in by one compare-and-swap commit (memlake.erasure.rewrite); a swap that finds
   an object replaced meanwhile is planned again on the newer snapshot.
3. The history is cut at the newest version (memlake.lake.gc.cut_history): every object only
   older manifests named is deleted now, and those manifests become markers that name
   nothing; objects no manifest names that hold a target are deleted too.
4. This process's caches let go of the removed objects (memory and MEMLAKE_SHARD_CACHE_DIR);
   other processes drop theirs when they see the manifest's erasure epoch grow.
5. The requests become receipts, in one commit.

Each step is safe to stop after: the next pass finds the requests still pending and finishes
(a rewrite already swapped in finds nothing to rewrite; the cut finds what is left).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memlake.erasure import requests, rewrite
from memlake.erasure.holds import held
from memlake.erasure.rules import Targets
from memlake.lake import Lake, Transaction
from memlake.lake.gc import cut_history
from memlake.lake.retry import retried

log = logging.getLogger("memlake.erasure")
#: plans made again when a compaction or merge replaced an object between plan and swap
PLAN_ATTEMPTS = 3
#: how far the store's clock (objects' times) may be behind the server's (rows' created_at):
#: history this much older than the oldest target is cut too
CLOCK_MARGIN = timedelta(hours=1)


@dataclass
class ErasureReport:
    erased: int = 0  # requests turned into receipts
    pending: int = 0  # requests left for the next pass (a swap that kept losing, a failure)
    rows: int = 0  # rows dropped or scrubbed
    rewritten: int = 0  # objects of the newest manifest rewritten without the targets
    removed: int = 0  # objects deleted at once (the old ones, the history's, lost races')
    manifests_cut: int = 0
    seconds: float = 0.0


def targets_of(pending: list[requests.Request]) -> Targets:
    out = Targets()
    for req in pending:
        kind = out.episodes if req.kind == "episode" else out.threads
        kind[req.id] = max(kind.get(req.id, 0), req.requested_seq)
    return out


def history_start(pending: list[requests.Request]) -> datetime | None:
    """When the oldest target was first written, less CLOCK_MARGIN (the store's clock stamps
    the objects, the server's the rows); None when one does not say: all history is cut."""
    times = [min(r.target_created_at, r.requested_at) for r in pending if r.target_created_at]
    if len(times) < len(pending):
        return None
    return min(times) - CLOCK_MARGIN


def erase_pending(
    lake: Lake, tenant: str, *, forget: Callable[[list[str]], None] | None = None
) -> ErasureReport:
    """Finish every pending erasure of the tenant (see the module). `forget` is told the keys
    of the objects removed (the searcher's caches)."""
    report = ErasureReport()
    snap = lake.snapshot(tenant)
    pending = retried(lambda: requests.pending(snap))
    if not pending:
        return report
    t0 = time.monotonic()
    targets = targets_of(pending)
    held_by: dict[str, set[str]] = {}
    for _ in range(PLAN_ATTEMPTS):
        plan = rewrite.plan(lake, snap, targets)
        if not plan:
            break
        if retried(lambda: rewrite.swap(lake, tenant, plan)) is not None:  # noqa: B023
            report.rows += plan.rows_erased
            report.rewritten += len(plan.replaced())
            for target, keys in plan.held_by.items():
                held_by.setdefault(target, set()).update(keys)
            break
        snap = lake.snapshot(tenant)  # replaced meanwhile: plan again (the new objects: GC's)
    else:
        report.pending = len(pending)
        log.warning("tenant %s: erasure lost its swap %d times", tenant, PLAN_ATTEMPTS)
        return report
    latest = lake.snapshot(tenant)
    cut = retried(
        lambda: cut_history(
            lake,
            tenant,
            latest.version,
            after=history_start(pending),
            holds=lambda key: bool(retried(lambda: held(lake.store, key, targets))),
        )
    )
    removed = cut.removed + cut.removed_orphans
    report.removed, report.manifests_cut = len(removed), cut.cut_manifests
    if forget is not None and removed:
        forget(removed)
    lake.cache.retire(removed)
    if not cut.complete:  # a delete the store failed: the next pass finishes
        report.pending = len(pending)
        return report

    def receipts(txn: Transaction) -> None:
        still = [r for r in pending if requests.still_pending(txn, r)]  # not asked again since
        requests.mark_erased(
            txn, still, latest.version, held_by, len(removed), history_from=cut.first_cut
        )

    lake.commit(tenant, receipts)
    report.erased = len(pending)
    report.seconds = time.monotonic() - t0
    log.info(
        "tenant %s: erased %d (%d rows, %d objects rewritten, %d removed) in %.2f s",
        tenant,
        report.erased,
        report.rows,
        report.rewritten,
        report.removed,
        report.seconds,
    )
    return report
