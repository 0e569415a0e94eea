"""How fast Dask feeds a study's GPUs, without GPUs: the real study loop on CPU workers
whose solver is a fake GPU; not collected by pytest.

Each worker's ``kernels.solve`` is replaced (``client.run``) by a model of one GPU: a call
holds the GPU turn for ``--launch-us``, queues ``sources x --us-per-source`` of device work
behind the work already queued on that worker's "device", sleeps until it is done, then
spends ``--host-tail-us`` on the host (the statistics' copy), and returns statistics with
the device span on the host clock (``gpu_start``/``gpu_end``), as ``phast`` does.  All the
rest is the product's: the plan, the graph plugin, the chunk schedule, the task, the files
and their fsyncs, the journal, Dask's messages and the timing figures.  So the time
outside the fake kernels is the pipeline's own cost, which is what issue 19's "outside
kernels" target is about once the kernel times are fixed.

    python tests/pipeline/feed_sim.py --workers 1,2,4 --sources 264346 --batch-size 8192

prints, per worker count: solve wall, the sum of device time, outside/kernel, per-GPU
lead / gaps / drain and the speedup over one worker.  A 2-core machine runs 4 workers'
writes on 2 cores: its figures are an upper bound of a 16-core host's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path


def install_fake(us_per_source: float, launch_us: float, host_tail_us: float) -> str:
    """In a worker: replace the solver by a fake GPU of this process."""
    import threading
    import time as _t

    import numpy as np

    import gpu_sssp.kernels as K
    from gpu_sssp.kernels.result import Result
    from gpu_sssp.pipeline.study import task

    dev = {"free_at": 0.0, "lock": threading.Lock()}
    off = _t.time() - _t.perf_counter()

    def solve(graph, sources, *, method=None, backend=None, turn=None, **_kw):
        sources = np.asarray(sources, dtype=np.int64)
        n = len(sources)
        if turn is not None:
            turn.acquire()
        try:
            _t.sleep(launch_us / 1e6)  # set-up and launches, the turn held
            with dev["lock"]:
                start = max(_t.perf_counter(), dev["free_at"])
                end = start + n * us_per_source / 1e6
                dev["free_at"] = end
        finally:
            if turn is not None:
                turn.release()
        left = end - _t.perf_counter()
        if left > 0:
            _t.sleep(left)
        _t.sleep(host_tail_us / 1e6)
        kernel_ms = (end - start) * 1e3
        return Result(sources=sources, distances=None, predecessors=None,
                      reached=np.full(n, graph.n, dtype=np.int64),
                      eccentricity=np.full(n, 1000.0), sum_distance=np.full(n, 10 ** 9, dtype=np.int64),
                      iterations=np.ones(n, dtype=np.int64), relaxations=np.full(n, graph.m, dtype=np.int64),
                      method="fake", backend="gpu", device="FakeGPU",
                      counters={"kernel_ms": kernel_ms, "gpu_start": start + off, "gpu_end": end + off})

    K.solve = solve
    task._study_method = lambda graph, method, backend, unit: ("fake", "gpu")
    task._solve_turn = lambda method, backend: task._Turn(task._SOLVE_LOCK)
    return "fake GPU installed"


def run(workers: int, args, graph_path: str, work: Path) -> dict:
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import study

    with LocalCluster(n_workers=workers, threads_per_worker=args.threads, processes=True,
                      host="127.0.0.1", dashboard_address=None, silence_logs=40) as cluster, \
            Client(cluster) as client:
        client.run(install_fake, args.us_per_source, args.launch_us, args.host_tail_us)
        rows = []
        for rep in range(args.repeats):
            out = work / f"w{workers}-{rep}"
            shutil.rmtree(out, ignore_errors=True)
            kw = {"random": args.sources, "seed": 1} if args.sources else {"sources": "all"}
            s = study(graph_path, client=client, algorithm="dijkstra", batch_size=args.batch_size, out=out,
                      keep_graph=True, **kw)
            t = s["timings"]
            ct = t["cluster"]
            rows.append({"workers": workers, "rep": rep, "solve_wall_s": t["solve_wall_s"],
                         "kernel_s": sum(w["kernel_s"] for w in ct["workers"].values()),
                         "outside_vs_kernel": t["outside_kernels_solve_vs_kernel"],
                         "lead_ms": ct.get("gpu_lead_s_sum", 0) / workers * 1e3,
                         "gaps_ms": ct.get("gpu_gaps_s_sum", 0) / workers * 1e3,
                         "drain_ms": ct.get("gpu_drain_s_sum", 0) / workers * 1e3,
                         "tasks": ct["tasks"]})
            if args.timeline and rep == args.repeats - 1:
                from tail_breakdown import breakdown  # beside this script

                breakdown(out / "journal.jsonl", out / "summary.json")
        return min(rows, key=lambda r: r["solve_wall_s"]) | {"all_walls": [r["solve_wall_s"] for r in rows]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--threads", type=int, default=3)
    ap.add_argument("--sources", type=int, default=0, help="random sources (0: all of the graph's)")
    ap.add_argument("--n", type=int, default=264346, help="vertices of the generated graph")
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--us-per-source", type=float, default=1.01, help="NY phast on an H200: 1.01")
    ap.add_argument("--launch-us", type=float, default=150.0)
    ap.add_argument("--host-tail-us", type=float, default=300.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--timeline", action="store_true", help="print the last run's tasks")
    ap.add_argument("--set", action="append", default=[], help="dask config sssp.KEY=VALUE for the study")
    args = ap.parse_args(argv)
    from gpu_sssp.pipeline.generate import generate

    import dask
    import yaml

    dask.config.set({f"sssp.{k}": yaml.safe_load(v) for k, v in (x.split("=", 1) for x in args.set)})
    work = Path(tempfile.mkdtemp(prefix="feed-sim-"))
    try:
        gpath = work / "g.parquet"
        generate("random", gpath, n=args.n, m=2 * args.n, seed=3)
        res = []
        for w in [int(x) for x in args.workers.split(",")]:
            r = run(w, args, os.fspath(gpath), work)
            res.append(r)
            base = res[0]["solve_wall_s"] if res[0]["workers"] == 1 else None
            sp = f"  {base / r['solve_wall_s']:.2f}x" if base else ""
            print(f"{w} workers: solve {r['solve_wall_s'] * 1e3:7.1f} ms (runs {', '.join(f'{x * 1e3:.1f}' for x in r['all_walls'])})"
                  f"  kernel {r['kernel_s'] * 1e3:7.1f} ms  outside {100 * r['outside_vs_kernel']:5.1f}%"
                  f"  lead/gaps/drain per GPU {r['lead_ms']:.1f}/{r['gaps_ms']:.1f}/{r['drain_ms']:.1f} ms"
                  f"  tasks {r['tasks']}{sp}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
