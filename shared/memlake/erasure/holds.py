"""Whether one stored object still holds an erased target, by decoding it: a segment's rows
(memlake.erasure.rules), a shard's docs (ids and the commit version of each). Used by the pass
for objects no manifest names (a lost race's) and by `memlake check --erased` for every
object of the tenant."""

from __future__ import annotations

from memlake.erasure.rules import RULES, Targets, matches
from memlake.lake.segments import read_parquet
from memlake.search.index.shard import Shard
from memlake.store.base import ObjectNotFound, ObjectStore


def table_of(key: str) -> str | None:
    """The table a segment key belongs to (`tenants/<t>/tables/<table>/<id>.parquet`)."""
    parts = key.split("/")
    if len(parts) == 5 and parts[2] == "tables" and parts[4].endswith(".parquet"):
        return parts[3]
    return None


def is_shard(key: str) -> bool:
    parts = key.split("/")
    return len(parts) == 4 and parts[2] == "search" and parts[3].endswith(".npz")


def held(store: ObjectStore, key: str, targets: Targets) -> set[str]:
    """The targets the object at `key` holds (empty: none, or it is not a segment or shard,
    or it is gone). Raises what decoding a damaged object raises."""
    table = table_of(key)
    try:
        if table is not None and table in RULES:
            data = read_parquet(store.get(key))
            rule = RULES[table]
            rows = matches(data, 0, rule, targets)
            if not rows:
                return set()
            ids = targets.all_ids()
            found: set[str] = set()
            for column, _ in rule.columns:
                values = data.column(column).take(rows).to_pylist()
                found.update(v for v in values if v in ids)
                if rule.json_id:
                    found.update(i for v in values for i in ids if v and f'"{i}"' in v)
            return found
        if is_shard(key) and targets.episodes:
            shard = Shard.from_bytes(store.get(key))
            seqs = shard.seq.tolist()
            return {
                i
                for i, seq in zip(shard.id_list, seqs, strict=True)
                if i in targets.episodes and seq <= targets.episodes[i]
            }
    except ObjectNotFound:
        return set()
    return set()
