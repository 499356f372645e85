"""memlake's imports form no loop and point only down the layers docs/architecture.md draws.

The graph is read from the source (ast), not from a running interpreter, so it sees every
import: at the top of a module, inside a function, and under `if TYPE_CHECKING:` (a type-only
loop is still a loop a reader must hold in mind). `from package import module` is an arrow to
that module, not to the package's __init__.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import networkx as nx

import memlake

SOURCE = Path(memlake.__file__).parent.parent

#: Top first. A module may import from its own layer or any layer below it, never above.
#: A name is a package (the prefix of its modules) or a module; the longest one that matches
#: a module is its place, so memlake.search.index sits below memlake.search.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "memlake.__main__",
        "memlake.cli",
        "memlake.commands",
        "memlake.commands_import_chats",
        "memlake.commands_integrity",
    ),
    ("memlake.mcp",),  # transports: HTTP, API Gateway, stdio, direct
    ("memlake.tools",),  # one use case per tool
    ("memlake.context", "memlake.maintenance"),  # what a call runs with; the maintenance pass
    ("memlake.services",),  # builds the store, lake and searcher; assembles the features
    ("memlake.features",),  # the features' tables, cleanups and installs
    (  # the domain beside search: layers, relationships, audit, keys, cursors, import/export
        "memlake.audit",
        "memlake.cursors",
        "memlake.erasure",
        "memlake.idempotency",
        "memlake.importers",
        "memlake.integrity",
        "memlake.layers",
        "memlake.relationships",
        "memlake.stored_rows",
        "memlake.transfer",
        "memlake.transfer_json",
    ),
    ("memlake.search",),  # the runtime: Searcher, hybrid search, indexing hooks, backfill
    ("memlake.search.query",),  # how the index is read for one search
    ("memlake.search.index",),  # what is stored: shards, layout, codes, ranged reads, caches
    ("memlake.episodes", "memlake.models", "memlake.graph", "memlake.embed"),
    ("memlake.lake",),
    ("memlake.store",),
    (  # leaves
        "memlake",
        "memlake.config",
        "memlake.config_values",
        "memlake.errors",
        "memlake.ids",
        "memlake.jsonshape",
        "memlake.observability",
        "memlake.pools",
        "memlake.timeutil",
    ),
)


def modules(root: Path) -> dict[str, Path]:
    """Every module under `root` (a folder holding packages) by dotted name."""
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(node: ast.AST, here: str, known: dict[str, Path]) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: against this module's package (a package is its own)
            parts = here.split(".")
            if known[here].name != "__init__.py":
                parts = parts[:-1]
            package = parts[: len(parts) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in known else base


def import_graph(root: Path, top: str = "memlake") -> dict[str, set[str]]:
    """module -> the modules of `top` it imports, wherever in the module the import is."""
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known if name.split(".")[0] == top}
    for name in graph:
        tree = ast.parse(known[name].read_text(), filename=str(known[name]))
        for node in ast.walk(tree):
            for target in _imported(node, name, known):
                while target and target not in known:  # an attribute: its module
                    target = target.rpartition(".")[0]
                if target and target != name and target in graph:
                    graph[name].add(target)
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (networkx's, not our own
    memlake.graph code: the check must not lean on code it checks)."""
    digraph = nx.DiGraph([(a, b) for a, targets in graph.items() for b in targets])
    components = nx.strongly_connected_components(digraph)
    return sorted(sorted(c) for c in components if len(c) > 1)


def layer_of(module: str) -> int | None:
    matches = [
        (len(name), rank)
        for rank, names in enumerate(LAYERS)
        for name in names
        if module == name or module.startswith(name + ".")
    ]
    return max(matches)[1] if matches else None


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
        for a in sorted(graph)
        for b in sorted(graph[a])
        if (la := layer_of(a)) is not None and (lb := layer_of(b)) is not None and lb < la
    ]


def test_memlake_has_no_import_loop() -> None:
    graph = import_graph(SOURCE)
    described = [
        " <-> ".join(loop) + ": " + ", ".join(f"{a}->{b}" for a in loop for b in graph[a] & {*loop})
        for loop in loops(graph)
    ]
    assert described == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in import_graph(SOURCE) if layer_of(m) is None] == []


def test_imports_point_down_the_layers() -> None:
    assert upward_arrows(import_graph(SOURCE)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_check_sees_type_only_function_local_and_relative_imports(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "memlake/__init__.py": "",
            "memlake/search/__init__.py": "from . import hybrid\n",
            "memlake/search/hybrid.py": "from .index import shard\n",
            "memlake/search/index/__init__.py": "",
            "memlake/search/index/shard.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from memlake.search.hybrid import search\n"
            ),
            "memlake/lake.py": "def f():\n    import memlake.tools.base\n",
            "memlake/tools/__init__.py": "",
            "memlake/tools/base.py": "from memlake import lake\n",
        },
    )
    graph = import_graph(root)
    assert graph["memlake.search.hybrid"] == {"memlake.search.index.shard"}
    assert graph["memlake.search.index.shard"] == {"memlake.search.hybrid"}
    assert graph["memlake.search"] == {"memlake.search.hybrid"}  # relative, in a package
    assert graph["memlake.tools.base"] == {"memlake.lake"}  # the module, not the package
    assert sorted(loops(graph)) == [
        ["memlake.lake", "memlake.tools.base"],
        ["memlake.search.hybrid", "memlake.search.index.shard"],
    ]
    lake, tools = layer_of("memlake.lake"), layer_of("memlake.tools.base")
    index, runtime = layer_of("memlake.search.index.shard"), layer_of("memlake.search.hybrid")
    assert lake is not None and tools is not None and index is not None and runtime is not None
    assert tools < lake and runtime < index  # top first
    assert upward_arrows(graph) == [
        f"memlake.lake (layer {lake}) imports memlake.tools.base (layer {tools})",
        f"memlake.search.index.shard (layer {index}) imports memlake.search.hybrid"
        f" (layer {runtime})",
    ]
