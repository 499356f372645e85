"""The memory browser at /ui (issue 28), driven in headless Chromium against `memlake serve`:
the timeline, a search with its highlighted passage and score breakdown, an episode and its
deletion, the graph with levels and a cycle, threads and concepts; hostile titles and contents
(script tags, event handlers, Mermaid syntax) render as inert text; with API keys the page asks
for a token once per tab. Everything it shows came through /mcp's tools (the page has no other
data path: memlake.mcp.browser serves files only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.ids import new_id
from memlake.lake import Transaction
from memlake.mcp.browser import CSP, FILES
from memlake.services import Services
from memlake.store.local import LocalStore
from memlake.timeutil import now

from .browser import chromium, rendered, visit, wait_rendered
from .mcp_helpers import call, connect, run
from .serverproc import start_server

pytestmark = pytest.mark.slow
HOSTILE_TITLE = "<img src=x onerror=window.__pwned=3>"
HOSTILE_CONTENT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> zebra'
MERMAID_TITLE = 'A]-->B{{click A call alert(1)}} %%{init: {"securityLevel": "loose"}}%%'


def tools(url: str, *calls: tuple[str, dict[str, Any]], token: str | None = None) -> list[Any]:
    async def scenario() -> list[dict[str, Any]]:
        async with connect(url, token) as client:
            return [await call(client, name, args) for name, args in calls]

    out: list[dict[str, Any]] = run(scenario())
    assert not any(o["is_error"] for o in out), out
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("ui-lake")
    with start_server(data) as server:
        a, b, c, d = tools(
            server.mcp_url,
            (
                "add_episode",
                {
                    "content": "We deployed the zebra service on Tuesday.\nRollback "
                    "plan: flip the flag.",
                    "context": "demo",
                    "started_at": "2026-11-20T10:00:00Z",
                },
            ),
            (
                "upsert_episode",
                {
                    "events": HOSTILE_CONTENT,
                    "source_title": HOSTILE_TITLE,
                    "context": "demo",
                    "platform": "claude",
                },
            ),
            (
                "upsert_episode",
                {
                    "events": "Postmortem of the zebra outage: a cold cache.",
                    "source_title": MERMAID_TITLE,
                    "context": "demo",
                },
            ),
            (
                "add_episode",
                {"content": "An episode to delete from the browser", "context": "demo"},
            ),
        )
        concept, _, _, _, thread = tools(
            server.mcp_url,
            ("upsert_concept", {"name": "zebra service", "kind": "project"}),
            (
                "add_episode_relationship",
                {
                    "from_episode_id": a["id"],
                    "to_episode_id": c["id"],
                    "relationship_type": "follows",
                },
            ),
            (
                "add_episode_relationship",
                {
                    "from_episode_id": c["id"],
                    "to_episode_id": d["id"],
                    "relationship_type": "follows",
                },
            ),
            (
                "add_episode_relationship",
                {
                    "from_episode_id": b["id"],
                    "to_episode_id": c["id"],
                    "relationship_type": "causes",
                },
            ),
            (
                "add_thread",
                {
                    "title": "<b>deploy</b> chat",
                    "context": "demo",
                    "messages": [{"role": "user", "content": "<i>when</i> to deploy?"}],
                },
            ),
        )
        concept_id = concept.get("concept", concept)["id"]
        tools(
            server.mcp_url,
            ("link_episode_to_concept", {"episode_id": a["id"], "concept_id": concept_id}),
        )
        yield {
            "url": server.base_url,
            "mcp": server.mcp_url,
            "data": data,
            "ids": [a["id"], b["id"], c["id"], d["id"]],
            "thread": thread.get("thread", thread)["id"],
        }


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def main_text(driver: Any) -> str:
    return str(driver.find_element("id", "main").text)


def assert_inert(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned") is None
    assert not driver.find_elements("css selector", "main img, main script, main b, main i")


def test_the_page_is_served_with_a_strict_policy(world: dict[str, Any]) -> None:
    import urllib.request

    with urllib.request.urlopen(world["url"] + "/ui") as page:
        assert page.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
        assert page.headers["x-content-type-options"] == "nosniff"
    total = sum(len(urllib.request.urlopen(f"{world['url']}/ui/{name}").read()) for name in FILES)
    assert total < 64_000  # the whole page, uncompressed (README reports it)


def test_timeline_search_episode_and_delete(world: dict[str, Any], browser: Any) -> None:
    base, ids = world["url"], world["ids"]
    visit(browser, base, "/")
    items = browser.find_elements("css selector", "li.episode")
    assert {i.get_attribute("data-id") for i in items} == set(ids)
    assert HOSTILE_TITLE in main_text(browser) and MERMAID_TITLE in main_text(browser)
    assert_inert(browser)
    visit(browser, base, "/?source=claude")
    assert [
        i.get_attribute("data-id") for i in browser.find_elements("css selector", "li.episode")
    ] == [ids[1]]

    visit(browser, base, "/search?q=zebra+rollback")
    first = browser.find_element("css selector", "ol.hits li.episode")
    assert first.get_attribute("data-id") == ids[0]
    assert "Rollback plan" in first.find_element("css selector", "mark").text
    words = {w.text.lower() for w in first.find_elements("css selector", "mark strong")}
    assert words == {"zebra", "rollback"}  # the query's words inside the passage
    headers = [th.text for th in first.find_elements("css selector", "th")]
    assert headers[:2] == ["BM25 rank", "BM25"] and "fused" in headers and "score" in headers
    assert_inert(browser)

    before = rendered(browser)
    first.find_element("css selector", "a.title").click()
    wait_rendered(browser, before)
    assert browser.find_element("tag name", "h1").text.startswith("We deployed the zebra")
    text = main_text(browser)
    assert "zebra service" in text and "follows" in text and ids[2] in text  # concept, link

    visit(browser, base, "/episode/" + ids[3])
    before = rendered(browser)
    browser.find_element("css selector", "button.danger").click()
    browser.switch_to.alert.accept()
    wait_rendered(browser, before)
    remaining = {
        i.get_attribute("data-id") for i in browser.find_elements("css selector", "li.episode")
    }
    assert remaining == set(ids[:3])
    (listed,) = tools(world["mcp"], ("find_episodes", {"context": "demo"}))
    assert {e["id"] for e in listed["episodes"]} == set(ids[:3])  # gone through the tool


def test_graph_levels_cycles_and_click_through(world: dict[str, Any], browser: Any) -> None:
    base, (a, b, c, _) = world["url"], world["ids"]
    lake = Services.build(
        Settings(store="local", data_dir=world["data"]), LocalStore(world["data"])
    ).lake

    def cycle(txn: Transaction) -> None:  # a cycle the tools refuse, as an old import left it
        row = {"id": new_id(), "from_id": c, "to_id": a, "type": "follows"}
        txn.put("relationships", {**row, "strength": 0.5, "created_at": now()})

    visit(browser, base, "/graph?context=demo")
    nodes = browser.find_elements("css selector", "svg.graph g.node")
    assert {n.get_attribute("data-id") for n in nodes} == {a, b, c}
    levels = [t.text for t in browser.find_elements("css selector", "svg.graph text.level")]
    assert levels == ["level 0", "level 1"]
    assert len(browser.find_elements("css selector", "svg.graph path.edge")) == 2
    assert_inert(browser)

    lake.commit("default", cycle)
    visit(browser, base, "/graph?context=demo&type=follows")
    assert browser.find_elements("css selector", "svg.graph g.node.cycle")
    assert "in a cycle" in main_text(browser) and "Cycles" in main_text(browser)
    before = rendered(browser)
    browser.find_element("css selector", f'svg.graph g.node[data-id="{b}"]').click()
    wait_rendered(browser, before)
    assert browser.current_url.endswith("#/episode/" + b)
    assert browser.find_element("tag name", "h1").text == HOSTILE_TITLE
    assert_inert(browser)


def test_threads_and_concepts(world: dict[str, Any], browser: Any) -> None:
    visit(browser, world["url"], "/threads")
    assert "<b>deploy</b> chat" in main_text(browser) and "pending" in main_text(browser)
    visit(browser, world["url"], "/thread/" + world["thread"])
    assert "<i>when</i> to deploy?" in main_text(browser)
    visit(browser, world["url"], "/concepts")
    assert "zebra service" in main_text(browser)
    browser.find_element("link text", "zebra service").click()
    wait_rendered(browser, "")
    assert_inert(browser)


def test_with_api_keys_the_page_asks_for_a_token_once(tmp_path: Path, browser: Any) -> None:
    env = {"MEMLAKE_API_KEYS": "s3cret-token:acme"}
    with start_server(tmp_path, env=env) as server:
        tools(server.mcp_url, ("add_episode", {"content": "a keyed note"}), token="s3cret-token")
        visit(browser, server.base_url, "/")
        assert browser.find_elements("css selector", "form.token")
        field = browser.find_element("name", "token")
        field.send_keys("wrong")
        before = rendered(browser)
        browser.find_element("css selector", "form.token button").click()
        wait_rendered(browser, before)
        assert "not accepted" in main_text(browser)
        browser.find_element("name", "token").send_keys("s3cret-token")
        before = rendered(browser)
        browser.find_element("css selector", "form.token button").click()
        wait_rendered(browser, before)
        assert "a keyed note" in main_text(browser)
        visit(browser, server.base_url, "/search?q=keyed")  # kept for the tab
        assert "a keyed note" in main_text(browser)
        assert json.dumps(browser.execute_script("return sessionStorage.length")) == "1"
