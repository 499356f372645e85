"""Calling tools in-process against a local lake, as /mcp does after JSON parsing (unit tests of
the tools, and of the cursors, idempotency and compact results they return)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlake.config import Settings
from memlake.context import Principal
from memlake.lake import Lake
from memlake.store.local import LocalStore
from memlake.tools.registry import get_tool
from tests.wiring import bare_lake, tool_context

FULL = {
    "events": "## 09:00\nWe compared Parquet and Avro.\n## 09:30\nParquet won.",
    "source_title": "Storage format decision",
    "started_at": "2026-03-01T09:00:00+01:00",
    "ended_at": "2026-03-01T09:45:00+01:00",
    "timezone": "Europe/Berlin",
    "platform": "claude",
    "client": "claude-desktop",
    "model": "claude-opus-4",
    "voice_mode": True,
    "input_modalities": ["voice", "text", "voice"],
    "output_modalities": ["text"],
    "qualities": {"mood": "focused", "depth": 3},
    "tags": ["storage", "decision"],
    "context": "memlake",
}


class Caller:
    """Calls tools the way /mcp does after JSON parsing: validate arguments, then run."""

    def __init__(self, lake: Lake, tenant: str = "t", token_id: str = "tok-a") -> None:
        self.ctx = tool_context(Principal(tenant, token_id), lake, Settings())

    def __call__(self, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None, tool
        out = spec.run(self.ctx, spec.input_model.model_validate(args))
        return out.model_dump(mode="json")  # type: ignore[no-any-return]

    def episodes(self, n: int, **fields: Any) -> list[str]:
        return [self("add_episode", content=f"episode {i}", **fields)["id"] for i in range(n)]

    def link(self, a: str, b: str, type_: str = "follows", **args: Any) -> dict[str, Any]:
        return self(
            "add_episode_relationship",
            from_episode_id=a,
            to_episode_id=b,
            relationship_type=type_,
            **args,
        )


class Harness:
    """One tenant's view of a lake directory; every call validates input like the MCP door."""

    def __init__(
        self, root: Path, tenant: str = "t", token: str = "tok-a", lake: Lake | None = None
    ):
        self.root = root
        self.lake = lake or bare_lake(LocalStore(root))
        self.ctx = tool_context(Principal(tenant, token), self.lake, Settings())

    def as_agent(self, token: str, *, own_lake: bool = False) -> Harness:
        lake = bare_lake(LocalStore(self.root)) if own_lake else self.lake
        return Harness(self.root, self.ctx.tenant, token, lake)

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        spec = get_tool(tool)
        assert spec is not None, tool
        out = spec.run(self.ctx, spec.input_model.model_validate(args))
        return out.model_dump(mode="json")  # type: ignore[no-any-return]

    def objects(self) -> dict[str, int]:
        return {
            str(p.relative_to(self.root)): p.stat().st_size
            for p in self.root.rglob("*")
            if p.is_file()
        }

    # shortcuts ---------------------------------------------------------------------------
    def thread(self, n: int = 2, **args: Any) -> dict[str, Any]:
        msgs = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)
        ]
        return self.call("add_thread", messages=msgs, **args)

    def concept(self, name: str, **args: Any) -> str:
        return str(self.call("upsert_concept", name=name, **args)["concept"]["id"])

    def episode(self, events: str = "## 09:00 something happened", **args: Any) -> str:
        return str(self.call("upsert_episode", events=events, **args)["id"])


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls at once (a barrier releases them together); each one's result or error."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def go(n: int) -> None:
        barrier.wait()
        try:
            results[n] = calls[n]()
        except Exception as e:  # noqa: BLE001 - returned to the test to assert on
            results[n] = e

    workers = [threading.Thread(target=go, args=(n,)) for n in range(len(calls))]
    [w.start() for w in workers]
    [w.join() for w in workers]
    return results
