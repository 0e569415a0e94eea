"""CPU backend: SciPy's csgraph solvers behind the common solver interface.

It is the reference every GPU method is tested against and the default on machines
without a GPU.  Work counters follow Dijkstra's definition: ``iterations`` is the
number of vertices settled and ``relaxations`` the arcs scanned from them.
"""
from __future__ import annotations

import functools
import time

import numpy as np
import scipy.sparse.csgraph as csg

from gpu_sssp.kernels.errors import OptionError, counted
from gpu_sssp.kernels.graph import EXACT_LIMIT
from gpu_sssp.kernels.memory import check_host_memory
from gpu_sssp.kernels.result import NegativeCycleError, Result, reduce_distances


def _matrix(graph):
    mat = graph.to_scipy(copy=False)
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
                      f"the SciPy solver's rows for {counted(len(sources), 'source')} x {counted(n, 'vertex', 'vertices')}",
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
        raise OptionError(f"dijkstra takes no options, got {sorted(options)}")
    if graph.has_negative:
        raise ValueError(f"dijkstra needs non-negative weights; {graph.name} has negative arcs")
    t0 = time.perf_counter()
    dist, pred = _per_distinct_source(_scipy_dijkstra, _matrix(graph), sources, predecessors)
    return _finish(graph, sources, dist, pred, "dijkstra", t0,
                   predecessors=predecessors, distances=distances)


def find_negative_cycle(graph, sources=None):
    """Return a cycle of negative weight reachable from ``sources`` (all if None), or None.

    A vectorised Bellman-Ford that keeps parent pointers; every few rounds it looks
    for a cycle in the parent graph by pointer doubling, and names one whose weight,
    summed exactly, is negative (with integer weights every such cycle is; with real
    ones rounding can close a loop of weight >= 0, which is passed over).  A reachable
    negative self-loop is named first, however small its weight (with real weights
    ``d + w`` rounds to ``d`` for a tiny one).  Known limit, real weights only: a
    cycle of several arcs whose negative weight is below float64's resolution at its
    distances (-1e-300 reached at 0.1) is not seen, and the sources are searched
    together: another source's distances there can hide a cycle that one source alone
    reveals.  Real weights whose rounds go on past the cap around loops that weigh >= 0
    summed exactly raise :class:`~kernels.errors.UnsettledError` (they were named as a
    negative cycle).  The cycle is returned as a list of internal vertex indices.

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
    loops = np.nonzero((tails == heads) & (graph.weights < 0))[0]
    if len(loops):
        # a negative self-loop is a negative cycle however small its weight: with real
        # weights d + w rounds to d once |w| is below half an ulp of d (-0.3 + -1e-300),
        # and the rounds below would never see it
        on = np.unique(tails[loops])
        if sources is not None:
            seen = np.zeros(n, dtype=bool)
            pattern = graph.pattern()
            for s in np.unique(np.asarray(sources, dtype=np.int64)):
                if not seen[s]:
                    seen[csg.breadth_first_order(pattern, int(s), directed=True, return_predecessors=False)] = True
            on = on[seen[on]]
        if len(on):
            return [int(on[0])]
    dist = np.full(n, np.inf)
    if sources is None:
        dist[:] = 0.0
    else:
        dist[np.asarray(sources)] = 0.0
    parent = np.full(n, -1, dtype=np.int64)
    check_every = 8
    found = None
    lightest = None  # (the arcs sorted for _negative_weight, once a loop is met)
    # integer weights: a loop of parents is a negative cycle (exact arithmetic), one
    # appears within about n rounds; real weights: rounding can make a loop of weight
    # >= 0 (0.1 then -1.0 then 1.0 back: fl(fl(0.1 - 1.0) + 1.0) < 0.1), which is not
    # named - the rounds go on, up to a cap, until a loop of negative weight appears
    cap = n + 1 if graph.integer_weights else 4 * n + 64
    for it in range(1, cap + 1):
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
            for cyc in _parent_cycles(parent):
                if found is None:
                    found = cyc
                if lightest is None:
                    lightest = _lightest_arcs(tails, heads, graph.weights, n)
                if _negative_weight(graph, cyc, lightest):
                    return cyc
            check_every = min(check_every * 2, 256)
    if graph.integer_weights:
        return found
    # real weights only: the rounds still lower distances after the cap and every loop
    # of parents they closed weighs >= 0 summed exactly - a loop of rounding, not a
    # negative cycle (it was named as one: 0.1 + 0.2 - 0.3 is +2**-55 exactly)
    raise _unsettled(graph.name, f"Bellman-Ford still lowered them after {cap:,} rounds"
                     + (_rounding_loop(graph, found, dist, lightest) if found else ""))


def _rounding_loop(graph, loop, dist, lightest) -> str:
    """Where :func:`find_negative_cycle`'s rounds went on: the loop of parents, its weight
    summed exactly (>= 0) and the magnitude of the distances it was reached at."""
    cyc = np.asarray(loop, dtype=np.int64)
    at = float(np.max(np.abs(dist[cyc]))) if np.isfinite(dist[cyc]).all() else float("nan")
    return (f" around the cycle {' -> '.join(str(int(v) + graph.id_base) for v in loop[:12])}"
            f"{' ...' if len(loop) > 12 else ''}, whose weight summed exactly is "
            f"{_walk_weight(graph, loop, lightest)!r} (not negative; within float64's rounding at distances near "
            f"{at:.3g})")


def _unsettled(graph_name: str, what: str):
    """The :class:`~kernels.errors.UnsettledError` of real weights whose Bellman-Ford
    rounds did not settle (``what``: which rounds, and where)."""
    from gpu_sssp.kernels.errors import UnsettledError

    return UnsettledError(f"{graph_name}: real weights with negative arcs whose distances float64 cannot settle: "
                          f"{what}; neither the distances nor a negative cycle can be given: scale the weights to "
                          "integers for exact answers")


def _parent_cycles(parent: np.ndarray, limit: int = 64):
    """The loops of the parent graph (each in arc order: a vertex's parent precedes it),
    at most ``limit`` of them."""
    n = len(parent)
    anc = np.where(parent < 0, n, parent)
    anc = np.append(anc, n)  # sentinel n is its own parent
    steps = 1
    while steps < n + 1:
        anc = anc[anc]
        steps *= 2
    on = np.unique(anc[:n][anc[:n] != n])
    seen = np.zeros(n, dtype=bool)
    out = []
    for v in on.tolist():
        if seen[v]:
            continue
        cyc = [v]
        seen[v] = True
        u = int(parent[v])
        while u != v and len(cyc) <= n:
            cyc.append(u)
            seen[u] = True
            u = int(parent[u])
        out.append(cyc[::-1])
        if len(out) >= limit:
            break
    return out


def _negative_weight(graph, cyc, lightest) -> bool:
    """Whether the closed walk ``cyc`` has negative weight, summed exactly
    (:func:`_walk_weight`)."""
    return _walk_weight(graph, cyc, lightest) < 0


def _walk_weight(graph, cyc, lightest):
    """The weight of the closed walk ``cyc`` (arc order, the last vertex back to the
    first), summed exactly: a Python int for integer weights, ``math.fsum`` for real ones
    (the float nearest the exact sum, of its sign), each step over its lightest arc
    (``lightest``: :func:`_lightest_arcs` of the graph)."""
    import math

    cyc = np.asarray(cyc, dtype=np.int64)
    u, v = cyc, np.roll(cyc, -1)
    keys, weights = lightest
    pos = np.searchsorted(keys, u * graph.n + v)
    if graph.integer_weights:
        return sum(int(x) for x in weights[pos])
    return math.fsum(float(x) for x in weights[pos])


def _lightest_arcs(tails, heads, w, n: int):
    """``(keys, weights)``: the arcs' keys ``tail * n + head`` sorted, the lightest of
    parallel arcs first, and their weights, so that ``np.searchsorted(keys, u * n + v)``
    finds the lightest arc ``u -> v`` (for :func:`_negative_weight` and
    :func:`settle_johnson`)."""
    keys = tails * n + heads
    order = np.lexsort((w, keys))
    return keys[order], w[order]


def bellman_ford(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Shortest paths with negative weights (SciPy Johnson), cycles named.

    Graphs without negative arcs go straight to SciPy's Dijkstra.  With negative
    arcs, a negative cycle reachable from the sources is looked for first and
    Johnson then runs only on the part of the graph the sources reach, because
    SciPy's Johnson would also reject cycles no source can reach; its float64
    reweighting is then settled exactly where it can round (:func:`settle_johnson`:
    real weights, and integer ones whose reweighted lengths can reach 2**53).

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
        raise OptionError(f"bellman-ford takes no options, got {sorted(options)}")
    t0 = time.perf_counter()
    check_negative_cycle(graph, sources)
    if graph.has_negative:
        # Johnson's reweighting is float64 arithmetic: its answer is settled exactly
        # (``settle_johnson``) where it can be wrong (``johnson_needs_settling``)
        solver = functools.partial(_johnson_reachable, settle=johnson_needs_settling(graph),
                                   integer=graph.integer_weights, graph_name=graph.name)
    else:
        solver = _scipy_dijkstra
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
    rev = graph.to_scipy(copy=False).T.tocsr()
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


def _potentials(k: int, tails, heads, w, sources, graph_name: str) -> np.ndarray:
    """Potentials for Johnson's reweighting of the ``k`` vertices the ``sources`` reach
    (arcs ``tails -> heads`` of weight ``w``, no negative cycle among them): the distances
    from the sources (each at 0) by vectorised Bellman-Ford rounds in float64 - ``h(v) <=
    h(u) + w`` on every arc, as a virtual source's distances would be, but computed at the
    magnitudes the sources' own distances have (from 0 everywhere, rounding kept 0.1 + 0.2
    - 0.3 falling below -0.3 where from the source it settles near -8).  Rounds that do
    not settle (a loop of rounding) are an :class:`~kernels.errors.UnsettledError`."""
    h = np.full(k, np.inf)
    h[sources] = 0.0
    cap = 4 * k + 64
    for _ in range(cap):
        cand = h[tails] + w
        better = cand < h[heads]
        if not better.any():
            return h
        np.minimum.at(h, heads[better], cand[better])
    raise _unsettled(graph_name, f"Johnson's potentials still fell after {cap:,} Bellman-Ford rounds")


def _johnson_reachable(mat, sources, predecessors, *, settle=False, integer=True, graph_name="the graph"):
    """Johnson's algorithm on the part of the graph reachable from ``sources``: potentials
    from :func:`_potentials` (only cycles reachable from a source matter, and were ruled
    out before this is called), SciPy's Dijkstra on the reweighted arcs.

    The reweighting (``w + h(u) - h(v)``, Dijkstra on those, then ``- h(s) + h(v)``) is
    float64 arithmetic on values up to twice the path bound: integer distances whose
    reweighted lengths pass 2**53 came out rounded (a distance of 2**52 + 1 as 2**52), and
    real ones lost what the potentials cancel (a distance of 1e-300 next to a potential
    of -0.3 came out 0).  With ``settle`` its answer is made exact by
    :func:`settle_johnson` (``integer``: the weights are whole numbers).
    """
    n = mat.shape[0]
    keep, local, sub = reachable_part(mat, sources)
    want_pred = predecessors or settle
    # Johnson's steps, with the potentials from our own rounds: SciPy's Johnson never
    # returned on some real weights (0.1, 0.2, -0.3 around a cycle) and raised its own
    # NegativeCycleError where the cycle weighs 0 exactly
    sub = sub.tocsr()
    src = local[sources]
    tails = np.repeat(np.arange(sub.shape[0], dtype=np.int64), np.diff(sub.indptr))
    heads = sub.indices.astype(np.int64)
    h = _potentials(sub.shape[0], tails, heads, sub.data.astype(np.float64), src, graph_name)
    with np.errstate(invalid="ignore"):
        reweighted = np.maximum(sub.data + h[tails] - h[heads], 0.0)  # >= 0 but for rounding
    import scipy.sparse as sp

    rw = sp.csr_array((reweighted, sub.indices, sub.indptr), shape=sub.shape)  # explicit zeros are arcs
    out = csg.dijkstra(rw, directed=True, indices=src, return_predecessors=want_pred)
    d_sub, p_sub = (out if want_pred else (out, None))
    d_sub = np.atleast_2d(d_sub) - h[src][:, None] + h[None, :]
    if want_pred:
        p_sub = np.atleast_2d(p_sub).astype(np.int64)
        p_sub[p_sub < 0] = -1
    if settle:
        d_sub, p_sub = settle_johnson(sub, local[sources], d_sub, p_sub, integer=integer)
    dist = np.full((len(sources), n), np.inf)
    dist[:, keep] = d_sub
    pred = None
    if predecessors:
        pred = np.full((len(sources), n), -1, dtype=np.int64)
        pred[:, keep] = np.where(p_sub >= 0, keep[np.maximum(p_sub, 0)], -1)
    return dist, pred


def johnson_needs_settling(graph) -> bool:
    """Whether SciPy's Johnson may answer ``graph`` (negative arcs) inexactly: real
    weights (the potentials cancel what they add), and integer ones whose reweighted path
    lengths (up to twice the path bound) can reach 2**53.  Below that every value
    Johnson keeps is an exact integer in float64."""
    return (not graph.integer_weights) or 2 * graph.path_bound() >= EXACT_LIMIT


#: cells of the (rows x vertices) and (rows x arcs) work arrays of :func:`settle_johnson`
_SETTLE_CELLS = 1 << 22


def settle_johnson(mat, sources, dist, pred, *, integer: bool):
    """Exact distances and a shortest-path tree from Johnson's float64 answer.

    ``dist``/``pred`` (``(B, k)``, -1 for none) are SciPy's Johnson on ``mat`` (SciPy CSR,
    ``k`` vertices, no negative cycle reachable from ``sources``).  Reachability and the
    tree are right but rounding may have made the distances, and so the tree's choice,
    wrong by a little (or entirely, next to 0).  Here (1) every vertex's distance is
    recomputed along its tree path, from the source outwards, in the weights' own
    arithmetic (int64 for integer weights: exact; float64 for real ones, each distance
    ``dist[pred] + w`` as a Dijkstra computes it), then (2) Bellman-Ford rounds, from
    those true path lengths, lower every distance an arc still improves (its predecessor
    with it) until none does.  For integer weights this ends within ``k`` rounds, exact,
    and the predecessors stay a tree (a cycle among them would be a negative cycle).  For
    real weights a round cap of ``k + 1`` applies, and where rounding kept the rounds
    going or closed a loop of predecessors, (1)'s tree is kept.
    """
    mat = mat.tocsr()
    k = mat.shape[0]
    b = dist.shape[0]
    if b == 0 or k == 0 or mat.nnz == 0:
        return dist, pred
    tails = np.repeat(np.arange(k, dtype=np.int64), np.diff(mat.indptr))
    heads = mat.indices.astype(np.int64)
    w = mat.data.astype(np.int64) if integer else mat.data.astype(np.float64)
    arcs = (tails, heads, w, *_lightest_arcs(tails, heads, w, k))  # (the tree's arcs, below)
    sources = np.asarray(sources, dtype=np.int64)
    dist, pred = dist.copy(), pred.copy()
    # a few rows at a time: the work arrays below are (rows x k) and (rows x arcs)
    step = max(1, _SETTLE_CELLS // k)
    for r0 in range(0, b, step):
        r1 = min(b, r0 + step)
        dist[r0:r1], pred[r0:r1] = _settle_rows(arcs, k, sources[r0:r1], dist[r0:r1], pred[r0:r1], integer)
    return dist, pred


def _settle_rows(arcs, k, sources, dist, pred, integer):
    """:func:`settle_johnson` for a block of rows."""
    tails, heads, w, keys_s, w_s = arcs
    b = dist.shape[0]
    reached = np.isfinite(dist)
    rows = np.arange(b)[:, None]
    has = (pred >= 0) & reached
    has[rows[:, 0], np.asarray(sources)] = False
    # (1) depth of every reached vertex in its tree (pointer doubling), then level by level
    anc = np.where(has, pred, -1)
    depth = _tree_depth(anc)
    if depth is None:  # (SciPy's predecessors always form a tree)
        raise RuntimeError("SciPy's Johnson returned predecessors that loop")
    exact = np.zeros((b, k), dtype=np.int64 if integer else np.float64)
    r_all, v_all = np.nonzero(has)
    if len(v_all):
        u_all = anc[r_all, v_all]
        pos = np.searchsorted(keys_s, u_all * k + v_all)
        w_tree = w_s[pos]
        dep = depth[r_all, v_all]
        by = np.argsort(dep, kind="stable")
        r_all, v_all, u_all, w_tree, dep = r_all[by], v_all[by], u_all[by], w_tree[by], dep[by]
        cuts = np.flatnonzero(np.diff(dep)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(dep)]):
            exact[r_all[lo:hi], v_all[lo:hi]] = exact[r_all[lo:hi], u_all[lo:hi]] + w_tree[lo:hi]
    tree_d = exact.copy()
    tree_p = np.where(has, pred, -1)
    # (2) Bellman-Ford rounds from those path lengths, a block of rows at a time
    big = np.int64(2**62) if integer else np.inf
    cur = np.where(reached, exact, big)
    par = tree_p.copy()
    step = max(1, _SETTLE_CELLS // max(len(w), 1))
    converged = True
    for r0 in range(0, b, step):
        r1 = min(b, r0 + step)
        blk_d, blk_p = cur[r0:r1], par[r0:r1]
        flat_d = blk_d.reshape(-1)
        nb = r1 - r0
        idx = (np.arange(nb, dtype=np.int64)[:, None] * k + heads[None, :]).reshape(-1)
        done = False
        for _ in range(k + 1):
            dt = blk_d[:, tails]
            cand = dt + w
            better = (dt != big) & (cand < blk_d[:, heads])
            if not better.any():
                done = True
                break
            bf = better.reshape(-1)
            ci, cv = idx[bf], cand.reshape(-1)[bf]
            ct = np.broadcast_to(tails[None, :], better.shape).reshape(-1)[bf]
            np.minimum.at(flat_d, ci, cv)
            win = flat_d[ci] == cv
            blk_p.reshape(-1)[ci[win]] = ct[win]
        converged &= done
    if integer:
        return np.where(reached, cur.astype(np.float64), np.inf), par
    from gpu_sssp.kernels.check import chain_ends

    end = chain_ends(par)
    if not converged or (reached & (np.take_along_axis(par, end, axis=1) >= 0)).any():
        return np.where(reached, tree_d, np.inf), tree_p
    return np.where(reached, cur, np.inf), par


def _tree_depth(anc):
    """Hops from every vertex to the root of its tree (``anc``: parent or -1), per row, by
    pointer doubling; None where the parents loop."""
    b, k = anc.shape
    rows = np.arange(b)[:, None]
    depth = (anc >= 0).astype(np.int64)
    jump = anc.copy()
    for _ in range(max(k, 2).bit_length() + 1):
        live = jump >= 0
        if not live.any():
            return depth
        safe = np.where(live, jump, 0)
        depth = np.where(live, depth + depth[rows, safe], depth)
        jump = np.where(live, jump[rows, safe], -1)
    return None  # a loop: not a tree
