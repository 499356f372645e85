"""Lambda entry of the scheduled maintenance (EventBridge): pending vectors, compaction, GC;
invoked with {"action": "check"} (optionally "tenant"), it runs `memlake check` instead."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger

from memlake.maintenance import maintenance_policy, run_maintenance
from memlake.services import default_services

logger = Logger(service="memlake-maintenance")
RESERVE_SECONDS = 120.0  # of the run's time, kept free of embedding for compaction and GC


def check(services: Any, event: dict[str, Any]) -> dict[str, Any]:
    """{"action": "check", "tenant": optional}: `memlake check` (reads only); damage is
    logged as a warning for the alarms, and the reports returned."""
    from memlake.errors import MemlakeError
    from memlake.integrity.check import check_tenant
    from memlake.maintenance import discover_tenants

    store = services.lake.store
    try:
        tenants = [str(event["tenant"])] if event.get("tenant") else discover_tenants(store)
        reports = [check_tenant(store, t).to_dict() for t in tenants]
    except MemlakeError as e:
        return {"error": e.to_dict()}
    damaged = [r["tenant"] for r in reports if not r["clean"]]
    if damaged:
        logger.warning("damaged tenants: run memlake repair", extra={"tenants": damaged})
    return {"checked": len(reports), "damaged": damaged, "reports": reports}


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    services = default_services()
    if isinstance(event, dict) and event.get("action") == "check":
        return check(services, event)
    left = context.get_remaining_time_in_millis() / 1000
    deadline = time.monotonic() + left - min(RESERVE_SECONDS, left / 5)
    policy = maintenance_policy(services.settings, "scheduled")
    report = run_maintenance(services, policy, deadline=deadline).to_dict()
    logger.info("maintenance done", extra=report)
    return report
