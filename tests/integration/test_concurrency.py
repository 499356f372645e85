"""8 writers x 50 add_episode at once: every episode lands exactly once, on every store.

Each writer has its own Lake (no shared in-process lock), so mutual exclusion comes only from
the store's conditional write: create-exclusive on the local store, and If-None-Match over
HTTP on moto's ThreadedMotoServer (moto's in-process mock is not atomic, so it is not used
to prove exclusion).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

from memlake.config import Settings
from memlake.context import Principal
from memlake.lake import Lake
from memlake.lake.commit_state import RetryPolicy
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store
from memlake.tools import add_episode
from tests.wiring import bare_lake, tool_context

from .conftest import s3_client

WRITERS, CALLS = 8, 50


def hammer(make_store) -> tuple[list[str], Lake]:  # type: ignore[no-untyped-def]
    settings = Settings()
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(WRITERS)

    def writer(n: int) -> None:
        lake = bare_lake(make_store(), retry=RetryPolicy(attempts=200, max_delay=0.2))
        ctx = tool_context(Principal("race"), lake, settings)
        barrier.wait()
        for i in range(CALLS):
            try:
                out = add_episode.run(
                    ctx, add_episode.AddEpisodeInput(content=f"writer {n} call {i}")
                )
                with lock:
                    acknowledged.append(out.id)
            except BaseException as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    return acknowledged, bare_lake(make_store())


def check(acknowledged: list[str], reader: Lake) -> None:
    assert len(acknowledged) == WRITERS * CALLS
    view = reader.snapshot("race").table("episodes")
    stored = view.ids()
    assert Counter(stored) == Counter(acknowledged)  # all 400 there, none twice
    contents = Counter(view.get(i)["content"] for i in stored)
    assert len(contents) == WRITERS * CALLS and max(contents.values()) == 1


def test_local_store_writers(tmp_path: Path) -> None:
    acknowledged, reader = hammer(lambda: LocalStore(tmp_path))
    check(acknowledged, reader)


def test_moto_server_writers(moto_endpoint: str) -> None:
    s3_client(moto_endpoint).create_bucket(Bucket="race")

    def make_store() -> ObjectStore:
        return S3Store("race", client=s3_client(moto_endpoint))

    acknowledged, reader = hammer(make_store)
    check(acknowledged, reader)
