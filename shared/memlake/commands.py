"""What the CLI's lake commands do (`memlake compact | gc | maintain | export | import`), and
the settings every command runs with (--data, --toolsets applied; a local lake directory
checked first). memlake.cli parses the arguments and calls these; each returns the exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlake.config import Settings
from memlake.config_values import parse_toolsets
from memlake.errors import ConfigurationError

if TYPE_CHECKING:
    from memlake.maintenance import MaintenancePolicy, TenantReport


def settings_for(args: argparse.Namespace, *, create: bool = False) -> Settings:
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


def _operator_pass(
    args: argparse.Namespace, step: Callable[[MaintenancePolicy], MaintenancePolicy]
) -> tuple[TenantReport, MaintenancePolicy]:
    """One step of maintenance on one tenant: `step` picks it from the operator's policy
    (maintenance_policy "operator") and applies the command's flags."""
    from memlake.maintenance import maintain_tenant, maintenance_policy
    from memlake.services import Services
    from memlake.transfer import tenant_snapshot

    services = Services.build(settings_for(args))
    tenant_snapshot(services.lake, args.tenant)  # a mistyped tenant is an error, not "nothing"
    policy = step(maintenance_policy(services.settings, "operator"))
    return maintain_tenant(services, args.tenant, policy), policy


def run_compact(args: argparse.Namespace) -> int:
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


def run_gc(args: argparse.Namespace) -> int:
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


def run_maintain(args: argparse.Namespace) -> int:
    from memlake.maintenance import maintenance_policy, run_maintenance
    from memlake.services import Services
    from memlake.transfer import tenant_snapshot

    services = Services.build(settings_for(args))
    if args.tenant:
        tenant_snapshot(services.lake, args.tenant)
    policy = maintenance_policy(services.settings, "scheduled")
    tenants = [args.tenant] if args.tenant else None
    report = run_maintenance(services, policy, tenants=tenants)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        failed = f"; failed: {', '.join(report.failed)}" if report.failed else ""
        runs = report.shard_merges
        merged = f" merged {_count(runs, 'run')} of index shards," if runs else ""
        print(
            f"{_count(report.tenants, 'tenant')}: compacted"
            f" {_count(report.compacted_tables, 'table')}, embedded"
            f" {_count(report.passages_embedded, 'passage')} ({report.passages_pending} pending),"
            f"{merged} deleted {_count(report.deleted_objects, 'unreferenced object')} and"
            f" {_count(report.deleted_manifests, 'old manifest')}{failed}"
        )
    return 1 if report.failed else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def run_export(args: argparse.Namespace) -> int:
    from memlake.services import Services
    from memlake.transfer import export_tenant, tenant_snapshot

    services = Services.build(settings_for(args))
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


def run_import(args: argparse.Namespace) -> int:
    import shutil

    from memlake.services import Services
    from memlake.transfer import import_tenant

    services = Services.build(settings_for(args, create=True))
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


def run_model(args: argparse.Namespace) -> int:
    """`memlake model where`: which embedding model the settings use and where its files are;
    `memlake model fetch`: download all-MiniLM-L6-v2 into the model cache (checked, resumable
    by running it again). memlake.embed.model_files has the order and the checksums."""
    from memlake.embed.model_files import fetch, find_model

    cfg = Settings.from_env()
    cache = Path(args.cache) if args.cache else cfg.model_cache
    if args.action == "fetch":
        shown: dict[str, int] = {}

        def progress(name: str, got: int, size: int) -> None:
            tenth = got * 10 // size
            if shown.get(name) != tenth:
                shown[name] = tenth
                print(f"{name}: {got >> 20} of {size >> 20} MB", file=sys.stderr)

        folder = fetch(cache, cfg.hf_endpoint, progress=progress)
        print(f"all-MiniLM-L6-v2 is in {folder} (checked against its pinned SHA-256)")
        return 0
    if cfg.embedder == "openai":
        print(f"{cfg.embed_model} ({cfg.embed_dimensions} dims) at {cfg.openai_base_url}")
        return 0
    if cfg.embedder == "bedrock":
        print(f"Amazon Bedrock {cfg.bedrock_model} ({cfg.bedrock_dimensions} dims)")
        return 0
    found = find_model(cfg.model_dir, cache, endpoint=cfg.hf_endpoint)  # never downloads
    print(f"all-MiniLM-L6-v2 from {found.origin}: {found.folder}")
    return 0


def run_reembed(args: argparse.Namespace) -> int:
    """`memlake reembed --tenant T --to DIR`: tenant T copied into the local lake DIR with its
    vectors computed by the model these settings name (its episodes exported without vectors,
    then imported, which embeds them: README "Models"). The source is only read. Run again
    after an interruption, it carries on: rows already in DIR are skipped, not re-embedded."""
    from memlake.services import Services
    from memlake.transfer import export_tenant, import_tenant, tenant_snapshot

    source = Services.build(settings_for(args))
    tenant_snapshot(source.lake, args.tenant)  # a mistyped tenant leaves no empty lake behind
    target = Path(args.to)
    if source.settings.store == "local" and target.resolve() == source.settings.data_dir.resolve():
        raise ConfigurationError(
            "--to must be another directory: a store holds the vectors of one model"
        )
    _check_data_dir(target, create=True)
    dest = Services.build(replace(source.settings, store="local", data_dir=target))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "tenant.jsonl")
        with path.open("wb") as out:
            export_tenant(source.lake, args.tenant, out, vectors=False)
        report = import_tenant(
            dest.lake,
            args.tenant,
            path,
            batch_size=args.batch_size,
            max_content_bytes=dest.settings.max_content_bytes,
        )
    left = _embed_all_pending(dest, args.tenant)
    print(
        f"tenant {args.tenant}: {_count(report.rows, 'row')} in {target}, vectors by"
        f" {dest.search.embedder.name}: {report.written} written, {report.unchanged} already there"
        + (f"; {_count(left, 'passage')} still to embed (memlake maintain)" if left else "")
    )
    return 0


def _embed_all_pending(services: Any, tenant: str) -> int:
    """The passages of long episodes that import's commits left pending, embedded now (the
    deferred pass, memlake.search.backfill, in rounds with progress on stderr); returns how
    many are left (an episode that cannot be embedded is left for maintenance)."""
    from memlake.search.backfill import embed_pending

    step = services.settings.embed_batch_passages
    while True:
        done = embed_pending(services.lake, services.search, tenant, max_passages=8 * step)
        if done.passages:
            print(f"embedded {done.passages} more passages, {done.left} left", file=sys.stderr)
        if not done.left or not done.passages:
            return int(done.left)


def run_warm_kernels(args: argparse.Namespace) -> int:
    """`memlake warm-kernels`: compile the search's numba kernels into the kernel cache (or
    load them from it) and mark it ready, so that no search compiles (decision 2502), for
    each CPU level of this architecture, in a process each (numba compiles for one CPU a
    process; decision 2507), or for `--level` / NUMBA_CPU_NAME's CPU alone. The image build and
    infra/setup.sh run it. Exit 1 when no level compiled: searches use numpy."""
    from memlake.config import kernel_settings
    from memlake.search.index import kernels

    chosen = kernel_settings()
    if args.cache_dir:
        chosen = replace(chosen, cache_dir=args.cache_dir)
    if not (args.level or chosen.cpu_name):
        return _warm_each_level(args, kernels.build_levels())
    try:
        got = kernels.warm(replace(chosen, cpu_name=args.level or chosen.cpu_name))
    except Exception as e:  # noqa: BLE001  (no numba, or it cannot compile here)
        print(f"memlake: no numba kernels ({type(e).__name__}: {e}); searches use numpy",
              file=sys.stderr)  # fmt: skip
        return 1
    print(json.dumps(got, indent=2 if args.json else None))
    return 0


def _warm_each_level(args: argparse.Namespace, levels: list[str]) -> int:
    """`warm-kernels --level L` in a child process for each level; their reports by level."""
    import subprocess

    reports: dict[str, Any] = {}
    for level in levels:
        command = [sys.executable, "-m", "memlake", "warm-kernels", "--level", level, "--json"]
        command += ["--cache-dir", args.cache_dir] if args.cache_dir else []
        child = subprocess.run(command, capture_output=True, text=True, check=False)
        sys.stderr.write(child.stderr)
        try:
            reports[level] = json.loads(child.stdout) if child.returncode == 0 else None
        except ValueError:  # (something else on its stdout: compiled, but no report)
            reports[level] = {"reason": "compiled; its report was not JSON"}
    print(json.dumps(reports, indent=2 if args.json else None))
    return 0 if any(reports.values()) else 1
