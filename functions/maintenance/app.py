"""Lambda entry of the scheduled maintenance (EventBridge): compaction and GC for all tenants."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from memlake.maintenance import run_maintenance
from memlake.services import default_services

logger = Logger(service="memlake-maintenance")


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    services = default_services()
    report = run_maintenance(
        services.lake, min_segments=max(2, services.settings.compact_min_segments // 4)
    ).to_dict()
    logger.info("maintenance done", extra=report)
    return report
