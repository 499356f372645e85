"""Retention: maintenance deletes the episodes older than a tenant's limit, and the same pass
erases them (memlake.erasure.run). MEMLAKE_RETENTION_DAYS applies to every episode,
MEMLAKE_RETENTION_CONTEXT_DAYS (context -> days) to a context's, over the global one.

An episode's age is from when it happened: `started_at` when it has one, else `created_at`
(an imported conversation of two years ago is two years old). The delete is delete_episode's
change (its links, relationships and vectors go too, in the same commit) with the erasure
request marked `retention`. It runs in the passes that collect garbage (hourly on the local
tick, every scheduled or operator pass); the manifest's per-segment time statistics tell a
pass with nothing old enough without reading a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from memlake.episodes import TABLE
from memlake.erasure import requests
from memlake.lake import Lake, Transaction

#: episodes deleted per commit
BATCH = 500
EpisodeCleanup = Callable[[Transaction, str], None]


@dataclass(frozen=True)
class Retention:
    days: int = 0
    by_context: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return self.days > 0 or bool(self.by_context)

    def oldest_limit(self) -> int:
        return min([d for _, d in self.by_context] + ([self.days] if self.days else []))


def _may_expire(lake: Lake, tenant: str, cutoff: datetime) -> bool:
    """Whether some episodes segment holds a row from before `cutoff` by its statistics."""
    for seg in lake.snapshot(tenant).manifest.segments(TABLE):
        times = [seg.stats.get(c, {}).get("min") for c in ("started_at", "created_at")]
        known = [t for t in times if isinstance(t, str)]
        if known and min(known) < cutoff.isoformat():  # none: tombstones only
            return True
    return False


def _expired_ids(table: pa.Table, policy: Retention, now: datetime) -> list[str]:
    when = pc.coalesce(table.column("started_at"), table.column("created_at"))
    limits = dict(policy.by_context)
    contexts = table.column("context").to_pylist()
    times = when.to_pylist()
    out = []
    for episode_id, context, at in zip(
        table.column("id").to_pylist(), contexts, times, strict=True
    ):
        days = limits.get(context, policy.days) if context is not None else policy.days
        if days and at is not None and at < now - timedelta(days=days):
            out.append(episode_id)
    return out


def expire(
    lake: Lake,
    tenant: str,
    policy: Retention,
    cleanups: Iterable[EpisodeCleanup],
    *,
    now: datetime | None = None,
) -> int:
    """Delete the tenant's episodes past `policy` (their erasure requested); how many."""
    if not policy:
        return 0
    now = now or datetime.now(UTC)
    if not _may_expire(lake, tenant, now - timedelta(days=policy.oldest_limit())):
        return 0
    snap = lake.snapshot(tenant)
    live = snap.table(TABLE).live_table().select(["id", "started_at", "created_at", "context"])
    ids = _expired_ids(live, policy, now)
    cleanups = tuple(cleanups)
    for first in range(0, len(ids), BATCH):
        batch = ids[first : first + BATCH]

        def change(txn: Transaction, batch: list[str] = batch) -> None:
            for episode_id in batch:
                row = txn.get(TABLE, episode_id)
                if row is None:
                    continue
                txn.delete(TABLE, episode_id)
                for cleanup in cleanups:
                    cleanup(txn, episode_id)
                created = row.get("created_at")
                requests.request(txn, "episode", episode_id, created, reason="retention")

        lake.commit(tenant, change)
    return len(ids)
