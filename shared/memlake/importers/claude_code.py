"""Claude Code session transcripts (~/.claude/projects/<escaped cwd>/<session>.jsonl).

One JSON object per line: user and assistant turns ({type, message: {role, content, model},
cwd, sessionId, timestamp, uuid, parentUuid}), `summary` lines (the title), and bookkeeping
(file-history snapshots, meta and side-chain lines) that is not the conversation. The session's
working directory becomes the context. Tool calls are kept as what was run (`[Bash] ls -la`) and
their results cut to TOOL_CHARS: the transcript says what happened, not megabytes of output. A
line that is not JSON (a session cut off mid-write) is reported and the rest of the session
imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from memlake.importers.model import (
    Conversation,
    Message,
    Problem,
    clean_text,
    clean_title,
    iso_time,
    obj,
)

SOURCE = "claude_code"
TOOL_CHARS = 300
_INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")


def looks_like(head: object) -> bool:
    return isinstance(head, dict) and (
        "sessionId" in head or head.get("type") in ("summary", "user", "assistant")
    )


def _tool_use(block: dict[str, Any]) -> str:
    args = obj(block.get("input"))
    shown = next((args[k] for k in _INPUT_KEYS if isinstance(args.get(k), str)), None)
    text = shown if shown is not None else json.dumps(args, ensure_ascii=False)
    return f"[{clean_text(block.get('name')) or 'tool'}] {clean_text(text)[:TOOL_CHARS]}"


def _tool_result(block: dict[str, Any]) -> str:
    body = block.get("content")
    if isinstance(body, list):
        body = " ".join(clean_text(b.get("text")) for b in body if isinstance(b, dict))
    text = " ".join(clean_text(body).split())
    cut = "…" if len(text) > TOOL_CHARS else ""
    return f"[result] {text[:TOOL_CHARS]}{cut}"


def _turn(line: dict[str, Any]) -> Message | None:
    """A user or assistant line as a message (tool results as role tool), or None."""
    msg = obj(line.get("message"))
    content = msg.get("content")
    if isinstance(content, str):
        text, role = clean_text(content), str(line.get("type"))
    elif isinstance(content, list):
        parts, results = [], 0
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(clean_text(block.get("text")))
            elif kind == "tool_use":
                parts.append(_tool_use(block))
            elif kind == "tool_result":
                parts.append(_tool_result(block))
                results += 1
        text = "\n".join(p for p in parts if p.strip())
        role = "tool" if results and results == len(parts) else str(line.get("type"))
    else:
        return None
    text = text.strip()
    at = iso_time(line.get("timestamp"))
    return Message(role, text, at) if text and role in ("user", "assistant", "tool") else None


def read(stream: IO[bytes], where: str) -> Iterator[Conversation | Problem]:
    """The session of one .jsonl file (and a Problem per unreadable line)."""
    messages: list[Message] = []
    summary = session = cwd = model = None
    last_id: object = None
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            yield Problem(f"{where}, line {number}", "not valid JSON (skipped; the rest imported)")
            continue
        if not isinstance(line, dict):
            continue
        kind = line.get("type")
        session = session or line.get("sessionId")
        cwd = cwd or line.get("cwd")
        if kind == "summary" and isinstance(line.get("summary"), str):
            summary = summary or line["summary"]
        if kind not in ("user", "assistant") or line.get("isMeta") or line.get("isSidechain"):
            continue
        msg = obj(line.get("message"))
        if (
            kind == "assistant"
            and isinstance(msg.get("model"), str)
            and msg["model"] != "<synthetic>"
        ):
            model = msg["model"]
        turn = _turn(line)
        if turn is None:
            continue
        same = kind == "assistant" and msg.get("id") and msg.get("id") == last_id
        if same and messages and messages[-1].role == turn.role:  # one reply, split per block
            messages[-1] = Message(turn.role, f"{messages[-1].text}\n{turn.text}", messages[-1].at)
        else:
            messages.append(turn)
        last_id = msg.get("id")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    title = clean_title(summary) or clean_title(first_user.split("\n", 1)[0][:80])
    context = clean_title(cwd)
    yield Conversation(
        source=SOURCE,
        source_id=str(session or Path(where.split(":")[-1]).stem),
        title=title,
        messages=tuple(messages),
        created_at=messages[0].at if messages else None,
        updated_at=messages[-1].at if messages else None,
        context=context[-128:] if context else None,
        client="claude-code",
        model=model,
        input_modalities=("text",),
        output_modalities=("text",),
        extra={"cwd": clean_text(cwd)} if cwd else {},
    )
