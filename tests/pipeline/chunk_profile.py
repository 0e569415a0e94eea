"""Where a phast study's host time goes on one GPU (NY, weights U[1,1000] seed 7).

Run on a GPU machine from the repository root with ``shared/data`` present:
``python3 tests/pipeline/chunk_profile.py``.  Prints, in order: ``kernels.solve`` wall
against kernel time for 4,096 / 16,384 / 65,536 sources; one task's parts
(``solve_chunk`` of 1, 4, 16 batches, with and without fsync; a cProfile of 16); a
worker's 1, 2 or 3 threads taking guided chunks of all NY sources without Dask (GPU
time outside kernels); two local one-GPU studies of all NY sources (the second warm).
"""
import cProfile, io, json, os, pstats, subprocess, sys, time, shutil
from pathlib import Path
import numpy as np

OUT = Path(os.environ.get("OUT", "/tmp/prof-out")); OUT.mkdir(parents=True, exist_ok=True)
work = Path("/tmp/prof-work"); work.mkdir(exist_ok=True)
src = Path("shared/data/road-topology/NY.gr.xz")
pq_path = work / "NY.parquet"
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.graph import read_parquet
from gpu_sssp.pipeline.hierarchy import load_hierarchy
t = time.perf_counter()
if not pq_path.exists():
    ingest(str(src), str(pq_path), weights="random:1:1000:7")
g = read_parquet(pq_path)
h = load_hierarchy(g)
print(f"prepare {time.perf_counter()-t:.1f} s", flush=True)
from gpu_sssp import kernels
from gpu_sssp.kernels.gpu import phast
kernels.upload_graph(g)
t = time.perf_counter(); prep = phast.prepare(g); print(f"phast.prepare {time.perf_counter()-t:.3f} s")
kernels.solve(g, np.zeros(1, dtype=np.int64), method="phast", distances=False)
import cupy as cp
rng = np.random.default_rng(1)
for N in (4096, 16384, 65536):
    for rep in range(3):
        srcs = rng.integers(0, g.n, N)
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        r = kernels.solve(g, srcs, method="phast", distances=False)
        w = time.perf_counter() - t
        print(f"solve N={N}: wall {w*1e3:.2f} ms kernel {r.counters['kernel_ms']:.2f} ms", flush=True)
from gpu_sssp.pipeline.study.task import solve_chunk
from gpu_sssp.pipeline.plugins import _GRAPHS
_GRAPHS[g.fingerprint] = g
for fsync in (True, False):
    for nb in (1, 4, 16):
        out = work / f"chunk-{nb}-{fsync}"; shutil.rmtree(out, ignore_errors=True)
        parts = [np.arange(i*4096, (i+1)*4096) for i in range(nb)]
        t = time.perf_counter()
        got = solve_chunk(fingerprint=g.fingerprint, graph_path=str(pq_path), indices=list(range(nb)), sources=parts,
                          method="phast", backend="gpu", outputs=("stats",), distance_form="wide", out=str(out), fsync=fsync)
        w = time.perf_counter() - t
        keys = ("kernel_ms", "solve_ms", "write_ms", "load_ms", "task_ms")
        print(f"chunk nb={nb} fsync={fsync}: wall {w*1e3:.1f} ms", {k: round(got[k], 2) for k in keys},
              "stats_table_ms", round(sum(m["stats_table_ms"] for m in got["batches"]), 2), flush=True)
out = work / "chunk-prof"; shutil.rmtree(out, ignore_errors=True)
parts = [np.arange(i*4096, (i+1)*4096) for i in range(16)]
pr = cProfile.Profile(); pr.enable()
solve_chunk(fingerprint=g.fingerprint, graph_path=str(pq_path), indices=list(range(16)), sources=parts,
            method="phast", backend="gpu", outputs=("stats",), distance_form="wide", out=str(out), fsync=True)
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(30); print(s.getvalue()[:6000])
# a worker's two threads on guided chunks of all NY sources (no Dask)
import threading
from gpu_sssp.pipeline.study.schedule import ChunkSchedule
batches = [np.arange(i, min(i + 4096, g.n)) for i in range(0, g.n, 4096)]
for threads, interval in ((1, 0.005), (2, 0.005), (3, 0.005), (2, 0.0005), (3, 0.0005)):
    sys.setswitchinterval(interval)
    sched = ChunkSchedule(list(range(len(batches))), threads + 1)
    out = work / f"pipe-{threads}"; shutil.rmtree(out, ignore_errors=True)
    lock = threading.Lock(); res = []
    def run_one():
        while True:
            with lock:
                ch = sched.take(1)
            if not ch:
                return
            ch = ch[0]
            res.append(solve_chunk(fingerprint=g.fingerprint, graph_path=str(pq_path), indices=ch,
                                   sources=[batches[i] for i in ch], method="phast", backend="gpu",
                                   outputs=("stats",), distance_form="wide", out=str(out), fsync=True))
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    ths = [threading.Thread(target=run_one) for _ in range(threads)]
    [x.start() for x in ths]; [x.join() for x in ths]
    w = time.perf_counter() - t
    k = sum(r["kernel_ms"] for r in res) / 1e3
    print(f"pipeline threads={threads} switch={interval}: {len(res)} chunks, wall {w:.3f} s, kernel {k:.3f} s, outside {(w-k)/k:.1%}", flush=True)
# the real local study, journal kept
if __name__ == "__main__":
    st = work / "study"; shutil.rmtree(st, ignore_errors=True)
    for k, interval in enumerate(("0.005", "0.005")):
        shutil.rmtree(st, ignore_errors=True)
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(pq_path), "--sources", "all",
                            "--out", str(st), "--no-dashboard", "--gpus", "0"], capture_output=True, text=True)
        print("study rc", p.returncode, f"CLI {time.perf_counter()-t:.1f} s", p.stderr[-800:] if p.returncode else "")
        if p.returncode == 0:
            sm = json.load(open(st / "summary.json"))["timings"]
            print({k: sm.get(k) for k in ("wall_s", "solve_wall_s", "kernel_ms_this_run", "outside_kernels_solve_vs_kernel")})
            print({k: sm["startup"].get(k) for k in ("workers_ready_s", "first_batch_s", "warm_s_max")})
            for w, d in sm["cluster"]["workers"].items():
                print(w, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()})
    shutil.copy(st / "journal.jsonl", OUT / "journal.jsonl"); shutil.copy(st / "summary.json", OUT / "summary.json")
