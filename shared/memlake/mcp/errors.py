"""What a tool call came to (ToolOutcome), and the one place that turns a tool's exception into
an error a model can act on."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from memlake.errors import InvalidArgument, MemlakeError
from memlake.jsonshape import compact

log = logging.getLogger("memlake.mcp")


class ToolFailed(MemlakeError):
    """A failure of ours inside a tool (a bug): the message carries the reference to its log."""

    code = "internal_error"
    retryable = True


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's structured result, or the error it failed with (exactly one of them).

    Each door answers from it: tools/call carries `to_mcp()` (memlake.mcp.rpc), a per-tool
    Lambda returns `to_direct()` (memlake.mcp.direct)."""

    structured: dict[str, Any] | None = None
    error: MemlakeError | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def to_mcp(self) -> dict[str, Any]:
        """The CallToolResult. No structuredContent on errors: it would have to match the
        tool's outputSchema (clients such as the Inspector validate it even on errors). The
        text is the error as JSON, which a model reads as easily as prose and a program can
        parse."""
        if self.error is not None:
            text = json.dumps({"error": self.error.to_dict()}, ensure_ascii=False)
            return {"content": [{"type": "text", "text": text}], "isError": True}
        structured = self.structured or {}
        return {
            "content": [{"type": "text", "text": compact(structured)}],
            "structuredContent": structured,
            "isError": False,
        }

    def to_direct(self) -> dict[str, Any]:
        """What a direct invocation returns: the structured result, or the error's dict."""
        if self.error is not None:
            return {"isError": True, "error": self.error.to_dict()}
        return self.structured or {}


def _describe(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown argument"
    return f"{loc}: {msg}" if loc else msg


def tool_error(exc: BaseException, *, tool: str, request_id: str) -> MemlakeError:
    """The error a caller sees for a failure inside a tool."""
    if isinstance(exc, ValidationError):
        problems = [_describe(e) for e in exc.errors(include_url=False)][:10]
        return InvalidArgument(
            f"Invalid arguments for {tool}: " + "; ".join(problems),
            hint="Fix the arguments named above and call again; tools/list has the schema.",
        )
    if isinstance(exc, MemlakeError):
        return exc
    log.exception("tool %s failed (request %s)", tool, request_id)
    return ToolFailed(
        f"{tool} failed unexpectedly (reference {request_id}); nothing was changed.",
        hint="Retry once; if it fails again, report the reference.",
    )
