"""What `memlake import-chats PATH` prints (memlake.importers does the work).

Progress goes to stderr on a terminal (conversations, messages, MB read, rate, ETA); the summary
to stdout, or as one JSON object with --json. Exit codes: 0 when everything readable was
imported or already there, 1 when something was skipped for an error (each named with where
and why), 2 for a bad setting (memlake.cli), 130 when interrupted (Ctrl-C: the committed
batches stay, and the same command continues).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from memlake.commands import settings_for
from memlake.errors import InvalidArgument
from memlake.ids import check_tenant

if TYPE_CHECKING:  # the importers (pyarrow, ijson) load when the command runs, not with the CLI
    from memlake.importers.pipeline import ImportReport
    from memlake.importers.sources import Meter

#: problems printed in the summary; --json lists them all
SHOWN_PROBLEMS = 20
#: the segment and shard caches of an import: the 1 GiB defaults grew a 10,000-conversation
#: import to ~780 MB resident (issue 46's target: under 500 MB)
IMPORT_CACHE_BYTES = 32 << 20


class _Line:
    """The progress line, redrawn at most every 0.2 s, on a terminal only."""

    def __init__(self, meter: Meter, stream: IO[str]) -> None:
        self.meter, self.stream = meter, stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.started = self._drawn = time.monotonic()

    def __call__(self, report: ImportReport) -> None:
        if not self.tty or time.monotonic() - self._drawn < 0.2:
            return
        self._drawn = time.monotonic()
        elapsed = max(self._drawn - self.started, 1e-6)
        done, total = self.meter.done, max(self.meter.total, 1)
        rate = report.conversations / elapsed
        eta = (total - done) / (done / elapsed) if done else 0.0
        self.stream.write(
            f"\rimport-chats: {report.conversations:,} conversations,"
            f" {report.messages:,} messages, {done / 1e6:.1f}/{total / 1e6:.1f} MB,"
            f" {rate:,.0f}/s, ETA {eta:,.0f} s   "
        )
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def _summary(report: ImportReport, tenant: str, seconds: float) -> str:
    verb = "would import" if report.dry_run else "imported"
    concepts = f", {report.concepts:,} concepts" if report.concepts else ""
    lines = [
        f"tenant {tenant}: {verb} {report.imported:,} conversations, updated {report.updated:,},"
        f" {report.unchanged:,} already there, {report.empty:,} empty;"
        f" {report.messages:,} messages{concepts}"
        f" in {report.commits:,} commits ({seconds:.1f} s)"
    ]
    if report.problems:
        lines.append(f"unreadable ({len(report.problems)}):")
        lines += [f"  {p.where}: {p.reason}" for p in report.problems[:SHOWN_PROBLEMS]]
        if len(report.problems) > SHOWN_PROBLEMS:
            lines.append(
                f"  ... and {len(report.problems) - SHOWN_PROBLEMS} more (--json lists all)"
            )
    if not report.dry_run and (report.imported or report.updated):
        lines.append("searchable by words now; vectors follow in maintenance (memlake maintain)")
    return "\n".join(lines)


def run_import_chats(args: argparse.Namespace) -> int:
    from memlake.importers.pipeline import Importer, Options
    from memlake.importers.sources import Meter, read_path
    from memlake.models import CONTEXT_PATTERN
    from memlake.services import Services

    tenant = check_tenant(args.tenant)
    if args.context is not None and not CONTEXT_PATTERN.match(args.context.strip()):
        raise InvalidArgument(f"--context {args.context[:60]!r}: 1-128 characters, one line")
    # an import embeds nothing itself: every passage is left to the deferred pass (4601, 4702);
    # it reads back little of what it writes, so small caches bound its memory (4601)
    cfg = settings_for(args, create=True)
    cfg = replace(
        cfg,
        embed_sync_passages=0,
        cache_bytes=min(cfg.cache_bytes, IMPORT_CACHE_BYTES),
        shard_cache_bytes=min(cfg.shard_cache_bytes, IMPORT_CACHE_BYTES),
    )
    services = Services.build(cfg)
    meter = Meter()
    line = _Line(meter, sys.stderr)
    options = Options(
        context=args.context.strip() if args.context else None,
        default_context=cfg.default_context,
        dry_run=args.dry_run,
        content_limit=cfg.max_content_bytes,
    )
    started = time.monotonic()
    importer = Importer(services.lake, tenant, options, line)
    interrupted = False
    try:
        importer.run(read_path(Path(args.path), meter))
    except KeyboardInterrupt:  # Ctrl-C: the batches committed stay, the next run skips them
        interrupted = True
    finally:
        line.close()
    report = importer.report
    if args.json:
        print(json.dumps({"tenant": tenant, **report.to_dict(), "interrupted": interrupted}))
    else:
        print(_summary(report, tenant, time.monotonic() - started))
    if interrupted:
        print("memlake: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    return 1 if report.problems else 0
