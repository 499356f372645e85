"""Vocab: a shard's sorted terms looked up in place by binary search give the ids a dict of every
term gave, for any text (UTF-8's byte order is str's order); a damaged, unsorted vocabulary can
miss a term but never name another's id."""

from __future__ import annotations

import random

import numpy as np
import pytest

from memlake.search.index.shard import _blob
from memlake.search.index.vocab import Vocab

WORDS = ["a", "ab", "abc", "b", "zz", "é", "ée", "ü", "雪", "雪山", "😀", "z\u0301", "0", "9x"]


def _vocab(terms: list[str]) -> Vocab:
    return Vocab(_blob(terms))


@pytest.mark.parametrize("seed", range(5))
def test_every_term_is_found_where_a_dict_finds_it(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "abcxyzéü雪😀0"
    terms = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(500)})
    vocab = _vocab(terms)
    want = {t: i for i, t in enumerate(terms)}
    assert len(vocab) == len(terms) and vocab.terms == terms
    for t in terms:
        assert vocab.index(t) == want[t]
    for _ in range(300):
        probe = "".join(rng.choices(alphabet + "q", k=rng.randint(1, 7)))
        assert vocab.index(probe) == want.get(probe, -1)


def test_unicode_terms_in_str_order() -> None:
    terms = sorted(WORDS)
    vocab = _vocab(terms)
    assert [vocab.index(t) for t in WORDS] == [terms.index(t) for t in WORDS]
    assert vocab.index("") == -1 and vocab.index("zzz") == -1 and vocab.index("\x00") == -1


def test_an_empty_vocabulary() -> None:
    vocab = Vocab(np.zeros(0, np.uint8))
    assert len(vocab) == 0 and vocab.terms == [] and vocab.index("a") == -1


def test_an_unsorted_vocabulary_never_names_the_wrong_term() -> None:
    terms = ["m", "b", "z", "a", "q"]
    vocab = _vocab(terms)
    for t in [*terms, "c", "zz"]:
        got = vocab.index(t)
        assert got == -1 or terms[got] == t
