"""Finding a tenant's manifests: the newest version without LIST, and one version by number.

Versions are contiguous (`manifest/<version:020d>.json`, each put create-exclusive), so the
newest is found from a known version (the reader's cached one, or the `_latest.json` hint) by a
gallop of existence checks and then a binary search: a warm reader spends one request (does
version+1 exist?). The hint is best effort; a reader never trusts it past what exists.
"""

from __future__ import annotations

from memlake.errors import NotFound
from memlake.lake import keys
from memlake.lake.manifest import Manifest
from memlake.store.base import ObjectNotFound, ObjectStore


def read_hint(store: ObjectStore, tenant: str) -> int:
    """The version `_latest.json` names (0 when it is missing or unreadable)."""
    try:
        return int(store.get(keys.hint_key(tenant)).decode().strip() or 0)
    except (ObjectNotFound, ValueError):
        return 0


def newest_version(store: ObjectStore, tenant: str, known: int) -> int:
    """The newest version at or after `known` (which must exist, or be 0)."""

    def exists(version: int) -> bool:
        return store.exists(keys.manifest_key(tenant, version))

    lo, step = known, 1
    while exists(lo + step):
        lo, step = lo + step, step * 2
    hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if exists(mid):
            lo = mid
        else:
            hi = mid
    return lo


def load_manifest(store: ObjectStore, tenant: str, version: int) -> Manifest:
    """Version `version` of the tenant's manifest (0: the empty one), or NotFound."""
    if version == 0:
        return Manifest.empty(tenant)
    try:
        return Manifest.from_bytes(store.get(keys.manifest_key(tenant, version)))
    except ObjectNotFound as e:
        raise NotFound(
            f"version {version} of this memory store does not exist or was collected",
            hint="Use a newer version.",
        ) from e
