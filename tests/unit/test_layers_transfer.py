"""Memory layers survive `memlake export` / `import`: every row id passes the import's id check
and the layers read the same in the new lake."""

from __future__ import annotations

import io
from pathlib import Path

from memlake.store.local import LocalStore
from memlake.transfer import export_tenant, import_tenant
from tests.wiring import bare_lake

from .tools.support import Harness


def test_export_import_round_trip(tmp_path: Path) -> None:
    src = Harness(tmp_path / "src")
    tid = src.thread(3, title="chat", context="p")["id"]
    src.call("mark_thread_status", id=tid, status="processing")
    parent = src.concept("Storage")
    child = src.concept("Parquet", parent_id=parent)
    eid = src.episode(source_title="t", source_thread_id=tid, concept_ids=[child, parent])
    src.call("upsert_episode", id=eid, events="## revised")
    src.call("mark_thread_status", id=tid, status="completed")

    buf = io.BytesIO()
    counts = export_tenant(src.lake, "t", buf, progress=False)
    assert counts["concept_links"] == 2 and counts["thread_messages"] == 3
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(buf.getvalue())
    dst = Harness(tmp_path / "dst", lake=bare_lake(LocalStore(tmp_path / "dst")))
    import_tenant(dst.lake, "t", dump, progress=False)

    for tool, args in [
        ("get_thread", {"id": tid}),
        ("get_episode", {"id": eid, "include_entities": True}),
        ("get_concept", {"id": parent}),
        ("get_concept", {"id": child}),
        ("find_concepts", {}),
        ("find_episodes", {"thread_id": tid}),
    ]:
        assert dst.call(tool, **args) == src.call(tool, **args), tool
    hist = dst.call("get_episode_history", id=eid)
    assert [r["episode"]["revision"] for r in hist["revisions"]] == [2]
    assert hist["older_collected"] is True  # the earlier revision lives in the source lake
