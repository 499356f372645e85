"""The MCP reference memory server's memory.json: JSON Lines of entities and relations.

{"type": "entity", "name", "entityType", "observations": [...]} becomes a concept (name, kind =
entityType, description = the observations) and an episode that says what is known of it (its
observations and its relations, searchable by words like any memory), linked to its concept and
to the concepts of the entities it relates to. memlake's concepts have no links between each
other beyond a parent, so {"type": "relation", "from", "to", "relationType"} lives in that
episode's text and its concept links (decision 4601). The file is a knowledge graph of at most
a few MB (the server rewrites it whole on every change), so it is read into memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from memlake.episodes import TABLE as EPISODES
from memlake.importers import records
from memlake.importers.model import Problem, clean_text, clean_title
from memlake.lake import Lake, Transaction
from memlake.layers import episode_versions, links
from memlake.layers.fields import MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS
from memlake.layers.tables import CONCEPTS
from memlake.timeutil import now

SOURCE = "memory_json"
ENTITIES_PER_COMMIT = 200


def looks_like(head: object) -> bool:
    return (
        isinstance(head, dict)
        and head.get("type") in ("entity", "relation")
        and ("name" in head or "from" in head)
    )


@dataclass
class Graph:
    where: str
    entities: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # name -> kind, obs
    relations: list[tuple[str, str, str]] = field(default_factory=list)  # from, type, to


@dataclass(frozen=True)
class Counts:
    entities: int
    concepts: int  # concepts written (new or changed)
    written: int  # entity episodes written
    commits: int


Record = Graph


def read(stream: IO[bytes], where: str) -> Iterator[Graph | Problem]:
    graph = Graph(where)
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            yield Problem(f"{where}, line {number}", "not valid JSON (skipped; the rest imported)")
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity" and clean_title(item.get("name")):
            name = clean_title(item["name"])[:MAX_NAME_CHARS]  # type: ignore[index]
            obs = [clean_text(o) for o in item.get("observations") or [] if isinstance(o, str)]
            old = graph.entities.get(name, ("", []))[1]
            graph.entities[name] = (clean_title(item.get("entityType")) or "concept", old + obs)
        elif kind == "relation" and all(isinstance(item.get(k), str) for k in ("from", "to")):
            rel = clean_title(item.get("relationType")) or "related_to"
            graph.relations.append(
                (clean_title(item["from"]) or "", rel, clean_title(item["to"]) or "")
            )
        else:
            yield Problem(f"{where}, line {number}", "neither an entity nor a relation (skipped)")
    yield graph


def _concept_id(name: str) -> str:
    return f"co{records.identity(SOURCE, name)}"


def _episode_text(name: str, kind: str, obs: list[str], rels: list[tuple[str, str, str]]) -> str:
    lines = [f"{name} ({kind})", ""]
    lines += [f"- {o}" for o in obs] or ["- (no observations)"]
    if rels:
        lines += ["", "Relations:"] + [f"- {a} {r} {b}" for a, r, b in rels]
    return "\n".join(lines)


def _entity(graph: Graph, name: str) -> tuple[str, str, list[tuple[str, str, str]]]:
    """(episode text, its digest, the entity's relations)."""
    kind, obs = graph.entities[name]
    rels = [r for r in graph.relations if name in (r[0], r[2])]
    text = _episode_text(name, kind, obs, rels)
    return text, hashlib.sha256(text.encode()).hexdigest()[:32], rels


def _episode_id(name: str) -> str:
    return records.episode_id(records.identity(SOURCE, name))


def _stage_entity(txn: Transaction, graph: Graph, name: str, context: str | None) -> None:
    kind, obs = graph.entities[name]
    text, digest, rels = _entity(graph, name)
    eid, cid = _episode_id(name), _concept_id(name)
    at = now()
    concept = txn.get(CONCEPTS, cid) or {"id": cid, "parent_id": None, "created_at": at}
    description = "\n".join(obs)[:MAX_DESCRIPTION_CHARS] or None
    concept.update(name=name, kind=kind[:64], description=description, updated_at=at)
    txn.put(CONCEPTS, concept)
    given: dict[str, str | None] = {
        "events": text,
        "source_title": name[:300],
        "platform": SOURCE,
        "client": "mcp-memory-server",
    }
    if txn.get(EPISODES, eid) is None:
        given["context"] = context
    row, _, _ = episode_versions.upsert(txn, eid, given, at=at, default_context=context)
    meta = {"source": SOURCE, "conversation_id": name, "messages": 0, "digest": digest}
    row["metadata"] = json.dumps({records.META_KEY: meta}, ensure_ascii=False)
    txn.put(EPISODES, row)
    related = [b if a == name else a for a, _, b in rels]
    wanted = [cid] + [_concept_id(n) for n in related if n in graph.entities and n != name]
    for other in wanted[1:]:  # a related entity's concept may come in a later commit
        if not txn.exists(CONCEPTS, other):
            other_name = next(n for n in graph.entities if _concept_id(n) == other)
            kind_of = graph.entities[other_name][0][:64]
            txn.put(
                CONCEPTS,
                {"id": other, "name": other_name, "kind": kind_of, "parent_id": None}
                | {"description": None, "created_at": at, "updated_at": at},
            )
    links.set_episode_concepts(txn, eid, list(dict.fromkeys(wanted)))


def write(
    lake: Lake, tenant: str, graph: Graph, known: dict[str, str], dry_run: bool, context: str | None
) -> Counts:
    """Stage the graph's entities in commits of ENTITIES_PER_COMMIT; `known` maps episode ids
    to the digest the lake holds (an unchanged entity is skipped)."""
    names = sorted(graph.entities)
    changed = [n for n in names if known.get(_episode_id(n)) != _entity(graph, n)[1]]
    commits = 0
    for start in range(0, 0 if dry_run else len(changed), ENTITIES_PER_COMMIT):
        chunk = changed[start : start + ENTITIES_PER_COMMIT]

        def change(txn: Transaction, chunk: list[str] = chunk) -> None:
            for name in chunk:
                _stage_entity(txn, graph, name, context)

        lake.commit(tenant, change)
        commits += 1
    return Counts(len(names), len(changed), len(changed), commits)
