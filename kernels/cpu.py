"""CPU backend: SciPy's csgraph solvers behind the common solver interface.

It is the reference every GPU method is tested against and the default on machines
without a GPU.  Work counters follow Dijkstra's definition: ``iterations`` is the
number of vertices settled and ``relaxations`` the arcs scanned from them.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse.csgraph as csg

from gpu_sssp.kernels.memory import check_host_memory
from gpu_sssp.kernels.result import NegativeCycleError, Result, reduce_distances


def _matrix(graph):
    mat = graph.to_scipy()
    if graph.meta.get("parallel_policy") == "keep" and graph.meta.get("parallel_arcs_found"):
        # scipy would add parallel arcs together; the shortest path uses the lightest
        tails = graph.tails()
        order = np.lexsort((graph.weights, graph.indices, tails))
        t, h, w = tails[order], graph.indices[order], graph.weights[order]
        first = np.ones(len(t), dtype=bool)
        first[1:] = (t[1:] != t[:-1]) | (h[1:] != h[:-1])
        import scipy.sparse as sp

        mat = sp.csr_array((w[first].astype(np.float64), (t[first], h[first])), shape=(graph.n, graph.n))
    return mat


def _per_distinct_source(solver, mat, sources, predecessors):
    """Solve each distinct source once with ``solver(mat, distinct, predecessors) ->
    (dist, pred or None)`` and give every asked source (repeats kept) its row."""
    uniq, inv = np.unique(sources, return_inverse=True)
    # SciPy returns the full rows (float64, int32 predecessors, made int64 after) even
    # when only the statistics are kept: refuse them here, before it allocates
    n = mat.shape[0]
    check_host_memory(len(sources) * n * 8 + (len(sources) * n * 12 if predecessors else 0),
                      f"the SciPy solver's rows for {len(sources):,} sources x {n:,} vertices",
                      "solve fewer sources at a time (a study splits them into batches)")
    dist, pred = solver(mat, uniq, predecessors)
    dist = np.atleast_2d(dist)[inv]
    if pred is not None:
        pred = np.atleast_2d(pred)[inv]
    return dist, pred


def _scipy_dijkstra(mat, sources, predecessors):
    out = csg.dijkstra(mat, directed=True, indices=sources, return_predecessors=predecessors)
    return out if predecessors else (out, None)


def _finish(graph, sources, dist, pred, method, t0, *, predecessors, distances):
    # Dijkstra's work, exact and always counted: one settle per reached vertex, one
    # relax per arc leaving a reached vertex (count_work is therefore not needed here)
    reached, ecc, s = reduce_distances(dist, integer=graph.integer_weights)
    iterations = reached.copy()
    relax = (np.isfinite(dist) @ graph.out_degree()).astype(np.int64)
    if pred is not None:
        pred = np.where(pred < 0, -1, pred).astype(np.int64)
    ms = (time.perf_counter() - t0) * 1e3
    edges = float(relax.sum())
    return Result(
        sources=sources,
        distances=dist if distances else None,
        predecessors=pred if predecessors else None,
        reached=reached,
        eccentricity=ecc,
        sum_distance=s,
        iterations=np.asarray(iterations, dtype=np.int64),
        relaxations=relax,
        method=method,
        backend="cpu",
        device="cpu",
        counters={
            "iterations": int(np.max(iterations)) if len(iterations) else 0,
            "launches": 0,
            "host_syncs": 0,
            "relaxations": int(relax.sum()),
            "kernel_ms": ms,
            "mteps": edges / (ms * 1e3) if ms > 0 else 0.0,
        },
    )


def dijkstra(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Shortest paths from every source by SciPy's Dijkstra (non-negative weights).

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : array_like of int
        Internal 0-based source indices; repeats are solved once and their rows
        copied, so the result keeps the order asked.
    predecessors : bool
        Also return the shortest-path tree of each source.
    distances : bool
        Keep the ``(B, n)`` distance array in the result (the per-source reductions
        are computed either way).
    count_work : bool
        Accepted for the common solver interface; ignored, because this backend
        always counts its work exactly.
    **options
        None are accepted; the parameter exists so that a misplaced option fails
        loudly instead of being dropped.

    Returns
    -------
    kernels.result.Result
        With ``method="dijkstra"`` and ``backend="cpu"``.

    Raises
    ------
    TypeError
        Any keyword in ``options``.
    ValueError
        The graph has a negative arc.  (Integer path lengths that could reach 2**53
        are refused before, by :func:`kernels.solve`.)
    """
    if options:
        raise TypeError(f"dijkstra takes no options, got {sorted(options)}")
    if graph.has_negative:
        raise ValueError(f"dijkstra needs non-negative weights; {graph.name} has negative arcs")
    t0 = time.perf_counter()
    dist, pred = _per_distinct_source(_scipy_dijkstra, _matrix(graph), sources, predecessors)
    return _finish(graph, sources, dist, pred, "dijkstra", t0,
                   predecessors=predecessors, distances=distances)


def find_negative_cycle(graph, sources=None):
    """Return a cycle of negative weight reachable from ``sources`` (all if None), or None.

    A vectorised Bellman-Ford that keeps parent pointers; every few rounds it looks
    for a cycle in the parent graph by pointer doubling (a cycle there has negative
    weight).  The cycle is returned as a list of internal vertex indices.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : array_like of int, optional
        Internal 0-based indices to start from.  ``None`` starts from every vertex
        at distance 0, which finds a negative cycle anywhere in the graph.

    Returns
    -------
    list of int or None
        The vertices of a negative cycle in arc order (each one's parent precedes
        it, the last closing the cycle to the first), or ``None`` when no negative
        cycle is reachable.
    """
    n = graph.n
    tails = graph.tails().astype(np.int64)
    heads = graph.indices.astype(np.int64)
    w = graph.weights.astype(np.float64)
    dist = np.full(n, np.inf)
    if sources is None:
        dist[:] = 0.0
    else:
        dist[np.asarray(sources)] = 0.0
    parent = np.full(n, -1, dtype=np.int64)
    check_every = 8
    for it in range(1, n + 2):
        cand = dist[tails] + w
        better = cand < dist[heads]
        if not better.any():
            return None
        # per head keep the best candidate
        hb, cb, tb = heads[better], cand[better], tails[better]
        order = np.lexsort((cb, hb))
        hb, cb, tb = hb[order], cb[order], tb[order]
        first = np.ones(len(hb), dtype=bool)
        first[1:] = hb[1:] != hb[:-1]
        upd = hb[first]
        dist[upd] = cb[first]
        parent[upd] = tb[first]
        if it % check_every == 0 or it >= n:
            v = _cycle_vertex(parent)
            if v is not None:
                cyc = [v]
                u = parent[v]
                while u != v and len(cyc) <= n:
                    cyc.append(int(u))
                    u = parent[u]
                return cyc[::-1]
            check_every = min(check_every * 2, 256)
    v = _cycle_vertex(parent)
    return None if v is None else [v]


def _cycle_vertex(parent: np.ndarray):
    n = len(parent)
    anc = np.where(parent < 0, n, parent)
    anc = np.append(anc, n)  # sentinel n is its own parent
    steps = 1
    while steps < n + 1:
        anc = anc[anc]
        steps *= 2
    on = np.nonzero(anc[:n] != n)[0]
    if len(on) == 0:
        return None
    return int(anc[on[0]])


def bellman_ford(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Shortest paths with negative weights (SciPy Johnson), cycles named.

    Graphs without negative arcs go straight to SciPy's Dijkstra.  With negative
    arcs, a negative cycle reachable from the sources is looked for first and
    Johnson then runs only on the part of the graph the sources reach, because
    SciPy's Johnson would also reject cycles no source can reach.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : array_like of int
        Internal 0-based source indices; repeats are solved once and their rows
        copied, so the result keeps the order asked.
    predecessors : bool
        Also return the shortest-path tree of each source.
    distances : bool
        Keep the ``(B, n)`` distance array in the result.
    count_work : bool
        Accepted for the common solver interface; ignored (work is always counted,
        by Dijkstra's definition).
    **options
        None are accepted; a misplaced option fails loudly instead of being dropped.

    Returns
    -------
    kernels.result.Result
        With ``method="bellman-ford"`` and ``backend="cpu"``.

    Raises
    ------
    TypeError
        Any keyword in ``options``.
    NegativeCycleError
        Naming a vertex on a negative cycle reachable from one of the sources (and
        that source, when found).
    """
    if options:
        raise TypeError(f"bellman-ford takes no options, got {sorted(options)}")
    t0 = time.perf_counter()
    check_negative_cycle(graph, sources)
    solver = _johnson_reachable if graph.has_negative else _scipy_dijkstra
    dist, pred = _per_distinct_source(solver, _matrix(graph), sources, predecessors)
    return _finish(graph, sources, dist, pred, "bellman-ford", t0,
                   predecessors=predecessors, distances=distances)


def check_negative_cycle(graph, sources) -> None:
    """Raise :class:`NegativeCycleError` when a negative cycle is reachable from
    ``sources`` (internal indices), naming a vertex on it and a source that reaches it
    (what ``bellman-ford`` checks before solving; the SciPy baseline too).  Nothing to do
    without negative arcs."""
    if not graph.has_negative:
        return
    sources = np.asarray(sources, dtype=np.int64)
    cyc = find_negative_cycle(graph, sources)
    if cyc is not None:
        raise NegativeCycleError(cyc[0], _source_reaching(graph, sources, cyc[0]), graph.id_base, cyc)


def _source_reaching(graph, sources, vertex):
    rev = graph.to_scipy().T.tocsr()
    back = csg.breadth_first_order(rev, vertex, directed=True, return_predecessors=False)
    hit = np.intersect1d(np.asarray(sources), back)
    return int(hit[0]) if len(hit) else None


def reachable_part(mat, sources):
    """The part of the graph (SciPy CSR ``mat``) reachable from ``sources``: ``(keep, local,
    sub)``, its vertices (sorted), each vertex's index in it (-1 outside) and its matrix."""
    n = mat.shape[0]
    seen = np.zeros(n, dtype=bool)
    for s in np.asarray(sources, dtype=np.int64):
        if not seen[s]:
            seen[csg.breadth_first_order(mat, int(s), directed=True, return_predecessors=False)] = True
    keep = np.nonzero(seen)[0]
    local = np.full(n, -1, dtype=np.int64)
    local[keep] = np.arange(len(keep))
    return keep, local, mat[keep][:, keep]


def _johnson_reachable(mat, sources, predecessors):
    """Johnson on the part of the graph reachable from ``sources``.

    SciPy's Johnson rejects a negative cycle anywhere in the graph; only cycles
    reachable from a source matter (and were ruled out before this is called).
    """
    n = mat.shape[0]
    keep, local, sub = reachable_part(mat, sources)
    out = csg.johnson(sub, directed=True, indices=local[sources], return_predecessors=predecessors)
    d_sub, p_sub = (out if predecessors else (out, None))
    dist = np.full((len(sources), n), np.inf)
    dist[:, keep] = np.atleast_2d(d_sub)
    pred = None
    if predecessors:
        p_sub = np.atleast_2d(p_sub)
        pred = np.full((len(sources), n), -1, dtype=np.int64)
        pred[:, keep] = np.where(p_sub >= 0, keep[np.maximum(p_sub, 0)], -1)
    return dist, pred
