"""Manifest snapshots: the full list of live segments per table at one commit version."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from memlake.lake.checksums import digest

FORMAT = 1
#: Manifest.extra's count of the tenant's erasures (memlake.erasure): a process that sees it
#: grow drops what its caches hold of objects the manifest no longer names
ERASURE_EPOCH = "erasure_epoch"


#: the last member of a stored manifest: the sha256 of the bytes before it (closed by "}")
_SEAL = b',"sha256":"%s"}'
_MEMBERS = {"format", "tenant", "version", "committed_at", "tables", "extra"}


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
    sha256: str = ""  # of the object's bytes ("" in manifests written before checksums)

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
        if self.sha256:
            out["sha256"] = self.sha256
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
            sha256=str(data.get("sha256", "")),
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
        """The manifest as stored: canonical JSON, then the sha256 of those bytes as a last
        member (`,"sha256":"<hex>"}`), so a reader checks the bytes as written, without
        serialising the document a second time (from_bytes)."""
        doc = {
            "format": FORMAT,
            "tenant": self.tenant,
            "version": self.version,
            "committed_at": self.committed_at,
            "tables": {t: [s.to_json() for s in segs] for t, segs in sorted(self.tables.items())},
            "extra": self.extra,
        }
        body = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
        return body[:-1] + _SEAL % digest(body).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """Raises ValueError (or KeyError, TypeError) for bytes that are not an intact manifest;
        memlake.lake.manifest_log turns that into CorruptObject naming the key. A manifest
        written before checksums has no seal and only its structure is checked."""
        at = len(data) - len(_SEAL % (b"0" * 64))
        sealed = at > 0 and data[at:].startswith(_SEAL[:11]) and data.endswith(b'"}')
        body = data[:at] + b"}" if sealed else data
        if sealed and digest(body) != data[at + 11 : at + 75].decode(errors="replace"):
            raise ValueError("its sha256 does not match its content")
        doc = json.loads(body)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        if set(doc) - _MEMBERS:  # e.g. a seal whose bytes were altered into another member
            raise ValueError(f"unknown members {sorted(set(doc) - _MEMBERS)}")
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

    def segment_keys(self) -> set[str]:
        """The keys of every segment of every table."""
        return {s.key for segs in self.tables.values() for s in segs}

    def segments_replaced_by(self, newer: Manifest) -> set[str]:
        """The segments this manifest names and `newer` does not (compaction's inputs, a
        rewrite's old part)."""
        if newer.tables is self.tables:
            return set()
        return self.segment_keys() - newer.segment_keys()

    def all_keys(self) -> set[str]:
        """Every object this snapshot references: segments, and any key a feature keeps in extra."""
        keys = self.segment_keys()
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
