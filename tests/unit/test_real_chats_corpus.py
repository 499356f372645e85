"""The messaging-app-shaped dev corpus (tests/bench/real_chats.py): every question's evidence is
a whole message of its session, where `evidence_coverage` looks for it (the first `index` of
its text, right after "handle: "); the traits of real chats it imitates hold; a seed always
builds the same corpus."""

from __future__ import annotations

import pytest

from tests.bench import real_chats
from tests.bench.conversations import KINDS


@pytest.fixture(scope="module")
def convs() -> list[real_chats.Conversation]:
    return real_chats.corpus(2, seed=5)


def test_every_evidence_entry_is_a_whole_message_found_by_index(
    convs: list[real_chats.Conversation],
) -> None:
    for conv in convs:
        handles = set(conv.handles.values())
        assert len(handles) == 2
        assert len(conv.dates) == len(conv.titles) == len(conv.sessions)
        for q in conv.questions:
            assert q.kind in KINDS
            assert q.evidence, q.text
            assert q.relevant == sorted({s for s, _ in q.evidence}), q.text
            for session, said in q.evidence:
                text = conv.sessions[session]
                begin = text.index(said)  # as evidence_coverage finds it
                line = text.rfind("\n", 0, begin) + 1
                label = text[line:begin]
                assert label.endswith(": ") and label[:-2] in handles, (q.text, said, label)
                end = begin + len(said)
                assert end == len(text) or text[end] == "\n", (q.text, said)


def test_questions_cover_every_kind_and_facts_span_messages_and_sessions(
    convs: list[real_chats.Conversation],
) -> None:
    for conv in convs:
        assert 30 <= len(conv.questions) <= 90
        assert {q.kind for q in conv.questions} == set(KINDS)
        multi = [q for q in conv.questions if q.kind == "multi-hop"]
        assert multi and all(len(q.relevant) >= 2 for q in multi)
    # some facts are stated over two messages of one person: both are evidence
    single = [q for c in convs for q in c.questions if q.kind == "single-hop"]
    split = [q for q in single if len(q.evidence) > 1]
    assert split
    for q in split:
        assert len({s for s, _ in q.evidence}) == 1


def test_stats_look_like_real_chats(convs: list[real_chats.Conversation]) -> None:
    st = real_chats.stats(convs)
    assert 40 <= st["median_message_chars"] <= 80
    assert st["same_speaker_share"] > 0.45
    per = st["messages_per_session"]
    assert per["min"] <= 5 and 15 <= per["median"] <= 45 and per["max"] >= 80
    assert 0 < st["name_not_in_handle_share"] < 0.4  # one person of four here
    # the stated targets, on the default corpus
    st = real_chats.stats(real_chats.corpus(6, seed=23))
    assert 50 <= st["median_message_chars"] <= 70
    assert st["same_speaker_share"] > 0.5
    per = st["messages_per_session"]
    assert 1 <= per["min"] <= 3 and 20 <= per["median"] <= 35 and per["max"] >= 120
    assert 0.05 <= st["name_not_in_handle_share"] <= 0.12


def test_names_show_in_the_chat_and_hidden_handles_exist(
    convs: list[real_chats.Conversation],
) -> None:
    hidden = [(c, p) for c in convs for p, h in c.handles.items() if p.lower() not in h]
    assert hidden
    for conv, person in hidden:  # the name can be learnt from the text
        assert sum(person.lower() in s.lower() for s in conv.sessions) >= 3


def test_the_same_seed_builds_the_same_corpus(convs: list[real_chats.Conversation]) -> None:
    again = real_chats.corpus(2, seed=5)
    assert [c.sessions for c in again] == [c.sessions for c in convs]
    assert [c.dates for c in again] == [c.dates for c in convs]
    assert [c.questions for c in again] == [c.questions for c in convs]
    assert [c.sessions for c in real_chats.corpus(2, seed=6)] != [c.sessions for c in convs]
