"""ChatGPT's data export (conversations.json): a list of conversations, each a message tree.

A conversation's `mapping` holds nodes {id, message, parent, children}; edits and regenerations
make branches, and `current_node` is the leaf the user last saw. The conversation is the path
from the root to current_node (what ChatGPT shows); the other branches are counted in the
episode's metadata (`other_branches`, `branch_messages`), not stored as text: a thread is one
sequence, and the branch the user moved on from is the one they chose to leave (decision 4601).
Hidden messages (metadata.is_visually_hidden_from_conversation, custom instructions, the
model's private thoughts) are left out; tool output is kept short.
"""

from __future__ import annotations

from typing import Any

from memlake.importers.model import (
    Conversation,
    Message,
    Problem,
    clean_text,
    clean_title,
    epoch_time,
    obj,
)

SOURCE = "chatgpt"
#: characters kept of a tool's output or of code the model ran (what was done, not the output)
TOOL_CHARS = 1_000
_HIDDEN_TYPES = frozenset(
    {"user_editable_context", "thoughts", "reasoning_recap", "model_editable_context"}
)
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def looks_like(item: object) -> bool:
    return isinstance(item, dict) and isinstance(item.get("mapping"), dict)


def _path(mapping: dict[str, Any], current: object) -> list[dict[str, Any]]:
    """The nodes from the root to `current` (or, without a usable current_node, to the leaf
    reached by always taking the last child: the newest regeneration)."""
    if not isinstance(current, str) or current not in mapping:
        roots = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("parent")]
        current = roots[0] if roots else None
        seen: set[str] = set()
        while isinstance(current, str) and current in mapping and current not in seen:
            seen.add(current)
            children = mapping[current].get("children") or []
            if not children:
                break
            current = children[-1]
    path: list[dict[str, Any]] = []
    visited: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in visited:
        visited.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            break
        path.append(node)
        current = node.get("parent")
    return path[::-1]


def _part_text(part: object, modalities: set[str]) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    kind = str(part.get("content_type") or "")
    if kind == "audio_transcription":
        modalities.add("voice")
        return clean_text(part.get("text"))
    if "image" in kind:
        modalities.add("image")
        return "[image]"
    if "audio" in kind or "video" in kind:
        modalities.add("voice")
        return ""
    return clean_text(part.get("text"))


def _content_text(content: dict[str, Any], recipient: object, modalities: set[str]) -> str:
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        parts = content.get("parts") or []
        return "\n".join(t for t in (_part_text(p, modalities) for p in parts) if t.strip())
    if kind == "code":
        target = recipient if isinstance(recipient, str) and recipient != "all" else "code"
        return f"[{target}] {clean_text(content.get('text'))[:TOOL_CHARS]}"
    if kind == "execution_output":
        return f"[output] {clean_text(content.get('text'))[:TOOL_CHARS]}"
    for key in ("text", "result", "summary"):
        if isinstance(content.get(key), str):
            return clean_text(content[key])[:TOOL_CHARS]
    return ""


def _message(node: dict[str, Any], modalities: set[str]) -> tuple[Message | None, str | None]:
    """The node's message as (message, model slug), or (None, None) for a hidden or empty one."""
    msg = node.get("message")
    if not isinstance(msg, dict):
        return None, None
    meta = obj(msg.get("metadata"))
    content = obj(msg.get("content"))
    author = obj(msg.get("author"))
    role = _ROLES.get(str(author.get("role")))
    if role is None or meta.get("is_visually_hidden_from_conversation"):
        return None, None
    if content.get("content_type") in _HIDDEN_TYPES:
        return None, None
    if meta.get("voice_mode_message"):
        modalities.add("voice")
    text = clean_text(_content_text(content, msg.get("recipient"), modalities)).strip()
    if role == "tool":
        text = text[:TOOL_CHARS]
    if not text:
        return None, None
    slug = meta.get("model_slug") if role == "assistant" else None
    return Message(role, text, epoch_time(msg.get("create_time"))), slug if isinstance(
        slug, str
    ) else None


def _branches(mapping: dict[str, Any], on_path: set[str]) -> tuple[int, int]:
    """(leaves off the shown path, messages only on those branches)."""
    leaves = off = 0
    for key, node in mapping.items():
        if key in on_path or not isinstance(node, dict):
            continue
        if isinstance(node.get("message"), dict):
            off += 1
        if not node.get("children"):
            leaves += 1
    return leaves, off


def parse(item: object, where: str) -> Conversation | Problem:
    if not looks_like(item):
        return Problem(where, "not a ChatGPT conversation (no 'mapping' object)")
    assert isinstance(item, dict)
    conv_id = item.get("conversation_id") or item.get("id")
    if not isinstance(conv_id, str) or not conv_id:
        return Problem(where, "the conversation has no id")
    mapping: dict[str, Any] = item["mapping"]
    path = _path(mapping, item.get("current_node"))
    modalities: set[str] = set()
    messages: list[Message] = []
    model = None
    for node in path:
        message, slug = _message(node, modalities)
        if message is not None:
            messages.append(message)
            model = slug or model
    others, off = _branches(mapping, {str(n.get("id")) for n in path})
    extra: dict[str, object] = {"other_branches": others, "branch_messages": off} if others else {}
    voice = "voice" in modalities or bool(item.get("voice"))
    return Conversation(
        source=SOURCE,
        source_id=conv_id,
        title=clean_title(item.get("title")),
        messages=tuple(messages),
        created_at=epoch_time(item.get("create_time")),
        updated_at=epoch_time(item.get("update_time")),
        client="chatgpt-export",
        model=model
        or (
            item.get("default_model_slug")
            if isinstance(item.get("default_model_slug"), str)
            else None
        ),
        voice_mode=True if voice else None,
        input_modalities=tuple(sorted({"text", *modalities})),
        output_modalities=("text", "voice") if voice else ("text",),
        extra=extra,
    )
