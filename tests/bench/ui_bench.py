"""The memory browser's weight and speed in headless Chromium, and its screenshots.

    .venv/bin/python -m tests.bench.ui_bench [--sessions 300] [--loads 7] [--screenshots docs/ui]

Starts `memlake serve` on a temporary lake, stores chat sessions (tests/bench/conversations.py,
with their dates and titles, linked in order by `follows` within each conversation), then opens
each view in a fresh tab `--loads` times and reports the median time from navigation start to
the view rendered (the router stamps `body[data-rendered]`), and the page's weight (its files
as served, uncompressed). With --screenshots, saves one PNG per view there (README links them).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from memlake.mcp.browser import FILES
from tests.bench.conversations import corpus
from tests.e2e.browser import chromium, wait_rendered
from tests.e2e.mcp_helpers import call, connect, run
from tests.e2e.serverproc import start_server

VIEWS = {
    "timeline": "/",
    "search": "/search?q=adopted+a+dog",
    "graph": "/graph?context=conversation-0",
    "threads": "/threads",
    "concepts": "/concepts",
}


def seed(url: str, sessions: int) -> str:
    """Chat sessions as episodes; returns one episode id (for the episode view)."""

    async def scenario() -> str:
        first = ""
        async with connect(url) as client:
            stored = 0
            for n, conv in enumerate(corpus(conversations=max(1, sessions // 20))):
                previous = None
                for text, title, when in zip(conv.sessions, conv.titles, conv.dates, strict=True):
                    if stored >= sessions:
                        return first
                    args: dict[str, Any] = {
                        "content": text,
                        "context": f"conversation-{n}",
                        "started_at": when.isoformat(),
                    }
                    if title:
                        args["metadata"] = {"source_title": title}
                    ep = await call(client, "add_episode", args)
                    first = first or ep["id"]
                    if previous:
                        await call(
                            client,
                            "add_episode_relationship",
                            {
                                "from_episode_id": previous,
                                "to_episode_id": ep["id"],
                                "relationship_type": "follows",
                            },
                        )
                    previous, stored = ep["id"], stored + 1
            concept = await call(client, "upsert_concept", {"name": "pets", "kind": "topic"})
            concept_id = concept.get("concept", concept)["id"]
            await call(
                client, "link_episode_to_concept", {"episode_id": first, "concept_id": concept_id}
            )
            await call(
                client,
                "add_thread",
                {
                    "title": "trip planning",
                    "messages": [{"role": "user", "content": "Where should we go in spring?"}],
                },
            )
        return first

    return run(scenario())  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--screenshots", type=Path)
    args = parser.parse_args()
    random.seed(7)
    with tempfile.TemporaryDirectory() as tmp, start_server(Path(tmp)) as server:
        base = server.base_url
        episode = seed(server.mcp_url, args.sessions)
        views = {**VIEWS, "episode": "/episode/" + episode}
        weight = sum(len(urllib.request.urlopen(f"{base}/ui/{f}").read()) for f in FILES)
        print(f"page weight: {weight:,} bytes in {len(FILES)} files (uncompressed, no images)")
        print(f"{args.sessions} sessions stored; first render, median of {args.loads} loads:")
        with chromium() as driver:
            for name, route in views.items():
                times = []
                for _ in range(args.loads):
                    driver.get("about:blank")
                    driver.get(f"{base}/ui#{route}")
                    wait_rendered(driver, "")
                    times.append(
                        float(driver.execute_script("return document.body.dataset.rendered"))
                    )
                print(
                    f"  {name:9} {statistics.median(times):7.1f} ms"
                    f"  (min {min(times):.1f}, max {max(times):.1f})"
                )
                if args.screenshots:
                    args.screenshots.mkdir(parents=True, exist_ok=True)
                    driver.save_screenshot(str(args.screenshots / f"{name}.png"))


if __name__ == "__main__":
    main()
