"""find_concepts: query, kind, parent and episode filters, name order, paging."""

from __future__ import annotations

from .support import Harness


def test_find_concepts_filters_and_pages(h: Harness) -> None:
    root = h.concept("Storage", kind="area")
    ids = {
        n: h.concept(n, kind="technology", parent_id=root) for n in ["parquet", "Iceberg", "zstd"]
    }
    h.concept("Alice", kind="person", description="knows parquet well")
    e = h.episode()
    h.call("link_episode_to_concept", episode_id=e, concept_id=ids["zstd"])
    names = [c["name"] for c in h.call("find_concepts", limit=100)["concepts"]]
    assert names == ["Alice", "Iceberg", "parquet", "Storage", "zstd"]
    hits = h.call("find_concepts", query="PARQUET")["concepts"]
    assert [c["name"] for c in hits] == ["Alice", "parquet"]
    assert [c["name"] for c in h.call("find_concepts", kind="person")["concepts"]] == ["Alice"]
    kids = h.call("find_concepts", parent_id=root)["concepts"]
    assert [c["name"] for c in kids] == ["Iceberg", "parquet", "zstd"]
    linked = h.call("find_concepts", episode_id=e)["concepts"]
    assert [(c["name"], c["episode_count"]) for c in linked] == [("zstd", 1)]
    seen, cursor = [], None
    while True:
        page = h.call("find_concepts", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [c["name"] for c in page["concepts"]]
        if (cursor := page.get("next_cursor")) is None:
            break
    assert seen == names
