"""Damage contained and repaired (issue 27): checksums catch it, reads and writes that do not
need a damaged object go on, `memlake check` finds it and `memlake repair` brings the tenant
back, on a lake with history (commits, compactions, index merges).

The fault test at the end damages random objects (truncate, flip a byte, delete) of random
lakes and accounts for every acknowledged write; its counts are README's Reliability section.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memlake.errors import CorruptObject
from memlake.integrity.check import check_tenant
from memlake.integrity.repair import repair_tenant
from memlake.lake import Lake, keys
from memlake.lake.compaction import compact
from memlake.search.index.state import SearchState
from memlake.store.local import LocalStore
from tests.integration.test_cli_ops import memlake
from tests.integration.test_search_index import HashEmbedder, found, make, put, small_layout

T = "acme"
ROUNDS = 30  # lakes damaged and repaired by the fault test (README quotes its tally)
__all__ = ["small_layout"]  # the fixture, used by name


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x5A
    path.write_bytes(bytes(data))


def delete(path: Path) -> None:
    path.unlink()


DAMAGES = {"truncate": truncate, "flip": flip, "delete": delete}


def history(root: Path, n: int = 24, *, compact_every: int = 8) -> tuple[Lake, dict[str, str]]:
    """A lake of `n` one-episode commits with compactions between; episode id -> content."""
    lake, _ = make(root, HashEmbedder())
    written: dict[str, str] = {}
    for i in range(n):
        content = f"note word{i} about topic{i % 3}"
        written[put(lake, content)] = content
        if (i + 1) % compact_every == 0:
            compact(lake, T, target_rows=4096, min_segments=4)
    lake.settle_hint(T)  # the last hint's put ends: a round may damage the hint
    return lake, written


def fresh(root: Path) -> Lake:
    return make(root, HashEmbedder())[0]


def readable(root: Path, written: dict[str, str]) -> set[str]:
    view = fresh(root).snapshot(T).table("episodes")
    return {i for i, text in written.items() if (row := view.get(i)) and row["content"] == text}


def test_every_object_the_manifest_names_carries_its_sha256(tmp_path: Path) -> None:
    lake, _ = history(tmp_path, 10)
    snap = lake.snapshot(T)
    refs = [r for segs in snap.manifest.tables.values() for r in segs]
    state = SearchState.from_extra(snap.extra)
    assert state is not None and refs
    assert all(len(r.sha256) == 64 for r in refs)
    assert all(len(s.sha256) == 64 for s in state.shards)
    assert check_tenant(lake.store, T).clean


def test_a_damaged_segment_fails_only_the_reads_that_need_it(tmp_path: Path) -> None:
    lake, written = history(tmp_path, 6, compact_every=100)  # six segments, one episode each
    ids = list(written)
    key = lake.snapshot(T).manifest.tables["episodes"][2].key
    flip(tmp_path / key)
    view = fresh(tmp_path).snapshot(T).table("episodes")
    # the row it holds: a clear error naming the object, not retryable, naming memlake check
    with pytest.raises(CorruptObject) as caught:
        view.get(ids[2])
    err = caught.value.to_dict()
    assert err["code"] == "corrupt_object" and key in str(err["message"])
    assert "retryable" not in err and "memlake check" in str(err["hint"])
    # rows of other segments, and a write to the tenant, go on
    assert view.get(ids[0])["content"] == written[ids[0]]
    assert view.get(ids[5])["content"] == written[ids[5]]
    lake2 = fresh(tmp_path)
    new = put(lake2, "written while a segment is damaged")
    assert lake2.snapshot(T).table("episodes").get(new) is not None
    # a read of the whole table needs it: the same clear error
    with pytest.raises(CorruptObject):
        fresh(tmp_path).snapshot(T).table("episodes").ids()


def test_a_damaged_newest_manifest_reads_the_one_before_and_refuses_writes(
    tmp_path: Path,
) -> None:
    lake, written = history(tmp_path, 5, compact_every=100)
    newest = lake.snapshot(T).version
    truncate(tmp_path / keys.manifest_key(T, newest))
    lake2 = fresh(tmp_path)
    snap = lake2.snapshot(T)
    assert snap.version == newest - 1 and snap.damaged_version == newest
    assert len(snap.table("episodes").ids()) == 4  # the last commit's episode went with it
    with pytest.raises(CorruptObject, match=f"version {newest}"):
        put(lake2, "refused")
    report = check_tenant(lake2.store, T)
    assert [(d.kind, d.version) for d in report.damage] == [("manifest", newest)]
    repaired = repair_tenant(
        lake2, make(tmp_path, HashEmbedder())[1].services.search, T, apply=True
    )
    assert repaired.new_version == newest + 1 and repaired.steps[0].action == "roll_back"
    assert check_tenant(lake2.store, T).clean
    put(lake2, "accepted after the repair")
    assert len(readable(tmp_path, written)) == 4


def test_repair_restores_a_compacted_segment_from_its_inputs_and_rebuilds_a_shard(
    tmp_path: Path, small_layout: None
) -> None:
    lake, written = history(tmp_path, 16)
    snap = lake.snapshot(T)
    compacted = [r for r in snap.manifest.tables["episodes"] if r.compacted]
    state = SearchState.from_extra(snap.extra)
    assert compacted and state is not None and len(state.shards) > 1
    truncate(tmp_path / compacted[0].key)
    delete(tmp_path / state.shards[0].key)
    lake2, ctx2 = make(tmp_path, HashEmbedder())
    with pytest.raises(CorruptObject):  # the search needs the shard
        found(ctx2, "word3")
    plan = repair_tenant(lake2, ctx2.services.search, T)  # a dry run writes nothing
    assert not plan.applied and lake2.snapshot(T).version == snap.version
    assert {s.action for s in plan.steps} == {"restore_inputs", "rebuild_shard"}
    done = repair_tenant(lake2, ctx2.services.search, T, apply=True)
    assert done.rows_lost == 0 and done.rows_recovered == compacted[0].rows
    assert check_tenant(lake2.store, T).clean
    assert readable(tmp_path, written) == set(written)
    _, ctx3 = make(tmp_path, HashEmbedder())
    for i, episode_id in enumerate(written):
        assert found(ctx3, f"word{i}")[0] == episode_id


def test_check_and_repair_on_the_command_line(tmp_path: Path) -> None:
    lake, _ = history(tmp_path, 4, compact_every=100)
    clean = memlake("check", "--tenant", T, "--data", str(tmp_path))
    assert clean.returncode == 0 and "clean" in clean.stdout, clean.stderr
    key = lake.snapshot(T).manifest.tables["episodes"][1].key
    flip(tmp_path / key)
    found_it = memlake("check", "--tenant", T, "--data", str(tmp_path), "--json")
    assert found_it.returncode == 1, found_it.stderr
    report = json.loads(found_it.stdout)
    assert not report["clean"] and report["damage"][0]["key"] == key
    dry = memlake("repair", "--tenant", T, "--data", str(tmp_path))
    assert dry.returncode == 1 and "dry run" in dry.stdout and "drop_segment" in dry.stdout
    assert memlake("check", "--tenant", T, "--data", str(tmp_path)).returncode == 1
    done = memlake("repair", "--tenant", T, "--data", str(tmp_path), "--apply", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["rows_lost"] == 1
    assert memlake("check", "--tenant", T, "--data", str(tmp_path)).returncode == 0
    unknown = memlake("check", "--tenant", "nobody", "--data", str(tmp_path))
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr


@dataclass
class Tally:
    rounds: int = 0
    damaged: dict[str, int] = field(default_factory=dict)  # object kind -> count
    writes: int = 0
    recovered: int = 0  # acknowledged writes in a damaged object, readable after repair
    lost_manifest: int = 0  # their commit's manifest was damaged
    lost_segment: int = 0  # their segment was damaged and no older manifest held its rows

    def line(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)


def one_round(root: Path, rng: random.Random, tally: Tally) -> None:
    lake, written = history(root, rng.randint(12, 30), compact_every=rng.randint(4, 10))
    snap = lake.snapshot(T)
    view = snap.table("episodes")
    seg_of = {i: snap.manifest.tables["episodes"][view.locate(i).segment].key for i in written}
    seq_of = {i: view.locate(i).seq for i in written}
    state = SearchState.from_extra(snap.extra)
    assert state is not None
    targets = [("manifest", keys.manifest_key(T, snap.version)), ("hint", keys.hint_key(T))]
    targets += [("segment", r.key) for segs in snap.manifest.tables.values() for r in segs]
    targets += [("shard", s.key) for s in state.shards]
    targets.append(("old manifest", keys.manifest_key(T, rng.randint(1, snap.version - 1))))
    hit = rng.sample(targets, rng.randint(1, 3))
    for kind, key in hit:
        DAMAGES[rng.choice(sorted(DAMAGES))](root / key)
        tally.damaged[kind] = tally.damaged.get(kind, 0) + 1
    lake2, ctx2 = make(root, HashEmbedder())
    report = repair_tenant(lake2, ctx2.services.search, T, apply=True)
    assert check_tenant(LocalStore(root), T).clean, report.to_dict()
    put(fresh(root), "the tenant accepts writes after the repair")
    after = readable(root, written)
    damaged_keys = {key for _, key in hit}
    manifest_lost = report.base_version < snap.version
    for episode_id in written:
        tally.writes += 1
        in_lost_commit = manifest_lost and seq_of[episode_id] > report.base_version
        if episode_id in after:
            tally.recovered += seg_of[episode_id] in damaged_keys and not in_lost_commit
        elif in_lost_commit:
            tally.lost_manifest += 1
        else:  # lost only when its own segment was damaged, never otherwise
            assert seg_of[episode_id] in damaged_keys or manifest_lost, (episode_id, hit)
            tally.lost_segment += 1
    _, ctx3 = make(root, HashEmbedder())
    for episode_id in after:
        number = written[episode_id].split()[1]
        assert episode_id in found(ctx3, number), (episode_id, hit)
    tally.rounds += 1


def test_random_damage_is_found_and_repaired(tmp_path: Path, small_layout: None) -> None:
    rng, tally = random.Random(2701), Tally()
    for n in range(ROUNDS):
        one_round(tmp_path / f"lake{n}", rng, tally)
    print("fault tally:", tally.line())
    assert tally.rounds == ROUNDS and tally.writes > 0
    assert tally.recovered + tally.lost_segment + tally.lost_manifest > 0


def test_maintenance_skips_a_damaged_tenant_with_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from memlake.config import Settings
    from memlake.maintenance import maintenance_policy, run_maintenance

    lake, written = history(tmp_path, 9, compact_every=100)
    flip(tmp_path / lake.snapshot(T).manifest.tables["episodes"][3].key)
    _, ctx = make(tmp_path, HashEmbedder())
    policy = maintenance_policy(Settings(data_dir=tmp_path), "scheduled")
    for _ in range(3):  # passes in a row: compaction needs the damaged segment
        report = run_maintenance(ctx.services, policy, tenants=[T])
        assert report.failed == [T]
    lines = [r for r in caplog.records if "until repaired" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_tail_shard_is_rebuilt_by_the_next_write(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Every write rebuilds the tail shard, so an unreadable one refused writes until `memlake
    repair`; the next write (in a new process) now rebuilds it from the tables, an update of
    an episode it held leaves one doc of it, and the tenant checks clean."""
    lake, written = history(tmp_path, 9, compact_every=100)
    state = SearchState.from_extra(lake.snapshot(T).extra)
    assert state is not None and state.shards[-1].tail
    DAMAGES[damage](tmp_path / state.shards[-1].key)
    lake2, ctx2 = make(tmp_path, HashEmbedder())
    new = put(lake2, "fresh note word99 about topic0")
    updated = next(iter(written))  # an episode the damaged tail held, written again
    put(lake2, "note word77 rewritten about topic0", episode_id=updated)
    written |= {new: "fresh note word99", updated: "note word77"}
    assert "was unreadable" in caplog.text
    assert check_tenant(LocalStore(tmp_path), T).clean
    _, ctx3 = make(tmp_path, HashEmbedder())
    for episode_id, content in written.items():
        assert episode_id in found(ctx3, content.split()[1]), (episode_id, content)
    assert updated not in found(ctx3, "word0")
    assert found(ctx3, "topic0").count(updated) <= 1


def test_the_shard_cache_remembers_a_bounded_number_of_checksums(tmp_path: Path) -> None:
    from dataclasses import replace

    from memlake.search.index import cache as shard_cache

    lake, ctx = make(tmp_path, HashEmbedder())
    put(lake, "one note")
    info = SearchState.from_extra(lake.snapshot(T).extra).shards[0]  # type: ignore[union-attr]
    shards = ctx.services.search.shards
    shards.expect(
        [replace(info, key=f"{info.key}-{n}") for n in range(3 * shard_cache.DIGESTS_KEPT)]
    )
    assert len(shards._digests) == shard_cache.DIGESTS_KEPT  # each commit makes a new tail key
    shards.clear()
    flip(tmp_path / info.key)
    shards.expect([info])  # what every load path does first: the newest are always kept
    with pytest.raises(CorruptObject, match="sha256"):
        shards.load_many(lake.store, [info.key])
