"""The benchmark protocol of ``sssp bench``: sources, timed runs, checked answers.

The five papers measure the same way: draw random sources whose reachable component
is large (H-BF: 100 sources, at least 1e5 vertices reachable), run every algorithm
from the same sources, report the average time with its minimum and maximum, and
derived rates (MTEPS, edges per second, relax operations per edge).  This module
does exactly that, on one device, without Dask:

- :func:`draw_sources` picks the sources (the threshold is lowered, with a note, on
  graphs too small for it);
- :func:`plan_variants` expands algorithms, H-BF ablations, the locality ``k`` sweep
  and the CPU baselines into the list of configurations to time;
- :func:`run_benchmark` times them all on the same sources (warm-up calls excluded),
  checks every answer against SciPy's, and returns one Arrow row per
  (graph, configuration, source, run) in :data:`ROW_SCHEMA`.

Rendering the rows (Markdown tables, PNG plots) lives in :mod:`pipeline.bench_report`.
Nothing here prints; notes are returned and logged.

Definitions used in every row:

- ``time_ms``: wall time of the call as a user sees it (host to host, results back);
  batched methods solve a batch per call and the call's time is divided by its size.
- ``kernel_ms``: the method's own device time (``Result.counters["kernel_ms"]``);
  for a CPU method its own compute time where it reports one (the same counter: CPU
  ``dijkstra`` and ``phast@cpu`` do, a little under ``time_ms``), else ``time_ms``; for
  the baselines the same as ``time_ms``.
- ``warmup_ms``: wall time of the variant's first warm-up call (untimed: the graph's
  upload, kernel compilation, a hierarchy's build or load happen there), the same on
  each of its rows; None without warm-up and for the SciPy reference.
- ``mteps``: arcs of the graph / kernel time (H-BF's traversed-edges rate);
  ``edges_per_s``: relax operations / kernel time (the edge-list paper's rate).
- ``checksum``: sum of the finite distances + number of vertices reached (computed in
  int64 for integer weights, so exact); ``ok`` says whether the answer (vertices
  reached, distance sum, eccentricity) equals the SciPy reference's, and whether the
  variant's whole distance vectors from the first :data:`VERIFY_SOURCES` sources (one
  untimed call) equal SciPy's: a variant that fails that check has every row not ok.
"""
from __future__ import annotations

import json
import logging
import math
import platform
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from gpu_sssp.kernels.errors import UsageError, render
from gpu_sssp.kernels.errors import counted as _counted
from gpu_sssp.pipeline.sources import check_seed

log = logging.getLogger(__name__)

#: H-BF's per-optimisation switches, and our two additions; the ablation turns each off
#: in turn (one at a time, the others at their defaults).
HBF_ABLATION = (
    ("edge_classes", {"edge_classes": False}),
    ("dedup64", {"dedup64": False}),
    ("coalesced_enqueue", {"coalesced_enqueue": False}),  # neither warp nor block aggregation
    ("virtual_warps", {"virtual_warps": False}),
    # no separate path for high-degree vertices (hbf: 0 or None turns it off)
    ("heavy_threshold", {"heavy_threshold": 0}),
    # additions: the block-staged enqueue (off = H-BF's warp enqueue) and the two-hop
    # relaxation (off = H-BF's one hop per round; the default uses two on sparse graphs)
    ("block_enqueue", {"coalesced_enqueue": "warp"}),
    ("two_hop", {"hops": 1}),
)
#: locality's additions (the paper's method is the global-memory kernel): the
#: block-resident arcs (off = the global kernel, whose best k is 1) and the distance
#: prefetch with the flags.
LOCALITY_ABLATION = (
    ("resident_arcs", {"resident": False}),
    ("prefetch", {"prefetch": False}),
)
ABLATIONS = {"hbf": HBF_ABLATION, "locality": LOCALITY_ABLATION}

#: Methods that solve many sources per call (timed per batch, divided by its size).
BATCHED_METHODS = {"batched", "phast"}

#: Sources (the first ones drawn) whose whole distance vectors are compared with SciPy's
#: for every variant, in one untimed call after its timed runs: the statistics compared
#: for every row (vertices reached, distance sum, eccentricity) cannot see distances
#: put at the wrong vertices.
VERIFY_SOURCES = 2

ROW_SCHEMA = pa.schema(
    [
        ("graph", pa.string()),
        ("fingerprint", pa.string()),
        ("vertices", pa.int64()),
        ("arcs", pa.int64()),
        ("algorithm", pa.string()),
        ("kind", pa.string()),  # gpu | cpu | baseline
        ("variant", pa.string()),  # algorithm plus its non-default options, e.g. hbf[dedup64=off]
        ("role", pa.string()),  # main | ablation | sweep
        ("options", pa.string()),  # JSON
        ("source", pa.int64()),  # the input file's id
        ("run", pa.int32()),
        ("batch_size", pa.int32()),
        ("time_ms", pa.float64()),
        ("kernel_ms", pa.float64()),
        ("iterations", pa.int64()),
        ("launches", pa.float64()),  # per source (a batched call's count / batch size)
        ("host_syncs", pa.float64()),
        ("relaxations", pa.int64()),
        ("mteps", pa.float64()),
        ("edges_per_s", pa.float64()),
        ("reached", pa.int64()),
        ("checksum", pa.float64()),
        ("ref_checksum", pa.float64()),
        ("ok", pa.bool_()),
        ("error", pa.string()),
        ("device", pa.string()),
        ("gpu", pa.string()),
        ("driver", pa.string()),
        ("versions", pa.string()),  # JSON
        ("cpu", pa.string()),  # the host CPU's model (the anchors and CPU methods ran on it)
        ("warmup_ms", pa.float64()),  # the variant's first untimed call (upload, compile, preprocess)
    ]
)
#: Columns added after rows were first written: a rows file without them is read with
#: the value from its run's context (``env``; None for a key it does not have) instead.
LATER_COLUMNS = {"cpu": "cpu", "warmup_ms": None}


# ----------------------------------------------------------------------------- sources
@dataclass
class SourceDraw:
    """Random sources of one graph and how they were chosen."""

    sources: np.ndarray  # internal indices
    min_component: int  # the threshold actually used
    asked_min_component: int
    notes: list[str] = field(default_factory=list)


def draw_sources(graph, count: int, *, min_component: int = 100_000, seed: int = 0,
                 max_checks: int = 2000) -> SourceDraw:
    """Draw ``count`` distinct random sources that each reach ``min_component`` vertices.

    As in the H-BF paper: a vertex qualifies when at least ``min_component`` vertices
    (itself included) are reachable from it.  Candidates are visited in a seeded random
    order.  A vertex in a strongly connected component at least that large qualifies
    at once; others are checked by a breadth-first search (at most ``max_checks``).
    On a graph whose largest weakly connected component is smaller than the
    threshold, it is lowered to half that component, and halved again while too few
    vertices qualify; each change is reported in ``notes``.

    Raises
    ------
    ValueError
        ``count`` < 1 or the graph has no vertex.
    """
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    count = int(count)
    if count < 1:
        raise UsageError(f"--sources must be at least 1, got {count}")
    if graph.n == 0:
        raise UsageError(f"{graph.name} has no vertices")
    asked = int(min_component)
    notes: list[str] = []
    pat = graph.pattern()
    _, weak = connected_components(pat, directed=True, connection="weak")
    largest_weak = int(np.bincount(weak).max())
    threshold = max(1, asked)
    if threshold > largest_weak:
        threshold = max(1, largest_weak // 2)
        notes.append(f"{graph.name}: no component has {asked:,} vertices (largest: {largest_weak:,}); "
                     f"min-component lowered to {threshold:,}")
    if graph.directed:
        _, strong = connected_components(pat, directed=True, connection="strong")
    else:
        strong = weak
    comp_size = np.bincount(strong)[strong]
    rng = np.random.default_rng(check_seed(seed, "--seed"))
    order = rng.permutation(graph.n)
    reach_cache: dict[int, int] = {}

    def reach(v: int) -> int:
        if v not in reach_cache:
            reach_cache[v] = len(breadth_first_order(pat, v, directed=True, return_predecessors=False))
        return reach_cache[v]

    while True:
        picked: list[int] = []
        checks = 0
        for v in order:
            v = int(v)
            if comp_size[v] >= threshold:
                picked.append(v)
            elif graph.directed and checks < max_checks:
                checks += 1
                if reach(v) >= threshold:
                    picked.append(v)
            if len(picked) == count:
                break
        # every vertex qualifies already (more sources asked than there are vertices):
        # a lower threshold cannot add one
        if len(picked) == count or threshold == 1 or len(picked) == graph.n:
            break
        lower = max(1, threshold // 2)
        capped = graph.directed and checks >= max_checks  # not every vertex was searched from
        notes.append(f"{graph.name}: only {len(picked):,} vertices "
                     + (f"(of those in a component that large and {max_checks:,} searched from) " if capped else "")
                     + f"reach {threshold:,} vertices; min-component lowered to {lower:,}")
        threshold = lower
    if len(picked) < count:
        notes.append(f"{graph.name}: only {len(picked):,} distinct sources available (asked {count:,})")
    for note in notes:
        log.info(note)
    return SourceDraw(np.asarray(picked, dtype=np.int64), threshold, asked, notes)


# ----------------------------------------------------------------------------- variants
@dataclass(frozen=True)
class Variant:
    """One configuration to time: a registered method with options, or a baseline."""

    algorithm: str
    kind: str  # "gpu" | "cpu" | "baseline"
    options: tuple = ()  # sorted (key, value) pairs
    role: str = "main"  # main | ablation | sweep
    ablates: str = ""  # for role == "ablation": the optimisation switched off

    @property
    def options_dict(self) -> dict:
        return dict(self.options)

    @property
    def name(self) -> str:
        """The method as the tables name it: ``phast`` on the GPU, ``phast@cpu`` on the
        CPU (a name registered on both backends; ``kernels.registry.method_label``)."""
        if self.kind == "baseline":
            return self.algorithm
        from gpu_sssp.kernels.registry import method_label

        try:
            return method_label(self.algorithm, self.kind)
        except ValueError:  # not registered here (rows summarised elsewhere)
            return self.algorithm

    @property
    def label(self) -> str:
        if not self.options:
            return self.name
        parts = []
        for k, v in self.options:
            if v is False:
                parts.append(f"{k}=off")
            elif v is True:
                parts.append(f"{k}=on")
            else:
                parts.append(f"{k}={v}")
        return f"{self.name}[{','.join(parts)}]"

    @property
    def batched(self) -> bool:
        """Many sources per call (timed per call, divided by its size)."""
        if self.kind == "baseline":
            from gpu_sssp.kernels.baselines import BATCHED_BASELINES

            return self.algorithm in BATCHED_BASELINES
        return self.algorithm in BATCHED_METHODS


def _opts(d: dict) -> tuple:
    return tuple(sorted(d.items()))


def plan_variants(algorithms, *, ablation=(), baselines=("scipy",), locality_k=(1, 2, 3, 4, 5),
                  backend: str = "auto"):
    """Expand the command line's choices into the configurations to time.

    ``locality`` is timed once per ``k`` in ``locality_k``; each name in ``ablation``
    (``hbf``, ``locality``) adds its all-on run (if not asked already) and one run per
    optimisation switched off.  Baselines come last.  A name may carry its backend
    (``phast@cpu``); without one, ``backend`` decides (``auto``: the method's own; for a
    name registered on both backends, the GPU when a device is visible,
    ``kernels.registry.method_spec``).

    Raises
    ------
    ValueError
        An unknown method, ablation or baseline.
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels import baselines as bl

    registered = set(kernels.available_methods()) - {"auto"}
    out: list[Variant] = []
    seen = set()

    def add(v: Variant):
        if (v.algorithm, v.kind, v.options) not in seen:
            seen.add((v.algorithm, v.kind, v.options))
            out.append(v)

    for token in algorithms:
        name = str(token).partition("@")[0]
        # each refusal names the option it came from (the command line's promise)
        if name == "auto":
            raise UsageError("--algorithms auto: bench times named methods; 'auto' is not one "
                             "(name the method it picks)")
        if name not in registered:
            raise UsageError(f"--algorithms {token}: unknown method {name!r}; registered: "
                             f"{', '.join(sorted(registered))}")
        try:
            name, kind = kernels.registry.method_spec(token, backend)
        except UsageError as exc:
            by = f" (--backend {backend})" if backend != "auto" and "@" not in str(token) else ""
            raise UsageError(f"--algorithms {token}{by}: {exc}") from None
        if name == "locality" and locality_k:
            for k in locality_k:
                add(Variant(name, kind, _opts({"k": int(k)}), role="sweep"))
        else:
            add(Variant(name, kind))
    for name in ablation:
        if name not in ABLATIONS:
            raise UsageError(f"--ablation {name}: no ablation is defined for {name!r} (known: {', '.join(ABLATIONS)})")
        if name not in registered:
            raise UsageError(f"--ablation {name}: method {name!r} is not registered here")
        kind = kernels.registry.method_spec(name)[1]  # the ablations are of one backend's method
        add(Variant(name, kind))
        for what, opts in ABLATIONS[name]:
            add(Variant(name, kind, _opts(opts), role="ablation", ablates=what))
    for name in baselines:
        if name not in bl.BASELINES:
            raise UsageError(f"--baselines {name}: unknown baseline {name!r}; choose from {', '.join(bl.BASELINES)}")
        add(Variant(name, "baseline"))
    return out


def check_gpu_asked(tokens, backend: str = "auto", *, ablation=()) -> None:
    """Refuse a GPU method named explicitly (``hbf``, ``phast@gpu``, a bare ``phast``
    with ``--backend gpu``, an ``--ablation`` of a GPU method) where no CUDA device is
    visible: the command line's exit 4, as ``sssp verify --methods hbf``.  Groups
    (``gpu``, ``cpu``, ``all``) are not passed here: their GPU methods are skipped with
    a note.  ``ablation``: the ``--ablation`` methods, named with that option.

    Raises
    ------
    kernels.errors.GPUUnavailableError
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import GPUUnavailableError

    if kernels.device_count() > 0:
        return
    gpu = []
    for token in tokens:
        name, b = kernels.registry.method_spec(token, backend)
        if b == "gpu":
            gpu.append(str(token))
    if gpu:
        raise GPUUnavailableError(
            f"{', '.join(gpu)}: {'a GPU method needs' if len(gpu) == 1 else 'GPU methods need'} a CUDA device; "
            "none is visible here (--algorithms cpu times the CPU methods; NAME@cpu the CPU one of a method "
            "on both backends)")
    gpu = [str(token) for token in ablation if kernels.registry.method_spec(token, backend)[1] == "gpu"]
    if gpu:
        raise GPUUnavailableError(
            f"--ablation {','.join(gpu)}: the ablation of a GPU method needs a CUDA device; none is visible "
            "here (drop --ablation, or run it on a GPU machine)")


# ----------------------------------------------------------------------------- environment
def cpu_model() -> str:
    """The host CPU's model name (``/proc/cpuinfo``'s ``model name`` on Linux, where
    ``platform.processor()`` says only ``x86_64``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def source_commit() -> str | None:
    """The git commit of the code that runs (``+dirty`` with uncommitted changes), when
    it runs from a git checkout (the package version does not change between commits,
    and BENCHMARKS.md names runs by commit); None otherwise."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        lines = head.stdout.splitlines()
        if head.returncode != 0 or len(lines) != 2 or not lines[1].strip():
            return None
        # the checkout's own pipeline/; an installed copy in a repository of something
        # else (a project's .venv/.../gpu_sssp/pipeline) is not that repository's code
        if Path(lines[0]).resolve() != here.parent:
            return None
        head.stdout = lines[1]
        # --no-optional-locks: a plain status refreshes the index, taking .git/index.lock;
        # a bench under `ulimit -f` was killed while writing it and left the lock behind,
        # and every later git command in the user's checkout failed on it
        dirty = subprocess.run(["git", "--no-optional-locks", "-C", str(here), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


def environment() -> dict:
    """GPU name, driver and library versions (empty GPU fields without a device)."""
    import importlib.metadata as md

    from gpu_sssp import kernels
    from gpu_sssp.kernels import baselines as bl

    versions = {"python": platform.python_version()}
    for dist in ("gpu-sssp", "numpy", "scipy", "pyarrow", "cupy-cuda13x", "cupy-cuda12x", "cupy"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    for name in ("networkit", "rustworkx"):
        v = bl.version(name)
        if v:
            versions[name] = v
    commit = source_commit()
    if commit:
        versions["gpu-sssp-commit"] = commit
    env = {"gpu": "", "driver": "", "versions": versions, "host": platform.node(),
           "cpu": cpu_model(), "cpu_cores": bl.host_threads()}  # the cores networkit-spsp runs on
    if kernels.device_count() > 0:
        try:
            info = kernels.device_info()
            env["gpu"], env["driver"] = info["gpu"], info["driver"]
            versions["cuda_runtime"] = info["cuda_runtime"]
        except Exception as exc:  # the bench still runs the CPU side
            log.warning("could not query the GPU: %s", exc)
    return env


# ----------------------------------------------------------------------------- checks
@dataclass
class Answer:
    """What is compared between a solver and the reference, for one source."""

    reached: int
    total: float  # sum of finite distances (exact int for integer weights)
    ecc: float

    @property
    def checksum(self) -> float:
        return float(self.total) + float(self.reached)


def answer_from_distances(dist: np.ndarray, integer: bool) -> Answer:
    fin = np.isfinite(dist)
    reached = int(fin.sum())
    if integer:
        total = int(dist[fin].astype(np.int64).sum())
    else:
        total = float(dist[fin].sum())
    ecc = float(dist[fin].max()) if reached else math.nan
    return Answer(reached, total, ecc)


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def same_answer(got: Answer, ref: Answer, graph) -> bool:
    """Equal for integer weights; within a relative tolerance for real weights."""
    if got.reached != ref.reached:
        return False
    if graph.integer_weights:
        return int(round(got.total)) == int(ref.total) and _close(got.ecc, ref.ecc, 0.0)
    rtol = 1e-5 if graph.weights.dtype == np.float32 else 1e-9
    return _close(got.total, ref.total, rtol) and _close(got.ecc, ref.ecc, rtol)


# ----------------------------------------------------------------------------- running
ProgressFn = Callable[..., None]


@dataclass
class BenchOutcome:
    """Rows of a benchmark, the notes it made, and the run's context."""

    table: pa.Table
    notes: list[str]
    env: dict
    graphs: list[dict]
    settings: dict

    @property
    def failures(self) -> int:
        return int(len(self.table) - sum(self.table.column("ok").to_pylist()))


@dataclass
class BenchSettings:
    sources: int = 100
    min_component: int = 100_000
    seed: int = 0
    runs: int = 1
    warmup: int = 1
    batch_size: int | None = None  # batched methods: sources per call (None: all)
    count_work: bool = True  # one untimed counting pass when a timed call reports no relaxations
    baseline_max_arcs: int | None = None  # skip networkit/rustworkx above this many arcs
    slow_ms: float | None = None  # a method whose warm-up call takes longer ...
    slow_sources: int = 2  # ... is timed on this many sources only (noted)
    graph_time_limit_s: float | None = None  # start no further variant on a graph after this

    def check(self) -> "BenchSettings":
        """Refuse a nonsense value, naming its option, before any graph is read (a
        ``--slow-sources -1`` timed all sources but the last, a ``--baseline-max-arcs
        -5`` skipped every anchor but SciPy, a ``--min-component -4`` passed unnoticed).

        Raises
        ------
        UsageError
        """
        check_seed(self.seed, "--seed")
        for option, value, low in (("--sources", self.sources, 1), ("--min-component", self.min_component, 0),
                                   ("--runs", self.runs, 1), ("--warmup", self.warmup, 0),
                                   ("--batch-size", self.batch_size, 1), ("--slow-sources", self.slow_sources, 1),
                                   ("--baseline-max-arcs", self.baseline_max_arcs, 0)):
            if value is None and option in ("--batch-size", "--baseline-max-arcs"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise UsageError(f"{option} takes a whole number, got {value!r}")
            if value < low:
                word = "at least 1" if low == 1 else "0 or more"
                raise UsageError(f"{option} must be {word}, got {value}")
        for option, value in (("--slow-ms", self.slow_ms), ("--graph-time-limit", self.graph_time_limit_s)):
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise UsageError(f"{option} must be a finite number >= 0, got {value!r}")
        return self


def run_benchmark(graphs, variants, settings: BenchSettings, *, progress: ProgressFn | None = None,
                  env: dict | None = None) -> BenchOutcome:
    """Time every variant on every graph from the same random sources.

    Parameters
    ----------
    graphs : list of kernels.graph.Graph
        ``graph.name`` labels the rows.
    variants : list of Variant
        From :func:`plan_variants`.
    settings : BenchSettings
    progress : callable, optional
        Called as ``progress(event, **info)`` with events ``graph`` (``name``,
        ``total`` steps), ``step`` (``advance``), ``note`` (``text``) and, after each
        variant, ``rows`` (``table``: every row of this call so far, ``graphs``,
        ``notes``, ``settings``: the outcome's fields so far).

    Returns
    -------
    BenchOutcome
        ``failures`` > 0 when an answer differed from the reference or a solver raised.
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels import baselines as bl

    settings.check()
    progress = progress or (lambda event, **info: None)
    env = env if env is not None else environment()
    notes: list[str] = []

    def note(text: str):
        notes.append(text)
        log.info(text)
        progress("note", text=text)

    have_gpu = kernels.device_count() > 0
    tables: list[pa.Table] = []  # one per variant timed, each converted from dicts once
    graph_info: list[dict] = []
    versions = json.dumps(env.get("versions", {}), sort_keys=True)
    for graph in graphs:
        draw = draw_sources(graph, settings.sources, min_component=settings.min_component,
                            seed=settings.seed)
        for text in draw.notes:
            notes.append(text)
            progress("note", text=text)
        srcs = draw.sources
        meta = getattr(graph, "meta", None) or {}
        spec = meta.get("weights")  # ingest's --weights: file, unit, random:LO:HI:SEED, ...
        weights = f"{graph.weight_type} {graph.min_weight}..{graph.max_weight}" if graph.m else graph.weight_type
        if spec and spec != "file":  # weights made by ingest, not read: say how (and the seed)
            weights += f" ({spec})"
        graph_info.append({
            "graph": graph.name, "fingerprint": graph.fingerprint, "vertices": graph.n,
            "arcs": graph.m, "weights": weights, "weight_spec": spec,
            "source_file": meta.get("source_file"), "source_sha256": meta.get("source_sha256"),
            "generator": meta.get("generator"),  # sssp generate's family, size and seed
            "directed": bool(graph.directed), "sources": int(len(srcs)),
            "min_component": draw.min_component, "asked_min_component": draw.asked_min_component,
            "source_ids": graph.to_ids(srcs).tolist(),
        })
        runnable = []
        skipped: dict[tuple, list[str]] = {}
        for v in variants:
            why = _why_skip(v, graph, have_gpu, settings)
            if why:
                skipped.setdefault((v.algorithm, why), []).append(v.label)
            else:
                runnable.append(v)
        for (algo, why), labels in skipped.items():
            what = labels[0] if len(labels) == 1 else f"{algo} ({len(labels)} configurations)"
            note(f"{graph.name}: {what} skipped: {why}")
        steps = len(srcs) * (1 + settings.runs * len(runnable))
        progress("graph", name=graph.name, total=steps)
        base = dict(graph=graph.name, fingerprint=graph.fingerprint, vertices=graph.n, arcs=graph.m,
                    gpu=env.get("gpu", ""), driver=env.get("driver", ""), versions=versions,
                    cpu=env.get("cpu", ""))

        # the reference: SciPy, one source at a time; timed as the scipy baseline's run 0.
        # With negative arcs it is prepared for these sources: a negative cycle reachable
        # from one of them ends the bench as it ends `sssp solve` and `sssp verify`
        # (NegativeCycleError, exit 3), and Johnson runs on the part they reach
        ref_solve = bl.prepare("scipy", graph, srcs)
        od = graph.out_degree()
        if settings.warmup:
            # warm-up: the same allocations and code path; from a sink vertex when there is
            # one, which costs nothing on the large R-MAT graphs (seconds per full solve);
            # with negative arcs from a source (SciPy's Johnson only has their part)
            sinks = np.flatnonzero(od == 0) if not graph.has_negative else []
            ref_solve(int(sinks[0]) if len(sinks) else int(srcs[0]))
        refs: list[Answer] = []
        ref_ms: list[float] = []
        ref_relax: list[int] = []
        full_refs: dict[int, np.ndarray] = {}
        for i, s in enumerate(srcs):
            dist, ms = ref_solve(int(s))
            if i < VERIFY_SOURCES:
                full_refs[i] = np.array(dist, dtype=np.float64)
            refs.append(answer_from_distances(dist, graph.integer_weights))
            ref_ms.append(ms)
            ref_relax.append(int(od[np.isfinite(dist)].sum()))
            progress("step", advance=1)
        del dist
        ctx = _Ctx(graph, srcs, refs, ref_relax, base, settings, full_refs)

        t_graph = time.perf_counter()
        # the SciPy anchor first (the reference pass warmed it up, and it is the reference
        # of every check and ratio), the other baselines, then the methods
        for v in sorted(runnable, key=lambda v: (not _is_anchor(v), v.kind != "baseline")):
            spent = time.perf_counter() - t_graph
            # the limit stops further variants, never the anchor: --graph-time-limit 0
            # dropped SciPy's rows too, and the report had nothing to compare with
            if (settings.graph_time_limit_s is not None and spent > settings.graph_time_limit_s
                    and not _is_anchor(v)):
                note(f"{graph.name}: {v.label} skipped: the graph's time limit of "
                     f"{settings.graph_time_limit_s:g} s was used up "
                     + (f"({spent:,.0f} s)" if spent >= 10 else f"({spent:.2g} s)" if spent >= 0.01 else
                        f"({spent * 1e3:.2g} ms)"))
                progress("step", advance=settings.runs * len(srcs))
                continue
            if v.kind == "baseline":
                rows = _time_baseline(v, ctx, ref_ms, progress, note)
            else:
                rows = _time_method(v, ctx, progress, note)
            tables.append(rows.table())
            del rows
            # what is measured so far, for a caller that keeps it (a run cut short): the
            # variants' tables put together, not converted again
            progress("rows", table=_concat(tables), graphs=list(graph_info),
                     notes=list(notes), settings=dict(settings.__dict__, verify_sources=VERIFY_SOURCES))
            if _is_anchor(v):  # the limit counts the time of the variants after the anchor
                t_graph = time.perf_counter()
        if have_gpu:
            _release_device()
    table = _concat(tables)
    settings_d = dict(settings.__dict__, verify_sources=VERIFY_SOURCES)
    return BenchOutcome(table, notes, env, graph_info, settings_d)


def _is_anchor(v: Variant) -> bool:
    """The SciPy baseline: the anchor of the ratios, its run 0 the reference pass itself."""
    return v.kind == "baseline" and v.algorithm == "scipy"


def _concat(tables: list) -> pa.Table:
    """The variants' tables as one (their chunks kept: nothing is copied)."""
    return pa.concat_tables(tables) if tables else ROW_SCHEMA.empty_table()


def _release_device() -> None:
    """Drop the graph's device copy and cached blocks before the next graph."""
    from gpu_sssp import kernels

    kernels.release_device_memory()


#: Rows of one variant converted from dicts to an Arrow record batch at a time: a
#: variant timed on every source of a road graph makes hundreds of thousands of rows,
#: and a dict per row (about 4 kB with its values) held for the whole run came to
#: gigabytes; 2,048 of them at a time are about 10 MB.
CHUNK_ROWS = 2048


class _Rows:
    """One variant's rows as they are measured: dicts (:func:`_row`) converted to Arrow
    record batches of :data:`CHUNK_ROWS` rows, each row converted once; :meth:`table`
    gives them in :data:`ROW_SCHEMA`.  :meth:`fail` fails every row (the whole-vector
    check against SciPy's, :func:`_verify`), those converted already included."""

    def __init__(self):
        self._batches: list = []
        self._pending: list[dict] = []
        self._count = 0
        self.any_ok = False
        self.sources: set = set()  # the file ids measured
        self._failed: str | None = None

    def append(self, row: dict) -> None:
        self._pending.append(row)
        self._count += 1
        self.any_ok = self.any_ok or bool(row.get("ok"))
        self.sources.add(row["source"])
        if len(self._pending) >= CHUNK_ROWS:
            self._flush()

    def __iadd__(self, rows):
        for row in rows:
            self.append(row)
        return self

    def __len__(self) -> int:
        return self._count

    def _flush(self) -> None:
        if self._pending:
            self._batches.append(pa.RecordBatch.from_pylist(self._pending, schema=ROW_SCHEMA))
            self._pending = []

    def fail(self, why: str) -> None:
        """Every row not ok, ``why`` added to its error (its only error where it had none)."""
        self._failed = why if self._failed is None else f"{self._failed}; {why}"
        self.any_ok = False

    def table(self) -> pa.Table:
        import pyarrow.compute as pc

        self._flush()
        t = pa.Table.from_batches(self._batches, schema=ROW_SCHEMA)
        if self._failed is not None and len(t):
            err = pc.fill_null(t.column("error"), "")
            err = pc.if_else(pc.equal(err, ""), pa.scalar(self._failed),
                             pc.binary_join_element_wise(err, pa.scalar(self._failed), "; "))
            t = t.set_column(t.schema.get_field_index("ok"), ROW_SCHEMA.field("ok"),
                             pa.array(np.zeros(len(t), dtype=bool)))
            t = t.set_column(t.schema.get_field_index("error"), ROW_SCHEMA.field("error"), err)
        return t


@dataclass
class _Ctx:
    graph: object
    srcs: np.ndarray
    refs: list
    ref_relax: list
    base: dict
    settings: BenchSettings
    full_refs: dict = field(default_factory=dict)  # source position -> SciPy's distances


def _why_skip(v: Variant, graph, have_gpu: bool, settings: BenchSettings) -> str | None:
    from gpu_sssp import kernels
    from gpu_sssp.kernels import baselines as bl

    if v.kind == "baseline":
        why = bl.unavailable_reason(v.algorithm, graph)
        if why:
            return why
        if (v.algorithm != "scipy" and settings.baseline_max_arcs is not None
                and graph.m > settings.baseline_max_arcs):
            return f"{graph.m:,} arcs is above --baseline-max-arcs {settings.baseline_max_arcs:,}"
        return None
    spec = kernels.get(v.algorithm, v.kind)
    if spec.backend == "gpu" and not have_gpu:
        return "no CUDA device here"
    why = spec.unsuitable(graph, advice="skip")
    # (its option phrases in the reader's words: the notes and rows held the marks)
    return None if why is None else render(why)


def _row(ctx: _Ctx, v: Variant, i: int, run: int, **vals) -> dict:
    graph = ctx.graph
    ref = ctx.refs[i]
    row = dict(ctx.base)
    row.update(algorithm=v.algorithm, kind=v.kind, variant=v.label, role=v.role,
               options=json.dumps(v.options_dict, sort_keys=True),
               source=int(ctx.srcs[i]) + graph.id_base, run=run, ref_checksum=ref.checksum)
    row.update(vals)
    kms = row.get("kernel_ms")
    t = kms if kms and kms > 0 else row.get("time_ms")
    if t and t > 0 and not math.isnan(t):
        row["mteps"] = graph.m / (t * 1e3)
        rel = row.get("relaxations")
        row["edges_per_s"] = (rel / (t * 1e-3)) if rel is not None else None
    return row


def distance_mismatch(got, ref: np.ndarray, graph) -> str | None:
    """Where a distance vector differs from the reference (exact for integer weights,
    the answers' relative tolerance for real ones), or None when it equals it."""
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    if got.shape != ref.shape:
        return f"{got.size} distances for {ref.size} vertices"
    fin = np.isfinite(ref)
    same = np.isfinite(got) == fin
    if graph.integer_weights:
        same[fin] &= got[fin] == ref[fin]
    else:
        rtol = 1e-5 if graph.weights.dtype == np.float32 else 1e-9
        same[fin] &= np.abs(got[fin] - ref[fin]) <= rtol * np.maximum(1.0, np.abs(ref[fin]))
    bad = np.flatnonzero(~same)
    if not len(bad):
        return None
    v = int(bad[0])
    return (f"{_counted(len(bad), 'wrong distance')}, e.g. vertex {v + graph.id_base}: {got[v]:g} "
            f"(reference {ref[v]:g})")


def _verify(rows: _Rows, ctx: "_Ctx", v: "Variant", solve_full, note) -> None:
    """Compare the variant's whole distance vectors from the first sources with SciPy's
    (``solve_full(positions) -> (B, n)`` distances, untimed: the first
    :data:`VERIFY_SOURCES` for a batched method, in one call, the first one for the
    others, which pay a whole solve per source); on a mismatch, every row of the
    variant is failed with the reason (its statistics passed or not)."""
    if not ctx.full_refs or not rows.any_ok:  # nothing left to clear
        return
    done = {s - ctx.graph.id_base for s in rows.sources}
    pos = [i for i in sorted(ctx.full_refs) if int(ctx.srcs[i]) in done][: VERIFY_SOURCES if v.batched else 1]
    if not pos:
        return
    why = None
    try:
        got = solve_full(pos)
        for j, i in enumerate(pos):
            bad = distance_mismatch(got[j], ctx.full_refs[i], ctx.graph)
            if bad:
                why = f"wrong distances from source {int(ctx.srcs[i]) + ctx.graph.id_base}: {bad}"
                break
    except Exception as exc:
        why = f"distance check failed: {type(exc).__name__}: {exc}"
    if why is None:
        return
    note(f"{ctx.graph.name}: {v.label}: {why}")
    rows.fail(why)


def _error_row(ctx, v, i, run, err: str, batch_size=1) -> dict:
    return _row(ctx, v, i, run, ok=False, error=err, batch_size=batch_size, device="")


def _time_baseline(v: Variant, ctx: _Ctx, ref_ms, progress, note) -> _Rows:
    """Time a CPU baseline on every source.  One that solves many sources per call
    (``networkit-spsp``, :data:`kernels.baselines.BATCHED_BASELINES`) takes them in calls of
    :func:`kernels.baselines.sources_per_call` (at most ``--batch-size``), each call's time
    divided over its sources, as for the batched methods; the others one per call."""
    from gpu_sssp.kernels import baselines as bl

    graph, srcs, st = ctx.graph, ctx.srcs, ctx.settings
    if v.batched:
        # --batch-size is an upper bound here: the distances handed back stay within
        # kernels.baselines.SPSP_CELLS (a GPU-sized batch would be tens of GB of Python floats)
        size = bl.sources_per_call(v.algorithm, graph, min(st.batch_size or len(srcs), len(srcs)))

        def prepare():
            return bl.prepare_many(v.algorithm, graph)

        def solve(fn, idx):  # -> (len(idx), n) distances, the call's ms
            return fn(srcs[idx])
    else:
        size = 1

        def prepare():
            return bl.prepare(v.algorithm, graph, srcs)

        def solve(fn, idx):
            dist, ms = fn(int(srcs[idx[0]]))
            return dist[None, :], ms
    groups = [np.arange(a, min(a + size, len(srcs))) for a in range(0, len(srcs), size)]
    rows = _Rows()
    first_ms = None
    try:
        fn = prepare()
        for _ in range(st.warmup if v.algorithm != "scipy" else 0):  # scipy was warmed up already
            t0 = time.perf_counter()
            solve(fn, groups[0])
            first_ms = (time.perf_counter() - t0) * 1e3 if first_ms is None else first_ms
    except Exception as exc:
        for run in range(st.runs):
            rows += [_error_row(ctx, v, i, run, f"{type(exc).__name__}: {exc}") for i in range(len(srcs))]
        progress("step", advance=st.runs * len(srcs))
        note(f"{graph.name}: baseline {v.algorithm} failed to start: {exc}")
        return rows
    for run in range(st.runs):
        for idx in groups:
            b = len(idx)
            if v.algorithm == "scipy" and run == 0:  # the reference pass was this run (one source)
                dist, ms = None, ref_ms[int(idx[0])]
            else:
                dist, ms = solve(fn, idx)
            for j, i in enumerate(idx):
                i = int(i)
                got = ctx.refs[i] if dist is None else answer_from_distances(dist[j], graph.integer_weights)
                ok = same_answer(got, ctx.refs[i], graph)
                rows.append(_row(ctx, v, i, run, batch_size=b, time_ms=ms / b, kernel_ms=ms / b,
                                 iterations=got.reached, launches=0.0, host_syncs=0.0,
                                 relaxations=ctx.ref_relax[i], reached=got.reached,
                                 checksum=got.checksum, ok=ok, error=None if ok else "wrong answer",
                                 device="cpu", warmup_ms=first_ms))
            dist = None
            progress("step", advance=b)
    if v.algorithm != "scipy":  # (scipy's run 0 is the reference itself)
        _verify(rows, ctx, v, lambda pos: np.vstack([solve(fn, np.asarray(g))[0]
                                                     for g in ([pos] if v.batched else [[i] for i in pos])]),
                note)
    return rows


def _answers_of(res, graph) -> list[Answer]:
    out = []
    for j in range(res.batch_size):
        total = res.sum_distance[j]
        total = int(total) if graph.integer_weights else float(total)
        out.append(Answer(int(res.reached[j]), total, float(res.eccentricity[j])))
    return out


def _time_method(v: Variant, ctx: _Ctx, progress, note) -> _Rows:
    from gpu_sssp import kernels

    graph, srcs, st = ctx.graph, ctx.srcs, ctx.settings
    opts = v.options_dict
    if v.batched:
        size = st.batch_size or len(srcs)
        groups = [np.arange(i, min(i + size, len(srcs))) for i in range(0, len(srcs), size)]
    else:
        groups = [np.array([i]) for i in range(len(srcs))]

    def call(idx, distances=False, **extra):
        return kernels.solve(graph, srcs[idx], method=v.algorithm, backend=v.kind, distances=distances,
                             **opts, **extra)

    rows = _Rows()
    warm_ms = 0.0
    first_ms = None
    try:
        for _ in range(st.warmup):
            t0 = time.perf_counter()
            call(groups[0])
            ms = (time.perf_counter() - t0) * 1e3
            first_ms = ms if first_ms is None else first_ms
            warm_ms = max(warm_ms, ms)
    except (TypeError, ValueError, MemoryError) as exc:
        # the method refuses this graph or option (unknown switch, weights it does not
        # take, a graph that does not fit): nothing to time, not a wrong answer
        note(f"{graph.name}: {v.label} skipped: {type(exc).__name__}: {exc}")
        progress("step", advance=st.runs * len(srcs))
        return rows
    except Exception as exc:
        return _fail_all(v, ctx, exc, progress, note)
    if (st.slow_ms is not None and warm_ms > st.slow_ms and not v.batched
            and len(groups) > st.slow_sources):
        note(f"{graph.name}: {v.label} took {warm_ms:,.0f} ms in warm-up (over --slow-ms "
             f"{st.slow_ms:g}); timed on its first {_counted(st.slow_sources, 'source')} only")
        progress("step", advance=st.runs * (len(groups) - st.slow_sources))
        groups = groups[: st.slow_sources]

    # with --warmup 0 there is no warm-up call to judge by: the first timed call is
    # (the guard was silently never applied: a warm-up time of 0 is never over it)
    judge_first = (st.slow_ms is not None and not st.warmup and not v.batched
                   and len(groups) > st.slow_sources)
    keep = len(groups)
    counted: dict[int, int] = {}  # source position -> relaxations from a counting pass
    for run in range(st.runs):
        failed = None
        for gi, idx in enumerate(groups):
            if gi >= keep:
                break
            b = len(idx)
            if failed is not None:
                rows += [_error_row(ctx, v, int(i), run, failed, b) for i in idx]
                progress("step", advance=b)
                continue
            try:
                t0 = time.perf_counter()
                res = call(idx)
                ms = (time.perf_counter() - t0) * 1e3
            except Exception as exc:
                if not st.warmup and run == 0 and gi == 0 and isinstance(exc, (TypeError, ValueError, MemoryError)):
                    # with --warmup 0 this is the first call: a refusal of the graph or an
                    # option is a skip, as in the warm-up (it failed every row, exit 1)
                    note(f"{graph.name}: {v.label} skipped: {type(exc).__name__}: {exc}")
                    progress("step", advance=st.runs * len(srcs))
                    return _Rows()
                failed = f"{type(exc).__name__}: {exc}"
                note(f"{graph.name}: {v.label} failed: {failed}")
                rows += [_error_row(ctx, v, int(i), run, failed, b) for i in idx]
                progress("step", advance=b)
                continue
            if judge_first and run == 0 and gi == 0 and ms > st.slow_ms:
                keep = st.slow_sources
                note(f"{graph.name}: {v.label} took {ms:,.0f} ms in its first timed call (over --slow-ms "
                     f"{st.slow_ms:g}; no warm-up call to judge by with --warmup 0); timed on its first "
                     f"{_counted(st.slow_sources, 'source')} only")
                progress("step", advance=st.runs * (len(groups) - keep))
            c = res.counters or {}
            relax = np.asarray(res.relaxations, dtype=np.int64)
            # a count per source, or None where the method counted nothing (a source that
            # scans no arc, a sink, counts 0: it is not left out of relax/|E| and edges/s)
            known: list = [int(r) for r in relax] if relax.any() else [None] * b
            if not relax.any() and c.get("relaxations"):
                known = [int(c["relaxations"]) // b] * b
            if not relax.any() and not c.get("relaxations") and st.count_work:
                missing = [int(i) for i in idx if int(i) not in counted]
                if missing:
                    try:
                        rc = call(np.asarray(missing), count_work=True)
                        rr = np.asarray(rc.relaxations, dtype=np.int64)
                        if not rr.any() and (rc.counters or {}).get("relaxations"):
                            rr = np.full(len(missing), int(rc.counters["relaxations"]) // len(missing))
                        counted.update({i: int(r) for i, r in zip(missing, rr)})
                    except Exception as exc:  # counting is a nicety; timing stands
                        note(f"{graph.name}: {v.label}: counting relaxations failed: {exc}")
                        counted.update({i: None for i in missing})
                known = [counted.get(int(i)) for i in idx]
            its = np.asarray(res.iterations, dtype=np.int64)
            if not its.any():
                its = np.full(b, int(c.get("iterations", 0)))
            kms = float(c.get("kernel_ms", 0.0) or 0.0)
            answers = _answers_of(res, graph)
            if len(answers) != b:  # zip() would drop the sources without an answer, unnoticed
                bad = f"the call answered {_counted(len(answers), 'source')} for {b} asked"
                note(f"{graph.name}: {v.label}: {bad}")
                rows += [_error_row(ctx, v, int(i), run, bad, b) for i in idx]
                progress("step", advance=b)
                continue
            for j, (i, got) in enumerate(zip(idx, answers)):
                i = int(i)
                ok = same_answer(got, ctx.refs[i], graph)
                rows.append(_row(
                    ctx, v, i, run, batch_size=b, time_ms=ms / b,
                    kernel_ms=(kms / b) if kms > 0 else (ms / b if v.kind == "cpu" else None),
                    iterations=int(its[j]), launches=float(c.get("launches", 0)) / b,
                    host_syncs=float(c.get("host_syncs", 0)) / b, relaxations=known[j],
                    reached=got.reached, checksum=got.checksum, ok=ok, warmup_ms=first_ms,
                    error=None if ok else (f"wrong answer: reached {got.reached} (reference "
                                           f"{ctx.refs[i].reached}), sum {got.total} "
                                           f"(reference {ctx.refs[i].total})"),
                    device=res.device))
            progress("step", advance=b)
    _verify(rows, ctx, v, lambda pos: call(np.asarray(pos), distances=True).distances, note)
    return rows


def _fail_all(v, ctx, exc, progress, note) -> _Rows:
    err = f"{type(exc).__name__}: {exc}"
    note(f"{ctx.graph.name}: {v.label} failed in warm-up: {err}")
    st = ctx.settings
    rows = _Rows()
    rows += (_error_row(ctx, v, i, run, err) for run in range(st.runs) for i in range(len(ctx.srcs)))
    progress("step", advance=st.runs * len(ctx.srcs))
    return rows
