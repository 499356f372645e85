"""Object keys. Built only from validated tenants, table names and generated ids."""

from __future__ import annotations

from memlake.ids import check_tenant

MANIFEST_DIR = "manifest"
HINT_NAME = "_latest.json"
#: the newest manifest's copy beside the hint (memlake.lake.head_copy)
HEAD_NAME = "_head.json"


def tenant_prefix(tenant: str) -> str:
    return f"tenants/{check_tenant(tenant)}/"


def manifest_key(tenant: str, version: int) -> str:
    if version < 1:
        raise ValueError("manifest versions start at 1")
    return f"{tenant_prefix(tenant)}{MANIFEST_DIR}/{version:020d}.json"


def hint_key(tenant: str) -> str:
    return f"{tenant_prefix(tenant)}{MANIFEST_DIR}/{HINT_NAME}"


def segment_key(tenant: str, table: str, segment_id: str) -> str:
    return f"{tenant_prefix(tenant)}tables/{table}/{segment_id}.parquet"


def object_key(tenant: str, kind: str, name: str) -> str:
    """Any other immutable object of a tenant (index shards, exports): kind/name."""
    return f"{tenant_prefix(tenant)}{kind}/{name}"


def version_of_manifest_key(key: str) -> int | None:
    name = key.rsplit("/", 1)[-1]
    if not name.endswith(".json") or name in (HINT_NAME, HEAD_NAME):
        return None
    stem = name[: -len(".json")]
    return int(stem) if stem.isdigit() else None
