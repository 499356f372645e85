"""Features are assembled by Services.build, not registered on import (docs/decisions/1140)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memlake.config import Settings
from memlake.context import Principal, ToolContext
from memlake.features import EPISODES_FEATURE, FEATURES, LAYERS, Feature
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.tools import add_episode, delete_episode


def test_two_services_with_different_features_have_different_catalogs(tmp_path: Path) -> None:
    cfg = Settings(data_dir=tmp_path)
    small = Services.build(cfg, LocalStore(tmp_path / "a"), features=(EPISODES_FEATURE, LAYERS))
    full = Services.build(cfg, LocalStore(tmp_path / "b"), features=FEATURES)
    assert set(small.lake.tables) == {
        "episodes",
        "threads",
        "thread_messages",
        "concepts",
        "concept_links",
    }
    assert {"episode_chunks", "relationships", "audit", "idempotency_keys"} <= set(full.lake.tables)
    # the small one has no search hooks and only the layers' delete cleanup
    assert small.lake.prepare_hooks == [] and not small.search.indexing
    assert full.lake.prepare_hooks and full.search.indexing
    assert len(small.on_episode_delete) == 1 and len(full.on_episode_delete) == 4
    with pytest.raises(ValueError, match="unknown table 'relationships'"):
        small.lake.spec("relationships")
    # building the full one changed nothing of the small one
    assert "episode_chunks" not in small.lake.tables


def test_delete_runs_only_the_cleanups_of_the_features_assembled(tmp_path: Path) -> None:
    seen: list[str] = []
    probe = Feature("probe", on_episode_delete=(lambda txn, episode_id: seen.append(episode_id),))
    cfg = Settings(data_dir=tmp_path)
    services = Services.build(cfg, LocalStore(tmp_path), features=(EPISODES_FEATURE, probe))
    ctx = ToolContext(Principal("t"), services)
    added = add_episode.run(ctx, add_episode.AddEpisodeInput(content="to be deleted"))
    delete_episode.run(ctx, delete_episode.DeleteEpisodeInput(id=added.id))
    assert seen == [added.id]


IMPORT_CHECK = """
import sys, copy
import memlake, memlake.lake.schema, memlake.episodes, memlake.services, memlake.stored_rows
def state():
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("memlake"):
            for key, value in vars(mod).items():
                if isinstance(value, (list, dict, set)) and not key.startswith("__"):
                    out[(name, key)] = repr(value)
    return out
before = state()
import memlake.features, memlake.search.indexing
after = state()
changed = sorted(k for k in before if after.get(k) != before[k])
print(changed)
sys.exit(1 if changed else 0)
"""


def test_importing_the_features_mutates_nothing_global() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_CHECK], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
