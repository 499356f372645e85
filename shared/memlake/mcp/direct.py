"""The one entry point behind every per-tool Lambda (functions/<tool>/app.py).

Direct invocation (`aws lambda invoke`, Step Functions, `sam local invoke <Tool>Function -e
functions/<tool>/event.json`) with {"tenant": "<tenant>", "arguments": {...}} returns the tool's
structured result, or {"isError": true, "error": {"code", "message", "hint"}}: the same payload
and error translation (memlake.mcp.errors) as tools/call over MCP. The caller names the tenant:
IAM's lambda:InvokeFunction is the authorization, so grant it only to trusted back ends; people
and agents come in through the MCP endpoint, where the tenant comes from their JWT.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from aws_lambda_powertools import Logger

from memlake.context import Principal, ToolContext
from memlake.errors import InvalidArgument, MemlakeError
from memlake.ids import check_tenant
from memlake.mcp.dispatch import call_tool
from memlake.mcp.errors import ToolOutcome
from memlake.mcp.protocol import RpcError
from memlake.services import default_services

logger = Logger(service="memlake-tools")
EVENT_KEYS = frozenset({"tenant", "arguments"})


def parse_event(event: Any) -> tuple[str, dict[str, Any]]:
    """(tenant, arguments) from a direct-invocation event; raises InvalidArgument."""
    hint = (
        'Invoke with {"tenant": "<tenant>", "arguments": {...}} (see functions/<tool>/event.json).'
    )
    if not isinstance(event, dict):
        raise InvalidArgument("the event must be a JSON object", hint=hint)
    unknown = sorted(str(k)[:40] for k in event if k not in EVENT_KEYS)
    if unknown:
        raise InvalidArgument(f"unknown event keys: {', '.join(unknown[:5])}", hint=hint)
    tenant = event.get("tenant")
    if not isinstance(tenant, str):
        raise InvalidArgument("event.tenant is missing or not a string", hint=hint)
    arguments = event.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidArgument("event.arguments must be an object", hint=hint)
    return check_tenant(tenant), arguments


def invoke_tool(name: str, event: Any, context: Any = None) -> dict[str, Any]:
    started = time.perf_counter()
    request_id = str(getattr(context, "aws_request_id", "") or uuid.uuid4().hex[:16])
    logger.set_correlation_id(request_id)
    try:
        tenant, arguments = parse_event(event)
    except MemlakeError as e:
        logger.info("tool call rejected", extra={"tool": name, "error_code": e.code})
        return ToolOutcome(error=e).to_direct()
    services = default_services()
    ctx = ToolContext(Principal(tenant, "direct-invoke"), services, request_id=request_id)
    try:
        outcome = call_tool({"name": name, "arguments": arguments}, ctx)
    except RpcError as e:  # unknown tool: the function and the registry disagree
        hint = "Rerun infra/generate_functions.py and redeploy."
        return ToolOutcome(error=InvalidArgument(e.message, hint=hint)).to_direct()
    logger.info(
        "tool call",
        extra={
            "tool": name,
            "tenant": tenant,
            "is_error": outcome.is_error,
            "error_code": outcome.error.code if outcome.error else None,
            "ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return outcome.to_direct()
