"""Timing of the ``phast`` GPU method (run by hand on a GPU machine; not collected by pytest).

    export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
    python tests/kernels/phast_timing.py [--out phast.jsonl] [--graphs NY,FLA] [--all-ny]

Road topologies with weights U[1,1000] seed 7 (``default_rng(7).integers(1, 1001)`` per
edge line, the same weight both directions), the hierarchy built once per graph
(RoutingKit, its build time reported), one warm-up solve first (compilation, upload).
Prints one JSON line per measurement:

- ``copy``: the device's copy bandwidth (bytes read + written per second, 2 GiB buffers);
- ``single``: single-source solves (statistics only and with distances), median kernel
  time over 20 random sources, for a few resident blocks per SM;
- ``batch``: 16,384 random sources (``default_rng(2026).choice(n, 16384)``), statistics
  only, for several batch sizes; with the modelled bytes moved per source (label writes
  and reads plus one label gather per hierarchy arc) and the bandwidth that implies;
- ``all``: every source of NY, statistics only (``--all-ny``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

import numpy as np

from gpu_sssp import kernels
from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels._gpu import cupy, device_name
from gpu_sssp.kernels.gpu import phast
from tests.kernels import batched_graphs as bg


def emit(out, row):
    line = json.dumps(row)
    print(line, flush=True)
    if out:
        with open(out, "a") as fh:
            fh.write(line + "\n")


def copy_bandwidth() -> float:
    cp = cupy()
    a = cp.ones(2**29, dtype=cp.float32)  # 2 GiB
    b = cp.empty_like(a)
    cp.copyto(b, a)
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    reps = 10
    for _ in range(reps):
        cp.copyto(b, a)
    e.record()
    e.synchronize()
    ms = cp.cuda.get_elapsed_time(s, e) / reps
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * 2**31 / (ms * 1e-3)


def bytes_per_source(prep: phast.Prepared, upward: str = "sweep") -> dict:
    """Label bytes one source moves in a statistics-only sweep (the model of phast_sweep):
    upward phase ("sweep"): one write per upward-phase vertex, one gather per upward arc
    whose tail stores a label; downward phase: one read per upward-phase vertex (4 bytes
    from the upward values in "search" mode), one gather per downward arc, one write per
    stored row.  Arc arrays are read once per vertex and shared by the batch's lanes, and
    the searches' few thousand pushes per source are not counted."""
    isz = prep.label_dtype.itemsize
    upv = int((prep.up_end - prep.level_ptr[:-1]).sum())
    up_g = int((prep.up_src_compact >= 0).sum())
    if upward == "sweep":
        total = isz * (upv + up_g + upv + prep.m_down + prep.compact_rows)
    else:
        total = 4 * upv + isz * (prep.m_down + prep.compact_rows)
    return {"bytes_per_source": total, "upward_vertices": upv, "upward_gathers": up_g,
            "downward_gathers": prep.m_down, "label_rows": prep.compact_rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--graphs", default="NY,FLA")
    ap.add_argument("--all-ny", action="store_true")
    ap.add_argument("--batches", default="1024,2048,4096,8192")
    args = ap.parse_args(argv)
    cp = cupy()
    dev = device_name()
    bw = copy_bandwidth()
    emit(args.out, {"what": "copy", "device": dev, "copy_bytes_per_s": bw})
    for name in args.graphs.split(","):
        try:
            t0 = time.perf_counter()
            g = bg.road(name)
            load_s = time.perf_counter() - t0
            h = hmod.get_hierarchy(g)
            t1 = time.perf_counter()
            prep = phast.prepare(g)
            emit(args.out, {"what": "hierarchy", "graph": name, "n": g.n, "m": g.m, "load_s": load_s,
                            "build_s": h.build_s, "layout_s": h.layout_s, "prepare_s": time.perf_counter() - t1,
                            **prep.summary(), **bytes_per_source(prep)})
            rng = np.random.default_rng(2026)
            kernels.solve(g, rng.integers(0, g.n, 64), method="phast", distances=False)  # warm-up
            kernels.solve(g, [0], method="phast", distances=False)
            kernels.solve(g, [0], method="phast")
            if name == "NY":
                singles = np.random.default_rng(5).integers(0, g.n, 20)
                for upward, bps in (("sweep", 1), ("search", 1), ("search", 2)):
                    for dist in (False, True):
                        ms = [kernels.solve(g, [int(s)], method="phast", distances=dist, upward=upward,
                                            blocks_per_sm=bps).counters["kernel_ms"] for s in singles]
                        emit(args.out, {"what": "single", "graph": name, "upward": upward,
                                        "blocks_per_sm": bps, "distances": dist,
                                        "median_ms": float(np.median(ms)),
                                        "min_ms": float(np.min(ms)), "device": dev})
            src = np.random.default_rng(2026).choice(g.n, 16384)
            for upward, bs in [(u, int(x)) for u in ("sweep", "search") for x in args.batches.split(",")]:
                try:
                    r = kernels.solve(g, src, method="phast", distances=False, batch_size=bs, upward=upward)
                except MemoryError as exc:
                    emit(args.out, {"what": "skip", "graph": name, "batch_size": bs, "upward": upward,
                                    "error": str(exc)})
                    continue
                c = r.counters
                us = 1e3 * c["kernel_ms"] / len(src)
                model = bytes_per_source(prep, upward)["bytes_per_source"]
                emit(args.out, {"what": "batch", "graph": name, "sources": len(src), "batch_size": bs,
                                "upward": upward,
                                "kernel_ms": c["kernel_ms"], "us_per_source": us,
                                "grid_blocks": c["grid_blocks"], "bytes_per_source": model,
                                "achieved_bytes_per_s": model / (us * 1e-6),
                                "share_of_copy": model / (us * 1e-6) / bw, "device": dev})
            if name == "NY" and args.all_ny:
                best = int(args.batches.split(",")[-1])
                allsrc = np.arange(g.n)
                for upward in ("sweep", "search"):
                    t0 = time.perf_counter()
                    r = kernels.solve(g, allsrc, method="phast", distances=False, batch_size=best,
                                      upward=upward)
                    wall = time.perf_counter() - t0
                    c = r.counters
                    emit(args.out, {"what": "all", "graph": name, "sources": g.n, "batch_size": best,
                                    "upward": upward, "kernel_ms": c["kernel_ms"], "wall_s": wall,
                                    "us_per_source": 1e3 * c["kernel_ms"] / g.n,
                                    "sum_reached": int(r.reached.sum()),
                                    "sum_of_sums": int(r.sum_distance.sum()), "device": dev})
            del g, h, prep
            from gpu_sssp.kernels.gpu.loader import forget_graphs

            forget_graphs()
            cp.get_default_memory_pool().free_all_blocks()
        except Exception:
            traceback.print_exc()
            emit(args.out, {"what": "error", "graph": name, "error": traceback.format_exc()[-2000:]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
