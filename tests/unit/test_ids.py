from __future__ import annotations

import pytest

from memlake.errors import InvalidArgument
from memlake.ids import ID_PATTERN, TENANT_PATTERN, check_id, check_tenant, new_id


def test_ids_are_unique_and_sortable() -> None:
    ids = [new_id() for _ in range(5000)]
    assert len(set(ids)) == 5000
    assert ids == sorted(ids)
    assert all(len(i) == 26 for i in ids)


@pytest.mark.parametrize("bad", ["../x", "a/b", "", " ", "x" * 65, "a b", "é", None, 12, "a\x00"])
def test_bad_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        check_id(bad)


def test_prefix_is_stripped() -> None:
    assert check_id("episode:ABC", prefix="episode") == "ABC"


@pytest.mark.parametrize("bad", ["A", "../t", "t/x", "", "x" * 64, "acme\n"])
def test_bad_tenants_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgument):
        check_tenant(bad)


def test_a_trailing_newline_is_not_part_of_a_valid_name() -> None:
    # `$` in Python's re also matches before a final newline; the patterns must not
    assert ID_PATTERN.match("abc\n") is None and TENANT_PATTERN.match("acme\n") is None
    from memlake.mcp.apigw import tenant_for_claim

    tenant = tenant_for_claim("acme\n")  # a JWT claim becomes an S3 prefix
    assert TENANT_PATTERN.match(tenant) and tenant != "acme\n" and tenant != "acme"
