"""search_episodes end to end through /mcp with the official client, on both lakes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memlake.timeutil import iso, now

from .conftest import TOKENS, ServerUnderTest
from .mcp_helpers import call, connect, run

STANDUP = (
    "Morning sync, long one today. Marco walked through the flaky integration tests and we agreed"
    " to quarantine the two worst offenders until Friday. Sam asked about the holiday rota;"
    " nobody wants the week after New Year, so we will draw lots. The vendor call got moved twice"
    " and is now on Wednesday at four. Small note for the record: the database migration is now"
    " tracked as ticket 58213, and Priya owns the rollout checklist. Then a long tangent"
    " about whether the office coffee machine should be replaced, with strong opinions on oat"
    " milk. We closed with the reminder that expense reports are due at the end of the month and"
    " that the printer on floor two is broken again."
)
CORPUS = {
    "dog": "On Saturday Ana went to the shelter and adopted a small beagle puppy; she named her"
    " Biscuit and bought a red collar.",
    "deploy": "The deploy failed again with error code QX-7731 on the billing cluster, so we rolled"
    " back at 3am.",
    "lasagna": "Grandma shared her lasagna recipe: ricotta, nutmeg, fresh pasta sheets and two"
    " hours in a slow oven.",
    "budget": "The quarterly budget review moved to Thursday; finance needs the vendor invoices"
    " before then.",
    "trip": "We booked train tickets to Lisbon for the conference in May and a hotel near the"
    " river.",
    "ticket": "Ticket 58231 was closed after the fix.",
    "order": "Order 85213 shipped on Monday.",
    "standup": STANDUP,
}


async def _add(client: Any, content: str, **extra: Any) -> str:
    out = await call(client, "add_episode", {"content": content, **extra})
    assert not out["is_error"], out
    return str(out["id"])


async def _search(client: Any, query: str, **extra: Any) -> dict[str, Any]:
    out = await call(client, "search_episodes", {"query": query, **extra})
    assert not out["is_error"], out
    return out


def test_paraphrase_needs_vectors_and_rare_terms_need_bm25(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            ids = {}
            for name, text in CORPUS.items():
                ids[await _add(client, text, context="relevance")] = name

            # a paraphrase shares no term with its episode: BM25 cannot find it, vectors can
            out = await _search(
                client, "which dog did we bring home from the animal rescue?", context="relevance"
            )
            top = out["episodes"][0]
            assert ids[top["id"]] == "dog"
            assert top["breakdown"].get("bm25_rank") is None
            assert top["breakdown"]["vector_rank"] == 1

            # an exact ticket number buried in a long meeting: vectors prefer the short notes with
            # look-alike numbers, BM25 finds the exact term, and the fused ranking puts it first
            out = await _search(client, "58213", context="relevance")
            top = out["episodes"][0]
            assert ids[top["id"]] == "standup"
            assert top["breakdown"]["bm25_rank"] == 1
            assert top["breakdown"]["vector_rank"] > 1
            assert top["content"] == STANDUP  # full content, never cut

            out = await _search(client, "italian food instructions from my grandmother")
            assert ids.get(out["episodes"][0]["id"]) == "lasagna"
            for hit in out["episodes"]:
                b = hit["breakdown"]
                assert 0 <= hit["score"] <= 1 and hit["score"] == b["score"]
                assert 0 <= b["fused"] <= 1 and 0.9 <= b["recency"] <= 1
            scores = [h["score"] for h in out["episodes"]]
            assert scores == sorted(scores, reverse=True)

            out = await _search(client, "ticket", context="relevance", limit=2, recency=False)
            assert out["count"] == 2 and out["episodes"][0]["breakdown"].get("recency") is None

    run(scenario())


def test_time_filters_at_the_edges(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            march = await _add(
                client,
                "Harbour cleanup volunteering with the rowing club",
                context="timefilter",
                started_at="2025-03-10T09:00:00Z",
                ended_at="2025-03-10T12:00:00Z",
            )
            june = await _add(
                client,
                "Harbour cleanup volunteering, second round, more plastic than ever",
                context="timefilter",
                started_at="2025-06-01T08:00:00",  # no zone: UTC
            )

            async def found(**bounds: str) -> set[str]:
                out = await _search(client, "harbour cleanup", context="timefilter", **bounds)
                return {h["id"] for h in out["episodes"]}

            assert await found() == {march, june}
            # an episode matches when its [start, end] overlaps the range, edges included
            assert await found(time_start="2025-03-10T12:00:00Z") == {march, june}
            assert await found(time_start="2025-03-10T12:00:00.000001Z") == {june}
            assert await found(time_end="2025-03-10T09:00:00Z") == {march}
            assert await found(time_end="2025-03-10T08:59:59Z") == set()
            assert await found(time_start="2025-06-01T08:00:00+00:00") == {june}
            # 10:00 in UTC+2 is 08:00 UTC, the June episode's start
            assert await found(time_end="2025-06-01T10:00:00+02:00") == {march, june}
            assert await found(time_end="2025-06-01T09:59:59+02:00") == {march}
            assert await found(time_start="2025-04-01", time_end="2025-05-01") == set()

            bad = await call(
                client,
                "search_episodes",
                {"query": "harbour", "time_start": "2025-06-02", "time_end": "2025-06-01"},
            )
            assert bad["is_error"] and "time_start is after time_end" in bad["error"]["message"]
            bad = await call(client, "search_episodes", {"query": "x", "time_start": "June 1st"})
            assert bad["is_error"] and "ISO 8601" in bad["error"]["message"]

    run(scenario())


def test_context_and_tenant_isolation(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with (
            connect(server.url, TOKENS["alpha"]) as alpha,
            connect(server.url, TOKENS["beta"]) as beta,
        ):
            red = await _add(alpha, "Zanzibar spice order for the red team", context="iso-red")
            blue = await _add(alpha, "Zanzibar spice order for the blue team", context="iso-blue")
            out = await _search(alpha, "Zanzibar spice order", context="iso-red")
            assert [h["id"] for h in out["episodes"]] == [red]
            assert out["episodes"][0]["context"] == "iso-red"
            out = await _search(alpha, "Zanzibar spice order")
            assert {red, blue} <= {h["id"] for h in out["episodes"]}
            out = await _search(alpha, "Zanzibar", context="iso-nowhere")
            assert out["episodes"] == [] and out["count"] == 0

            # another tenant never sees alpha's episodes, by keywords or by meaning
            mine = await _add(beta, "Beta's own note about rowing practice", context="iso-red")
            # (beta's rowing note does not match these either: scores are absolute, so nothing
            # weak is returned just to fill the list)
            for query in ("Zanzibar spice order", "spices shipped to a team"):
                out = await _search(beta, query, limit=50)
                assert {h["id"] for h in out["episodes"]} <= {mine}
            out = await _search(beta, "rowing practice", limit=50)
            assert [h["id"] for h in out["episodes"]] == [mine]

    run(scenario())


def test_delete_and_read_after_write(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            keep = await _add(client, "Quokka photos from the Rottnest trip", context="del")
            gone = await _add(client, "Quokka selfie tips and the ferry schedule", context="del")
            # searchable as soon as add_episode returns
            out = await _search(client, "quokka", context="del")
            assert {h["id"] for h in out["episodes"]} == {keep, gone}

            deleted = await call(client, "delete_episode", {"id": gone})
            assert deleted["deleted"] == 1
            for query in ("quokka", "ferry schedule", "selfie tips for the ferry"):
                out = await _search(client, query, context="del", limit=50)
                assert {h["id"] for h in out["episodes"]} <= {keep}
            out = await _search(client, "quokka", context="del", limit=50)
            assert [h["id"] for h in out["episodes"]] == [keep]

    run(scenario())


def test_bad_arguments_are_explained(server: ServerUnderTest) -> None:
    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            cases: list[tuple[dict[str, Any], str]] = [
                ({}, "query"),
                ({"query": ""}, "query"),
                ({"query": "x", "limit": 0}, "limit"),
                ({"query": "x", "limit": 51}, "limit"),
                ({"query": "x" * 2001}, "query"),
                ({"query": "x", "context": ""}, "context"),
                ({"query": "x", "recency": "sometimes"}, "recency"),
                ({"query": "x", "min_score": 1.5}, "min_score"),
                ({"query": "x", "min_score": -0.1}, "min_score"),
                ({"query": "x", "min_score": "high"}, "min_score"),
                ({"query": "x", "time_start": "7x"}, "7d"),
                ({"query": "x", "time_end": "yesterday-ish"}, "yesterday"),
                ({"query": "x", "colour": "red"}, "unknown argument"),
            ]
            for args, word in cases:
                out = await call(client, "search_episodes", args)
                assert out["is_error"], args
                assert out["error"]["code"] == "invalid_argument"
                assert word in out["error"]["message"], (args, out)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["search_episodes"].annotations.read_only_hint is True

    run(scenario())


def test_relative_time_filters_min_score_and_when_it_happened(server: ServerUnderTest) -> None:
    """An episode started 3 days ago is found from "7d" and not from "2d"; every hit says when
    it happened and the passage that matched; min_score drops weaker hits, and one no hit
    reaches gives an empty list (decision 1215)."""

    async def scenario() -> None:
        async with connect(server.url, TOKENS["alpha"]) as client:
            three_days_ago = iso(now() - timedelta(days=3))
            old = await _add(
                client,
                "Kayak trip on the fjord: we saw seals near the glacier and camped on an island.",
                context="relative",
                started_at=three_days_ago,
            )
            fresh = await _add(
                client, "Kayak repair: patched the hull with epoxy.", context="relative"
            )

            async def found(**args: Any) -> dict[str, dict[str, Any]]:
                out = await _search(client, "kayak fjord seals", context="relative", **args)
                return {h["id"]: h for h in out["episodes"]}

            hits = await found(time_start="7d")
            assert set(hits) == {old, fresh}
            assert hits[old]["started_at"] == three_days_ago  # "when did ...": in the hit
            passage = hits[old]["passage"]  # a short content: offsets, its text is in content
            assert "fjord" in hits[old]["content"][passage["start"] : passage["end"]]
            assert set(await found(time_start="2d")) == {fresh}
            assert set(await found(time_start="1 week ago", time_end="2 days ago")) == {old}
            assert set(await found(time_end="yesterday")) == {old}
            assert set(await found(time_start="today", content="none")) == {fresh}

            scores = sorted(h["score"] for h in hits.values())
            assert scores[0] < scores[1]
            cut = (scores[0] + scores[1]) / 2
            assert set(await found(min_score=cut)) == {old}  # the better match only
            assert set(await found(min_score=0)) == {old, fresh}
            empty = await _search(client, "zzyzx qwv unrelated", context="relative", min_score=0.99)
            assert (empty["episodes"], empty["count"]) == ([], 0)

            listed = await call(
                client, "list_episodes", {"context": "relative", "time_start": "2d"}
            )
            assert [e["id"] for e in listed["episodes"]] == [fresh]

    run(scenario())
