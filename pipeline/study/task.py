"""The worker side of a study: one batch solved on a worker, its files written there.

Runs inside Dask worker processes; returns only small metadata to the client.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from gpu_sssp.pipeline.writers import batch_name, wide_distance_table, write_parquet_atomic

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
                fsync: bool = True, targets_file: str | None = None, targets_digest: str = "",
                stats_over: str = "targets", matrix_form: str = "wide") -> dict:
    """Solve one batch on a worker and write its files; return small metadata.

    Files are written atomically, distances (or the matrix) before stats, so that an
    existing stats file means the batch's other files are complete too.  With
    ``targets_file`` (a matrix study, :mod:`pipeline.study.matrix`) the batch's
    sources x targets matrix is written to ``matrix/``.
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import SsspError
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
    matrix_kw = {}
    if targets_file:
        from gpu_sssp.pipeline.study.matrix import load_targets

        matrix_kw = {"targets": load_targets(targets_file, targets_digest, graph.id_base),
                     "stats_over": stats_over}
        want_dist = True
    try:
        res = kernels.solve(graph, np.asarray(sources, dtype=np.int64), method=method,
                            backend=backend, distances=want_dist,
                            predecessors="predecessors" in outputs, turn=turn, **matrix_kw)
    except SsspError as exc:
        # a product error (a negative cycle, a method that refuses the graph) is the
        # same on every retry and worker: it comes back as this batch's result, the
        # exception itself (it pickles), so Dask neither retries it nor logs its
        # traceback, and the client raises it once (pipeline.study.run)
        return {"batch": int(index), "error": exc}
    t2 = time.perf_counter()
    t1 = turn.got if turn is not None and turn.got is not None else t_load
    outdir = Path(out)
    name = batch_name(index)
    nbytes = 0
    files = []
    if targets_file:
        from gpu_sssp.pipeline.study.matrix import MATRIX_DIR, write_batch

        nbytes += write_batch(res, graph, outdir, name, matrix_form, fsync)
        files.append(f"{MATRIX_DIR}/{name}")
    elif want_dist:
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


def solve_batch_task(index: int, sources, **kwargs) -> dict:
    """``solve_batch`` with the batch index and sources positional (for ``client.map``)."""
    return solve_batch(index=index, sources=sources, **kwargs)
