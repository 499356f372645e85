"""Command line: `memlake serve | compact | gc`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path

from memlake.config import Settings
from memlake.errors import MemlakeError


def _settings(args: argparse.Namespace) -> Settings:
    cfg = Settings.from_env()
    if getattr(args, "data", None):
        cfg = replace(cfg, data_dir=Path(args.data), store="local")
    return cfg


def _cmd_serve(args: argparse.Namespace) -> int:
    from memlake.server import serve

    serve(_settings(args), host=args.host, port=args.port)
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    from memlake.lake.compaction import compact
    from memlake.services import Services

    services = Services.build(_settings(args))
    report = compact(services.lake, args.tenant, min_segments=args.min_segments)
    print(report)
    return 0


def _cmd_gc(args: argparse.Namespace) -> int:
    from memlake.lake.gc import collect_garbage
    from memlake.services import Services

    services = Services.build(_settings(args))
    print(collect_garbage(services.lake, args.tenant, grace_seconds=args.grace_seconds))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlake", description="Episodic memory over MCP")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve MCP over HTTP at /mcp on a local lake")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--data", help="lake directory (default ./memlake-data)")
    serve.set_defaults(func=_cmd_serve)

    comp = sub.add_parser("compact", help="merge small segments of a tenant")
    comp.add_argument("--tenant", default="default")
    comp.add_argument("--data")
    comp.add_argument("--min-segments", type=int, default=2)
    comp.set_defaults(func=_cmd_compact)

    gc = sub.add_parser("gc", help="remove objects no manifest references")
    gc.add_argument("--tenant", default="default")
    gc.add_argument("--data")
    gc.add_argument("--grace-seconds", type=float, default=900)
    gc.set_defaults(func=_cmd_gc)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    logging.basicConfig(
        level=os.environ.get("MEMLAKE_LOG_LEVEL", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MemlakeError as e:
        print(f"memlake: {e.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
