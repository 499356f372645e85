"""Command line: `memlake serve | stdio | compact | gc | maintain | export | import |
import-chats | reembed | model | warm-kernels`: the parser and the doors (serve, stdio); the
other commands are memlake.commands (import-chats: memlake.commands_import_chats)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memlake import commands, commands_import_chats, commands_integrity
from memlake.config import Settings
from memlake.errors import MemlakeError, NotFound

if TYPE_CHECKING:
    pass


def _cmd_serve(args: argparse.Namespace) -> int:
    from memlake.mcp.server import serve

    serve(commands.settings_for(args, create=True), host=args.host, port=args.port)
    return 0


def _cmd_stdio(args: argparse.Namespace) -> int:
    from memlake.mcp.stdio import run_stdio

    return run_stdio(commands.settings_for(args, create=True), tenant=args.tenant)


_TOOLSETS_HELP = (
    "tools to offer, comma-separated: episodes, layers, graph, all"
    " (default: MEMLAKE_TOOLSETS, else all)"
)
_LAKE_HELP = "local lake directory (default: MEMLAKE_* settings, e.g. S3)"


def _command(
    sub: Any, name: str, func: Callable[[argparse.Namespace], int], summary: str, **tenant: Any
) -> argparse.ArgumentParser:
    """A subcommand with, unless tenant=None, a --tenant option (`tenant`: its settings)."""
    cmd: argparse.ArgumentParser = sub.add_parser(name, help=summary)
    cmd.set_defaults(func=func)
    if tenant.get("tenant", "") is not None:
        cmd.add_argument("--tenant", **{k: v for k, v in tenant.items() if k != "tenant"})
    return cmd


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlake", description="Episodic memory over MCP")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = _command(
        sub, "serve", _cmd_serve, "serve MCP over HTTP at /mcp on a local lake", tenant=None
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--data", help="lake directory (default ./memlake-data)")
    serve.add_argument("--toolsets", help=_TOOLSETS_HELP)

    stdio = _command(
        sub,
        "stdio",
        _cmd_stdio,
        "speak MCP over stdin/stdout (Claude Desktop, Claude Code, Cursor)",
        default="default",
        help="whose memory (default: default)",
    )
    stdio.add_argument(
        "--data", help="lake directory, best absolute (default ./memlake-data, or S3 by MEMLAKE_*)"
    )
    stdio.add_argument("--toolsets", help=_TOOLSETS_HELP)

    comp = _command(
        sub, "compact", commands.run_compact, "merge small segments of a tenant", default="default"
    )
    comp.add_argument("--data")
    comp.add_argument("--min-segments", type=int, help="shortest run merged (default 2)")
    comp.add_argument("--json", action="store_true", help="print the report as JSON")

    gc = _command(
        sub, "gc", commands.run_gc, "remove objects no manifest references", default="default"
    )
    gc.add_argument("--data")
    gc.add_argument("--grace-seconds", type=float, help="keep younger objects (default 900)")
    gc.add_argument("--json", action="store_true", help="print the report as JSON")

    maint = _command(
        sub,
        "maintain",
        commands.run_maintain,
        "what the scheduled maintenance function does: embed pending passages, compact, gc",
        help="only this tenant (default: every tenant in the lake)",
    )
    maint.add_argument("--data", help=_LAKE_HELP)
    maint.add_argument("--json", action="store_true", help="print the report as JSON")

    check = _command(
        sub,
        "check",
        commands_integrity.run_check,
        "find damaged objects: manifests, segments, index shards (exit 1 when damaged)",
        help="only this tenant (default: every tenant in the lake)",
    )
    check.add_argument("--data", help=_LAKE_HELP)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument(
        "--erased",
        action="store_true",
        help="instead: confirm no object holds an erased episode or thread (exit 1 if one does)",
    )

    repair = _command(
        sub,
        "repair",
        commands_integrity.run_repair,
        "write a new manifest around damaged objects (a dry run unless --apply)",
        required=True,
    )
    repair.add_argument("--data", help=_LAKE_HELP)
    repair.add_argument("--apply", action="store_true", help="commit the repair")
    repair.add_argument("--json", action="store_true", help="print the report as JSON")

    exp = _command(
        sub,
        "export",
        commands.run_export,
        "write a tenant's tables as JSON Lines (stdout)",
        required=True,
    )
    exp.add_argument("--data", help=_LAKE_HELP)
    exp.add_argument("--output", "-o", help="write to this file instead of stdout")
    exp.add_argument(
        "--no-vectors",
        action="store_true",
        help="leave out search vectors (most of the size); import embeds those episodes again",
    )

    imp = _command(
        sub,
        "import",
        commands.run_import,
        "load a `memlake export` file into a tenant",
        required=True,
    )
    imp.add_argument("file", help="JSON Lines file, or - for stdin")
    imp.add_argument("--data", help=_LAKE_HELP)
    imp.add_argument("--batch-size", type=int, default=500, help="rows per commit")

    chats = _command(
        sub,
        "import-chats",
        commands_import_chats.run_import_chats,
        "import ChatGPT / Claude.ai exports, Claude Code sessions or memory.json as threads"
        " and episodes (again: only what is new)",
        default="default",
        help="whose memory (default: default)",
    )
    chats.add_argument("path", help="an export's zip or conversations.json, a folder, a .jsonl")
    chats.add_argument("--data", help=_LAKE_HELP)
    chats.add_argument("--context", help="the project every imported conversation belongs to")
    chats.add_argument("--dry-run", action="store_true", help="count what would be imported")
    chats.add_argument("--json", action="store_true", help="print the summary as JSON")

    reembed = _command(
        sub,
        "reembed",
        commands.run_reembed,
        "copy a tenant into a new local lake, embedded by the model the settings name",
        required=True,
    )
    reembed.add_argument("--data", help=_LAKE_HELP)
    reembed.add_argument("--to", required=True, help="the new lake directory")
    reembed.add_argument("--batch-size", type=int, default=500, help="rows per commit")

    model = _command(
        sub,
        "model",
        commands.run_model,
        "where the embedding model comes from; fetch the local one from the Hugging Face hub",
        tenant=None,
    )
    model.add_argument("action", choices=["where", "fetch"])
    model.add_argument("--cache", help="model cache folder (default MEMLAKE_MODEL_CACHE)")

    kernels = _command(
        sub,
        "warm-kernels",
        commands.run_warm_kernels,
        "compile the search's numba kernels into their cache, so that no search compiles",
        tenant=None,
    )
    kernels.add_argument(
        "--cache-dir", help="the kernel cache (default MEMLAKE_KERNEL_CACHE_DIR, else ~/.cache)"
    )
    kernels.add_argument(
        "--level",
        choices=["x86-64-v3", "generic"],
        help="compile for this CPU level alone (default: each of this architecture's)",
    )
    kernels.add_argument("--json", action="store_true", help="print the report indented")
    return parser


def main(argv: list[str] | None = None) -> int:
    # numpy's thread pools read these when it is first imported (a command imports it later):
    # one thread each, unless the caller chose (a write, not a setting: config.py reads)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    try:
        logging.basicConfig(
            level=Settings.from_env().log_level,
            format="%(asctime)s %(levelname)s %(name)s %(message)s",
        )
        return int(args.func(args))
    except NotFound as e:  # e.g. export of a tenant the lake has no data for
        print(f"memlake: {e.message}", file=sys.stderr)
        return 1
    except MemlakeError as e:  # a bad setting, a port in use, an unusable data directory
        print(f"memlake: {e.message}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. --output in a directory that does not exist
        where = f": {e.filename}" if e.filename else ""
        print(f"memlake: {e.strerror or e}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
