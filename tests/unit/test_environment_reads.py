"""config.py reads every environment variable memlake uses: no other module of the library or
of the Lambda functions touches os.environ / os.getenv, so one file lists every knob.

The one exception, by name: the CLI *writes* OMP_NUM_THREADS and OPENBLAS_NUM_THREADS
(setdefault) before a command first imports numpy, whose thread pools read them at import;
that is process set-up for a library, not a memlake setting, and reading it through Settings
would come too late to matter."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*(ROOT / "shared" / "memlake").rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
CONFIG = ROOT / "shared" / "memlake" / "config.py"
#: (file, the call) that may touch the environment outside config.py
ALLOWED = {
    ("shared/memlake/cli.py", "os.environ.setdefault('OMP_NUM_THREADS', '1')"),
    ("shared/memlake/cli.py", "os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')"),
    # before pyarrow loads, so not through memlake.config (decision 4703)
    ("shared/memlake/__init__.py", "os.environ.setdefault('ARROW_DEFAULT_MEMORY_POOL', 'system')"),
}
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(tree: ast.AST) -> list[ast.AST]:
    """Each expression that reaches the process environment: os.environ..., os.getenv(...),
    or a name imported from os that does."""
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "os"
        for alias in node.names
        if alias.name in ENV_NAMES
    }
    return [
        node
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr in ENV_NAMES)
        or (isinstance(node, ast.Name) and node.id in imported)
    ]


def enclosing_call(tree: ast.AST, use: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(n is use for n in ast.walk(node.func)):
            return ast.unparse(node)
    return ast.unparse(use)


def test_only_config_reads_the_environment() -> None:
    offenders = []
    for path in SOURCES:
        if path == CONFIG:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(ROOT).as_posix()
        for use in environment_uses(tree):
            call = enclosing_call(tree, use)
            if (rel, call) not in ALLOWED:
                offenders.append(f"{rel}:{getattr(use, 'lineno', '?')}: {call}")
    assert offenders == [], "read it through memlake.config instead:\n" + "\n".join(offenders)


def test_the_check_sees_every_way_of_reading() -> None:
    code = (
        "import os\nfrom os import getenv as g, environ\n"
        "a = os.environ['X']\nb = os.getenv('Y')\nc = g('Z')\nd = environ.get('W')\n"
    )
    assert len(environment_uses(ast.parse(code))) == 4
    assert environment_uses(ast.parse("import os\nos.path.join('a')\n")) == []
