"""The order in which many sources are cut into batches for the batched GPU solver.

Sources of one region of the graph share their shortest-path waves: the batched kernel
(``kernels/cuda/batched.cu``) then needs fewer iterations per batch and relaxes less per
source (NY, 4,096 random sources on an H200: 0.092 ms per source from batches of this
order against 0.128 from batches cut in the given order; BENCHMARKS.md).  Used by
``kernels.gpu.batched`` for long source lists and by the study planner
(``pipeline.sources.plan_sources(order="locality")``).
"""
from __future__ import annotations

import numpy as np


def _hops(pattern, start: int) -> np.ndarray:
    """Hop distances from ``start`` in the undirected ``pattern`` (inf where unreachable)."""
    from scipy.sparse.csgraph import dijkstra

    return dijkstra(pattern, directed=False, indices=int(start), unweighted=True)


def _cached_coordinates(graph, start: int) -> tuple[np.ndarray, np.ndarray]:
    """(landmark_coordinates of ``start``'s component, weak component labels), computed
    once per graph and component (``Graph.cached``; two threads may both compute one:
    harmless)."""
    from scipy.sparse.csgraph import connected_components

    pattern = None

    def labels():
        nonlocal pattern
        pattern = graph.pattern(np.float64)  # float: what the hop searches work on
        return connected_components(pattern, directed=True, connection="weak")[1]

    comp = graph.cached("weak-components", labels)
    label = int(comp[start])
    coords = graph.cached(("landmark-coordinates", label),
                          lambda: landmark_coordinates(graph, start, pattern=pattern))
    return coords, comp


def landmark_coordinates(graph, start: int = 0, landmarks: int = 3, *,
                         pattern=None) -> np.ndarray:
    """Hop distances of every vertex from ``landmarks`` far-apart vertices.

    The first landmark is the vertex farthest from ``start`` (undirected view), each next
    one the vertex farthest from all chosen so far (farthest-point sampling).  On road
    and mesh-like graphs these distances act as coordinates: vertices close in the
    graph are close in them.  Vertices outside ``start``'s component get -1.
    ``pattern`` is ``graph.pattern(np.float64)`` when the caller has it already.

    Returns
    -------
    ndarray of float64, shape (n, landmarks)
    """
    n = graph.n
    if pattern is None:
        pattern = graph.pattern(np.float64)
    d0 = _hops(pattern, start)
    fin = np.isfinite(d0)
    coords = np.full((n, landmarks), -1.0)
    near = np.where(fin, np.inf, -np.inf)  # distance to the nearest chosen landmark
    far = int(np.argmax(np.where(fin, d0, -1.0)))
    for k in range(landmarks):
        d = _hops(pattern, far)
        coords[fin, k] = d[fin]
        near = np.minimum(near, np.where(fin, d, -np.inf))
        far = int(np.argmax(near))
    return coords


def locality_order(graph, sources, leaf: int = 32) -> np.ndarray:
    """Order ``sources`` so that every run of consecutive sources is compact in the graph.

    Sources are placed by :func:`landmark_coordinates` and split recursively at the
    median of the coordinate with the largest spread (a k-d tree) down to ``leaf``
    sources; the leaves in tree order give the order.  A batch cut from it holds
    sources of one region, whose shortest-path waves reach every vertex at nearly the
    same distance: the batched GPU kernel then needs fewer iterations and shares more
    work (NY, 4,096 random sources: BENCHMARKS.md).  Sources outside the first source's
    component follow, by component.  The landmark distances are computed once per graph
    and component (four breadth-first searches) and cached.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : array_like of int
        Internal indices.
    leaf : int
        Largest group left unsplit.

    Returns
    -------
    ndarray of int64
        A permutation of ``range(len(sources))``.
    """
    src = np.asarray(sources, dtype=np.int64)
    if len(src) <= 1 or graph.n == 0:
        return np.arange(len(src), dtype=np.int64)
    all_coords, labels = _cached_coordinates(graph, int(src[0]))
    coords = all_coords[src]
    inside = coords[:, 0] >= 0
    out = []
    stack = [np.flatnonzero(inside)]
    while stack:
        ids = stack.pop()
        if len(ids) <= leaf:
            out.append(ids)
            continue
        c = coords[ids]
        spread = c.max(axis=0) - c.min(axis=0)
        ax = int(np.argmax(spread))
        if spread[ax] == 0:
            out.append(ids)
            continue
        h = len(ids) // 2
        part = np.argpartition(c[:, ax], h)
        stack.append(ids[part[h:]])
        stack.append(ids[part[:h]])
    rest = np.flatnonzero(~inside)
    if len(rest):
        out.append(rest[np.lexsort((src[rest], labels[src[rest]]))])
    return np.concatenate(out).astype(np.int64)
