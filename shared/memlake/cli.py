"""Command line: `memlake serve | stdio | compact | gc | export | import`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlake.config import Settings, parse_toolsets
from memlake.errors import ConfigurationError, MemlakeError, NotFound

if TYPE_CHECKING:
    from memlake.maintenance import MaintenancePolicy, TenantReport


def _settings(args: argparse.Namespace, *, create: bool = False) -> Settings:
    """The settings with --data applied; a local lake directory is checked first: it must
    exist (`create`: or be creatable) and be writable, else one line says what is wrong."""
    cfg = Settings.from_env()
    if getattr(args, "data", None):
        cfg = replace(cfg, data_dir=Path(args.data), store="local")
    if getattr(args, "toolsets", None) is not None:
        cfg = replace(cfg, toolsets=parse_toolsets(args.toolsets, source="--toolsets"))
    if cfg.store == "local":
        _check_data_dir(cfg.data_dir, create=create)
    return cfg


def _check_data_dir(path: Path, *, create: bool) -> None:
    if not path.exists() and not create:
        raise ConfigurationError(
            f"no lake at {path}: the data directory does not exist (check --data or"
            " MEMLAKE_DATA_DIR)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path, prefix=".tmp-probe-"):
            pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise ConfigurationError(f"cannot use data directory {path}: {reason}") from e


def _cmd_serve(args: argparse.Namespace) -> int:
    from memlake.mcp.server import serve

    serve(_settings(args, create=True), host=args.host, port=args.port)
    return 0


def _cmd_stdio(args: argparse.Namespace) -> int:
    from memlake.mcp.stdio import run_stdio

    return run_stdio(_settings(args, create=True), tenant=args.tenant)


def _operator_pass(
    args: argparse.Namespace, step: Callable[[MaintenancePolicy], MaintenancePolicy]
) -> tuple[TenantReport, MaintenancePolicy]:
    """One step of maintenance on one tenant: `step` picks it from the operator's policy
    (maintenance_policy "operator") and applies the command's flags."""
    from memlake.maintenance import maintain_tenant, maintenance_policy
    from memlake.services import Services
    from memlake.transfer import tenant_snapshot

    services = Services.build(_settings(args))
    tenant_snapshot(services.lake, args.tenant)  # a mistyped tenant is an error, not "nothing"
    policy = step(maintenance_policy(services.settings, "operator"))
    return maintain_tenant(services, args.tenant, policy), policy


def _cmd_compact(args: argparse.Namespace) -> int:
    from memlake.lake.compaction import CompactionReport

    done, policy = _operator_pass(
        args,
        lambda p: replace(p, merge_run=args.min_segments or p.merge_run, gc_grace_seconds=None),
    )
    report = done.compaction or CompactionReport()
    if args.json:
        print(json.dumps({"tenant": args.tenant, **asdict(report)}))
    elif report.version is None:
        print(
            f"tenant {args.tenant}: nothing to compact (no table has {policy.merge_run} or more"
            " small segments in a row)"
        )
    else:
        merged = ", ".join(f"{table} {n}" for table, n in sorted(report.merged.items()))
        print(
            f"tenant {args.tenant}: compacted {_count(len(report.merged), 'table')} into"
            f" version {report.version}; segments merged: {merged};"
            f" {_count(report.rows_written, 'row')} written, {report.rows_dropped} dropped"
        )
    return 0


def _cmd_gc(args: argparse.Namespace) -> int:
    from memlake.lake.gc import GcReport

    def gc_only(p: MaintenancePolicy) -> MaintenancePolicy:
        grace = p.gc_grace_seconds if args.grace_seconds is None else args.grace_seconds
        return replace(p, compact_at=0, gc_grace_seconds=grace)

    report = _operator_pass(args, gc_only)[0].gc or GcReport()
    if args.json:
        print(json.dumps({"tenant": args.tenant, **asdict(report)}))
    else:
        print(
            f"tenant {args.tenant}: deleted"
            f" {_count(report.deleted_objects, 'unreferenced object')},"
            f" {_count(report.deleted_manifests, 'old manifest')} and"
            f" {_count(report.deleted_temp_files, 'temporary file')};"
            f" kept {_count(report.kept_objects, 'object')}"
        )
    return 0


def _cmd_maintain(args: argparse.Namespace) -> int:
    from memlake.maintenance import maintenance_policy, run_maintenance
    from memlake.services import Services
    from memlake.transfer import tenant_snapshot

    services = Services.build(_settings(args))
    if args.tenant:
        tenant_snapshot(services.lake, args.tenant)
    policy = maintenance_policy(services.settings, "scheduled")
    tenants = [args.tenant] if args.tenant else None
    report = run_maintenance(services, policy, tenants=tenants)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        failed = f"; failed: {', '.join(report.failed)}" if report.failed else ""
        print(
            f"{_count(report.tenants, 'tenant')}: compacted"
            f" {_count(report.compacted_tables, 'table')}, embedded"
            f" {_count(report.passages_embedded, 'passage')} ({report.passages_pending} pending),"
            f" deleted {_count(report.deleted_objects, 'unreferenced object')} and"
            f" {_count(report.deleted_manifests, 'old manifest')}{failed}"
        )
    return 1 if report.failed else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cmd_export(args: argparse.Namespace) -> int:
    from memlake.services import Services
    from memlake.transfer import export_tenant, tenant_snapshot

    services = Services.build(_settings(args))
    vectors = not args.no_vectors
    if args.output:
        tenant_snapshot(services.lake, args.tenant)  # a mistyped tenant leaves no empty file
        with open(args.output, "wb") as out:
            counts = export_tenant(services.lake, args.tenant, out, vectors=vectors)
    else:
        counts = export_tenant(services.lake, args.tenant, sys.stdout.buffer, vectors=vectors)
        sys.stdout.flush()
    print("exported " + ", ".join(f"{t}: {n}" for t, n in counts.items()), file=sys.stderr)
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    import shutil

    from memlake.services import Services
    from memlake.transfer import import_tenant

    services = Services.build(_settings(args, create=True))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file)
        if args.file == "-":  # import reads the file twice (check, then commit): spool stdin
            path = Path(tmp, "stdin.jsonl")
            with path.open("wb") as fh:
                shutil.copyfileobj(sys.stdin.buffer, fh)
        report = import_tenant(
            services.lake,
            args.tenant,
            path,
            batch_size=args.batch_size,
            max_content_bytes=services.settings.max_content_bytes,
        )
    print(
        f"imported {report.rows} rows: {report.written} written, {report.unchanged} unchanged,"
        f" {report.commits} commits",
        file=sys.stderr,
    )
    return 0


_TOOLSETS_HELP = (
    "tools to offer, comma-separated: episodes, layers, graph, all"
    " (default: MEMLAKE_TOOLSETS, else all)"
)
_LAKE_HELP = "local lake directory (default: MEMLAKE_* settings, e.g. S3)"


def _command(
    sub: Any, name: str, func: Callable[[argparse.Namespace], int], summary: str, **tenant: Any
) -> argparse.ArgumentParser:
    """A subcommand with, unless tenant=None, a --tenant option (`tenant`: its settings)."""
    cmd: argparse.ArgumentParser = sub.add_parser(name, help=summary)
    cmd.set_defaults(func=func)
    if tenant.get("tenant", "") is not None:
        cmd.add_argument("--tenant", **{k: v for k, v in tenant.items() if k != "tenant"})
    return cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlake", description="Episodic memory over MCP")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = _command(
        sub, "serve", _cmd_serve, "serve MCP over HTTP at /mcp on a local lake", tenant=None
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--data", help="lake directory (default ./memlake-data)")
    serve.add_argument("--toolsets", help=_TOOLSETS_HELP)

    stdio = _command(
        sub,
        "stdio",
        _cmd_stdio,
        "speak MCP over stdin/stdout (Claude Desktop, Claude Code, Cursor)",
        default="default",
        help="whose memory (default: default)",
    )
    stdio.add_argument(
        "--data", help="lake directory, best absolute (default ./memlake-data, or S3 by MEMLAKE_*)"
    )
    stdio.add_argument("--toolsets", help=_TOOLSETS_HELP)

    comp = _command(
        sub, "compact", _cmd_compact, "merge small segments of a tenant", default="default"
    )
    comp.add_argument("--data")
    comp.add_argument("--min-segments", type=int, help="shortest run merged (default 2)")
    comp.add_argument("--json", action="store_true", help="print the report as JSON")

    gc = _command(sub, "gc", _cmd_gc, "remove objects no manifest references", default="default")
    gc.add_argument("--data")
    gc.add_argument("--grace-seconds", type=float, help="keep younger objects (default 900)")
    gc.add_argument("--json", action="store_true", help="print the report as JSON")

    maint = _command(
        sub,
        "maintain",
        _cmd_maintain,
        "what the scheduled maintenance function does: embed pending passages, compact, gc",
        help="only this tenant (default: every tenant in the lake)",
    )
    maint.add_argument("--data", help=_LAKE_HELP)
    maint.add_argument("--json", action="store_true", help="print the report as JSON")

    exp = _command(
        sub, "export", _cmd_export, "write a tenant's tables as JSON Lines (stdout)", required=True
    )
    exp.add_argument("--data", help=_LAKE_HELP)
    exp.add_argument("--output", "-o", help="write to this file instead of stdout")
    exp.add_argument(
        "--no-vectors",
        action="store_true",
        help="leave out search vectors (most of the size); import embeds those episodes again",
    )

    imp = _command(
        sub, "import", _cmd_import, "load a `memlake export` file into a tenant", required=True
    )
    imp.add_argument("file", help="JSON Lines file, or - for stdin")
    imp.add_argument("--data", help=_LAKE_HELP)
    imp.add_argument("--batch-size", type=int, default=500, help="rows per commit")
    return parser


def main(argv: list[str] | None = None) -> int:
    # numpy's thread pools read these when it is first imported (a command imports it later):
    # one thread each, unless the caller chose (a write, not a setting: config.py reads)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        logging.basicConfig(
            level=Settings.from_env().log_level,
            format="%(asctime)s %(levelname)s %(name)s %(message)s",
        )
        return int(args.func(args))
    except NotFound as e:  # e.g. export of a tenant the lake has no data for
        print(f"memlake: {e.message}", file=sys.stderr)
        return 1
    except MemlakeError as e:  # a bad setting, a port in use, an unusable data directory
        print(f"memlake: {e.message}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. --output in a directory that does not exist
        where = f": {e.filename}" if e.filename else ""
        print(f"memlake: {e.strerror or e}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
