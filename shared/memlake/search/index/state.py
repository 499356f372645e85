"""Shard layout in the manifest: which shards exist, what they hold, and how writes reshape them.

The state lives in Manifest.extra["search"] and commits atomically with the episode rows:

    {"format": 1, "model": "all-MiniLM-L6-v2", "dim": 384,
     "shards": [{"key": "tenants/<t>/search/<id>.npz", "docs": 64, "chunks": 301, "bytes": ...,
                 "seq": [first, last], "time": [min start us, max end us],
                 "contexts": [...] or null (too many), "none": true (some docs have no context),
                 "dead": [episode ids deleted or superseded since the shard was built],
                 "tier": 0, "tail": true, "format": 2}, ...]}

States written before the `vector_backlog` table (memlake.search.index.backlog, decision 2503)
also carry `"pending": {"<episode id>": passages not embedded yet}`; it is read, and the
deferred pass moves it into the table.

The shard layout that writes this state (tiers, merges, purges) is memlake.search.index.layout;
searches read it to pick the shards that may match (ShardInfo.may_match).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from typing import Any

from memlake.errors import ConfigurationError

FORMAT = 1
EXTRA_KEY = "search"


@dataclass(frozen=True)
class ShardInfo:
    key: str
    docs: int
    chunks: int
    bytes: int
    seq: tuple[int, int]
    time: tuple[int, int]
    contexts: tuple[str, ...] | None
    none: bool
    dead: tuple[str, ...] = ()
    tier: int = 0
    tail: bool = False
    format: int = 1  # the shard object's format (memlake.search.index.FORMAT)
    sha256: str = ""  # of the object's bytes ("" in states written before checksums)
    #: where each array of a big shard lies (name, first data byte, dtype, shape): a cold
    #: search opens it without reading its directory and headers (npz_layout, decision 4401);
    #: () for small shards and states written before
    arrays: tuple[tuple[str, int, str, tuple[int, ...]], ...] = ()

    @property
    def live(self) -> int:
        return self.docs - len(self.dead)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "docs": self.docs,
            "chunks": self.chunks,
            "bytes": self.bytes,
            "seq": list(self.seq),
            "time": list(self.time),
            "contexts": None if self.contexts is None else list(self.contexts),
            "none": self.none,
            "dead": list(self.dead),
            "tier": self.tier,
            "tail": self.tail,
            "format": self.format,
            **({"sha256": self.sha256} if self.sha256 else {}),
            **({"arrays": self.array_table()} if self.arrays else {}),
        }

    def array_table(self) -> dict[str, list[Any]]:
        """`arrays` as the manifest writes it (npz_layout.to_json's shape)."""
        return {n: [a, d, list(sh)] for n, a, d, sh in self.arrays}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ShardInfo:
        ctx = d.get("contexts")
        return cls(
            key=d["key"],
            docs=int(d["docs"]),
            chunks=int(d["chunks"]),
            bytes=int(d.get("bytes", 0)),
            seq=(int(d["seq"][0]), int(d["seq"][1])),
            time=(int(d["time"][0]), int(d["time"][1])),
            contexts=None if ctx is None else tuple(ctx),
            none=bool(d.get("none", False)),
            dead=tuple(d.get("dead", ())),
            tier=int(d.get("tier", 0)),
            tail=bool(d.get("tail", False)),
            format=int(d.get("format", 1)),
            sha256=str(d.get("sha256", "")),
            arrays=_arrays(d.get("arrays")),
        )

    def may_match(self, context: str | None, start_us: int | None, end_us: int | None) -> bool:
        """False when no doc of this shard can pass the filters (so it is not even loaded)."""
        if self.live <= 0:
            return False
        if start_us is not None and self.time[1] < start_us:
            return False
        if end_us is not None and self.time[0] > end_us:
            return False
        return context is None or self.contexts is None or context in self.contexts


def _arrays(doc: Any) -> tuple[tuple[str, int, str, tuple[int, ...]], ...]:
    """A shard's array table as the manifest holds it; anything else reads as none (the
    reader then learns the layout from the object itself, as before the table existed)."""
    if not isinstance(doc, dict):
        return ()
    try:
        return tuple((str(n), a, str(d), tuple(sh)) for n, (a, d, sh) in doc.items())
    except (TypeError, ValueError):
        return ()


@dataclass(frozen=True)
class SearchState:
    model: str
    dim: int
    shards: tuple[ShardInfo, ...] = field(default=())
    #: the legacy map: episode id -> passages not embedded yet (decision 2503)
    pending: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> SearchState | None:
        doc = extra.get(EXTRA_KEY)
        if not doc:
            return None
        if doc.get("format") != FORMAT:
            raise ConfigurationError(f"unsupported search index format {doc.get('format')!r}")
        shards = tuple(ShardInfo.from_json(s) for s in doc.get("shards", ()))
        pending = {str(k): int(v) for k, v in (doc.get("pending") or {}).items()}
        return cls(model=str(doc["model"]), dim=int(doc["dim"]), shards=shards, pending=pending)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "model": self.model,
            "dim": self.dim,
            "shards": [s.to_json() for s in self.shards],
        }
        if self.pending:
            out["pending"] = dict(sorted(self.pending.items()))
        return out

    def check_model(self, model: str, dim: int) -> None:
        if (self.model, self.dim) != (model, dim):
            raise ConfigurationError(
                f"this memory store's search index holds {self.model} vectors ({self.dim} dims)"
                f" but the server embeds with {model} ({dim} dims); vectors of different models"
                " cannot be compared",
                hint="Set MEMLAKE_EMBEDDER (and MEMLAKE_BEDROCK_DIMENSIONS, or MEMLAKE_EMBED_MODEL"
                " and MEMLAKE_EMBED_DIM) back to the model the store was built with; or copy the"
                " store to the new model: memlake reembed --tenant T --to NEW_DIR, run with the"
                " new settings, embeds every episode again into a new lake.",
            )

    def shard_of_seq(self, seq: int) -> int | None:
        """Position of the shard whose commit range holds `seq` (None if none does)."""
        firsts = [s.seq[0] for s in self.shards]
        pos = bisect.bisect_right(firsts, seq) - 1
        if pos >= 0 and self.shards[pos].seq[0] <= seq <= self.shards[pos].seq[1]:
            return pos
        return None

    def mark_dead(self, ids_by_seq: dict[str, int]) -> SearchState:
        """Mark old versions (episode id -> commit version it was written in) dead."""
        shards = list(self.shards)
        for episode_id, seq in ids_by_seq.items():
            pos = self.shard_of_seq(seq)
            if pos is not None and episode_id not in shards[pos].dead:
                shards[pos] = replace(shards[pos], dead=shards[pos].dead + (episode_id,))
        return replace(self, shards=tuple(shards))
