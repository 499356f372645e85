"""Signed page cursors (memlake.cursors): tampering, tenants, keys, and positions that even a
correctly signed cursor cannot smuggle into a pyarrow comparison."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from memlake.config import Settings
from memlake.cursors import ID, INT64, KEY_OBJECT, TEXT, Pager, cursor_key, fingerprint
from memlake.errors import ConfigurationError, InvalidArgument
from memlake.store.local import LocalStore
from tests.wiring import bare_lake

from .tools.support import Harness

KEY = b"k" * 32


def fixed(key: bytes | None = KEY) -> Any:
    return lambda create: key


def pager(tenant: str = "t", listing: str = "l", *filters: Any, key: bytes = KEY) -> Pager:
    return Pager(fixed(key), tenant, fingerprint(listing, *filters), (INT64, ID))


def b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def parts(cursor: str) -> list[Any]:
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))  # type: ignore[no-any-return]


def resign(cursor: str, position: Any, key: bytes, tenant: str) -> str:
    """A cursor with another position and a valid MAC: what only the key holder can make."""
    fp = parts(cursor)[1]
    msg = json.dumps([tenant, fp, position], ensure_ascii=False, separators=(",", ":"))
    mac = hmac.new(key, msg.encode(), hashlib.sha256).digest()[:16]
    return b64([position, fp, base64.urlsafe_b64encode(mac).decode().rstrip("=")])


def test_round_trip_and_every_edit_is_refused() -> None:
    p = pager()
    cursor = p.encode([1_700_000_000_000_000, "01ABC"])
    assert p.decode(cursor) == [1_700_000_000_000_000, "01ABC"]
    pos, fp, mac = parts(cursor)
    edits = [
        b64([[1_700_000_000_000_001, "01ABC"], fp, mac]),  # another position
        b64([pos, fingerprint("l", "x"), mac]),  # another fingerprint
        b64([pos, fp, mac[:-1] + ("A" if mac[-1] != "A" else "B")]),  # another MAC
        b64([pos, fp]),
        b64([pos, fp, mac, "extra"]),
        b64([pos, fp, 5]),
        b64({"p": pos}),
        "!!!",
        "[" * 1500,
        base64.urlsafe_b64encode(b"[" * 1500).decode(),
    ]
    for bad in edits:
        with pytest.raises(InvalidArgument, match="cursor is not valid") as err:
            p.decode(bad)
        assert err.value.hint
    with pytest.raises(InvalidArgument, match="not valid"):
        pager("other-tenant").decode(cursor)
    with pytest.raises(InvalidArgument, match="not valid"):
        pager(key=b"x" * 32).decode(cursor)
    with pytest.raises(InvalidArgument, match="other filters"):
        pager("t", "l", "another filter").decode(cursor)
    with pytest.raises(InvalidArgument, match="another listing"):
        pager("t", "other listing").decode(cursor)
    no_key = Pager(fixed(None), "t", fp, (INT64, ID))
    with pytest.raises(InvalidArgument, match="not valid"):
        no_key.decode(cursor)


@pytest.mark.parametrize(
    "position",
    [["a", "01ABC"], [1.0, "01ABC"], [True, "01ABC"], [2**63, "01ABC"], [None, "01ABC"],
     [1, 2], [1, "bad id!"], [1, "01ABC\n"], [1, ["01ABC"]], [1], [1, "01ABC", 3], "x", {}],
)  # fmt: skip
def test_a_signed_cursor_with_wrong_position_types_is_refused(position: Any) -> None:
    p = pager()
    forged = resign(p.encode([1, "01ABC"]), position, KEY, "t")
    with pytest.raises(InvalidArgument, match="not valid"):
        p.decode(forged)


def test_position_kinds() -> None:
    assert INT64(0) and INT64(-(2**63)) and not INT64(2**63) and not INT64(True)
    assert TEXT("é" * 200) and not TEXT("\ud800") and not TEXT(1) and not TEXT("x" * 1001)
    assert ID("01ABC") and ID("a_b-c") and not ID("a/b") and not ID("a\n") and not ID("")


#: listing tool -> (args giving three rows for tenant t, a wrong-typed position)
LISTINGS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "list_episodes": ({"context": "c"}, ["x", 1]),
    "find_episodes": ({"context": "c", "platform": "p"}, [1.5, "01ABC"]),
    "get_pending_threads": ({"context": "c"}, [{"a": 1}, "01ABC"]),
    "find_concepts": ({"kind": "k"}, [5, "01ABC"]),
    "get_audit_log": ({"action": "add_relationship"}, [7]),
}


def seed(h: Harness) -> None:
    eps = [h.episode(f"## 09:00 e{i}", context="c", platform="p") for i in range(3)]
    for i in range(3):
        h.thread(context="c")
        h.concept(f"n{i}", kind="k")
    for other in eps[1:]:
        for rel_type in ("related_to", "contradicts"):
            h.call(
                "add_episode_relationship",
                from_episode_id=eps[0],
                to_episode_id=other,
                relationship_type=rel_type,
            )


@pytest.mark.parametrize("tool", sorted(LISTINGS))
def test_signed_but_malformed_cursors_never_reach_pyarrow(tmp_path: Path, tool: str) -> None:
    h = Harness(tmp_path)
    seed(h)
    args, wrong = LISTINGS[tool]
    cursor = h.call(tool, **args, limit=2).get("next_cursor")
    assert cursor and h.call(tool, **args, limit=2, cursor=cursor)["count"] >= 1
    key = cursor_key(h.lake.store)
    assert key is not None
    for position in (wrong, [], "x", None, [1, 2, 3]):
        with pytest.raises(InvalidArgument, match="cursor is not valid"):
            h.call(tool, **args, limit=2, cursor=resign(cursor, position, key, "t"))
    # the same cursor re-signed for another tenant does not work for this one
    other = resign(cursor, parts(cursor)[0], key, "u")
    with pytest.raises(InvalidArgument, match="cursor is not valid"):
        h.call(tool, **args, limit=2, cursor=other)


def test_the_stored_key_is_made_once_and_shared_by_every_process(tmp_path: Path) -> None:
    first, second = LocalStore(tmp_path), LocalStore(tmp_path)
    assert cursor_key(first, create=False) is None
    assert not (tmp_path / KEY_OBJECT).exists()  # checking a cursor never writes
    key = cursor_key(first)
    assert key is not None and (tmp_path / KEY_OBJECT).exists()
    assert cursor_key(second) == key == cursor_key(LocalStore(tmp_path), create=False)
    configured = cursor_key(LocalStore(tmp_path / "other"), "c" * 40)
    assert configured not in (None, key)
    assert not (tmp_path / "other" / KEY_OBJECT).exists()  # a configured key is not stored
    # two servers on one lake directory accept each other's cursors
    a, b = Harness(tmp_path), Harness(tmp_path, lake=bare_lake(LocalStore(tmp_path)))
    for i in range(3):
        a.concept(f"n{i}")
    cursor = a.call("find_concepts", limit=2).get("next_cursor")
    assert [c["name"] for c in b.call("find_concepts", limit=2, cursor=cursor)["concepts"]] == [
        "n2"
    ]


def test_cursor_key_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLAKE_CURSOR_KEY", "short")
    with pytest.raises(ConfigurationError, match="MEMLAKE_CURSOR_KEY"):
        Settings.from_env()
    monkeypatch.setenv("MEMLAKE_CURSOR_KEY", "s3cr3t" * 8)
    cfg = Settings.from_env()
    assert cfg.cursor_key == "s3cr3t" * 8 and "s3cr3t" not in repr(cfg)


def test_long_non_ascii_names_still_page(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    names = ["\U0001f600" * 200, "\U0001f600" * 199 + "a", "é" * 200]
    for name in names:
        h.concept(name)
    seen, cursor = [], None
    for _ in range(5):
        page = h.call("find_concepts", limit=1, cursor=cursor)
        seen += [c["name"] for c in page["concepts"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(names)


def test_a_key_being_created_elsewhere_is_waited_for(tmp_path: Path) -> None:
    # S3 answers 409 (PreconditionFailed here) while another process's put of the key is in
    # flight, and that key is not readable yet: read again rather than fail the call
    from memlake.store.base import ObjectNotFound, PreconditionFailed

    class Racing(LocalStore):
        gets = 0

        def get(self, key: str) -> bytes:
            self.gets += 1
            if self.gets <= 2:
                raise ObjectNotFound(key)
            return super().get(key)

        def put(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
            if key == KEY_OBJECT and self.gets <= 2:
                LocalStore(self.root).put(key, b"theirs", if_absent=True)
                raise PreconditionFailed(key)
            super().put(key, data, if_absent=if_absent)

    store = Racing(tmp_path)
    assert cursor_key(store) == hashlib.sha256(b"memlake-cursor:theirs").digest()
