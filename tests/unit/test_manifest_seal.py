"""A stored manifest carries the sha256 of its own bytes as its last member: every flipped
bit and every truncation is refused, and a manifest written before checksums still reads."""

from __future__ import annotations

import json

import pytest

from memlake.lake.manifest import Manifest, SegmentRef

MANIFEST = Manifest(
    "acme",
    7,
    "2026-11-26T12:00:00.000000Z",
    {"episodes": (SegmentRef("tenants/acme/tables/episodes/a.parquet", 7, 2, 90, "a", "b"),)},
    {"search": {"format": 1, "shards": []}},
)
DAMAGE = (ValueError, KeyError, TypeError, AttributeError)


def test_round_trip_and_a_manifest_from_before_checksums() -> None:
    data = MANIFEST.to_bytes()
    assert Manifest.from_bytes(data) == MANIFEST
    unsealed = {k: v for k, v in json.loads(data).items() if k != "sha256"}
    assert Manifest.from_bytes(json.dumps(unsealed).encode()) == MANIFEST


def test_every_flipped_bit_and_every_truncation_is_refused() -> None:
    data = MANIFEST.to_bytes()
    for at in range(len(data)):
        for bit in range(8):
            bad = bytearray(data)
            bad[at] ^= 1 << bit
            with pytest.raises(DAMAGE):
                Manifest.from_bytes(bytes(bad))
    for end in range(len(data)):
        with pytest.raises(DAMAGE):
            Manifest.from_bytes(data[:end])
