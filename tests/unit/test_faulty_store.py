"""FaultyStore: a rule fails a request before the store saw it (nothing stored) or after it did
(stored, answer lost), as often as told, on the operations and keys it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.errors import StorageError
from memlake.store.base import ObjectNotFound
from memlake.store.faults import Fault, FaultyStore
from memlake.store.local import LocalStore


def test_before_stores_nothing_and_after_stores_then_fails(tmp_path: Path) -> None:
    store = FaultyStore(
        LocalStore(tmp_path),
        [Fault("put", "t/a", when="before"), Fault("put", "t/b", when="after")],
    )
    for key in ("t/a", "t/b"):
        with pytest.raises(StorageError, match="injected"):
            store.put(key, b"x")
    with pytest.raises(ObjectNotFound):
        store.get("t/a")
    assert store.get("t/b") == b"x"
    assert store.fired == {("put", "before"): 1, ("put", "after"): 1}
    store.put("t/a", b"y")  # each rule fired its one time
    assert store.get("t/a") == b"y"


def test_a_rule_fires_as_often_as_told_on_its_operation_only(tmp_path: Path) -> None:
    store = FaultyStore(LocalStore(tmp_path), [Fault("get", "", times=2)])
    store.put("t/k", b"v")
    assert store.exists("t/k") and store.get_range("t/k", 0, 1) == b"v"
    for _ in range(2):
        with pytest.raises(StorageError):
            store.get("t/k")
    assert store.get("t/k") == b"v"
    always = FaultyStore(LocalStore(tmp_path), [Fault("*", "t/", times=-1)])
    for _ in range(3):
        with pytest.raises(StorageError):
            always.exists("t/k")
