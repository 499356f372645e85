"""get_pending_threads: oldest first, context filter, cursor paging."""

from __future__ import annotations

import pytest

from memlake.errors import InvalidArgument

from .support import Harness


def test_pending_threads_oldest_first_with_context_and_cursor(h: Harness) -> None:
    ids = [h.thread(1, context="a" if i % 2 else "b")["id"] for i in range(7)]
    h.call("mark_thread_status", id=ids[0], status="processing")
    seen, cursor = [], None
    while True:
        page = h.call("get_pending_threads", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [t["id"] for t in page["threads"]]
        assert all(t["processing_status"] == "pending" for t in page["threads"])
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert seen == ids[1:]
    only_a = h.call("get_pending_threads", context="a")["threads"]
    assert [t["id"] for t in only_a] == [i for n, i in enumerate(ids) if n % 2]
    first = h.call("get_pending_threads", limit=1).get("next_cursor")
    with pytest.raises(InvalidArgument, match="other filters"):
        h.call("get_pending_threads", context="a", cursor=first)
    with pytest.raises(InvalidArgument, match="cursor is not valid"):
        h.call("get_pending_threads", cursor="!!")
