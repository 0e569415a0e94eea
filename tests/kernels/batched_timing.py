"""Timing of the batched kernel (run by hand on a GPU machine; not collected by pytest).

    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
    python tests/kernels/batched_timing.py [--out bench.jsonl] [--quick]

NY / BAY / COL road topologies with weights U[1,1000] seed 7, 4,096 random sources
(``default_rng(2026).choice(n, 4096)``), statistics only (``distances=False``), one
warm-up solve first (compilation, graph upload).  Prints one JSON line per measurement.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback

import numpy as np

from gpu_sssp import kernels
from gpu_sssp.kernels._gpu import cupy, device_name
from gpu_sssp.pipeline.graph import Graph
from tests.kernels import batched_graphs as bg


def rmat(scale: int, edge_factor: int, seed: int) -> Graph:
    """Kronecker/RMAT (a, b, c) = (0.57, 0.19, 0.19), weights U[1, 1000], both directions."""
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(m)
        s_bit = r >= 0.57 + 0.19  # c or d quadrant
        d_bit = ((r >= 0.57) & (r < 0.76)) | (r >= 0.95)
        src |= s_bit.astype(np.int64) << bit
        dst |= d_bit.astype(np.int64) << bit
    perm = rng.permutation(1 << scale)
    src, dst = perm[src], perm[dst]
    w = rng.integers(1, 1001, m)
    return Graph.from_edges(np.r_[src, dst], np.r_[dst, src], np.r_[w, w], 1 << scale,
                            name=f"rmat{scale}")


_METIS = {"delaunay_n15": "metis/delaunay_n15.graph", "rgg_n_2_15": "metis/rgg_n_2_15_s0.graph"}


def measure(g, sources, **opts):
    cp = cupy()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    r = kernels.solve(g, sources, method="batched", distances=False, **opts)
    wall = time.perf_counter() - t0
    c = r.counters
    n_src = len(sources)
    relax_src = c["relaxations"] / n_src
    return {
        "graph": g.name, "n": g.n, "m": g.m, "sources": n_src,
        "batch_size": c["batch_size"], "delta": c["delta"], "dist_type": c["dist_type"],
        "mode": c["mode"],
        "kernel_ms": round(c["kernel_ms"], 3), "wall_s": round(wall, 4),
        "ms_per_source": round(c["kernel_ms"] / n_src, 5),
        "wall_ms_per_source": round(wall * 1e3 / n_src, 5),
        "iterations_per_batch": c["iterations"] / c["batches"],
        "bucket_advances_per_batch": c["bucket_advances"] / c["batches"],
        "relax_per_source": round(relax_src), "relax_per_source_over_m": round(relax_src / g.m, 3),
        "grelax_per_s": round(c["relaxations"] / (c["kernel_ms"] * 1e-3) / 1e9, 2),
        "bytes_lower_bound_GBps": round(c["relaxations"] * (4 if c["dist_type"] == "int32" else 8)
                                        / (c["kernel_ms"] * 1e-3) / 1e9, 1),
        "max_q": c["max_q"], "max_a": c["max_a"], "grid_blocks": c["grid_blocks"],
        "pull_visits_per_batch": c["pull_visits"] / c["batches"],
        "settle_visits_per_batch": c["settle_visits"] / c["batches"],
        "far_scans_per_batch": c["far_scans"] / c["batches"],
        "us_per_iteration": round(c["kernel_ms"] * 1e3 / max(c["iterations"], 1), 2),
        "host_syncs": c["host_syncs"], "launches": c["launches"],
        "mean_ecc": float(np.nanmean(r.eccentricity)), "mean_reached": float(r.reached.mean()),
    }


def copy_bandwidth():
    cp = cupy()
    a = cp.ones(2**28, dtype=cp.float32)  # 1 GiB
    b = cp.empty_like(a)
    b[...] = a
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(10):
        b[...] = a
    e.record()
    e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e)
    return 10 * 2 * a.nbytes / (ms * 1e-3) / 1e12


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--factors", default="4,16,64")
    ap.add_argument("--sizes", default="512")
    ap.add_argument("--graphs", default="NY,BAY,COL,RMAT,delaunay_n15,rgg_n_2_15")
    ap.add_argument("--modes", default="pairs,push")
    ap.add_argument("--blocks", default="", help="blocks per SM to sweep (pairs), e.g. 2,4,8")
    args = ap.parse_args(argv)
    out = open(args.out, "a") if args.out else None

    def emit(rec):
        line = json.dumps(rec)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    emit({"device": device_name(), "copy_TBps": round(copy_bandwidth(), 2)})
    ny = bg.road("NY")
    mean_w = float(ny.weights.mean())
    kernels.solve(ny, np.arange(64), method="batched", distances=False)  # warm-up
    modes = args.modes.split(",")
    if args.sweep:
        src = np.random.default_rng(5).choice(ny.n, 1024, replace=False)
        for mode in modes:
            for bs in [int(x) for x in args.sizes.split(",")]:
                for f in args.factors.split(","):
                    d = math.inf if f == "inf" else float(f) * mean_w
                    try:
                        rec = measure(ny, src, batch_size=bs, delta=d, mode=mode)
                        rec["delta_factor"] = f
                        emit(rec)
                    except Exception as exc:
                        emit({"error": repr(exc), "bs": bs, "factor": f, "mode": mode})
                        traceback.print_exc()
    nsrc = 512 if args.quick else 4096
    for name in args.graphs.split(","):
        try:
            if name == "RMAT":
                g = rmat(20, 8, 1)
            elif name in _METIS:
                g = bg.load(_METIS[name], weights="random:1:1000:7")
            else:
                g = bg.road(name)
            src = np.random.default_rng(2026).choice(g.n, min(nsrc, g.n), replace=False)
            if name == "RMAT":
                src = src[:1024]
            for mode in modes:
                kernels.solve(g, src[:32], method="batched", distances=False, mode=mode)  # warm
                emit(measure(g, src, mode=mode))
            if name == "NY":
                emit({**measure(g, src, locality=False), "locality": False})
                for b in [int(x) for x in args.blocks.split(",") if x]:
                    emit({**measure(g, src, blocks_per_sm=b), "blocks_per_sm": b})
        except Exception as exc:
            emit({"graph": name, "error": repr(exc)})
            traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
