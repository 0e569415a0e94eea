"""Checks of a solver's answer against the CPU reference (used by tests, verify, bench)."""
from __future__ import annotations

import numpy as np


def _arc_lookup(graph):
    """Arcs as sorted keys ``tail * n + head`` with their weights, lightest first among
    parallel arcs, for ``searchsorted`` look-ups of ``w(u, v)``."""
    keys = graph.tails().astype(np.int64) * graph.n + graph.indices.astype(np.int64)
    order = np.lexsort((graph.weights, keys))
    return keys[order], graph.weights[order]


def predecessor_violations(graph, dist: np.ndarray, pred: np.ndarray, source: int, *, rtol: float = 0.0,
                           arcs=None) -> list[str]:
    """Problems with one source's predecessor array (empty list = valid tree).

    Checks ``dist[pred[v]] + w(pred[v], v) == dist[v]`` for every vertex with a
    predecessor (the lightest arc ``pred[v] -> v`` is used), that reached vertices
    other than the source have one, and that unreached vertices and the source have
    none.

    Parameters
    ----------
    graph : kernels.graph.Graph
    dist : ndarray, shape (n,)
        The source's distances (``+inf`` where unreached).
    pred : ndarray of int, shape (n,)
        The source's predecessors as internal indices (``-1`` for none).
    source : int
        Internal index of the source.
    rtol : float
        Relative tolerance of the ``dist[pred] + w == dist[v]`` test; 0 (default)
        compares exactly, as integer weights need.
    arcs : tuple, optional
        The graph's arc look-up (``_arc_lookup(graph)``), when checking many sources
        of one graph; built here when not given.

    Returns
    -------
    list of str
        One line per kind of problem, with a count and an example; empty when the
        predecessors form a valid shortest-path tree.  A predecessor index outside
        ``0 .. n - 1`` stops the checks there (the arc test cannot run on it).
    """
    problems = []
    n = graph.n
    has = pred >= 0
    reached = np.isfinite(dist)
    need = reached.copy()
    need[source] = False
    if np.any(has[~reached]):
        problems.append(f"{int(np.sum(has & ~reached))} unreached vertices have a predecessor")
    missing = need & ~has
    if missing.any():
        problems.append(f"{int(missing.sum())} reached vertices have no predecessor (e.g. {int(np.argmax(missing))})")
    if has[source] and dist[source] == 0:
        problems.append("the source has a predecessor")
    v = np.nonzero(has & reached)[0]
    if len(v):
        u = pred[v]
        if (u < 0).any() or (u >= n).any():
            return problems + ["predecessor index out of range"]
        # lightest arc u -> v (parallel arcs may exist with parallel="keep")
        k_sorted, w_sorted = arcs if arcs is not None else _arc_lookup(graph)
        k = u.astype(np.int64) * n + v
        pos = np.searchsorted(k_sorted, k)
        found = (pos < len(k_sorted)) & (k_sorted[np.minimum(pos, len(k_sorted) - 1)] == k)
        if not found.all():
            problems.append(f"{int((~found).sum())} predecessors are not joined to their vertex by an arc")
            v, u, pos = v[found], u[found], pos[found]
        w = w_sorted[pos].astype(np.float64)
        lhs = dist[u] + w
        if rtol:
            bad = ~np.isclose(lhs, dist[v], rtol=rtol, atol=0)
        else:
            bad = lhs != dist[v]
        if bad.any():
            i = int(np.argmax(bad))
            problems.append(
                f"{int(bad.sum())} violations of dist[pred]+w == dist[v], e.g. v={int(v[i])}: "
                f"{dist[u[i]]} + {w[i]} != {dist[v[i]]}"
            )
    return problems


def compare(graph, ref, res, *, rtol: float | None = None) -> list[str]:
    """Differences between two :class:`~kernels.result.Result` objects (empty = equal).

    Integer-weighted graphs compare exactly; float weights with ``rtol`` (default
    1e-5 for float32 weights, 1e-12 for float64).  Distances are compared when both
    results hold them; reached counts, eccentricities and sums always; ``res``'s
    predecessors (if any) are checked against its own distances.

    Parameters
    ----------
    graph : kernels.graph.Graph
    ref, res : kernels.result.Result
        The reference and the result under test, for the same sources.
    rtol : float, optional
        Relative tolerance for float weights; 0 means exact.

    Returns
    -------
    list of str
        One line per kind of difference found; empty when the results agree.
    """
    problems = []
    if rtol is None:
        rtol = 0.0 if graph.integer_weights else (1e-5 if graph.weights.dtype == np.float32 else 1e-12)
    if not np.array_equal(ref.sources, res.sources):
        return ["sources differ"]
    if ref.distances is not None and res.distances is not None:
        a, b = ref.distances, res.distances
        if a.shape != b.shape:
            return [f"distance shapes differ: {a.shape} vs {b.shape}"]
        fa, fb = np.isfinite(a), np.isfinite(b)
        if not np.array_equal(fa, fb):
            problems.append(f"reachability differs at {int((fa != fb).sum())} (source, vertex) pairs")
        both = fa & fb
        if rtol == 0.0:
            bad = both & (a != b)
        else:
            bad = both & ~np.isclose(a, b, rtol=rtol, atol=0)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            problems.append(f"{int(bad.sum())} distances differ, e.g. source {int(ref.sources[i])} "
                            f"vertex {int(j)}: {a[i, j]} vs {b[i, j]}")
    if not np.array_equal(ref.reached, res.reached):
        problems.append("reached counts differ")
    # checked on its own: without distance arrays it is the only check of the maximum
    ea = np.asarray(ref.eccentricity, dtype=np.float64)
    eb = np.asarray(res.eccentricity, dtype=np.float64)
    if ea.shape != eb.shape or not (np.array_equal(ea, eb, equal_nan=True) if rtol == 0.0
                                    else np.allclose(ea, eb, rtol=rtol, atol=0, equal_nan=True)):
        problems.append("eccentricities differ")
    if rtol == 0.0:
        if not np.array_equal(np.asarray(ref.sum_distance, dtype=np.float64),
                              np.asarray(res.sum_distance, dtype=np.float64)):
            problems.append("sums of distances differ")
    elif not np.allclose(ref.sum_distance, res.sum_distance, rtol=max(rtol, 1e-9) * 10):
        problems.append("sums of distances differ")
    if res.predecessors is not None and res.distances is not None:
        arcs = _arc_lookup(graph)
        for i, s in enumerate(res.sources):
            p = predecessor_violations(graph, res.distances[i], res.predecessors[i], int(s), rtol=rtol,
                                       arcs=arcs)
            if p:
                problems.append(f"source {int(s)}: " + "; ".join(p))
                break
    return problems
