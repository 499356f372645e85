"""Claude.ai's data export (conversations.json): a list of conversations with `chat_messages`.

Each message has a sender (human | assistant), its text (`text`, or `content` blocks of which
the text blocks are kept and tool calls are named briefly), attachments whose extracted text
is kept (cut at ATTACHMENT_CHARS), and files (named). The conversation's name is the title, its
project (where the export has one) the context unless --context says otherwise.
"""

from __future__ import annotations

from typing import Any

from memlake.importers.model import (
    Conversation,
    Message,
    Problem,
    clean_text,
    clean_title,
    iso_time,
)

SOURCE = "claude"
#: characters kept of an attachment's extracted text: enough to find it again by its words
ATTACHMENT_CHARS = 8_000
TOOL_CHARS = 300
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def looks_like(item: object) -> bool:
    return isinstance(item, dict) and isinstance(item.get("chat_messages"), list)


def _blocks_text(blocks: list[Any]) -> str:
    out = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(clean_text(block.get("text")))
        elif kind == "tool_use":
            out.append(f"[tool: {clean_text(block.get('name'))}]")
        elif kind == "tool_result":
            body = block.get("content")
            text = _blocks_text(body) if isinstance(body, list) else clean_text(body)
            out.append(f"[tool result] {text[:TOOL_CHARS]}")
    return "\n".join(t for t in out if t.strip())


def _attachments(msg: dict[str, Any], modalities: set[str]) -> list[str]:
    out = []
    for att in msg.get("attachments") or []:
        if isinstance(att, dict):
            name = clean_title(att.get("file_name")) or "attachment"
            body = clean_text(att.get("extracted_content"))
            cut = " [cut]" if len(body) > ATTACHMENT_CHARS else ""
            out.append(f"[attachment: {name}]\n{body[:ATTACHMENT_CHARS]}{cut}".strip())
    for f in msg.get("files") or []:
        if isinstance(f, dict):
            name = clean_title(f.get("file_name")) or "file"
            if str(f.get("file_kind") or f.get("file_type") or "").startswith("image"):
                modalities.add("image")
            out.append(f"[file: {name}]")
    return out


def _message(msg: object, modalities: set[str]) -> Message | None:
    if not isinstance(msg, dict):
        return None
    role = _ROLES.get(str(msg.get("sender")))
    if role is None:
        return None
    blocks = msg.get("content")
    text = _blocks_text(blocks) if isinstance(blocks, list) and blocks else ""
    if not text.strip():
        text = clean_text(msg.get("text"))
    parts = [text.strip(), *_attachments(msg, modalities)]
    body = "\n\n".join(p for p in parts if p)
    return Message(role, body, iso_time(msg.get("created_at"))) if body else None


def parse(item: object, where: str) -> Conversation | Problem:
    if not looks_like(item):
        return Problem(where, "not a Claude conversation (no 'chat_messages' list)")
    assert isinstance(item, dict)
    conv_id = item.get("uuid") or item.get("id")
    if not isinstance(conv_id, str) or not conv_id:
        return Problem(where, "the conversation has no uuid")
    modalities: set[str] = set()
    messages = [m for m in (_message(x, modalities) for x in item["chat_messages"]) if m]
    project = item.get("project")
    project_name = clean_title(project.get("name")) if isinstance(project, dict) else None
    model = item.get("model")
    return Conversation(
        source=SOURCE,
        source_id=conv_id,
        title=clean_title(item.get("name")),
        messages=tuple(messages),
        created_at=iso_time(item.get("created_at")),
        updated_at=iso_time(item.get("updated_at")),
        context=project_name[:128] if project_name else None,
        client="claude-ai-export",
        model=model if isinstance(model, str) and model else None,
        input_modalities=tuple(sorted({"text", *modalities})),
        output_modalities=("text",),
        extra={"project": project_name} if project_name else {},
    )
