"""GPU check of `sssp study` on 1 and 2 GPUs (LocalCUDACluster); not collected by pytest.

Runs, on 1 GPU and then on 2 GPUs (CUDA_VISIBLE_DEVICES "0" and "0,1"):

- all sources of rome99 (DIMACS .gr);
- 4,096 random sources (seed 1) of the NY road topology (PACE ``p tw`` file) with
  weights U[1,1000] seed 7 (``default_rng(7).integers(1, 1001)`` per edge in file
  order, the same weight for both directions),

with the method ``kernels.solve(..., method="auto")`` picks (or ``--algorithm``).
Checks the per-source statistics against the CPU backend (SciPy Dijkstra) for a
sample of sources, and that on 2 GPUs both workers solved batches.  Writes JSON with
sources/s on 1 and 2 GPUs, the scaling efficiency and the kernel time against the
wall time (time outside kernels = wall x workers - kernel time).

Usage (from the repository root)::

    python tests/pipeline/gpu_study_check.py --ny data/NY.gr.xz --rome data/rome99.gr \
        --out gpu-study.json [--algorithm auto] [--batch-size 64] [--gpus 0,1]

``--cpu-dry-run`` runs the same steps on local CPU clusters of 1 and 2 workers with
fewer sources (to check the script itself on a machine without GPUs).
"""
from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def build_graphs(args, work: Path) -> dict:
    from gpu_sssp.pipeline.ingest import ingest

    graphs = {}
    if args.rome:
        out = work / "rome99.parquet"
        if not out.exists():
            ingest(args.rome, out)
        graphs["rome99"] = {"path": out, "sources": {"sources": "all"}}
    if args.ny:
        out = work / "NY-w7.parquet"
        if not out.exists():
            ingest(args.ny, out, weights="random:1:1000:7")
        graphs["NY"] = {"path": out, "sources": {"random": args.random, "seed": args.seed}}
        if args.ny_all and not args.cpu_dry_run:
            graphs["NY-all"] = {"path": out, "sources": {"sources": "all"}}
    if not graphs:
        raise SystemExit("give --rome and/or --ny")
    return graphs


def check_against_cpu(graph, stats, sample: int, seed: int = 0) -> dict:
    """Compare a sample of stats rows with kernels' CPU Dijkstra (exact for integer weights)."""
    from gpu_sssp import kernels

    src = stats.column("source").to_numpy()
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(src), size=min(sample, len(src)), replace=False))
    ids = src[pick]
    ref = kernels.solve(graph, graph.to_index(ids), method="dijkstra", distances=False)
    got_r = stats.column("reached").to_numpy()[pick]
    got_e = stats.column("eccentricity").to_numpy()[pick]
    got_s = stats.column("sum_distance").to_numpy()[pick]
    bad = []
    for k in range(len(ids)):
        ok = (got_r[k] == ref.reached[k] and got_e[k] == ref.eccentricity[k]
              and got_s[k] == float(ref.sum_distance[k]))
        if not ok:
            bad.append({"source": int(ids[k]), "reached": [int(got_r[k]), int(ref.reached[k])],
                        "eccentricity": [float(got_e[k]), float(ref.eccentricity[k])],
                        "sum_distance": [float(got_s[k]), float(ref.sum_distance[k])]})
    return {"checked": int(len(ids)), "mismatches": len(bad), "examples": bad[:5]}


def task_breakdown(out: Path, wall_s: float, workers: int, started_at: float | None = None,
                   collected_at: float | None = None) -> dict:
    """Where the time outside kernels went, from the batches' journal lines (seconds).

    ``started_at`` / ``collected_at``: the wall-clock bounds of the study's timed part
    (``timings`` of its summary).  With them each worker's time outside kernels splits
    into the start latency (to its first task's start), the busy span's time outside
    kernels (first start to last end, minus its kernel time: host work of the solves,
    writing not hidden by the second thread, gaps between tasks) and the drain (its last
    task's end to the collection of the last batch).
    """
    from gpu_sssp.pipeline.study import JOURNAL

    rows = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "task_ms" in r]
    tot = {k: sum(r.get(k, 0.0) for r in rows) / 1e3 for k in ("load_ms", "solve_ms", "kernel_ms",
                                                                 "write_ms", "task_ms", "wait_ms",
                                                                 "stats_table_ms")}
    per_worker = {}
    for r in rows:
        per_worker[r["worker"]] = per_worker.get(r["worker"], 0.0) + r["kernel_ms"] / 1e3
    timeline = {}
    batches = []
    if started_at is not None and all("started" in r for r in rows):
        # each batch on the run's clock (ms from the start of the timed part): task start,
        # the solve (GPU held: after the load and the wait for the worker's other solve),
        # its kernel time, and the task's end (files written)
        for r in sorted(rows, key=lambda r: (r["worker"], r["started"])):
            t = (r["started"] - started_at) * 1e3
            acq = t + r.get("load_ms", 0.0) + r.get("wait_ms", 0.0)
            batches.append({"worker": r["worker"], "batch": r.get("batch"), "start_ms": round(t, 2),
                            "solve_from_ms": round(acq, 2), "solve_to_ms": round(acq + r["solve_ms"], 2),
                            "kernel_ms": round(r["kernel_ms"], 2), "write_ms": round(r["write_ms"], 2),
                            "end_ms": round((r["ended"] - started_at) * 1e3, 2)})
    if started_at is not None and collected_at is not None and all("started" in r for r in rows):
        for w in sorted({r["worker"] for r in rows}):
            mine = [r for r in rows if r["worker"] == w]
            first, last = min(r["started"] for r in mine), max(r["ended"] for r in mine)
            timeline[w] = {"start_latency_s": first - started_at,
                           "span_outside_kernel_s": (last - first) - per_worker[w],
                           "drain_s": collected_at - last}
    return {
        "timeline": timeline,
        "batches": batches,
        "tasks": len(rows),
        "solve_outside_kernel_s": tot["solve_ms"] - tot["kernel_ms"],
        "write_s_tasks": tot["write_ms"], "load_s": tot["load_ms"], "task_s": tot["task_ms"],
        "lock_wait_s": tot["wait_ms"], "stats_table_s": tot["stats_table_ms"],
        # tasks overlap (two threads per GPU worker: one writes while the other solves), so
        # the GPU's idle time is wall x workers - kernel time (outside_kernels_s)
        "kernel_s_per_worker": per_worker,
    }


def run_one(client, handle_backend, info, gpath, sources_kw, out: Path, args, *, warm: bool):
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study, run_study

    g = read_parquet(gpath)
    if warm:
        # compile kernels and upload the graph on every worker before timing
        sp = plan_sources(g, random=min(g.n, max(2, info["workers"]) * 2 * (args.batch_size or 64)), seed=99)
    else:
        sp = plan_sources(g, **sources_kw)
    if out.exists():
        shutil.rmtree(out)
    plan = plan_study(g, gpath, sp, out=out, algorithm=args.algorithm, batch_size=args.batch_size)
    # the client's garbage-collection pauses during the study (a diagnostic: a pause
    # there delays submissions or the journal)
    pauses = []

    def on_gc(phase, info_):
        if phase == "start":
            pauses.append([time.perf_counter(), None, info_.get("generation")])
        elif pauses and pauses[-1][1] is None:
            pauses[-1][1] = time.perf_counter()

    import gc

    gc.callbacks.append(on_gc)
    t0 = time.perf_counter()
    try:
        summary = run_study(client, plan, backend=handle_backend, cluster_info=info)
    finally:
        gc.callbacks.remove(on_gc)
    wall = time.perf_counter() - t0
    done = [(b - a, gen) for a, b, gen in pauses if b is not None]
    summary["client_gc"] = {"collections": len(done), "ms": round(sum(d for d, _ in done) * 1e3, 2),
                            "max_ms": round(max((d for d, _ in done), default=0.0) * 1e3, 2),
                            "gen2": sum(1 for _, gen in done if gen == 2)}
    stats = pq.read_table(out / "stats")
    return g, plan, summary, stats, wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rome", help="rome99.gr (DIMACS)")
    ap.add_argument("--ny", help="NY.gr.xz (PACE road topology)")
    ap.add_argument("--out", required=True, help="JSON results file")
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--random", type=int, default=4096)
    ap.add_argument("--ny-all", action="store_true",
                    help="also every vertex of NY as a source (264,346; about 30 s per GPU)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpus", default="0,1", help="devices; runs on the first one, then on all")
    ap.add_argument("--sample", type=int, default=24, help="sources checked against the CPU per study")
    ap.add_argument("--work", help="folder for graphs and study outputs (default: a temporary one)")
    ap.add_argument("--cpu-dry-run", action="store_true", help="CPU clusters of 1 and 2 workers instead of GPUs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="timed studies per graph and cluster (the scaling uses their medians)")
    ap.add_argument("--settle-s", type=float, default=0.0,
                    help="pause before each timed study (the cluster idle, as when a user starts one)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for name in ("distributed", "dask_cuda"):
        logging.getLogger(name).setLevel(logging.WARNING)

    from gpu_sssp import kernels
    from gpu_sssp.pipeline.cluster import describe_cluster, start_cluster

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gpu-study-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.cpu_dry_run:
        args.random = min(args.random, 256)
    graphs = build_graphs(args, work)
    devices = [d.strip() for d in args.gpus.split(",") if d.strip()]
    configs = [devices[:1], devices] if len(devices) > 1 else [devices]
    result = {"host_gpus_visible": kernels.device_count(), "algorithm_requested": args.algorithm,
              "batch_size": args.batch_size, "runs": [], "checks": [], "ok": True}
    t_all = time.perf_counter()
    for cfg in configs:
        label = f"{len(cfg)}-cpu-workers" if args.cpu_dry_run else f"{len(cfg)}-gpu"
        t0 = time.perf_counter()
        if args.cpu_dry_run:
            handle = start_cluster(cpu_workers=len(cfg), dashboard=False)
        else:
            handle = start_cluster(gpus=",".join(cfg), dashboard=False)
        startup = time.perf_counter() - t0
        try:
            info = describe_cluster(handle)
            print(f"[{label}] cluster up in {startup:.1f} s: {info['workers']} workers on {info['devices']}", flush=True)
            for name, spec in graphs.items():
                # warm-up study: compile + upload on every worker, not timed
                run_one(handle.client, handle.backend, info, spec["path"], spec["sources"],
                        work / f"warm-{name}-{label}", args, warm=True)
                for rep in range(max(1, args.repeat)):
                    if args.settle_s > 0:
                        time.sleep(args.settle_s)
                    g, plan, s, stats, wall = run_one(handle.client, handle.backend, info, spec["path"],
                                                      spec["sources"], work / f"study-{name}-{label}", args, warm=False)
                    tm = s["timings"]
                    workers_used = sorted(set(stats.column("worker").to_pylist()))
                    row = {
                        "graph": name, "config": label, "repeat": rep, "settle_s": args.settle_s,
                        "workers": info["workers"], "devices": info["devices"],
                        "cluster_start_s": startup, "sources": s["sources_solved"], "batches": len(plan.batches),
                        "batch_size": plan.batch_size, "algorithms": s["algorithms"],
                        "stats_devices": sorted(set(stats.column("device").to_pylist())),
                        "workers_that_solved": workers_used, "wall_s": tm["wall_s"],
                        "sources_per_s": tm["sources_per_s"], "kernel_s": tm["kernel_ms_this_run"] / 1e3,
                        "solve_s": tm["solve_ms_this_run"] / 1e3, "write_s": tm["write_ms_this_run"] / 1e3,
                        "outside_kernels_s": tm["outside_kernels_s"],
                        "outside_vs_kernel": tm["outside_kernels_vs_kernel"],
                        "diameter": s["diameter"], "radius": s["radius"], "client_gc": s.get("client_gc"),
                        **task_breakdown(work / f"study-{name}-{label}", tm["wall_s"], info["workers"],
                                         tm.get("started_at"), tm.get("collected_at")),
                    }
                    result["runs"].append(row)
                    chk = check_against_cpu(g, stats, args.sample)
                    chk.update(graph=name, config=label)
                    chk["complete"] = bool(s["complete"] and stats.num_rows == plan.sources.count
                                           and len(set(stats.column("source").to_pylist())) == stats.num_rows)
                    chk["all_workers_worked"] = len(workers_used) == info["workers"]
                    result["checks"].append(chk)
                    if chk["mismatches"] or not chk["complete"] or not chk["all_workers_worked"]:
                        result["ok"] = False
                    print(f"[{label}] {name}: {row['sources']} sources in {row['wall_s']:.2f} s = "
                          f"{row['sources_per_s']:.1f} sources/s; kernels {row['kernel_s']:.2f} s, outside "
                          f"{row['outside_kernels_s']:.2f} s; algorithms {row['algorithms']}; workers "
                          f"{workers_used}; CPU check {chk['checked'] - chk['mismatches']}/{chk['checked']} ok",
                          flush=True)
        finally:
            handle.close()
    # scaling
    scaling = {}
    for name in graphs:
        by_cfg: dict = {}
        for r in result["runs"]:
            if r["graph"] == name:
                by_cfg.setdefault(r["config"], []).append(r)
        if len(by_cfg) == 2:
            # per configuration the medians over the repeats (one repeat: its values)
            med = {c: {"workers": rs[0]["workers"],
                       "sources_per_s": float(np.median([r["sources_per_s"] for r in rs])),
                       "outside_vs_kernel": float(np.median([r["outside_vs_kernel"] for r in rs])),
                       "outside_all": [round(r["outside_vs_kernel"], 4) for r in rs]}
                   for c, rs in by_cfg.items()}
            one, two = sorted(med.values(), key=lambda r: r["workers"])
            speedup = two["sources_per_s"] / one["sources_per_s"]
            scaling[name] = {"sources_per_s_1": one["sources_per_s"], "sources_per_s_2": two["sources_per_s"],
                             "speedup": speedup, "efficiency": speedup / two["workers"] * one["workers"],
                             "target_speedup": 1.8, "meets_target": speedup >= 1.8,
                             "outside_vs_kernel_1": one["outside_vs_kernel"],
                             "outside_vs_kernel_2": two["outside_vs_kernel"],
                             "outside_vs_kernel_1_each": one["outside_all"],
                             "outside_vs_kernel_2_each": two["outside_all"], "repeats": len(by_cfg[next(iter(by_cfg))])}
    result["scaling"] = scaling
    result["total_s"] = time.perf_counter() - t_all
    from gpu_sssp.pipeline.study.versions import versions as _versions

    result["versions"] = _versions()
    Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps({"scaling": scaling, "ok": result["ok"]}, indent=2, default=str))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(2)
