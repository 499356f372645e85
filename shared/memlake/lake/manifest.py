"""Manifest snapshots: the full list of live segments per table at one commit version."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

FORMAT = 1


@dataclass(frozen=True)
class SegmentRef:
    key: str
    seq: int  # commit version that added it (compaction: the newest consumed seq)
    rows: int
    bytes: int
    min_id: str
    max_id: str
    stats: dict[str, Any] = field(default_factory=dict)
    compacted: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {
            "key": self.key,
            "seq": self.seq,
            "rows": self.rows,
            "bytes": self.bytes,
            "min_id": self.min_id,
            "max_id": self.max_id,
            "stats": self.stats,
        }
        if self.compacted:
            out["compacted"] = True
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SegmentRef:
        return cls(
            key=data["key"],
            seq=int(data["seq"]),
            rows=int(data["rows"]),
            bytes=int(data.get("bytes", 0)),
            min_id=data.get("min_id", ""),
            max_id=data.get("max_id", ""),
            stats=dict(data.get("stats", {})),
            compacted=bool(data.get("compacted", False)),
        )


@dataclass(frozen=True)
class Manifest:
    tenant: str
    version: int
    committed_at: str
    tables: dict[str, tuple[SegmentRef, ...]]
    #: per-feature state that must commit atomically with the segments (embedding model, shards)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(cls, tenant: str) -> Manifest:
        return cls(tenant=tenant, version=0, committed_at="", tables={})

    def segments(self, table: str) -> tuple[SegmentRef, ...]:
        return self.tables.get(table, ())

    def next(self, tables: dict[str, tuple[SegmentRef, ...]], extra: dict[str, Any]) -> Manifest:
        now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        return replace(self, version=self.version + 1, committed_at=now, tables=tables, extra=extra)

    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT,
            "tenant": self.tenant,
            "version": self.version,
            "committed_at": self.committed_at,
            "tables": {t: [s.to_json() for s in segs] for t, segs in sorted(self.tables.items())},
            "extra": self.extra,
        }
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        doc = json.loads(data)
        if doc.get("format") != FORMAT:
            raise ValueError(f"unsupported manifest format {doc.get('format')!r}")
        return cls(
            tenant=doc["tenant"],
            version=int(doc["version"]),
            committed_at=doc["committed_at"],
            tables={
                t: tuple(SegmentRef.from_json(s) for s in segs) for t, segs in doc["tables"].items()
            },
            extra=dict(doc.get("extra", {})),
        )

    def all_keys(self) -> set[str]:
        """Every object this snapshot references: segments, and any key a feature keeps in extra."""
        keys = {s.key for segs in self.tables.values() for s in segs}
        prefix = f"tenants/{self.tenant}/"
        stack: list[Any] = [self.extra]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and item.startswith(prefix):
                keys.add(item)
        return keys
