"""The reranking stage as an agent meets it: search_episodes through /mcp with the real mcp
client, on a server whose searcher has a reranker (a deterministic one: Bedrock cannot be
reached here; tests/integration/test_search_rerank.py stubs Bedrock itself). The tool's output
model must carry the reranker's score, and min_score applies to it."""

from __future__ import annotations

from pathlib import Path

from memlake.config import Settings
from memlake.mcp.server import build_app
from memlake.services import Services
from memlake.store.local import LocalStore
from tests.integration.test_search_rerank import NOTES, Herons

from .mcp_helpers import call, connect, run, serve_in_thread


def test_reranked_hits_reach_the_agent_with_their_rerank_score(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, rerank_candidates=3)
    services = Services.build(settings, LocalStore(tmp_path))
    herons = Herons()
    services.search._reranker = herons  # what MEMLAKE_RERANKER=bedrock builds, made local

    async def scenario() -> None:
        with serve_in_thread(build_app(services, host="127.0.0.1")) as url:
            async with connect(url) as client:
                ids = []
                for note in NOTES:
                    added = await call(client, "add_episode", {"content": note})
                    assert not added["is_error"], added
                    ids.append(added["id"])
                args = {"query": "quarry ravens", "recency": False, "content": "none"}
                got = await call(client, "search_episodes", args)
                assert not got["is_error"], got
                top = got["episodes"][0]
                assert top["id"] == ids[2]  # the heron note, moved up by the reranker
                assert top["score"] == 0.9 and top["breakdown"]["rerank"] == 0.9
                assert 0 < top["breakdown"]["fused"] < 1
                assert len(herons.seen) == 1 and len(herons.seen[0]) == 3  # the top 3 judged
                strict = await call(client, "search_episodes", {**args, "min_score": 0.5})
                assert [e["id"] for e in strict["episodes"]] == [ids[2]]

    run(scenario())
