"""Checks on decoded JSON that never recurse: nesting depth and lone UTF-16 surrogates; and
the one way results are encoded (`compact`).

`json.loads` turns a `\\ud800` escape that is not half of a pair into a Python str holding a
lone surrogate. Such a string is not Unicode text: UTF-8 cannot encode it (the JSON encoder,
pyarrow and every log handler raise) and strict peers reject it. Deep nesting breaks anything
recursive (json, pydantic, our own walks) long before it means anything. Both are found here
with an explicit stack, so no input can overflow the interpreter's recursion limit.
See docs/decisions/1011-hostile-json-rpc.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
KEY_CHARS = 40


def compact(value: Any) -> str:
    """JSON as a tool's result is sent (tools/call's text block): no spaces after separators,
    non-ASCII as it is. What the agent reads and what content="evidence"'s budget counts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def exceeds_depth(value: Any, limit: int) -> bool:
    """True when containers (dicts and lists) nest more than `limit` levels deep.

    A scalar is depth 0, `{}` and `[1]` are depth 1. Breadth first, one level at a time, so
    the work per node is a C-level extend; stops at the first level over the limit.
    """
    frontier = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while frontier:
        depth += 1
        if depth > limit:
            return True
        children: list[Any] = []
        for item in frontier:
            children.extend(item.values() if isinstance(item, dict) else item)
        frontier = [c for c in children if isinstance(c, (dict, list))]
    return False


def surrogate_at(text: str) -> int | None:
    """Index of the first lone surrogate in `text`, else None (O(1) for ASCII text)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


def escaped(text: str, limit: int = KEY_CHARS) -> str:
    """`text` safe to print and encode: lone surrogates as \\udxxx escapes, cut to `limit`."""
    short = text if len(text) <= limit else text[:limit] + "..."
    return short.encode("utf-8", "backslashreplace").decode("utf-8")


def _join(path: str, key: str) -> str:
    name = escaped(key)
    return f"{path}.{name}" if path else name


def lone_surrogate(value: Any, path: str = "") -> str | None:
    """Where the first lone surrogate in `value` is (in a string or a key), described for a
    caller, e.g. "metadata.tags[2]: lone UTF-16 surrogate \\ud800 at character 5"; else None."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            at = surrogate_at(item)
            if at is not None:
                return _describe(where, item[at], at, "")
        elif isinstance(item, dict):
            for key, sub in reversed(list(item.items())):  # reversed: report in document order
                at = surrogate_at(key) if isinstance(key, str) else None
                if at is not None:
                    return _describe(where, key[at], at, f"key '{escaped(key)}'")
                stack.append((sub, _join(where, str(key))))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in reversed(list(enumerate(item))))
    return None


def _describe(where: str, char: str, at: int, what: str) -> str:
    place = f"{what} has" if what else "has"
    return (
        f"{where or 'value'}: {place} a lone UTF-16 surrogate ({escaped(char)}) at"
        f" character {at}, which is not a Unicode character; send the character"
        " itself or a complete surrogate pair (such as \\ud83d\\ude00)"
    )
