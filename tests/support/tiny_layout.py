"""Shard layout and IVF sizes shrunk so a few episodes make sealed IVF shards (tests only)."""

from __future__ import annotations

import pytest

from memlake.search.index import ivf, layout


def tiny_ivf_layout(
    monkeypatch: pytest.MonkeyPatch, *, ivf_min_rows: int = 4, nprobe: int | None = None
) -> None:
    """A tail of 4 episodes, merges of 2 shards, an IVF from `ivf_min_rows` vector rows with 2
    rows a list, searched through the IVF whatever the filter (no exact scan of few rows);
    `nprobe`: the lists a shard probes on its own (default: unchanged)."""
    monkeypatch.setattr(layout, "TAIL_DOCS", 4)
    monkeypatch.setattr(layout, "FANOUT", 2)
    monkeypatch.setattr(ivf, "IVF_MIN_ROWS", ivf_min_rows)
    monkeypatch.setattr(ivf, "ROWS_PER_LIST", 2)
    monkeypatch.setattr(ivf, "EXACT_BELOW", 0)
    if nprobe is not None:
        monkeypatch.setattr(ivf, "NPROBE", nprobe)
