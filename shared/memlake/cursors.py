"""Opaque page cursors: a signed position in a sorted listing, bound to tenant and filters.

A cursor is base64url JSON of ``[position, fingerprint, mac]``:

* position: the sort key of the last row served (e.g. ``[occurred_at_us, id]``);
* fingerprint: a plain hash of the listing's name and filters, so a cursor reused with other
  filters gets its own message;
* mac: HMAC-SHA256 over ``[tenant, fingerprint, position]`` with the deployment's cursor key,
  so a cursor cannot be forged or edited, and one tenant's cursor does not work for another.

Even a correctly signed cursor is checked against the listing's position kinds (:data:`INT64`,
:data:`TEXT`, :data:`ID`) before its values reach a pyarrow comparison: a bad cursor is always
an invalid_argument with a hint, never an internal error. The key: docs/decisions/1021.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from memlake.errors import InvalidArgument, Unavailable
from memlake.ids import ID_PATTERN
from memlake.store.base import ObjectNotFound, ObjectStore, PreconditionFailed

#: Where a deployment without MEMLAKE_CURSOR_KEY keeps its generated key (outside tenants/).
KEY_OBJECT = "system/cursor-key"
MAX_CURSOR_CHARS = 2048
MAC_BYTES = 16

Cursor = Annotated[
    str | None,
    Field(max_length=MAX_CURSOR_CHARS),
]

#: A position field's check: True when the decoded JSON value is acceptable.
Kind = Callable[[Any], bool]


def INT64(value: Any) -> bool:  # noqa: N802 - named like the constants it stands beside
    return type(value) is int and -(2**63) <= value < 2**63


def TEXT(value: Any) -> bool:  # noqa: N802
    if not isinstance(value, str) or len(value) > 1_000:
        return False
    try:
        value.encode("utf-8")  # a lone surrogate cannot become an Arrow string
    except UnicodeEncodeError:
        return False
    return True


def ID(value: Any) -> bool:  # noqa: N802
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def _invalid() -> InvalidArgument:
    return InvalidArgument(
        "cursor is not valid: it was changed, made for another tenant or deployment, or is not"
        " a next_cursor of this tool",
        hint="Pass next_cursor exactly as the previous call returned it, or drop cursor to"
        " start over from the first page.",
    )


def fingerprint(listing: str, *filters: Any) -> str:
    raw = json.dumps([listing, *filters], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass(frozen=True)
class Pager:
    """Encodes and checks the cursors of one listing, for one tenant, with one set of filters.

    `key(create)` gives the deployment's key; with create=False it may answer None (no key was
    ever made, so no cursor can be valid): checking a cursor never writes anything."""

    key: Callable[[bool], bytes | None]
    tenant: str
    fp: str
    kinds: tuple[Kind, ...]

    def _mac(self, key: bytes, fp: str, position: list[Any]) -> str:
        msg = json.dumps([self.tenant, fp, position], ensure_ascii=False, separators=(",", ":"))
        return _b64(hmac.new(key, msg.encode(), hashlib.sha256).digest()[:MAC_BYTES])

    def encode(self, position: Sequence[Any]) -> str:
        pos = list(position)
        if len(pos) != len(self.kinds) or not all(
            ok(v) for ok, v in zip(self.kinds, pos, strict=True)
        ):
            raise ValueError(f"position {pos!r} does not fit this listing")  # a bug, not input
        key = self.key(True)
        if key is None:  # pragma: no cover - create=True always yields a key
            raise RuntimeError("no cursor key")
        raw = json.dumps([pos, self.fp, self._mac(key, self.fp, pos)], ensure_ascii=False)
        return _b64(raw.encode())

    def decode(self, cursor: str) -> list[Any]:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            position, fp, mac = json.loads(raw)
        except (ValueError, TypeError, RecursionError, binascii.Error):
            raise _invalid() from None
        if not (isinstance(position, list) and isinstance(fp, str) and isinstance(mac, str)):
            raise _invalid()
        key = self.key(False)
        if key is None:
            raise _invalid()
        try:
            expected = self._mac(key, fp, position)
        except (TypeError, ValueError, RecursionError):
            raise _invalid() from None
        if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "replace")):
            raise _invalid()
        if fp != self.fp:
            raise InvalidArgument(
                "cursor belongs to another listing or to other filters",
                hint="Keep the filters the same while paging, or drop cursor to start over.",
            )
        if len(position) != len(self.kinds) or not all(
            ok(v) for ok, v in zip(self.kinds, position, strict=True)
        ):
            raise _invalid()
        return position


def pager(
    store: ObjectStore,
    tenant: str,
    listing: str,
    kinds: tuple[Kind, ...],
    *filters: Any,
    configured_key: str = "",
) -> Pager:
    """The pager of a listing of `tenant`, with the deployment's key (`configured_key`:
    Settings.cursor_key, else the key kept in `store`)."""
    return Pager(
        lambda create: cursor_key(store, configured_key, create=create),
        tenant,
        fingerprint(listing, *filters),
        kinds,
    )


_keys: dict[int, tuple[ObjectStore, bytes]] = {}
_keys_lock = threading.Lock()


def cursor_key(store: ObjectStore, configured: str = "", *, create: bool = True) -> bytes | None:
    """The deployment's cursor key: MEMLAKE_CURSOR_KEY when set, else a random key kept in the
    store (created once, first writer wins), so every process on one lake agrees. Without
    create, None when the store has no key yet."""
    if configured:
        return hashlib.sha256(b"memlake-cursor:" + configured.encode()).digest()
    with _keys_lock:
        hit = _keys.get(id(store))
        if hit is not None and hit[0] is store:
            return hit[1]
        key = _stored_key(store, create)
        if key is not None:
            _keys[id(store)] = (store, key)
        return key


def _stored_key(store: ObjectStore, create: bool, attempts: int = 5) -> bytes | None:
    for attempt in range(attempts):
        try:
            raw = store.get(KEY_OBJECT)
            return hashlib.sha256(b"memlake-cursor:" + raw.strip()).digest()
        except ObjectNotFound:
            if not create:
                return None
        fresh = secrets.token_hex(32).encode()
        try:
            store.put(KEY_OBJECT, fresh, if_absent=True)
            return hashlib.sha256(b"memlake-cursor:" + fresh).digest()
        except PreconditionFailed:
            # another process is making it: S3 answers 409 while that put is in flight, so
            # theirs may not be readable yet; read again after a short pause
            time.sleep(0.05 * (attempt + 1))
    raise Unavailable("the cursor key is being created by another process", hint="Retry the call.")
