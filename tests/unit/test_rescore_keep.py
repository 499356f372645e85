"""One cutoff across shards keeps RESCORE_ACROSS shards' re-score depths of code candidates,
but over few shards at most KEEP_SHARE of their shard-worths' depths (sides.rescore_across):
the rows re-scored are that many of the best, not most of every candidate."""

from __future__ import annotations

from typing import Any

import pytest

from memlake.search.index import ivf
from memlake.search.index.shard import Shard
from memlake.search.query import sides
from tests.unit.test_partial_candidates import _vector_side
from tests.unit.test_probe_plan import _queries, shards  # noqa: F401  (a fixture)


def test_rescore_across_by_tenant_size(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sides.rescore_across([16384] + [512] * 7 + [32]) == 4  # 20k: 12 shard-worths
    assert sides.rescore_across([4096, 4096] + [512] * 3 + [64]) == 2  # 10k: at least 2
    assert sides.rescore_across([16384] * 6 + [4096] + [512] * 3) == 8  # 100k: 28 worths
    assert sides.rescore_across([32768] * 9 + [4096]) == 8  # 300k: 73 worths
    assert sides.rescore_across([16384] * 4 + [4096] * 4) == pytest.approx(20 / 3)
    monkeypatch.setattr(sides, "RESCORE_ACROSS", 1)
    assert sides.rescore_across([16384] + [512] * 7) == 1  # never more than RESCORE_ACROSS


def test_the_cutoff_keeps_a_share_of_few_shards_candidates(
    shards: list[Shard],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four shard-worths: the cutoff keeps RESCORE_LEAST (2) depths of their 4 x depth code
    candidates; with no share it kept every one (8 depths are more than there are)."""
    monkeypatch.setattr(ivf, "PLAN_PER_SHARD", 12)
    monkeypatch.setattr(ivf, "PLAN_SHARE", 0.0)  # that budget, not the share floor (2514)
    kept: list[tuple[int, int, int]] = []  # (rows at or above the cutoff, all, depth)
    real = Shard.vector_finish

    def spy(self: Shard, c: Any, k: int, cutoff: float) -> Any:
        if c.kind == "codes":
            kept.append((int((c.scores >= cutoff).sum()), len(c.scores), c.depth))
        return real(self, c, k, cutoff)

    monkeypatch.setattr(Shard, "vector_finish", spy)
    assert sides.rescore_across([s.n for s in shards]) == 2
    checked = 0
    for q in _queries(shards, 12):
        for share, want in ((10**9, "all"), (sides.KEEP_SHARE, "two depths")):
            monkeypatch.setattr(sides, "KEEP_SHARE", share)
            kept.clear()
            _vector_side(shards, q)
            above, every, depth = (sum(x[i] for x in kept) for i in range(3))
            depth //= len(kept)
            if want == "all":
                assert above == every
            elif every > 2 * depth:
                assert above == 2 * depth  # (code scores of random vectors do not tie)
                checked += 1
    assert checked > 5
