"""``harish``: the Harish & Narayanan (HiPC 2007) GPU Bellman-Ford, kept faithful.

A thread per vertex; kernel 1 relaxes the out-arcs of every masked vertex into the
updating-cost array ``U`` with ``atomicMin``; kernel 2 moves improvements into the
cost array ``C``, re-masks the improved vertices and raises a flag; the host reads the
flag after every iteration (two launches and one host round trip per iteration).
It is the reference point of the locality paper's speedups, so it is not tuned.
A negative cycle shows as a change in iteration ``n``: it raises
:class:`~kernels.result.NegativeCycleError` naming a vertex on the cycle.
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.gpu.common import BLOCK, SourceLoop, check_options


def _names(wt, dt):
    return [f"harish_k1<{wt}, {dt}>", f"harish_k2<{dt}>", f"harish_init<{dt}>"]


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Harish-Narayanan Bellman-Ford from each source; see the module docstring.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : ndarray of int64
        Internal vertex indices (validated by :func:`kernels.solve`).
    predecessors, distances, count_work : bool
        As for every solver (``count_work`` counts relax operations exactly).

    Returns
    -------
    kernels.result.Result

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from a source.
    """
    check_options("harish", options, {})
    n = graph.n
    loop = SourceLoop(graph, "harish", "harish.cu", _names, count_work=count_work,
                      predecessors=predecessors, distances=distances, extra_bytes=n * 17 + 64)
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    C = cp.empty(n, dtype=loop.D)
    U = cp.empty(n, dtype=loop.D)
    mask = cp.empty(n, dtype=cp.uint8)
    flag = cp.zeros(1, dtype=cp.int32)
    k1 = loop.fn(f"harish_k1<{loop.wt}, {loop.dt}>")
    k2 = loop.fn(f"harish_k2<{loop.dt}>")
    kinit = loop.fn(f"harish_init<{loop.dt}>")
    g = (n + BLOCK - 1) // BLOCK
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(kinit, loop.grid(n), (np.int32(n), mask, C, U, np.int32(s)))
        it = 0
        while True:
            if it >= n:  # a change in iteration n: a negative cycle
                loop.negative_cycle(s)
            flag.fill(0)
            loop.launch(k1, g, (np.int32(n), ptr, dg.indices, dg.weights, mask, C, U, loop.relax_ptr))
            loop.launch(k2, g, (np.int32(n), mask, C, U, flag))
            it += 1
            if not loop.read(flag)[0]:
                break
        loop.end(s, C, it)
    return loop.result(sources)
