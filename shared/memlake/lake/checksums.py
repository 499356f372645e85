"""Checksums of stored objects: sha256, recorded in the manifest, verified on every whole read.

Why sha256 and not crc32c (decision 2701): it is in the standard library (crc32c needs a
compiled extra), S3 verifies it on upload (ChecksumAlgorithm="SHA256", memlake.store.s3) and
stores it, and at ~1.3 GB/s on one core it costs ~1% of a segment's Parquet encoding. A
checksum catches what a partial copy or bit rot leaves: a truncated or altered object. It is
not a signature (whoever can write the bucket can write the manifest too).

A damaged object is a CorruptObject naming its key: not retryable (reading it again returns
the same bytes), with a hint that names the commands that find and fix the damage.
"""

from __future__ import annotations

import hashlib

from memlake.errors import CorruptObject

#: what a model (or an operator) reads when a stored object is damaged
CHECK_HINT = (
    "A stored object is damaged; retrying will not help. An operator runs `memlake check "
    "--tenant <tenant>` to see the damage and `memlake repair --tenant <tenant> --apply` to "
    "bring the tenant back. Reads and writes that do not need this object still work."
)


def digest(data: bytes) -> str:
    """The hex sha256 of an object's bytes, as manifests record it."""
    return hashlib.sha256(data).hexdigest()


def damaged(key: str, why: str) -> CorruptObject:
    """The error for a damaged object (missing, truncated, altered or unparseable)."""
    error = CorruptObject(f"stored object {key} is damaged: {why}", hint=CHECK_HINT)
    error.key = key
    return error


def missing(key: str) -> CorruptObject:
    """The error for an object a manifest names that the store does not hold: damage, unless
    the newest manifest no longer names it (an erasure, compaction or merge removed it while a
    reader held an older one: memlake.tools.base.settled_error makes that retryable)."""
    error = damaged(key, "the manifest names it but it is missing")
    error.missing = True
    return error


def verify(key: str, data: bytes, expected: str) -> bytes:
    """`data` when it matches the recorded checksum (or none is recorded: objects written
    before checksums were recorded), else CorruptObject."""
    if expected and digest(data) != expected:
        raise damaged(key, f"its sha256 does not match the manifest ({len(data)} bytes read)")
    return data
