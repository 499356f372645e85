"""Fixtures shared by the unit tests of the tools and of the libraries under them."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlake.lake import Lake
from memlake.store.local import LocalStore
from tests.wiring import bare_lake

from .tools.support import Caller


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    """A lake on a temporary directory with every feature's tables and no commit hooks."""
    return bare_lake(LocalStore(tmp_path))


@pytest.fixture
def call(lake: Lake) -> Caller:
    return Caller(lake)
