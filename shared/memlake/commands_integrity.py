"""What `memlake check` and `memlake repair` print (memlake.integrity does the work).

Exit codes: 0 clean (check), or repaired and clean (repair --apply); 1 damage found (check),
damage left (repair: a dry run always leaves it).
"""

from __future__ import annotations

import argparse
import json

from memlake.commands import settings_for
from memlake.errors import NotFound
from memlake.integrity.check import CheckReport, check_tenant
from memlake.store.base import ObjectStore


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _print_check(report: CheckReport) -> None:
    state = "clean" if report.clean else f"DAMAGED ({len(report.damage)} objects)"
    print(f"tenant {report.tenant}: {state}")
    for d in report.damage:
        where = f" (table {d.table}, {d.rows} rows)" if d.table else ""
        print(f"  {d.kind} {d.key}: {d.problem}{where}; {d.detail}")
    if report.readable_version < report.newest_version:
        print(
            f"  reads use manifest version {report.readable_version}; version"
            f" {report.newest_version} is damaged and writes are refused"
        )
    print(
        f"  checked {report.manifests_checked} manifests and {report.objects_checked} objects"
        f" ({_mb(report.bytes_checked)}); {report.unverified} without a recorded checksum"
    )
    if not report.clean:
        print(f"  next: memlake repair --tenant {report.tenant} (a dry run), then with --apply")


def run_check(args: argparse.Namespace) -> int:
    from memlake.maintenance import discover_tenants
    from memlake.services import make_store

    store = make_store(settings_for(args))
    tenants = [args.tenant] if args.tenant else discover_tenants(store)
    if not tenants:
        print("no tenants in this lake: nothing to check")
        return 0
    if getattr(args, "erased", False):
        return _check_erased(store, tenants, args)
    reports = [check_tenant(store, t) for t in tenants]
    for report in reports:
        if report.newest_version == 0:
            raise NotFound(f"tenant {report.tenant} has no data in this lake")
    if args.json:
        print(
            json.dumps([r.to_dict() for r in reports] if not args.tenant else reports[0].to_dict())
        )
    else:
        for report in reports:
            _print_check(report)
    return 0 if all(r.clean for r in reports) else 1


def run_repair(args: argparse.Namespace) -> int:
    from memlake.integrity.repair import repair_tenant
    from memlake.services import Services

    services = Services.build(settings_for(args))
    report = repair_tenant(services.lake, services.search, args.tenant, apply=args.apply)
    after = check_tenant(services.lake.store, args.tenant) if args.apply else report.check
    if report.check.newest_version == 0:
        raise NotFound(f"tenant {args.tenant} has no data in this lake")
    if args.json:
        print(json.dumps({**report.to_dict(), "clean_after": after.clean}))
        return 0 if after.clean else 1
    if report.check.clean:
        print(f"tenant {args.tenant}: clean, nothing to repair")
        return 0
    verb = "repaired" if args.apply else "would repair (dry run: nothing written)"
    print(f"tenant {args.tenant}: {verb}, from manifest version {report.base_version}")
    for step in report.steps:
        counts = ""
        if step.rows_recovered or step.rows_lost:
            counts = f" [{step.rows_recovered} rows recovered, {step.rows_lost} lost]"
        print(f"  {step.action} {step.key}: {step.detail}{counts}")
    if args.apply:
        print(
            f"  committed version {report.new_version}; report at {report.report_key};"
            f" check after: {'clean' if after.clean else 'still damaged'}"
        )
    else:
        print(
            f"  run again with --apply to commit it: memlake repair --tenant {args.tenant} --apply"
        )
    return 0 if after.clean else 1


def _check_erased(store: ObjectStore, tenants: list[str], args: argparse.Namespace) -> int:
    """`memlake check --erased`: every object decoded for what the receipts say is gone."""
    from memlake.erasure.verify import verify_erased
    from memlake.features import table_catalog
    from memlake.lake import Lake

    lake = Lake(store, tables=table_catalog())
    reports = [verify_erased(lake, t) for t in tenants]
    if args.json:
        docs = [r.to_dict() for r in reports]
        print(json.dumps(docs if not args.tenant else docs[0]))
    else:
        for r in reports:
            state = "clean" if r.clean else "NOT ERASED"
            print(
                f"tenant {r.tenant}: {state}: {r.erased} erasures checked over"
                f" {r.objects_checked} objects"
            )
            for line in r.found:
                print(f"  still held: {line}")
            if r.pending:
                print(
                    f"  {len(r.pending)} deleted, not erased yet (the next maintenance pass"
                    " erases them: memlake maintain)"
                )
    return 0 if all(r.clean for r in reports) else 1
