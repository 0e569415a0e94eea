"""`sssp generate rmat|grid|random -o OUT.parquet` - synthetic graphs as Parquet edge lists."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from rich.console import Console

from gpu_sssp.workflows.common import count_value, decimal_int, print_table

HELP = "generate an R-MAT, grid or Erdos-Renyi graph straight to a Parquet edge list"


def _bound(text: str):
    """One bound of ``--weights``: an int where the text is one (exact, any size), else
    a float; a float that is not finite (``nan``, ``inf``, ``1e400``) is refused here,
    as written (it was "expected LO:HI", or named ``inf`` for ``1e400``).  ``-0.0`` is
    0.0 (the metadata and the label said ``uniform:-0.0:1``)."""
    if not text.isascii():  # int() took the Arabic-Indic "\u0669" as 9
        raise ValueError(text)
    try:
        return int(text)
    except ValueError:
        pass
    v = float(text)  # (ValueError: not a number)
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r}: the bounds must be finite numbers")
    return v + 0.0


def _range(text: str):
    try:
        lo, hi = text.split(":")
        lo, hi = _bound(lo), _bound(hi)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {str(exc).split(': ', 1)[1]} (LO:HI, e.g. 1:100)") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LO:HI, e.g. 1:100") from None
    if hi < lo:
        raise argparse.ArgumentTypeError(f"{text!r}: HI < LO")
    return lo, hi


def _finite(text: str) -> float:
    """A float option that must be a finite number: NaN passes every ``<``/``>=`` check
    later on (false both ways), so it is refused here, with inf."""
    try:
        if not text.isascii():  # float() took the Arabic-Indic "\u0669" as 9
            raise ValueError(text)
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number")
    return v


def _common(p, undirected_default=False, undirected=True):
    p.add_argument("-o", "--output", required=True, help="output Parquet file")
    p.add_argument("--seed", type=decimal_int, default=0, help="random seed, a whole number >= 0 (default 0)")
    p.add_argument("--weights", type=_range, default=(1, 100), metavar="LO:HI",
                   help="uniform weights in [LO, HI] (whole-number bounds and weights for the integer types, "
                   "reals for float types; default 1:100)")
    p.add_argument("--weight-type", choices=("int32", "int64", "float32", "float64"), default="int64")
    p.add_argument("--negative-fraction", type=_finite, default=0.0, metavar="F",
                   help="make about F of the arcs negative by vertex potentials, with no negative cycle; "
                   "directed graphs only (a negative undirected edge is a negative cycle)")
    if undirected:
        p.add_argument("--undirected", action="store_true", default=undirected_default,
                       help="emit both arcs of every edge with the same weight (not with --negative-fraction)")
    p.add_argument("--max-vertices", type=count_value, metavar="N",
                   help="refuse graphs of more vertices (default: setting sssp.ingest.max-vertices, 2**31 - 1, "
                   "as for `sssp ingest`)")
    p.add_argument("--max-arcs", type=count_value, metavar="N",
                   help="refuse graphs of more arcs (default: setting sssp.ingest.max-arcs, none; a graph "
                   "whose arrays cannot fit in the memory available is refused anyway)")
    p.add_argument("--max-isolated-vertices", type=count_value, metavar="N",
                   help="refuse graphs with more than N vertices beyond twice the arcs (vertices no arc can "
                   "touch; default: setting sssp.ingest.max-isolated-vertices, 16,777,216, which loading the "
                   "file applies too)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary table")


def add_parser(subparsers):
    p = subparsers.add_parser("generate", help=HELP, description=HELP + ". Ids are 0-based.")
    fam = p.add_subparsers(dest="family", metavar="FAMILY")
    fam.required = True
    r = fam.add_parser("rmat", help="R-MAT (GTGraph defaults a=0.45 b=0.15 c=0.15 d=0.25)")
    r.add_argument("--scale", type=decimal_int, required=True, help="2**SCALE vertices")
    r.add_argument("--edge-factor", type=decimal_int, default=16, help="edges per vertex (default 16)")
    r.add_argument("-a", type=_finite, default=0.45)
    r.add_argument("-b", type=_finite, default=0.15)
    r.add_argument("-c", type=_finite, default=0.15)
    r.add_argument("-d", type=_finite, default=None, help="default 1 - a - b - c (0.25)")
    _common(r)
    g = fam.add_parser("grid", help="2-D rows x cols 4-neighbour grid, both directions (road-like)")
    g.add_argument("--rows", type=decimal_int, required=True)
    g.add_argument("--cols", type=decimal_int, required=True)
    g.add_argument("--asymmetric", action="store_true",
                   help="draw the two directions' weights independently, a directed grid (default: one "
                   "weight per edge, undirected); needed by --negative-fraction")
    _common(g, undirected=False)
    e = fam.add_parser("random", help="Erdos-Renyi G(n, m): m distinct edges, no self-loops")
    e.add_argument("-n", "--vertices", type=decimal_int, required=True)
    e.add_argument("-m", "--edges", type=decimal_int, required=True)
    _common(e)
    for sp in (r, g, e):
        sp.set_defaults(func=run)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from gpu_sssp.pipeline.generate import _weight_bounds, generate
    from gpu_sssp.workflows.cmd_ingest import summary_table
    from gpu_sssp.workflows.common import check_output_file, no_new_folders_on_failure

    check_output_file(args.output, parquet_name=True)
    common = dict(seed=args.seed, weights=args.weights, weight_type=args.weight_type,
                  negative_fraction=args.negative_fraction, max_vertices=args.max_vertices,
                  max_arcs=args.max_arcs, max_isolated_vertices=args.max_isolated_vertices)
    if args.family == "rmat":
        kw = dict(scale=args.scale, edge_factor=args.edge_factor, a=args.a, b=args.b, c=args.c, d=args.d,
                  undirected=args.undirected, **common)
    elif args.family == "grid":
        kw = dict(rows=args.rows, cols=args.cols, undirected=not args.asymmetric, **common)
    else:
        kw = dict(n=args.vertices, m=args.edges, undirected=args.undirected, **common)
    if kw["undirected"] and args.weights[0] < 0:
        # asked for, so made (a test graph for negative-cycle detection), but said: every
        # negative edge is a negative cycle, there and back (--negative-fraction refuses it).
        # Bounds that are refused are refused first, without the note; the note is one line
        _weight_bounds(args.weights, args.weight_type)
        Console(stderr=True, soft_wrap=True).print(
            f"note: an undirected graph with weights down to {args.weights[0]}: every negative edge is a negative "
            "cycle (there and back), so solvers will report one; a directed graph (no --undirected; grid "
            "--asymmetric) with --negative-fraction has negative weights and no negative cycle", highlight=False)
    t0 = time.perf_counter()
    with no_new_folders_on_failure(args.output):  # (the writer makes its folders when it opens)
        meta = generate(args.family, Path(args.output), **kw)
    if not args.quiet:
        # plain text: the table's title names the output, whose "[/bold]" (a folder "x[/bold]y")
        # Rich read as markup (MarkupError after the file was written)
        print_table(Console(markup=False), summary_table(meta, args.output, time.perf_counter() - t0))
    return 0
