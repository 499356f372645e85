"""`memlake import-chats`: ChatGPT and Claude.ai exports, Claude Code sessions and memory.json
become threads and episodes that the MCP tools find (issue 46, decision 4601)."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from tests.integration.import_chats_helpers import (
    FIXTURES,
    chatgpt_conversation,
    messages_of,
    node,
    run_cli,
    tools,
    write_json,
)

#: a distinctive phrase of every message each fixture keeps, in thread order
CHATGPT_BRANCH = [
    "smells like acetone",
    "rye flour",
    "photo of the hooch layer",
    "discard half before feeding",
]


def test_every_fixture_message_is_found_through_the_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the fixtures folder (ChatGPT, Claude.ai with a BOM, Claude Code, memory.json, notes)
    lake = tmp_path / "lake"
    # WHEN it is imported through the CLI
    code, report = run_cli(capsys, str(FIXTURES), "--data", str(lake))
    # THEN everything readable is in, and the one damaged line is named (exit code 1)
    assert report["imported"] == 8 and report["empty"] == 2, report
    assert [p["where"].rsplit("/", 1)[-1] for p in report["unreadable"]] == [
        "sess-0001.jsonl, line 8"
    ]
    assert code == 1
    call = tools(lake)
    phrases = [
        *CHATGPT_BRANCH,
        "20th Fibonacci number",
        "anemones in tide pools",
        "tide goes out",
        "tram goes to Belém",
        "pastel de nata",
        "Praça da Figueira",
        "capybara enclosure",
        "square metres per capybara",
        "pagination test flakes",
        "base64 padding",
        "Prefers Rust for parsers",
    ]
    for phrase in phrases:
        hits = call("search_episodes", query=phrase, limit=3)["episodes"]
        assert hits and phrase in hits[0]["content"], phrase
    # the memory browser's source filter is find_episodes' platform
    for platform in ("chatgpt", "claude", "claude_code", "memory_json"):
        found = call("find_episodes", platform=platform, limit=50)["episodes"]
        assert found and {e["platform"] for e in found} == {platform}, platform


def test_chatgpt_tree_keeps_the_shown_branch_and_leaves_hidden_parts_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = FIXTURES / "chatgpt_conversations.json"
    code, report = run_cli(capsys, str(export), "--data", str(tmp_path))
    assert code == 0 and report["imported"] == 3 and report["empty"] == 1
    call = tools(tmp_path)
    episodes = {e["title"]: e for e in call("list_episodes", limit=10)["episodes"]}
    sourdough = call("get_episode", id=episodes["Sourdough starter rescue"]["id"])
    # the path to current_node, in order; the abandoned branch counted, not shown
    texts = [m["content"] for m in messages_of(call, sourdough["source_thread_id"])]
    assert [p for p in CHATGPT_BRANCH for t in texts if p in t] == CHATGPT_BRANCH
    assert "spelt" not in sourdough["content"].lower()
    assert sourdough["metadata"]["import"]["other_branches"] == 1
    assert sourdough["content"].startswith("User: My sourdough")
    assert "\n\nAssistant: Feed it" in sourdough["content"]
    assert sourdough["platform"] == "chatgpt" and sourdough["model"] == "gpt-4o-mini"
    assert sourdough["input_modalities"] == ["image", "text"]
    assert sourdough["started_at"] == "2023-11-14T22:13:21.000000Z"
    # code and its output kept short; custom instructions and thoughts left out; a lone
    # surrogate replaced, not failing the batch
    tools_ep = call("get_episode", id=episodes["Fibonacci with code"]["id"])
    assert "[python] fib(20)" in tools_ep["content"]
    assert (
        "secret profile" not in tools_ep["content"] and "hidden thinking" not in tools_ep["content"]
    )
    output = [m for m in messages_of(call, tools_ep["source_thread_id"]) if m["role"] == "tool"]
    assert len(output) == 1 and len(output[0]["content"]) <= 1_000
    # (ijson's C parser answers "?" for it, the Python one U+FFFD: either way it is stored)
    assert re.search("is 6765 [?\ufffd]\\.", tools_ep["content"])
    assert tools_ep.get("started_at") is None  # the export has no time at all
    voice = call("get_episode", id=episodes["Voice chat about tide pools"]["id"])
    assert voice["voice_mode"] is True and "voice" in voice["input_modalities"]
    assert voice["output_modalities"] == ["text", "voice"]
    pending = call("get_pending_threads", limit=10)["threads"]
    assert len(pending) == 3 and all(t["processing_status"] == "pending" for t in pending)


def test_claude_export_in_a_zip_with_its_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN Claude.ai's zip: conversations.json (with a BOM) beside users.json and projects.json
    export = tmp_path / "data-2025.zip"
    with zipfile.ZipFile(export, "w") as z:
        z.write(FIXTURES / "claude_conversations_bom.json", "conversations.json")
        z.writestr("users.json", '[{"uuid": "u", "full_name": "Ada"}]')
        z.writestr("projects.json", '[{"uuid": "p1", "name": "Travel 2025"}]')
    code, report = run_cli(capsys, str(export), "--data", str(tmp_path / "lake"))
    assert code == 0 and report["imported"] == 2 and report["empty"] == 1, report
    call = tools(tmp_path / "lake")
    trip = next(
        e for e in call("list_episodes")["episodes"] if e["title"] == "Planning the Lisbon trip"
    )
    trip = call("get_episode", id=trip["id"])
    assert trip["platform"] == "claude" and trip["context"] == "Travel 2025"
    assert "[attachment: itinerary.txt]\nDay 1: pastel de nata" in trip["content"]
    assert "[tool: web_search]" in trip["content"] and "[file: map.png]" in trip["content"]
    assert (trip["started_at"], trip["ended_at"]) == (
        "2025-03-01T10:00:05.000000Z",
        "2025-03-01T10:20:00.000000Z",
    )


def test_same_export_twice_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = FIXTURES / "chatgpt_conversations.json"
    run_cli(capsys, str(export), "--data", str(tmp_path))
    versions = sorted((tmp_path / "tenants" / "default" / "manifest").glob("0*.json"))
    code, report = run_cli(capsys, str(export), "--data", str(tmp_path))
    assert code == 0 and report["unchanged"] == 3 and report["imported"] == 0
    assert report["commits"] == 0
    assert sorted((tmp_path / "tenants" / "default" / "manifest").glob("0*.json")) == versions


def test_a_newer_export_adds_new_messages_as_a_new_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a conversation imported, and its thread processed by an agent (completed)
    old = chatgpt_conversation("c1", ["How do I descale a kettle?", "Use citric acid."])
    run_cli(capsys, str(write_json(tmp_path / "a.json", [old])), "--data", str(tmp_path / "l"))
    call = tools(tmp_path / "l")
    episode = call("list_episodes")["episodes"][0]
    thread = episode["source_thread_id"]
    call("mark_thread_status", id=thread, status="processing")
    call("mark_thread_status", id=thread, status="completed")
    # WHEN a later export has two more messages and one more conversation
    newer = chatgpt_conversation(
        "c1", ["How do I descale a kettle?", "Use citric acid.", "How much?", "Two spoons."]
    )
    other = chatgpt_conversation("c2", ["Unrelated question about ferns", "Ferns like shade."])
    path = write_json(tmp_path / "b.json", [newer, other])
    code, report = run_cli(capsys, str(path), "--data", str(tmp_path / "l"))
    # THEN the old one gets its two new messages and a new revision, not a duplicate
    assert code == 0 and (report["imported"], report["updated"]) == (1, 1)
    assert report["messages"] == 4
    call = tools(tmp_path / "l")
    assert call("list_episodes")["count"] == 2
    again = call("get_episode", id=episode["id"])
    assert again["revision"] == 2 and "Assistant: Two spoons." in again["content"]
    assert [m["content"] for m in messages_of(call, thread)][2:] == ["How much?", "Two spoons."]
    status = call("get_thread", id=thread)["thread"]["processing_status"]
    assert status == "pending"  # new words for the agent to derive from


def test_an_edit_that_changed_the_shown_branch_rewrites_the_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = chatgpt_conversation("c1", ["Plan a hike", "Try the ridge trail.", "Too steep"])
    run_cli(capsys, str(write_json(tmp_path / "a.json", [first])), "--data", str(tmp_path / "l"))
    edited = chatgpt_conversation("c1", ["Plan a hike", "Try the lake loop."])
    code, report = run_cli(
        capsys, str(write_json(tmp_path / "b.json", [edited])), "--data", str(tmp_path / "l")
    )
    assert code == 0 and report["updated"] == 1
    call = tools(tmp_path / "l")
    episode = call("list_episodes")["episodes"][0]
    texts = [m["content"] for m in messages_of(call, episode["source_thread_id"])]
    assert texts == ["Plan a hike", "Try the lake loop."]
    assert call("get_thread", id=episode["source_thread_id"])["thread"]["message_count"] == 2


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"PK\x03\x04" + b"\x00" * 40, "not a readable zip"),
        (b"Just some notes.\n", "not a chat export"),
        (b"", "an empty file"),
        (b"[]", "an empty list"),
        (b'{"a": 1}\n', "not a chat export"),
    ],
)
def test_a_wrong_file_is_named_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, reason: str
) -> None:
    path = tmp_path / "export.bin"
    path.write_bytes(content)
    code, report = run_cli(capsys, str(path), "--data", str(tmp_path / "l"))
    assert code == 1 and report["imported"] == 0
    assert report["unreadable"][0]["where"] == str(path)
    assert reason in report["unreadable"][0]["reason"]


def test_a_truncated_zip_and_broken_json_import_what_came_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    convs = [chatgpt_conversation(f"c{i}", [f"question number {i}", "answer"]) for i in range(3)]
    text = write_json(tmp_path / "x.json", convs).read_text()
    broken = tmp_path / "broken.json"
    broken.write_text(text[: text.index('"c2"') + 2])  # cut inside the third conversation
    code, report = run_cli(capsys, str(broken), "--data", str(tmp_path / "l"))
    assert code == 1 and report["imported"] == 2
    assert "invalid JSON after item 2" in report["unreadable"][0]["reason"]
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", text)
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole.read_bytes()[:-30])  # the central directory lost
    code, report = run_cli(capsys, str(cut), "--data", str(tmp_path / "l"))
    assert code == 1 and "truncated or damaged" in report["unreadable"][0]["reason"]


def test_utf16_and_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conv = chatgpt_conversation("c1", ["Grüße aus Köln ☕", "Danke!"])
    path = tmp_path / "utf16.json"
    path.write_text(json.dumps([conv], ensure_ascii=False), encoding="utf-16")
    code, report = run_cli(capsys, str(path), "--data", str(tmp_path / "l"), "--dry-run")
    assert code == 0 and report["imported"] == 1 and report["dry_run"] and report["commits"] == 0
    assert not (tmp_path / "l" / "tenants").exists()
    code, report = run_cli(capsys, str(path), "--data", str(tmp_path / "l"), "--context", "home")
    assert code == 0 and report["imported"] == 1
    hits = tools(tmp_path / "l")("search_episodes", query="Köln", context="home")["episodes"]
    assert hits and "Grüße aus Köln ☕" in hits[0]["content"]


def test_claude_code_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = run_cli(capsys, str(FIXTURES / "claude_code"), "--data", str(tmp_path))
    assert code == 1 and report["imported"] == 1  # the cut-off last line is named
    call = tools(tmp_path)
    episode = call("get_episode", id=call("list_episodes")["episodes"][0]["id"])
    assert episode["platform"] == "claude_code" and episode["context"] == "/home/ada/proj"
    assert episode["title"] == "Fix flaky pagination test"
    assert episode["model"] == "claude-sonnet-4-20250514"
    texts = [(m["role"], m["content"]) for m in messages_of(call, episode["source_thread_id"])]
    assert texts[1] == (
        "assistant",
        "Let me run the test suite for the cursor module.\n[Bash] pytest tests/test_cursors.py -x",
    )
    assert texts[2][0] == "tool" and len(texts[2][1]) < 400  # 20,000 characters of output cut
    assert "secret" not in episode["content"] and "/clear" not in episode["content"]
    assert len(texts) == 4


def test_memory_json_becomes_concepts_and_linked_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = run_cli(capsys, str(FIXTURES / "memory.json"), "--data", str(tmp_path))
    assert code == 0 and report["concepts"] == 2 and report["imported"] == 2
    call = tools(tmp_path)
    ada = call("find_concepts", query="Ada")["concepts"][0]
    assert ada["kind"] == "person" and "Lives in Lisbon" in ada["description"]
    linked = call("get_concept", id=ada["id"])
    hits = call("search_episodes", query="works_at Acme")["episodes"]
    assert {h["title"] for h in hits} >= {"Ada Lovelace", "Acme Corp"}
    ada_episode = next(h for h in hits if h["title"] == "Ada Lovelace")
    acme = call("find_concepts", query="Acme")["concepts"][0]
    # Ada's concept: linked from her episode and from Acme's (the relation names her)
    assert set(linked["episode_ids"]) == {
        h["id"] for h in hits if h["title"] in ("Ada Lovelace", "Acme Corp")
    }
    assert call("get_episode", id=ada_episode["id"])["platform"] == "memory_json"
    related = call("find_episodes", concept_id=acme["id"])["episodes"]
    assert ada_episode["id"] in {e["id"] for e in related}
    code, report = run_cli(capsys, str(FIXTURES / "memory.json"), "--data", str(tmp_path))
    assert code == 0 and report["unchanged"] == 2 and report["commits"] == 0


def test_long_messages_are_split_and_a_long_transcript_names_its_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a 150 KB pasted message and a content limit of 20 KB
    monkeypatch.setenv("MEMLAKE_MAX_CONTENT_BYTES", "20000")
    paste = " ".join(f"line{i}" for i in range(25_000))  # ~150 KB
    conv = chatgpt_conversation("c1", [paste, "That is a long log.", "Thanks, zeppelin"])
    code, report = run_cli(
        capsys, str(write_json(tmp_path / "c.json", [conv])), "--data", str(tmp_path)
    )
    assert code == 0 and report["imported"] == 1
    call = tools(tmp_path)
    episode = call("get_episode", id=call("list_episodes")["episodes"][0]["id"])
    messages = messages_of(call, episode["source_thread_id"])
    # THEN the thread holds every word, in messages of at most 64 KB
    assert all(len(m["content"].encode()) <= 64 * 1024 for m in messages)
    assert "".join(m["content"] for m in messages[:-2]) == paste
    assert messages[-1]["content"] == "Thanks, zeppelin"
    # and the episode's transcript stops within the limit, naming the thread
    assert len(episode["content"].encode()) <= 20_000
    assert episode["content"].endswith(f"more messages in thread {episode['source_thread_id']}]")


def test_a_chatgpt_tree_without_current_node_or_with_a_parent_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a tree without current_node (the newest regeneration is the last child), and a
    # damaged one whose parents loop
    tree = chatgpt_conversation("c1", ["Best pizza oven temperature?", "About 450 C."])
    first, second = list(tree["mapping"])
    tree["mapping"][first]["children"].append("regen")
    tree["mapping"]["regen"] = node("regen", first, [], "assistant", "Around 430 to 480 C.")
    del tree["current_node"]
    loop = chatgpt_conversation("c2", ["Loop question about kayaks", "Loop answer"])
    a, b = list(loop["mapping"])
    loop["mapping"][a]["parent"] = b
    code, report = run_cli(
        capsys, str(write_json(tmp_path / "c.json", [tree, loop])), "--data", str(tmp_path / "l")
    )
    assert code == 0 and report["imported"] == 2
    call = tools(tmp_path / "l")
    pizza = call("search_episodes", query="pizza oven")["episodes"][0]
    assert "Around 430 to 480 C." in pizza["content"] and "About 450 C." not in pizza["content"]
    assert call("search_episodes", query="kayaks")["episodes"]
