"""Timing of the single-source GPU methods (not collected by pytest).

    PYTHONPATH=. python tests/kernels/gpu_timing.py [--sources 100] [--extra] [--out FILE]

NY road topology (264,346 vertices, 730,100 arcs) with weights U[1,1000] seed 7, 100
random sources (seed 2026): ms per source from CUDA events (kernel_ms / sources), the
H-BF ablation, launches / host syncs per source, iterations, MTEPS (arcs of the reached
part / kernel time), relax operations per source from a count_work run.  ``--extra``
adds BAY, COL, delaunay_n15, RMAT 2^20 x 16 and a 2^22-vertex grid (hbf with hops=1 and
hops=2, spmv-csr-vector).  The ablation starts with the defaults and H-BF's own kernels
(hops=1), so the time budget does not skip them.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import graphs as G  # noqa: E402

from gpu_sssp import kernels  # noqa: E402
from gpu_sssp.kernels._gpu import device_name  # noqa: E402

ABLATION = [
    ("hbf (defaults; hops=2 on NY)", {}),
    ("hbf hops=1 (H-BF's kernels)", dict(hops=1)),
    ("hbf hops=2 blocks_per_sm=3", dict(hops=2, blocks_per_sm=3)),
    ("hbf hops=2 launch mode", dict(hops=2, persistent=False)),
    ("hbf hops=2 -edge_classes", dict(hops=2, edge_classes=False)),
    ("hbf hops=2 -dedup64", dict(hops=2, dedup64=False)),
    ("hbf hops=2 warp enqueue", dict(hops=2, coalesced_enqueue="warp")),
    ("hbf hops=2 -virtual_warps (4 lanes)", dict(hops=2, virtual_warps=False, lanes=4)),
    ("hbf hops=1 launch mode (K-batched checks)", dict(hops=1, persistent=False)),
    ("hbf hops=1 -edge_classes", dict(hops=1, edge_classes=False)),
    ("hbf hops=1 -dedup64", dict(hops=1, dedup64=False)),
    ("hbf hops=1 warp enqueue (H-BF's)", dict(hops=1, coalesced_enqueue="warp")),
    ("hbf hops=1 -coalesced_enqueue", dict(hops=1, coalesced_enqueue=False)),
    ("hbf hops=1 -virtual_warps (32 lanes)", dict(hops=1, virtual_warps=False, lanes=32)),
    ("hbf hops=1 -virtual_warps (4 lanes)", dict(hops=1, virtual_warps=False, lanes=4)),
    ("hbf hops=1 -heavy_threshold", dict(hops=1, heavy_threshold=0)),
    ("hbf hops=1 blocks_per_sm=1", dict(hops=1, blocks_per_sm=1)),
    ("hbf hops=1 blocks_per_sm=4", dict(hops=1, blocks_per_sm=4)),
    ("hbf all off (launch mode)", dict(hops=1, edge_classes=False, dedup64=False, coalesced_enqueue=False,
                                       virtual_warps=False, heavy_threshold=0, persistent=False)),
]


def bench(g, method, opts, sources, ref=None, log=print):
    kernels.solve(g, sources[:1], method=method, distances=False, **opts)  # compile + upload
    t0 = time.perf_counter()
    res = kernels.solve(g, sources, method=method, distances=ref is not None, **opts)
    wall = (time.perf_counter() - t0) * 1e3 / len(sources)
    ok = ""
    if ref is not None:
        k = min(len(sources), ref.distances.shape[0])
        ok = "exact" if np.array_equal(res.distances[:k], ref.distances[:k]) else "MISMATCH"
    cw = kernels.solve(g, sources[:10], method=method, distances=False, count_work=True, **opts)
    c = res.counters
    b = len(sources)
    label = method + (" " + ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else "")
    row = (f"| {label} | {c['kernel_ms'] / b:8.3f} | {wall:8.2f} | "
           f"{np.mean(res.iterations):7.1f} | {c['launches'] / b:8.1f} | {c['host_syncs'] / b:6.1f} | "
           f"{c['mteps']:8.1f} | {cw.counters['relaxations'] / 10 / max(g.m, 1):6.2f} | {ok} |")
    log(row)
    return res


HEADER = ("| method / options | ms/source (events) | wall ms/source | iterations | launches/src | "
          "host syncs/src | MTEPS | relax / m | check |\n|---|---|---|---|---|---|---|---|---|")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=100)
    ap.add_argument("--extra", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--extra-methods", default="hbf,spmv-csr-vector")
    ap.add_argument("--methods", default="hbf,spmv-csr-scalar,spmv-csr-vector,spmv-ell,harish")
    ap.add_argument("--budget-s", type=float, default=170.0)
    args = ap.parse_args()
    t_start = time.perf_counter()
    fh = open(args.out, "w") if args.out else None

    def log(s=""):
        print(s, flush=True)
        if fh:
            fh.write(s + "\n")
            fh.flush()

    import cupy

    log(f"GPU: {device_name()}  CuPy {cupy.__version__}  CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")
    g = G.load("road-topology/NY.gr.xz", weights="random:1:1000:7")
    log(f"graph NY: n={g.n} m={g.m} weights {g.weights.dtype} [{g.min_weight}, {g.max_weight}]")
    sources = np.random.default_rng(2026).integers(0, g.n, size=args.sources)
    t = time.perf_counter()
    ref = kernels.solve(g, sources[:5], method="dijkstra", backend="cpu")
    log(f"CPU scipy dijkstra: {(time.perf_counter() - t) * 1e3 / 5:.1f} ms/source (5 sources, this host)")
    log("")
    log(HEADER)
    for method in args.methods.split(","):
        try:
            opts = {"max_fill": 10.0} if method == "spmv-ell" else {}
            srcs = sources if method != "harish" else sources[:20]
            bench(g, method, opts, srcs, ref=ref if method != "harish" else None, log=log)
        except Exception as exc:  # report and go on
            log(f"| {method} | FAILED: {type(exc).__name__}: {exc} |")
    log("")
    log("H-BF ablation (NY, same sources):")
    log(HEADER)
    for label, opts in ABLATION:
        if time.perf_counter() - t_start > args.budget_s:
            log(f"| {label} | skipped (time budget) |")
            continue
        try:
            res = bench(g, "hbf", opts, sources, ref=ref, log=log)
            log(f"|   ^ {label}: mode={res.counters.get('mode')} blocks={res.counters.get('blocks')} "
                f"dedup={res.counters.get('dedup')} distances={res.counters.get('distance_type')} "
                f"hops={res.counters.get('hops')} | | | | | | | | |")
        except Exception as exc:
            log(f"| {label} | FAILED: {type(exc).__name__}: {exc} |")
    if args.extra:
        from gpu_sssp.pipeline.graph import Graph

        log("")
        log("Other graphs (10 sources):")
        log(HEADER)
        todo = [
            ("BAY", lambda: G.load("road-topology/BAY.gr.xz", weights="random:1:1000:7")),
            ("COL", lambda: G.load("road-topology/COL.gr.xz", weights="random:1:1000:7")),
            ("delaunay_n15", lambda: G.load("metis/delaunay_n15.graph", weights="random:1:1000:7")),
            ("rmat20x16", lambda: G.rmat(20, 16, seed=7, dtype=np.int32, lo=1, hi=1000)),
            ("grid2048x2048", lambda: G.grid(2048, 2048, seed=7, dtype=np.int32, lo=1, hi=1000)),
        ]
        for name, build in todo:
            if time.perf_counter() - t_start > args.budget_s:
                log(f"| {name} | skipped (time budget) |")
                continue
            try:
                gg = build()
                log(f"| **{name}** n={gg.n} m={gg.m} | | | | | | | | |")
                srcs = np.random.default_rng(7).integers(0, gg.n, size=10)
                for method in args.extra_methods.split(","):
                    if method == "hbf":  # both hop counts, whichever the default picks here
                        bench(gg, method, dict(hops=1), srcs, log=log)
                        bench(gg, method, dict(hops=2), srcs, log=log)
                    else:
                        bench(gg, method, {}, srcs, log=log)
            except Exception as exc:
                log(f"| {name} | FAILED: {type(exc).__name__}: {exc} |")
    log(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
