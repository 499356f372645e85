"""The JSON side of `memlake export` / `import`: values to JSON and back, and a progress bar."""

from __future__ import annotations

import base64
import binascii
import math
import sys
import time
from datetime import date, datetime
from typing import IO, Any

import pyarrow as pa

from memlake.timeutil import iso, parse_time


class Progress:
    """A one-line progress bar on stderr. Hand-written rather than tqdm: the Lambda image
    installs exactly pyproject's runtime dependencies, and a CLI-only bar is not worth one."""

    def __init__(self, label: str, total: int, stream: IO[str] | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = 0.0

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.tty and time.monotonic() - self._drawn > 0.1:
            self._draw("\r")

    def _draw(self, lead: str) -> None:
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * 30)
        self.stream.write(f"{lead}{self.label} [{bar:<30}] {self.done}/{self.total} rows")
        self.stream.flush()
        self._drawn = time.monotonic()

    def close(self) -> None:
        self._draw("\r" if self.tty else "")
        self.stream.write("\n")
        self.stream.flush()


def json_safe(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def from_json(value: Any, typ: pa.DataType, where: str) -> Any:
    """A JSON value back to what pyarrow expects for `typ` (timestamps, binary, nesting)."""
    if value is None:
        return None
    if pa.types.is_timestamp(typ):
        if not isinstance(value, str):
            raise ValueError(f"{where} must be an ISO 8601 time string")
        return parse_time(value, field=where)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ValueError(f"{where} must be base64 text") from None
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        return [from_json(v, typ.value_type, where) for v in value]
    if pa.types.is_struct(typ):
        if not isinstance(value, dict):
            raise ValueError(f"{where} must be an object")
        return {f.name: from_json(value.get(f.name), f.type, where) for f in typ}
    return value
