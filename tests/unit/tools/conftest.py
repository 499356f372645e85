"""Fixtures of the tool tests: a Harness on a directory (the bare local `lake` and the `call`
Caller on it come from tests/unit/conftest.py, shared with the relationships library tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import Harness


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
