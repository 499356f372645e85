"""Paired A/B of vector-side settings on a kept scale tenant (issue 25, decision 2506): the
first asks of a share (sides.first_share) against whole asks, or a setting of probes and
re-score depth against the defaults, with recall on real and on mixed questions.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/first_share_bench.py \\
        build DIR [--size 300000]
    ... first_share_bench.py run DIR [--rounds 2] [--setting PER:ACROSS:RESCORE | --plan]

- build: scale_tenant.build's tenant (realistic passage vectors, search_bench's corpus with
  600 words an episode, as scale_bench) kept in DIR with 200 real questions, 200 mixes of them
  (vectors.mixed_queries) and their exact top-10 episodes.
- run: on a warm Searcher with a 16 GiB shard cache (the tenant held whole, as scale_bench's
  warm searches), each query runs hybrid (query vector given) and vector-only under both
  settings back to back, in alternating order, `--rounds` times. Without --setting, A is
  whole asks (FIRST_MARGIN huge) and B the default first share: every hit and score of the
  two were equal before each row's gain (decision 2508); since, a row below a partial shard's
  last given code score can be missed (300k: 0.9535 -> 0.9505 mixed recall, -2.5 ms).
  With --setting, A is the defaults and B ivf.PLAN_PER_SHARD (at any number of shards:
  ivf.PLAN_PER_SHARD_WIDE too), sides.RESCORE_ACROSS and shard_vectors.RESCORE as given. It
  prints both p50s, the paired median difference and vector-only recall@10 of each kind
  under each setting.
- run --plan: A scores every centroid in float32 for the probe plan (as before decision 2507),
  B from their int8 copies where the default PLAN_INT8_FROM says (ivf_coarse); it reports the
  plan's own median time (ivf.plan_probes) for each and the share of searches whose hits and
  scores are the same.
- run --gains: A ranks code candidates by their code scores alone (as before decision 2508),
  B times each row's gain (ivf_codes.Gains; a tenant built before gains has none: the same);
  with --setting, both A and B take that setting.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memlake.config import Settings  # noqa: E402
from memlake.embed.minilm import MiniLMEmbedder  # noqa: E402
from memlake.search.hybrid import search  # noqa: E402
from memlake.search.index import ivf, ivf_codes, kernels, shard_vectors  # noqa: E402
from memlake.search.query import sides  # noqa: E402
from memlake.search.query.params import SearchParams  # noqa: E402
from memlake.search.searcher import Searcher  # noqa: E402
from memlake.store.local import LocalStore  # noqa: E402
from tests.bench import scale_tenant, search_bench, vectors  # noqa: E402
from tests.wiring import bare_lake  # noqa: E402

VEC = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
HYBRID = SearchParams()
KINDS = ("real", "mixed")


def build(root: Path, size: int, sink: scale_tenant.Sink | None = None) -> None:
    """The kept tenant in `root`; `sink` gets the same rows (LanceDB: lance_pair_bench.py)."""
    root.mkdir(parents=True, exist_ok=True)
    search_bench.WORDS = 600
    real = vectors.real()
    queries = {"real": real.queries[:200], "mixed": vectors.mixed_queries(real, 200)}
    for kind, q in queries.items():
        np.save(root / f"queries-{kind}.npy", np.asarray(q, np.float32))
    (root / "texts.json").write_text(json.dumps(search_bench.query_texts(200)))
    tenant = scale_tenant.build(
        bare_lake(LocalStore(root)), root, size, MiniLMEmbedder.shared().name,
        lambda no, docs: vectors.passages(real, docs, scale_tenant.PER, seed=1000 + no),
        np.concatenate([queries["real"], queries["mixed"]]), sink=sink,
    )  # fmt: skip
    truth = [sorted(tenant.truth(i)) for i in range(400)]
    (root / "truth.json").write_text(json.dumps(truth))
    (root / "ids.json").write_text(json.dumps(list(tenant.ids)))  # by episode number


INT8_FROM, WIDE = ivf.PLAN_INT8_FROM, ivf.PLAN_PER_SHARD_WIDE
GAINED = ivf_codes.Gains.times


def _plain_times(self: ivf_codes.Gains, rows: Any, scores: Any) -> Any:
    return scores


def _setting(
    per: int,
    across: int,
    rescore: int,
    margin: float,
    int8: bool = True,
    gains: bool = True,
    exact: bool = False,
) -> None:
    """The settings of a run; `exact`: `per` lists a shard-worth at any number of shards (a
    --setting), else the defaults' wider budget from ivf.PLAN_WIDE_FROM shard-worths."""
    ivf.PLAN_PER_SHARD, sides.RESCORE_ACROSS = per, across
    ivf.PLAN_PER_SHARD_WIDE = per if exact else WIDE
    shard_vectors.RESCORE, sides.FIRST_MARGIN = rescore, margin
    ivf.PLAN_INT8_FROM = INT8_FROM if int8 else 1 << 62
    ivf_codes.Gains.times = GAINED if gains else _plain_times  # type: ignore[method-assign]


def run(
    root: Path, rounds: int, setting: str | None, plan: bool = False, gains: bool = False
) -> None:
    texts = json.loads((root / "texts.json").read_text())
    queries = {k: np.load(root / f"queries-{k}.npy") for k in KINDS}
    truth = json.loads((root / "truth.json").read_text())
    default = (ivf.PLAN_PER_SHARD, sides.RESCORE_ACROSS, shard_vectors.RESCORE)
    margin = sides.FIRST_MARGIN
    if gains:
        chosen = default if setting is None else tuple(int(x) for x in setting.split(":"))
        exact = setting is not None
        a, b = (*chosen, margin, True, False, exact), (*chosen, margin, True, True, exact)
    elif plan:
        a, b = (*default, margin, False), (*default, margin, True)
    elif setting is None:
        a, b = (*default, 1e9), (*default, margin)
    else:
        per, across, rescore = (int(x) for x in setting.split(":"))
        a, b = (*default, margin), (per, across, rescore, margin, True, True, True)
    lake = bare_lake(LocalStore(root))
    svc = Searcher(Settings(), embedder=MiniLMEmbedder.shared(), cache_bytes=16 << 30)
    for i in range(20):
        search(lake, svc, search_bench.TENANT, query=texts[i], limit=10)
    svc.shards.wait_promotions()
    print(f"kernels {kernels.which()}", flush=True)
    cases = [(kind, i) for kind in KINDS for i in range(len(queries[kind]))]

    def one(kind: str, i: int, params: SearchParams) -> tuple[float, list[Any]]:
        t0 = time.perf_counter()
        hits = search(
            lake, svc, search_bench.TENANT, query=texts[i], limit=10, recency=False,
            query_vector=queries[kind][i], params=params,
        )  # fmt: skip
        return (time.perf_counter() - t0) * 1000, [(h.id, h.score) for h in hits]

    for kind, i in cases:  # the first pass adds the lists it probes
        one(kind, i, HYBRID)
    planned: dict[str, list[float]] = {"a": [], "b": []}
    now = ["a"]
    plan_probes = ivf.plan_probes

    def timed_plan(*args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        got = plan_probes(*args, **kw)
        planned[now[0]].append((time.perf_counter() - t0) * 1000)
        return got

    ivf.plan_probes = timed_plan  # type: ignore[assignment]
    took: dict[tuple[str, str], list[float]] = {(s, p): [] for s in "ab" for p in ("h", "v")}
    hits: dict[tuple[str, str, str, int], list[Any]] = {}
    for r in range(rounds):
        for n, (kind, i) in enumerate(cases):
            for name in "ab" if (n + r) % 2 == 0 else "ba":
                _setting(*(a if name == "a" else b))
                now[0] = name
                for p, params in (("h", HYBRID), ("v", VEC)):
                    ms, got = one(kind, i, params)
                    took[(name, p)].append(ms)
                    hits[(name, p, kind, i)] = got
    _setting(*a)
    ivf.plan_probes = plan_probes  # type: ignore[assignment]
    out: dict[str, Any] = {"a": a, "b": b, "queries": len(cases), "rounds": rounds}
    out["plan_p50_ms"] = [round(float(np.median(planned[n] or [0])), 3) for n in "ab"]
    for p, label in (("h", "hybrid"), ("v", "vector_only")):
        ta, tb = np.asarray(took[("a", p)]), np.asarray(took[("b", p)])
        out[f"{label}_p50_ms"] = [round(float(np.median(ta)), 2), round(float(np.median(tb)), 2)]
        out[f"{label}_paired_diff_ms"] = round(float(np.median(tb - ta)), 3)
    for name in "ab":
        for kind in KINDS:
            base = 0 if kind == "real" else 200
            rec = [
                len(set(truth[base + i]) & {h for h, _ in hits[(name, "v", kind, i)]}) / 10
                for i in range(len(queries[kind]))
            ]
            out[f"recall_{kind}_{name}"] = round(statistics.mean(rec), 4)
    same = [hits[("a", p, k, i)] == hits[("b", p, k, i)] for p in "hv" for k, i in cases]
    if plan or gains:
        out["same_hits_share"] = round(sum(same) / len(same), 4)
    elif setting is None:
        out["same_hits"] = all(same)
    print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--size", type=int, default=300000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--setting", default=None, help="PER:ACROSS:RESCORE against the defaults")
    r.add_argument("--plan", action="store_true", help="the float32 plan against the int8 one")
    r.add_argument("--gains", action="store_true", help="code scores alone against gained")
    args = parser.parse_args()
    if args.cmd == "build":
        build(args.dir, args.size)
    else:
        run(args.dir, args.rounds, args.setting, args.plan, args.gains)


if __name__ == "__main__":
    main()
