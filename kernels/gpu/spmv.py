"""Min-plus SpMV Bellman-Ford: ``spmv-csr-scalar``, ``spmv-csr-vector``, ``spmv-ell``.

Every sweep computes ``d[v] = min(d[v], min over in-arcs (u, v) of d[u] + w)`` for all
rows of the REVERSE CSR (pull), until a sweep changes nothing (the SpMV variants of the
DIMACS-graph comparison paper): CSR scalar is a thread per row, CSR vector a warp per
row with a shuffle min-reduction, ELL a thread per row over a column-major padded
layout.  Sweep ``i`` writes ``changed[i]`` and is a no-op once a sweep has converged,
so the host queues K sweeps back to back and reads the flags once (K doubles from 4 up
to 256): no host round trip per iteration.  A change in sweep ``n`` means a negative
cycle (``NegativeCycleError`` naming a vertex on it).

ELL refuses a graph whose padded size ``n * max_in_degree`` exceeds ``max_fill``
(default 3) times the number of arcs, with a ValueError.
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

_KERNEL = {"spmv-csr-scalar": "spmv_scalar", "spmv-csr-vector": "spmv_vector", "spmv-ell": "spmv_ell"}


def _ell(loop, max_fill):
    """Column-major padded in-arc layout (cached per graph and max_fill check)."""
    g, cp = loop.graph, loop.cp
    indeg = g.in_degree()
    K = int(indeg.max(initial=0))
    padded = K * g.n
    if g.m and padded > max_fill * g.m:
        raise UsageError(
            f"spmv-ell refuses {g.name}: ELL padding to the largest in-degree ({K}) needs "
            f"{padded:,} slots, more than max_fill={max_fill} x {g.m:,} arcs; use spmv-csr-vector "
            "or raise max_fill")

    def build():
        rp, rs, rw, _ = g.reverse()
        rp = rp.astype(np.int64)
        esrc = np.full((max(K, 1), g.n), -1, dtype=np.int32)
        ew = np.zeros((max(K, 1), g.n), dtype=rw.dtype)
        if g.m:
            rows = np.repeat(np.arange(g.n), np.diff(rp))
            slot = np.arange(g.m) - rp[rows]
            esrc[slot, rows] = rs
            ew[slot, rows] = rw
        return K, cp.asarray(esrc), cp.asarray(ew)

    return loop.dg.cached("ell", build)


def _solve(method, graph, sources, predecessors, distances, count_work, options):
    opts = check_options(method, options, {"max_fill": 3.0, "check_every": 0})
    kname = _KERNEL[method]
    n = graph.n
    # one module per type pair serves all three variants (one compile)
    names = lambda wt, dt: [f"{k}<{wt}, {dt}>" for k in _KERNEL.values()] + [f"spmv_init<{dt}>"]  # noqa: E731
    loop = SourceLoop(graph, method, "spmv.cu", names,
                      count_work=count_work, predecessors=predecessors, distances=distances,
                      extra_bytes=n * 8 + 4096)
    cp = loop.cp
    if method == "spmv-ell":
        K, esrc, ew = _ell(loop, float(opts["max_fill"]))
        args_graph = (np.int32(K), esrc, ew)
        grid = loop.grid(n)
    else:
        rptr, rsrc, rw = loop.reverse()
        args_graph = (rptr, rsrc, rw)
        grid = loop.grid(n * 32) if method == "spmv-csr-vector" else loop.grid(n)
    kern = loop.fn(f"{kname}<{loop.wt}, {loop.dt}>")
    kinit = loop.fn(f"spmv_init<{loop.dt}>")
    d = cp.empty(n, dtype=loop.D)
    maxk = 256
    changed = cp.zeros(maxk, dtype=cp.int32)
    fixed_k = int(opts["check_every"])
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(kinit, loop.grid(n), (np.int32(n), d, np.int32(s)))
        done = 0  # sweeps done with a change
        k = fixed_k or 4
        converged = False
        while not converged:
            changed.fill(0)
            for j in range(k):
                loop.launch(kern, grid, (np.int32(n),) + args_graph
                            + (d, changed, np.int32(j), np.int32(1), loop.relax_ptr))
            flags = loop.read(changed[:k])
            zero = np.nonzero(flags == 0)[0]
            if len(zero):
                done += int(zero[0])
                converged = True
            else:
                done += k
            if not converged and done >= n:  # sweep n still changed something
                loop.negative_cycle(s)
            if not fixed_k:
                k = min(k * 2, maxk)
        loop.end(s, d, done + 1)
    return loop.result(sources)


def csr_scalar(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Min-plus SpMV Bellman-Ford, a thread per row of the reverse CSR.

    Options: ``check_every`` (fixed number of sweeps between flag reads; 0 = adaptive).
    Raises NegativeCycleError when a negative cycle is reachable.
    """
    return _solve("spmv-csr-scalar", graph, sources, predecessors, distances, count_work, options)


def csr_vector(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Min-plus SpMV Bellman-Ford, a warp per row with a shuffle min-reduction."""
    return _solve("spmv-csr-vector", graph, sources, predecessors, distances, count_work, options)


def ell(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Min-plus SpMV Bellman-Ford over column-major padded ELL.

    Options: ``max_fill`` (default 3): refuse (ValueError) when ``n * max_in_degree``
    exceeds ``max_fill * m``.
    """
    return _solve("spmv-ell", graph, sources, predecessors, distances, count_work, options)
