"""The worker side of a study: one batch solved on a worker, its files written there.

Runs inside Dask worker processes; returns only small metadata to the client.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np

from gpu_sssp.kernels.result import STATS_DICTIONARY_COLUMNS
from gpu_sssp.pipeline.writers import (STATS_COMPRESSION, STATS_STATISTICS, batch_name, encode_parquet, fsync_file,
                                       wide_distance_table, write_bytes_atomic, write_parquet_atomic)

_SOLVE_LOCK = threading.Lock()
#: how a batch's statistics file is encoded (also what a worker's warm-up encodes once,
#: ``pipeline.plugins.GraphPlugin._warm``, so that the first batch pays no set-up): its
#: table is ``Result.stats_table(for_file=True)``, whose one-value columns are already
#: dictionaries; without the Arrow schema the file reads back in ``STATS_SCHEMA``
STATS_PARQUET = {"use_dictionary": STATS_DICTIONARY_COLUMNS, "compression": STATS_COMPRESSION,
                 "store_schema": False, "write_statistics": STATS_STATISTICS}
#: the footer key of every batch file that names the study that wrote it
#: (``StudyPlan.study_id``): a resume adopts or keeps only its own study's files
STUDY_KEY = "gpu_sssp.study"


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


def _worker_name() -> tuple[str, str | None]:
    """This worker's name and the key of the task running in this thread."""
    try:
        from distributed import get_worker

        w = get_worker()
        try:
            key = w.get_current_task()
        except Exception:
            key = None
        return (str(w.name) if w.name is not None else str(w.address)), (str(key) if key is not None else None)
    except ValueError:
        return "local", None


def _study_method(graph, method: str, backend: str, unit: int) -> tuple[str, str]:
    """``(method, backend)`` a chunk solves with: ``auto`` is decided for one *batch*
    (``unit`` sources), as when every batch was its own task, never for the whole chunk:
    a chunk of thousands of sources must not make ``auto`` build a hierarchy on a
    worker (the client builds and caches it once, ``pipeline.hierarchy.prepare_study``)."""
    if method != "auto":
        return method, backend
    from gpu_sssp.kernels import auto
    from gpu_sssp.kernels.registry import resolve_backend

    b = resolve_backend("auto", backend)
    return auto.choose(graph, max(1, int(unit)), b), b


def _check_batch_memory(graph, n_sources: int, outputs, targets, distances: bool, method: str,
                        backend: str) -> None:
    """A batch whose result cannot fit in this worker's memory is refused before it is
    solved (as ``kernels.solve`` would), with the way on a study has: ``solve``'s own
    advice told a study's user "a smaller --batch-size, then --resume", which a resume
    refuses (a folder's batches are fixed), and "distances=False", which a study does
    not take."""
    from gpu_sssp.kernels.errors import opt
    from gpu_sssp.kernels.registry import check_output_memory

    stats = ""
    if targets is None and distances and ("distances" in outputs or "predecessors" in outputs):
        stats = f", or {opt('--outputs stats')} for the per-source statistics only"
    advice = (f"start the study again with a smaller {opt('--batch-size')} (in a new {opt('--out')} folder, or "
              f"this one removed: a folder's batches are fixed, {opt('--resume')} keeps them){stats}")
    check_output_memory(graph, n_sources, targets=targets, predecessors="predecessors" in outputs,
                        distances=distances, method=method, backend=backend, advice=advice)


def _part(res, a: int, b: int, share: float):
    """Rows ``a:b`` of a Result, its whole-call counters apportioned by ``share``."""
    from gpu_sssp.kernels.result import Result

    counters = dict(res.counters)
    counters["kernel_ms"] = float(res.counters.get("kernel_ms", 0.0)) * share
    return Result(sources=res.sources[a:b],
                  distances=None if res.distances is None else res.distances[a:b],
                  predecessors=None if res.predecessors is None else res.predecessors[a:b],
                  reached=res.reached[a:b], eccentricity=res.eccentricity[a:b],
                  sum_distance=res.sum_distance[a:b], iterations=res.iterations[a:b],
                  relaxations=res.relaxations[a:b], method=res.method, backend=res.backend,
                  device=res.device, counters=counters, targets=res.targets, stats_over=res.stats_over)


def _write_batch(res, graph, index: int, outputs: tuple, distance_form: str, outdir: Path,
                 worker: str, fsync: bool, matrix_form: str | None = None,
                 study: str = "") -> tuple[int, list, dict]:
    """Write one batch's files (distances or its travel-time matrix before stats);
    ``(bytes, files, {"stats_table_ms", "stats_encode_ms", "stats_file_ms"})``: the
    statistics file's steps (its rows built, encoded, written and renamed).
    ``matrix_form``: a matrix study
    (:mod:`pipeline.study.matrix`) writes the batch's sources x targets matrix there.
    ``study``: the study's id, written into every file's footer (:data:`STUDY_KEY`)."""
    from gpu_sssp.pipeline.study.plan import batch_folders

    name = batch_name(index)
    if not outdir.is_dir():  # not made again here (the writers make missing folders)
        try:  # asked of the file system itself: a stat may answer from a stale cache (NFS)
            os.mkdir(outdir)
        except FileExistsError:
            pass
        else:
            os.rmdir(outdir)
            raise FileNotFoundError(2, f"no study folder {outdir} on this worker (removed during the study, or "
                                    "not on a file system the worker shares)")
    nbytes = 0
    files = []
    # the folders as StudyPlan.batch_files names them (one rule), stats last: written below
    for folder in batch_folders(outputs, distance_form, matrix_form is not None)[:-1]:
        path = outdir / folder / name
        if matrix_form is not None:  # matrix/
            from gpu_sssp.pipeline.study.matrix import write_batch

            nbytes += write_batch(res, graph, outdir, name, matrix_form, fsync, study=study)
        elif distance_form == "long":  # distances/: the reachable pairs, predecessors there too
            nbytes += write_parquet_atomic(_named(res.to_table(graph.id_base, reachable_only=True), study), path,
                                           fsync=fsync)
        else:  # distances/ or predecessors/: a row per vertex, a column per source
            field = "predecessors" if folder == "predecessors" else "distances"
            nbytes += write_parquet_atomic(_named(wide_distance_table(res, graph.id_base, field=field), study),
                                           path, fsync=fsync)
        files.append(f"{folder}/{name}")
    t = time.perf_counter()
    stats = res.stats_table(graph.id_base, worker=worker, for_file=True)
    t_table = time.perf_counter()
    data = encode_parquet(stats, **STATS_PARQUET, key_value_metadata={STUDY_KEY: study} if study else None)
    t_encode = time.perf_counter()
    # the statistics file marks the batch done, so it comes last.  It is renamed in place
    # unflushed: the caller flushes it once the batch is reported (solve_chunk), and its
    # folder once at the study's end (Study.finish).  A power loss before those flushes
    # may leave it missing or empty; the resume reads every statistics file's footer and
    # redoes such a batch.  (Distances and matrices are flushed before it, as it needs.)
    nbytes += write_bytes_atomic(data, outdir / "stats" / name, fsync=False, fsync_folder=False)
    files.append(f"stats/{name}")
    steps = {"stats_table_ms": (t_table - t) * 1e3, "stats_encode_ms": (t_encode - t_table) * 1e3,
             "stats_file_ms": (time.perf_counter() - t_encode) * 1e3}
    return nbytes, files, steps


def _named(table, study: str):
    """``table`` with the study's id in its schema metadata (a Parquet file written with
    its Arrow schema keeps it in its footer's key-value metadata too)."""
    if not study:
        return table
    return table.replace_schema_metadata({**(table.schema.metadata or {}), STUDY_KEY.encode(): study.encode()})


def solve_chunk(*, fingerprint: str, graph_path: str, indices, sources, method: str, backend: str,
                outputs: tuple, distance_form: str, out: str, fsync: bool = True, unit: int | None = None,
                targets_file: str | None = None, targets_digest: str = "", stats_over: str = "targets",
                matrix_form: str = "wide", report: str | None = None, study: str = "") -> dict:
    """Solve a chunk of consecutive batches on a worker and write each batch's files;
    return small metadata (see :mod:`pipeline.study.schedule`).  A GPU chunk is one solver
    call; a CPU chunk is solved batch by batch, each batch's files written (and, with
    ``report``, reported) as it ends.

    Files are written atomically, batch by batch, distances before stats, so that an
    existing stats file means the batch's other files are complete too.  With ``fsync``
    the distances (or matrix) files are flushed before their statistics file is renamed
    in place; the statistics files are flushed after the chunk's report (the report's
    trip to the client and its journal line overlap the flush; the task, and so the
    study, ends only once they are flushed).

    Parameters
    ----------
    indices : sequence of int
        The chunk's batch indices.
    sources : sequence of ndarray
        Each batch's sources (internal indices), in the same order.
    unit : int, optional
        The study's batch size (``auto`` decides the method for one batch of it; default
        the first batch's length).
    targets_file, targets_digest, stats_over, matrix_form : optional
        A matrix study (:mod:`pipeline.study.matrix`): solve with the targets of that
        file (checked against its digest) and write each batch's matrix.
    report : str, optional
        A Dask event topic: the result is also logged there once the files are
        written (before the statistics files' flush), which pushes it to the study's
        client (``pipeline.study.run._Reports``) on the streams the task's completion
        takes, without a fetch.  Each batch of a CPU chunk but its last is reported
        there as it ends too: ``{"task", "partial": True, "worker", "batches": [its
        metadata]}`` (the chunk's result still lists every batch).

    Returns
    -------
    dict
        ``{"batches": [per-batch metadata], "worker", "started", "ended", "kernel_ms",
        "solve_ms", "task_ms", ...}`` for the chunk as a whole; each batch's metadata holds
        its solver call's times apportioned by its share of the sources (``kernel_ms``,
        ``solve_ms``, ``wait_ms``, ``held_ms``; ``load_ms`` and ``task_ms`` of the chunk;
        its own ``write_ms``) and the chunk's ``started``/``ended`` (a batch reported
        before its chunk's end: its own ``started``/``ended``/``task_ms``).  A GPU solve adds
        ``gpu_start``/``gpu_end`` (to the chunk and to each of its batches): when the
        chunk's device work began and ended.  A product error
        (``SsspError``) comes back as ``{"batch": first index, "error": exc}``.
    """
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import SsspError
    from gpu_sssp.pipeline.plugins import worker_graph

    t0 = time.perf_counter()
    started = time.time()  # wall clock, comparable with the client's (same host or NTP)
    indices = [int(i) for i in indices]
    parts = [np.asarray(s, dtype=np.int64) for s in sources]
    try:
        graph = worker_graph(fingerprint, graph_path)
    except SsspError as exc:  # this worker's graph plugin failed (WorkerGraphError): as below
        return {"batch": indices[0], "error": exc}
    worker, task_key = _worker_name()
    want_dist = "distances" in outputs or "predecessors" in outputs
    matrix_kw = {}
    if targets_file:
        from gpu_sssp.pipeline.study.matrix import load_targets

        matrix_kw = {"targets": load_targets(targets_file, targets_digest, graph.id_base),
                     "stats_over": stats_over}
        want_dist = True
    t_load = time.perf_counter()
    # one solve's device work at a time per process (= per GPU for dask-cuda workers): a
    # worker's second thread collects and writes the previous chunk meanwhile, and kernel
    # times stay honest (CUDA events around each call's own work)
    try:
        method, backend = _study_method(graph, method, backend, unit or len(parts[0]))
        _check_batch_memory(graph, sum(len(p) for p in parts), outputs, matrix_kw.get("targets"),
                            want_dist, method, backend)
        turn = _solve_turn(method, backend)
    except SsspError as exc:
        return {"batch": indices[0], "error": exc}
    # a GPU chunk is one solver call (its kernels back to back); a CPU chunk is solved
    # batch by batch (its solver's set-up is nothing beside a batch's seconds): each batch's
    # files are written and reported as it ends, so that the study's progress moves per
    # batch and an interrupted chunk keeps the batches it finished
    groups = ([(indices, parts)] if turn is not None or len(parts) == 1
              else [([i], [p]) for i, p in zip(indices, parts)])
    total = max(1, sum(len(p) for p in parts))
    outdir = Path(out)
    metas = []
    spent = {"solve_ms": 0.0, "wait_ms": 0.0, "write_ms": 0.0, "kernel_ms": 0.0}
    gpu_span: dict = {}
    for g_number, (g_indices, g_parts) in enumerate(groups):
        t_start = t_load if g_number == 0 else time.perf_counter()
        try:
            res = kernels.solve(graph, np.concatenate(g_parts) if len(g_parts) > 1 else g_parts[0], method=method,
                                backend=backend, distances=want_dist,
                                predecessors="predecessors" in outputs, turn=turn, **matrix_kw)
        except SsspError as exc:
            # a product error (a negative cycle, a method that refuses the graph) is the
            # same on every retry and worker: it comes back as this chunk's result, the
            # exception itself (it pickles), so Dask neither retries it nor logs its
            # traceback, and the client raises it once (pipeline.study.run)
            return {"batch": g_indices[0], "error": exc}
        t2 = time.perf_counter()
        t1 = turn.got if turn is not None and turn.got is not None else t_start
        held = (turn.gave - turn.got) * 1e3 if turn is not None and turn.gave is not None else (t2 - t1) * 1e3
        kernel_ms = float(res.counters.get("kernel_ms", 0.0))
        g_total = max(1, sum(len(p) for p in g_parts))
        g_metas = []
        a = 0
        for index, p in zip(g_indices, g_parts):
            b = a + len(p)
            share = len(p) / g_total
            tw = time.perf_counter()
            try:
                nbytes, files, steps = _write_batch(_part(res, a, b, share), graph, index, outputs, distance_form,
                                                       outdir, worker, fsync, matrix_form if targets_file else None,
                                                       study=study)
            except OSError as exc:
                # the output folder's trouble (full, read-only, a file size limit, removed):
                # as a product error, the same on a retry, so it comes back as this chunk's
                # result - no retries, no worker traceback per try - and the client's one line
                # names the batch and the folder (pyarrow's message names neither)
                why = exc.strerror or str(exc) or type(exc).__name__
                return {"batch": index, "error": OSError(exc.errno, f"writing batch {index} into {outdir}: {why}")}
            g_metas.append({
                "batch": index, "rows": int(b - a), "bytes": int(nbytes), "files": files, "worker": worker,
                "device": res.device, "algorithm": res.method,
                "kernel_ms": kernel_ms * share,
                "solve_ms": (t2 - t1) * 1e3 * share,
                "write_ms": (time.perf_counter() - tw) * 1e3,
                **steps,  # of write_ms: the stats file's rows built, encoded, written and renamed
                "load_ms": (t_load - t0) * 1e3 * (len(p) / total),
                "wait_ms": (t1 - t_start) * 1e3 * share,  # for the GPU turn (this worker's other solve)
                "held_ms": held * share,  # the GPU turn held: set-up and launches
                "chunk": indices[0], "chunk_batches": len(indices), "task": task_key,
            })
            a = b
        spent["solve_ms"] += (t2 - t1) * 1e3
        spent["wait_ms"] += (t1 - t_start) * 1e3
        spent["write_ms"] += (time.perf_counter() - t2) * 1e3
        spent["kernel_ms"] += kernel_ms
        gpu_span = {k: float(res.counters[k]) for k in ("gpu_start", "gpu_end") if k in res.counters}
        metas.extend(g_metas)
        if g_number < len(groups) - 1:  # a batch of a CPU chunk: reported now, the chunk's last with it
            if report and task_key is not None:
                now = time.perf_counter()
                for m in g_metas:
                    m["task_ms"] = (now - t_start) * 1e3
                    m["started"] = started + (t_start - t0)
                    m["ended"] = started + (now - t0)
                _report(report, {"task": task_key, "partial": True, "worker": worker, "batches": g_metas})
            if fsync:
                for index in g_indices:
                    fsync_file(outdir / "stats" / batch_name(index))
    t3 = time.perf_counter()
    for m in metas:
        if "ended" in m:  # reported with its batch (above): its own times stand
            continue
        m["task_ms"] = (t3 - t0) * 1e3 * (m["rows"] / total)
        m["started"] = started
        m["ended"] = started + (t3 - t0)
        m.update(gpu_span)  # the chunk's, as started/ended
    out = {"batches": metas, "worker": worker, "task": task_key, "started": started, "ended": started + (t3 - t0),
           "rows": int(total), "kernel_ms": spent["kernel_ms"], "solve_ms": spent["solve_ms"],
           "write_ms": spent["write_ms"], "load_ms": (t_load - t0) * 1e3, "wait_ms": spent["wait_ms"],
           "task_ms": (t3 - t0) * 1e3, "algorithm": res.method, "device": res.device,
           **gpu_span}  # when the GPU ran the chunk (epoch seconds, kernels.gpu.clock); absent on CPUs
    if report and task_key is not None:
        _report(report, out)
    if fsync:
        for index in groups[-1][0]:
            fsync_file(outdir / "stats" / batch_name(index))
    return out


def _report(topic: str, result: dict) -> None:
    """Log ``result`` on the Dask event ``topic`` (best effort: without it the client
    fetches the task's result)."""
    try:
        from distributed import get_worker

        # wrapped: Dask's scheduler writes the sending worker's address into a dict
        # event's "worker" key, which is the worker's name here
        get_worker().log_event(topic, {"result": result})
    except Exception:  # not in a worker, or not msgpack-able: the result is fetched instead
        pass


def solve_batch(*, fingerprint: str, graph_path: str, index: int, sources: np.ndarray,
                method: str, backend: str, outputs: tuple, distance_form: str, out: str,
                fsync: bool = True, **matrix_options) -> dict:
    """Solve one batch on a worker and write its files; return its metadata (a chunk of
    one batch, see :func:`solve_chunk`, which takes ``matrix_options`` too)."""
    got = solve_chunk(fingerprint=fingerprint, graph_path=graph_path, indices=[index], sources=[sources],
                      method=method, backend=backend, outputs=outputs, distance_form=distance_form,
                      out=out, fsync=fsync, **matrix_options)
    if "error" in got:
        return got
    return got["batches"][0]


def solve_chunk_task(indices, sources, **kwargs) -> dict:
    """``solve_chunk`` with the batch indices and sources positional (for ``client.map``)."""
    return solve_chunk(indices=indices, sources=sources, **kwargs)


def solve_batch_task(index: int, sources, **kwargs) -> dict:
    """``solve_batch`` with the batch index and sources positional (for ``client.map``)."""
    return solve_batch(index=index, sources=sources, **kwargs)
