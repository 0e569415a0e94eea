"""``dijkstra-gpu``: Dijkstra with a parallel extract-min (paper 003).

Each step scans every vertex to find the unsettled one of least tentative distance
(per-block shared-memory reduction, ``threads_per_block`` = 128 / 256 / 512 / 1024, then
the last block reduces the block minima), settles it and relaxes its out-arcs in
parallel.  One launch per settled vertex and no host communication inside a batch of
``check_every`` launches; launches after the last step return at once.  The work is
``O(n)`` per step and ``O(n^2)`` per source: it is slow by nature and kept only as the
paper's baseline.  Before running it estimates its time (``n`` steps of a launch plus a
scan of ``n`` vertices, per source) and refuses with a ``ValueError`` when the estimate
exceeds ``max_seconds`` (600) unless ``force=True``.  Non-negative weights only.
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.errors import UsageError, counted
from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

DEFAULTS = {"threads_per_block": 256, "check_every": 256, "force": False, "max_seconds": 600.0}
LAUNCH_S = 4e-6  # one step's launch and reduction floor (H100/H200 class)
SCAN_BPS = 1.5e12  # bytes per second of the per-step scan (done flag + distance)


def estimate_seconds(graph, n_sources: int) -> float:
    """Rough run time: every vertex settled once, each step scanning every vertex."""
    n = graph.n
    per_step = LAUNCH_S + n * (1 + 8) / SCAN_BPS
    return float(n_sources) * n * per_step


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Parallel-reduction Dijkstra from each source; see the module docstring.

    Raises
    ------
    ValueError
        The estimated time exceeds ``max_seconds`` and ``force`` is not set, or a bad
        ``threads_per_block``.
    """
    opts = check_options("dijkstra-gpu", options, DEFAULTS)
    tpb = int(opts["threads_per_block"])
    if tpb not in (128, 256, 512, 1024):
        raise ValueError(f"dijkstra-gpu: threads_per_block must be 128, 256, 512 or 1024, got {tpb}")
    est = estimate_seconds(graph, len(sources))
    if est > float(opts["max_seconds"]) and not opts["force"]:
        raise UsageError(
            f"dijkstra-gpu would take about {est:,.0f} s for {counted(len(sources), 'source')} on {graph.name} "
            f"({graph.n:,} vertices: one launch and an O(n) scan per settled vertex); "
            f"pass force=True from Python (gpu_sssp.solve) to run it anyway (the command line has no such "
            f"option), or use delta / locality")
    n = graph.n
    check_every = max(1, int(opts["check_every"]))

    def names(wt, dt):
        return [f"dij_step<{wt}, {dt}, {tpb}>", f"dij_init<{dt}>"]

    loop = SourceLoop(graph, "dijkstra-gpu", "dijkstra.cu", names, count_work=count_work,
                      predecessors=predecessors, distances=distances, extra_bytes=n * 9 + (1 << 16))
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    blocks = int(max(1, min((n + tpb - 1) // tpb, loop.sms * 2)))
    d = cp.empty(n, dtype=loop.D)
    done = cp.empty(n, dtype=cp.uint8)
    pd = cp.empty(blocks, dtype=loop.D)
    pv = cp.empty(blocks, dtype=cp.int32)
    ticket = cp.zeros(1, dtype=cp.uint32)
    fin = cp.zeros(1, dtype=cp.int32)
    step = loop.fn(f"dij_step<{loop.wt}, {loop.dt}, {tpb}>")
    init = loop.fn(f"dij_init<{loop.dt}>")
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), d, done, ticket, fin, np.int32(s)))
        it = 0
        while True:
            for _ in range(check_every):
                loop.launch(step, blocks, (np.int32(n), ptr, dg.indices, dg.weights, d, done, pd, pv, ticket,
                                           fin, np.int32(it), loop.relax_ptr), block=tpb)
                it += 1
            f = int(loop.read(fin)[0])
            if f:
                break
            if it > n + check_every:
                raise RuntimeError("dijkstra-gpu: no termination (a bug)")
        loop.end(s, d, f - 1)
    return loop.result(sources, threads_per_block=tpb, estimated_seconds=est)
