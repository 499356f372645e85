"""Shared by the import-chats tests: the fixtures' folder, exports built in the test, the CLI
run in-process, and tool calls on the lake the CLI wrote."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlake.cli import main
from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.mcp.dispatch import call_tool
from memlake.services import Services

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import_chats"
TENANT = "default"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """`memlake import-chats ... --json` in this process: (exit code, the JSON summary)."""
    code = main(["import-chats", *args, "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1]) if out else {}


def tools(lake_dir: Path, tenant: str = TENANT) -> Any:
    """A function calling a tool on the local lake at lake_dir: (name, **arguments) -> result."""
    cfg = replace(Settings.from_env(), data_dir=lake_dir, store="local")
    ctx = ToolContext(Principal(tenant), Services.build(cfg))

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        outcome = call_tool({"name": name, "arguments": arguments}, ctx)
        assert outcome.error is None and outcome.structured is not None, outcome.error
        return outcome.structured

    return call


def messages_of(call: Any, thread_id: str) -> list[dict[str, Any]]:
    return call("get_thread", id=thread_id, limit=100)["messages"]


def node(
    node_id: str,
    parent: str | None,
    children: list[str],
    role: str,
    text: str,
    at: float | None = None,
) -> dict[str, Any]:
    """A ChatGPT export node with a text message."""
    message = {
        "id": node_id,
        "author": {"role": role},
        "create_time": at,
        "content": {"content_type": "text", "parts": [text]},
        "metadata": {},
    }
    return {"id": node_id, "parent": parent, "children": children, "message": message}


def chatgpt_conversation(conv_id: str, turns: list[str], title: str = "A chat") -> dict[str, Any]:
    """A linear ChatGPT conversation: turns alternate user/assistant, one second apart."""
    mapping, ids = {}, [f"{conv_id}-n{i}" for i in range(len(turns))]
    for i, text in enumerate(turns):
        parent = ids[i - 1] if i else None
        children = [ids[i + 1]] if i + 1 < len(turns) else []
        role = "user" if i % 2 == 0 else "assistant"
        mapping[ids[i]] = node(ids[i], parent, children, role, text, 1_700_000_000.0 + i)
    return {
        "id": conv_id,
        "title": title,
        "create_time": 1_700_000_000.0,
        "update_time": 1_700_000_000.0 + len(turns),
        "current_node": ids[-1] if ids else None,
        "mapping": mapping,
    }


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path
