"""ObjectStore.list_prefixes: the folders directly under a prefix, the same on the local store
and on S3 (moto), paged past S3's 1000 common prefixes a page, and never outside the store's
own prefix: maintenance finds its tenants with it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from memlake.errors import InvalidArgument
from memlake.maintenance import discover_tenants
from memlake.store.base import ObjectStore
from memlake.store.local import LocalStore
from memlake.store.s3 import S3Store

from .conftest import s3_client


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        c = s3_client()
        c.create_bucket(Bucket="lake-bucket")
        yield c


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "local":
        yield LocalStore(tmp_path / "lake")
    else:
        with mock_aws():
            c = s3_client()
            c.create_bucket(Bucket="lake-bucket")
            yield S3Store("lake-bucket", prefix="lake", client=c)


def test_the_folders_directly_under_a_prefix(store: ObjectStore) -> None:
    for key in ("tenants/b/manifest/1", "tenants/a/x", "tenants/a/deep/y", "other/c/z", "top"):
        store.put(key, b"1")
    assert store.list_prefixes("tenants/") == ["a", "b"]
    assert store.list_prefixes("") == ["other", "tenants"]
    assert store.list_prefixes("tenants/a/") == ["deep"]
    assert store.list_prefixes("missing/") == []
    assert store.list_prefixes("top/") == []  # an object, not a folder
    assert discover_tenants(store) == ["a", "b"]


def test_a_local_folder_without_objects_is_no_prefix(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("tenants/real/x", b"1")
    (tmp_path / "tenants" / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "tenants" / "crashed").mkdir()
    (tmp_path / "tenants" / "crashed" / ".tmp-abc").write_bytes(b"half")  # a writer's leftover
    assert store.list_prefixes("tenants/") == ["real"]


def test_a_local_prefix_cannot_leave_the_store(tmp_path: Path) -> None:
    (tmp_path / "outside" / "secret").mkdir(parents=True)
    (tmp_path / "outside" / "secret" / "x").write_bytes(b"1")
    store = LocalStore(tmp_path / "lake")
    store.put("tenants/a/x", b"1")
    for bad in ("../", "tenants/../../", "/etc/", "tenants/./"):
        with pytest.raises(InvalidArgument):
            store.list_prefixes(bad)


def test_s3_lists_only_under_the_store_prefix(client: Any) -> None:
    # GIVEN a bucket shared with other keys: beside the store's prefix, and a look-alike prefix
    for key in ("lake/tenants/a/x", "lakehouse/tenants/b/x", "tenants/c/x", "lake/tenantsX/d/x"):
        client.put_object(Bucket="lake-bucket", Key=key, Body=b"1")
    client.put_object(Bucket="lake-bucket", Key="lake/tenants/../e/x", Body=b"1")
    store = S3Store("lake-bucket", prefix="lake", client=client)
    # THEN only the store's own tenants folder counts; a ".." is a literal name in S3, and
    # discover_tenants drops a name that is not a valid tenant
    assert store.list_prefixes("tenants/") == ["..", "a"]
    assert discover_tenants(store) == ["a"]
    assert S3Store("lake-bucket", client=client).list_prefixes("tenants/") == ["c"]


@pytest.mark.slow
def test_s3_pages_past_a_thousand_prefixes(client: Any) -> None:
    # GIVEN more tenant folders than one ListObjectsV2 page holds (1000)
    names = [f"t{i:04d}" for i in range(1203)]
    for name in names:
        client.put_object(Bucket="lake-bucket", Key=f"p/tenants/{name}/manifest/1", Body=b"1")
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.s3.ListObjectsV2", lambda params, **_: calls.append(params)
    )
    # WHEN the store lists them
    found = S3Store("lake-bucket", prefix="p", client=client).list_prefixes("tenants/")
    # THEN every one, each once, by delimiter pages (not one request per object)
    assert found == names
    assert len(calls) == 2 and all(c.get("Delimiter") == "/" for c in calls)
