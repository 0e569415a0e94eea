"""Timing of travel-time matrices with ``phast`` (RPHAST); run by hand, not collected by pytest.

    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
    python tests/kernels/matrix_timing.py [--backend gpu|cpu] [--sources 10000] [--targets 10000]
                                          [--out matrix.jsonl] [--check 64]

NY road topology with weights U[1,1000] seed 7 (as every benchmark), the hierarchy built
once (its time reported), ``--sources`` random sources (``default_rng(2026)``) and
``--targets`` random targets (``default_rng(2027)``), drawn independently.  One warm-up
call first (compilation, the hierarchy's layout and upload, Numba's cache), then, with
the selection cache emptied before each timed call so that the selection is included:

- ``matrix``: ``kernels.solve(g, sources, targets=targets)`` (RPHAST, stats over the
  targets), best of ``--repeat`` calls: the call's wall time (``total_s``: selection,
  sweeps, the matrix's copy to the host, everything), and its parts: ``select_ms`` (the
  selection, on the host), ``kernel_ms`` (GPU: CUDA events around the restricted sweeps
  and the matrix kernels; CPU: the Numba sweeps, matrix included), ``copy_ms`` (GPU: the
  ``(k, T)`` float64 blocks' device-to-host copies, wall); the selection's size;
- ``full``: the same sources, the full sweep, statistics only (``distances=False``), the
  per-source kernel time to set the restricted sweep against;
- ``all-stats``: the matrix with ``stats_over="all"`` (full sweep + gather);
- ``check``: the first ``--check`` rows of the matrix against SciPy, exactly.

GPU: about 1-2 minutes with the hierarchy build (NY 5-7 s) and SciPy's check; CPU (2 cores):
several minutes.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from gpu_sssp import kernels
from gpu_sssp.kernels import hierarchy as hmod
from tests.kernels import batched_graphs as bg


def emit(out, row):
    line = json.dumps(row)
    print(line, flush=True)
    if out:
        with open(out, "a") as fh:
            fh.write(line + "\n")


def forget_selections(g):
    for key in ("phast-selections", "phast-cpu-selections"):
        slot = g._derived.get(key)
        if slot is not None:
            slot.clear()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--graph", default="NY")
    ap.add_argument("--sources", type=int, default=10_000)
    ap.add_argument("--targets", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", type=int, default=64)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    be = a.backend
    g = bg.road(a.graph)
    t0 = time.perf_counter()
    h = hmod.get_hierarchy(g)
    emit(a.out, {"what": "hierarchy", "graph": a.graph, "n": g.n, "m": g.m, "build_s": h.build_s,
                 "wall_s": time.perf_counter() - t0, "levels": h.levels, "up_arcs": h.m_up, "down_arcs": h.m_down})
    src = np.random.default_rng(2026).choice(g.n, a.sources, replace=False).astype(np.int64)
    tg = np.random.default_rng(2027).choice(g.n, a.targets, replace=False).astype(np.int64)
    if be == "gpu":
        from gpu_sssp.kernels._gpu import device_name

        device = device_name()
    else:
        device = f"cpu ({platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores)"

    def solve(**kw):
        return kernels.solve(g, src, method="phast", backend=be, **kw)

    # warm-up: compilation, layouts, uploads (a few sources)
    kernels.solve(g, src[:64], method="phast", backend=be, targets=tg)
    kernels.solve(g, src[:64], method="phast", backend=be, targets=tg, stats_over="all")
    kernels.solve(g, src[:64], method="phast", backend=be, distances=False)
    best = None
    for _ in range(a.repeat):
        forget_selections(g)
        t = time.perf_counter()
        res = solve(targets=tg)
        wall = time.perf_counter() - t
        if best is None or wall < best[0]:
            best = (wall, res)
    wall, res = best
    c = res.counters
    N, T = len(src), len(tg)
    emit(a.out, {"what": "matrix", "device": device, "graph": a.graph, "sources": N, "targets": T,
                 "total_s": wall, "select_ms": c.get("select_ms"), "kernel_ms": c["kernel_ms"],
                 "copy_ms": c.get("copy_ms"), "us_per_source_kernel": c["kernel_ms"] * 1e3 / N,
                 "selected_rows": c.get("selected_rows"), "selected_arcs": c.get("selected_arcs"),
                 "selected_share": c.get("selected_rows", 0) / g.n, "down_arcs": h.m_down,
                 "matrix_bytes": N * T * 8, "batch_size": c.get("batch_size"), "lanes": c.get("lanes"),
                 "label_type": c.get("label_type")})
    full = None
    for _ in range(a.repeat):
        t = time.perf_counter()
        r = solve(distances=False)
        w = time.perf_counter() - t
        if full is None or r.counters["kernel_ms"] < full[1]:
            full = (w, r.counters["kernel_ms"])
    emit(a.out, {"what": "full", "device": device, "sources": N, "wall_s": full[0], "kernel_ms": full[1],
                 "us_per_source_kernel": full[1] * 1e3 / N,
                 "restricted_vs_full": c["kernel_ms"] / full[1] if full[1] else None})
    t = time.perf_counter()
    ra = solve(targets=tg, stats_over="all")
    emit(a.out, {"what": "all-stats", "device": device, "total_s": time.perf_counter() - t,
                 "kernel_ms": ra.counters["kernel_ms"], "copy_ms": ra.counters.get("copy_ms"),
                 "same_matrix": bool(np.array_equal(ra.matrix, res.matrix))})
    if a.check:
        ref = kernels.solve(g, src[:a.check], method="dijkstra", backend="cpu")
        ok = bool(np.array_equal(res.matrix[:a.check], ref.distances[:, tg]))
        emit(a.out, {"what": "check", "rows": a.check, "exact": ok})
        if not ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
