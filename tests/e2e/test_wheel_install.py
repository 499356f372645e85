"""memlake as a user installs it (issue 26): the wheel built from pyproject, installed with pip
into a fresh venv (its dependencies from the package index, nothing from this checkout on
sys.path), and `memlake stdio` driven by the mcp client's stdio transport: add an episode and
find it again. The model comes from MEMLAKE_MODEL_DIR, as on a machine that was given the files
(memlake.embed.model_files; the download path is tests/unit/test_model_files.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memlake.embed import model_files
from memlake.mcp.browser import FILES

from .mcp_helpers import call, run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def sh(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_wheel_installs_and_serves_stdio_outside_the_checkout(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy: building in the checkout would leave build/ behind
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "shared", src / "shared", ignore=ignore)
    wheels = tmp_path / "dist"
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, src, cwd=tmp_path)
    (wheel,) = wheels.glob("memlake-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "memlake/py.typed" in names and "memlake/search/query/evidence.py" in names
    assert {f"memlake/mcp/ui/{f}" for f in FILES} <= set(names)  # the memory browser's page
    assert not [n for n in names if n.startswith(("tests/", "shared/", "functions/"))]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "memlake = memlake.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()

    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    sh(base, "-m", "venv", venv, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    sh(venv / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp_path, env=env)
    where = sh(
        venv / "bin" / "python",
        "-c",
        "import memlake; print(memlake.__file__)",
        cwd=tmp_path,
        env=env,
    )
    assert where.startswith(str(venv)), where  # the installed copy, not this checkout

    model = model_files.installed_dir()
    assert model is not None
    data = tmp_path / "lake"
    server = StdioServerParameters(
        command=str(venv / "bin" / "memlake"),
        args=["stdio", "--data", str(data)],
        env={**env, "MEMLAKE_MODEL_DIR": str(model), "OMP_NUM_THREADS": "1"},
        cwd=str(tmp_path),
    )

    async def scenario() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            note = "The herons came back to the river on the first warm day of March."
            added = await call(session, "add_episode", {"content": note})
            assert not added["is_error"], added
            found = await call(session, "search_episodes", {"query": "when did the herons return"})
            assert [e["id"] for e in found["episodes"]] == [added["id"]]

    run(scenario())
