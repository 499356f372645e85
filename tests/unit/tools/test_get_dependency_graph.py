"""get_dependency_graph: Mermaid is capped at 500 edges, Graphviz is not."""

from __future__ import annotations

from memlake.ids import new_id
from memlake.lake import Lake, Transaction
from memlake.timeutil import now

from .support import Caller


def test_dependency_graph_caps_mermaid_at_500_edges(lake: Lake, call: Caller) -> None:
    ids = call.episodes(24)
    pairs = [(a, b) for a in ids for b in ids if a != b][:520]

    def change(txn: Transaction) -> None:
        for a, b in pairs:  # written directly: 520 adds through the tool take a while
            row = {"id": new_id(), "from_id": a, "to_id": b, "type": "related_to"}
            txn.put("relationships", {**row, "strength": 0.5, "created_at": now()})

    lake.commit("t", change)
    mermaid = call("get_dependency_graph", format="mermaid", max_nodes=500)
    assert mermaid["edge_count"] == 500 and mermaid["edges_truncated"] is True
    assert "Mermaid renders at most 500 edges" in mermaid["message"]
    assert mermaid["graph"].count(" -->|") == 500
    dot = call("get_dependency_graph", format="graphviz", max_nodes=500)
    assert dot["edge_count"] == 520 and dot["edges_truncated"] is False
    assert dot["node_count"] == 24 and dot["truncated"] is False
