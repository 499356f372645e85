"""The one place that turns exceptions into MCP tool results a model can act on."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from memlake.errors import MemlakeError

log = logging.getLogger("memlake.mcp")


def _describe(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown argument"
    return f"{loc}: {msg}" if loc else msg


def error_result(exc: BaseException, *, tool: str, request_id: str) -> dict[str, Any]:
    """A tools/call result with isError for a failure inside a tool."""
    if isinstance(exc, ValidationError):
        problems = [_describe(e) for e in exc.errors(include_url=False)][:10]
        payload: dict[str, Any] = {
            "code": "invalid_argument",
            "message": f"Invalid arguments for {tool}: " + "; ".join(problems),
            "hint": "Fix the arguments named above and call again; tools/list has the schema.",
        }
    elif isinstance(exc, MemlakeError):
        payload = exc.to_dict()
    else:
        log.exception("tool %s failed (request %s)", tool, request_id)
        payload = {
            "code": "internal_error",
            "message": f"{tool} failed unexpectedly (reference {request_id}); nothing was changed.",
            "hint": "Retry once; if it fails again, report the reference.",
            "retryable": True,
        }
    # No structuredContent on errors: it would have to match the tool's outputSchema (clients
    # such as the Inspector validate it even on errors). The text is the error as JSON, which a
    # model reads as easily as prose and a program can parse.
    return {
        "content": [{"type": "text", "text": json.dumps({"error": payload}, ensure_ascii=False)}],
        "isError": True,
    }


def success_result(structured: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "structuredContent": structured,
        "isError": False,
    }
