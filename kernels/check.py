"""Checks of a solver's answer against the CPU reference (used by tests, verify, bench)."""
from __future__ import annotations

import numpy as np


def _arc_lookup(graph):
    """Arcs as sorted keys ``tail * n + head`` with their weights, lightest first among
    parallel arcs, for ``searchsorted`` look-ups of ``w(u, v)``."""
    keys = graph.tails().astype(np.int64) * graph.n + graph.indices.astype(np.int64)
    order = np.lexsort((graph.weights, keys))
    return keys[order], graph.weights[order]


def chain_ends(pred: np.ndarray) -> np.ndarray:
    """Where following predecessors ends, for every vertex of every row, by pointer
    jumping (path doubling): O(n log depth) per row, no Python loop over vertices.

    Parameters
    ----------
    pred : ndarray of int, shape (n,) or (B, n)
        Predecessors (``-1`` for none), every other entry in ``0 .. n - 1``.

    Returns
    -------
    ndarray of int64, shape of ``pred``
        For each vertex, the first vertex without a predecessor on its chain (itself
        when it has none), or, when the chain loops, some vertex on the loop (which
        then has a predecessor: test ``pred[end] >= 0`` to tell the two apart).
    """
    pred = np.asarray(pred)
    shape = pred.shape
    p2 = np.atleast_2d(pred)
    b, n = p2.shape
    total = b * n
    it = np.int32 if total < 2**31 else np.int64
    flat = np.arange(total, dtype=it)
    base = (flat // max(n, 1)) * n
    # a vertex without a predecessor points at itself; rows are kept apart by offsets
    nxt = np.where(p2.reshape(-1) >= 0, p2.reshape(-1).astype(it, copy=False) + base, flat)
    # after k rounds nxt[v] is 2**k steps up the chain; ceil(log2 n) + 1 rounds reach
    # every root, and a round that changes nothing means every chain has settled
    for _ in range(max(n, 2).bit_length() + 1):
        nn = nxt[nxt]
        if np.array_equal(nn, nxt):
            break
        nxt = nn
    return (nxt - base).astype(np.int64).reshape(shape)


def tree_problems(graph, dist: np.ndarray, pred: np.ndarray, sources, *, rtol: float = 0.0,
                  arcs=None) -> list[str]:
    """Problems with predecessor arrays of several sources (empty list = valid trees).

    For every row ``i`` (source ``sources[i]``): every reached vertex other than the
    source has a predecessor, unreached vertices and the source have none, each
    predecessor arc exists and is tight (``dist[pred[v]] + w(pred[v], v) == dist[v]``,
    the lightest parallel arc), and following predecessors from every reached vertex
    ends at the source (no loop, no other root).  Vectorised over rows and vertices.

    Parameters
    ----------
    graph : kernels.graph.Graph
    dist : ndarray, shape (B, n)
        Distances (``+inf`` where unreached).
    pred : ndarray of int, shape (B, n)
        Predecessors as internal indices (``-1`` for none).
    sources : array_like of int, shape (B,)
        Internal index of each row's source.
    rtol : float
        Relative tolerance of the tightness test; 0 (default) compares exactly, as
        integer weights need.
    arcs : tuple, optional
        ``_arc_lookup(graph)``, when checking many results of one graph.

    Returns
    -------
    list of str
        One line per kind of problem, with a count and an example (source and vertex
        as internal indices).  A predecessor index outside ``-1 .. n - 1`` stops the
        checks there.
    """
    dist = np.atleast_2d(np.asarray(dist, dtype=np.float64))
    pred = np.atleast_2d(np.asarray(pred))
    src = np.atleast_1d(np.asarray(sources, dtype=np.int64))
    if dist.shape != pred.shape or dist.shape[0] != len(src) or dist.shape[1] != graph.n:
        return [f"shapes differ: distances {dist.shape}, predecessors {pred.shape}, "
                f"{len(src)} sources, {graph.n} vertices"]
    problems: list[str] = []
    b, n = dist.shape
    if b == 0 or n == 0:
        return problems
    rows = np.arange(b)

    def example(mask, what):
        i, v = np.argwhere(mask)[0]
        return f"{int(mask.sum())} {what} (e.g. source {int(src[i])}, vertex {int(v)})"

    if ((pred < -1) | (pred >= n)).any():
        return [example((pred < -1) | (pred >= n), "predecessor indices out of range")]
    has = pred >= 0
    reached = np.isfinite(dist)
    is_src = np.zeros((b, n), dtype=bool)
    is_src[rows, src] = True
    if (has & ~reached).any():
        problems.append(example(has & ~reached, "unreached vertices have a predecessor"))
    missing = reached & ~is_src & ~has
    if missing.any():
        problems.append(example(missing, "reached vertices have no predecessor"))
    src_pred = has[rows, src] & (dist[rows, src] == 0)
    if src_pred.any():
        i = int(np.argmax(src_pred))
        problems.append(f"the source has a predecessor ({int(src_pred.sum())} sources, e.g. {int(src[i])})")
    i_idx, v = np.nonzero(has & reached)
    if len(v):
        u = pred[i_idx, v].astype(np.int64)
        k_sorted, w_sorted = arcs if arcs is not None else _arc_lookup(graph)
        k = u * n + v
        pos = np.searchsorted(k_sorted, k)
        found = (pos < len(k_sorted)) & (k_sorted[np.minimum(pos, len(k_sorted) - 1)] == k)
        if not found.all():
            j = int(np.argmin(found))
            problems.append(f"{int((~found).sum())} predecessors are not joined to their vertex by an arc "
                            f"(e.g. source {int(src[i_idx[j]])}: {int(u[j])} -> {int(v[j])})")
            i_idx, v, u, pos = i_idx[found], v[found], u[found], pos[found]
        w = w_sorted[pos].astype(np.float64)
        lhs = dist[i_idx, u] + w
        rhs = dist[i_idx, v]
        bad = ~np.isclose(lhs, rhs, rtol=rtol, atol=0) if rtol else lhs != rhs
        if bad.any():
            j = int(np.argmax(bad))
            problems.append(
                f"{int(bad.sum())} violations of dist[pred]+w == dist[v], e.g. source {int(src[i_idx[j]])} "
                f"v={int(v[j])}: {lhs[j] - w[j]} + {w[j]} != {rhs[j]}"
            )
    # every chain from a reached vertex must end at the source
    end = chain_ends(pred)
    loops = reached & (pred[rows[:, None], end] >= 0)
    if loops.any():
        i, vv = np.argwhere(loops)[0]
        problems.append(f"{int(loops.sum())} reached vertices' predecessor chains loop instead of reaching "
                        f"the source (e.g. source {int(src[i])}, vertex {int(vv)}: the loop passes "
                        f"{int(end[i, vv])})")
    # (a reached vertex without a predecessor is its own end: reported above)
    elsewhere = reached & ~loops & (end != src[:, None]) & has
    if elsewhere.any():
        i, vv = np.argwhere(elsewhere)[0]
        problems.append(f"{int(elsewhere.sum())} reached vertices' predecessor chains end at another vertex "
                        f"than the source (e.g. source {int(src[i])}, vertex {int(vv)} ends at "
                        f"{int(end[i, vv])})")
    return problems


def predecessor_violations(graph, dist: np.ndarray, pred: np.ndarray, source: int, *, rtol: float = 0.0,
                           arcs=None) -> list[str]:
    """Problems with one source's predecessor array (empty list = valid tree).

    :func:`tree_problems` for one row: every reached vertex but the source has a
    predecessor joined to it by a tight arc (``dist[pred[v]] + w(pred[v], v) ==
    dist[v]``, the lightest parallel arc), unreached vertices and the source have
    none, and following predecessors from every reached vertex ends at the source.

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
        predecessors form a valid shortest-path tree.
    """
    return tree_problems(graph, np.asarray(dist)[None, :], np.asarray(pred)[None, :], [int(source)],
                         rtol=rtol, arcs=arcs)


def improving_arcs(graph, dist: np.ndarray, sources, *, rtol: float = 0.0, cells: int = 1 << 22) -> str | None:
    """The arcs that would still shorten a distance (``dist[u] + w < dist[v]``; with
    ``rtol``, by more than that relative tolerance), one line with a count and an example,
    or None.  None of them, with a tight predecessor tree ending at the source
    (:func:`tree_problems`), proves integer distances shortest without any reference:
    the tree makes each one a path's length, and no arc improving makes it a lower bound.
    ``cells``: rows x arcs compared at once."""
    dist = np.atleast_2d(np.asarray(dist, dtype=np.float64))
    src = np.atleast_1d(np.asarray(sources, dtype=np.int64))
    if not graph.m or not dist.size:
        return None
    tails = graph.tails().astype(np.int64)
    heads = graph.indices.astype(np.int64)
    w = graph.weights.astype(np.float64)
    step = max(1, cells // graph.m)
    count, example = 0, None
    for r0 in range(0, len(dist), step):
        d = dist[r0:r0 + step]
        du, dv = d[:, tails], d[:, heads]
        with np.errstate(invalid="ignore"):
            lhs = du + w
            bad = np.isfinite(du) & (lhs < dv)
            if rtol:
                bad &= ~np.isclose(lhs, dv, rtol=rtol, atol=0)
        if bad.any():
            count += int(bad.sum())
            if example is None:
                i, a = np.argwhere(bad)[0]
                example = (int(src[r0 + i]), int(tails[a]), int(heads[a]), du[i, a], w[a], dv[i, a])
    if not count:
        return None
    s, u, v, du, wa, dv = example
    return (f"{count} arcs would still shorten a distance (not shortest, or a negative cycle missed), e.g. "
            f"source {s}: {u} -> {v}: {du} + {wa} < {dv}")


def _sums_close(graph, ref, res, tol: float, ecc) -> bool:
    """Whether the sums of distances agree within ``tol`` of their scale: the sum of the
    distances' magnitudes (from ``ref``'s full rows, else ``reached`` times the
    eccentricity or the sum itself, whichever is larger).  NumPy's ``allclose`` default
    ``atol=1e-8`` passed any sum of weights around 1e-30 (a sum off by half, or 0)."""
    a = np.asarray(ref.sum_distance, dtype=np.float64)
    b = np.asarray(res.sum_distance, dtype=np.float64)
    if a.shape != b.shape:
        return False
    d = ref.distances
    if d is not None and d.ndim == 2 and d.shape[1] == graph.n:
        scale = np.where(np.isfinite(d), np.abs(d), 0.0).sum(axis=1)
    else:
        reached = np.asarray(ref.reached, dtype=np.float64)
        scale = np.maximum(np.abs(a), reached * np.abs(np.nan_to_num(ecc, nan=0.0, posinf=0.0, neginf=0.0)))
    with np.errstate(invalid="ignore"):
        ok = (a == b) | (np.abs(a - b) <= tol * scale) | (np.isnan(a) & np.isnan(b))
    return bool(ok.all())


def compare(graph, ref, res, *, rtol: float | None = None) -> list[str]:
    """Differences between two :class:`~kernels.result.Result` objects (empty = equal).

    Integer-weighted graphs compare exactly; float weights with ``rtol`` (default
    1e-5 for float32 weights, 1e-12 for float64).  Distances are compared when both
    results hold them; reached counts, eccentricities and sums always; ``res``'s
    distances (full rows) are checked against its graph's arcs (:func:`improving_arcs`)
    and its predecessors (if any) against its own distances.

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
    elif not _sums_close(graph, ref, res, max(rtol, 1e-9) * 10, ea):
        problems.append("sums of distances differ")
    if res.distances is not None and res.distances.shape[1:] == (graph.n,):
        # independent of the reference (which may share the result's error: `sssp verify`
        # checks bellman-ford against itself on graphs with negative arcs)
        p = improving_arcs(graph, res.distances, res.sources, rtol=rtol)
        if p:
            problems.append(p)
    if res.predecessors is not None and res.distances is not None:
        p = tree_problems(graph, res.distances, res.predecessors, res.sources, rtol=rtol)
        if p:
            problems.append("predecessors: " + "; ".join(p))
    return problems
