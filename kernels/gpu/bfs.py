"""``bfs-naive``, ``bfs-blocked``, ``bfs-hierarchical``: level-synchronous BFS (paper 002).

Hop distances: on a weighted graph they run only when every arc has the same weight
``w >= 0`` (distance = hops x w) and refuse otherwise with a ``ValueError``.  One launch
per level; the frontier size stays on the device (the kernels read it and grid-stride
over the frontier), so the host reads it only every ``check_every`` levels (default 8).
Queue disciplines: ``naive`` (a global atomicAdd per discovered vertex), ``blocked``
(shared-memory block queue flushed once per block), ``hierarchical`` (per-warp shared
sub-queues with warp-aggregated atomics, combined per block).  ``relaxations`` counts
scanned arcs.  ``iterations`` counts launched levels (a few empty levels past the last
may be included, up to ``check_every - 1``).
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

VARIANTS = {"naive": 0, "blocked": 1, "hierarchical": 2}
DEFAULTS = {"check_every": 8}
_BLOCK = 256


def hop_weight(graph):
    """The common arc weight (1 for a graph without arcs); ValueError if weights differ."""
    if graph.m == 0:
        return 1
    lo, hi = graph.min_weight, graph.max_weight
    if lo != hi or lo < 0:
        raise ValueError(
            f"BFS computes hop distances; {graph.name} has weights {lo}..{hi} "
            "(BFS needs every weight equal and non-negative: use delta, locality or auto)")
    return graph.weights[0]


def _solve(variant, graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    method = f"bfs-{variant}"
    opts = check_options(method, options, DEFAULTS)
    w = hop_weight(graph)
    check_every = max(1, int(opts["check_every"]))
    n = graph.n
    V = VARIANTS[variant]

    def names(wt, dt):
        return [f"bfs_level<{V}>", f"bfs_dist<{dt}>"]  # bfs_init is extern "C"

    loop = SourceLoop(graph, method, "bfs.cu", names, count_work=count_work, predecessors=predecessors,
                      distances=distances, extra_bytes=n * 12 + 64)
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    level = cp.empty(n, dtype=cp.int32)
    q = (cp.empty(max(n, 1), dtype=cp.int32), cp.empty(max(n, 1), dtype=cp.int32))
    cnt = cp.zeros(3, dtype=cp.int32)
    d = cp.empty(n, dtype=loop.D)
    klev = loop.fn(f"bfs_level<{V}>")
    kinit = loop.fn("bfs_init")
    kdist = loop.fn(f"bfs_dist<{loop.dt}>")
    grid = loop.sms * 8
    wd = loop.D.type(w)
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(kinit, loop.grid(n), (np.int32(n), level, q[0], cnt, np.int32(s)))
        L = 0
        while True:
            if L > n + check_every:
                raise RuntimeError(f"{method}: no termination after {L} levels (a bug)")
            for _ in range(check_every):
                loop.launch(klev, grid, (ptr, dg.indices, level, q[L & 1], q[(L & 1) ^ 1], cnt, np.int32(L),
                                         loop.relax_ptr), block=_BLOCK)
                L += 1
            if int(loop.read(cnt)[L % 3]) == 0:
                break
        loop.launch(kdist, loop.grid(n), (np.int32(n), level, wd, d))
        loop.end(s, d, L)
    return loop.result(sources, variant=variant, hop_weight=float(w))


def naive(graph, sources, **kw):
    """BFS with a global queue (GPU-N)."""
    return _solve("naive", graph, sources, **kw)


def blocked(graph, sources, **kw):
    """BFS with a shared-memory block queue (GPU-B)."""
    return _solve("blocked", graph, sources, **kw)


def hierarchical(graph, sources, **kw):
    """BFS with per-warp hierarchical queues (GPU-H)."""
    return _solve("hierarchical", graph, sources, **kw)
