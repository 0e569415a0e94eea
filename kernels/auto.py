"""``method="auto"``: choose a method from the graph's statistics.

The rule (README "Algorithms"; the figures are in BENCHMARKS.md, kernel times on an
H200):

- CPU backend: ``dijkstra`` for non-negative weights, else ``bellman-ford``.
- GPU, ``phast`` (a contraction-hierarchy sweep) first, where :func:`phast_applies`:
  integer weights >= 0 within the hierarchy's bound (:func:`kernels.hierarchy.eligible`),
  a road-like graph (:func:`road_like`: mean out-degree at most ``ROAD_MAX_MEAN_DEGREE``,
  no vertex of more than ``ROAD_MAX_DEGREE`` arcs, and a hop depth from the
  highest-degree vertex of at least ``ROAD_MIN_DEPTH_FACTOR`` x log2(n): a
  low-dimensional graph, not an expander).  Road networks, meshes and geometric graphs
  contract into small hierarchies (NY 45 levels and 1.84 hierarchy arcs per arc, BAY 41
  and 1.70, delaunay_n15 41 and 1.46, rgg_n_2_15 40 and 1.24; hop depths 415, 73, 177
  against 2 log2 n = 36, 30, 30); the contraction of a random graph of mean degree 3
  with 20,000 vertices (hop depth 8 against 29) had not finished after 3 minutes.  And the hierarchy either already held by the graph (built, or loaded from the
  cache by a study's worker) or worth building: at least ``PHAST_BUILD_SHARE`` x n sources
  (NY: the 4.5 s build costs about what ``batched`` takes for 70,000 sources; ``phast``
  then solves all 264,346 NY sources in 0.33 s of kernel time on an H100 against 16.1 s
  for ``batched`` on an H200).  A held
  hierarchy that blew up (more than ``HIERARCHY_MAX_ARC_RATIO`` arcs per graph arc, or
  more than ``HIERARCHY_MAX_LEVELS`` levels) keeps ``batched``.  One source takes ``phast``
  only with the hierarchy held.
- GPU, more than one source otherwise: ``batched`` (NY, 4,096 sources: 0.092 ms per source
  against 2.5 ms for the best single-source kernel; RMAT 2^20: 2.2 against 3.1).
- GPU, one source: ``edgelist`` on dense graphs (mean degree >= ``DENSE_DEGREE``: RMAT
  2^18-2^21 with 16 arcs per vertex, where it is 1.8-2.1x faster than ``hbf``: shallow
  graphs, so a sweep over every arc per round beats a frontier; on RMAT 2^21-2^22
  ``harish`` is faster still, not followed yet), else ``hbf`` (road graphs, meshes, grids:
  the fastest on every one of them, within 5% of ``edgelist`` on Lederberg; BFS is not
  faster even for unit weights).
Methods that need non-negative weights are skipped for a graph that has negative ones.
"""
from __future__ import annotations

from gpu_sssp.kernels import registry

#: Mean out-degree from which one source is solved by sweeping every arc (edgelist).
DENSE_DEGREE = 8.0

#: road-like graphs (phast): mean out-degree at most this ...
ROAD_MAX_MEAN_DEGREE = 8.0
#: ... and no vertex with more arcs than this (power-law graphs have hubs of thousands)
ROAD_MAX_DEGREE = 64
#: ... and a hop depth from the highest-degree vertex of at least this x log2(n)
ROAD_MIN_DEPTH_FACTOR = 2.0
#: without a held hierarchy, phast (and its build) for at least this share of n sources
PHAST_BUILD_SHARE = 0.25
#: a held hierarchy with more arcs per graph arc, or more levels, keeps batched
HIERARCHY_MAX_ARC_RATIO = 4.0
HIERARCHY_MAX_LEVELS = 256

GPU_PREFERENCE_MANY = ["batched", "hbf", "harish"]
GPU_PREFERENCE_ONE = ["hbf", "harish", "batched"]
GPU_PREFERENCE_ONE_DENSE = ["edgelist", "hbf", "harish", "batched"]


def choose(graph, n_sources: int, backend: str) -> str:
    """Name of the method ``kernels.solve(method="auto")`` runs.

    Parameters
    ----------
    graph : kernels.graph.Graph
    n_sources : int
        Number of sources of the call.
    backend : {"cpu", "gpu"}

    Returns
    -------
    str

    Raises
    ------
    ValueError
        No registered GPU method accepts the graph.
    """
    if backend == "cpu":
        return "bellman-ford" if graph.has_negative else "dijkstra"
    if "phast" in registry.available_methods("gpu") and phast_applies(graph, n_sources):
        return "phast"
    if n_sources > 1:
        prefs = GPU_PREFERENCE_MANY
    elif graph.n and graph.m / graph.n >= DENSE_DEGREE:
        prefs = GPU_PREFERENCE_ONE_DENSE
    else:
        prefs = GPU_PREFERENCE_ONE
    names = set(registry.available_methods("gpu"))
    for name in prefs:
        if name in names and (registry.get(name).negative_weights or not graph.has_negative):
            return name
    raise ValueError("no GPU method is registered that accepts this graph")


def hop_depth(graph) -> int:
    """Largest hop distance from the vertex of highest degree, arcs taken both ways
    (once per graph, ``Graph.cached``; one BFS)."""
    def depth():
        import numpy as np
        import scipy.sparse.csgraph as csg

        a = graph.pattern()
        a = (a + a.T).tocsr()
        s = int(np.argmax(np.diff(a.indptr)))
        d = csg.dijkstra(a, indices=s, unweighted=True, directed=False)
        d = d[np.isfinite(d)]
        return int(d.max()) if len(d) else 0

    return graph.cached("auto-hop-depth", depth)


def road_like(graph) -> bool:
    """Sparse, bounded degree and low-dimensional (roads, meshes, geometric graphs): mean
    out-degree at most ``ROAD_MAX_MEAN_DEGREE``, no vertex of more than ``ROAD_MAX_DEGREE``
    out- or in-arcs, hop depth at least ``ROAD_MIN_DEPTH_FACTOR`` x log2(n)."""
    import math

    if graph.n < 2 or not graph.m:
        return False
    if graph.m / graph.n > ROAD_MAX_MEAN_DEGREE:
        return False
    if graph.out_degree().max() > ROAD_MAX_DEGREE or graph.in_degree().max() > ROAD_MAX_DEGREE:
        return False
    return hop_depth(graph) >= ROAD_MIN_DEPTH_FACTOR * math.log2(graph.n)


def phast_applies(graph, n_sources: int) -> bool:
    """Whether ``auto`` runs ``phast`` for ``n_sources`` sources on ``graph`` (module docstring)."""
    from gpu_sssp.kernels import hierarchy as hmod

    if hmod.eligible(graph) is not None or not road_like(graph):
        return False
    if hmod.has_hierarchy(graph):
        h = hmod.get_hierarchy(graph)
        return (h.m_up + h.m_down <= HIERARCHY_MAX_ARC_RATIO * graph.m
                and h.levels <= HIERARCHY_MAX_LEVELS)
    return n_sources > 1 and n_sources >= PHAST_BUILD_SHARE * graph.n
