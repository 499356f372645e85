"""The local-directory store: atomic puts, create-exclusive, and keys that cannot escape."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memlake.errors import InvalidArgument
from memlake.store.base import ObjectNotFound, PreconditionFailed
from memlake.store.local import LocalStore


def test_put_get_delete_list(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("tenants/a/x.json", b"1")
    assert store.get("tenants/a/x.json") == b"1"
    assert store.exists("tenants/a/x.json")
    assert [o.key for o in store.list("tenants/a/")] == ["tenants/a/x.json"]
    store.delete("tenants/a/x.json")
    store.delete("tenants/a/x.json")  # deleting twice is fine
    with pytest.raises(ObjectNotFound):
        store.get("tenants/a/x.json")


def test_if_absent_refuses_an_existing_key_and_keeps_the_first(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("k/v", b"first", if_absent=True)
    with pytest.raises(PreconditionFailed):
        store.put("k/v", b"second", if_absent=True)
    assert store.get("k/v") == b"first"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]


def test_exactly_one_of_many_racing_creators_wins(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for trial in range(30):
        winners: list[int] = []
        barrier = threading.Barrier(16)

        def racer(
            i: int,
            key: str = f"race/{trial}",
            barrier: threading.Barrier = barrier,
            winners: list[int] = winners,
        ) -> None:
            barrier.wait()
            try:
                store.put(key, str(i).encode(), if_absent=True)
                winners.append(i)
            except PreconditionFailed:
                pass

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(16)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert len(winners) == 1
        assert store.get(f"race/{trial}") == str(winners[0]).encode()


@pytest.mark.parametrize(
    "key", ["../x", "a/../../x", "/etc/passwd", "a//b", "", "a/./b", "x/.tmp-1"]
)
def test_keys_cannot_escape_the_root(tmp_path: Path, key: str) -> None:
    store = LocalStore(tmp_path / "root")
    with pytest.raises(InvalidArgument):
        store.put(key, b"x")
