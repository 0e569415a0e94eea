"""`sssp` - batched shortest paths on GPUs.

Subcommands: ingest, generate, solve, study, bench, verify.  Each lives in its own
``workflows.cmd_*`` module exposing ``add_parser(subparsers)``.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from rich.console import Console

SUBCOMMANDS = ("ingest", "generate", "solve", "study", "bench", "verify")

err_console = Console(stderr=True)


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("gpu-sssp")
    except PackageNotFoundError:
        ver = "unknown"
    parser = argparse.ArgumentParser(
        prog="sssp",
        description="Batched single-source shortest paths on GPUs (CUDA kernels, Dask, Arrow/Parquet).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {ver}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        mod = importlib.import_module(f"gpu_sssp.workflows.cmd_{name}")
        mod.add_parser(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    # our own loggers only: Dask's loggers keep their own configuration, quieted
    # unless -vv asks for everything
    for name in ("pipeline", "kernels", "workflows"):
        lg = logging.getLogger(name)
        lg.setLevel(level)
        lg.addHandler(handler)
    if args.verbose < 2:
        for name in ("distributed", "dask_cuda", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)
    from gpu_sssp.kernels.result import NegativeCycleError

    try:
        return int(args.func(args) or 0)
    except NegativeCycleError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 3
    except (ValueError, TypeError, FileNotFoundError, MemoryError) as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
