"""Finding a tenant's manifests: the newest version without LIST, and one version by number.

Versions are contiguous (`manifest/<version:020d>.json`, each put create-exclusive), so the
newest is found from a known version (the reader's cached one, or the `_latest.json` hint) by a
gallop of existence checks and then a binary search: a warm reader spends one request (does
version+1 exist?). The hint is best effort; a reader never trusts it past what exists.
"""

from __future__ import annotations

import logging

from memlake.errors import CorruptObject, NotFound
from memlake.lake import keys
from memlake.lake.checksums import damaged
from memlake.lake.manifest import Manifest
from memlake.pools import LazyPool
from memlake.store.base import ObjectNotFound, ObjectStore


def read_hint(store: ObjectStore, tenant: str) -> int:
    """The version `_latest.json` names (0 when it is missing or unreadable)."""
    try:
        return int(store.get(keys.hint_key(tenant)).decode().strip() or 0)
    except (ObjectNotFound, ValueError):
        return 0


def checked_hint(store: ObjectStore, tenant: str) -> int:
    """The hint's version when a reader may start from it: it exists, or it is missing but the
    version below it exists (a deleted newest manifest: its reader falls back, loudly, and
    writes are refused); 0 for a hint that names nothing near what exists (a damaged hint)."""
    hinted = read_hint(store, tenant)
    if hinted <= 1 or store.exists(keys.manifest_key(tenant, hinted)):
        return hinted
    return hinted if store.exists(keys.manifest_key(tenant, hinted - 1)) else 0


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


def newest_from_hint(store: ObjectStore, tenant: str, hinted: int | None = None) -> Manifest | None:
    """A cold reader's newest manifest in two round trips (decision 4401): the hint, then the
    manifest it names and whether the next version exists, side by side; behind a stale hint,
    the probe goes on from the next version. None when that does not settle it (no hint, the
    manifest missing or damaged): the caller then takes the probing path, which handles
    those. `hinted`: the hint, when the caller read it already."""
    hinted = read_hint(store, tenant) if hinted is None else hinted
    if hinted < 1:
        return None
    newer = _PROBES.get().submit(store.exists, keys.manifest_key(tenant, hinted + 1))
    try:
        manifest: Manifest | None = load_manifest(store, tenant, hinted)
    except (NotFound, CorruptObject):
        manifest = None
    if not newer.result():
        return manifest
    # a hint a version or more behind (a writer stopped between its manifest and the hint):
    # on from the next one, which exists
    try:
        return load_manifest(store, tenant, newest_version(store, tenant, hinted + 1))
    except (NotFound, CorruptObject):
        return None


_PROBES = LazyPool(2, "memlake-manifest")
log = logging.getLogger("memlake.lake")
#: how far below a damaged newest manifest a reader looks for an intact one
FALLBACK_DEPTH = 64


#: what an erasure leaves in place of a manifest it cut (memlake.lake.gc.cut_history): the
#: version still exists (a writer holding an older snapshot loses its race to it instead of
#: writing the version again), and names nothing
CUT_MARKER = b'{"cut":true}'


class ManifestCut(NotFound):
    """A version an erasure cut from the history: it exists and names nothing."""


def cut_marker(store: ObjectStore, tenant: str, version: int) -> None:
    """Put the marker over version `version` (overwriting what it named)."""
    store.put(keys.manifest_key(tenant, version), CUT_MARKER)


def load_manifest(store: ObjectStore, tenant: str, version: int) -> Manifest:
    """Version `version` of the tenant's manifest (0: the empty one); NotFound when it does
    not exist (ManifestCut when an erasure cut it), CorruptObject when its bytes are not an
    intact manifest of this tenant."""
    if version == 0:
        return Manifest.empty(tenant)
    key = keys.manifest_key(tenant, version)
    try:
        data = store.get(key)
    except ObjectNotFound as e:
        raise NotFound(
            f"version {version} of this memory store does not exist or was collected",
            hint="Use a newer version.",
        ) from e
    if data == CUT_MARKER:
        raise ManifestCut(
            f"version {version} of this memory store was cut from its history by an erasure",
            hint="Use a newer version.",
        )
    try:
        manifest = Manifest.from_bytes(data)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise damaged(key, f"not an intact manifest ({e})") from e
    if manifest.tenant != tenant or manifest.version != version:
        raise damaged(key, f"it holds version {manifest.version} of {manifest.tenant!r}")
    return manifest


def newest_intact(
    store: ObjectStore, tenant: str, damaged_version: int, error: CorruptObject | NotFound
) -> Manifest:
    """The newest intact manifest below `damaged_version` (whose reading raised `error`),
    looked for FALLBACK_DEPTH versions down; logs the fall back. Raises `error` when none is."""
    for version in range(damaged_version - 1, max(0, damaged_version - FALLBACK_DEPTH), -1):
        try:
            manifest = load_manifest(store, tenant, version)
        except CorruptObject:
            continue
        except NotFound:
            break  # collected: versions are contiguous above the oldest one GC kept
        log.warning(
            "manifest version %d of tenant %s is damaged (%s); reads use version %d and writes"
            " are refused until `memlake repair`",
            damaged_version,
            tenant,
            error.message,
            version,
        )
        return manifest
    else:
        if damaged_version == 1:  # the tenant's first commit: before it, the tenant was empty
            return Manifest.empty(tenant)
    raise error
