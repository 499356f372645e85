"""The model's weights mapped from its safetensors file (decision 2513): the same tensors as
safetensors' own loader gives, used in place, and a clear EmbeddingError for a damaged file."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from memlake.embed.base import EmbeddingError
from memlake.embed.minilm import default_model_dir
from memlake.embed.minilm_weights import load_weights, mapped_tensors


def test_the_model_maps_to_the_tensors_safetensors_reads() -> None:
    path = default_model_dir() / "model.safetensors"
    mapped = mapped_tensors(path)
    expected = {k: v for k, v in load_file(str(path)).items() if v.dtype == np.float32}
    assert mapped.keys() == expected.keys() and len(mapped) > 100
    for name, tensor in expected.items():
        assert np.array_equal(mapped[name], tensor), name
    word = load_weights(path).word  # 47 MB, used where it lies: read-only, not a copy
    assert not word.flags.writeable and not word.flags.owndata


def _file(tmp_path: Path, header: bytes, data: bytes = b"") -> Path:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def _header(**tensors: dict[str, object]) -> bytes:
    return json.dumps(tensors).encode()


DAMAGED = {
    "empty": b"",
    "shorter than its header size": struct.pack("<Q", 1000) + b"{}",
    "a header size past any model's": struct.pack("<Q", 1 << 40) + b"{}" * 8,
    "a header that is not JSON": struct.pack("<Q", 4) + b"{{{{",
    "a header that is a list": struct.pack("<Q", 2) + b"[]",
}


@pytest.mark.parametrize("name", list(DAMAGED))
def test_a_damaged_file_is_a_clear_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(DAMAGED[name])
    with pytest.raises(EmbeddingError, match="cannot read model weights"):
        mapped_tensors(path)


@pytest.mark.parametrize(
    "meta",
    [
        {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 32]},  # past the end
        {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 16]},  # not its shape's size
        {"dtype": "F32", "shape": [4], "data_offsets": [8, 0]},  # backwards
        {"dtype": "F32", "shape": [4], "data_offsets": [-16, 0]},
        {"dtype": "F32", "shape": [4]},  # no offsets
        {"dtype": "F32", "shape": [-2, -2], "data_offsets": [0, 16]},  # a product that fits
        {"dtype": "F32", "shape": [2**64 + 4], "data_offsets": [0, 16]},  # beyond int64
    ],
)
def test_offsets_that_do_not_fit_are_a_clear_error(tmp_path: Path, meta: dict) -> None:
    path = _file(tmp_path, _header(w=meta), bytes(16))
    with pytest.raises(EmbeddingError, match="cannot read model weights"):
        mapped_tensors(path)


def test_other_dtypes_are_left_out_and_a_missing_tensor_is_named(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.arange(4)}, str(path))
    mapped = mapped_tensors(path)
    assert list(mapped) == ["a"] and mapped["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(EmbeddingError, match="no float32 tensor encoder.layer.0"):
        load_weights(path)
