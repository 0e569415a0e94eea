"""``method="auto"``: choose a method from the graph's statistics.

The rule (README "Algorithms"; the figures are in BENCHMARKS.md, kernel times on an
H200):

- CPU backend: ``dijkstra`` for non-negative weights, else ``bellman-ford``.
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
        return "bellman-ford" if graph.has_negative else "dijkstra"
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
