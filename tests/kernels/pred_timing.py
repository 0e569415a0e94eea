"""Cost of the predecessor tree (run by hand on a GPU machine; not collected by pytest).

    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
    python tests/kernels/pred_timing.py [--graph BAY] [--sources 512]

``batched`` on a road topology with weights U[0,3] (zero-weight arcs and cycles) and
U[1,1000] (seed 7), the same random sources, with and without predecessors (distances
copied back in both, so the difference is the tree), plus ``hbf`` for 8 single sources.
Prints one JSON line per measurement: kernel_ms (CUDA events, which in ``batched`` span
the whole call including the tree), wall_s, launches, host_syncs, predecessor_rounds.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gpu_sssp import kernels
from gpu_sssp.kernels._gpu import cupy, device_name
from tests.kernels import batched_graphs as bg


def measure(g, sources, method, predecessors, repeats=3):
    kernels.solve(g, sources[:2], method=method, predecessors=predecessors)  # compile, upload
    best = None
    for _ in range(repeats):
        cupy().cuda.Device().synchronize()
        t0 = time.perf_counter()
        res = kernels.solve(g, sources, method=method, predecessors=predecessors)
        wall = time.perf_counter() - t0
        if best is None or res.counters["kernel_ms"] < best[0].counters["kernel_ms"]:
            best = (res, wall)
    res, wall = best
    c = res.counters
    return {"graph": g.name, "method": method, "sources": len(sources), "predecessors": predecessors,
            "kernel_ms": round(c["kernel_ms"], 3), "wall_s": round(wall, 3), "launches": c["launches"],
            "host_syncs": c["host_syncs"], "predecessor_rounds": c.get("predecessor_rounds"),
            "device": device_name()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", default="BAY")
    ap.add_argument("--sources", type=int, default=512)
    a = ap.parse_args()
    for weights in ("random:0:3:7", "random:1:1000:7"):
        g = bg.load(f"road-topology/{a.graph}.gr.xz", weights=weights)
        g.name = f"{a.graph}-{weights}"
        src = np.random.default_rng(2026).choice(g.n, a.sources, replace=False)
        for pred in (False, True):
            print(json.dumps(measure(g, src, "batched", pred)))
        for pred in (False, True):
            print(json.dumps(measure(g, src[:8], "hbf", pred)))


if __name__ == "__main__":
    main()
