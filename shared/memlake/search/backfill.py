"""The deferred embedding pass: vectors for the passages that writes left pending.

A write embeds at most Settings.embed_sync_passages passages of an episode; the
`vector_backlog` table lists the episodes with passages left (memlake.search.index.backlog).
This pass, run by maintenance (the local server's background thread and the scheduled
maintenance Lambda, memlake.maintenance), takes pending episodes oldest first, embeds their next
passages outside any lock (up to `batch` passages over as many episodes as fit, in one embedding
call), and commits their longer chunks rows in one commit. The commit is a normal conditional
commit whose change re-checks, against the newest snapshot of every attempt, that each episode
is live with the same text and that its chunks row is still the one the new vectors extend;
otherwise it leaves that episode out (a deleted episode stays deleted, a rewritten one was
planned by its own write, a concurrent pass already did the work). The index takes the new
vectors after the embedding, in batches (memlake.search.catchup): a step rebuilds no shard.

Bounded per run (`max_passages`, an optional monotonic `deadline`) and idempotent: a run that
finds nothing pending reads only the manifest (and the backlog table's few rows, if any). Each
run also rebuilds up to UPGRADES_PER_RUN index shards written in an older object format
(`upgrade_shards`; no re-embedding).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memlake.episodes import TABLE
from memlake.lake import Lake, Snapshot, Transaction
from memlake.search.catchup import CatchUpReport, catch_up
from memlake.search.index import backlog, layout
from memlake.search.index.backlog import Backlog
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
    indexed: CatchUpReport = field(default_factory=CatchUpReport)  # vectors the index took


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
            writer = indexer.writer(txn.snapshot, lake.store, tenant, txn.snapshot.version)
            txn.extra[EXTRA_KEY] = writer.upgrade(current, 1).to_json()
            return True

        if not lake.commit(tenant, change):
            return done
        done += 1
    return done


def _adopt_legacy(lake: Lake, svc: Searcher, tenant: str) -> None:
    """Move a state's `pending` map (written before the vector_backlog table) into the table:
    the index of those episodes holds every vector their chunks rows store (the old pass
    rebuilt the shard at each step)."""

    def change(txn: Transaction) -> bool:
        doc = txn.extra.get(EXTRA_KEY) or {}
        if not doc.get("pending"):
            return False
        for episode_id in doc.pop("pending"):
            row, chunks = txn.get(TABLE, episode_id), txn.find(CHUNKS_TABLE, episode_id)
            if row is None or chunks is None or chunks.get("model") != svc.embedder.name:
                continue
            if chunks.get("content_hash") == svc.content_hash(row):
                emb = Embedded.from_row(chunks, svc.embedder.dim)
                backlog.record(txn, episode_id, Backlog.of(episode_id, emb))
        return True

    if backlog.legacy_pending(lake.snapshot(tenant).extra):
        lake.commit(tenant, change)


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
    """Drop the backlog entry of an episode that is not live (deleted by a lake without hooks)."""

    def change(txn: Transaction) -> bool:
        if txn.exists(TABLE, episode_id) or backlog.current(txn, episode_id) is None:
            return False
        backlog.record(txn, episode_id, None)
        return True

    return bool(lake.commit(tenant, change))


@dataclass
class _Step:
    """The next passages of one episode to embed, read from one snapshot."""

    episode_id: str
    content_hash: str
    base: Embedded  # its stored vectors (none for another text or model)
    planned: int | None  # the commit version of the chunks row read (None: none)
    texts: list[str]


def _plan(svc: Searcher, snap: Snapshot, episode_id: str, n: int) -> _Step | None:
    """Up to `n` next passages of a live episode (None when it is not live)."""
    row = snap.table(TABLE).get(episode_id)
    if row is None:
        return None
    emb, model = svc.embedder, svc.embedder.name
    h = svc.content_hash(row)
    stored, planned = _chunks_row(snap, episode_id)
    base: Embedded | None = None
    if stored is not None and stored.get("model") == model and stored["content_hash"] == h:
        base = Embedded.from_row(stored, emb.dim)
    if base is None:  # vectors of another text or model: plan it afresh
        base = embed_passages(h, plan(row, emb), emb, 0)
    done = len(base.vectors)
    return _Step(episode_id, h, base, planned, passage_texts(row, base)[done : done + n])


def _embed(svc: Searcher, steps: list[_Step]) -> list[tuple[_Step, Embedded]]:
    """The steps' longer vectors, in one embedding call; when it fails, one call per episode,
    so that an episode that cannot be embedded does not block the others (logged, left out)."""
    texts = [t for s in steps for t in s.texts]
    try:
        vectors = svc.embedder.embed(texts) if texts else np.zeros((0, svc.embedder.dim))
    except Exception:
        if len(steps) == 1:
            raise
        out = []
        for one in steps:
            try:
                out.extend(_embed(svc, [one]))
            except Exception:
                log.exception("embedding the pending passages of episode %s failed", one.episode_id)
        return out
    out, at = [], 0
    for s in steps:
        more = vectors[at : at + len(s.texts)]
        at += len(s.texts)
        out.append((s, s.base.extended(more) if s.texts else s.base))
    return out


def _commit(lake: Lake, svc: Searcher, tenant: str, done: list[tuple[_Step, Embedded]]) -> set[str]:
    """Commit the longer chunks rows of several episodes at once; the ids committed. The change
    re-checks each episode against the newest snapshot of every attempt and leaves out one that
    was deleted, rewritten, or whose vectors another pass or a writer changed meanwhile."""
    model = svc.embedder.name
    committed: set[str] = set()

    def change(txn: Transaction) -> bool:
        committed.clear()
        for step, full in done:
            current = txn.get(TABLE, step.episode_id)
            if current is None or svc.content_hash(current) != step.content_hash:
                continue  # deleted, or rewritten (its own write planned the new text)
            if _chunks_row(txn.snapshot, step.episode_id)[1] != step.planned:
                continue  # another pass or a writer changed the vectors since we read them
            txn.put(CHUNKS_TABLE, full.row(step.episode_id, model))
            entry = backlog.current(txn, step.episode_id)
            ok = entry is not None and entry.content_hash == step.content_hash
            # the index takes the new vectors later, with others (memlake.search.catchup)
            entry_now = Backlog.of(step.episode_id, full, entry.indexed if ok and entry else 0)
            backlog.record(txn, step.episode_id, entry_now)
            committed.add(step.episode_id)
        return bool(committed)

    lake.commit(tenant, change)
    return committed


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
    _adopt_legacy(lake, svc, tenant)
    step = batch or svc.settings.embed_batch_passages
    left, skipped = max_passages, set()
    while True:
        snap = lake.snapshot(tenant)
        entries = backlog.read_all(snap)  # oldest episode first
        todo = [e.id for e in entries if e.unembedded > 0 and e.id not in skipped]
        if not todo or left <= 0 or _past(deadline):
            report.indexed = catch_up(lake, svc, tenant, deadline=deadline)
            report.left = sum(backlog.pending_map(lake.snapshot(tenant)).values())
            return report
        budget, steps = min(left, step), []
        for episode_id in todo:
            if budget <= 0:
                break
            try:
                planned = _plan(svc, snap, episode_id, budget)
            except Exception:  # one episode that cannot be planned must not block the others
                log.exception("planning the pending passages of episode %s failed", episode_id)
                skipped.add(episode_id)
                continue
            if planned is None:
                if not _forget(lake, tenant, episode_id):
                    skipped.add(episode_id)
                continue
            steps.append(planned)
            budget -= len(planned.texts)
        if not steps:
            continue
        done = _embed(svc, steps)
        committed = _commit(lake, svc, tenant, done) if done else set()
        skipped.update(s.episode_id for s in steps if s.episode_id not in committed)
        embedded = sum(len(s.texts) for s, _ in done if s.episode_id in committed)
        report.passages += embedded
        report.commits += bool(committed)
        left -= max(embedded, 1)
