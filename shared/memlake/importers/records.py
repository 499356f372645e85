"""A conversation as the rows memlake keeps: deterministic ids, the thread's messages within
the thread limits, the episode's transcript and fields, and the digest that tells a later
import what changed (decision 4601).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memlake.importers.model import Conversation, Message
from memlake.layers.fields import MAX_MESSAGE_BYTES, MAX_THREAD_MESSAGES

LABELS = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}
#: where an import keeps what it knows about the source, inside the episode's metadata
META_KEY = "import"


def identity(source: str, source_id: str) -> str:
    """The conversation's key across exports: the same conversation gets the same thread and
    episode ids however often it is imported (128 bits of SHA-256, within ids.ID_PATTERN)."""
    return hashlib.sha256(f"{source}\n{source_id}".encode()).hexdigest()[:32]


def thread_id(key: str) -> str:
    return f"th{key}"


def episode_id(key: str) -> str:
    return f"ep{key}"


def _split(text: str, limit: int) -> list[str]:
    """Parts of at most `limit` UTF-8 bytes, cut on character boundaries (a thread message is
    at most MAX_MESSAGE_BYTES: a long paste becomes several messages, nothing is dropped)."""
    data = text.encode()
    if len(data) <= limit:
        return [text]
    parts, start = [], 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # inside a character
            end -= 1
        parts.append(data[start:end].decode())
        start = end
    return [p for p in parts if p.strip()]


@dataclass(frozen=True)
class Prepared:
    """One conversation ready to write."""

    conversation: Conversation
    key: str
    messages: tuple[Message, ...]  # as the thread stores them (split, capped)
    prefix_digests: tuple[str, ...]  # digest of the first n messages, for n = 0..len
    cut: int  # messages beyond the thread limit, left out

    @property
    def digest(self) -> str:
        return self.prefix_digests[-1]


def prepare(conv: Conversation) -> Prepared:
    stored = [
        Message(m.role, part, m.at)
        for m in conv.messages
        for part in _split(m.text, MAX_MESSAGE_BYTES)
    ]
    cut = max(0, len(stored) - MAX_THREAD_MESSAGES)
    stored = stored[:MAX_THREAD_MESSAGES]
    h = hashlib.sha256()
    digests = [h.hexdigest()[:32]]
    for m in stored:
        h.update(f"{m.role}\0{m.text}\0{m.at.isoformat() if m.at else ''}\0".encode())
        digests.append(h.hexdigest()[:32])
    return Prepared(conv, identity(conv.source, conv.source_id), tuple(stored), tuple(digests), cut)


def times(p: Prepared, fallback: datetime) -> list[datetime]:
    """Each message's time: its own, else the one before it, else the conversation's start."""
    at = p.conversation.created_at or next((m.at for m in p.messages if m.at), None) or fallback
    out = []
    for m in p.messages:
        at = m.at or at
        out.append(at)
    return out


def transcript(messages: tuple[Message, ...], limit_bytes: int, thread: str) -> str:
    """'User: ...' / 'Assistant: ...' turns (labels the passage cutter reads as speakers), cut
    to the episode's content limit with a last line naming the thread that holds the rest."""
    out: list[str] = []
    used = 0
    for i, m in enumerate(messages):
        turn = f"{LABELS.get(m.role, m.role.title())}: {m.text}"
        size = len(turn.encode()) + 2
        if used + size > limit_bytes - 200:
            out.append(f"[… {len(messages) - i} more messages in thread {thread}]")
            break
        out.append(turn)
        used += size
    return "\n\n".join(out)


def episode_fields(
    p: Prepared, at: list[datetime], context: str | None, limit: int
) -> dict[str, Any]:
    """upsert_episode's arguments for the conversation (episodes.to_columns maps them). Its span
    runs from the first message's time to the last one's (or the export's update time, when
    later); an export without any time leaves both unset rather than claim the import's."""
    conv = p.conversation
    known = [m.at for m in p.messages if m.at] or [t for t in (conv.created_at,) if t]
    start = known[0] if known else None
    end = max([*known, *([conv.updated_at] if conv.updated_at else [])]) if known else None
    return {
        "events": transcript(p.messages, limit, thread_id(p.key)),
        "source_title": conv.title,
        "context": context,
        "started_at": start,
        "ended_at": max(start, end) if start and end else end,
        "platform": conv.source,
        "client": conv.client,
        "model": (conv.model or "").strip()[:128] or None,
        "voice_mode": conv.voice_mode,
        "input_modalities": list(conv.input_modalities),
        "output_modalities": list(conv.output_modalities),
        "source_thread_id": thread_id(p.key),
    }


def metadata(p: Prepared) -> dict[str, Any]:
    """What the episode keeps of the source, and what a later import compares against."""
    info: dict[str, Any] = {
        "source": p.conversation.source,
        "conversation_id": p.conversation.source_id[:200],
        "messages": len(p.messages),
        "digest": p.digest,
    }
    if p.cut:
        info["messages_left_out"] = p.cut
    info.update({k: v for k, v in p.conversation.extra.items() if k not in info})
    return {META_KEY: info}
