"""Realistic benchmark vectors: real MiniLM passage vectors, and synthetic ones that spread alike.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python tests/bench/vectors.py [--calibrate]

Real vectors: every distinct passage of the two dev corpora (tests/bench/conversations.py and
tests/bench/sessions.py at quality_bench's defaults, cut by memlake.search.index.passages.plan) and
every distinct question, embedded with MiniLM once and cached in
~/.cache/memlake-bench/real-<hash of the texts>.npy.

Synthetic vectors (any number): 2-3 real vectors mixed with random weights (the first, dominant
one drawn from the episode's "home" session, as a real session's passages share a topic) plus
Gaussian noise, re-normalised. The weights and noise are calibrated (`--calibrate`) so that the
top-1 nearest-neighbour cosine of each vector against the rest of a set of the same size
spreads like the real passages'. Synthetic queries mix real question vectors the same way,
calibrated on their top-1 cosine to the real passages.

Run as a script it prints both histograms (bins of 0.05) with median / p5 / p95.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.index.passages import plan  # noqa: E402
from tests.bench import conversations, sessions  # noqa: E402

F32 = npt.NDArray[np.float32]
CACHE = Path.home() / ".cache" / "memlake-bench"
DIM = 384


@dataclass(frozen=True)
class Mix:
    """How synthetic vectors are made: the dominant weight ~ U(lo, hi), the other 1-2 share the
    rest at random, then Gaussian noise of `sigma` per dimension."""

    lo: float
    hi: float
    sigma: float


# Calibrated with --calibrate (see docs/performance.md, "Realistic benchmark vectors").
PASSAGE_MIX = Mix(0.4, 0.95, 0.01)
QUERY_MIX = Mix(0.7, 0.95, 0.0)


@dataclass(frozen=True)
class Real:
    passages: F32  # (n, 384) unit rows, distinct texts
    groups: list[npt.NDArray[np.int64]]  # row indices of each session's passages
    queries: F32  # (q, 384) unit rows, distinct question texts


def _texts() -> tuple[list[str], list[int], list[str]]:
    """Distinct passage texts, the session of each, and distinct question texts."""
    embedder = MiniLMEmbedder.shared()
    convs: list[Any] = list(conversations.corpus(6, seed=11)) + list(
        sessions.corpus(6, 40, 20, seed=7)
    )
    seen: dict[str, int] = {}
    owner: list[int] = []
    questions: dict[str, None] = {}
    session = 0
    for conv in convs:
        for body, title in zip(conv.sessions, conv.titles, strict=True):
            for p in plan({"content": body, "title": title}, embedder):
                if p.text not in seen:
                    seen[p.text] = len(seen)
                    owner.append(session)
            session += 1
        for q in conv.questions:
            questions.setdefault(q.text, None)
    return list(seen), owner, list(questions)


def _embed_cached(texts: list[str], kind: str) -> F32:
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{kind}-{digest}.npy"
    if path.exists():
        return np.load(path)
    embedder = MiniLMEmbedder.shared()
    out = np.concatenate(
        [
            np.asarray(embedder.embed(texts[i : i + 64]), np.float32)
            for i in range(0, len(texts), 64)
        ]
    )
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def real() -> Real:
    texts, owner, questions = _texts()
    vectors = _embed_cached(texts, "passages")
    own = np.asarray(owner, np.int64)
    groups = [np.flatnonzero(own == s) for s in range(int(own.max()) + 1)]
    return Real(vectors, [g for g in groups if len(g)], _embed_cached(questions, "questions"))


def _mix(base: F32, first: npt.NDArray[np.int64], mix: Mix, rng: np.random.Generator) -> F32:
    """One synthetic vector per entry of `first` (the dominant base row), mixed with 1-2 random
    other rows of `base` and noise, unit length."""
    n = len(first)
    parts = rng.integers(2, 4, size=n)  # 2 or 3 vectors
    lead = rng.uniform(mix.lo, mix.hi, size=n)
    split = rng.uniform(0, 1, size=n)
    w1 = np.where(parts == 3, (1 - lead) * split, 1 - lead)
    w2 = np.where(parts == 3, (1 - lead) * (1 - split), 0.0)
    others = rng.integers(0, len(base), size=(n, 2))
    out = (
        lead[:, None] * base[first]
        + w1[:, None] * base[others[:, 0]]
        + w2[:, None] * base[others[:, 1]]
        + rng.normal(0, mix.sigma, (n, base.shape[1]))
    )
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def passages(r: Real, episodes: int, per: int, seed: int = 5, mix: Mix = PASSAGE_MIX) -> F32:
    """(episodes * per, 384) synthetic passage vectors, episode after episode: each episode's
    dominant components come from one real session's passages."""
    rng = np.random.default_rng(seed)
    home = rng.integers(0, len(r.groups), size=episodes)
    first = np.concatenate([r.groups[h][rng.integers(0, len(r.groups[h]), size=per)] for h in home])
    out = np.empty((episodes * per, r.passages.shape[1]), np.float32)
    step = 65536
    for i in range(0, len(first), step):  # bounded temporaries at 2M rows
        out[i : i + step] = _mix(r.passages, first[i : i + step], mix, rng)
    return out


def queries(r: Real, n: int, seed: int = 9, mix: Mix = QUERY_MIX) -> F32:
    """n query vectors: the real questions first, then synthetic mixes of them."""
    if n <= len(r.queries):
        return r.queries[:n]
    rng = np.random.default_rng(seed)
    first = rng.integers(0, len(r.queries), size=n - len(r.queries))
    return np.concatenate([r.queries, _mix(r.queries, first, mix, rng)])


def mixed_queries(r: Real, n: int, seed: int = 9, mix: Mix = QUERY_MIX) -> F32:
    """n synthetic query vectors only: mixes of the real questions (what `queries` appends
    after them; `queries(r, n)` with n <= the real ones' count is the real ones alone)."""
    return queries(r, len(r.queries) + n, seed, mix)[len(r.queries) :]


def top1_self(v: F32, probes: int | None = None, seed: int = 3) -> F32:
    """Each (or `probes` sampled) vector's highest cosine to another vector of `v`."""
    rows = np.arange(len(v))
    if probes is not None and probes < len(v):
        rows = np.sort(np.random.default_rng(seed).choice(len(v), probes, replace=False))
    out = np.empty(len(rows), np.float32)
    for i in range(0, len(rows), 1024):
        r = rows[i : i + 1024]
        sims = v[r] @ v.T
        sims[np.arange(len(r)), r] = -2.0
        out[i : i + 1024] = sims.max(axis=1)
    return out


def top1_to(q: F32, v: F32) -> F32:
    """Each query's highest cosine to a row of `v`."""
    return np.concatenate([(q[i : i + 1024] @ v.T).max(axis=1) for i in range(0, len(q), 1024)])


def summary(x: F32) -> tuple[float, float, float]:
    return float(np.median(x)), float(np.percentile(x, 5)), float(np.percentile(x, 95))


def table(columns: dict[str, F32]) -> str:
    """Markdown: share of values per 0.05 bin, then median / p5 / p95, one column per set."""
    names = list(columns)
    lo = min(float(c.min()) for c in columns.values())
    edges = np.arange(np.floor(lo * 20) / 20, 1.0001, 0.05)
    lines = ["| top-1 cosine | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        shares = [float(np.mean((c >= a) & (c < b))) for c in columns.values()]
        if max(shares) > 0:
            cells = " | ".join(f"{s:.3f}" for s in shares)
            lines.append(f"| {a:.2f}-{b:.2f} | {cells} |")
    for label, k in (("median", 0), ("p5", 1), ("p95", 2)):
        cells = " | ".join(f"{summary(c)[k]:.3f}" for c in columns.values())
        lines.append(f"| {label} | {cells} |")
    return "\n".join(lines)


def _distance(a: F32, b: F32) -> float:
    qs = [5, 25, 50, 75, 95]
    return float(np.abs(np.percentile(a, qs) - np.percentile(b, qs)).sum())


def calibrate(r: Real) -> tuple[Mix, Mix]:
    """Grid over the mixes: the one whose top-1 quantiles are closest to the real ones."""
    n = len(r.passages)
    per = 20
    target = top1_self(r.passages)
    best: list[tuple[float, Mix]] = []
    for lo in (0.4, 0.55, 0.7):
        for sigma in (0.0, 0.01, 0.02, 0.03, 0.04, 0.05):
            mix = Mix(lo, 0.95, sigma)
            syn = passages(r, n // per, per, mix=mix)
            best.append((_distance(top1_self(syn), target), mix))
            print(f"  passages {mix}: {best[-1][0]:.3f}", flush=True)
    p_mix = min(best, key=lambda t: t[0])[1]
    q_target = top1_to(r.queries, r.passages)
    syn_p = passages(r, n // per, per, mix=p_mix)
    q_best: list[tuple[float, Mix]] = []
    for lo in (0.4, 0.55, 0.7):
        for sigma in (0.0, 0.01, 0.02, 0.03, 0.04, 0.05):
            mix = Mix(lo, 0.95, sigma)
            syn_q = queries(r, len(r.queries) * 2, mix=mix)[len(r.queries) :]
            q_best.append((_distance(top1_to(syn_q, syn_p), q_target), mix))
            print(f"  queries {mix}: {q_best[-1][0]:.3f}", flush=True)
    return p_mix, min(q_best, key=lambda t: t[0])[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--bench-episodes", type=int, default=10000)
    parser.add_argument("--chunks", type=int, default=20)
    args = parser.parse_args()
    r = real()
    print(f"real: {len(r.passages)} passages of {len(r.groups)} sessions, {len(r.queries)} queries")
    p_mix, q_mix = calibrate(r) if args.calibrate else (PASSAGE_MIX, QUERY_MIX)
    print(f"passage mix {p_mix}, query mix {q_mix}")
    n = len(r.passages)
    syn = passages(r, n // args.chunks, args.chunks, mix=p_mix)
    big = passages(r, args.bench_episodes, args.chunks, mix=p_mix)
    size = f"{len(big) // 1000}k"
    print("\nTop-1 nearest-neighbour cosine of a passage vector to the rest of its set:\n")
    print(
        table(
            {
                f"real ({n})": top1_self(r.passages),
                f"synthetic ({len(syn)})": top1_self(syn),
                f"synthetic ({size}, 2,000 probes)": top1_self(big, probes=2000),
            }
        )
    )
    syn_q = queries(r, 2 * len(r.queries), mix=q_mix)[len(r.queries) :]
    print("\nTop-1 cosine of a query to the passages:\n")
    print(
        table(
            {
                f"real queries, real passages ({len(r.queries)})": top1_to(r.queries, r.passages),
                "synthetic queries, synthetic passages": top1_to(syn_q, syn),
                f"real queries, synthetic {size}": top1_to(r.queries, big),
                f"synthetic queries, synthetic {size}": top1_to(syn_q, big),
            }
        )
    )


if __name__ == "__main__":
    main()
