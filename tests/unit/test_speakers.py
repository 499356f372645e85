"""Whom a query names among chat speakers (memlake.search.query.speakers, decision 4501): by a
part of a handle, or by a name friends call someone that no handle holds."""

from __future__ import annotations

from memlake.search.index.text import terms, unique_terms
from memlake.search.query.speakers import asked_names, label_terms, named
from memlake.search.query.units import cut


def _pool(chats: list[str]) -> tuple[list, list[int], list[list[str]]]:
    units, hit_of, docs = [], [], []
    for i, chat in enumerate(chats):
        c = cut(chat)
        units += c.units
        hit_of += [i] * len(c.units)
        docs += c.counts
    return units, hit_of, docs


def _who(chats: list[str], query: str) -> set[str]:
    units, hit_of, docs = _pool(chats)
    score = named(units, hit_of, docs, query, set(unique_terms([query])))
    return {u.speaker for u, s in zip(units, score, strict=True) if s}


def test_a_handle_is_matched_by_its_letter_runs() -> None:
    assert label_terms("ines_k") == set(terms("ines"))
    assert label_terms("Jon50") == set(terms("jon"))
    assert label_terms(None) == set()
    chat = "ines_k: we got a puppy\njon50: cute\nines_k: his name is biscuit\njon50: aww"
    assert _who([chat], "What pets does Ines have?") == {"ines_k"}
    assert _who([chat], "What does Jon do?") == {"jon50"}


def test_capitalised_words_of_the_query_are_its_names_not_its_first_word() -> None:
    assert asked_names("What pets does Kwame have?") == set(terms("kwame"))
    assert asked_names("Kwame went where?") == set()


def test_a_name_no_handle_holds_is_the_one_friends_use_for_someone() -> None:
    days = [
        "ana: morning kwame!\nbluefox88: hey ana\nana: coffee?\nbluefox88: yes",
        "ana: kwame you there?\nbluefox88: yes sorry\nana: ok\nbluefox88: ok",
        "bluefox88: we adopted a puppy\nana: omg kwame thats amazing\nbluefox88: ya\nana: <3",
    ]
    assert _who(days, "What pets does Kwame have?") == {"bluefox88"}
    # said in fewer episodes than ALIAS_EPISODES: no one is named
    assert _who(days[:2], "What pets does Kwame have?") == set()


def test_a_word_both_friends_say_names_no_one() -> None:
    days = [
        "ana: paris was great\nbluefox88: paris!! jealous\nana: ya\nbluefox88: ok",
        "ana: back from paris\nbluefox88: how was paris\nana: ya\nbluefox88: ok",
        "bluefox88: paris again?\nana: paris forever\nbluefox88: ha\nana: ok",
    ]
    assert _who(days, "When did Ana visit Paris?") == {"ana"}
