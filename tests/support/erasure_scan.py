"""Scan every object of a tenant, decoded, for what an erasure must have removed: a word
(Parquet columns of any type, manifests, shards' term dictionaries and texts), an id (live rows
of any table but the erasure receipts; shards' doc ids) and a vector (rows of any float array
of a shard). Issue 48's proof: after delete_episode and one maintenance pass, nothing holds
them."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from memlake.store.base import ObjectStore


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _parquet_hits(data: bytes, words: list[str], ids: list[str], where: str) -> list[str]:
    table = pq.read_table(io.BytesIO(data))
    out = []
    # receipts and the audit keep ids (what was erased; who linked what), never words
    ids_kept = "/tables/erasures/" in where or "/tables/audit/" in where
    for row in table.to_pylist():
        texts = list(_strings({k: v for k, v in row.items() if k not in ("_deleted", "_seq")}))
        blob = "\n".join(texts).lower()
        out += [f"{where}: word {w!r}" for w in words if w.lower() in blob]
        if not row.get("_deleted") and not ids_kept:
            out += [f"{where}: id {i}" for i in ids if i in texts]
    return out


def _npz_hits(
    data: bytes, words: list[str], ids: list[str], vectors: list[np.ndarray], where: str
) -> list[str]:
    out = []
    lowered = data.lower()
    out += [f"{where}: word {w!r} (bytes)" for w in words if w.lower().encode() in lowered]
    out += [f"{where}: id {i} (bytes)" for i in ids if i.encode() in data]
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        for name in npz.files:
            arr = npz[name]
            if arr.dtype == np.uint8 or arr.dtype.kind in "USO":
                raw = arr.tobytes() if arr.dtype == np.uint8 else "\n".join(map(str, arr.ravel()))
                text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                out += [
                    f"{where}: word {w!r} in {name}" for w in words if w.lower() in text.lower()
                ]
                out += [f"{where}: id {i} in {name}" for i in ids if i in text]
            if arr.dtype.kind == "f" and arr.ndim == 2 and vectors:
                rows = arr.astype(np.float32)
                norms = np.linalg.norm(rows, axis=1, keepdims=True)
                rows = rows / np.maximum(norms, 1e-9)
                for v in vectors:
                    if arr.shape[1] == v.shape[0]:
                        best = float((rows @ (v / np.linalg.norm(v))).max(initial=-1.0))
                        if best > 0.999:
                            out.append(f"{where}: vector in {name} (cosine {best:.4f})")
    return out


def scan(
    store: ObjectStore,
    tenant: str,
    *,
    words: list[str],
    ids: list[str],
    vectors: list[np.ndarray] = (),  # type: ignore[assignment]
    extra_dirs: Iterable[Path] = (),
) -> list[str]:
    """Every place a word, id or vector is still found (empty: none)."""
    hits: list[str] = []
    for obj in store.list(f"tenants/{tenant}/"):
        data = store.get(obj.key)
        hits += _bytes_hits(data, obj.key, words, ids, list(vectors))
    for folder in extra_dirs:
        for path in Path(folder).rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                hits += [f"{path}: word {w!r}" for w in words if w.lower().encode() in data.lower()]
                hits += [f"{path}: id {i}" for i in ids if i.encode() in data]
    return hits


def _bytes_hits(
    data: bytes, key: str, words: list[str], ids: list[str], vectors: list[np.ndarray]
) -> list[str]:
    if key.endswith(".parquet"):
        return _parquet_hits(data, words, ids, key)
    if key.endswith(".npz"):
        return _npz_hits(data, words, ids, vectors, key)
    try:
        text = json.dumps(json.loads(data)).lower()
    except ValueError:
        text = data.decode("utf-8", "replace").lower()
    return [f"{key}: word {w!r}" for w in words if w.lower() in text]


__all__ = ["scan"]
