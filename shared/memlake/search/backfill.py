"""The deferred embedding pass: vectors for the passages that writes left pending.

A write embeds at most Settings.embed_sync_passages passages of an episode; the search layout
in the manifest counts what is left per episode (`pending`, memlake.search.index.layout). This pass,
run by maintenance (the local server's background thread and the scheduled maintenance Lambda,
memlake.maintenance), takes pending episodes oldest first, embeds their next passages outside
any lock, and commits the longer chunks row of one episode per commit. The commit is a normal
conditional commit whose change re-checks, against the newest snapshot of every attempt, that
the episode is live with the same text and that its chunks row is still the one the new
vectors extend; otherwise it stages nothing (a deleted episode stays deleted, a rewritten one
was planned by its own write, a concurrent pass already did the work). The commit hook then
rebuilds the shard holding the episode (memlake.search.indexing).

Bounded per run (`max_passages`, an optional monotonic `deadline`) and idempotent: a run that
finds nothing pending reads only the manifest. Each run also rebuilds up to UPGRADES_PER_RUN
index shards written in an older object format (`upgrade_shards`; no re-embedding).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from memlake.episodes import TABLE
from memlake.lake import Lake, Snapshot, Transaction
from memlake.search.index import layout
from memlake.search.index.chunks import CHUNKS_TABLE
from memlake.search.index.passages import Embedded, embed_passages, passage_texts, plan
from memlake.search.index.state import EXTRA_KEY, SearchState
from memlake.search.searcher import Searcher

log = logging.getLogger("memlake.search.backfill")
UPGRADES_PER_RUN = 8  # older-format shards rebuilt per maintenance run (one commit each)


@dataclass
class BackfillReport:
    passages: int = 0  # embedded by this run
    commits: int = 0
    left: int = 0  # passages still pending in the tenants it went through
    upgraded: int = 0  # shards rebuilt from an older object format


def upgrade_shards(lake: Lake, searcher: Searcher, tenant: str, *, max_shards: int) -> int:
    """Rebuild up to `max_shards` index shards of an older object format (format 1: no
    passage postings) in the current one, one per commit: re-tokenised from the stored episode
    rows and passages, vectors kept (nothing is re-embedded). Returns how many were rebuilt."""
    from memlake.search.indexing import Indexer

    indexer = Indexer(searcher)
    done = 0
    while done < max_shards:
        state = SearchState.from_extra(lake.snapshot(tenant).extra)
        if state is None or not any(layout.outdated(s) for s in state.shards):
            return done

        def change(txn: Transaction) -> bool:
            current = SearchState.from_extra(txn.extra)
            if current is None or not any(layout.outdated(s) for s in current.shards):
                return False
            snap = txn.snapshot
            writer = layout.Layout(
                searcher.shards,
                lake.store,
                tenant,
                snap.version,
                searcher.embedder.name,
                rows=lambda ids: indexer.stored_rows(snap, ids),
            )
            txn.extra[EXTRA_KEY] = writer.upgrade(current, 1).to_json()
            return True

        if not lake.commit(tenant, change):
            return done
        done += 1
    return done


def pending_map(extra: dict[str, Any]) -> dict[str, int]:
    doc = extra.get(EXTRA_KEY) or {}
    return {str(k): int(v) for k, v in (doc.get("pending") or {}).items()}


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _chunks_row(snap: Snapshot, episode_id: str) -> tuple[dict[str, Any] | None, int | None]:
    """(row, commit version) of an episode's live chunks row, or (None, None). Reads only the
    segments whose id range holds it (TableView.find) instead of indexing the whole table (a
    cold maintenance Lambda would otherwise read every vector of the tenant)."""
    found = snap.table(CHUNKS_TABLE).find(episode_id)
    if found is None or not found[0].is_live:
        return None, None
    return found[1], found[0].seq


def _forget(lake: Lake, tenant: str, episode_id: str) -> bool:
    """Drop the pending entry of an episode that is not live (written by a lake without hooks)."""

    def change(txn: Transaction) -> bool:
        if txn.exists(TABLE, episode_id):
            return False
        pending = (txn.extra.get(EXTRA_KEY) or {}).get("pending") or {}
        return pending.pop(episode_id, None) is not None

    return bool(lake.commit(tenant, change))


def _step(
    lake: Lake, svc: Searcher, tenant: str, snap: Snapshot, episode_id: str, n: int
) -> int | None:
    """Embed up to `n` more passages of one episode and commit them; the number embedded, or
    None when nothing was committed (the episode or its vectors changed meanwhile)."""
    row = snap.table(TABLE).get(episode_id)
    if row is None:
        return 0 if _forget(lake, tenant, episode_id) else None
    emb, model = svc.embedder, svc.embedder.name
    h = svc.content_hash(row)
    stored, planned = _chunks_row(snap, episode_id)
    base: Embedded | None = None
    if stored is not None and stored.get("model") == model and stored["content_hash"] == h:
        base = Embedded.from_row(stored, emb.dim)
    if base is None:  # vectors of another text or model: plan it afresh
        base = embed_passages(h, plan(row, emb), emb, 0)
    done = len(base.vectors)
    texts = passage_texts(row, base)[done : done + n]
    full = base.extended(emb.embed(texts)) if texts else base

    def change(txn: Transaction) -> bool:
        current = txn.get(TABLE, episode_id)
        if current is None or svc.content_hash(current) != h:
            return False  # deleted, or rewritten (its own write planned the new text)
        if episode_id in dict(txn.staged_rows(CHUNKS_TABLE)):
            return False
        if _chunks_row(txn.snapshot, episode_id)[1] != planned:
            return False  # another pass or a writer changed the vectors since we read them
        txn.put(CHUNKS_TABLE, full.row(episode_id, model))
        return True

    return len(texts) if lake.commit(tenant, change) else None


def embed_pending(
    lake: Lake,
    searcher: Searcher,
    tenant: str,
    *,
    max_passages: int,
    batch: int | None = None,
    deadline: float | None = None,
) -> BackfillReport:
    """Embed up to `max_passages` pending passages of a tenant, `batch` (default
    Settings.embed_batch_passages) per commit, oldest episode first; stops at `deadline`
    (time.monotonic()). A lake whose commits do not index (searcher.indexing) has nothing to do."""
    report = BackfillReport()
    svc = searcher
    if not svc.indexing:
        return report
    report.upgraded = upgrade_shards(lake, svc, tenant, max_shards=UPGRADES_PER_RUN)
    step = batch or svc.settings.embed_batch_passages
    left, skipped = max_passages, set()
    while True:
        snap = lake.snapshot(tenant)
        todo = sorted(e for e in pending_map(snap.extra) if e not in skipped)  # time-sortable
        if not todo or left <= 0 or _past(deadline):
            report.left = sum(pending_map(snap.extra).values())
            return report
        try:
            done = _step(lake, svc, tenant, snap, todo[0], min(left, step))
        except Exception:  # one episode that cannot be embedded must not block all the others
            log.exception("embedding the pending passages of episode %s failed", todo[0])
            skipped.add(todo[0])
            continue
        if done is None:
            skipped.add(todo[0])  # changed under us: the next run sees the new state
            continue
        report.passages += done
        report.commits += 1
        left -= max(done, 1)
