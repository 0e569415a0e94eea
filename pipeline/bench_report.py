"""Outputs of ``sssp bench``: ``rows.parquet``, ``summary.md`` and PNG plots.

The rows (:data:`pipeline.bench_protocol.ROW_SCHEMA`) carry everything; this module only
aggregates them into the tables the papers print and draws them:

- time per algorithm and graph: mean / min / max over sources and runs, MTEPS,
  edges per second, work efficiency (relax operations / arcs), iterations;
- speedup over ``harish`` and over SciPy Dijkstra (ratios of mean times measured in
  the same run, on the same sources);
- the H-BF and locality ablations: each optimisation switched off in turn against all on;
- time versus ``k`` for ``locality``; edges per second versus graph size for ``edgelist``.

Run context (GPU, driver, versions, sources, notes) travels in the Parquet file's
``sssp`` metadata, so :func:`load_rows` can merge several runs' files and
:func:`write_report` can summarise them together.  Runs are never pooled: merged rows
carry the rows file each came from (:data:`RUN_COLUMN`), every line of the report is
one (run, graph, method), and ratios are taken within one run only; a graph measured in
more than one run gets one line per run, named ``graph (run N)``.  Nothing here prints.
"""
from __future__ import annotations

import json
import logging
import math
import re
from collections import OrderedDict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpu_sssp.kernels.errors import UsageError, counted
from gpu_sssp.pipeline.fsnames import read_table
import contextlib

from gpu_sssp.pipeline.writers import (OutputWriteError, atomic_path, owned_temp_for, remove_abandoned_temporaries,
                                       write_parquet_atomic)
from gpu_sssp.pipeline.bench_protocol import LATER_COLUMNS, ROW_SCHEMA

log = logging.getLogger(__name__)

ROWS_FILE = "rows.parquet"
#: Column added by :func:`load_rows`: the rows file (run) each row came from.  Written
#: with merged rows, so merging those again keeps the runs apart.
RUN_COLUMN = "rows_file"
SUMMARY_FILE = "summary.md"
#: Noted in the rows and summary written while a run goes on (gone from the final ones);
#: the summary tells a run still going (or cut short) by it
PARTIAL_NOTE = ("written while the run was still going: if it was cut short, the methods and graphs after "
                "the last ones here were not measured")
#: The note that starts the one a run that stopped on an error writes in its last rows and
#: summary (``sssp bench`` on a negative cycle: the summary said "nothing was measured
#: yet" and "written while the run was still going")
STOPPED_NOTE = "the run stopped: "
PLOT_FILES = {
    "time": "time_per_graph.png",
    "speedup": "speedup.png",
    "ablation": "ablation.png",
    "locality": "locality_k.png",
    "edgelist": "edgelist_scaling.png",
}


# ----------------------------------------------------------------------------- files
def context_of(outcome) -> dict:
    """The run context stored with the rows."""
    return {"env": outcome.env, "graphs": outcome.graphs, "notes": outcome.notes,
            "settings": outcome.settings}


def write_rows(table: pa.Table, path, context: dict) -> Path:
    """Write the rows atomically with the run context as ``sssp`` metadata (and the
    time written, UTC, shown as the run's date when the rows are merged)."""
    written = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with _output(path):
        write_parquet_atomic(table, path, metadata={"kind": "bench-rows", "written": written, **context},
                             temp_name=owned_temp_for)
    return Path(path)


@contextlib.contextmanager
def _output(path):
    """A bench output written atomically under its own process-named temporary
    (``writers.owned_temp_for``; one a killed run left is removed by a later run,
    :func:`write_report`): a full disk, a file-size limit or the folder removed is one
    line naming the output (:class:`writers.OutputWriteError`), not the system's
    message alone."""
    try:
        yield
    except OutputWriteError:
        raise
    except OSError as exc:
        raise OutputWriteError(path, exc) from None


def load_rows(paths) -> tuple[pa.Table, dict]:
    """Read and concatenate ``rows.parquet`` files (or folders holding one).

    Returns the table, with :data:`RUN_COLUMN` naming each row's run (its rows file; a
    file merged earlier keeps the runs it was merged from), and a merged context: graphs
    (each tagged with its ``run``), notes and environments of all, and ``runs``, one entry
    per run (``file``, ``settings``, ``graphs``, ``written``).  A file given more than once
    (by the same or another name: ``DIR`` and ``DIR/rows.parquet``) is read once; the
    context's ``read_notes`` (also among its ``notes``) says so.

    Raises
    ------
    ValueError
        A file that is not bench rows.
    FileNotFoundError
    """
    tables, ctx = [], {"env": {}, "graphs": [], "notes": [], "settings": {}, "runs": [], "read_notes": []}
    seen: dict[Path, list] = {}  # resolved file -> [name first given, times given]
    used: set[str] = set()

    def unique(label: str, via: Path) -> str:
        new, i = label, 1
        while new in used:
            new = f"{label} via {via}" + (f" #{i}" if i > 1 else "")
            i += 1
        if new != label:
            ctx["notes"].append(f"rows file {label} came in again through {via}: its rows are summarised "
                                "once per time they came in, as separate runs")
        used.add(new)
        return new

    for p in paths:
        p = Path(p)
        if p.is_dir():
            p = p / ROWS_FILE
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such bench rows file")
        if not p.is_file():  # a device or a pipe: pyarrow said only the path (or waited)
            raise UsageError(f"{p}: not a regular file; expected a `sssp bench` rows file or a folder holding one")
        key = p.resolve()
        if key in seen:
            seen[key][1] += 1
            continue
        seen[key] = [p, 1]
        t = read_table(p)
        raw = (t.schema.metadata or {}).get(b"sssp")
        try:
            meta = json.loads(raw) if raw else {}
        except ValueError:
            raise UsageError(f"{p}: its 'sssp' metadata is not valid JSON; not a `sssp bench` rows file "
                             "(or a damaged one)") from None
        if not isinstance(meta, dict) or meta.get("kind") != "bench-rows":
            raise UsageError(f"{p}: not a `sssp bench` rows file (no bench metadata)")
        for col, key in LATER_COLUMNS.items():  # rows written before the column existed
            if col not in t.schema.names:
                value = (meta.get("env") or {}).get(key) if key else None
                t = t.append_column(col, pa.array([None if value is None else str(value)] * len(t),
                                                  ROW_SCHEMA.field(col).type))
        missing = set(ROW_SCHEMA.names) - set(t.schema.names)
        if missing:
            raise UsageError(f"{p}: missing column(s) {sorted(missing)}")
        inner = meta.get("runs") or []
        labels = t.column(RUN_COLUMN).to_pylist() if RUN_COLUMN in t.schema.names else None
        if labels is not None and inner and set(labels) <= {r.get("file") for r in inner}:
            # rows merged before: keep the runs they were merged from apart
            rename = {}
            for run in inner:
                rename[run["file"]] = new = unique(run["file"], p)
                ctx["runs"].append({"env": meta.get("env", {}), **run, "file": new,
                                    "graphs": [{**g, "run": new} for g in run.get("graphs", [])]})
                ctx["graphs"] += ctx["runs"][-1]["graphs"]
            labels = [rename[x] for x in labels]
        else:
            if len(inner) > 1:
                ctx["notes"].append(f"{p}: rows merged from {len(inner)} rows files by an older `sssp bench "
                                    "--from-rows` that did not record which file each row came from: "
                                    "they are summarised as one run")
            label = unique(str(p), p)
            graphs = [{**g, "run": label} for g in meta.get("graphs", [])]
            ctx["runs"].append({"file": label, "settings": meta.get("settings", {}), "graphs": graphs,
                                "written": meta.get("written"), "env": meta.get("env", {})})
            ctx["graphs"] += graphs
            labels = [label] * len(t)
        t = t.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)
        tables.append(t.append_column(RUN_COLUMN, pa.array(labels, pa.string())))
        ctx["env"] = ctx["env"] or meta.get("env", {})
        ctx["notes"] += meta.get("notes", [])
        ctx["settings"] = ctx["settings"] or meta.get("settings", {})
    if not tables:
        raise UsageError("no rows files given")
    ctx["read_notes"] = [f"rows file {name} given {times} times: read once, its rows merged once"
                         for name, times in seen.values() if times > 1]
    ctx["notes"] += ctx["read_notes"]
    return pa.concat_tables(tables), ctx


def run_labels(context: dict) -> list[str]:
    """The runs of a (merged) context in order: run N of the report is entry N - 1."""
    return [r["file"] for r in context.get("runs", [])]


def _line_names(pairs, runs=None) -> dict:
    """``{(run, graph): name}``: the graph's name, or ``graph (run N)`` where more than
    one run holds that graph (N counts ``runs``, then runs met only in ``pairs``)."""
    pairs = list(OrderedDict.fromkeys(pairs))
    order = list(runs or [])
    order += [r for r in OrderedDict.fromkeys(r for r, _ in pairs) if r not in order]
    number = {r: i + 1 for i, r in enumerate(order)}
    in_runs: dict[str, set] = {}
    for r, g in pairs:
        in_runs.setdefault(g, set()).add(r)
    return {(r, g): (f"{g} (run {number[r]})" if len(in_runs[g]) > 1 else g) for r, g in pairs}


def write_report(table: pa.Table, context: dict, outdir, *, plots: bool = True) -> dict:
    """Write ``summary.md`` and the PNG plots into ``outdir``.

    Returns ``{"summary": path, "plots": [paths], "notes": [...]}``; plots are skipped
    (with a note) when matplotlib is not installed.  A plot file of ours that these rows
    do not make (``plots=False``, or a section they lack) is removed: a PNG of an earlier
    run in the same folder would stand beside rows it does not show.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    extra_notes: list[str] = []
    made: list[Path] = []
    if plots:
        try:
            made = make_plots(table, outdir, runs=run_labels(context))
        except ImportError as exc:
            extra_notes.append(f"plots skipped: matplotlib is not installed ({exc}); "
                               "pip install 'gpu-sssp[bench]'")
    for name in set(PLOT_FILES.values()) - {p.name for p in made}:
        try:
            (outdir / name).unlink()
        except FileNotFoundError:
            pass
    text = summary_markdown(table, context, plots=[p.name for p in made], extra_notes=extra_notes)
    spath = outdir / SUMMARY_FILE
    with _output(spath), atomic_path(spath, temp_name=owned_temp_for) as tmp:
        tmp.write_text(text, encoding="utf-8")  # whatever the locale: a graph named beyond ASCII
    # what a killed bench left (its process gone, untouched for 10 minutes): never another's
    for name in (ROWS_FILE, SUMMARY_FILE, *PLOT_FILES.values()):
        remove_abandoned_temporaries(outdir / name)
    return {"summary": spath, "plots": made, "notes": extra_notes}


# ----------------------------------------------------------------------------- aggregation
def _graph_order(recs) -> list[str]:
    return list(OrderedDict.fromkeys(r["graph"] for r in recs))


def _variant_order(recs) -> list[str]:
    return list(OrderedDict.fromkeys(r["variant"] for r in recs))


def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return float(np.mean(xs)) if xs else None


def _numbers(table: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A numeric column as float64 (a null as NaN) and whether each value is set."""
    col = table.column(name)
    valid = col.is_valid().to_numpy(zero_copy_only=False).astype(bool)
    values = col.cast(pa.float64()).fill_null(math.nan).to_numpy()
    return values, valid


def _codes(table: pa.Table, name: str) -> np.ndarray:
    """Each row's value of column ``name`` as a number: its value's place among the
    column's distinct values in order of first appearance (nulls: one value too); all 0
    where the table has no such column."""
    if name not in table.schema.names:
        return np.zeros(len(table), dtype=np.int64)
    col = table.column(name)
    return pc.index_in(col, value_set=col.unique()).to_numpy(zero_copy_only=False).astype(np.int64)


def _mean_of(values: np.ndarray, keep: np.ndarray):
    """:func:`_mean` of ``values[keep]``: NaN (unset) values left out; None when none is left."""
    xs = values[keep & ~np.isnan(values)]
    return float(np.mean(xs)) if len(xs) else None


def aggregate(table: pa.Table, runs=None) -> list[dict]:
    """One dict per (run, graph, variant): count, mean/min/max time, rates, checks.

    Rows of different runs (:data:`RUN_COLUMN`) are never pooled.  ``graph`` is the
    line's name: the graph's, or ``graph (run N)`` where more than one run holds it (N
    counts ``runs``, the context's :func:`run_labels`); ``graph_name`` and ``run`` are
    kept apart too.  Everything keyed by ``graph`` downstream (speedups, ablation,
    plots) therefore stays within one run.

    Computed on the columns (no dict per row): an all-sources run of a road graph has
    millions of rows, and this runs after every method while the bench goes on.
    """
    n = len(table)
    if not n:
        return []
    has_run = RUN_COLUMN in table.schema.names
    run_c, graph_c, var_c = _codes(table, RUN_COLUMN), _codes(table, "graph"), _codes(table, "variant")
    key = (run_c * (int(graph_c.max()) + 1) + graph_c) * (int(var_c.max()) + 1) + var_c
    _, first_idx, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    by_group = np.argsort(inverse, kind="stable")  # each group's rows together, in table order
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    appearance = np.argsort(first_idx, kind="stable")  # the groups in order of their first row

    def first_of(g: int) -> dict:
        i = int(first_idx[g])
        cols = ["graph", "variant", "algorithm", "kind", "role", "options", "arcs", "vertices"]
        out = {c: table.column(c)[i].as_py() for c in cols}
        out[RUN_COLUMN] = table.column(RUN_COLUMN)[i].as_py() if has_run else None
        return out

    firsts = {int(g): first_of(int(g)) for g in appearance}
    names = _line_names([(firsts[g][RUN_COLUMN], firsts[g]["graph"]) for g in firsts], runs)
    # per graph: GPU methods, CPU methods, then the baselines; ablation configurations last
    kind_rank = {"gpu": 0, "cpu": 1, "baseline": 2}
    role_rank = {"main": 0, "sweep": 0, "ablation": 1}
    line = {g: names[f[RUN_COLUMN], f["graph"]] for g, f in firsts.items()}
    graph_rank = {name: i for i, name in enumerate(OrderedDict.fromkeys(line[g] for g in firsts))}
    order = sorted(enumerate(firsts), key=lambda e: (
        graph_rank[line[e[1]]], role_rank.get(firsts[e[1]]["role"], 0), kind_rank.get(firsts[e[1]]["kind"], 3), e[0]))

    time_ms, time_ok = _numbers(table, "time_ms")
    kernel, kernel_ok = _numbers(table, "kernel_ms")
    relax_all, relax_ok = _numbers(table, "relaxations")
    warm, _ = _numbers(table, "warmup_ms")
    iters, _ = _numbers(table, "iterations")
    launches, _ = _numbers(table, "launches")
    syncs, _ = _numbers(table, "host_syncs")
    batch, batch_ok = _numbers(table, "batch_size")
    source = table.column("source").fill_null(-1).to_numpy().astype(np.int64)
    run_no = table.column("run").fill_null(-1).to_numpy().astype(np.int64)
    ok = pc.fill_null(table.column("ok"), False).to_numpy(zero_copy_only=False).astype(bool)
    # a row's rate time: its kernel time where it has a positive one, else its wall time
    # (a kernel time of 0 or unset counts as none; NaN counts as one, as Python's truth)
    kernel_truthy = kernel_ok & (kernel != 0)
    kernel_pos = kernel_ok & (kernel > 0)
    rate_t = np.where(kernel_pos, kernel, time_ms)
    rate_t_ok = kernel_pos | time_ok
    timed = time_ok | kernel_truthy

    out = []
    for _, g in order:
        rows = by_group[starts[g]:starts[g] + counts[g]]
        first = firsts[g]
        arcs = first["arcs"] or 0
        t_ok = time_ok[rows]
        times = time_ms[rows][t_ok]
        # per source (first appearance): the mean of its timed rows
        src_t = source[rows][t_ok]
        uniq, first_at, inv = np.unique(src_t, return_index=True, return_inverse=True)
        sums = np.bincount(inv, weights=times, minlength=len(uniq))
        per = np.bincount(inv, minlength=len(uniq))
        seq = np.argsort(first_at, kind="stable")
        source_ms = dict(zip(uniq[seq].tolist(), (sums[seq] / per[seq]).tolist()))
        relax = _mean_of(relax_all[rows], relax_ok[rows])
        # the rates of the means (as the table's definitions say: arcs / kernel time),
        # not means of per-row rates, which exceed them whenever the times vary
        rate_ms = _mean_of(rate_t[rows], timed[rows] & rate_t_ok[rows])
        relax_ms = _mean_of(rate_t[rows], relax_ok[rows] & timed[rows] & rate_t_ok[rows])
        b = batch[rows]
        out.append({
            "graph": line[g], "graph_name": first["graph"], "run": first[RUN_COLUMN],
            "variant": first["variant"], "algorithm": first["algorithm"], "kind": first["kind"],
            "role": first["role"], "options": json.loads(first["options"] or "{}"), "arcs": arcs,
            "vertices": first["vertices"], "rows": int(len(rows)),
            "sources": int(len(np.unique(source[rows]))), "runs": int(len(np.unique(run_no[rows]))),
            "batch_size": int(np.max(np.where(batch_ok[rows] & (b != 0), b, 1))),
            # the mean kept within min..max: NumPy's mean of equal times (a batched call's,
            # divided per source) can be an ulp off them, which broke the plot's error bars
            "mean_ms": float(np.clip(np.mean(times), np.min(times), np.max(times))) if len(times) else None,
            "min_ms": float(np.min(times)) if len(times) else None,
            "max_ms": float(np.max(times)) if len(times) else None,
            "kernel_ms": _mean_of(kernel[rows], kernel_ok[rows]),
            "warmup_ms": _mean_of(warm[rows], np.ones(len(rows), dtype=bool)),
            "mteps": (arcs / (rate_ms * 1e3)) if rate_ms else None,
            "edges_per_s": (relax / (relax_ms * 1e-3)) if relax_ms else None,
            "relax_per_arc": (relax / arcs) if (relax is not None and arcs) else None,
            "iterations": _mean_of(iters[rows], np.ones(len(rows), dtype=bool)),
            "launches": _mean_of(launches[rows], np.ones(len(rows), dtype=bool)),
            "host_syncs": _mean_of(syncs[rows], np.ones(len(rows), dtype=bool)),
            "failures": int(np.count_nonzero(~ok[rows])),
            "source_ms": source_ms,
        })
    return out


def _anchor_ms(anchor: dict | None, a: dict):
    """The anchor's mean time over the sources ``a`` was timed on, and whether that is
    fewer than the anchor's own (a method cut to --slow-sources sources is compared with
    the anchor on those sources, not on all); ``(None, False)`` without an anchor that
    ran them all correctly."""
    if anchor is None or not anchor["mean_ms"] or anchor["failures"]:
        return None, False
    mine, theirs = a.get("source_ms") or {}, anchor.get("source_ms") or {}
    if not mine or not theirs or set(mine) == set(theirs):
        return anchor["mean_ms"], False
    if not set(mine) <= set(theirs):
        return None, False
    return float(np.mean([theirs[s] for s in mine])), True


#: The anchors of :func:`speedups`: each ratio's key, the Speedup table's heading, whether
#: the column is always shown (else only where a line has the anchor's rows), and how the
#: anchor's line is recognised.  NetworKit: its Dijkstra, one source per call, and its SPSP
#: on every host core (``networkit-spsp``, the many-core anchor).
_ANCHORS = (
    ("vs_harish", "vs harish", True, lambda a: a["variant"] == "harish"),
    ("vs_scipy", "vs SciPy Dijkstra", True, lambda a: a["kind"] == "baseline" and a["algorithm"] == "scipy"),
    ("vs_networkit", "vs NetworKit Dijkstra", False,
     lambda a: a["kind"] == "baseline" and a["algorithm"] == "networkit"),
    ("vs_networkit_spsp", "vs NetworKit SPSP, all cores", False,
     lambda a: a["kind"] == "baseline" and a["algorithm"] == "networkit-spsp"),
)


def speedups(agg: list[dict]) -> list[dict]:
    """Per line (run and graph) and variant: speedup over each anchor of
    :data:`_ANCHORS` (``harish``, SciPy, NetworKit) of the same run (``agg`` from
    :func:`aggregate`, one line per run)."""
    by_graph: "OrderedDict[str, list]" = OrderedDict()
    for a in agg:
        by_graph.setdefault(a["graph"], []).append(a)
    out = []
    for g, items in by_graph.items():
        anchors = [(key, next((a for a in items if is_it(a)), None)) for key, _h, _s, is_it in _ANCHORS]
        for a in items:
            if a["role"] == "ablation" or not a["mean_ms"]:
                continue
            ok = not a["failures"]  # a wrong (or failed) method gets no ratio
            row = {"graph": g, "variant": a["variant"], "kind": a["kind"], "mean_ms": a["mean_ms"]}
            subset = False
            for key, anchor in anchors:
                ms, sub = _anchor_ms(anchor, a)
                row[key] = (ms / a["mean_ms"]) if ms and ok else None
                subset = subset or (sub and bool(ms))
            row.update(failures=a["failures"], sources=len(a.get("source_ms") or {}), subset=subset)
            out.append(row)
    return out


def _times(n, word: str) -> str:
    """``3 timed runs``, ``1 timed run``; a count a rows file does not hold: ``None timed run(s)``."""
    return counted(n, word) if isinstance(n, int) else f"{n} {word}(s)"


def _ratio_cell(s: dict, key: str) -> str:
    if s["failures"]:
        return f"- ({counted(s['failures'], 'row')} failed)"
    if not s[key]:
        return "-"
    return fmt_number(s[key]) + "x"


def ablation(agg: list[dict]) -> list[dict]:
    """Per graph and switched-off optimisation: time against all optimisations on."""
    out = []
    for a in agg:
        if a["role"] != "ablation" or not a["mean_ms"]:
            continue
        base = next((b for b in agg if b["graph"] == a["graph"] and b["algorithm"] == a["algorithm"]
                     and not b["options"]), None)
        off = ", ".join(_switch_name(k, v) for k, v in a["options"].items())
        # all on over the same sources; no slowdown where either side gave wrong answers
        base_ms, _ = _anchor_ms(base, a)
        out.append({
            "graph": a["graph"], "algorithm": a["algorithm"], "off": off, "variant": a["variant"],
            "mean_ms": a["mean_ms"], "all_on_ms": base_ms if base_ms else (base["mean_ms"] if base else None),
            "slowdown": (a["mean_ms"] / base_ms) if base_ms and not a["failures"] else None,
            "failures": a["failures"] + (base["failures"] if base else 0),
            "relax_per_arc": a["relax_per_arc"],
            "all_on_relax_per_arc": base["relax_per_arc"] if base else None,
        })
    return out


def locality_sweep(agg: list[dict]) -> list[dict]:
    return [a for a in agg if a["algorithm"] == "locality" and "k" in a["options"] and a["mean_ms"]]


def edgelist_scaling(agg: list[dict]) -> list[dict]:
    rows = [a for a in agg if a["algorithm"] == "edgelist" and not a["options"] and a["mean_ms"]]
    return sorted(rows, key=lambda a: a["arcs"])


# ----------------------------------------------------------------------------- markdown
def fmt_number(x, digits=3) -> str:
    """A number with about ``digits`` significant digits for the tables ("-" for None/NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    mag = abs(x)
    if mag >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{max(0, digits - 1 - int(math.floor(math.log10(mag))))}f}"


def _rate(x) -> str:
    if x is None:
        return "-"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.3g} {unit}"
    return f"{x:.3g}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    # a '|' in a cell (a graph named p|ipe.gr) is escaped: it split the row's cells
    lines += ["| " + " | ".join(re.sub(r"(?<!\\)\|", r"\|", str(c)) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _count(x) -> str:
    return f"{x:,}" if isinstance(x, int) else str(x)


def _asked(g: dict, asked):
    """The min component asked for graph ``g`` (recorded with it; older rows: the run's)."""
    return g.get("asked_min_component", asked)


def _graph_min_component(g: dict, asked) -> str:
    """The Graphs table's cell: the threshold used, and what was asked when it was lowered."""
    used, want = g.get("min_component"), _asked(g, asked)
    if isinstance(used, int) and isinstance(want, int) and used < want:
        return f"{used:,} (lowered from {want:,})"
    return _count(used)


def _sources_words(asked, graphs, seed=None) -> str:
    """The protocol's sources (and ``seed``, when given): ``N random sources per graph
    (seed S)``, or, where a graph had fewer (``--sources`` above its vertex count, or
    fewer vertices that reach the min component), what was measured there: the count
    asked was shown as if measured."""
    short = [g for g in graphs if isinstance(g.get("sources"), int) and isinstance(asked, int)
             and g["sources"] < asked]
    seeded = [] if seed is None else [f"seed {seed}"]
    if not short:
        return f"{_count(asked)} random sources per graph" + (f" ({seeded[0]})" if seeded else "")

    def why(g) -> str:
        return "every vertex" if g["sources"] == g.get("vertices") else "every vertex that qualifies"

    if len(short) == len(graphs) == 1:
        g = short[0]
        return f"{g['sources']:,} sources (" + "; ".join([why(g), f"{_count(asked)} asked, capped", *seeded]) + ")"
    fewer = ("fewer where there are not that many: "
             + ", ".join(f"{g['sources']:,} on {g['graph']} ({why(g)})" for g in short))
    return f"{_count(asked)} random sources per graph (" + "; ".join([*seeded, fewer]) + ")"


def _lowered(asked, graphs) -> str:
    """`` (lowered to X on G, ...)`` for every graph where the min component asked was
    lowered (too few vertices reach that many there), or ``""``."""
    lowered = [g for g in graphs if isinstance(g.get("min_component"), int)
               and isinstance(_asked(g, asked), int) and g["min_component"] < _asked(g, asked)]
    if not lowered:
        return ""
    return (" (lowered to " + ", ".join(f"{g['min_component']:,} on {g['graph']}" for g in lowered)
            + ": too few vertices reach that many there; see the notes)")


def _machine(env: dict) -> tuple:
    """What a run's header names of its machine: runs that differ in any of it (the
    cores usable too, what ``networkit-spsp`` ran on) each name their own."""
    return (env.get("gpu") or "", env.get("driver") or "", env.get("host") or "", env.get("cpu") or "",
            env.get("cpu_cores") or "")


def _gpu_words(env: dict) -> str:
    return (env.get("gpu") or "none (CPU only)") + (f", driver {env['driver']}" if env.get("driver") else "")


def _host_words(env: dict) -> str:
    cores = f", {env['cpu_cores']} cores usable" if env.get("cpu_cores") else ""
    return f"{env.get('host', '?')} ({env.get('cpu', '?')}{cores})"


def summary_markdown(table: pa.Table, context: dict, *, plots=(), extra_notes=()) -> str:
    """The papers' tables as Markdown."""
    runs = context.get("runs", [])
    agg = aggregate(table, runs=run_labels(context))
    env = context.get("env", {})
    settings = context.get("settings", {})
    out = ["# sssp bench summary", ""]
    # runs merged from different machines: each run names its own (the first run's GPU
    # at the top was taken for all of them)
    per_run_env = len(runs) > 1 and len({_machine(r.get("env") or env) for r in runs}) > 1
    if per_run_env:
        out.append("- GPU and host: differ between the runs; each run below names its own")
    else:
        out.append(f"- GPU: {_gpu_words(env)}")
        out.append(f"- host: {_host_words(env)}")
    vers = env.get("versions", {})
    run_vers = [(r.get("env") or env).get("versions", {}) for r in runs]
    if len(runs) > 1 and any(v != run_vers[0] for v in run_vers):  # code or libraries changed between runs
        for n, v in enumerate(run_vers, 1):
            out.append(f"- versions (run {n}): " + ", ".join(f"{k} {x}" for k, x in sorted(v.items())))
    elif vers:
        out.append("- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(vers.items())))
    if len(runs) > 1:
        for n, run in enumerate(runs, 1):
            s = run["settings"]
            out.append(f"- run {n}: rows from `{run['file']}`"
                       + (f" (written {run['written']})" if run.get("written") else "")
                       + f": {_sources_words(s.get('sources'), run.get('graphs', [])).replace(' random', '')}"
                       + ", min component "
                       f"{_count(s.get('min_component'))}{_lowered(s.get('min_component'), run.get('graphs', []))}, "
                       f"seed {s.get('seed')}, "
                       + (f"batch size {s['batch_size']}, " if s.get("batch_size") else "")
                       + f"{_times(s.get('runs'), 'timed run')} per source, "
                       f"{_times(s.get('warmup'), 'warm-up call')} excluded"
                       + (f"; GPU: {_gpu_words(run.get('env') or {})}; host: {_host_words(run.get('env') or {})}"
                          if per_run_env else ""))
    else:
        out.append(f"- protocol: {_sources_words(settings.get('sources'), context.get('graphs', []), settings.get('seed'))} "
                   f"whose reachable component has at least {_count(settings.get('min_component'))} vertices"
                   f"{_lowered(settings.get('min_component'), context.get('graphs', []))}"
                   f", {_times(settings.get('runs'), 'timed run')} per source, "
                   + (f"{_times(settings.get('warmup'), 'warm-up call')} per method excluded"
                      if settings.get('warmup') != 0 else "no warm-up call (--warmup 0): the first timed call "
                      "includes any compilation and first-use cost"))
    if len(runs) > 1:
        out.append("- within each run every method and baseline ran from the same sources in the same process; "
                   "runs are never pooled: a graph measured in more than one run has one line per run, "
                   "`graph (run N)`, and ratios are taken within one run only")
        out.append("- times are milliseconds per source (a batched call's time divided by its batch size)")
    else:
        out.append("- every method and baseline ran from the same sources in the same process; "
                   "times are milliseconds per source (a batched call's time divided by its batch size)")
    out.append("- `time` is end to end (host to host, the graph already on the device); `kernel` is the "
               "method's device time (a CPU method's own compute time where it reports one, else `time`); `first call` is the first warm-up call (not in `time`: the graph's "
               "upload, compilation, a hierarchy's build or load); "
               "MTEPS = arcs / kernel time; edges/s = relax operations / kernel time; "
               "relax/|E| = relax operations per arc (Dijkstra scans each reached arc once)")
    anchors = sorted({a["algorithm"] for a in agg if a["kind"] == "baseline"})
    if anchors:
        from gpu_sssp.kernels import baselines as bl

        described = [f"`{a}`: {bl.describe(a)}" for a in anchors if a in bl.BASELINES]
        if described:
            out.append("- anchors (CPU baselines): " + "; ".join(described))
    out.append("")

    graphs = context.get("graphs", [])
    if graphs:
        gnames = _line_names([(g.get("run"), g["graph"]) for g in graphs], run_labels(context))
        out += ["## Graphs", ""]
        out.append(_table(["graph", "vertices", "arcs", "weights", "sources", "min component", "fingerprint"],
                          [[gnames[g.get("run"), g["graph"]], f"{g['vertices']:,}", f"{g['arcs']:,}", str(g.get("weights", "")),
                            str(g["sources"]), _graph_min_component(g, settings.get("min_component")),
                            f"`{g['fingerprint']}`"]
                           for g in graphs]))
        out.append("")

    # the failed rows only (every row as a dict was gigabytes on an all-sources run)
    fails = table.filter(pc.invert(pc.fill_null(table.column("ok"), False))).to_pylist()
    out += ["## Correctness", ""]
    if fails:
        out.append(f"**{counted(len(fails), 'row')} FAILED** (wrong answer or error):")
        out.append("")
        seen = set()
        for r in fails:
            key = (r["graph"], r["variant"], r["error"])
            if key in seen:
                continue
            seen.add(key)
            out.append(f"- {r['graph']} / {r['variant']} (source {r['source']}): {r['error']}")
    elif not len(table):
        # "(yet)" only while the run goes on (or where it was cut short): a finished run
        # that measured nothing said it too, as if more were to come
        going = PARTIAL_NOTE in context.get("notes", [])
        stopped = any(str(n).startswith(STOPPED_NOTE) for n in context.get("notes", []))
        out.append("No rows: the run stopped before a method was measured (the notes say why)." if stopped else
                   "No rows: nothing was measured yet." if going else
                   "No rows: nothing was measured (every method and baseline was skipped; see the notes).")
    else:
        checked = all(r.get("settings", {}).get("verify_sources") for r in runs) if runs \
            else bool(settings.get("verify_sources"))
        out.append(f"All {len(table)} rows match the SciPy reference (vertices reached, distance sum "
                   "and eccentricity per source; exact for integer weights)"
                   + (", and every method's whole distance vectors from the first source (the first "
                      f"{settings.get('verify_sources') or 2} for batched methods) equal SciPy's." if checked else "."))
    out.append("")

    out += ["## Time per algorithm and graph", ""]
    for g in _graph_order(agg):
        items = [a for a in agg if a["graph"] == g]
        out += [f"### {g}", ""]
        out.append(_table(
            ["method", "kind", "mean ms", "min ms", "max ms", "kernel ms", "MTEPS", "edges/s",
             "relax/\\|E\\|", "iterations", "launches", "host syncs", "n", "ok", "first call ms"],
            [[a["variant"], a["kind"], fmt_number(a["mean_ms"]), fmt_number(a["min_ms"]), fmt_number(a["max_ms"]),
              fmt_number(a["kernel_ms"]), fmt_number(a["mteps"]), _rate(a["edges_per_s"]), fmt_number(a["relax_per_arc"]),
              fmt_number(a["iterations"]), fmt_number(a["launches"]), fmt_number(a["host_syncs"]), str(a["rows"]),
              "yes" if not a["failures"] else f"**{a['failures']} failed**", fmt_number(a["warmup_ms"])]
             for a in items]))
        out.append("")

    sp = speedups(agg)
    if sp:
        out += ["## Speedup", "",
                "Mean time of the reference divided by the method's mean time, same run, same sources "
                "(> 1: the method is faster); a method with failed rows gets no ratio.", ""]
        shown_anchors = [(key, heading) for key, heading, always, is_it in _ANCHORS
                         if always or any(is_it(a) for a in agg)]
        out.append(_table(["graph", "method", "kind", "mean ms"] + [h for _k, h in shown_anchors],
                          [[s["graph"], s["variant"] + (f" ({s['sources']} sources)" if s["subset"] else ""),
                            s["kind"], fmt_number(s["mean_ms"])] + [_ratio_cell(s, k) for k, _h in shown_anchors]
                           for s in sp]))
        if any(s["subset"] for s in sp):
            out += ["", "A method marked (N sources) was timed on fewer sources than the others "
                    "(--slow-ms); its ratios use the anchors' mean times over those N sources."]
        out.append("")

    ab = ablation(agg)
    if ab:
        out += ["## Ablation", "",
                "Each optimisation switched off in turn, all others on; slowdown = time off / time all on "
                "(> 1: the optimisation pays).", ""]
        out.append(_table(["graph", "method", "switched off", "mean ms", "all on ms", "slowdown",
                           "relax/\\|E\\| off", "relax/\\|E\\| all on"],
                          [[a["graph"], a["algorithm"], a["off"], fmt_number(a["mean_ms"]), fmt_number(a["all_on_ms"]),
                            (fmt_number(a["slowdown"]) + "x") if a["slowdown"] else
                            (f"- ({counted(a['failures'], 'row')} failed)" if a["failures"] else "-"),
                            fmt_number(a["relax_per_arc"]),
                            fmt_number(a["all_on_relax_per_arc"])] for a in ab]))
        out.append("")

    loc = locality_sweep(agg)
    if loc:
        ks = sorted({a["options"]["k"] for a in loc})
        out += ["## locality: time versus k", "", "Mean ms per source.", ""]
        rows = []
        for g in _graph_order(loc):
            byk = {a["options"]["k"]: a["mean_ms"] for a in loc if a["graph"] == g}
            failed = {a["options"]["k"] for a in loc if a["graph"] == g and a["failures"]}
            good = [k for k in byk if k not in failed]  # a wrong configuration is never the best
            best = min(good, key=byk.get) if good else None
            rows.append([g] + [(f"**{fmt_number(byk[k])}**" if k == best else
                                f"{fmt_number(byk.get(k))} (failed)" if k in failed else fmt_number(byk.get(k)))
                               for k in ks])
        out.append(_table(["graph"] + [f"k={k}" for k in ks], rows))
        out.append("")

    el = edgelist_scaling(agg)
    if el:
        out += ["## edgelist: edges per second versus graph size", ""]
        out.append(_table(["graph", "vertices", "arcs", "mean ms", "min ms", "max ms", "edges/s", "MTEPS"],
                          [[a["graph"], f"{a['vertices']:,}", f"{a['arcs']:,}", fmt_number(a["mean_ms"]),
                            fmt_number(a["min_ms"]), fmt_number(a["max_ms"]), _rate(a["edges_per_s"]), fmt_number(a["mteps"])]
                           for a in el]))
        out.append("")

    if plots:
        out += ["## Plots", ""]
        out += [f"![{p}]({p})" for p in plots]
        out.append("")
    notes = list(context.get("notes", [])) + list(extra_notes)
    if notes:
        out += ["## Notes", ""]
        out += [f"- {n}" for n in OrderedDict.fromkeys(notes)]
        out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- plots
_KIND_COLOURS = {"gpu": "#1f77b4", "cpu": "#ff7f0e", "baseline": "#7f7f7f"}


def _grid(n: int, plt, width_per=5.5, height_per=None, rows_hint=1):
    ncols = min(3, max(1, n))
    nrows = math.ceil(n / ncols)
    h = height_per or max(2.5, 0.35 * rows_hint + 1.2)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width_per * ncols, h * nrows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _bar_panels(rows, plt, graphs):
    """One horizontal-bar panel per graph: the figure and, per panel, (axes, graph, the
    graph's rows bottom-up, their y positions)."""
    per = max(len([r for r in rows if r["graph"] == g]) for g in graphs)
    fig, axes = _grid(len(graphs), plt, rows_hint=per)
    panels = []
    for ax, g in zip(axes, graphs):
        items = [r for r in rows if r["graph"] == g][::-1]
        panels.append((ax, g, items, np.arange(len(items))))
    return fig, panels


def _switch_name(key: str, value=False) -> str:
    """The optimisation an ablation row turns off, from the option it sets."""
    if key == "coalesced_enqueue" and value == "warp":
        return "block-staged enqueue (H-BF's warp enqueue instead)"
    if key == "hops":
        return "two-hop relaxation" if value == 1 else f"hops={value}"
    if key == "resident":
        return "block-resident arcs (global-memory kernel, k=1)"
    if key == "prefetch":
        return "distance prefetch with the flags"
    return {"heavy_threshold": "heavy-vertex split"}.get(key, key)


def _log(ax, axis: str = "x") -> None:
    """A log ``axis`` whose ticks read as plain numbers (``0.01``, ``10``): matplotlib's
    log labels are mathtext, which :func:`make_plots` turns off for every text (graph
    names), so they came out as the raw ``$\\mathdefault{10^{-2}}$``."""
    from matplotlib import ticker

    getattr(ax, f"set_{axis}scale")("log")
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
    a.set_minor_formatter(ticker.NullFormatter())


def _scale(ax, lows, highs) -> None:
    """Log axis when the values span more than 20x, else linear from zero."""
    lo = min(x for x in lows if x is not None)
    hi = max(x for x in highs if x is not None)
    if lo > 0 and hi / lo > 20:
        _log(ax, "x")
        ax.set_xlim(lo / 2, hi * 3)
    else:
        ax.set_xlim(0, hi * 1.25)


def device_caption(table: pa.Table) -> str:
    """The machines the rows were timed on, from their ``gpu`` and ``cpu`` columns:
    ``GPU: NVIDIA H200; CPU: AMD EPYC``; merged runs of several machines name each GPU
    with its CPU (``GPU: NVIDIA H200, CPU: Intel Xeon; GPU: none (CPU only), CPU: AMD
    EPYC``: the GPUs and the CPUs listed apart did not say which went together, nor that
    a run had no GPU)."""
    def column(col):
        return table.column(col).to_pylist() if col in table.schema.names else [None] * table.num_rows

    pairs = list(dict.fromkeys(zip(column("gpu"), column("cpu"))))  # in order of first appearance
    words = [f"GPU: {g or 'none (CPU only)'}{';' if len(pairs) == 1 else ','} CPU: {c or 'unknown'}"
             for g, c in pairs or [(None, None)]]
    return "; ".join(words)


def make_plots(table: pa.Table, outdir, runs=None) -> list[Path]:
    """Draw the PNGs that apply to these rows; returns their paths.  Text is drawn as
    it is, never as mathtext: a graph named ``m$^$.gr`` stopped the bench with
    matplotlib's ParseSyntaxException (a traceback, exit 1), and ``d$ol_lar$.gr`` was
    drawn as a formula.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    """
    import matplotlib

    if "text.parse_math" in matplotlib.rcParams:
        with matplotlib.rc_context({"text.parse_math": False}):
            return _make_plots(table, outdir, runs)
    return _make_plots(table, outdir, runs)


def _make_plots(table: pa.Table, outdir, runs=None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    agg = aggregate(table, runs=runs)
    made: list[Path] = []
    graphs = _graph_order(agg)

    caption = device_caption(table)

    def save(fig, key, bottom=0.0):
        path = outdir / PLOT_FILES[key]
        # the machine the times were taken on, on the figure (a plot copied into a
        # document without its summary said nothing of it) and in its PNG metadata
        fig.suptitle(caption, fontsize=8, color="#444444")
        fig.tight_layout(rect=(0, bottom, 1, 0.95 if fig.get_figheight() < 6 else 0.97))
        with _output(path), atomic_path(path, temp_name=owned_temp_for) as tmp:
            fig.savefig(tmp, dpi=110, format="png", metadata={"Description": caption})
        plt.close(fig)
        made.append(path)

    # time per algorithm per graph: horizontal bars, min/max error bars, log scale
    main = [a for a in agg if a["role"] != "ablation" and a["mean_ms"]]
    if main:
        fig, panels = _bar_panels(main, plt, graphs)
        for ax, g, items, y in panels:
            means = np.array([a["mean_ms"] for a in items])
            err = np.array([[a["mean_ms"] - a["min_ms"] for a in items], [a["max_ms"] - a["mean_ms"] for a in items]])
            err = np.maximum(err, 0.0)  # matplotlib refuses a negative error bar
            ax.barh(y, means, xerr=err, capsize=3, color=[_KIND_COLOURS.get(a["kind"], "C0") for a in items],
                    edgecolor=["red" if a["failures"] else "none" for a in items])
            ax.set_yticks(y, [a["variant"] for a in items], fontsize=8)
            _scale(ax, [a["min_ms"] for a in items], [a["max_ms"] for a in items])
            for yi, m in zip(y, means):
                ax.text(m, yi + 0.25, f" {fmt_number(m)}", va="center", fontsize=7)
            ax.set_xlabel("ms per source (mean; whiskers: min..max)")
            ax.set_title(f"{g} ({items[0]['vertices']:,} v, {items[0]['arcs']:,} arcs)", fontsize=10)
            ax.grid(axis="x", which="both", alpha=0.3)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in _KIND_COLOURS.values()]
        fig.legend(handles, ["GPU method", "CPU method", "CPU baseline"], loc="lower center", ncol=3,
                   fontsize=8, frameon=False)
        save(fig, "time", bottom=0.06 if len(graphs) <= 3 else 0.03)

    sp = [s for s in speedups(agg) if s["vs_scipy"]]
    if sp:
        fig, panels = _bar_panels(sp, plt, _graph_order(sp))
        for ax, g, items, y in panels:
            vals = np.array([s["vs_scipy"] for s in items])
            ax.barh(y, vals, color=[_KIND_COLOURS.get(s["kind"], "C0") for s in items])
            ax.set_yticks(y, [s["variant"] for s in items], fontsize=8)
            _scale(ax, list(vals) + [1.0], list(vals) + [1.0])
            ax.axvline(1.0, color="black", lw=0.8)
            for yi, v in zip(y, vals):
                ax.text(v, yi, f" {v:.3g}x", va="center", fontsize=7)
            ax.set_xlabel("speedup over SciPy Dijkstra (same sources, same run)")
            ax.set_title(g, fontsize=10)
            ax.grid(axis="x", which="both", alpha=0.3)
        save(fig, "speedup")

    ab = [a for a in ablation(agg) if a["slowdown"]]
    if ab:
        fig, panels = _bar_panels(ab, plt, _graph_order(ab))
        for ax, g, items, y in panels:
            vals = np.array([a["slowdown"] for a in items])
            # bars grow from 1 (no effect): right = the optimisation pays, left = it costs
            ax.barh(y, vals - 1.0, left=1.0, color=["#2ca02c" if v >= 1 else "#d62728" for v in vals])
            ax.set_yticks(y, [f"{a['algorithm']} without {a['off']}" for a in items], fontsize=8)
            span = max(0.05, float(np.max(np.abs(vals - 1.0))))
            ax.set_xlim(1.0 - 1.3 * span if vals.min() < 1 else 1.0 - 0.1 * span, 1.0 + 1.35 * span)
            ax.axvline(1.0, color="black", lw=0.8)
            for yi, v in zip(y, vals):
                ax.text(v, yi, f" {v:.2f}x " if v >= 1 else f"{v:.2f}x ", va="center", fontsize=7,
                        ha="left" if v >= 1 else "right")
            ax.set_xlabel("time with it off / time all on (> 1: it pays)")
            ax.set_title(g, fontsize=10)
        save(fig, "ablation")

    loc = [a for a in locality_sweep(agg) if not a["failures"]]  # wrong configurations not drawn
    if loc:
        fig, ax = plt.subplots(figsize=(6, 4))
        for g in _graph_order(loc):
            pts = sorted((a["options"]["k"], a["mean_ms"]) for a in loc if a["graph"] == g)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=g)
        ks = sorted({a["options"]["k"] for a in loc})
        ax.set_xticks(ks)
        ax.set_xlabel("k (hops relaxed per step)")
        ax.set_ylabel("ms per source (mean)")
        times = [a["mean_ms"] for a in loc]
        if max(times) / min(times) > 20:
            _log(ax, "y")
        else:
            ax.set_ylim(0, max(times) * 1.15)
        ax.set_title("locality: time versus k")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        save(fig, "locality")

    el = [a for a in edgelist_scaling(agg) if a["edges_per_s"]]
    if el:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([a["arcs"] for a in el], [a["edges_per_s"] for a in el], marker="o")
        for a in el:
            ax.annotate(a["graph"], (a["arcs"], a["edges_per_s"]), fontsize=7,
                        textcoords="offset points", xytext=(3, 3))
        _log(ax, "x")
        _log(ax, "y")
        ax.set_xlabel("arcs")
        ax.set_ylabel("edges processed per second")
        ax.set_title("edgelist: edges/s versus graph size")
        ax.grid(alpha=0.3, which="both")
        save(fig, "edgelist")
    return made
