"""Fixtures of the tool tests: a bare local lake, a Caller on it, a Harness on a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.lake import Lake
from memlake.store.local import LocalStore
from tests.wiring import bare_lake

from .support import Caller, Harness


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return bare_lake(LocalStore(tmp_path))


@pytest.fixture
def call(lake: Lake) -> Caller:
    return Caller(lake)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
