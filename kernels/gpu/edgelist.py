"""``edgelist``: edge-list Bellman-Ford for undirected graphs (paper 001, Kepler).

The CSR is turned into an edge list once per graph (cached on the resident
:class:`DeviceGraph`).  When every arc has its reverse with the same weight (checked on
the arcs, not taken from the ingest flag) and no weight is negative, each pair
``{u, v}`` is stored once and a thread per edge relaxes both directions; otherwise (a
directed graph, or negative weights) a thread per arc relaxes one direction.  A device
word ``modif`` holds the number of the last iteration that changed a distance; the host
reads it every ``check_every`` launches and stops after an iteration with no change
(launches past the fixed point change nothing).

Options (the paper's ablation):

``restrict`` (True)
    read distances through a ``const __restrict__`` alias (``__ldg``, read-only cache).
``segment`` ("auto")
    sort the edges by segments of ``P`` vertices (segment of one endpoint, then of the
    other) so the distance entries a run of edges touches stay in L2; 0 keeps CSR order;
    "auto" uses ``P = 2^14`` on graphs of 8 million arcs or more (measured on RMAT with
    average degree 32: +9% at 2^18 vertices, +13% at 2^20) and 0 below (no gain at 2^14,
    -2% on NY with P = 4096).
``directed`` ("auto")
    True forces the one-direction variant even on an undirected graph.
``check_every`` (4)
    launches between host reads of ``modif``.

``relaxations`` (exact, ``count_work``) counts the arc checks: every iteration checks
each stored edge in both directions (undirected) or each arc once (directed).
A change in iteration ``n`` means a negative cycle (each iteration is at least a
Bellman-Ford round): :class:`~kernels.result.NegativeCycleError`.
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

DEFAULTS = {"restrict": True, "segment": "auto", "directed": "auto", "check_every": 4}
SEGMENT_AUTO = (8_000_000, 1 << 14)  # graphs of >= 8 million arcs get P = 2^14 (BENCHMARKS.md)


def symmetric(graph) -> bool:
    """Every arc ``u -> v`` has a reverse ``v -> u`` of equal weight (multiset equality).

    The CSR of :class:`~kernels.graph.Graph` is ordered by (tail, head, weight), so one
    stable sort by head puts the reversed arcs in the same order."""
    if graph.m == 0:
        return True
    t = graph.tails()
    h = graph.indices
    w = graph.weights
    b = np.argsort(h, kind="stable")
    return bool(np.array_equal(t, h[b]) and np.array_equal(h, t[b]) and np.array_equal(w, w[b]))


def edge_list(graph, undirected: bool, segment: int):
    """(u, v, w) host arrays: pairs u <= v once (undirected) or every arc, optionally
    grouped by vertex segments of ``segment`` vertices."""
    t = graph.tails().astype(np.int64)
    h = graph.indices.astype(np.int64)
    w = graph.weights
    if undirected:
        keep = t < h  # each pair once; self-loops of weight >= 0 never relax anything
        u, v, w = t[keep], h[keep], w[keep]
    else:
        u, v = t, h
    if segment and segment > 0 and len(u):
        P = int(segment)
        order = np.lexsort((v, u, v // P, u // P))
        u, v, w = u[order], v[order], w[order]
    return u.astype(np.int32), v.astype(np.int32), np.ascontiguousarray(w)


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Edge-list Bellman-Ford from each source; see the module docstring.

    Returns
    -------
    kernels.result.Result
        counters add ``variant`` ("undirected" / "directed"), ``edges`` (stored edges),
        ``restrict``, ``segment`` and ``edges_per_s`` (edge checks per kernel second).

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from a source.
    """
    opts = check_options("edgelist", options, DEFAULTS)
    restrict = bool(opts["restrict"])
    seg = opts["segment"]
    if seg == "auto":
        seg = SEGMENT_AUTO[1] if graph.m >= SEGMENT_AUTO[0] else 0
    segment = int(seg or 0)
    check_every = max(1, int(opts["check_every"]))
    if segment < 0:
        raise ValueError(f"edgelist: segment must be >= 0, got {segment}")
    n = graph.n

    def names(wt, dt):
        r = "true" if restrict else "false"
        return [f"el_undirected<{wt}, {dt}, {r}>", f"el_directed<{wt}, {dt}, {r}>", f"el_init<{dt}>"]

    loop = SourceLoop(graph, "edgelist", "edgelist.cu", names, count_work=count_work,
                      predecessors=predecessors, distances=distances,
                      extra_bytes=graph.m * (8 + graph.weights.itemsize) + 64)
    cp = loop.cp
    dg = loop.dg
    if opts["directed"] == "auto":
        undirected = (not graph.has_negative) and dg.cached("edgelist-symmetric", lambda: symmetric(graph))
    else:
        undirected = not bool(opts["directed"])
        if undirected and (graph.has_negative or not dg.cached("edgelist-symmetric", lambda: symmetric(graph))):
            raise UsageError("edgelist: directed=False needs a symmetric graph without negative weights")

    def build():
        u, v, w = edge_list(graph, undirected, segment)
        return cp.asarray(u), cp.asarray(v), cp.asarray(w)

    eu, ev, ew = dg.cached(("edgelist", undirected, segment), build)
    me = int(len(eu))
    checks_per_iter = 2 * me if undirected else me
    r = "true" if restrict else "false"
    kern = loop.fn(f"el_{'undirected' if undirected else 'directed'}<{loop.wt}, {loop.dt}, {r}>")
    init = loop.fn(f"el_init<{loop.dt}>")
    d = cp.empty(n, dtype=loop.D)
    modif = cp.empty(1, dtype=cp.int32)
    grid = loop.grid(max(me, 1), cap_per_sm=32)
    checks = 0
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), d, np.int32(s)))
        modif.fill(-1)
        it = 0
        while True:
            for _ in range(check_every):
                loop.launch(kern, grid, (np.int64(me), eu, ev, ew, d, d, modif, np.int32(it)))
                it += 1
            last = int(loop.read(modif)[0])
            if last < it - 1:  # the last launch changed nothing: a fixed point
                break
            if it > n + 1:
                loop.negative_cycle(s)
        iters = last + 2  # the changing iterations and the one that found nothing
        checks += iters * checks_per_iter
        if count_work:
            loop.relax_buf.fill(iters * checks_per_iter)
        loop.end(s, d, iters)
    res = loop.result(sources, variant="undirected" if undirected else "directed", edges=me,
                      restrict=restrict, segment=segment)
    ms = res.counters["kernel_ms"]
    res.counters["edges_per_s"] = checks / (ms * 1e-3) if ms > 0 else 0.0
    res.counters["edge_checks"] = checks
    return res
