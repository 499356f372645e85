"""add_episode's requests on the S3 model (decision 4401): a warm write answered in two round trips
(its segments and index shard side by side with the check for a newer version, then the manifest
beside its copy; the hint's put goes on after the answer), a cold one without reading the
episodes table, and a write onto a snapshot another process has moved past validated again on
the newest."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memlake.config import Settings
from memlake.context import Principal
from memlake.errors import NotFound
from memlake.lake import head_copy, keys
from memlake.store.latency import LatencyModel, LatencyStore
from memlake.store.local import LocalStore
from memlake.tools import add_episode, add_episode_relationship
from tests.integration.test_search_index import HashEmbedder, T
from tests.wiring import bare_lake, indexed_context, tool_context

FIRST = 0.05  # s: far above the CPU between two rounds here (the tail shard rebuilt)


def _writer(root: Path, store: LatencyStore) -> object:
    lake = bare_lake(store, dim=64)
    return indexed_context(Principal(T), lake, Settings(data_dir=root), HashEmbedder(dim=64))


def _add(ctx: object, text: str) -> str:
    args = add_episode.AddEpisodeInput(content=text, context="harbour")
    return add_episode.run(ctx, args).id  # type: ignore[arg-type]


def test_a_warm_write_answers_in_two_round_trips_and_a_cold_one_reads_no_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = LocalStore(tmp_path)
    first = _writer(tmp_path, LatencyStore(local, LatencyModel(first_byte=0.0)))
    for i in range(12):  # twelve commits: twelve segments a cold index build would read
        _add(first, f"the tide gauge was inspected on day {i}")
    # WHEN a new process writes (cold) and writes again (warm)
    store = LatencyStore(local, LatencyModel(first_byte=FIRST), trace=True)
    ctx = _writer(tmp_path, store)
    _add(ctx, "a cold writer's first episode")
    ctx.lake.settle_hint(T)  # type: ignore[attr-defined]
    cold_trace = store.trace
    cold = store.reset()
    gate, put_hint = threading.Event(), head_copy._put_hint

    def held_hint(*args: object) -> None:  # the hint's put starts once the write answered
        gate.wait(30)
        put_hint(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(head_copy, "_put_hint", held_hint)
    _add(ctx, "its second episode")
    warm = store.reset()
    gate.set()
    ctx.lake.settle_hint(T)  # type: ignore[attr-defined]
    after = store.reset()
    # THEN the cold write reads the hint, the manifest and the tail shard, no table segment
    gets = [r.key for r in cold_trace if r.op == "get"]
    assert not [k for k in gets if k.endswith(".parquet")], gets
    # (the hint; the manifest; the tail shard it rebuilds; then a warm write's three)
    assert cold.depth <= 6, [(r.depth, r.op, r.key) for r in cold_trace]
    # AND the warm one: segments, shard and the newer-version check in one round, then the
    # manifest and its copy side by side (memlake.lake.head_copy); the hint after the answer
    assert warm.counts == {"head": 1, "put": 5}
    assert warm.depth == 2
    assert after.counts == {"put": 1}
    assert int(local.get(keys.hint_key(T))) == ctx.lake.snapshot(T).version  # type: ignore[attr-defined]


def test_a_write_onto_an_old_snapshot_is_validated_again_on_the_newest(tmp_path: Path) -> None:
    """Process A holds a snapshot; process B adds an episode; A links to it at once. A's first
    attempt validates on its old snapshot (the episode is not there) while it asks whether a
    newer version exists; it does, so the verdict does not count and the link is made."""
    local = LocalStore(tmp_path)
    a_lake, b_lake = bare_lake(local, dim=64), bare_lake(local, dim=64)
    a, b = tool_context(Principal(T), a_lake), tool_context(Principal(T), b_lake)
    first = _add(a, "the pump was replaced")
    a_lake.snapshot(T)  # A holds the version with only its own episode
    second = _add(b, "the pump failed again a week later")
    args = add_episode_relationship.AddEpisodeRelationshipInput(
        from_episode_id=first, to_episode_id=second, relationship_type="follows"
    )
    assert add_episode_relationship.run(a, args).relationship_id
    # and a link to an episode that exists nowhere is still refused
    args = add_episode_relationship.AddEpisodeRelationshipInput(
        from_episode_id=first,
        to_episode_id="01M8FW2BCE77JVT9B222QVT0M8",
        relationship_type="follows",
    )
    with pytest.raises(NotFound):
        add_episode_relationship.run(a, args)
