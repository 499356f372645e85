"""Opaque page cursors: a position in a sorted listing, bound to the filters it was made for.

A cursor is base64url JSON of [position, fingerprint-of-filters]; a cursor reused with other
filters, or one that does not decode to a position of the expected size, is refused with a
message telling the caller what to do.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from memlake.errors import InvalidArgument


def fingerprint(*filters: Any) -> str:
    raw = json.dumps(filters, sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def encode_cursor(position: list[Any], fp: str) -> str:
    raw = json.dumps([position, fp]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, fp: str, size: int) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position, got_fp = json.loads(raw)
        if not isinstance(position, list) or len(position) != size:
            raise ValueError
    except (ValueError, TypeError):
        raise InvalidArgument(
            "cursor is not valid", hint="Pass next_cursor exactly as a previous call returned it."
        ) from None
    if got_fp != fp:
        raise InvalidArgument(
            "cursor belongs to a listing with other filters",
            hint="Keep the filters the same while paging, or drop cursor to start over.",
        )
    return position
