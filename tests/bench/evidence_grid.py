"""The evidence selection's grid (decisions 2401, 4501): which unit scores and windows put the
evidence turns into the answer, at which budgets (characters of the answer as sent), on the
dev corpora.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/evidence_grid.py \
        [--corpus conversations|sessions|realchats] [--lake DIR] \
        [--budgets 2000,4000,8000,16000] [--limits 10,20] [--only NAME,NAME] [--turn-vectors]

Each question is searched once per candidate count (the episode search, as search_episodes runs
it: context filter, recency off), then memlake.search.query.evidence.select runs with each
setting over the same hits. Cells: all evidence turns shown / share shown; `reach` is the share
of questions whose evidence sessions are all among the candidates (the ceiling for any
setting). `--lake DIR` keeps the indexed lake there and reuses it on the next run (one run per
directory at a time). `--turn-vectors` embeds every unit of every session on its own and runs
each setting also with a unit's meaning from its own vector ("turns") or the best of it and
its passages' ("max"): what per-turn vectors written with the episode would give.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal, ToolContext  # noqa: E402
from memlake.search.answers import ENVELOPE, AsSent  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.query import unit_pool  # noqa: E402
from memlake.search.query.best_passage import chunk_rows  # noqa: E402
from memlake.search.query.evidence import DEFAULT_EVIDENCE, EvidenceParams, select  # noqa: E402
from memlake.search.query.units import UNITS  # noqa: E402
from memlake.services import Services  # noqa: E402
from tests.bench import conversations, quality_bench, sessions  # noqa: E402


def lake(convs: Any, where: Path | None) -> tuple[ToolContext, list[str]]:
    if where is None:
        return quality_bench.build(convs)
    ids_file = where.with_suffix(".ids")
    if where.exists() and ids_file.exists():
        ctx = ToolContext(Principal("quality"), Services.build(Settings(data_dir=where)))
        return ctx, pickle.loads(ids_file.read_bytes())
    ctx, ids = quality_bench.build(convs, where)
    ids_file.write_bytes(pickle.dumps(ids))
    return ctx, ids


def searched(ctx: ToolContext, convs: Any, ids: list[str], limit: int) -> list[dict[str, Any]]:
    """Per question: its hits, their chunk rows, and where its evidence turns are."""
    out = []
    at = 0
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            hits = search(
                ctx.lake,
                ctx.services.search,
                ctx.tenant,
                query=q.text,
                limit=limit,
                context=conv.name,
                recency=False,
            )
            chunks = chunk_rows(hits[0].snapshot, [h.id for h in hits]) if hits else {}
            evidence = []
            for session, said in q.evidence:
                begin = conv.sessions[session].index(said)
                evidence.append((conv_ids[session], begin, begin + len(said)))
            out.append(
                {"q": q, "hits": hits, "chunks": chunks, "evidence": evidence, "context": conv.name}
            )
    return out


def coverage(
    asked: list[dict[str, Any]],
    model: str,
    budget: int,
    params: EvidenceParams,
    max_hits: int | None = None,
) -> dict[str, Any]:
    rows: list[tuple[str, float, float, float]] = []
    episodes = 0
    for a in asked:
        room = budget - ENVELOPE  # the budget counts the answer as sent (decision 4501)
        costs = AsSent(a["context"])
        found = select(a["hits"], a["chunks"], a["q"].text, model, room, max_hits, params, costs)
        episodes += len(found)
        spans = {e.hit.id: [(s.start, s.end) for s in e.spans] for e in found}
        hit = [any(s <= b and e <= t for s, t in spans.get(eid, [])) for eid, b, e in a["evidence"]]
        chars = ENVELOPE + sum(
            costs.episode(e.hit)
            + sum(costs.excerpt(e.hit.row["content"][s.start : s.end]) for s in e.spans)
            for e in found
        )
        rows.append((a["q"].kind, float(all(hit)), sum(hit) / len(hit), chars))
    kinds = sorted({r[0] for r in rows})
    out: dict[str, Any] = {
        "all": sum(r[1] for r in rows) / len(rows),
        "share": sum(r[2] for r in rows) / len(rows),
        "chars": sum(r[3] for r in rows) / len(rows),
        "episodes": episodes / len(rows),
    }
    out["by_kind"] = {
        k: (
            sum(r[1] for r in rows if r[0] == k) / sum(1 for r in rows if r[0] == k),
            sum(r[2] for r in rows if r[0] == k) / sum(1 for r in rows if r[0] == k),
        )
        for k in kinds
    }
    return out


def reach(asked: list[dict[str, Any]]) -> float:
    ok = [all(eid in {h.id for h in a["hits"]} for eid, _, _ in a["evidence"]) for a in asked]
    return sum(ok) / len(ok)


def line(name: str, m: dict[str, Any]) -> str:
    kinds = "  ".join(f"{k} {a:.3f}/{s:.3f}" for k, (a, s) in m["by_kind"].items())
    return (
        f"{name:<40} {m['all']:.3f} / {m['share']:.3f}  {m['chars']:>6,.0f} ch"
        f" {m['episodes']:4.1f} ep | {kinds}"
    )


BASE = DEFAULT_EVIDENCE
ALONE = EvidenceParams(episode=0, bm25=0, vector=0, speaker=0, neighbours="none", seed=0)
SETTINGS: dict[str, EvidenceParams] = {
    "default": BASE,
    "words only": replace(ALONE, bm25=1),
    "meaning only": replace(ALONE, vector=1),
    "search's passage only (seed, then episode order)": replace(ALONE, episode=1),
    "no seed": replace(BASE, seed=0),
    "seed share 0.25": replace(BASE, seed_share=0.25),
    "seed share 0.75": replace(BASE, seed_share=0.75),
    "seed share 1 (2401)": replace(BASE, seed_share=1.0),
    "seed 5": replace(BASE, seed=5),
    "seed 10": replace(BASE, seed=10),
    "neighbours: none": replace(BASE, neighbours="none"),
    "neighbours: short": replace(BASE, neighbours="short"),
    "neighbours: qa (2401)": replace(BASE, neighbours="qa"),
    "neighbours: speaker": replace(BASE, neighbours="speaker"),
    "episode 0": replace(BASE, episode=0),
    "episode 0.6": replace(BASE, episode=0.6),
    "speaker 0": replace(BASE, speaker=0),
    "vector 0.2": replace(BASE, vector=0.2),
    "vector 0.6": replace(BASE, vector=0.6),
    "bm25 0.3": replace(BASE, bm25=0.3),
}


#: --turn-vectors: each unit's own vector by episode id (a simulation of per-turn vectors
#: written with the episode, decision 4501), and how meaning uses them
TURNS: dict[str, np.ndarray] = {}
TURN_MODE = {"mode": "off"}
_PASSAGE_COSINES = unit_pool.Pool.cosines


def _cosines(pool: unit_pool.Pool, qvec: np.ndarray) -> np.ndarray:
    best = _PASSAGE_COSINES(pool, qvec)
    if TURN_MODE["mode"] == "off":
        return best
    own = best.copy()
    q = np.asarray(qvec, np.float32)
    hit_of = np.asarray(pool.hit_of)
    for i, h in enumerate(pool.hits):
        rows = np.flatnonzero(hit_of == i)
        vectors = TURNS.get(h.id)
        if vectors is not None and len(vectors) == len(rows):
            own[rows] = vectors @ q
    return own if TURN_MODE["mode"] == "turns" else np.maximum(best, own)


def embed_turns(ctx: ToolContext, convs: Any, ids: list[str]) -> float:
    """Every unit of every session embedded on its own (seconds taken)."""
    embedder = ctx.services.search.embedder
    began = time.perf_counter()
    texts = [s for c in convs for s in c.sessions]
    for eid, text in zip(ids, texts, strict=True):
        units = UNITS.get(eid, 0, text).units
        TURNS[eid] = embedder.embed([text[u.start : u.end] for u in units])
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--corpus", choices=["conversations", "sessions", "realchats"], default="conversations"
    )
    parser.add_argument("--lake", type=Path, default=None)
    parser.add_argument("--budgets", default="2000,4000,8000,16000")
    parser.add_argument("--limits", default="10,20")
    parser.add_argument("--only", default=None, help="comma-separated setting names")
    parser.add_argument("--turn-vectors", action="store_true", help="simulate per-turn vectors")
    args = parser.parse_args()
    convs: Any
    if args.corpus == "conversations":
        convs = conversations.corpus(6, seed=11)
    elif args.corpus == "sessions":
        convs = sessions.corpus(6, 40, 20, seed=7)
    else:
        from tests.bench import real_chats

        convs = real_chats.corpus(6, seed=23)
    t0 = time.perf_counter()
    ctx, ids = lake(convs, args.lake)
    print(f"lake ready in {time.perf_counter() - t0:.0f} s", flush=True)
    model = ctx.services.search.embedder.name
    names = args.only.split(",") if args.only else list(SETTINGS)
    modes = ["off"]
    if args.turn_vectors:
        print(f"turn vectors embedded in {embed_turns(ctx, convs, ids):.0f} s", flush=True)
        unit_pool.Pool.cosines = _cosines  # type: ignore[method-assign]
        modes = ["off", "turns", "max"]
    for limit in (int(n) for n in args.limits.split(",")):
        asked = searched(ctx, convs, ids, limit)
        print(f"== {limit} candidate episodes: reach {reach(asked):.3f}", flush=True)
        for budget in (int(b) for b in args.budgets.split(",")):
            for name in names:
                for mode in modes:
                    TURN_MODE["mode"] = mode
                    m = coverage(asked, model, budget, SETTINGS[name])
                    tag = "" if mode == "off" else f" [turn vectors: {mode}]"
                    print(line(f"{budget:,} {name}{tag}", m), flush=True)
                TURN_MODE["mode"] = "off"
            for cap in (5, 10):
                m = coverage(asked, model, budget, DEFAULT_EVIDENCE, cap)
                print(line(f"{budget:,} default, at most {cap} episodes", m), flush=True)


if __name__ == "__main__":
    main()
