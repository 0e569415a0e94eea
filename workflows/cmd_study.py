"""`sssp study`: shortest paths from many sources on every worker of a Dask cluster.

Glue only: argument parsing, the progress bar, the dashboard link, the performance
report and the summary table.  The work is in :mod:`pipeline.study`.
"""
from __future__ import annotations

import argparse
import math
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from gpu_sssp.kernels.errors import comma_items, counted
from gpu_sssp.kernels.memory import parse_bytes as _parse_bytes
from gpu_sssp.pipeline.fsnames import shown
from gpu_sssp.workflows.common import (add_graph_options, checked_graph_options, decimal_int, print_error,
                                       print_table, repeated_note)

# status lines stay whole in logs and pipes; plain text (no Rich markup): file names and the
# notes that name them are printed as they are ("g[bold]x.gr" was shown as "gx.gr", and a
# folder "x[/bold]y" stopped the command with Rich's MarkupError after its work was done)
console = Console(soft_wrap=True, markup=False)


def parse_bytes(text: str) -> int:
    """``"20e9"``, ``"300GB"``, ``"1.5T"``, ``"64GiB"`` -> bytes (``kernels.memory.parse_bytes``,
    which the byte-size settings read too)."""
    try:
        return _parse_bytes(text)
    except ValueError as exc:  # not a size, or not a whole number of bytes (1.5)
        raise argparse.ArgumentTypeError(str(exc)) from None
    except OverflowError:  # (1e400: beyond float's range)
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 20e9, 300GB, 1.5TB)") from None


def add_parser(sub) -> None:
    p = sub.add_parser(
        "study", help="shortest paths from many sources on a Dask cluster (stats, distances)",
        description=(
            "Solve SSSP from many sources in batches on every worker of a Dask cluster (one per "
            "GPU, or CPU workers) and write per-source statistics (and distances when asked) as "
            "Parquet into --out, with a manifest, a journal for --resume and a summary."),
        epilog=(
            "Cluster: --scheduler/--scheduler-file attach to a running cluster (the graph file and "
            "--out must then be on a file system every worker reads and writes under the same "
            "path); otherwise a LocalCUDACluster over the local GPUs (--gpus 0,1) or, without GPUs "
            "or with --cpu-workers N, a local CPU cluster.  Settings default from dask config keys "
            "sssp.study.* (see pipeline/sssp.yaml)."),
    )
    add_graph_options(p)
    src = p.add_argument_group("sources (choose one; default: all)")
    src.add_argument("--sources", choices=("all",), help="every vertex")
    src.add_argument("--sources-file", metavar="F.ss", help="DIMACS .ss file (or one id per line)")
    src.add_argument("--random", type=decimal_int, metavar="K", help="K distinct random vertices (with --seed)")
    src.add_argument("--seed", type=decimal_int, default=None, help="seed for --random (default 0)")
    src.add_argument("--source", "-s", type=decimal_int, action="append", metavar="ID",
                     help="a source id as in the input file (repeatable)")
    src.add_argument("--order", choices=("locality", "given"), default=None,
                     help="batch order: locality (sources of one region of the graph together; default) or given")
    mat = p.add_argument_group(
        "travel-time matrix (sources x targets; written to OUT/matrix/, columns in OUT/targets.parquet)")
    mat.add_argument("--targets", metavar="all|FILE",
                     help="every vertex, or a file of target ids (one per line, the input's ids; order and "
                     "repeats kept as the matrix's columns)")
    mat.add_argument("--random-targets", type=decimal_int, metavar="K", help="K distinct random targets (with --target-seed)")
    mat.add_argument("--target-seed", type=decimal_int, default=None, help="seed for --random-targets (default 1)")
    mat.add_argument("--stats-over", choices=("targets", "all"), default=None,
                     help="per-source stats over the distinct targets (default: phast then sweeps only the "
                     "part of the hierarchy the targets need, RPHAST) or over all vertices (the full sweep)")
    mat.add_argument("--matrix-form", choices=("wide", "long"), default=None,
                     help="wide: a row per source with a list of distances (default); long: a row per "
                     "(source, target); +inf where unreachable")
    sol = p.add_argument_group("solving and outputs")
    sol.add_argument("--algorithm", "-m", help="solver name or auto (default; on --resume the study's)")
    sol.add_argument("--batch-size", "-b", type=decimal_int, default=None,
                     help="sources per batch, the unit of the journal, the files and --resume (default: the folder's "
                     "on --resume, else config sssp.study.batch-size; auto = 512 on GPUs, 8192 for phast "
                     "studies of statistics or a matrix on GPUs (fewer for small studies), 256 for those on CPU "
                     "workers, 64 for other CPU studies); tasks solve chunks of several batches, single batches at "
                     "the end")
    sol.add_argument("--outputs", default=None,
                     help="comma list of stats, distances, predecessors (default stats; on --resume the study's)")
    sol.add_argument("--distance-form", choices=("long", "wide"), default=None,
                     help="long: rows (source, vertex, distance, predecessor); wide: vertex + one column per source")
    sol.add_argument("--max-distance-bytes", type=parse_bytes, default=None, metavar="N",
                     help="refuse distance outputs estimated above N bytes (default 20GB; accepts 300GB, 1.5TB)")
    sol.add_argument("--out", "-o", default="study-out", help="study folder (default ./study-out)")
    sol.add_argument("--resume", action="store_true", help="continue the study in --out, skipping finished batches")
    cl = p.add_argument_group("cluster (choose one)")
    cl.add_argument("--scheduler", metavar="ADDRESS", help="attach to a running scheduler, e.g. tcp://host:8786")
    cl.add_argument("--scheduler-file", metavar="F", help="attach through a scheduler file")
    cl.add_argument("--gpus", metavar="0,1", help="local GPUs for a LocalCUDACluster (CUDA_VISIBLE_DEVICES)")
    cl.add_argument("--cpu-workers", type=decimal_int, metavar="N", help="local CPU cluster of N single-thread workers")
    cl.add_argument("--host", metavar="IP",
                    help="interface a local cluster's scheduler and workers listen on (default 127.0.0.1: "
                    "this machine only; 0.0.0.0 opens them, unauthenticated, to the network)")
    cl.add_argument("--dashboard-address", metavar="HOST:PORT",
                    help="where a local cluster serves the Dask dashboard (default HOST:8787 on --host's "
                    "interface; :8787 means every interface)")
    cl.add_argument("--no-dashboard", action="store_true", help="do not serve the Dask dashboard")
    cl.add_argument("--report", metavar="report.html", help="save Dask's performance report here")
    p.set_defaults(func=run)


def _rate(done: int, elapsed: float | None) -> float | None:
    """Sources solved in this run (``done``) over its elapsed time: steadier than a
    moving window, and defined from the first batch on; None before it."""
    return done / elapsed if elapsed and done > 0 else None


#: seconds since the first batch came in from which the rate is the one since then
STEADY_AFTER_S = 2.0


def _steady_rate(done: int, initial: int, elapsed: float | None, first) -> float | None:
    """The rate the ETA is taken from.  ``first``: the elapsed time and count when the
    first batch came in.  The time to the first batch is the workers' start (loading the
    graph, compiling): a rate over it made the first ETA minutes for a study of seconds
    ("ETA 0:05:18", done in 9 s), so at the first report there is none, and from
    :data:`STEADY_AFTER_S` on it is the rate since then.  In between it is the rate
    since the start: batches come in bursts (a chunk's at once), and two reports 0.1 s
    apart are no rate."""
    if first is None or elapsed is None:
        return None
    span = elapsed - first[0]
    if span >= STEADY_AFTER_S:
        return _rate(done - first[1], span)
    return _rate(done - initial, elapsed) if done > first[1] else None


def _task_rate(task) -> float | None:
    return _steady_rate(task.completed, task.fields.get("initial", 0), task.elapsed, task.fields.get("first"))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


def _eta(done: int, total: int | None, speed: float | None) -> str:
    """The time left: the sources left at ``speed`` (:func:`_rate`), rounded up (3,120
    sources left at 5,077 sources/s are not "0:00:00"); "-:--:--" before a rate exists."""
    if total is not None and done >= total:
        return "0:00:00"
    if not speed or total is None:
        return "-:--:--"
    return _clock(math.ceil((total - done) / speed))


class _RateColumn(ProgressColumn):
    def render(self, task) -> Text:
        speed = _task_rate(task) or _rate(task.completed - task.fields.get("initial", 0), task.elapsed)
        return Text(f"{speed:,.1f} sources/s" if speed else "- sources/s", style="progress.data.speed")


class _EtaColumn(ProgressColumn):
    """The sources left over the rate shown beside it (:func:`_rate`).

    Not Rich's ``TimeRemainingColumn``: its speed is the samples of a 30 s window over
    the time between the first and the last of them, and a study's batches arrive in
    bursts (a chunk's batches at once, the workers' chunks close together): two reports
    0.1 s apart made it 0:00:01 with half of all NY's sources still to solve."""

    def render(self, task) -> Text:
        if task.finished:
            return Text("0:00:00", style="progress.remaining")
        return Text(_eta(task.completed, task.total, _task_rate(task)), style="progress.remaining")


#: seconds between the plain progress lines printed where the output is not a terminal
LOG_PROGRESS_S = 30.0


def _progress_line(done: int, total: int, initial: int, elapsed: float | None, first=None) -> str:
    """The progress bar's figures as one line of text, for output that is not a terminal
    (a log file, a batch scheduler's job output), where Rich draws no bar until the end.
    ``first``: the elapsed time and count when the first batch came in (the ETA's rate
    is the one since, :func:`_steady_rate`)."""
    speed = _rate(done - initial, elapsed)
    steady = _steady_rate(done, initial, elapsed, first)
    pct = f" ({100 * done / total:.0f}%)" if total else ""
    return (f"sources {done:,}/{total:,}{pct}, " + (f"{steady or speed:,.1f}" if steady or speed else "-")
            + f" sources/s, elapsed {_clock(elapsed or 0)}, ETA {_eta(done, total, steady)}")


def _fmt(v, integer: bool) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not integer:
        return f"{v:,.6g}"
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.6g}"


def summary_table(s: dict, integer: bool, cluster: bool = True) -> Table:
    """The summary as a table; ``cluster``: this run had a cluster (False: a complete
    study resumed, summarised without one)."""
    t = Table(title=f"study {s['study_id']}: {shown(s['graph'])} ({s['vertices']:,} vertices, {s['arcs']:,} arcs)")
    t.add_column("quantity")
    t.add_column("value", justify="right", overflow="fold")  # (a long number wraps, never cut)
    t.add_column("source", justify="right", overflow="fold")
    t.add_column("note")

    def row(name, d, note=""):
        if d is None:
            t.add_row(name, "-", "", note)
        else:
            t.add_row(name, _fmt(d.get("value"), integer), str(d.get("source", "")), d.get("kind", note))

    t.add_row("sources solved", f"{s['sources_solved']:,} / {s['sources_planned']:,}", "",
              "complete" if s["complete"] else "incomplete")
    if s.get("stats_over") == "targets":
        t.add_row("targets", f"{s['targets']:,}", "", f"{s['distinct_targets']:,} distinct; stats below over them")
        t.add_row("sources reaching every target", f"{s['sources_reaching_all']:,}", "", "")
    else:
        if "targets" in s:  # a matrix study, its statistics over every vertex
            t.add_row("targets", f"{s['targets']:,}", "", f"{s['distinct_targets']:,} distinct; stats below over "
                      "every vertex")
        t.add_row("sources reaching every vertex", f"{s['sources_reaching_all']:,}", "", "")
    row("diameter", s["diameter"])
    row("radius", s["radius"])
    row("largest eccentricity", s["eccentricity_max"],
        "over the targets each source reaches" if s.get("stats_over") == "targets"
        else "over the vertices each source reaches")
    close_note = ("targets reached other than the source / sum of distances" if s.get("stats_over") == "targets"
                  else "(reached-1)/sum of distances")
    row("closeness max", s["closeness_max"], close_note)
    row("closeness min", s["closeness_min"], close_note)
    t.add_row("relaxations", f"{s['relaxations_total']:,}", "", "")
    t.add_row("algorithm" if len(s["algorithms"]) == 1 else "algorithms", ", ".join(s["algorithms"]), "", ", ".join(s["devices"]))
    tm = s["timings"]
    t.add_row("wall (this run)", f"{tm['wall_s']:,.2f} s", "",
              counted(int(tm['workers']), 'worker') if cluster else "no cluster: nothing to solve")
    t.add_row("throughput", _fmt(tm["sources_per_s"], False) + " sources/s" if tm["sources_per_s"] else "-",
              "", f"{counted(tm['sources_this_run'], 'source')} this run")
    # (ms below 0.1 s: 50 rome99 sources on a CPU worker showed "0.00 s" and 158,945% of it)
    kms = tm['kernel_ms_this_run']
    t.add_row("kernel time (this run)", f"{kms / 1e3:,.2f} s" if kms >= 100 or not kms else f"{kms:.2g} ms",
              "", "summed over workers")
    ratio = tm.get("outside_kernels_vs_kernel")
    t.add_row("time outside kernels", f"{tm['outside_kernels_s']:,.2f} s", "",
              f"{ratio * 100:,.0f}% of kernel time (wall x workers - kernel)" if ratio is not None else "")
    st, ct = tm.get("startup") or {}, tm.get("cluster") or {}
    if st:
        # the hierarchy's build on the client is inside the wall (and the time outside
        # kernels): all NY on two CPU workers, 7.5 s of a 91 s wall, unnamed until now;
        # first_batch_s is the last worker's first task done (a guided chunk: 129 batches)
        parts = [f"{name} {st[key]:.2f} s" for name, key in (
            ("cluster", "cluster_start_s"), ("hierarchy", "client_hierarchy_s"),
            ("workers ready", "workers_ready_s"), ("first task done", "first_batch_s"))
            if st.get(key) is not None and (key != "client_hierarchy_s" or st.get("hierarchy_file"))]
        t.add_row("start-up", "", "", ", ".join(parts) or "-")
    if ct:
        busy = ", ".join(f"{w['busy_s']:.2f}" for _, w in sorted(ct.get("workers", {}).items()))
        t.add_row("per-worker busy", f"{busy} s", "",
                  f"tail {ct.get('tail_s', 0.0):.3f} s, idle {ct.get('scheduler_overhead_s', 0.0):.3f} s, "
                  f"{counted(ct.get('tasks', 0), 'task')}")
    return t


def _builds_hierarchy(plan, info: dict) -> bool:
    """Whether the study's client is about to build the graph's contraction hierarchy
    (``pipeline.study.run.register_graph``: the study sweeps one and no cache file is
    beside the graph).  Best effort: False when it cannot tell."""
    try:
        from gpu_sssp.kernels import hierarchy as hmod
        from gpu_sssp.pipeline.hierarchy import cache_path, cached_file, study_uses_phast
        from gpu_sssp.pipeline.study.plan import workers_backend

        if cache_path(plan.graph) is None or cached_file(plan.graph) is not None or hmod.has_hierarchy(plan.graph):
            return False
        backend = workers_backend(info.get("devices") or []) or "auto"
        return study_uses_phast(plan.graph, plan.sources.count, backend, plan.algorithm)
    except Exception:
        return False


def _complete(study) -> bool:
    """Whether ``study``'s folder holds its finished study: the manifest written last by
    ``Study.finish`` says ``complete`` (best effort: False when it cannot be read)."""
    import json

    from gpu_sssp.pipeline.study.folder import MANIFEST

    try:
        m = json.loads((study.out / MANIFEST).read_text())
        return m.get("status") == "complete" and m.get("study_id") == study.plan.study_id
    except Exception:
        return False


def run(args) -> int:
    from gpu_sssp.pipeline.study import StudyError, distance_bytes, fmt_bytes
    from gpu_sssp.pipeline.study.plan import describe_batches
    from gpu_sssp.pipeline.study.run import study as run_study

    # study() refuses, before the graph is read and in the command line's words, a bad
    # --report, --seed without --random, a bad --out, --seed or --target-seed, a GPU
    # method for a local CPU cluster, and a bad --scheduler or --scheduler-file
    if args.outputs is not None and not comma_items(args.outputs, "--outputs", error=StudyError):  # ('' was taken as stats without a word)
        raise StudyError(f"--outputs {args.outputs!r}: no output named; give a comma list of stats, "
                         "distances, predecessors (default stats)")
    if args.targets is not None and not args.targets.strip():
        # (plan_targets' line names the Python parameter, "targets:")
        from gpu_sssp.kernels.errors import UsageError

        raise UsageError("--targets: an empty name is neither 'all' nor a targets file")
    ingest_options = checked_graph_options(args)
    t0 = time.perf_counter()
    # where the output is not a terminal, the plain lines of on_batch stand for the bar
    # (Rich printed the bar once more at its stop, in a log file)
    progress = Progress(TextColumn("[bold]sources"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                        TimeElapsedColumn(), TextColumn("ETA"), _EtaColumn(), console=console,
                        transient=False, disable=not console.is_terminal)
    state: dict = {}

    def on_cluster(info, plan, study):
        no_cluster = info.get("mode") == "none"  # a complete study resumed: summarised without one
        state["study"], graph = study, plan.graph
        state["integer"] = graph.integer_weights
        state["no_cluster"] = no_cluster
        if not no_cluster:
            console.print(f"cluster: {info['mode']}, {counted(int(info['workers']), 'worker')} on "
                          f"{', '.join(info['devices']) or '-'} (ready in {time.perf_counter() - t0:.1f} s)")
        if not args.no_dashboard:
            # the scheduler's word (pipeline.cluster.ClusterHandle.dashboard): a scheduler
            # started with --no-dashboard still reports an HTTP port, whose /status is a 404
            if info.get("dashboard"):
                page = info.get("study_page")
                console.print(f"dashboard: {info['dashboard']}" + (f" (this study: {page})" if page else ""))
            elif info.get("dashboard_note"):
                console.print(f"dashboard: none ({info['dashboard_note']})", highlight=False)
        for what in info.get("exposed", []):  # (from Python: pipeline.cluster.NetworkExposureWarning)
            console.print(f"note: {what}", highlight=False)
        if plan.targets is not None:
            console.print(f"matrix: {counted(plan.sources.count, 'source')} x {counted(plan.targets.count, 'target')} "
                          f"({plan.targets.how['kind']}), up to {fmt_bytes(plan.distance_estimate)} before "
                          f"compression ({plan.matrix_form} form); stats over "
                          + ("the targets" if plan.stats_over == "targets" else "all vertices"))
        if {"distances", "predecessors"} & set(plan.outputs):
            est = distance_bytes(plan.sources.count, graph.n, plan.distance_form, "predecessors" in plan.outputs)
            console.print(f"distance outputs: up to {fmt_bytes(est)} before compression "
                          f"({counted(plan.sources.count, 'source')} x {counted(graph.n, 'vertex', 'vertices')}, "
                          f"{plan.distance_form} form)")
        dropped = int(plan.sources.how.get("duplicates_dropped", 0) or 0)
        if dropped:
            console.print(repeated_note(dropped, plan.sources.count), highlight=False)
        if getattr(study, "nothing_to_resume", False):
            # (the folder's settings - a matrix study's targets, --stats-over, --matrix-form -
            # are taken over only from a recorded study)
            why = ("did not exist (a new folder: check --out)" if getattr(study, "_created", False)
                   else "holds no study yet (a run stopped before recording it)")
            console.print(f"note: {shown(args.out)} {why}: starting the study as given"
                          + (", without targets: give --targets (or --random-targets) again for a matrix study"
                             if plan.targets is None else ""), highlight=False)
        if args.resume and study.redone:
            console.print(f"note: {study.redone_note()}")
        adopted = getattr(study, "adopted", None)
        if args.resume and adopted:
            # (said nowhere but in the manifest: the "to do" count below looked short)
            console.print(f"note: {counted(len(adopted), 'batch', 'batches')} the stopped run wrote but had not "
                          f"journaled {'is' if len(adopted) == 1 else 'are'} complete: journaled now, not solved "
                          "again", highlight=False)
        if args.resume and not study.pending:
            console.print(f"{shown(args.out)}: " + ("the one batch" if len(plan.batches) == 1 else
                                                     f"all {len(plan.batches):,} batches") + " already done; summarising"
                          + (" (no cluster started)" if no_cluster else ""))
        # the batches as laid out (a default batch size is spread over the workers)
        console.print(f"study {plan.study_id}: {counted(plan.sources.count, 'source')} ({plan.sources.how['kind']}) in "
                      f"{describe_batches(plan.batches)}, {len(study.pending):,} to do -> {shown(args.out)}")
        if study.pending and _builds_hierarchy(plan, info):  # (a resume may be the run that builds it)
            # the bar would stand at 0 meanwhile (NY 7.5 s, BAY 5.8 s on the 2-core machine)
            from gpu_sssp.pipeline.hierarchy import cache_path, cache_place

            place = cache_place(plan.graph)
            where = ("beside the graph file" if place == cache_path(plan.graph)
                     else shown(place))  # (a read-only data folder: the user's cache)
            console.print(f"note: building the contraction hierarchy of {shown(graph.name)} for phast first "
                          f"(once: later studies of this graph load it from {where})",
                          highlight=False)
        state["plan"] = plan
        state["task"] = progress.add_task("study", total=plan.sources.count, completed=study.sources_done,
                                          initial=study.sources_done)
        progress.start()

    def log_progress(done: int) -> None:
        """One plain progress line (the output is not a terminal) at ``done`` sources."""
        task = progress.tasks[0]
        state["logged_done"] = done
        console.print(_progress_line(done, int(task.total), task.fields.get("initial", 0), task.elapsed,
                                     task.fields.get("first")), highlight=False)

    def on_batch(meta, _study):
        progress.advance(state["task"], meta["rows"])
        task = progress.tasks[0]
        if "first" not in task.fields:  # (the rates from here on: _steady_rate; the count of
            # the whole first report, whose batches come here one by one)
            progress.update(state["task"], first=(task.elapsed or 0.0, _study.sources_done))
        if not console.is_terminal:  # no live bar: a line now and then (the first at once)
            now = time.perf_counter()
            # (a chunk's other batches add nothing to the count already said)
            if (now - state.get("logged", -LOG_PROGRESS_S) >= LOG_PROGRESS_S
                    and _study.sources_done != state.get("logged_done")):
                state["logged"] = now
                # the study's count: a chunk's batches are journaled together, before
                # this is called for each of them (the bar's count is at the first)
                log_progress(_study.sources_done)

    import warnings

    import contextlib

    from gpu_sssp.pipeline.cluster import NetworkExposureWarning, worker_restarts_said

    try:
        # the performance report needs the study's client: entered inside, once it exists
        with warnings.catch_warnings(), (  # (this run only: not the process's later studies from Python)
                # a local worker's death in the study's words (-vv: Dask's own line)
                worker_restarts_said(lambda line: console.print(f"note: {line}", highlight=False))
                if getattr(args, "verbose", 0) < 2 else contextlib.nullcontext()):
            # said as note: lines by on_cluster, once
            warnings.filterwarnings("ignore", category=NetworkExposureWarning)
            summary = run_study(
                args.graph, sources=args.sources, ids=args.source, sources_file=args.sources_file,
                random=args.random, seed=args.seed, order=args.order, algorithm=args.algorithm,
                batch_size=args.batch_size, outputs=args.outputs, distance_form=args.distance_form,
                max_distance_bytes=args.max_distance_bytes, out=args.out, resume=args.resume,
                scheduler=args.scheduler, scheduler_file=args.scheduler_file, gpus=args.gpus,
                cpu_workers=args.cpu_workers, dashboard=not args.no_dashboard,
                host=args.host, dashboard_address=args.dashboard_address,
                on_cluster=on_cluster, on_batch=on_batch, on_wait=lambda line: console.print(f"note: {line}"),
                # this run's start (its manifest says "running" from then until its end): a
                # failure after a complete study's summary is told from one before the run
                on_start=lambda _study: state.__setitem__("started", True),
                targets=args.targets,
                random_targets=args.random_targets, target_seed=args.target_seed, stats_over=args.stats_over,
                matrix_form=args.matrix_form, report=args.report, **ingest_options)
    except BaseException as exc:
        # the error itself is printed once, as one line, by the CLI (last)
        if "task" in state:
            progress.stop()
        # the folder's study is complete: this run completed it (it started, and its
        # summary and final manifest are written), or it was complete before this run
        # (a --resume), which stopped before it started (the performance report entered
        # with a cluster, or anything before the run's start)
        complete = "study" in state and _complete(state["study"])
        before = ("it was complete before this run, which {} before it began (summary.json and "
                  "manifest.json are those of the run that completed it)")
        if isinstance(exc, KeyboardInterrupt) and complete:
            # Ctrl-C once the summary and the final manifest were written (while the
            # cluster closes), or before a resume's run began: nothing to resume; 128 +
            # the signal all the same
            if state.get("started"):
                print_error(f"the study in {shown(args.out)} is complete (summary.json)",
                            label="stopped while closing the cluster")
            else:
                print_error(f"the study in {shown(args.out)} is complete (summary.json), nothing to resume; "
                            + before.format("was stopped"), label="stopped")
            return 128 + int(getattr(exc, "signum", 2))
        if complete and isinstance(exc, Exception):
            # a failure once the study was complete (its summary and final manifest
            # written): the performance report, written last, or the cluster's close;
            # or before the run of a complete study resumed; a --resume would only
            # summarise it again
            from gpu_sssp.pipeline.cluster import ReportNotWrittenError

            if isinstance(exc, ReportNotWrittenError):  # raised once the run's block ended well
                what = "only its report (--report) was not written: Dask's report of a run cannot be made again"
            elif state.get("started"):
                what = "what failed came after it"
            else:
                what = before.format("failed")
            print_error(f"the study in {shown(args.out)} is complete (summary.json), nothing to resume; {what}",
                        label="note")
            raise
        if "study" in state and not isinstance(exc, StudyError):
            fix = "" if isinstance(exc, KeyboardInterrupt) else "fix the cause and "
            then = f"{fix}add --resume to continue"
            from gpu_sssp.kernels import NegativeCycleError  # here: the module loads light

            if isinstance(exc, NegativeCycleError):
                # nothing to fix for a resume: the same graph meets the same cycle, and a
                # graph without it has another fingerprint, whose resume is refused
                then = ("a --resume stops at the same negative cycle; a graph without it is "
                        "another study (another --out)")
            study = state["study"]
            written = study.unjournaled_files()
            more = (f" and {counted(written, 'more batch', 'more batches')} {'was' if written == 1 else 'were'} "
                    "written but not yet journaled (--resume keeps the "
                    "complete ones)"
                    if written else "")
            if args.scheduler or args.scheduler_file:
                # an attached cluster outlives the client: its running tasks go on writing
                more += ("; tasks still running on the attached cluster may write more batches "
                         "(--resume keeps the complete ones)")
            if not study.pending and not isinstance(exc, NegativeCycleError):
                # stopped after the last batch, before the summary: nothing is left to solve
                print_error(f"every batch of the study ({len(study.done)}) is recorded in {shown(args.out)}; "
                            "add --resume to write its summary (nothing is solved again)", label="note")
            else:
                done = len(study.done)
                print_error(f"{counted(done, 'finished batch', 'finished batches')} {'is' if done == 1 else 'are'} "
                            f"recorded in {shown(args.out)}{more}; {then}",
                            label="note")
        raise
    progress.stop()
    if not console.is_terminal and "task" in state and state.get("logged_done") != state["study"].sources_done:
        log_progress(state["study"].sources_done)  # the last line, as the bar's last state was
    print_table(console, summary_table(summary, state["integer"], cluster=not state.get("no_cluster")))
    folders = ([shown(f"{args.out}/matrix/"), "targets.parquet"] if "targets" in summary
               else [shown(f"{args.out}/{d}/") for d in state["plan"].distance_folders])
    stats = shown(f"{args.out}/stats/")  # (a name with a line break is quoted, escaped)
    console.print(f"wrote {''.join(f + ', ' for f in folders)}{stats} ({counted(summary['sources_solved'], 'row')}), "
                  "manifest.json, summary.json" + (f"; report {shown(args.report)}" if args.report else ""))
    return 0
