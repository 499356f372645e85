"""Retrieval quality of BM25 alone, vectors alone and the fused ranking on three dev corpora,
and what search_episodes' answer shows of each question's evidence, by answer size as sent.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/quality_bench.py \
        [--corpus sessions|conversations|realchats|both|all] [--chats 6] [--chat-seed 11] \
        [--conversations 6] [--sessions 40] [--facts 20] [--seed 7] [--real 6] \
        [--real-seed 23] [--evidence-only] [--grid fusion|all]

Corpora (generated, deterministic): tests/bench/conversations.py, two-friend chats like the
held-out benchmark (named speakers, dated sessions, facts stated once in passing, single-hop,
multi-hop, temporal and inference questions; keywords strong); tests/bench/real_chats.py, the
same facts shaped like real messaging-app chats (short split messages, handles, typos); and
tests/bench/sessions.py, long user/assistant sessions with paraphrased questions (vectors
strong). Every session is stored as an episode (context = its conversation, started_at = its
date, title = its topics or none) through the lake's commit hooks, exactly as
add_episode/upsert_episode store them: embedded in chunks and indexed in shards. Each question
is searched within its conversation (context filter, recency off) and scored by recall@5,
recall@10, recall_all@10 (1 when every relevant session is in the top 10) and NDCG@10,
overall and per question kind. The evidence table: the share of questions whose evidence turns
are all in the answer, and the answer's characters as the server sends it (decision 4501).
--grid fusion compares weighted RRF's k, weights and BM25 confidence weighting (the convex
fusion's grid is tests/bench/fusion_grid.py); --grid all also re-indexes with other BM25 field
weights and passage budgets (tests/bench/passages_grid.py compares passage cuts).
"""

from __future__ import annotations

import argparse
import atexit
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.context import Principal, ToolContext  # noqa: E402
from memlake.lake import Transaction  # noqa: E402
from memlake.search import searcher  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index import passages, text  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.services import Services  # noqa: E402
from tests.bench import conversations, sessions  # noqa: E402
from tests.bench.sessions import Question  # noqa: E402


class Conversation(Protocol):
    """What every corpus module yields (tests/bench/sessions.py, tests/bench/conversations.py)."""

    @property
    def name(self) -> str: ...
    @property
    def sessions(self) -> Sequence[str]: ...
    @property
    def titles(self) -> Sequence[str | None]: ...
    @property
    def dates(self) -> Sequence[datetime]: ...
    @property
    def questions(self) -> Sequence[Question]: ...


MODES: dict[str, SearchParams] = {
    "bm25": SearchParams(weights={"bm25": 1.0, "vector": 0.0}),
    "vector": SearchParams(weights={"bm25": 0.0, "vector": 1.0}),
    "fused": SearchParams(),
}


def build(convs: Sequence[Conversation], root: Path | None = None) -> tuple[ToolContext, list[str]]:
    """A fresh local lake holding every session; returns a tool context and ids in order."""
    if root is None:  # a lake of its own, removed when the bench exits (it reads it until then)
        root = Path(tempfile.mkdtemp(prefix="memlake-quality-"))
        atexit.register(shutil.rmtree, root, True)
    settings = Settings(data_dir=root)
    services = Services.build(settings)
    ctx = ToolContext(Principal("quality"), services)
    from memlake.ids import new_id

    ids: list[str] = []
    for conv in convs:
        for body, title, when in zip(conv.sessions, conv.titles, conv.dates, strict=True):
            row: dict[str, Any] = {
                "id": new_id(),
                "content": body,
                "title": title,
                "context": conv.name,
                "started_at": when,
                "created_at": when,
            }

            def change(txn: Transaction, row: dict[str, Any] = row) -> None:
                txn.put("episodes", row)

            services.lake.commit("quality", change)
            ids.append(row["id"])
    return ctx, ids


def _dcg(gains: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


METRICS = ("recall@5", "recall@10", "recall_all@10", "ndcg@10")


def _scores(got: list[str], rel: set[str]) -> dict[str, float]:
    ideal = _dcg([1] * min(10, len(rel)))
    return {
        "recall@5": len(rel & set(got[:5])) / len(rel),
        "recall@10": len(rel & set(got[:10])) / len(rel),
        "recall_all@10": float(rel <= set(got[:10])),
        "ndcg@10": _dcg([1 if g in rel else 0 for g in got[:10]]) / ideal,
    }


def _mean(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}
    out["questions"] = len(rows)
    return out


def evaluate(
    ctx: ToolContext, convs: Sequence[Conversation], ids: list[str], params: SearchParams
) -> dict[str, Any]:
    """Mean metrics over all questions, and the same per question kind under "by_kind"."""
    at = 0
    rows: list[tuple[str, dict[str, float]]] = []
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            hits = search(
                ctx.lake,
                ctx.services.search,
                ctx.tenant,
                query=q.text,
                limit=10,
                context=conv.name,
                recency=False,
                params=params,
            )
            rel = {conv_ids[i] for i in q.relevant}
            rows.append((q.kind, _scores([h.id for h in hits], rel)))
    out = _mean([r for _, r in rows])
    kinds = sorted({k for k, _ in rows})
    out["by_kind"] = {k: _mean([r for kind, r in rows if kind == k]) for k in kinds}
    return out


def report(name: str, m: dict[str, Any], kinds: bool = False) -> None:
    print(
        f"{name:<34} recall@5 {m['recall@5']:.3f}  recall@10 {m['recall@10']:.3f}"
        f"  recall_all@10 {m['recall_all@10']:.3f}  NDCG@10 {m['ndcg@10']:.3f}",
        flush=True,
    )
    for kind, k in m["by_kind"].items() if kinds and len(m["by_kind"]) > 1 else ():
        report(f"  {kind} ({k['questions']})", k | {"by_kind": {}})


def shown_texts(output: Any) -> dict[str, list[str]]:
    """Per episode id, the texts of its content the tool's answer carries."""
    out: dict[str, list[str]] = {}
    for e in output.episodes:
        if e.content is not None and not e.truncated:
            out.setdefault(e.id, []).append(e.content)
        if e.passage.text is not None:
            out.setdefault(e.id, []).append(e.passage.text)
    for ev in output.evidence or []:  # (an older checkout's evidence has passages with text)
        texts = getattr(ev, "excerpts", None) or [p.text for p in getattr(ev, "passages", [])]
        out.setdefault(ev.id, []).extend(texts)
    return out


def answer_chars(output: Any) -> int:
    """Characters of the answer as sent: the JSON of the result in tools/call's text block
    (as the checkout under test encodes it)."""
    from memlake.mcp.errors import ToolOutcome

    sent = ToolOutcome(structured=output.model_dump(mode="json")).to_mcp()
    return len(sent["content"][0]["text"])


def text_chars(output: Any) -> int:
    """Characters of episode text inside the answer (content, passage texts, excerpts)."""
    return sum(len(t) for texts in shown_texts(output).values() for t in texts)


EVIDENCE_METRICS = ("all_shown", "share_shown", "chars", "text")


def evidence_coverage(
    ctx: ToolContext, convs: Sequence[Conversation], ids: list[str], **ask: Any
) -> dict[str, Any]:
    """What the agent receives from search_episodes (`ask`: its arguments beside the query):
    the share of questions whose evidence turns are all in the answer's text, the mean share of
    evidence turns shown, the answer's characters as sent and the episode text inside it;
    overall and per kind."""
    from memlake.tools.search_episodes import SearchEpisodesInput
    from memlake.tools.search_episodes import run as search_tool

    at = 0
    rows: list[tuple[str, dict[str, float]]] = []
    took: list[float] = []
    for conv in convs:
        conv_ids = ids[at : at + len(conv.sessions)]
        at += len(conv.sessions)
        for q in conv.questions:
            if not q.evidence:
                continue
            args = SearchEpisodesInput(query=q.text, context=conv.name, recency=False, **ask)
            began = time.perf_counter()
            output = search_tool(ctx, args)
            took.append(time.perf_counter() - began)
            texts = shown_texts(output)
            hit = [
                any(said in t for t in texts.get(conv_ids[session], []))
                for session, said in q.evidence
            ]
            row = {"all_shown": float(all(hit)), "share_shown": sum(hit) / len(hit)}
            size = {"chars": float(answer_chars(output)), "text": float(text_chars(output))}
            rows.append((q.kind, row | size))

    def mean(part: list[dict[str, float]]) -> dict[str, Any]:
        out: dict[str, Any] = {m: sum(r[m] for r in part) / len(part) for m in EVIDENCE_METRICS}
        return out | {"questions": len(part)}

    out = mean([r for _, r in rows])
    out["p50_ms"] = sorted(took)[len(took) // 2] * 1000
    out["by_kind"] = {
        k: mean([r for kind, r in rows if kind == k]) for k in sorted({k for k, _ in rows})
    }
    return out


def report_evidence(name: str, m: dict[str, Any]) -> None:
    kinds = "  ".join(
        f"{k} {v['all_shown']:.3f}/{v['share_shown']:.3f}" for k, v in m["by_kind"].items()
    )
    print(
        f"{name:<30} all shown {m['all_shown']:.3f}  share shown {m['share_shown']:.3f}"
        f"  answer {m['chars']:,.0f} ch (text {m['text']:,.0f})  p50 {m['p50_ms']:.1f} ms"
        f"  | {kinds}",
        flush=True,
    )


#: what an agent asks for: the compact passage per hit at four limits, evidence at four budgets
#: (answer characters as sent; the table in decision 4501 compares them by answer size)
EVIDENCE_ASKS: dict[str, dict[str, Any]] = {
    **{f"passage, limit {n}": {"content": "passage", "limit": n} for n in (3, 5, 10, 20)},
    **{
        f"evidence, budget {b:,}": {"content": "evidence", "budget": b}
        for b in (2000, 4000, 8000, 16000)
    },
}


def run_evidence(ctx: ToolContext, convs: Sequence[Conversation], ids: list[str]) -> None:
    print("evidence turns in the answer (all shown / share shown per kind):", flush=True)
    for name, ask in EVIDENCE_ASKS.items():
        report_evidence(name, evidence_coverage(ctx, convs, ids, **ask))


def run_modes(ctx: ToolContext, convs: Sequence[Conversation], ids: list[str], tag: str) -> None:
    for mode, params in MODES.items():
        report(f"{tag} {mode}", evaluate(ctx, convs, ids, params), kinds=tag == "default")


def stats(name: str, convs: Sequence[Conversation]) -> None:
    sizes = [len(s.split()) for c in convs for s in c.sessions]
    kinds: dict[str, int] = {}
    for q in (q for c in convs for q in c.questions):
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    print(
        f"== corpus {name}: {len(convs)} conversations, {len(sizes)} sessions"
        f" ({min(len(c.sessions) for c in convs)}-{max(len(c.sessions) for c in convs)} each),"
        f" {min(sizes)}-{max(sizes)} words per session (mean {sum(sizes) / len(sizes):.0f}),"
        f" {sum(kinds.values())} questions: "
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
        flush=True,
    )


def grid(convs: Sequence[Conversation], ctx: ToolContext, ids: list[str], which: str) -> None:
    """The weighted-RRF grid of decision 0301 (the convex fusion's grid is fusion_grid.py), and
    with "all" the BM25 field weight and the passage budget (each re-indexes)."""
    for ref in (None, 0.1, 0.2, 0.3):
        for k in (1.0, 3.0, 10.0, 60.0):
            for wb, wv in ((1.0, 1.0), (1.0, 1.5), (1.5, 1.0)):
                weights = {"bm25": wb, "vector": wv}
                params = SearchParams(fusion="rrf", k=k, weights=weights, confidence_ref=ref)
                name = f"rrf k={k:g} w_bm25={wb} w_vec={wv} conf={ref}"
                report(name, evaluate(ctx, convs, ids, params))
    if which != "all":
        return
    for weight in (1, 3):
        text.FIELD_WEIGHT = weight
        ctx, ids = build(convs)
        run_modes(ctx, convs, ids, f"field_weight={weight}")
    text.FIELD_WEIGHT = 2
    budget = passages.CHUNK_TOKENS
    for tokens in (48, 96, 128):  # turn-aware passages of this many word pieces (decision 1205)
        passages.CHUNK_TOKENS = tokens
        ctx, ids = build(convs)
        run_modes(ctx, convs, ids, f"passages of {tokens} tokens")
    passages.CHUNK_TOKENS = budget


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--corpus", choices=["sessions", "conversations", "realchats", "both", "all"], default="all"
    )
    parser.add_argument("--real", type=int, default=6, help="real_chats.py: conversations")
    parser.add_argument("--real-seed", type=int, default=23, help="real_chats.py: seed")
    parser.add_argument("--evidence-only", action="store_true", help="skip the session metrics")
    parser.add_argument("--chats", type=int, default=6, help="conversations.py: conversations")
    parser.add_argument("--chat-seed", type=int, default=11, help="conversations.py: seed")
    parser.add_argument("--conversations", type=int, default=6, help="sessions.py")
    parser.add_argument("--sessions", type=int, default=40, help="sessions.py")
    parser.add_argument("--facts", type=int, default=20, help="sessions.py")
    parser.add_argument("--seed", type=int, default=7, help="sessions.py")
    parser.add_argument("--grid", choices=["fusion", "all"], default=None)
    args = parser.parse_args()
    corpora: list[tuple[str, Sequence[Conversation]]] = []
    if args.corpus in ("conversations", "both", "all"):
        corpora.append(("conversations", conversations.corpus(args.chats, seed=args.chat_seed)))
    if args.corpus in ("sessions", "both", "all"):
        long = sessions.corpus(args.conversations, args.sessions, args.facts, seed=args.seed)
        corpora.append(("sessions", long))
    if args.corpus in ("realchats", "all"):
        from tests.bench import real_chats

        corpora.append(("realchats", real_chats.corpus(args.real, seed=args.real_seed)))
    searcher.EMBED_CACHE = 1 << 20  # re-indexing for the grid reuses vectors, as a rebuild does
    began = time.perf_counter()
    for name, convs in corpora:
        stats(name, convs)
        t0 = time.perf_counter()
        ctx, ids = build(convs)
        took = time.perf_counter() - t0
        print(f"indexed in {took:.1f} s (chunks of {passages.CHUNK_TOKENS} tokens)", flush=True)
        t0 = time.perf_counter()
        if not args.evidence_only:
            run_modes(ctx, convs, ids, "default")
            print(f"searched in {time.perf_counter() - t0:.1f} s", flush=True)
        t0 = time.perf_counter()
        run_evidence(ctx, convs, ids)
        print(f"evidence in {time.perf_counter() - t0:.1f} s", flush=True)
        if args.grid:
            grid(convs, ctx, ids, args.grid)
    print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
