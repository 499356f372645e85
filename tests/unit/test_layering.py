"""The library's layers run downward: storage and search never reach up into the tools or the
doors, and the features are assembled by Services.build, never imported for their side effects.
docs/architecture.md draws the layers this test holds to."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import memlake

ROOT = Path(memlake.__file__).parent
LOWER_LAYERS = ("search", "lake", "store", "graph", "embed")
UPPER_LAYERS = ("memlake.tools", "memlake.mcp")


def _imports(path: Path, top_level_only: bool = False) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: list[tuple[int, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def _is_under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_lower_layers_never_import_tools_or_doors() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for layer in LOWER_LAYERS
        for path in sorted((ROOT / layer).rglob("*.py"))
        for line, name in _imports(path)
        if any(_is_under(name, upper) for upper in UPPER_LAYERS)
    ]
    assert offenders == []


def test_the_layering_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from memlake.tools.base import ToolContext\n")
    assert (2, "memlake.tools.base") in _imports(module)


def test_no_module_imports_the_features_at_import_time() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        if path.name != "features.py"
        for line, name in _imports(path, top_level_only=True)
        if _is_under(name, "memlake.features")
    ]
    assert offenders == []


def test_importing_every_door_and_tool_leaves_the_features_unloaded() -> None:
    """memlake.features is loaded by Services.build when it runs, not by any import."""
    modules = sorted(
        "memlake." + ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in ROOT.rglob("*.py")
        if p.name not in {"__init__.py", "__main__.py", "features.py"}
    )
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('memlake.features' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False"
