"""A user's own models through /mcp (docs/decisions/2601): `memlake serve` started with
MEMLAKE_EMBEDDER=openai and MEMLAKE_RERANKER=http pointed at a local fake endpoint
(tests/support/fake_models.py), on the local lake and on moto-backed S3, with the real mcp
client: episodes are embedded there, searches find them by those vectors and come back in
the reranker's order; when the endpoints fail, the tools answer clear errors or keep
searching, never a 500; a write while the embedder is down is kept with its vectors pending."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from memlake.config import Settings
from memlake.errors import ConfigurationError
from memlake.mcp.server import build_app
from memlake.search.index.backlog import pending_map
from memlake.search.index.state import SearchState
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from tests.integration.test_transfer_validation import _tools
from tests.support.fake_models import FakeModels, Fault, fake_models

from .mcp_helpers import call, connect, run, serve_in_thread, serve_subprocess

NOTES = [
    "The herons nest by the river every spring; we counted eleven this year.",
    "Budget review: the cloud bill doubled after the migration to the new region.",
    "Dinner plans with Sam on friday, the new ramen place near the station.",
]


def env_for(fake: FakeModels) -> dict[str, str]:
    return {
        "MEMLAKE_EMBEDDER": "openai",
        "OPENAI_BASE_URL": fake.url + "/v1",
        "OPENAI_API_KEY": "sk-local-test",
        "MEMLAKE_EMBED_MODEL": "bag-of-words",
        "MEMLAKE_EMBED_DIM": str(fake.dim),
        "MEMLAKE_RERANKER": "http",
        "MEMLAKE_RERANK_URL": fake.url + "/rerank",
        "MEMLAKE_RERANK_MODEL": "overlap",
    }


@contextmanager
def s3_app(fake: FakeModels) -> Iterator[str]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="memlake-models")
        settings = Settings(
            store="s3",
            bucket="memlake-models",
            embedder="openai",
            embed_model="bag-of-words",
            embed_dimensions=fake.dim,
            openai_base_url=fake.url + "/v1",
            reranker="http",
            rerank_url=fake.url + "/rerank",
        )
        services = Services.build(settings, S3Store("memlake-models", client=client))
        with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
            yield url


def scenario(url: str, fake: FakeModels) -> None:
    async def go() -> None:
        async with connect(url) as client:
            ids = []
            for note in NOTES:
                added = await call(client, "add_episode", {"content": note, "context": "home"})
                assert not added["is_error"], added
                ids.append(added["id"])
            embedded = [b for p, _, b in fake.requests if p.endswith("/embeddings")]
            assert embedded and all(b["model"] == "bag-of-words" for b in embedded)

            query = {"query": "where do the herons nest", "content": "passage"}
            found = await call(client, "search_episodes", query)
            assert not found["is_error"], found
            top = found["episodes"][0]
            assert top["id"] == ids[0]
            assert top["breakdown"]["rerank"] > 0  # the endpoint's score, kept per hit
            assert any(p.endswith("/rerank") for p, _, _ in fake.requests)

            # the reranker down: the search keeps its fused order, says so per hit
            down = Fault(503, {"message": "reranker restarting"}, route="/rerank")
            fake.fail_next(*[down] * 4)
            degraded = await call(client, "search_episodes", query)
            assert not degraded["is_error"], degraded
            assert degraded["episodes"][0]["id"] == ids[0]
            assert degraded["episodes"][0]["breakdown"].get("rerank") is None

            # the embedder down (every request answers 503, the server's maintenance tick
            # asking too): the write is stored with its vectors pending, and a search answers
            # by words and says so (decision 4702)
            down = Fault(503, {"error": {"message": "restarting"}}, route="/embeddings")

            async def while_down(name: str, args: dict[str, Any]) -> dict[str, Any]:
                fake.fail_next(*[down] * 24)
                try:
                    return await call(client, name, args)
                finally:
                    fake.faults[:] = [f for f in fake.faults if f is not down]

            note = {"content": "Herons again at dawn, by the old mill.", "context": "home"}
            kept = await while_down("add_episode", note)
            assert not kept["is_error"] and kept["vectors_pending"] >= 1, kept
            words = await while_down("search_episodes", {"query": "herons mill"})
            assert not words["is_error"] and "left out" in words["degraded"], words
            assert kept["id"] in [e["id"] for e in words["episodes"]]

            # the embedder refusing the key: a tool error an agent can read, nothing stored
            fake.fail_next(Fault(401, {"error": {"message": "invalid api key"}}))
            bad = await call(client, "add_episode", {"content": "a note the model never saw"})
            assert bad["is_error"], bad
            assert "invalid api key" in bad["error"]["message"]
            assert "OPENAI_API_KEY" in bad["error"].get("hint", "")
            listed = await call(client, "list_episodes", {"context": "home"})
            assert len(listed["episodes"]) == 4  # the three notes and the one kept pending

    run(go())


def test_own_models_through_memlake_serve_on_the_local_lake(tmp_path: Path) -> None:
    with fake_models(dim=48) as fake, serve_subprocess(tmp_path, env_for(fake)) as url:
        scenario(url, fake)


def test_own_models_on_moto_backed_s3() -> None:
    with fake_models(dim=48) as fake, s3_app(fake) as url:
        scenario(url, fake)


def test_a_store_moves_to_another_model_by_export_and_import(tmp_path: Path) -> None:
    """A store built with MiniLM refuses the endpoint's model with a hint naming the way over;
    `memlake reembed` (export without vectors, import into a new data directory with the new
    settings: every episode embedded by the new model) makes it, resumably; search there."""
    old, new = tmp_path / "old", tmp_path / "new"
    minilm = Services.build(Settings(data_dir=old), LocalStore(old))
    long_note = " ".join(f"Entry {i}: the tide table for pier {i} moved again." for i in range(400))
    for note in [*NOTES, long_note]:
        _tools(minilm, "default")("add_episode", content=note, context="home")

    with fake_models(dim=48) as fake:
        settings = Settings(
            data_dir=old,
            embedder="openai",
            embed_model="bag-of-words",
            embed_dimensions=48,
            openai_base_url=fake.url + "/v1",
        )
        refused = Services.build(settings, LocalStore(old))
        with pytest.raises(ConfigurationError) as err:
            _tools(refused, "default")("search_episodes", query="herons")
        assert "memlake reembed" in err.value.hint

        # memlake reembed, run with the new settings: the old store is only read
        reembed = ("reembed", "--tenant", "default", "--data", str(old), "--to", str(new))
        few_at_once = {**env_for(fake), "MEMLAKE_EMBED_SYNC_PASSAGES": "2"}  # the rest pending
        done = memlake(*reembed, env=few_at_once)
        assert done.returncode == 0, done.stderr
        assert "vectors by openai:bag-of-words:48: 4 written" in done.stdout, done.stdout
        assert "still to embed" not in done.stdout and "0 left" in done.stderr, done
        asked = len(fake.requests)
        again = memlake(*reembed, env=few_at_once)  # as after an interruption: carries on
        assert again.returncode == 0 and "0 written, 4 already there" in again.stdout, again
        assert len(fake.requests) == asked  # nothing embedded twice
        same = memlake(
            "reembed",
            "--tenant",
            "default",
            "--data",
            str(old),
            "--to",
            str(old),
            env=env_for(fake),
        )
        assert same.returncode == 2 and "another directory" in same.stderr
        moved = Services.build(replace(settings, data_dir=new), LocalStore(new))
        state = SearchState.from_extra(moved.lake.snapshot("default").extra)
        assert state is not None and (state.model, state.dim) == ("openai:bag-of-words:48", 48)
        assert not pending_map(moved.lake.snapshot("default"))  # every passage embedded
        found = _tools(moved, "default")("search_episodes", query="where do the herons nest")
        assert found["episodes"][0]["content"] == NOTES[0]
        assert found["episodes"][0]["breakdown"]["vector_rank"] == 1


def memlake(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    command = [sys.executable, "-m", "memlake", *args]
    return subprocess.run(command, capture_output=True, text=True, env=full, timeout=300)
