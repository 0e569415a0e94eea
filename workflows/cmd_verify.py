"""`sssp verify`: check solvers against the CPU reference on a graph."""
from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpu_sssp.kernels.errors import UsageError, comma_items, counted, render
from gpu_sssp.workflows.common import (add_graph_options, decimal_int, load_graph_from_args, print_table,
                                       check_sources_file, refuse_empty_names, repeated_note, sources_from_args)

console = Console(soft_wrap=True)  # status lines stay whole in logs and pipes


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="check solvers against the CPU reference",
                       description="Solve from random (or given) sources with each method and compare "
                       "distances (exactly for integer weights), reached counts, sums and the "
                       "predecessor invariant dist[pred] + w == dist[v] with the CPU reference; "
                       "checks that every predecessor chain ends at its source and, without the "
                       "reference, that no arc still shortens a distance.")
    add_graph_options(p, optional=True)  # not needed with --list
    p.add_argument("--methods", default="all",
                   help="comma-separated methods, or 'all' (every method runnable here, a method "
                   "registered on both backends, like phast, once on each); NAME@cpu or NAME@gpu "
                   "picks the backend of one method (phast@cpu)")
    p.add_argument("--backend", choices=("auto", "gpu", "cpu"), default="auto",
                   help="backend of the methods named without @ (auto: a method's own; phast: the "
                   "GPU when a device is visible, else the CPU); with 'all': only that backend's methods")
    # (defaults None: given with -s/--sources-file they are refused, not ignored)
    p.add_argument("--random", type=decimal_int, default=None, metavar="K",
                   help="K distinct random sources of GRAPH (default 8; at most every vertex, noted); "
                   "not with --source/--sources-file")
    p.add_argument("--seed", type=decimal_int, default=None,
                   help="seed of the --random draw (default 0: the same sources every run; printed)")
    p.add_argument("--source", "-s", type=decimal_int, action="append", metavar="ID")
    p.add_argument("--sources-file", metavar="F.ss")
    p.add_argument("--list", action="store_true", help="list the registered methods and exit")
    p.set_defaults(func=run)


def random_sources(graph, k: int, seed: int) -> np.ndarray:
    """``k`` distinct vertices of ``graph`` drawn with ``seed`` (internal indices, in id
    order), at most every vertex (the cap is noted); the draw and its seed are printed,
    so that a run can be repeated with ``--seed``.

    Raises
    ------
    UsageError
        ``k`` below 1, or a graph without vertices.
    """
    k = int(k)
    if k < 1:
        raise UsageError(f"--random K must be at least 1, got {k}")
    if graph.n == 0:
        raise UsageError(f"{graph.name} has no vertices to draw sources from")
    if k > graph.n:
        console.print(f"note: --random {k:,} is more than the {graph.n:,} vertices of {escape(graph.name)}: "
                      f"every vertex is a source", highlight=False)
        k = graph.n
    from gpu_sssp.pipeline.sources import draw_vertices

    src = draw_vertices(graph.n, k, seed)
    console.print(f"{k:,} distinct random sources (seed {seed}; --seed S draws others)", highlight=False)
    return src


#: bytes ``sssp verify`` holds per (source, vertex) pair of a part (measured: about 133,
#: the reference's and a method's distances and predecessors and the tree checks'
#: temporaries), and the most it holds at once
VERIFY_CELL_BYTES = 160
VERIFY_PART_BYTES = 1 << 30


def verify_part_sources(n: int, sources: int) -> int:
    """How many sources ``sssp verify`` solves and checks at a time: as many as keep
    ``VERIFY_CELL_BYTES`` a pair within ``VERIFY_PART_BYTES`` (and half the memory
    available), at least one."""
    from gpu_sssp.kernels.memory import available_memory

    budget = VERIFY_PART_BYTES
    avail = available_memory()
    if avail is not None:
        budget = min(budget, avail // 2)
    return max(1, min(max(sources, 1), budget // (VERIFY_CELL_BYTES * max(int(n), 1))))


def _hierarchy_from_cache(graph) -> None:
    """Give ``graph`` the contraction hierarchy cached beside its file (``<file>.ch.npz``,
    written by a study or ``gpu_sssp.matrix``), or build it and write that file where
    ``phast`` would build one anyway: ``phast`` then checks the hierarchy studies sweep,
    and a verify of NY no longer builds its own (4-5 s) on every run."""
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.hierarchy import cache_path, load_hierarchy

    if cache_path(graph) is None:
        return
    try:
        load_hierarchy(graph, build=False)  # a valid cache file: held from now on
        return
    except FileNotFoundError:  # none, or stale: phast builds one below if it applies
        pass
    except ValueError:  # not eligible: phast is skipped with the reason
        return
    if kernels.get("phast", "cpu").unsuitable(graph) is None:
        load_hierarchy(graph)


def run(args) -> int:
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import GPUUnavailableError
    from gpu_sssp.kernels.check import compare
    from gpu_sssp.kernels.registry import method_spec, registrations

    if args.list:
        t = Table(title=f"methods ({counted(kernels.device_count(), 'GPU')} visible)")
        for c in ("method", "backend", "negative weights", "description"):
            t.add_column(c)
        for m in registrations(None if args.backend == "auto" else args.backend):
            t.add_row(m.name, m.backend, "yes" if m.negative_weights else "no", m.description)
        print_table(console, t)
        return 0
    if args.graph is None:
        raise UsageError("verify needs a GRAPH (or --list to show the methods)")
    # the methods are checked before the graph is read and the reference solved: a
    # misspelt name, "auto", a bad @backend or a GPU method without a GPU used to be
    # refused only after both
    gpu = kernels.device_count() > 0
    if args.methods == "all":
        # every registration runnable here: phast once on the GPU (with a device) and once
        # on the CPU
        todo = [(m.name, m.backend) for m in registrations(None if args.backend == "auto" else args.backend)
                if gpu or m.backend == "cpu"]
        if not todo:
            raise GPUUnavailableError(f"no method to verify on the {args.backend} backend: no CUDA device "
                                      "is visible here")
    else:
        tokens = comma_items(args.methods, "--methods")
        if not tokens:  # (",": a check of nothing would pass)
            raise UsageError(f"--methods {args.methods!r}: no method named; give NAME[,NAME...] or all")
        unknown = [t for t in tokens if t.partition("@")[0] == "auto"
                   or t.partition("@")[0] not in kernels.available_methods()]
        if unknown:
            auto = any(t.partition("@")[0] == "auto" for t in unknown)
            raise UsageError(f"--methods: unknown method(s) {', '.join(unknown)}"
                             + (" (auto picks a method per graph for solve and study; verify checks named "
                                "methods)" if auto else "") + "; available: "
                             f"{', '.join(m for m in kernels.available_methods() if m != 'auto')}, or all")
        todo = list(dict.fromkeys(method_spec(t, args.backend) for t in tokens))
        if not gpu and any(b == "gpu" for _, b in todo):
            name = next(n for n, b in todo if b == "gpu")
            raise GPUUnavailableError(f"method {name!r} needs a CUDA device; none is visible here")
    refuse_empty_names(("--sources-file", args.sources_file))  # it was ignored: a random draw was checked
    check_sources_file(args.sources_file)  # before the graph is read
    if args.source or args.sources_file is not None:
        # as study: --random 3 -s 1 checked source 1 alone, the draw silently dropped
        given = [o for o, v in (("--random", args.random), ("--seed", args.seed)) if v is not None]
        if given:
            named = [o for o, v in (("--source", args.source), ("--sources-file", args.sources_file)) if v]
            raise UsageError(f"choose the sources one way only: --random K [--seed S] (a random draw) or "
                             f"--source / --sources-file (got {' and '.join(given + named)})")
    else:
        from gpu_sssp.pipeline.sources import check_seed

        args.random = 8 if args.random is None else args.random
        args.seed = 0 if args.seed is None else args.seed
        check_seed(args.seed, "--seed")  # before the graph is read
    graph = load_graph_from_args(args)
    if args.source or args.sources_file is not None:
        from gpu_sssp.pipeline.sources import first_occurrences

        src, repeated = first_occurrences(sources_from_args(graph, args.source, args.sources_file))
        if repeated:  # as solve and study: a source given twice is checked once
            console.print(repeated_note(repeated, len(src), "checked"), highlight=False)
    else:
        src = random_sources(graph, args.random, args.seed)
    if any(name == "phast" for name, _ in todo):
        _hierarchy_from_cache(graph)
    ref_method = "bellman-ford" if graph.has_negative else "dijkstra"
    table = Table(title=f"verify {escape(graph.name)} ({counted(graph.n, 'vertex', 'vertices')}, {counted(graph.m, 'arc')}, {counted(len(src), 'source')})")
    for c in ("method", "backend", "result", "ms"):
        table.add_column(c)
    specs, skipped = {}, {}
    for key in todo:
        spec = specs[key] = kernels.get(*key)
        why = spec.unsuitable(graph, advice="skip")
        if why:  # (its option phrases in the command line's words: they were printed marked)
            skipped[key] = render(why)
    runnable = [key for key in specs if key not in skipped]
    # the sources a part at a time: the reference, each method's result (distances and
    # predecessors) and the checks' temporaries over them held about 140 bytes a
    # (source, vertex) pair at once (200 NY sources: 7.1 GB), where solve's memory check
    # counted 44
    step = verify_part_sources(graph.n, len(src))
    found = {key: [] for key in runnable}
    ms = {key: 0.0 for key in found}
    for lo in range(0, len(src) if runnable else 0, step):
        part = src[lo:lo + step]
        ref = kernels.solve(graph, part, method=ref_method, backend="cpu", predecessors=True)
        for key in runnable:
            res = kernels.solve(graph, part, method=key[0], backend=specs[key].backend, predecessors=True)
            problems = compare(graph, ref, res)
            if problems and len(found[key]) < 4:  # (the parts' first few: one table cell)
                found[key].append(
                    "; ".join(problems) if step >= len(src) else
                    f"sources {lo + 1:,}-{lo + len(part):,} of {len(src):,}: " + "; ".join(problems))
            ms[key] += float(res.counters.get("kernel_ms", 0) or 0)
            del res
        del ref
    failures = checked = 0
    for name, backend in todo:
        spec = specs[(name, backend)]
        if (name, backend) in skipped:
            table.add_row(name, spec.backend, f"[dim]skipped: {escape(skipped[(name, backend)])}[/]", "")
            continue
        checked += 1
        problems = found[(name, backend)]
        failures += bool(problems)
        table.add_row(name, spec.backend, "[green]ok[/]" if not problems else "[red]" + "; ".join(problems) + "[/]",
                      f"{ms[(name, backend)]:.2f}")
    print_table(console, table)
    if todo and not checked:  # exit 0 said "verified" where nothing was
        raise UsageError(f"nothing was checked: every method asked for was skipped on {graph.name} (the table says "
                         "why); name one that can solve it (--methods all checks every one that can)")
    return 1 if failures else 0
