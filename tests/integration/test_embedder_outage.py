"""An embedding endpoint that is down, throttled or slow (issue 47, decision 4702): writes
store the episode with its vectors pending and answer; search answers by words with a
`degraded` note; the deferred pass embeds what was left once the endpoint answers again. An
error retrying cannot help (a bad key, a model that does not exist) still fails the write."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.embed.base import EmbeddingError
from memlake.embed.openai_compat import OpenAIEmbedder
from memlake.mcp.dispatch import call_tool
from memlake.search.backfill import embed_pending
from memlake.search.hybrid import search
from memlake.search.index import deferred_embedding
from memlake.search.query import query_vector
from memlake.search.query.params import SearchParams
from memlake.store.local import LocalStore
from tests.e2e.serverproc import free_port
from tests.integration.test_search_index import HashEmbedder
from tests.wiring import bare_lake, indexed_context

T = "acme"
TEXT = "User: the deploy failed with AccessDenied on HeadObject.\nAssistant: grant s3:ListBucket."


class Endpoint(HashEmbedder):
    """HashEmbedder behind a switch: "up", "down" (503, retryable), "bad key" (401), "slow",
    "hung"; remote, as an OpenAI-compatible endpoint or Bedrock is (its deadline applies)."""

    remote = True

    def __init__(self) -> None:
        super().__init__()
        self.state = "up"
        self.asked = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked += 1
        if self.state == "down":
            raise EmbeddingError("embedding endpoint answered 503", retryable=True)
        if self.state == "bad key":
            raise EmbeddingError("embedding endpoint answered 401: invalid API key")
        if self.state == "slow":
            time.sleep(0.5)
        if self.state == "hung":
            time.sleep(3.0)
        return super().embed(texts)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(deferred_embedding, "REMOTE_DEADLINE", 0.2)
    monkeypatch.setattr(query_vector, "REMOTE_DEADLINE", 0.2)
    endpoint = Endpoint()
    lake = bare_lake(LocalStore(tmp_path / "lake"), dim=endpoint.dim)
    ctx = indexed_context(Principal(T), lake, Settings(data_dir=tmp_path / "lake"), endpoint)
    return {"endpoint": endpoint, "ctx": ctx, "lake": lake}


def call(world: dict[str, Any], name: str, **arguments: Any) -> Any:
    return call_tool({"name": name, "arguments": arguments}, world["ctx"])


def found(world: dict[str, Any], query: str, **kw: Any) -> dict[str, Any]:
    outcome = call(world, "search_episodes", query=query, **kw)
    assert not outcome.is_error, outcome.error
    return outcome.structured  # type: ignore[no-any-return]


@pytest.mark.parametrize("state", ["down", "slow"])
def test_a_write_while_the_endpoint_fails_is_stored_with_vectors_pending(
    world: dict[str, Any], state: str
) -> None:
    world["endpoint"].state = state
    for name, args in (
        ("add_episode", {"content": TEXT, "context": "ops"}),
        (
            "upsert_episode",
            {"events": TEXT + " Again.", "context": "ops", "source_title": "deploy"},
        ),
    ):
        outcome = call(world, name, **args)
        assert not outcome.is_error, outcome.error
        assert outcome.structured["vectors_pending"] >= 1, outcome.structured
    # found by its words at once, with the note that meaning was left out while it is down
    world["endpoint"].state = "down"
    got = found(world, "AccessDenied HeadObject")
    assert got["count"] == 2 and "left out" in got["degraded"]
    # the endpoint is back: meaning finds nothing until the deferred pass embeds what was
    # left, then both
    world["endpoint"].state = "up"
    assert by_meaning(world, "AccessDenied HeadObject") == 0
    report = embed_pending(world["lake"], world["ctx"].services.search, T, max_passages=100)
    assert report.left == 0
    assert by_meaning(world, "AccessDenied HeadObject") == 2
    assert "degraded" not in found(world, "AccessDenied HeadObject")


def by_meaning(world: dict[str, Any], query: str) -> int:
    """Hits of a vector-only search (the tools fuse both sides)."""
    params = SearchParams(weights={"bm25": 0.0, "vector": 1.0})
    ctx = world["ctx"]
    hits = search(ctx.lake, ctx.services.search, T, query=query, limit=10, params=params)
    return len(hits)


def test_an_error_retrying_cannot_help_still_fails_the_write(world: dict[str, Any]) -> None:
    world["endpoint"].state = "bad key"
    outcome = call(world, "add_episode", content=TEXT, context="ops")
    assert outcome.is_error and "invalid API key" in outcome.error.message
    world["endpoint"].state = "up"
    assert found(world, "AccessDenied")["count"] == 0  # nothing was stored


def test_search_while_the_endpoint_fails_answers_by_words_and_says_so(
    world: dict[str, Any],
) -> None:
    assert not call(world, "add_episode", content=TEXT, context="ops").is_error
    world["endpoint"].state = "down"
    for content in ("passage", "evidence"):
        got = found(world, "AccessDenied", content=content)
        assert got["count"] == 1 and got["degraded"].startswith("Search by meaning was left out")
    world["endpoint"].state = "up"
    assert "degraded" not in found(world, "AccessDenied")


def test_writes_queued_behind_a_hung_endpoint_do_not_call_it_later(world: dict[str, Any]) -> None:
    """The write pool has 4 threads: once they wait on a hung endpoint, the next writes' calls
    queue, and a write past its deadline takes its call back unstarted (only the 4 started
    ones ever reach the endpoint); every write is stored, its vectors pending."""
    world["endpoint"].state = "hung"
    for i in range(8):
        outcome = call(world, "add_episode", content=f"note {i} about the hung endpoint")
        assert not outcome.is_error and outcome.structured["vectors_pending"] >= 1
    time.sleep(3.5)  # the started calls answer late; the taken-back ones never start
    assert world["endpoint"].asked == 4


def test_search_while_the_endpoint_hangs_answers_by_words_within_its_deadline(
    world: dict[str, Any],
) -> None:
    """A hung endpoint costs a search its deadline (REMOTE_DEADLINE, here 0.2 s), not the
    client's timeout: the answer comes by words with the note, and a search behind it does not
    queue its call behind the hung ones (taken back unstarted)."""
    assert not call(world, "add_episode", content=TEXT, context="ops").is_error
    world["endpoint"].state = "hung"  # each call: 3 s
    asked = world["endpoint"].asked
    for _ in range(4):
        t0 = time.monotonic()
        got = found(world, "AccessDenied")
        assert time.monotonic() - t0 < 1.5
        assert got["count"] == 1 and "no answer within 0.2 s" in got["degraded"]
    time.sleep(3.5)  # the two started calls (the search pool's threads) answer late
    assert world["endpoint"].asked - asked == 2
    world["endpoint"].state = "up"
    assert "degraded" not in found(world, "AccessDenied")


def test_an_endpoint_that_refuses_connections_costs_a_write_and_a_search_under_2_s(
    tmp_path: Path,
) -> None:
    """The real client (OpenAIEmbedder) against a port nobody listens on: its retries take
    ~4.8 s; the write and the search answer within the endpoint's deadline (1.5 s) instead."""
    endpoint = OpenAIEmbedder(
        "text-embedding-3-small", 64, base_url=f"http://127.0.0.1:{free_port()}/v1"
    )
    lake = bare_lake(LocalStore(tmp_path / "lake"), dim=64)
    ctx = indexed_context(Principal(T), lake, Settings(data_dir=tmp_path / "lake"), endpoint)
    world = {"ctx": ctx}
    t0 = time.monotonic()
    outcome = call(world, "add_episode", content=TEXT, context="ops")
    assert time.monotonic() - t0 < 2.0
    assert not outcome.is_error and outcome.structured["vectors_pending"] >= 1
    t0 = time.monotonic()
    got = found(world, "AccessDenied")
    assert time.monotonic() - t0 < 2.0
    assert got["count"] == 1 and "left out" in got["degraded"]
