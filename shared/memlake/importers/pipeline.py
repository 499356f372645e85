"""The import loop: conversations in, batched commits out, a report at the end.

Idempotent by construction: a conversation's thread and episode ids derive from its source and
id (records.identity), and its episode's metadata keeps the digest of the messages written, so
the same export twice commits nothing and a newer one writes only what changed. Several
conversations commit together (one manifest version per batch: a 10,000-conversation export
makes ~100 commits, not 10,000), each batch whole or not at all, so a crash or Ctrl-C leaves
complete conversations only, and the next run skips them. Nothing is embedded on the way: the
command's lake defers every passage (Settings.embed_sync_passages = 0) and maintenance embeds
them later (decisions 4601, 4702); BM25 finds the words from the commit on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlake.episodes import TABLE as EPISODES
from memlake.errors import CorruptObject
from memlake.importers import chatgpt, claude_ai, claude_code, memory_json, records, writer
from memlake.importers.model import Conversation, Problem
from memlake.importers.records import Prepared
from memlake.importers.writer import Known
from memlake.lake import Lake, Transaction
from memlake.timeutil import now

SOURCES = (chatgpt.SOURCE, claude_ai.SOURCE, claude_code.SOURCE, memory_json.SOURCE)
#: a batch commits at this many conversations or this many bytes of message text, whichever
#: comes first (bounds a commit's segment sizes and the memory a batch holds)
BATCH_CONVERSATIONS = 100
BATCH_BYTES = 8 * 1024 * 1024
_KNOWN_COLUMNS = ("id", "platform", "metadata", "_deleted", "_seq")


@dataclass
class ImportReport:
    conversations: int = 0  # read from the export (empty ones too)
    imported: int = 0  # new to the lake
    updated: int = 0  # held before, with new or changed messages (a new episode revision)
    unchanged: int = 0  # held before exactly so: skipped
    empty: int = 0  # no message to keep: skipped
    messages: int = 0  # thread messages written
    concepts: int = 0  # memory.json entities written as concepts
    commits: int = 0
    dry_run: bool = False
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "problems"}
        out["unreadable"] = [{"where": p.where, "reason": p.reason} for p in self.problems]
        return out


@dataclass(frozen=True)
class Options:
    context: str | None = None  # --context: every conversation's context
    default_context: str | None = None  # the server's, for conversations without their own
    dry_run: bool = False
    content_limit: int = 256 * 1024  # Settings.max_content_bytes
    batch_conversations: int = BATCH_CONVERSATIONS


def known_conversations(lake: Lake, tenant: str) -> dict[str, Known]:
    """Episode id -> what the lake holds, for every imported conversation. Segments are read one
    at a time and only their id, platform and metadata kept (latest version wins, as in the id
    index): the whole live table would hold every transcript at once (decision 4601)."""
    snap = lake.snapshot(tenant)
    if snap.version == 0 or EPISODES not in snap.manifest.tables:
        return {}
    view = snap.table(EPISODES)
    newest: dict[str, tuple[tuple[int, int, int], Known | None]] = {}
    for pos, ref in enumerate(view.segments):
        try:
            table = view.segment_table(pos)
        except CorruptObject:  # its conversations import again: a revision, not a loss
            continue
        columns = [table.column(c).to_pylist() for c in _KNOWN_COLUMNS]
        for row, (eid, platform, meta, dead, seq) in enumerate(zip(*columns, strict=True)):
            order = (ref.seq if seq is None else seq, pos, row)
            if eid not in newest or order >= newest[eid][0]:
                known = None if dead or platform not in SOURCES else writer.known_of(meta)
                newest[eid] = (order, known)
    return {eid: known for eid, (_, known) in newest.items() if known is not None}


class Importer:
    def __init__(
        self,
        lake: Lake,
        tenant: str,
        options: Options,
        on_progress: Callable[[ImportReport], None] | None = None,
    ) -> None:
        self.lake, self.tenant, self.options = lake, tenant, options
        self.report = ImportReport(dry_run=options.dry_run)
        self.known = known_conversations(lake, tenant)
        self.on_progress = on_progress or (lambda _r: None)
        self._batch: list[tuple[Prepared, Known | None]] = []
        self._bytes = 0

    def run(self, items: Iterable[Conversation | Problem | memory_json.Graph]) -> ImportReport:
        for item in items:
            if isinstance(item, Problem):
                self.report.problems.append(item)
            elif isinstance(item, memory_json.Graph):
                self._graph(item)
            else:
                self._add(item)
            self.on_progress(self.report)
        self._flush()
        return self.report

    def _add(self, conv: Conversation) -> None:
        self.report.conversations += 1
        p = records.prepare(conv)
        if not p.messages:
            self.report.empty += 1
            return
        eid = records.episode_id(p.key)
        known = self.known.get(eid)
        if known is not None and known.digest == p.digest:
            self.report.unchanged += 1
            return
        self.known[eid] = Known(p.digest, len(p.messages))  # a repeat later in the export
        self._batch.append((p, known))
        self._bytes += sum(len(m.text) for m in p.messages)
        if len(self._batch) >= self.options.batch_conversations or self._bytes >= BATCH_BYTES:
            self._flush()

    def _context(self, conv: Conversation) -> str | None:
        return self.options.context or conv.context or self.options.default_context

    def _stage(
        self, txn: Transaction, batch: list[tuple[Prepared, Known | None]], at: datetime
    ) -> None:
        for p, known in batch:
            times = records.times(p, at)
            fields = records.episode_fields(
                p, times, self._context(p.conversation), self.options.content_limit
            )
            if known is None or not writer.update(txn, p, known, fields, times, at):
                writer.create(txn, p, fields, times, at)

    def _flush(self) -> None:
        batch, self._batch, self._bytes = self._batch, [], 0
        if not batch:
            return
        if not self.options.dry_run:
            at = now()
            self.lake.commit(self.tenant, lambda txn: self._stage(txn, batch, at))
            self.report.commits += 1
        for p, known in batch:
            if known is None:
                self.report.imported += 1
                self.report.messages += len(p.messages)
            else:
                self.report.updated += 1
                grows = (
                    known.messages <= len(p.messages)
                    and p.prefix_digests[known.messages] == known.digest
                )
                self.report.messages += len(p.messages) - (known.messages if grows else 0)
        self.on_progress(self.report)

    def _graph(self, graph: memory_json.Graph) -> None:
        self._flush()
        known = {eid: k.digest for eid, k in self.known.items()}
        context = self.options.context or self.options.default_context
        counts = memory_json.write(
            self.lake, self.tenant, graph, known, self.options.dry_run, context
        )
        self.report.concepts += counts.concepts
        self.report.conversations += counts.entities
        self.report.imported += counts.written
        self.report.unchanged += counts.entities - counts.written
        self.report.commits += counts.commits
