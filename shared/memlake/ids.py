"""Identifiers: generation and validation. No user string reaches a key or path unchecked.

Episode ids are ULID-style: 48 bits of milliseconds then 80 random bits, Crockford base32,
26 characters, so they sort by creation time and never collide within a millisecond. A
process-local monotonic counter keeps ids from one process strictly increasing.
"""

from __future__ import annotations

import os
import re
import threading
import time

from memlake.errors import InvalidArgument

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last: list[int] = [0, 0]  # [millis, random80]

#: Ids the server generates, and any id accepted from a caller, match this.
ID_PATTERN = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}\Z")
TENANT_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}\Z")


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id() -> str:
    """A 26-character, time-sortable, unique id (ULID layout, monotonic within a process)."""
    with _lock:
        millis = time.time_ns() // 1_000_000
        if millis <= _last[0]:
            millis = _last[0]
            rand = _last[1] + 1
            if rand >= 1 << 80:  # pragma: no cover - 2^80 ids in one millisecond
                millis += 1
                rand = int.from_bytes(os.urandom(10), "big")
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last[0], _last[1] = millis, rand
    return _encode(millis, 10) + _encode(rand, 16)


def check_id(value: object, *, field: str = "id", prefix: str = "") -> str:
    """Validate an id from a caller; strips an optional 'prefix:' (e.g. 'episode:')."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} must be a string", hint="Pass the id exactly as returned.")
    text = value.strip()
    if prefix and text.startswith(prefix + ":"):
        text = text[len(prefix) + 1 :]
    if not ID_PATTERN.match(text):
        raise InvalidArgument(
            f"{field} {value[:80]!r} is not a valid id",
            hint="Ids are 1-64 letters, digits, '_' or '-'; use an id returned by a memlake tool.",
        )
    return text


def check_tenant(value: str) -> str:
    if not TENANT_PATTERN.match(value):
        raise InvalidArgument(
            f"tenant {value[:80]!r} is not valid",
            hint="Tenants are 1-63 lowercase letters, digits, '_' or '-'.",
        )
    return value
