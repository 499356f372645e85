"""What a path holds, found from its content (not its name), read as a stream.

A path is a zip (ChatGPT's and Claude.ai's exports), a JSON file whose top level is an array of
conversations, a JSON Lines file (a Claude Code session, or memory.json), or a folder of any of
these (~/.claude/projects). Arrays are read item by item with ijson, so a conversations.json of
hundreds of MB never sits in memory whole; a file that stops being valid JSON half-way yields
the items before the damage, then a Problem naming the place.
"""

from __future__ import annotations

import codecs
import io
import json
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import ijson

from memlake.importers import chatgpt, claude_ai, claude_code, memory_json
from memlake.importers.model import Conversation, Problem

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_READ = 1 << 16
EMPTY_FILE = "an empty file"
NOT_AN_EXPORT = (
    "not a chat export memlake reads (ChatGPT or Claude.ai conversations.json, a Claude Code"
    " .jsonl session, or memory.json)"
)


@dataclass
class Meter:
    """Bytes read of the bytes to read, for the progress line's rate and ETA."""

    total: int = 0
    done: int = 0
    files: list[str] = field(default_factory=list)


class _Counting(io.RawIOBase):
    """A byte stream that counts what is read from it into a Meter."""

    def __init__(self, raw: IO[bytes], meter: Meter) -> None:
        self.raw, self.meter = raw, meter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.meter.done += len(data)
        return len(data)


class _Recoded(io.RawIOBase):
    """A UTF-16 stream re-encoded as UTF-8 (ijson and json read UTF-8)."""

    def __init__(self, raw: IO[bytes], encoding: str) -> None:
        self.text = codecs.getreader(encoding)(raw, "replace")
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self.pending) < len(buffer):
            chunk = self.text.read(_READ)
            if not chunk:
                break
            self.pending += chunk.encode("utf-8", "replace")
        n = min(len(buffer), len(self.pending))
        buffer[:n], self.pending = self.pending[:n], self.pending[n:]
        return n


def _utf8(stream: io.RawIOBase) -> io.BufferedReader[Any]:
    """The stream as UTF-8 without a byte order mark (exports saved by editors may carry one)."""
    buffered = io.BufferedReader(stream, _READ)
    head = buffered.peek(4)[:4]
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            if encoding == "utf-8":
                buffered.read(len(bom))
                return buffered
            return io.BufferedReader(_Recoded(buffered, encoding), _READ)
    return buffered


def _first_byte(stream: io.BufferedReader[Any]) -> bytes:
    head = stream.peek(_READ)
    stripped = head.lstrip()
    return stripped[:1]


Item = Conversation | Problem | memory_json.Record


def _array(stream: io.BufferedReader[Any], where: str) -> Iterator[Item]:
    count = 0
    try:
        for count, item in enumerate(ijson.items(stream, "item", use_float=True), start=1):
            at = f"{where}, item {count}"
            if chatgpt.looks_like(item):
                yield chatgpt.parse(item, at)
            elif claude_ai.looks_like(item):
                yield claude_ai.parse(item, at)
            elif count == 1:
                yield Problem(where, NOT_AN_EXPORT)
                return
            else:
                yield Problem(at, "not a conversation of this export")
    except ijson.JSONError as e:
        yield Problem(where, f"invalid JSON after item {count}: {str(e)[:120]}")
    if count == 0:
        yield Problem(where, "an empty list: no conversations")


def _lines(stream: io.BufferedReader[Any], where: str) -> Iterator[Item]:
    first = stream.peek(_READ).split(b"\n", 1)[0]
    try:
        head = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        yield Problem(where, f"{NOT_AN_EXPORT}: the first line is not a JSON object")
        return
    if memory_json.looks_like(head):
        yield from memory_json.read(stream, where)
    elif claude_code.looks_like(head):
        yield from claude_code.read(stream, where)
    else:
        yield Problem(where, NOT_AN_EXPORT)


def read_stream(raw: IO[bytes], where: str, meter: Meter) -> Iterator[Item]:
    stream = _utf8(_Counting(raw, meter))
    first = _first_byte(stream)
    if first == b"[":
        yield from _array(stream, where)
    elif first == b"{":
        yield from _lines(stream, where)
    else:
        yield Problem(where, NOT_AN_EXPORT if first else EMPTY_FILE)


def _other_file(problem: Problem) -> bool:
    """A folder's file that is no export (passed over quietly: a folder holds more)."""
    return problem.reason.startswith(NOT_AN_EXPORT) or problem.reason == EMPTY_FILE


def _zip(path: Path, meter: Meter) -> Iterator[Item]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        yield Problem(str(path), f"not a readable zip (truncated or damaged?): {e}")
        return
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        meter.total += sum(m.file_size for m in members) - path.stat().st_size
        found = False
        for member in members:
            where = f"{path}:{member.filename}"
            try:
                with archive.open(member) as raw:
                    items = read_stream(raw, where, meter)
                    first = next(items, None)
                    if isinstance(first, Problem) and _other_file(first):
                        continue  # the export's other files (user.json, images, ...)
                    found = True
                    if first is not None:
                        yield first
                    yield from items
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:
                found = True
                yield Problem(where, f"the zip member cannot be read (damaged?): {e}")
        if not found:
            yield Problem(str(path), f"the zip holds no conversations: {NOT_AN_EXPORT}")


def _file(path: Path, meter: Meter) -> Iterator[Item]:
    with path.open("rb") as f:
        if f.read(4) == b"PK\x03\x04":
            yield from _zip(path, meter)
            return
        f.seek(0)
        yield from read_stream(f, str(path), meter)


def read_path(path: Path, meter: Meter) -> Iterator[Item]:
    """Every conversation (or memory.json record) under `path`, and a Problem for what cannot
    be read; files of a folder in name order (so a resumed import meets them in the same order)."""
    if not path.exists():
        yield Problem(str(path), "no such file or folder")
        return
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    files = (
        [p for p in files if not any(part.startswith(".") for part in p.relative_to(path).parts)]
        if path.is_dir()
        else files
    )
    meter.total += sum(p.stat().st_size for p in files)
    meter.files = [str(p) for p in files]
    for file in files:
        items = _file(file, meter)
        if path.is_dir():  # a folder holds other files too: skip those quietly
            first = next(items, None)
            if isinstance(first, Problem) and _other_file(first):
                continue
            if first is not None:
                yield first
        yield from items
