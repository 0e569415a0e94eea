"""``method="auto"``: choose a method from the graph's statistics.

The rule (README "Algorithms"; the figures are in BENCHMARKS.md, kernel times on an
H200):

- CPU backend: ``bellman-ford`` for negative weights; ``phast`` (a sweep over a
  contraction hierarchy, ``kernels.cpu_phast``) when the graph already holds its hierarchy
  (``pipeline.hierarchy.load_hierarchy`` was called, or an earlier phast call built it),
  or for at least ``PHAST_MIN_SOURCES`` sources when the graph is eligible (non-negative
  integer weights within the hierarchy's bound) and road-like
  (:func:`kernels.hierarchy.structure`: degree <= 64, hop depth >= 0.25 sqrt(n)); else
  ``dijkstra``.  On NY (2-core development VM) phast takes ~1.5-2 ms per source in
  batches and 6 ms for a single source against ~45 ms for SciPy's Dijkstra, so with the
  hierarchy at hand it wins from one source on; building it (NY: 5-13 s) costs ~200
  Dijkstra sources, hence the 256.
- GPU, more than one source: ``batched`` (NY, 4,096 sources: 0.092 ms per source against
  2.5 ms for the best single-source kernel; RMAT 2^20: 2.2 against 3.1).
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

#: Sources from which the CPU builds a hierarchy for ``phast`` (when none is held yet).
PHAST_MIN_SOURCES = 256

#: Mean out-degree from which one source is solved by sweeping every arc (edgelist).
DENSE_DEGREE = 8.0

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
        if graph.has_negative:
            return "bellman-ford"
        return "phast" if _cpu_phast(graph, n_sources) else "dijkstra"
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


def _cpu_phast(graph, n_sources: int) -> bool:
    """Whether ``auto`` on the CPU runs ``phast`` (the rule in the module docstring)."""
    from gpu_sssp.kernels import hierarchy

    if "phast" not in registry.available_methods("cpu"):
        return False
    if hierarchy.eligible(graph) is not None:
        return False
    if hierarchy.has_hierarchy(graph):
        return True
    return n_sources >= PHAST_MIN_SOURCES and hierarchy.structure(graph) is None
