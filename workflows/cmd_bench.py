"""`sssp bench`: the papers' experiments, with CPU anchors in the same run.

Glue only: parse arguments, load graphs, call :func:`pipeline.bench_protocol.run_benchmark`,
show progress, write ``rows.parquet`` / ``summary.md`` / PNGs with :mod:`pipeline.bench_report`.
"""
from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpu_sssp.kernels.errors import OptionError, SsspError, UsageError, comma_items, counted
from gpu_sssp.pipeline.fsnames import is_parquet_name, shown
from gpu_sssp.workflows.common import INPUT_FORMATS, decimal_int, graph_options, print_table

console = Console(stderr=True, soft_wrap=True)  # notes and status lines stay whole in logs and pipes
out_console = Console()

_DESCRIPTION = """\
Time shortest-path methods the way the source papers do: random sources whose
reachable component has at least --min-component vertices (lowered with a note on
small graphs), every method and CPU baseline from the same sources in one process,
warm-up calls excluded, every answer checked against SciPy's.  Writes DIR/rows.parquet
(one row per graph, method, source and run), DIR/summary.md (mean/min/max times,
speedups over harish and SciPy, work efficiency, H-BF ablation, locality k sweep,
edgelist scaling) and PNG plots.  Exit status 1 when any answer was wrong or a method
failed (after writing everything); 2 when nothing was measured (every method and
baseline skipped, after writing everything); 3 when a negative cycle is reachable from a
source; 4 when a GPU method is named (hbf, phast@gpu, --ablation hbf) where no GPU is
visible.  --sources above a graph's vertex count times every vertex (noted).

examples:
  sssp bench data/rome99.gr --algorithms cpu --sources 20
  sssp bench NY.parquet BAY.parquet --algorithms gpu --ablation hbf --sources 32 --out bench-road
  sssp bench --from-rows bench-road bench-rmat --out bench-all   # one summary of several runs
"""


def _csv(text: str | None, option: str) -> list[str]:
    """The items of ``option``'s comma list (an empty item refused: ``comma_items``)."""
    return comma_items(text or "", option)


def _guard(text: str) -> float:
    """A time guard (``--slow-ms``, ``--graph-time-limit``): a finite number >= 0 (NaN
    would pass no comparison: a guard never applied)."""
    import argparse
    import math

    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number >= 0")
    return v


def _ints(text: str, option: str = "--locality-k") -> list[int]:
    """Comma-separated whole numbers >= 1 (``--locality-k``: hops relaxed per step)."""
    items = _csv(text, option)  # (outside: its UsageError is a ValueError)
    try:
        values = [int(t) for t in items]
    except ValueError:
        raise UsageError(f"{option}: expected comma-separated integers, got {text!r}") from None
    bad = [v for v in values if v < 1]
    if bad:
        raise UsageError(f"{option}: values must be at least 1, got {bad[0]}")
    return values


def add_parser(sub) -> None:
    import argparse

    p = sub.add_parser("bench", help="benchmark methods against each other and CPU baselines",
                       description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graphs", nargs="*", metavar="GRAPH",
                   help="Parquet edge lists or any input files (ingested once into a cache)")
    p.add_argument("--algorithms", "-a", default="all",
                   help="comma-separated method names, or 'gpu' / 'cpu' / 'all' for every registered "
                   "method of that backend (their GPU methods are skipped with a note where no device is "
                   "visible; a GPU method named here exits 4 there); a method on both backends (phast) is timed once on each with 'all', "
                   "labelled phast (GPU) and phast@cpu; NAME@cpu / NAME@gpu picks one; default all")
    p.add_argument("--backend", choices=("auto", "gpu", "cpu"), default="auto",
                   help="backend of the methods named without @ (auto: a method's own; phast: the GPU "
                   "when a device is visible, else the CPU); with 'all': only that backend's methods")
    p.add_argument("--sources", type=decimal_int, default=100,
                   help="random sources per graph (default 100; at least a graph's vertex count: every vertex "
                   "of it, the summary says so)")
    p.add_argument("--min-component", type=decimal_int, default=100_000,
                   help="vertices each source must reach (default 100000, as H-BF)")
    p.add_argument("--seed", type=decimal_int, default=7, help="seed of the source draw (default 7)")
    p.add_argument("--runs", type=decimal_int, default=1, help="timed runs per source (default 1)")
    p.add_argument("--warmup", type=decimal_int, default=1, help="untimed calls per method first (default 1)")
    p.add_argument("--ablation", default="", help="methods whose optimisations are switched off in "
                   "turn: 'hbf' (its seven), 'locality' (resident arcs, prefetch)")
    p.add_argument("--baselines", default="scipy,networkit,networkit-spsp,rustworkx",
                   help="CPU baselines (scipy always works; networkit, networkit-spsp (NetworKit's "
                   "parallel SPSP on every usable host core) and rustworkx come with the 'bench' "
                   "extra and are skipped with a note when absent); '' for none")
    p.add_argument("--locality-k", default="1,2,3,4,5", help="k values timed for 'locality' (default 1..5)")
    p.add_argument("--batch-size", type=decimal_int, default=None,
                   help="sources per call for batched methods (default: all sources in one call); also the "
                   "most for networkit-spsp, whose calls hand back about 16M distances at most, or two "
                   "sources per host core where the graph has more than 16M / (2 x cores) vertices")
    p.add_argument("--baseline-max-arcs", type=decimal_int, default=5_000_000,
                   help="skip networkit/rustworkx on graphs with more arcs (their graph build is "
                   "slow); SciPy always runs (default 5000000)")
    p.add_argument("--exclude", default="", help="methods to leave out of 'gpu'/'cpu'/'all' (comma-separated)")
    p.add_argument("--slow-ms", type=_guard, default=None,
                   help="a method whose warm-up call (its first timed call with --warmup 0) takes longer "
                   "than this many ms is timed on --slow-sources sources only (noted; batched methods, "
                   "one call for many sources, are not cut); default: no limit")
    p.add_argument("--slow-sources", type=decimal_int, default=2, help="sources for slow methods (default 2)")
    p.add_argument("--graph-time-limit", type=_guard, default=None, metavar="SECONDS",
                   help="start no further method or baseline on a graph once this much time went into "
                   "those after the SciPy anchor, which is always measured (noted); 0: the anchor only")
    p.add_argument("--no-count-work", action="store_true",
                   help="do not make an extra untimed call to count relax operations for methods "
                   "that count only on request")
    p.add_argument("--out", "-o", default="bench-out", help="output folder (default bench-out)")
    p.add_argument("--no-plots", action="store_true", help="write no PNGs")
    p.add_argument("--from-rows", nargs="+", metavar="ROWS",
                   help="do not run: summarise existing rows.parquet files (or folders) into --out")
    g = p.add_argument_group("raw inputs (apply to every GRAPH that is not Parquet)")
    g.add_argument("--format", choices=INPUT_FORMATS, help="force the input format")
    g.add_argument("--weights", metavar="SPEC", help="as sssp ingest: file (default), unit, random:LO:HI:SEED "
                   "or random-float:LO:HI:SEED (replacing the file's weights, if any)")
    g.add_argument("--undirected", action="store_true", help="add both arcs for every input edge")
    g.add_argument("--zero-based", action="store_true", help="accept 0-based ids in DIMACS files")
    p.set_defaults(func=run)


#: ``--algorithms`` words that stand for every method of a backend
_GROUPS = ("all", "gpu", "cpu")


def _expand_algorithms(spec: str, exclude=(), backend: str = "auto") -> list[str]:
    """Method tokens to time: ``gpu`` / ``cpu`` / ``all`` expanded to every registration
    of that backend (``all``: of ``backend``, or of both under ``auto``); a name registered
    on both backends comes out as ``NAME@gpu`` / ``NAME@cpu``.  ``exclude`` drops names
    (``phast`` drops both, ``phast@cpu`` one)."""
    from gpu_sssp.kernels.registry import backends_of, registrations

    exclude = set(exclude)
    known = {m.name for m in registrations(None)}
    for tok in sorted(exclude):  # a misspelt name would leave the method in, unnoticed
        name, _, on = tok.partition("@")
        if name not in known or (on and on not in backends_of(name)):
            raise UsageError(f"--exclude {tok}: no such method" + (f" on the {on} backend" if name in known else "")
                             + f"; registered: {', '.join(sorted(known - {'auto'}))}")
    tokens = _csv(spec, "--algorithms")
    if exclude and not set(tokens) & set(_GROUPS):  # (it did nothing, without a word)
        raise UsageError(f"--exclude {','.join(sorted(exclude))}: --exclude leaves methods out of the groups "
                         f"{', '.join(_GROUPS)}, and --algorithms {spec} names none; leave the method out of "
                         "--algorithms instead")
    for tok in tokens:  # a method both named and excluded: which one was meant?
        if tok not in _GROUPS and (tok in exclude or tok.partition("@")[0] in exclude):
            raise UsageError(f"--algorithms names {tok} and --exclude leaves it out; give it in one of them")
    names: list[str] = []
    for tok in tokens:
        if tok in _GROUPS:
            on = tok if tok != "all" else (None if backend == "auto" else backend)
            for m in registrations(on):
                token = f"{m.name}@{m.backend}" if len(backends_of(m.name)) > 1 else m.name
                if m.name not in exclude and token not in exclude:
                    names.append(token)
        else:
            names.append(tok)
    out = list(dict.fromkeys(names))
    if not out:
        raise UsageError("--algorithms names no method")
    return out


def _load_graph(raw: str, opts: dict, names: set):
    from gpu_sssp.pipeline.graph import load_graph

    path = Path(raw)
    t0 = time.perf_counter()
    g = load_graph(path) if is_parquet_name(path) else load_graph(path, **opts)
    # printable; never empty (a file named .parquet: its name whole, as _plain_label's)
    label = shown((path.name[:-len(".parquet")] or path.name) if is_parquet_name(path) else _plain_label(path))
    base, i = label, 2
    while label in names:
        label, i = f"{base}-{i}", i + 1
    names.add(label)
    g.name = label
    console.print(f"loaded {escape(label)}: {g.n:,} vertices, {g.m:,} arcs, {g.weight_type} weights "
                  f"({time.perf_counter() - t0:.1f} s)", highlight=False)
    return g


def _check_later_graphs(graphs, opts: dict) -> None:
    """Read every GRAPH after the first before any is timed, so that one that fails
    ingest (or a Parquet file that is no edge list) stops the bench with its one line
    at the start, not after hours of timing the graphs before it.  A raw input is
    ingested into its cache here (the timed pass reads it back from there); a Parquet
    file's footer (metadata, columns, sizes) is checked.  The first graph is loaded
    right after, once, before ``--out`` gets its partial rows (``run``)."""
    from gpu_sssp.pipeline.graph import check_parquet, load_graph

    for raw in list(graphs)[1:]:
        path = Path(raw)
        if is_parquet_name(path):
            check_parquet(path)
        else:
            console.print(f"reading {escape(shown(path))} ahead (ingested once into its cache)", highlight=False)
            load_graph(path, **opts)  # dropped at once: one graph in memory at a time


def _plain_label(path: Path) -> str:
    """A raw input's label: its name without compression, ``.tar`` and format suffixes,
    in any case (``g.gr.XZ`` was labelled ``g.gr``); never empty (a file named ``.gr``
    was labelled '', a heading of nothing in summary.md): such a name stays whole."""
    name = path.name
    for suf in (".gz", ".xz", ".bz2", ".zst", ".zstd", ".lzma"):
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    if name.lower().endswith(".tar"):
        name = name[:-4]
    return (name.rsplit(".", 1)[0] if "." in name else name) or name or path.name


def _check_out_writable(out: Path) -> None:
    """Refuse, before any graph is read, an ``--out`` where the rows cannot be written:
    a folder (or the nearest existing one above it) that takes no new file, or a
    ``rows.parquet`` / ``summary.md`` / plot there that is a folder (the atomic rename fails).
    The first write used to come only after the SciPy reference pass and the first
    method were timed, and said only the OS's words about a temporary file."""
    from gpu_sssp.pipeline import bench_report as report
    from gpu_sssp.workflows.common import refuse_unwritable_folder

    # the plots too: a PNG name that is a folder stopped the run at its first summary,
    # after the graph was read, with only the OS's "Is a directory" (--no-plots as well:
    # a stale plot of ours is removed)
    for name in (report.ROWS_FILE, report.SUMMARY_FILE, *report.PLOT_FILES.values()):
        if (out / name).is_dir():
            raise UsageError(f"--out {shown(out)}: {shown(out / name)} is a folder; the bench writes a file there")
    refuse_unwritable_folder(out, f"--out {shown(out)}")


def run(args) -> int:
    from gpu_sssp.pipeline import bench_report as report
    from gpu_sssp.pipeline.bench_protocol import (ROW_SCHEMA, BenchSettings, check_gpu_asked, environment,
                                                  plan_variants, run_benchmark)
    from gpu_sssp.pipeline.writers import check_output_dir

    _PARTIAL = report.PARTIAL_NOTE  # in the rows and summary written while the run goes on

    if not str(args.out).strip():  # Path("") is ".": an unset "$OUT" wrote into the current folder
        raise UsageError(f"--out {args.out!r}: an empty folder name; give a folder (--out . for the current one)")
    out = Path(args.out)
    check_output_dir(out, option="--out")
    _check_out_writable(out)
    if args.from_rows:
        if args.graphs:
            raise OptionError("--from-rows summarises existing rows; give no GRAPH with it")
        try:
            table, ctx = report.load_rows(args.from_rows)
        except (ValueError, FileNotFoundError) as exc:  # not bench rows, (pyarrow's ArrowInvalid) not
            # Parquet at all, or no such file: the line names the option
            raise UsageError(f"--from-rows: {exc}") from None
        for text in ctx.pop("read_notes", []):
            console.print(f"[yellow]note:[/] {escape(text)}", highlight=False)
        out.mkdir(parents=True, exist_ok=True)
        report.write_rows(table, out / report.ROWS_FILE, {k: v for k, v in ctx.items()})
        written = report.write_report(table, ctx, out, plots=not args.no_plots)
        _show(table, written, out, runs=report.run_labels(ctx))
        failures = _failures(table)
        return 1 if failures else 0
    if not args.graphs:
        raise UsageError("give at least one GRAPH (or --from-rows ROWS...)")

    variants = plan_variants(_expand_algorithms(args.algorithms, _csv(args.exclude, "--exclude"), args.backend),
                             ablation=_csv(args.ablation, "--ablation"), baselines=_csv(args.baselines, "--baselines"),
                             locality_k=_ints(args.locality_k), backend=args.backend)
    # a GPU method named explicitly where no GPU can be used: exit 4 (groups skip theirs)
    check_gpu_asked([t for t in _csv(args.algorithms, "--algorithms") if t not in _GROUPS], args.backend,
                    ablation=_csv(args.ablation, "--ablation"))
    settings = BenchSettings(sources=args.sources, min_component=args.min_component, seed=args.seed,
                             runs=args.runs, warmup=args.warmup, batch_size=args.batch_size,
                             count_work=not args.no_count_work,
                             baseline_max_arcs=args.baseline_max_arcs, slow_ms=args.slow_ms,
                             slow_sources=args.slow_sources, graph_time_limit_s=args.graph_time_limit)
    settings.check()  # before any graph is read (run_benchmark checks them too)
    for raw in args.graphs:  # fail early on a missing file, before hours of timing
        if not Path(raw).exists():
            raise FileNotFoundError(f"{shown(raw)}: no such file")
    opts = graph_options(args)
    _check_later_graphs(args.graphs, opts)
    # the first graph before --out gets its partial rows: a refused first input left a
    # new --out folder (empty rows, a summary) behind; kept for the timed pass
    names: set = set()  # the graphs' labels, made distinct
    first = _load_graph(args.graphs[0], opts, names)
    env = environment()
    console.print(f"device: {env.get('gpu') or 'none (CPU only)'}; timing: "
                  + ", ".join(v.label for v in variants), highlight=False, markup=False)
    # before anything is timed: no rows yet, marked partial.  A folder that held an
    # earlier run's finished rows and summary no longer passes them off as this run's
    # when this one is cut short before its first method is done
    report.write_rows(ROW_SCHEMA.empty_table(), out / report.ROWS_FILE,
                      {"env": env, "graphs": [], "notes": [_PARTIAL], "settings": dict(settings.__dict__)})
    report.write_report(ROW_SCHEMA.empty_table(),
                        {"env": env, "graphs": [], "notes": [_PARTIAL], "settings": dict(settings.__dict__)},
                        out, plots=False)

    # one graph at a time: only one graph in memory, and the rows so far are on disk
    # after each method (a run cut short keeps what it measured)
    import pyarrow as pa

    tables, notes, infos = [], [], []
    ctx: dict = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        state = {"task": None}

        def keep(table, graphs, notes_now, settings_now):
            """Rows so far (earlier graphs' and this one's), rows file and summary together."""
            kept = {"env": env, "graphs": infos + graphs, "notes": notes + notes_now + [_PARTIAL],
                    "settings": settings_now}
            so_far = pa.concat_tables([*tables, table])
            report.write_rows(so_far, out / report.ROWS_FILE, kept)
            report.write_report(so_far, kept, out, plots=False)
            state["kept"] = (so_far, kept)

        def progress(event, **info):
            if event == "rows":  # after each method: a run cut short keeps what it measured
                keep(info["table"], info["graphs"], info["notes"], info["settings"])
            elif event == "graph":
                state["task"] = bar.add_task(info["name"], total=info["total"])
            elif event == "step" and state["task"] is not None:
                bar.advance(state["task"], info.get("advance", 1))
            elif event == "note":
                state.setdefault("said", []).append(info["text"])  # (for _stopped)
                bar.console.print(f"[yellow]note:[/] {escape(info['text'])}", highlight=False)

        for k, raw in enumerate(args.graphs):
            try:  # (a later graph's load too: its stop is said in the files as well)
                graph = first if k == 0 else _load_graph(raw, opts, names)
                first = None  # one graph in memory at a time
                outcome = run_benchmark([graph], variants, settings, progress=progress, env=env)
            except (SsspError, KeyboardInterrupt) as exc:  # (a negative cycle; Ctrl-C, SIGTERM):
                # the files say why the run stopped, not "written while the run was still going"
                if isinstance(exc, KeyboardInterrupt):
                    exc = str(exc) or "interrupted (Ctrl-C)"
                _stopped(out, exc, state.get("kept"), tables, {"env": env, "graphs": infos, "notes": notes,
                                                               "settings": dict(settings.__dict__)},
                         state.get("said", []))
                raise
            del graph
            tables.append(outcome.table)
            notes += outcome.notes
            infos += outcome.graphs
            ctx = {"env": env, "graphs": infos, "notes": notes, "settings": outcome.settings}
            table = pa.concat_tables(tables)
            last = k == len(args.graphs) - 1
            kept = ctx if last else {**ctx, "notes": notes + [_PARTIAL]}
            report.write_rows(table, out / report.ROWS_FILE, kept)
            report.write_report(table, kept, out, plots=False)

    table = pa.concat_tables(tables)
    written = report.write_report(table, ctx, out, plots=not args.no_plots)
    _show(table, written, out)
    if not len(table):  # exit 0 said "benchmarked" where nothing was (as `sssp verify` refuses it)
        raise UsageError(f"nothing was measured: every method and baseline asked for was skipped (the notes "
                         f"say why; {shown(written['summary'])})")
    failures = _failures(table)
    return 1 if failures else 0


def _stopped(out: Path, exc, kept, tables, ctx, said=()) -> None:
    """The rows file and summary of a run that stopped on ``exc``: what it measured (the
    last rows kept, or the finished graphs'), its notes (``said``: those told on the way
    too) and one saying why it stopped, in place of "written while the run was still
    going" (and, with no rows, "nothing was measured yet")."""
    import pyarrow as pa

    from gpu_sssp.kernels.errors import render
    from gpu_sssp.pipeline import bench_report as report
    from gpu_sssp.pipeline.bench_protocol import ROW_SCHEMA

    table, context = kept if kept is not None else (
        pa.concat_tables(tables) if tables else ROW_SCHEMA.empty_table(), ctx)
    notes = [n for n in context.get("notes", []) if n != report.PARTIAL_NOTE]
    notes += [n for n in dict.fromkeys(said) if n not in notes]
    context = {**context, "notes": notes + [f"{report.STOPPED_NOTE}{render(str(exc))} (the rows here are what it "
                                            "measured before)"]}
    report.write_rows(table, out / report.ROWS_FILE, context)
    report.write_report(table, context, out, plots=False)


def _failures(table) -> int:
    """Rows not ok (counted on the column: an all-sources run has millions of rows)."""
    import pyarrow.compute as pc

    return len(table) - int(pc.sum(pc.fill_null(table.column("ok"), False)).as_py() or 0)


def _show(table, written, out: Path, runs=None) -> None:
    """The summary table on stdout: one line per (run, graph, method), as in summary.md."""
    from gpu_sssp.pipeline import bench_report as report

    agg = report.aggregate(table, runs=runs)
    sp = {(s["graph"], s["variant"]): s for s in report.speedups(agg)}
    t = Table(title="sssp bench (ms per source)")
    for col in ("graph", "method", "mean", "min", "max", "vs SciPy", "relax/|E|", "ok"):
        # names fold rather than end in '…' (networkit and networkit-spsp were both 'network…')
        t.add_column(col, justify="left" if col in ("graph", "method") else "right",
                     overflow="fold")  # (a number too wide for a terminal wraps, never cut)
    f = report.fmt_number
    for a in agg:
        s = sp.get((a["graph"], a["variant"]))
        t.add_row(escape(a["graph"]), escape(a["variant"]), f(a["mean_ms"]), f(a["min_ms"]), f(a["max_ms"]),
                  (f(s["vs_scipy"]) + "x") if s and s["vs_scipy"] else "-", f(a["relax_per_arc"]),
                  "[green]yes[/]" if not a["failures"] else f"[bold red]{a['failures']} failed[/]")
    print_table(out_console, t)  # (on a pipe or a log at its natural width)
    for n in written.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(n)}", highlight=False)
    files = [out / report.ROWS_FILE, written["summary"], *written["plots"]]
    console.print("wrote " + ", ".join(shown(p) for p in files), highlight=False, markup=False)
    failures = _failures(table)
    if failures:
        console.print(f"[bold red]{counted(failures, 'row')} failed the check against the SciPy reference "
                      f"(see {written['summary']})[/]")
