"""Fixtures shared by the unit tests of the tools and of the libraries under them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from memlake.config import kernel_settings
from memlake.lake import Lake
from memlake.search.index import kernels
from memlake.search.index.kernels import numpy_twins
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


@pytest.fixture(scope="module")
def compiled() -> Iterator[ModuleType]:
    """numba's kernels, from the default kernel cache (compiled into it if it lacks them), for
    the best CPU level this host runs."""
    pytest.importorskip("numba")
    kernels.reset()
    module = kernels.load(replace(kernel_settings(), mode="numba"))
    assert module is not numpy_twins, kernels.report()
    yield module
    kernels.reset()
