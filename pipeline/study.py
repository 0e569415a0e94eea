"""Studies: shortest paths from many sources, batched over the workers of a Dask cluster.

A study solves every source of a :class:`pipeline.sources.SourcePlan` once, in
batches; each batch is one task that solves on a worker (using the graph held by the
worker's :class:`pipeline.plugins.GraphPlugin`), writes its files atomically into the
study folder and returns only small metadata.  The client records each finished
batch in a journal, so that a study killed at any point can be resumed.

Study folder ``DIR``::

    manifest.json          graph, sources plan, algorithm, versions, cluster, timings
    journal.jsonl          one line per finished batch (client side, fsync'd)
    stats/batch-000000.parquet        one row per source (kernels.result.STATS_SCHEMA)
    distances/batch-000000.parquet    only when asked (long or wide form)
    predecessors/batch-000000.parquet only for the wide form with predecessors
    summary.json           the study summary (diameter/radius found, closeness, totals)

A batch is done when its journal line exists and its stats file exists.  Batches are
a pure function of the plan (sources in order, batch size), so a resumed study
rewrites a half-done batch under the same file names and never duplicates a source.

This module prints nothing; progress goes through the ``on_batch`` callback.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.pipeline.config import setting
from gpu_sssp.pipeline.sources import SourcePlan
from gpu_sssp.pipeline.writers import (Journal, batch_name, remove_temporaries, wide_distance_table,
                              write_json_atomic, write_parquet_atomic)

log = logging.getLogger(__name__)

OUTPUTS = ("stats", "distances", "predecessors")
FORMS = ("long", "wide")
MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
SUMMARY = "summary.json"
FORMAT_VERSION = 1


class StudyError(ValueError):
    """A study cannot start or resume as asked (bad options, a folder in the way)."""


class BatchError(RuntimeError):
    """A batch failed on a worker; the message names the batch and the cause."""


# ---------------------------------------------------------------------- planning
def distance_bytes(n_sources: int, n_vertices: int, form: str, predecessors: bool) -> int:
    """Uncompressed size of the distance outputs (an upper bound: every vertex reached).

    Long form: 32 bytes a row (source, vertex, distance, predecessor as 8-byte
    columns).  Wide form: 8 bytes per (source, vertex) distance, 8 more with
    predecessors (plus the small ``vertex`` column).

    Parameters
    ----------
    n_sources, n_vertices : int
        Size of the study.
    form : {"long", "wide"}
        Distance layout; anything other than ``"long"`` is costed as wide.
    predecessors : bool
        Whether predecessors are written too (wide form only; the long form's
        estimate always includes the predecessor column).

    Returns
    -------
    int
        Bytes, before compression.
    """
    cells = int(n_sources) * int(n_vertices)
    if form == "long":
        return cells * 32
    return cells * (16 if predecessors else 8) + int(n_vertices) * 8


def _fmt_bytes(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(b) < 1000 or unit == "PB":
            return f"{b:,.1f} {unit}" if unit != "B" else f"{int(b)} B"
        b /= 1000.0
    return f"{b} B"


@dataclass
class StudyPlan:
    """Everything a study needs before a cluster is involved.

    Build it with :func:`plan_study`.
    """

    graph: object
    graph_path: str
    sources: SourcePlan
    algorithm: str
    batch_size: int
    outputs: tuple
    distance_form: str
    out: Path
    distance_estimate: int = 0
    batches: list = field(default_factory=list)
    input_path: str = ""

    @property
    def identity(self) -> dict:
        """What must match for a resume: graph, sources, algorithm, batching, outputs."""
        return {
            "format": FORMAT_VERSION,
            "graph_fingerprint": self.graph.fingerprint,
            "sources_digest": self.sources.digest(),
            "sources_count": self.sources.count,
            "algorithm": self.algorithm,
            "batch_size": self.batch_size,
            "outputs": list(self.outputs),
            "distance_form": self.distance_form,
        }

    @property
    def study_id(self) -> str:
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:16]

    def task_key(self, index: int) -> str:
        return self.task_keys([index])[0]

    def task_keys(self, indices) -> list[str]:
        """Task keys of batches ``indices`` (the study id, a digest of every source, is
        computed once: per key it made submitting all of NY's 517 batches take 0.6 s)."""
        sid = self.study_id
        return [f"sssp-batch-{sid}-{int(i):06d}" for i in indices]


def parse_outputs(outputs) -> tuple:
    """``"stats,distances"`` or a sequence -> validated tuple (``stats`` always in)."""
    if outputs is None:
        outputs = ("stats",)
    if isinstance(outputs, str):
        outputs = [o.strip() for o in outputs.split(",") if o.strip()]
    bad = [o for o in outputs if o not in OUTPUTS]
    if bad:
        raise StudyError(f"unknown output(s) {', '.join(bad)}; choose from {', '.join(OUTPUTS)}")
    return tuple(o for o in OUTPUTS if o in set(outputs) | {"stats"})


def plan_study(graph, graph_path, sources: SourcePlan, *, out, algorithm: str = "auto",
               batch_size: int | None = None, outputs=None, distance_form: str | None = None,
               max_distance_bytes: int | None = None) -> StudyPlan:
    """Validate a study's options and split its sources into batches.

    Parameters
    ----------
    graph : kernels.graph.Graph
        The graph (loaded on the client for planning).
    graph_path : str or os.PathLike
        The input the graph came from.  A Parquet edge list is loaded by the workers
        as it is (it must be readable by every worker under that name); any other
        input is written once to ``<out>/graph.parquet`` for them.
    sources : SourcePlan
    out : path
        Study folder.
    algorithm : str
        ``auto`` or a registered method name.
    batch_size, distance_form, max_distance_bytes : optional
        Default from dask config ``sssp.study.*``.
    outputs : str or sequence
        Any of ``stats``, ``distances``, ``predecessors`` (``stats`` always written).

    Raises
    ------
    StudyError
        Unknown algorithm/output/form, a batch size below 1, distance outputs above
        the limit.
    """
    from gpu_sssp import kernels

    if algorithm != "auto" and algorithm not in kernels.available_methods():
        raise StudyError(f"unknown algorithm {algorithm!r}; available: {', '.join(kernels.available_methods())}")
    if algorithm != "auto" and graph.has_negative and not kernels.get(algorithm).negative_weights:
        raise StudyError(f"algorithm {algorithm!r} needs non-negative weights; {graph.name} has negative arcs")
    batch_size = setting("study.batch-size", batch_size)
    if batch_size in (None, "auto"):  # the CLI resolves auto by backend; the API's default
        batch_size = 64
    batch_size = int(batch_size)
    if batch_size < 1:
        raise StudyError(f"--batch-size must be at least 1, got {batch_size}")
    outputs = parse_outputs(outputs)
    distance_form = setting("study.distance-form", distance_form)
    if distance_form not in FORMS:
        raise StudyError(f"--distance-form must be 'long' or 'wide', got {distance_form!r}")
    if sources.count == 0:
        raise StudyError("the study has no sources")
    estimate = 0
    if "distances" in outputs or "predecessors" in outputs:
        estimate = distance_bytes(sources.count, graph.n, distance_form, "predecessors" in outputs)
        limit = int(float(setting("study.max-distance-bytes", max_distance_bytes)))
        if estimate > limit:
            raise StudyError(
                f"distance outputs would take up to {_fmt_bytes(estimate)} ({sources.count:,} sources x "
                f"{graph.n:,} vertices, {distance_form} form, before compression), above the limit of "
                f"{_fmt_bytes(limit)}; raise it with --max-distance-bytes {estimate} (or dask config "
                "sssp.study.max-distance-bytes), choose fewer sources, or ask only for stats"
            )
    gp = Path(graph_path)
    # a Parquet input is read by the workers as it is; other inputs are written into
    # the study folder by Study.start (after the folder checks)
    plan = StudyPlan(graph=graph, graph_path=os.fspath(gp.resolve()) if gp.suffix == ".parquet" else "",
                     input_path=os.fspath(gp), sources=sources,
                     algorithm=algorithm, batch_size=batch_size, outputs=outputs,
                     distance_form=distance_form, out=Path(out), distance_estimate=estimate)
    plan.batches = sources.batches(batch_size)
    return plan


def graph_parquet_path(graph, input_path, out_dir) -> str:
    """A Parquet file holding ``graph`` that the workers can read.

    The input itself when it is Parquet; the ingestion cache file when it can be
    found (``graph.path`` or the cache name ``load_graph`` uses); else the graph is
    written once to ``<out_dir>/graph.parquet``.

    Parameters
    ----------
    graph : kernels.graph.Graph
    input_path : str or os.PathLike or None
        The input the graph was loaded from.
    out_dir : str or os.PathLike
        The study folder.  An existing ``graph.parquet`` there is reused when its
        fingerprint matches (a resumed study does not rewrite it), and rewritten
        otherwise.

    Returns
    -------
    str
        Absolute path of the Parquet file.

    Raises
    ------
    RuntimeError
        The written file does not load back to the same graph (fingerprint
        mismatch), which would make the workers solve a different graph.
    OSError
        ``graph.parquet`` cannot be written.
    """
    from gpu_sssp.pipeline.graph import Graph, read_parquet

    p = getattr(graph, "path", None)
    if p and Path(p).suffix == ".parquet" and Path(p).exists():
        return os.fspath(Path(p).resolve())
    input_path = Path(input_path or "")
    if input_path.suffix == ".parquet":
        return os.fspath(input_path.resolve())
    target = Path(out_dir) / "graph.parquet"
    if target.exists():
        try:
            if read_parquet(target).fingerprint == graph.fingerprint:
                return os.fspath(target.resolve())
        except Exception:  # rewritten below
            pass
    tails = graph.tails().astype(np.int64) + graph.id_base
    meta = dict(graph.meta)
    meta.update(vertices=graph.n, arcs=graph.m, directed=graph.directed, id_base=graph.id_base,
                weight_type=graph.weight_type, written_by="sssp study")
    table = pa.table({"src": tails, "dst": graph.indices.astype(np.int64) + graph.id_base,
                      "weight": graph.weights})
    write_parquet_atomic(table, target, metadata=meta)
    written = read_parquet(target)
    if written.fingerprint != graph.fingerprint:  # should not happen: CSR round trip
        raise RuntimeError(f"{target}: rewritten graph differs from the input (fingerprint)")
    return os.fspath(target.resolve())


# ---------------------------------------------------------------------- the task
_SOLVE_LOCK = threading.Lock()


class _Turn:
    """This process's GPU turn (``_SOLVE_LOCK``) as one task takes it: records when the
    task got it and gave it back (``kernels.solve`` takes and returns it; ``batched``
    gives it back as soon as its launches are enqueued, so the next batch's kernel
    queues right behind on the GPU while this task collects its results)."""

    def __init__(self, lock):
        self.lock = lock
        self.got = self.gave = None

    def acquire(self):
        self.lock.acquire()
        self.got = time.perf_counter()

    def release(self):
        self.gave = time.perf_counter()
        self.lock.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


def _solve_turn(method: str, backend: str):
    """A :class:`_Turn` of the per-process lock for GPU solves; None for CPU solves,
    which run freely in several threads."""
    from gpu_sssp.kernels.registry import resolve_backend

    if resolve_backend(method, backend) == "gpu":
        return _Turn(_SOLVE_LOCK)
    return None


def solve_batch(*, fingerprint: str, graph_path: str, index: int, sources: np.ndarray,
                method: str, backend: str, outputs: tuple, distance_form: str, out: str,
                fsync: bool = True) -> dict:
    """Solve one batch on a worker and write its files; return small metadata.

    Files are written atomically, distances before stats, so that an existing stats
    file means the batch's other files are complete too.
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels.result import NegativeCycleError
    from gpu_sssp.pipeline.plugins import worker_graph

    t0 = time.perf_counter()
    started = time.time()  # wall clock, comparable with the client's (same host or NTP)
    graph = worker_graph(fingerprint, graph_path)
    try:
        from distributed import get_worker

        w = get_worker()
        worker = str(w.name) if w.name is not None else str(w.address)
    except ValueError:
        worker = "local"
    want_dist = "distances" in outputs or "predecessors" in outputs
    t_load = time.perf_counter()
    # one solve's device work at a time per process (= per GPU for dask-cuda workers): a
    # worker's second thread collects and writes the previous batch meanwhile, and kernel
    # times stay honest (CUDA events around each call's own work)
    turn = _solve_turn(method, backend)
    try:
        res = kernels.solve(graph, np.asarray(sources, dtype=np.int64), method=method,
                            backend=backend, distances=want_dist,
                            predecessors="predecessors" in outputs, turn=turn)
    except NegativeCycleError as exc:
        # NegativeCycleError does not survive pickling; send its message
        raise BatchError(f"batch {index}: {exc}") from None
    t2 = time.perf_counter()
    t1 = turn.got if turn is not None and turn.got is not None else t_load
    outdir = Path(out)
    name = batch_name(index)
    nbytes = 0
    files = []
    if want_dist:
        if distance_form == "long":
            table = res.to_table(graph.id_base, reachable_only=True)
            nbytes += write_parquet_atomic(table, outdir / "distances" / name, fsync=fsync)
            files.append(f"distances/{name}")
        else:
            nbytes += write_parquet_atomic(wide_distance_table(res, graph.id_base), outdir / "distances" / name,
                                           fsync=fsync)
            files.append(f"distances/{name}")
            if "predecessors" in outputs:
                nbytes += write_parquet_atomic(wide_distance_table(res, graph.id_base, field="predecessors"),
                                               outdir / "predecessors" / name, fsync=fsync)
                files.append(f"predecessors/{name}")
    t_stats = time.perf_counter()
    stats = res.stats_table(graph.id_base, worker=worker)
    t_table = time.perf_counter()
    nbytes += write_parquet_atomic(stats, outdir / "stats" / name, fsync=fsync)
    files.append(f"stats/{name}")
    t3 = time.perf_counter()
    return {
        "batch": int(index),
        "rows": int(stats.num_rows),
        "bytes": int(nbytes),
        "files": files,
        "worker": worker,
        "device": res.device,
        "algorithm": res.method,
        "kernel_ms": float(res.counters.get("kernel_ms", 0.0)),
        "solve_ms": (t2 - t1) * 1e3,
        "write_ms": (t3 - t2) * 1e3,
        "stats_table_ms": (t_table - t_stats) * 1e3,  # of write_ms: building the stats rows
        "load_ms": (t_load - t0) * 1e3,
        "wait_ms": (t1 - t_load) * 1e3,  # for the GPU turn (this worker's other solve)
        "held_ms": ((turn.gave - turn.got) * 1e3 if turn is not None and turn.gave is not None
                    else (t2 - t1) * 1e3),  # the GPU turn held: set-up and launches
        "task_ms": (t3 - t0) * 1e3,
        "started": started,
        "ended": started + (t3 - t0),
    }


# ---------------------------------------------------------------------- the study folder
def _versions() -> dict:
    import dask
    import distributed

    v = {"python": platform.python_version(), "numpy": np.__version__, "dask": dask.__version__,
         "distributed": distributed.__version__, "pyarrow": pa.__version__}
    try:
        import scipy

        v["scipy"] = scipy.__version__
    except ImportError:
        pass
    try:
        from importlib.metadata import version

        v["gpu-sssp"] = version("gpu-sssp")
    except Exception:
        v["gpu-sssp"] = "unknown"
    for mod in ("cupy", "dask_cuda"):
        m = sys.modules.get(mod)
        if m is None:
            try:
                from importlib.metadata import version

                v[mod] = version({"cupy": "cupy", "dask_cuda": "dask-cuda"}[mod])
            except Exception:
                continue
        else:
            v[mod] = getattr(m, "__version__", "unknown")
    return v


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Study:
    """A study folder: validation, the journal of finished batches, the manifest.

    Parameters
    ----------
    plan : StudyPlan
    resume : bool
        Continue the study already in ``plan.out`` (it must be the same study).

    Raises
    ------
    StudyError
        Without ``resume``: the folder holds a study or other files.  With it: the
        folder holds a different study (the message names what differs).
    """

    def __init__(self, plan: StudyPlan, *, resume: bool = False):
        self.plan = plan
        self.out = plan.out
        self.journal = Journal(self.out / JOURNAL)
        self.manifest: dict = {}
        self._check_folder(resume)
        self.done: dict[int, dict] = self._finished_batches() if resume else {}

    # .................................................................. folder checks
    def _check_folder(self, resume: bool) -> None:
        out = self.out
        mpath = out / MANIFEST
        if out.exists() and not out.is_dir():
            raise StudyError(f"{out}: exists and is not a folder")
        if mpath.exists():
            try:
                old = json.loads(mpath.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise StudyError(f"{mpath}: unreadable study manifest ({exc}); remove the folder or choose another --out") from None
            if not resume:
                raise StudyError(
                    f"{out} already holds a study ({old.get('status', 'unknown')}, graph "
                    f"{old.get('graph', {}).get('name', '?')}); use --resume to continue it or choose another --out"
                )
            mine = self.plan.identity
            theirs = old.get("identity", {})
            diff = [k for k in mine if theirs.get(k) != mine[k]]
            if diff:
                details = "; ".join(f"{k}: folder has {theirs.get(k)!r}, asked {mine[k]!r}" for k in diff)
                raise StudyError(f"{out} holds a different study, cannot resume ({details})")
            self.manifest = old
        elif out.exists() and any(p.name not in ("graph.parquet",) and not p.name.startswith(".")
                                  for p in out.iterdir()):
            if resume:
                raise StudyError(f"{out}: no study to resume here (no {MANIFEST})")
            raise StudyError(f"{out}: folder is not empty and holds no study; choose another --out")

    def _finished_batches(self) -> dict[int, dict]:
        done = {}
        nb = len(self.plan.batches)
        for e in self.journal.entries():
            i = e.get("batch")
            if not isinstance(i, int) or not 0 <= i < nb:
                continue
            f = self.out / "stats" / batch_name(i)
            try:
                # a readable footer with the batch's row count: complete, even after a
                # power loss that left a renamed but empty file (fsync off)
                rows = pq.read_metadata(f).num_rows
            except (OSError, pa.ArrowInvalid):
                continue
            if rows == len(self.plan.batches[i]):
                done[i] = e
        return done

    # .................................................................. state
    @property
    def pending(self) -> list[int]:
        return [i for i in range(len(self.plan.batches)) if i not in self.done]

    @property
    def sources_done(self) -> int:
        return sum(len(self.plan.batches[i]) for i in self.done)

    def start(self, cluster_info: dict | None = None) -> None:
        """Create the folder and write the manifest (status ``running``).

        Leftover temporary files of a killed run are removed, and when the plan has
        no Parquet file for the workers yet, one is found or written (see
        :func:`graph_parquet_path`).  On a resume the manifest's ``created`` time
        and earlier ``runs`` are kept, and a new run entry is appended.

        Parameters
        ----------
        cluster_info : dict, optional
            Stored in the manifest and in this run's entry
            (``pipeline.cluster.describe_cluster``).

        Raises
        ------
        RuntimeError
            The graph written for the workers does not load back identical (see
            :func:`graph_parquet_path`).
        OSError
            The folder or its files cannot be written.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        for sub in ("stats",) + (("distances",) if {"distances", "predecessors"} & set(self.plan.outputs) else ()):
            (self.out / sub).mkdir(exist_ok=True)
        remove_temporaries(self.out)
        g = self.plan.graph
        if not self.plan.graph_path:
            self.plan.graph_path = graph_parquet_path(g, self.plan.input_path, self.out)
        runs = list(self.manifest.get("runs", []))
        runs.append({"start": _now(), "batches_before": len(self.done), "cluster": cluster_info or {}})
        self.manifest = {
            "study_id": self.plan.study_id,
            "status": "running",
            "identity": self.plan.identity,
            "graph": {"name": g.name, "input": self.plan.input_path, "path": self.plan.graph_path, "fingerprint": g.fingerprint,
                      "vertices": g.n, "arcs": g.m, "directed": g.directed, "id_base": g.id_base,
                      "weight_type": g.weight_type, "meta": g.meta},
            "sources": dict(self.plan.sources.how, digest=self.plan.sources.digest()),
            "algorithm": self.plan.algorithm,
            "batch_size": self.plan.batch_size,
            "batches": len(self.plan.batches),
            "outputs": list(self.plan.outputs),
            "distance_form": self.plan.distance_form,
            "distance_estimate_bytes": self.plan.distance_estimate,
            "versions": _versions(),
            "cluster": cluster_info or {},
            "runs": runs,
            "created": self.manifest.get("created", _now()),
        }
        write_json_atomic(self.manifest, self.out / MANIFEST)

    def record(self, meta: dict) -> None:
        """Journal a finished batch (after its files exist).

        The journal line is what marks the batch done on resume, so it must be
        written only once the batch's files are complete.

        Parameters
        ----------
        meta : dict
            The metadata :func:`solve_batch` returned; ``meta["batch"]`` is the batch
            index.  It is stored with a ``done`` timestamp added.

        Raises
        ------
        KeyError
            ``meta`` has no ``batch``.  It is raised after the line is journaled;
            a resume ignores such a line, as it has no batch index.
        TypeError
            ``meta`` holds something that cannot be serialised to JSON.
        OSError
            The journal cannot be written.
        """
        self.record_many([meta])

    def record_many(self, metas: list[dict]) -> None:
        """Journal several finished batches with one disk flush (see :meth:`record`)."""
        now = _now()
        entries = [dict(meta, done=now) for meta in metas]
        self.journal.extend(entries)
        for entry in entries:
            self.done[int(entry["batch"])] = entry

    # .................................................................. tables
    def stats_table(self) -> pa.Table:
        """Every finished batch's stats, in plan order."""
        from gpu_sssp.kernels.result import STATS_SCHEMA

        parts = [pq.read_table(self.out / "stats" / batch_name(i), schema=STATS_SCHEMA) for i in sorted(self.done)]
        if not parts:
            return STATS_SCHEMA.empty_table()
        return pa.concat_tables(parts)

    def finish(self, *, wall_s: float, run_sources: int, run_meta: list[dict], workers: int,
               clock: tuple[float, float] | None = None) -> dict:
        """Summarise, write ``summary.json`` and the final manifest; return the summary."""
        stats = self.stats_table()
        summary = summarize(stats, self.plan, wall_s=wall_s, run_sources=run_sources,
                            run_meta=run_meta, workers=workers, clock=clock)
        write_json_atomic(summary, self.out / SUMMARY)
        complete = not self.pending
        self.manifest["status"] = "complete" if complete else "incomplete"
        run = self.manifest["runs"][-1]
        run.update(end=_now(), wall_s=wall_s, sources=run_sources, batches=len(run_meta),
                   kernel_ms=sum(m.get("kernel_ms", 0.0) for m in run_meta))
        self.manifest["timings"] = summary["timings"]
        self.manifest["summary"] = {k: v for k, v in summary.items() if k != "timings"}
        write_json_atomic(self.manifest, self.out / MANIFEST)
        return summary


# ---------------------------------------------------------------------- summary
def _pick(values: np.ndarray, ids: np.ndarray, mask: np.ndarray, fn) -> dict | None:
    if not mask.any():
        return None
    sub = np.flatnonzero(mask)
    j = sub[fn(values[sub])]
    v = values[j]
    return {"value": (int(v) if float(v).is_integer() else float(v)), "source": int(ids[j])}


def summarize(stats: pa.Table, plan: StudyPlan, *, wall_s: float = 0.0, run_sources: int = 0,
              run_meta: list | None = None, workers: int = 1,
              clock: tuple[float, float] | None = None) -> dict:
    """The study summary from its stats table.

    Definitions (``n`` = vertices, over the solved sources):

    - ``eccentricity_max``: the largest eccentricity (over the vertices each source
      reaches) and its source.
    - ``diameter``: the largest eccentricity among sources that reach all ``n``
      vertices.  ``exact`` when every vertex was a source and each reaches all;
      ``infinite`` when every vertex was a source and some do not reach all (not
      strongly connected); otherwise a ``lower bound``.
    - ``radius``: the smallest eccentricity among sources that reach all vertices;
      exact when every vertex was a source, else an ``upper bound``.
    - ``closeness``: ``(reached - 1) / sum_distance`` per source; largest and smallest
      with their sources (sources reaching nothing else are left out).

    Parameters
    ----------
    stats : pyarrow.Table
        Per-source statistics of every finished batch (``STATS_SCHEMA``).
    plan : StudyPlan
    wall_s : float
        Wall-clock seconds of this run.
    run_sources : int
        Sources solved in this run (fewer than ``stats`` holds after a resume).
    run_meta : list of dict, optional
        The metadata :func:`solve_batch` returned for this run's batches; the
        ``*_this_run`` timings are summed from it.
    workers : int
        Workers of the cluster, to set the kernel time against the workers' total
        time.
    clock : (float, float), optional
        Wall-clock (epoch) times at which the timed part of the run began (before the
        graph's registration and the submissions) and its last batch was collected;
        kept as ``timings["started_at"]`` / ``["collected_at"]`` so that the batches'
        own ``started`` / ``ended`` stamps can be set against them.

    Returns
    -------
    dict
        Counts (``sources_planned``, ``sources_solved``, ``complete``, ...),
        ``eccentricity_max``, ``diameter``, ``radius``, ``closeness_max`` and
        ``closeness_min`` (each ``{"value", "source"}`` or ``None``), totals, the
        algorithms and devices used, and ``timings``.  Sources are file ids as in
        the stats table.
    """
    run_meta = run_meta or []
    g = plan.graph
    n = g.n
    src = stats.column("source").to_numpy()
    reached = stats.column("reached").to_numpy()
    ecc = stats.column("eccentricity").to_numpy()
    sdist = stats.column("sum_distance").to_numpy()
    kernel_ms = stats.column("kernel_ms").to_numpy()
    relax = stats.column("relaxations").to_numpy()
    solved = int(len(src))
    every_source = plan.sources.how.get("kind") == "all" and solved == n
    full = reached == n
    finite = np.isfinite(ecc)
    diam = _pick(ecc, src, full & finite, np.argmax)
    rad = _pick(ecc, src, full & finite, np.argmin)
    if diam is not None:
        diam["kind"] = "exact" if every_source and full.all() else "lower bound"
        if every_source and not full.all():
            diam = {"value": None, "kind": "infinite (not strongly connected)",
                    "largest_finite": diam}
        rad["kind"] = "exact" if every_source else "upper bound"
    elif every_source:
        diam = {"value": None, "kind": "infinite (not strongly connected)"}
    with np.errstate(divide="ignore", invalid="ignore"):
        close = np.where(sdist > 0, (reached - 1) / sdist, np.nan)
    ok = np.isfinite(close)
    algorithms = sorted(set(stats.column("algorithm").to_pylist())) if solved else []
    devices = sorted(set(stats.column("device").to_pylist())) if solved else []
    kernel_total = float(kernel_ms.sum())
    run_kernel = float(sum(m.get("kernel_ms", 0.0) for m in run_meta))
    worker_s = wall_s * max(workers, 1)
    outside = max(worker_s - run_kernel / 1e3, 0.0)
    timings = {
        "wall_s": wall_s,
        "workers": workers,
        "sources_this_run": run_sources,
        "sources_per_s": (run_sources / wall_s) if wall_s > 0 else None,
        "kernel_ms_this_run": run_kernel,
        "kernel_ms_total": kernel_total,
        "solve_ms_this_run": float(sum(m.get("solve_ms", 0.0) for m in run_meta)),
        "write_ms_this_run": float(sum(m.get("write_ms", 0.0) for m in run_meta)),
        "outside_kernels_s": outside,
        "outside_kernels_vs_kernel": (outside / (run_kernel / 1e3)) if run_kernel > 0 else None,
    }
    if clock is not None:
        timings["started_at"], timings["collected_at"] = float(clock[0]), float(clock[1])
    return {
        "study_id": plan.study_id,
        "graph": g.name,
        "vertices": n,
        "arcs": g.m,
        "sources_planned": plan.sources.count,
        "sources_solved": solved,
        "complete": solved == plan.sources.count,
        "sources_reaching_all": int(full.sum()),
        "eccentricity_max": _pick(ecc, src, finite, np.argmax),
        "diameter": diam,
        "radius": rad,
        "closeness_max": _pick(close, src, ok, np.argmax),
        "closeness_min": _pick(close, src, ok, np.argmin),
        "reached_total": int(reached.sum()),
        "relaxations_total": int(relax.sum()),
        "algorithms": algorithms,
        "devices": devices,
        "timings": timings,
    }


# ---------------------------------------------------------------------- running
def submit_batches(client, plan: StudyPlan, indices, *, backend: str = "auto", retries: int | None = None):
    """Submit one task per batch index; return ``{future: index}``.

    Tasks are not pinned to workers (a dead worker's batches go elsewhere); keys are
    ``sssp-batch-<study id>-<index>``.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Its ``graph_path`` must already be set (see :meth:`Study.start`).
    indices : iterable of int
        Batch indices to run.
    backend : {"auto", "gpu", "cpu"}
        Backend the tasks ask for; ignored when the plan names an algorithm, whose
        own backend is used so that a method never runs on the wrong device.
    retries : int, optional
        Retries per task; default from dask config ``sssp.study.retries``.  Whether
        workers fsync their files comes from ``sssp.study.fsync`` (default on).

    Returns
    -------
    dict
        ``{future: batch index}``.
    """
    retries = int(setting("study.retries", retries))
    fsync = bool(setting("study.fsync", None, default=True))
    method = plan.algorithm
    if method != "auto":
        from gpu_sssp import kernels

        backend = kernels.get(method).backend
    indices = [int(i) for i in indices]
    if not indices:
        return {}
    # one message for every batch (client.map): submitted one by one, the batches after
    # the first waited for the client's next batched send (10 ms), and so did the GPU
    # that got none of the first ones
    futs = client.map(
        _solve_batch_task, indices, [plan.batches[i] for i in indices],
        key=plan.task_keys(indices), pure=False, retries=retries,
        fingerprint=plan.graph.fingerprint, graph_path=plan.graph_path, method=method,
        backend=backend, outputs=plan.outputs, distance_form=plan.distance_form,
        out=os.fspath(plan.out.resolve()), fsync=fsync,
    )
    return dict(zip(futs, indices))


def _solve_batch_task(index: int, sources, **kwargs) -> dict:
    """``solve_batch`` with the batch index and sources positional (for ``client.map``)."""
    return solve_batch(index=index, sources=sources, **kwargs)


def register_graph(client, plan: StudyPlan, backend: str = "auto") -> None:
    """Register the graph's worker plugin (runs now on every worker, and on restarts).

    Registering a plugin rather than scattering the graph means a worker that
    restarts or joins later loads the graph too.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Gives the Parquet path the workers read and the fingerprint they check.
    backend : {"auto", "gpu", "cpu"}
        Passed to :class:`pipeline.plugins.GraphPlugin`.
    """
    from gpu_sssp.pipeline.hierarchy import prepare_study
    from gpu_sssp.pipeline.plugins import GraphPlugin

    # CPU phast: the client builds and caches the hierarchy once, the workers read it
    ch = prepare_study(plan.graph, plan.sources.count, backend, plan.algorithm) is not None
    client.register_plugin(GraphPlugin(plan.graph_path, plan.graph.fingerprint, backend, hierarchy=ch))


def run_study(client, plan: StudyPlan, *, resume: bool = False, backend: str = "auto",
              cluster_info: dict | None = None, on_batch=None, on_start=None,
              study: "Study | None" = None) -> dict:
    """Run (or resume) a study on a connected client; return its summary.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
    resume : bool
        Skip the batches a previous run finished.
    backend : {"auto", "gpu", "cpu"}
        Backend tasks ask for (``pipeline.cluster.ClusterHandle.backend``).
    cluster_info : dict, optional
        Stored in the manifest (``pipeline.cluster.describe_cluster``).
    on_start : callable(study), optional
        Called once the folder is ready (``study.sources_done`` already done).
    on_batch : callable(meta, study), optional
        Called on the client after each batch is recorded.
    study : Study, optional
        The folder, already checked (``Study(plan, resume=...)``); made here when absent.

    Raises
    ------
    StudyError
        See :class:`Study`.
    BatchError, Exception
        A batch failed after its retries; the remaining tasks are cancelled and the
        finished ones stay recorded (``resume`` continues from there).
    """
    from distributed import as_completed

    if study is None:
        study = Study(plan, resume=resume)
    study.start(cluster_info)
    if on_start is not None:
        on_start(study)
    workers = len(client.scheduler_info().get("workers", {})) or 1
    if cluster_info and cluster_info.get("workers"):
        workers = int(cluster_info["workers"])
    pending = study.pending
    run_meta: list[dict] = []
    t0 = time.perf_counter()
    started_at = time.time()
    if pending:
        register_graph(client, plan, backend)
        futures = submit_batches(client, plan, pending, backend=backend)
        try:
            # results are fetched in the background as tasks finish (not one round trip
            # per batch in this loop), and batches that finish together are journaled
            # with one fsync: the tail of a short study is mostly this bookkeeping
            done = as_completed(list(futures), with_results=True)
            for group in done.batches():
                metas = [meta for _, meta in group]
                study.record_many(metas)
                for meta in metas:
                    run_meta.append(meta)
                    if on_batch is not None:
                        on_batch(meta, study)
        except BaseException:
            client.cancel(list(futures))
            raise
    wall = time.perf_counter() - t0
    run_sources = sum(m["rows"] for m in run_meta)
    return study.finish(wall_s=wall, run_sources=run_sources, run_meta=run_meta, workers=workers,
                        clock=(started_at, started_at + wall))
