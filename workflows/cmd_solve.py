"""`sssp solve`: shortest paths from a few sources, written in the result schema."""
from __future__ import annotations

import json
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from gpu_sssp.kernels.errors import counted
from gpu_sssp.pipeline.fsnames import shown
from gpu_sssp.pipeline.sources import first_occurrences
from gpu_sssp.workflows.common import (add_graph_options, check_method, check_method_name, check_output_file,
                                       check_sources_file,
                                       decimal_int, load_graph_from_args, print_table, refuse_empty_names,
                                       repeated_note, sources_from_args)

console = Console(soft_wrap=True, markup=False)  # status lines stay whole in logs and pipes; names are not markup

#: cells (source, vertex) of the distance table built and written at a time by -o
PART_CELLS = 1 << 22


def _mean(x) -> str:
    """A mean distance for the table: two decimals, or six significant digits where
    it is large (with two decimals, 7.1e38 was 41 digits, cut to '710,670,687,683,443,24…'
    in the column) or small enough that two decimals say 0.00."""
    x = float(x)
    if x != x:
        return "nan"
    return f"{x:,.2f}" if x == 0 or 0.01 <= abs(x) < 1e15 else f"{x:,.6g}"


def part_slices(rows: int, n: int, cells: int):
    """``(rows, vertices)`` slices of a ``rows x n`` distance array that cover it in
    order, each of at most ``cells`` cells (at least one vertex): whole rows, as many
    as fit, or, where one row of ``n`` vertices is more than ``cells``, each row in
    consecutive vertex ranges of ``cells`` (``vertices`` is ``None`` for whole rows)."""
    cells = max(1, int(cells))
    step = cells // max(n, 1)
    if step >= 1:
        for lo in range(0, rows, step):
            yield slice(lo, lo + step), None
        return
    for i in range(rows):
        for v in range(0, n, cells):
            yield slice(i, i + 1), slice(v, v + cells)


#: bytes the -o writer holds per cell of a part beside the result (the part's long table,
#: the next one made while it is written, the Parquet encoder's buffers): measured about
#: 130 (550 MB over the solve's own peak for 100 or 200 NY sources, parts of PART_CELLS)
WRITER_CELL_BYTES = 160


def check_writer_memory(graph, sources: int, predecessors: bool) -> None:
    """Refuse, before anything is solved, a ``solve -o`` whose result (distances, and
    predecessors) and the writer's parts beside it would not fit in the memory available:
    the solve's own check counts the result, not the writing after it (200 NY sources
    with predecessors passed a check of 1.06 GB in a 1.3 GB cgroup, solved, and were
    killed while writing, at 1.8 GB)."""
    from gpu_sssp.kernels.memory import check_host_memory, output_bytes

    cells = int(sources) * int(graph.n)
    held = output_bytes(sources, graph.n, distances=True, predecessors=predecessors, n=graph.n)
    writer = min(cells, PART_CELLS) * WRITER_CELL_BYTES
    check_host_memory(held + writer,
                      f"{shown(graph.name)}: the distances{' and predecessors' if predecessors else ''} of "
                      f"{sources:,} sources x {graph.n:,} vertices and the -o writer's parts beside them",
                      "solve fewer sources at a time, or run a study (sssp study --outputs distances), which "
                      "writes the distances batch by batch")


def add_parser(sub) -> None:
    p = sub.add_parser("solve", help="shortest paths from given sources",
                       description="Solve SSSP from the given sources and write distances "
                       "(and predecessors) as Parquet in the result schema.")
    add_graph_options(p)
    p.add_argument("--source", "-s", type=decimal_int, action="append", metavar="ID",
                   help="source vertex id as in the input file (repeatable; a source given more than "
                   "once, here or in --sources-file, is solved and written once, noted)")
    p.add_argument("--sources-file", metavar="F.ss", help="DIMACS .ss file (or one id per line)")
    p.add_argument("--method", "-m", default="auto",
                   help="solver name (see `sssp verify --list`), or NAME@cpu / NAME@gpu for a method on both "
                   "backends (phast@cpu, as verify and bench take it); default auto")
    p.add_argument("--backend", choices=("auto", "gpu", "cpu"), default="auto")
    p.add_argument("--predecessors", action="store_true", help="also compute the shortest-path tree")
    p.add_argument("--all-vertices", action="store_true",
                   help="with --out: write unreachable vertices too (distance +inf); default: reached only")
    p.add_argument("--out", "-o", help="Parquet file for the distances (columns source, vertex, distance, predecessor)")
    p.set_defaults(func=run)


#: names that say another format than the Parquet table written
_OTHER_FORMATS = (".csv", ".tsv", ".txt", ".json", ".jsonl", ".npy", ".npz", ".arrow", ".feather", ".xlsx")


def refuse_other_format_name(out) -> None:
    """Refuse an ``-o`` whose name says another format (``-o d.csv`` wrote Parquet under a
    ``.csv`` name without a word); a name without a suffix, or any other, is taken."""
    from pathlib import Path

    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.fsnames import shown

    suffix = Path(str(out)).suffix.lower()
    if suffix in _OTHER_FORMATS:
        raise UsageError(f"--out {shown(out)}: the table is written as Parquet, not {suffix[1:]}; give a name ending "
                         f"in .parquet (e.g. {shown(Path(str(out)).with_suffix('.parquet'))})")


def run(args) -> int:
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.writers import (OutputWriteError, owned_temp_for, remove_abandoned_temporaries,
                                           write_parquet_parts_atomic)
    from gpu_sssp.workflows.common import no_new_folders_on_failure


    # an empty name was taken for none: -o '' solved and wrote nothing, --sources-file ''
    # solved the --source ids alone (or said "no sources"), without a word
    refuse_empty_names(("--out", args.out), ("--sources-file", args.sources_file))
    check_sources_file(args.sources_file)  # before the graph is read
    if args.all_vertices and not args.out:
        from gpu_sssp.kernels.errors import OptionError

        raise OptionError("--all-vertices goes with -o/--out (it adds the unreachable vertices to the "
                          "distance file); the table printed here is per source")
    if "@" in str(args.method):  # NAME@BACKEND, as verify and bench take it
        from gpu_sssp.kernels.errors import OptionError
        from gpu_sssp.kernels.registry import method_spec

        name, backend = method_spec(args.method, args.backend)
        if args.backend not in ("auto", backend):
            raise OptionError(f"--method {args.method} and --backend {args.backend} name different backends")
        args.method, args.backend = name, backend
    check_method_name(args.method, args.backend)  # before the graph is read
    if args.out:
        # the sources file is an input too: -o on it replaced the user's list of sources
        inputs = [args.graph] + ([args.sources_file] if args.sources_file else [])
        check_output_file(args.out, option="--out", inputs=inputs, example="distances.parquet",
                          caches_of=args.graph)
        refuse_other_format_name(args.out)
    graph = load_graph_from_args(args)
    check_method(graph, args.method, args.backend)
    src = sources_from_args(graph, args.source, args.sources_file)
    # one row per (source, vertex): a source given twice is solved once, in the order
    # of its first appearance
    src, repeated = first_occurrences(src)
    if repeated:
        console.print(repeated_note(repeated, len(src)), highlight=False)
    # the hierarchy cached beside the graph file (a study's), or built and cached there
    # where phast will solve, as gpu_sssp.matrix and studies do: solve built its own in
    # memory on every run (700 NY sources: 8.7 s, with the cache file beside it)
    from gpu_sssp.kernels.registry import resolve_backend
    from gpu_sssp.pipeline.hierarchy import prepare_study

    prepare_study(graph, len(src), resolve_backend(args.method, args.backend), args.method)
    if args.out:
        check_writer_memory(graph, len(src), args.predecessors)
    t0 = time.perf_counter()
    res = kernels.solve(graph, src, method=args.method, backend=args.backend,
                        predecessors=args.predecessors, distances=True)
    wall = (time.perf_counter() - t0) * 1e3
    table = Table(title=f"{shown(graph.name)}: {graph.n:,} vertices, {graph.m:,} arcs - {res.method} on {res.device}")
    for col in ("source", "reached", "eccentricity", "sum of distances", "mean distance"):
        table.add_column(col, justify="right", overflow="fold")  # a number too wide wraps, never cut
    mean = res.mean_distance()
    integer = graph.integer_weights
    fmt = (lambda x: f"{int(x):,}") if integer else (lambda x: f"{x:,.6g}")
    for i in range(min(len(src), 20)):
        table.add_row(str(int(src[i]) + graph.id_base), f"{int(res.reached[i]):,}",
                      fmt(res.eccentricity[i]) if np.isfinite(res.eccentricity[i]) else "-",
                      fmt(res.sum_distance[i]), _mean(mean[i]))
    if len(src) > 20:
        table.caption = f"... {len(src) - 20} more sources"
    print_table(console, table)
    console.print(f"{counted(len(src), 'source')} in {wall:.1f} ms "
                  f"({counted(int(res.counters.get('iterations', 0)), 'iteration')}, "
                  f"{counted(int(res.counters.get('launches', 0)), 'launch', 'launches')})")
    if args.out:
        meta = {"graph": graph.name, "fingerprint": graph.fingerprint, "method": res.method,
                "device": res.device, "id_base": graph.id_base, "weight_type": graph.weight_type,
                "sources": graph.to_ids(src[:1000]).tolist()}
        written = [0]

        def parts():
            # the long table a few million cells at a time: built whole it took about 40
            # bytes a cell beside the 8 (16) of the distances solve checked against the
            # memory (303 NY sources with 4 GB of address space: solved, then
            # "Unable to allocate 1.19 GiB").  A row of more vertices than a part is cut
            # into vertex ranges (one source of a graph of billions of vertices was one
            # part, about 40 bytes a vertex)
            for k, (rows, vertices) in enumerate(part_slices(len(src), graph.n, PART_CELLS)):
                part = res.to_table(graph.id_base, reachable_only=not args.all_vertices,
                                    rows=rows, vertices=vertices)
                if k == 0:
                    part = part.replace_schema_metadata(
                        {**(part.schema.metadata or {}), b"sssp": json.dumps(meta, default=str).encode()})
                elif part.num_rows == 0:  # (a vertex range that source does not reach)
                    continue
                written[0] += part.num_rows
                yield part

        # a temporary of this output that a killed solve left (its process gone, untouched
        # for 10 minutes) goes; the new one names this process (writers.owned_temp_for)
        remove_abandoned_temporaries(args.out)
        try:
            with no_new_folders_on_failure(args.out):  # (the writer makes -o's folders when it opens)
                write_parquet_parts_atomic(parts(), args.out, temp_name=owned_temp_for)
        except OSError as exc:  # (disk full, a folder gone since the check): name -o, not the temporary file
            raise OutputWriteError(args.out, exc, "--out") from None
        console.print(f"wrote {written[0]:,} rows to {shown(args.out)}")
    return 0
