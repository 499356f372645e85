"""`memlake check`: is every object of a tenant there and intact?

Walks the manifest chain (every version still stored, contiguous up to the newest, and the
`_latest.json` hint) and every object the newest readable manifest names: its segments (the
sha256 the manifest records, the size, a full Parquet read) and its index shards (the same,
and a full parse of the shard). Reads each object whole, once: the cost of a check is reading
the tenant's current objects. Nothing is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memlake.errors import CorruptObject, MemlakeError, NotFound
from memlake.lake import keys, manifest_log
from memlake.lake.checksums import digest
from memlake.lake.manifest import Manifest
from memlake.lake.segments import read_parquet
from memlake.search.index.shard import Shard
from memlake.search.index.state import SearchState
from memlake.store.base import ObjectNotFound, ObjectStore

#: Manifest.extra: the damaged manifest versions `memlake repair` went around
REPAIRED_VERSIONS = "repaired_versions"


@dataclass(frozen=True)
class Damage:
    """One damaged object: what it is (manifest, segment, shard, hint), and what is wrong."""

    key: str
    kind: str
    problem: str  # missing | checksum | size | unreadable
    detail: str = ""
    table: str = ""
    version: int = 0  # a manifest's version
    rows: int = 0  # a segment's rows, a shard's docs


@dataclass
class CheckReport:
    tenant: str
    newest_version: int = 0  # of the manifests stored (or the hint names)
    readable_version: int = 0  # the newest intact one: what reads use
    manifests_checked: int = 0
    objects_checked: int = 0
    bytes_checked: int = 0
    unverified: int = 0  # objects written before checksums were recorded (size and parse only)
    damage: list[Damage] = field(default_factory=list)
    #: damaged manifest versions a repair went around (kept: nothing is deleted; not damage)
    repaired: list[int] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.damage

    def damaged_keys(self, kind: str) -> dict[str, Damage]:
        return {d.key: d for d in self.damage if d.kind == kind}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["clean"] = self.clean
        out["damage"] = [{k: v for k, v in asdict(d).items() if v} for d in self.damage]
        return out


def manifest_versions(store: ObjectStore, tenant: str) -> list[int]:
    """Every manifest version stored for the tenant (a LIST: maintenance only)."""
    prefix = keys.tenant_prefix(tenant) + keys.MANIFEST_DIR + "/"
    found = (keys.version_of_manifest_key(o.key) for o in store.list(prefix))
    return sorted(v for v in found if v is not None)


def _hint(store: ObjectStore, tenant: str) -> tuple[int | None, str]:
    try:
        text = store.get(keys.hint_key(tenant)).decode(errors="replace").strip()
    except ObjectNotFound:
        return None, ""
    return (int(text), "") if text.isdigit() else (None, f"holds {text[:40]!r}")


def _check_chain(store: ObjectStore, tenant: str, report: CheckReport) -> Manifest:
    versions = manifest_versions(store, tenant)
    hinted, bad_hint = _hint(store, tenant)
    if bad_hint:
        report.damage.append(Damage(keys.hint_key(tenant), "hint", "unreadable", bad_hint))
    stored = max(versions, default=0)
    if hinted is not None and hinted > stored + 1:
        why = f"names version {hinted}, the newest stored is {stored}"
        report.damage.append(Damage(keys.hint_key(tenant), "hint", "unreadable", why))
    newest = stored + 1 if hinted == stored + 1 else stored
    report.newest_version = newest
    present = set(versions)
    readable = Manifest.empty(tenant)
    for version in range(min(versions, default=1), newest + 1):
        key = keys.manifest_key(tenant, version)
        report.manifests_checked += 1
        if version not in present:
            why = "the hint names it" if version == hinted else "a gap in the version chain"
            report.damage.append(Damage(key, "manifest", "missing", why, version=version))
            continue
        try:
            readable = manifest_log.load_manifest(store, tenant, version)
        except manifest_log.ManifestCut:
            continue  # an erasure cut the history here (decision 4801): not damage
        except (CorruptObject, NotFound) as e:
            report.damage.append(Damage(key, "manifest", "unreadable", e.message, version=version))
    report.readable_version = readable.version
    known = set(readable.extra.get(REPAIRED_VERSIONS, ()))
    report.repaired = sorted(d.version for d in report.damage if d.version in known)
    report.damage = [d for d in report.damage if d.version not in known]
    return readable


def _read(store: ObjectStore, key: str, size: int, sha256: str) -> tuple[bytes | None, str, str]:
    """(bytes, problem, detail): bytes None when the object is missing or does not match."""
    try:
        data = store.get(key)
    except ObjectNotFound:
        return None, "missing", "the manifest names it"
    if size and len(data) != size:
        return None, "size", f"{len(data)} bytes, the manifest records {size}"
    if sha256 and digest(data) != sha256:
        return None, "checksum", "its sha256 does not match the manifest"
    return data, "", ""


def inspect_object(
    store: ObjectStore, key: str, kind: str, size: int, sha256: str
) -> tuple[int, str, str]:
    """(bytes read, problem, detail) of one segment or shard: problem "" when it is intact."""
    data, problem, detail = _read(store, key, size, sha256)
    if data is None:
        return 0, problem, detail
    try:
        if kind == "segment":
            read_parquet(data)
        else:
            Shard.from_bytes(data)
    except MemlakeError as e:
        return len(data), "unreadable", e.message
    except Exception as e:  # a parser's error on foreign bytes: the finding, not a crash
        return len(data), "unreadable", f"{type(e).__name__}: {e}"
    return len(data), "", ""


def _check_object(
    store: ObjectStore,
    report: CheckReport,
    target: tuple[str, str, str],
    size: int,
    sha256: str,
    rows: int,
) -> None:
    key, kind, table = target
    report.objects_checked += 1
    report.unverified += not sha256
    nbytes, problem, detail = inspect_object(store, key, kind, size, sha256)
    report.bytes_checked += nbytes
    if problem:
        report.damage.append(Damage(key, kind, problem, detail, table=table, rows=rows))


def check_tenant(store: ObjectStore, tenant: str) -> CheckReport:
    """The tenant's damage report (empty `damage`: clean)."""
    report = CheckReport(tenant)
    manifest = _check_chain(store, tenant, report)
    for table, segments in sorted(manifest.tables.items()):
        for ref in segments:
            target = (ref.key, "segment", table)
            _check_object(store, report, target, ref.bytes, ref.sha256, ref.rows)
    try:
        state = SearchState.from_extra(manifest.extra)
    except MemlakeError as e:
        key = keys.manifest_key(tenant, manifest.version)
        report.damage.append(Damage(key, "manifest", "unreadable", e.message))
        state = None
    for info in state.shards if state is not None else ():
        target = (info.key, "shard", "")
        _check_object(store, report, target, info.bytes, info.sha256, info.docs)
    return report
