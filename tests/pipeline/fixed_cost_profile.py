"""Where a multi-GPU study's fixed milliseconds per GPU go, measured on one GPU.

Run on a GPU machine from the repository root with ``shared/data`` present (weights
U[1,1000] seed 7, as ``cluster_bench``): ``python3 tests/pipeline/fixed_cost_profile.py
[NY FLA]``.  Prints, per graph:

1. ``sweep``: kernel time of one ``phast`` call of k random sources, k = 128 ... 8,192
   (median of 5): what a batch of each size costs, for splitting a study's tail.
2. ``lead``: a task's first call after a worker's warm-up, in a fresh thread after more
   than a second idle (as a study's first task in a Dask worker), split into stages
   by wrappers around the functions on its way (ms from the task's start; ``gpu`` is
   the first kernel's start on the GPU clock); then the same call again at once.
3. ``end``: the same for the work after the last kernel (statistics to the host, the
   statistics table, the Parquet encode, the file's write, fsync and rename).
4. ``write``: a statistics file of 8,192 and of 2,048 rows written 20 times in the study
   folder's file system, its parts apart (median ms).
"""
import functools
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

WORK = Path(os.environ.get("WORK", "/tmp/cluster-bench-work"))
WORK.mkdir(parents=True, exist_ok=True)
SOURCES = {"NY": "shared/data/road-topology/NY.gr.xz", "FLA": "shared/data/road-topology/FLA.gr.xz"}

STAMPS: list = []  # (name, enter, exit) in perf_counter seconds
ON = threading.Event()


def wrap(mod, name, label=None):
    fn = getattr(mod, name)
    if hasattr(fn, "__wrapped__"):  # wrapped for an earlier graph
        return

    @functools.wraps(fn)
    def w(*a, **k):
        if not ON.is_set():
            return fn(*a, **k)
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            STAMPS.append((label or f"{mod.__name__.rsplit('.', 1)[-1]}.{name}", t, time.perf_counter()))
    setattr(mod, name, w)


def load(name):
    from gpu_sssp.pipeline.ingest import ingest
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.hierarchy import load_hierarchy

    pq_path = WORK / f"{name}.parquet"
    t = time.perf_counter()
    if not pq_path.exists():
        ingest(SOURCES[name], str(pq_path), weights="random:1:1000:7")
    g = read_parquet(pq_path)
    load_hierarchy(g)
    print(f"{name}: n={g.n:,} loaded with its hierarchy in {time.perf_counter() - t:.1f} s", flush=True)
    return g, pq_path


def sweep_costs(g):
    from gpu_sssp import kernels

    rng = np.random.default_rng(3)
    for k in (128, 256, 512, 1024, 2048, 4096, 8192):
        ms = []
        for _ in range(5):
            r = kernels.solve(g, rng.integers(0, g.n, k), method="phast", distances=False)
            ms.append(r.counters["kernel_ms"])
        print(f"  sweep k={k:5d}: kernel {statistics.median(ms):7.3f} ms ({statistics.median(ms) / k * 1e3:.3f} us/source)",
              flush=True)


def show(title, t0, gpu_start_epoch, started_epoch):
    print(f"  {title}:")
    for name, a, b in sorted(STAMPS, key=lambda s: s[1]):
        print(f"    {name:32s} {1e3 * (a - t0):7.3f} -> {1e3 * (b - t0):7.3f}  ({1e3 * (b - a):6.3f} ms)")
    if gpu_start_epoch is not None:
        print(f"    {'first kernel (GPU clock)':32s} {1e3 * (gpu_start_epoch - started_epoch):7.3f}")


def task_profile(g, pq_path, unit):
    from gpu_sssp import kernels
    from gpu_sssp.kernels.gpu import clock, phast, transfer
    from gpu_sssp.pipeline import plugins, writers
    from gpu_sssp.pipeline.study import task as T
    from gpu_sssp.kernels import result as R
    import pyarrow.parquet as pq

    plugins._GRAPHS[g.fingerprint] = g
    # the plugin's warm-up (pipeline.plugins.GraphPlugin._warm), in a thread of its own
    warm = threading.Thread(target=lambda: plugins.GraphPlugin._warm(
        type("P", (), {"method": "phast", "backend": "gpu", "unit": unit, "timings": {}})(), g))
    warm.start(); warm.join()
    for mod, name in ((kernels, "solve"), (phast, "prepare"), (phast, "_device_arrays"), (phast, "plan_batches"),
                      (phast, "_work_arrays"), (phast, "source_positions"), (transfer, "to_device_async"),
                      (clock, "anchor"), (phast, "launch_sweep"), (phast, "stats_to_host"), (phast.hmod, "check_phast"),
                      (plugins, "worker_graph"), (T, "_study_method"), (T, "_solve_turn"), (T, "_write_batch"),
                      (R.Result, "stats_table"), (pq, "write_table"), (os, "fsync"), (os, "replace"),
                      (writers, "_ensure_dir")):
        wrap(mod, name)
    rng = np.random.default_rng(5)
    out = WORK / f"profile-{g.name}"
    shutil.rmtree(out, ignore_errors=True)
    got = {}

    def one(tag, idx, nb=1):
        STAMPS.clear()
        ON.set()
        t0 = time.perf_counter()
        started = time.time()
        r = T.solve_chunk(fingerprint=g.fingerprint, graph_path=str(pq_path), indices=list(range(10 * idx, 10 * idx + nb)),
                          sources=[rng.integers(0, g.n, unit) for _ in range(nb)], method="phast", backend="gpu", outputs=("stats",),
                          distance_form="wide", out=str(out), fsync=True, unit=unit)
        ON.clear()
        t1 = time.perf_counter()
        STAMPS.append(("solve_chunk (whole task)", t0, t1))
        show(f"{tag} (kernel {r['kernel_ms']:.2f} ms, kernel end at {1e3 * (r['gpu_end'] - started):.3f})",
             t0, r.get("gpu_start"), started)
        got[tag] = r

    time.sleep(1.2)  # the clock's anchor is renewed, as in a study's first task
    th = threading.Thread(target=one, args=("first task, fresh thread", 0)); th.start(); th.join()
    th = threading.Thread(target=lambda: (one("second task, fresh thread, at once", 1), one("third, same thread", 2)))
    th.start(); th.join()
    time.sleep(1.2)
    th = threading.Thread(target=one, args=("a chunk of 3 batches, fresh thread", 3, 3)); th.start(); th.join()


def write_profile(g):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from gpu_sssp import kernels
    from gpu_sssp.pipeline import writers
    from gpu_sssp.pipeline.study.task import STATS_PARQUET

    out = WORK / "write-profile" / "stats"
    shutil.rmtree(out.parent, ignore_errors=True)
    out.mkdir(parents=True)
    for k in (8192, 2048):
        r = kernels.solve(g, np.arange(k) % g.n, method="phast", distances=False)
        parts = {k2: [] for k2 in ("table", "encode (memory)", "write_table to path", "fsync", "rename",
                                   "write_parquet_atomic (all)")}
        opts = writers._parquet_options(**STATS_PARQUET)
        for i in range(20):
            t = time.perf_counter(); tab = r.stats_table(g.id_base, worker="w", for_file=True); parts["table"].append(time.perf_counter() - t)
            t = time.perf_counter(); sink = pa.BufferOutputStream(); pq.write_table(tab, sink, **opts); sink.getvalue()
            parts["encode (memory)"].append(time.perf_counter() - t)
            tmp = out / f"x{i}.tmp"
            t = time.perf_counter(); pq.write_table(tab, tmp, **opts); parts["write_table to path"].append(time.perf_counter() - t)
            t = time.perf_counter(); fd = os.open(tmp, os.O_RDONLY); os.fsync(fd); os.close(fd)
            parts["fsync"].append(time.perf_counter() - t)
            t = time.perf_counter(); os.replace(tmp, out / f"x{i}.parquet"); parts["rename"].append(time.perf_counter() - t)
            t = time.perf_counter()
            writers.write_parquet_atomic(tab, out / f"y{i}.parquet", fsync=True, fsync_folder=False, **STATS_PARQUET)
            parts["write_parquet_atomic (all)"].append(time.perf_counter() - t)
        print(f"  write {k} rows: " + ", ".join(f"{n} {1e3 * statistics.median(v):.3f}" for n, v in parts.items()),
              flush=True)
    t = time.perf_counter(); writers.fsync_folder(out); print(f"  folder fsync {1e3 * (time.perf_counter() - t):.3f} ms")
    print("  file system:", os.popen(f"df -T {out} | tail -1").read().strip())


def main(names):
    from gpu_sssp import kernels

    for name in names:
        g, pq_path = load(name)
        kernels.upload_graph(g)
        kernels.solve(g, np.zeros(1, dtype=np.int64), method="phast", distances=False)
        print(f"== {name}")
        sweep_costs(g)
        task_profile(g, pq_path, 8192 if name == "NY" else 4096)
        write_profile(g)


if __name__ == "__main__":
    main(sys.argv[1:] or ["NY", "FLA"])
