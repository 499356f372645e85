"""Lambda entry of the scheduled maintenance (EventBridge): pending vectors, compaction, GC."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger

from memlake.maintenance import maintenance_policy, run_maintenance
from memlake.services import default_services

logger = Logger(service="memlake-maintenance")
RESERVE_SECONDS = 120.0  # of the run's time, kept free of embedding for compaction and GC


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    services = default_services()
    left = context.get_remaining_time_in_millis() / 1000
    deadline = time.monotonic() + left - min(RESERVE_SECONDS, left / 5)
    policy = maintenance_policy(services.settings, "scheduled")
    report = run_maintenance(services, policy, deadline=deadline).to_dict()
    logger.info("maintenance done", extra=report)
    return report
