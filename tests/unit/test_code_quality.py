"""The house rules that tools can check: ruff's lint rules everywhere, mypy on the library."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    if shutil.which("ruff", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    proc = _run(str(Path(sys.executable).parent / "ruff"), "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_passes_on_the_library() -> None:
    proc = _run(sys.executable, "-m", "mypy", "shared/memlake")
    assert proc.returncode == 0, proc.stdout + proc.stderr
