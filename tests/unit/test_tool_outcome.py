"""call_tool's typed outcome, and the two wire shapes the doors make of it: tools/call's
CallToolResult (to_mcp) and a per-tool Lambda's answer (to_direct). The expected values are
literals, key order included: the bytes each door sent before the outcome was typed."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from memlake.errors import NotFound
from memlake.mcp.dispatch import call_tool
from memlake.mcp.errors import ToolOutcome
from memlake.tools import registry

CREATED = "2026-01-15T10:00:00Z"


def run_with(monkeypatch: pytest.MonkeyPatch, run: Any, arguments: dict[str, Any]) -> ToolOutcome:
    """add_episode with its `run` replaced: the outcome of exactly what `run` does."""
    spec = registry.get_tool("add_episode")
    assert spec is not None
    monkeypatch.setitem(registry._cache, "add_episode", replace(spec, run=run))
    ctx = SimpleNamespace(request_id="req-1")
    return call_tool({"name": "add_episode", "arguments": arguments}, ctx)  # type: ignore[arg-type]


def same_bytes(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)


def test_a_success(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(ctx: Any, args: Any) -> Any:
        return registry.get_tool("add_episode").output_model(  # type: ignore[union-attr]
            id="ep1", content=args.content, created_at=CREATED, linked_entities=0
        )

    outcome = run_with(monkeypatch, run, {"content": "café ✓"})
    assert not outcome.is_error and outcome.error is None
    structured = {"id": "ep1", "content": "café ✓", "created_at": CREATED, "linked_entities": 0}
    same_bytes(
        outcome.to_mcp(),
        {
            "content": [
                {
                    "type": "text",
                    # compact, non-ASCII as it is (decision 4501: what the agent reads)
                    "text": '{"id":"ep1","content":"café ✓","created_at":'
                    '"2026-01-15T10:00:00Z","linked_entities":0}',
                }
            ],
            "structuredContent": structured,
            "isError": False,
        },
    )
    same_bytes(outcome.to_direct(), structured)


def test_a_domain_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(ctx: Any, args: Any) -> Any:
        raise NotFound("no episode é1", hint="Call list_episodes for the ids.")

    outcome = run_with(monkeypatch, run, {"content": "x"})
    assert outcome.is_error and isinstance(outcome.error, NotFound)
    error = {
        "code": "not_found",
        "message": "no episode é1",
        "hint": "Call list_episodes for the ids.",
    }
    text = (
        '{"error": {"code": "not_found", "message": "no episode é1",'
        ' "hint": "Call list_episodes for the ids."}}'
    )
    same_bytes(outcome.to_mcp(), {"content": [{"type": "text", "text": text}], "isError": True})
    same_bytes(outcome.to_direct(), {"isError": True, "error": error})


def test_invalid_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_with(monkeypatch, lambda ctx, args: 1 / 0, {"colour": "red"})
    message = "Invalid arguments for add_episode: content: Field required; colour: unknown argument"
    hint = "Fix the arguments named above and call again; tools/list has the schema."
    text = json.dumps(
        {"error": {"code": "invalid_argument", "message": message, "hint": hint}},
        ensure_ascii=False,
    )
    same_bytes(outcome.to_mcp(), {"content": [{"type": "text", "text": text}], "isError": True})


def test_a_bug_in_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(ctx: Any, args: Any) -> Any:
        raise RuntimeError("a bug")

    outcome = run_with(monkeypatch, run, {"content": "x"})
    error = {
        "code": "internal_error",
        "message": "add_episode failed unexpectedly (reference req-1); nothing was changed.",
        "hint": "Retry once; if it fails again, report the reference.",
        "retryable": True,
    }
    text = json.dumps({"error": error}, ensure_ascii=False)
    same_bytes(outcome.to_mcp(), {"content": [{"type": "text", "text": text}], "isError": True})
    same_bytes(outcome.to_direct(), {"isError": True, "error": error})
