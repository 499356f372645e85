"""Lambda entry of the MCP endpoint: API Gateway HTTP API (payload 2.0) with a JWT authorizer.

The transport is memlake.mcp.http.McpHttpApp, the one `memlake serve` runs; the adapter is
memlake.mcp.apigw. The tenant comes from the JWT claim named by MEMLAKE_TENANT_CLAIM (default
"sub"). Each JSON-RPC call is one POST, and API Gateway's request id is its correlation id: in
every log line, in the x-request-id response header and in error references. Logs name the
method, tool, status, tenant, token id and latency; never tokens, arguments or content.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

from memlake.config import settings
from memlake.mcp.apigw import ApiGatewayMcp, LazyServices, internal_error, response_to_event
from memlake.mcp.http import Exchange
from memlake.observability import make_tracer
from memlake.services import default_services

logger = Logger(service="memlake-mcp")
metrics = Metrics(namespace="memlake", service="mcp")
tracer = make_tracer("memlake-mcp")
# library warnings and errors go out as the same JSON, with the correlation id
copy_config_to_registered_loggers(source_logger=logger, log_level="WARNING", include={"memlake"})

_endpoint: ApiGatewayMcp | None = None


def endpoint() -> ApiGatewayMcp:
    """Kept for warm invocations (S3 client, segment cache); the lake and its features load on
    the first tools/call, so initialize and tools/list stay light on a cold start."""
    global _endpoint
    if _endpoint is None:
        _endpoint = ApiGatewayMcp(LazyServices(settings(), default_services))
    return _endpoint


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Never raises: whatever fails becomes a JSON-RPC error response (a bug: 500, -32603)."""
    started = time.perf_counter()
    try:
        exchange = endpoint().handle(event)
    except Exception:
        logger.exception("unhandled error in the MCP transport")
        rid = getattr(context, "aws_request_id", None)
        return response_to_event(internal_error(rid if isinstance(rid, str) else None))
    try:  # the call has run (a write may have committed): telemetry never turns it into an error
        _record(exchange, (time.perf_counter() - started) * 1000)
    except Exception:
        logger.exception("could not record the request's logs and metrics")
    return response_to_event(exchange.response)


def _record(exchange: Exchange, elapsed_ms: float) -> None:
    resp, who = exchange.response, exchange.principal
    logger.info(
        "mcp request",
        extra={
            "rpc_method": exchange.method,
            "tool": exchange.tool,
            "status": resp.status,
            "tool_error": exchange.tool_error,
            "tenant": who.tenant if who else None,
            "token_id": who.token_id if who else None,
            "ms": round(elapsed_ms, 1),
        },
    )
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="LatencyMs", unit=MetricUnit.Milliseconds, value=elapsed_ms)
    if resp.status >= 400:
        kind = "ServerErrors" if resp.status >= 500 else "ClientErrors"
        metrics.add_metric(name=kind, unit=MetricUnit.Count, value=1)
    if exchange.tool_error:
        metrics.add_metric(name="ToolErrors", unit=MetricUnit.Count, value=1)
