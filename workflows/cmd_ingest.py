"""`sssp ingest INPUT -o OUT.parquet` - convert a graph file to the Parquet edge list."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gpu_sssp.pipeline.fsnames import shown
from gpu_sssp.workflows.common import count_value, decimal_int, print_table

HELP = "convert a graph file (.gr/.ss/.co, .mtx, METIS .graph, edge list, PACE; compressed) to Parquet"

DESCRIPTION = """\
Convert a graph file to the project's Parquet edge list (columns src, dst, weight; ids
are the file's own ids; metadata key 'sssp'). DIMACS .ss/.co files become Parquet
files of sources (column 'source') or coordinates ('vertex', 'x', 'y').

Formats (detected from content, then extension; force with --format):
  gr        DIMACS 9th challenge 'p sp N M' / 'a U V W' (1-based)
  ss, co    DIMACS source lists 'p aux sp ss K' / 's ID', coordinates 'v ID X Y'
  mtx       MatrixMarket coordinate pattern/integer/real, general/symmetric
            (also a SuiteSparse .tar.gz: its main .mtx member)
  metis     METIS / DIMACS-10 .graph (fmt 0, 1, 10, 11); a file listing each edge at
            one end only (M entries, gapbs's directed variant) is read as directed
            arcs with a warning, or as edges both ways with --undirected
  edgelist  SNAP-style 'U V [W]' lines, 0-based, '#'/'%' comments (.el/.wel/.txt)
  pace      PACE 'p tw N M' with 'U V' lines (undirected, unweighted)
Compressed inputs (.gz .xz .bz2 .zst) are streamed. A file whose start names another
format than the one read (a '%%MatrixMarket' banner, a DIMACS or PACE 'p' line; for
an edge list, a METIS header and adjacency lines) is refused, naming that format; so
is a DIMACS problem other than those above ('p res', 'p chk', ...).

Bad input stops with one line naming the file, the line and what was expected
(exit status 2); no partial output is left behind. That includes a header that
declares more than the file can hold (checked against the file's size for
uncompressed inputs, and as the records stream for compressed ones), more vertices
or arcs than the limits allow (--max-vertices, --max-arcs, --max-isolated-vertices;
an edge list's arcs are counted as they are read), a truncated
compressed file, and integer weights so large that path sums could pass 2**53
(where float64 distances stop being exact: the bound on a path's length, the smaller
of (N - 1) * max|w| and the sum of each vertex's heaviest in-arc |w|, must stay below
2**53).
"""


def add_parser(subparsers):
    p = subparsers.add_parser("ingest", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="graph file (or DIMACS .ss / .co file)")
    p.add_argument("-o", "--output", help="output Parquet file (default: INPUT's name with .parquet, "
                   "in the current directory)")
    p.add_argument("--format", choices=("gr", "ss", "co", "mtx", "metis", "edgelist", "pace"),
                   help="force the input format")
    p.add_argument("--weights", metavar="SPEC",
                   help="file (default; 1 for unweighted inputs), unit, random:LO:HI:SEED (seeded "
                        "integers U[LO,HI], one per input edge, same for both directions) or "
                        "random-float:LO:HI:SEED")
    p.add_argument("--undirected", action="store_true",
                   help="add both arcs for every input edge (also each entry of a METIS file that lists "
                        "every edge at one end only)")
    p.add_argument("--zero-based", action="store_true", help="accept 0-based ids in DIMACS/PACE files")
    p.add_argument("--weight-type", choices=("int32", "int64", "float32", "float64"),
                   help="stored weight type (default int64 for integer weights, float64 for real ones); "
                        "a weight that does not fit is an error")
    p.add_argument("--max-vertices", type=count_value, metavar="N",
                   help="refuse inputs declaring more vertices (an edge list: whose largest id makes more; "
                        "default: setting sssp.ingest.max-vertices, 2**31 - 1)")
    p.add_argument("--max-arcs", type=count_value, metavar="N",
                   help="refuse inputs with more arcs: announced by a header, or counted as an edge list "
                        "is read (default: setting sssp.ingest.max-arcs, none)")
    p.add_argument("--max-isolated-vertices", type=count_value, metavar="N",
                   help="refuse headers whose vertex count leaves more than N vertices that no arc can "
                        "touch (default: setting sssp.ingest.max-isolated-vertices, 16777216)")
    p.add_argument("--chunk-mb", type=decimal_int, default=16, metavar="M",
                   help="text parsed per step, MiB, 1 to 1024 (memory is a small multiple of it; default 16)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary table")
    p.set_defaults(func=run)
    return p


def default_output(path: Path, fmt: str | None = None) -> Path:
    """``-o``'s default: the input's name with ``.parquet``, in the current folder.  A
    DIMACS source list or coordinate table keeps its kind (``X.ss.parquet``,
    ``X.co.parquet``): ``X.gr``, ``X.ss`` and ``X.co`` of one DIMACS set all became
    ``X.parquet``, and ingesting the ``.ss`` replaced the graph's edge list with a table
    of sources, without a word."""
    from gpu_sssp.pipeline.ingest import detect_format, normalise_format, strip_compression

    name = strip_compression(path.name)
    for suf in (".tar",):
        if name.endswith(suf):
            name = name[: -len(suf)]
    try:
        kind = normalise_format(fmt) if fmt else detect_format(path)
    except (OSError, ValueError):  # unreadable or unknown: ingest() says so, in its words
        kind = None
    stem = Path(name).stem + (f".{kind}" if kind in ("ss", "co") else "")
    return Path(stem + ".parquet")


def summary_table(meta: dict, out, seconds: float | None = None, size: int | None = None) -> Table:
    t = Table(title=Text(shown(f"{meta.get('source_file') or meta.get('format')} -> {out}")), show_header=False,
              title_justify="left")
    t.add_column("key", style="bold")
    t.add_column("value")

    def fmt(v):
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    if meta.get("format") in ("ss", "co"):
        rows = [("format", meta["format"]), ("records", meta.get("count")), ("duplicates", meta.get("duplicates"))]
    else:
        rows = [
            ("format", meta.get("format")),
            ("vertices", meta.get("vertices")),
            ("arcs", meta.get("arcs")),
            ("directed", "yes (METIS edges listed at one end only; see the warning)"
             if meta.get("directed") and meta.get("directed_reason") else meta.get("directed")),
            ("id base", meta.get("id_base")),
            ("weights", f"{meta.get('weights')} ({meta.get('weight_type')})"),
            ("weight range", f"{meta.get('weight_min')} .. {meta.get('weight_max')}"),
            ("negative weights", meta.get("negative_weights")),
            ("self-loops", meta.get("self_loops")),
            ("parallel arcs", meta.get("parallel_arcs")),
        ]
    if meta.get("source_member"):  # the tarball's member read (pipeline.ingest._source._main_member)
        rows.insert(0, ("member", meta["source_member"]))
    for k, v in rows:
        t.add_row(k, fmt(v))
    if seconds is not None:
        rate = f" ({size / seconds / 1e6:.0f} MB/s of input)" if size and seconds > 0.5 else ""
        t.add_row("time", f"{seconds:.2f} s{rate}")
    return t


def run(args) -> int:
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.graph import READS_WHILE_CHANGING
    from gpu_sssp.pipeline.ingest import ChangedWhileRead, check_chunk_bytes, check_chunk_memory, ingest
    from gpu_sssp.workflows.common import check_output_file, no_new_folders_on_failure

    console = Console()
    err = Console(stderr=True)
    check_chunk_bytes(args.chunk_mb, "--chunk-mb", 1 << 20)  # a usage error (exit 2) before anything is read
    path = Path(args.input)
    # (ingest() checks it too; here first, for a line in the command's own option)
    check_chunk_memory(path, args.chunk_mb << 20, option="--chunk-mb", scale=1 << 20)
    given = args.output is not None  # (-o "" is refused below, not taken for the default)
    default = default_output(path, args.format)  # (it reads the input's first lines: once)
    out = Path(args.output) if given and args.output else default
    # (an output that is the input is refused by ingest() itself, before it reads anything)
    # the name as given: Path("./-") is Path("-"), which the check refuses as standard output
    check_output_file(args.output if given else out, option="-o" if given else "output",
                      example=default.name, parquet_name=True)
    t0 = time.perf_counter()
    try:
        for tries_left in range(READS_WHILE_CHANGING - 1, -1, -1):
            try:
                with no_new_folders_on_failure(out):  # the sink makes out's folders when it opens
                    meta = ingest(path, out, format=args.format, weights=args.weights,
                                  undirected=args.undirected, zero_based=args.zero_based,
                                  weight_type=args.weight_type, chunk_bytes=args.chunk_mb << 20,
                                  max_vertices=args.max_vertices, max_arcs=args.max_arcs,
                                  max_isolated_vertices=args.max_isolated_vertices)
                break
            except ChangedWhileRead as exc:  # nothing was written: read it again, as load_graph does
                if not tries_left:
                    raise InputError(exc.path, None, f"the file changed while it was read, {READS_WHILE_CHANGING} "
                                     "times in a row: ingest it once it is no longer being written") from None
                err.print(f"note: {escape(shown(exc.path))} changed while it was read: reading it again",
                          highlight=False, soft_wrap=True)
    except InputError as exc:
        err.print(f"[bold red]error:[/] {escape(shown(exc))}", highlight=False, soft_wrap=True)
        return 2
    dt = time.perf_counter() - t0
    if not args.quiet:
        size = path.stat().st_size if path.exists() else None
        print_table(console, summary_table(meta, out, dt, size))
    return 0
