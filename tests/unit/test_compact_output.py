"""The compact serialisation of tool results, the response cap's shares and the passage pick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from memlake import idempotency
from memlake.models import KEEP_EMPTY, Output
from memlake.search.query.best_passage import PASSAGE_CHARS, Span, _pick, _widen
from memlake.tools.search_episodes import fair_shares

from .tools.support import Harness


class Item(Output):
    name: str
    note: str | None = None
    tags: list[str] = Field(default_factory=list)
    pending: int = 0
    cut: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class Result(Output):
    items: list[Item]
    count: int
    created: bool
    graph: Annotated[list[str] | None, KEEP_EMPTY] = None
    next_cursor: str | None = None


def test_nulls_empties_and_defaults_are_left_out_but_answers_stay() -> None:
    out = Result(
        items=[Item(name="a"), Item(name="", note="n", tags=["t"], pending=2, cut=True)],
        count=0,
        created=False,
        graph=[],
    ).model_dump(mode="json")
    assert out == {
        "items": [
            {"name": "a"},
            {"name": "", "note": "n", "tags": ["t"], "pending": 2, "cut": True},
        ],
        "count": 0,
        "created": False,
        "graph": [],
    }
    assert Result(items=[], count=0, created=True).model_dump() == {
        "items": [],
        "count": 0,
        "created": True,
    }


def test_the_callers_json_is_kept_as_given() -> None:
    item = Item(name="a", metadata={"x": None, "y": [], "z": ""})
    assert item.model_dump(mode="json")["metadata"] == {"x": None, "y": [], "z": ""}
    assert Item.model_validate(item.model_dump(mode="json")) == item  # round trip


def test_the_output_schema_keeps_its_properties() -> None:
    schema = Result.model_json_schema(mode="serialization")
    assert set(schema["properties"]) == {"items", "count", "created", "graph", "next_cursor"}
    assert set(schema["required"]) == {"items", "count", "created"}


@given(st.lists(st.integers(0, 100_000), max_size=50), st.integers(0, 200_000))
def test_fair_shares_fill_the_cap_and_never_starve_a_text(lengths: list[int], cap: int) -> None:
    kept = fair_shares(lengths, cap)
    assert all(0 <= k <= n for k, n in zip(kept, lengths, strict=True))
    assert sum(kept) == min(cap, sum(lengths))
    if sum(lengths) > cap:  # every cut text keeps at least what any other text keeps, less 1
        cut = [k for k, n in zip(kept, lengths, strict=True) if k < n]
        assert max(kept) - min(cut) <= 1


def test_a_passage_is_picked_by_words_then_by_meaning() -> None:
    assert _pick([0.0, 2.0, 1.95, 0.5], [0.9, 0.1, 0.3, None]) == 2  # near tie: meaning decides
    assert _pick([0.0, 2.0, 1.0], [0.9, 0.1, 0.3]) == 1  # words first
    assert _pick([0.0, 0.0, 0.0], [0.1, None, 0.7]) == 2  # no word: meaning
    assert _pick([0.0, 0.0], [None, None]) == 0  # nothing: the start


def test_a_passage_is_widened_inside_the_content_onto_whitespace() -> None:
    content = " ".join(f"word{i}" for i in range(400))
    for start in (0, 50, len(content) // 2, len(content) - 30):
        span = _widen(Span(start, min(len(content), start + 30)), content)
        assert 0 <= span.start < span.end <= len(content)
        assert PASSAGE_CHARS - 80 <= span.end - span.start <= PASSAGE_CHARS
        assert span.start == 0 or content[span.start - 1] == " "
        assert span.end == len(content) or content[span.end] == " "
    assert _widen(Span(0, 5), "short text") == Span(0, 10)


def test_a_replay_reads_a_result_stored_with_fields_since_removed(tmp_path: Path) -> None:
    """A retry after an upgrade: the stored result has fields the output no longer has."""
    h = Harness(tmp_path)
    args = {"name": "Parquet", "description": "columnar", "idempotency_key": "key-00000001"}
    first = h.call("upsert_concept", **args)
    snap = h.lake.snapshot("t")
    (row_id,) = snap.table(idempotency.TABLE).ids()
    row = snap.table(idempotency.TABLE).get(row_id)
    assert row is not None
    old = dict(first, concept={**first["concept"], "description": "columnar"}, extra=1)
    h.lake.commit("t", lambda txn: txn.put(idempotency.TABLE, {**row, "result": json.dumps(old)}))
    assert h.call("upsert_concept", **args) == first


def test_a_content_no_longer_than_a_passage_is_its_own_passage() -> None:
    for content in ("", "short", "w " * (PASSAGE_CHARS // 2)):
        for span in (Span(0, 1), Span(len(content) // 2, len(content))):
            if span.start < span.end:
                assert _widen(span, content) == Span(0, len(content))
