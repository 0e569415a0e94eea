"""``method="auto"``: choose a method from the graph's statistics.

The rule (README "Algorithms"; the figures are in BENCHMARKS.md, kernel times on an
H200):

- CPU backend: ``bellman-ford`` for negative weights; ``phast`` (a sweep over a
  contraction hierarchy, ``kernels.cpu_phast``) when the graph already holds its hierarchy
  (``pipeline.hierarchy.load_hierarchy`` was called - a CPU study's workers do when the
  client chose phast - or an earlier phast call built it), or when the graph is eligible
  (non-negative integer weights within the hierarchy's bound), road-like
  (:func:`kernels.hierarchy.structure`: degree <= 64, hop depth >= 0.25 sqrt(n); and not
  :func:`kernels.hierarchy.scattered`: some weak component of more than 256 vertices) and the
  call has at least :func:`cpu_phast_min_sources` sources; else ``dijkstra``.  The cost
  model behind the threshold: SciPy's Dijkstra costs ~62 ns per arc per source (NY: 45 ms),
  phast ~1.5-2 ms per source on NY (20-40x less), but first the hierarchy is built
  (~15 us per arc: NY 5-13 s) and Numba loads its compiled kernels (~1.5 s per process,
  more when several workers start at once); phast is chosen when the Dijkstra time it
  saves is at least twice that fixed cost (NY: ~580 sources; rome99's 3,353 sources, 1.8 s
  of Dijkstra, stay with dijkstra in a cold process).  A study's CPU workers load the
  kernels in the background as they start (``pipeline.warmup``; 0.6-0.8 s on the
  development VM), so for a study the fixed cost is the build alone: ~510 sources on any
  graph, as the build and Dijkstra both scale with the arcs (rome99's 3,353 sources all
  take phast).  With the hierarchy at hand phast
  wins from one source (NY: 6 ms against 44 ms).
- GPU, ``phast`` (a contraction-hierarchy sweep, ``kernels.gpu.phast``) first, where
  :func:`phast_applies`: integer weights >= 0 within the hierarchy's bound
  (:func:`kernels.hierarchy.eligible`), a road-like graph (the same
  :func:`kernels.hierarchy.structure` as on the CPU: road networks, meshes and geometric
  graphs contract into small hierarchies - NY 45 levels and 1.84 hierarchy arcs per arc,
  BAY 41 and 1.70, delaunay_n15 41 and 1.46, rgg_n_2_15 40 and 1.24 - while the
  contraction of a random graph of mean degree 3 with 20,000 vertices had not finished
  after 3 minutes), and the hierarchy either already held by the graph (built, or loaded
  from the cache by a study's worker) or worth building: at least ``PHAST_BUILD_SHARE``
  x n sources in the call (NY: the 4.5-7 s build costs about what ``batched`` takes for
  70,000-110,000 sources; ``phast`` then solves all 264,346 NY sources in 0.33 s of kernel
  time on an H100, against 16.1 s for ``batched`` on an H200).  A held hierarchy that blew
  up (more than ``HIERARCHY_MAX_ARC_RATIO`` arcs per graph arc, or more than
  ``HIERARCHY_MAX_LEVELS`` levels) keeps ``batched``.  One source takes ``phast`` only with
  the hierarchy held (NY: 0.36 ms on an H100, ``hbf`` 2.46 ms on an H200).
- GPU, more than one source otherwise: ``batched`` (NY, 4,096 sources: 0.092 ms per source against
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

import math

from gpu_sssp.kernels import registry
from gpu_sssp.kernels.errors import UsageError

#: CPU cost model for building a hierarchy (see the module docstring): SciPy Dijkstra
#: seconds per arc per source, hierarchy build seconds per arc, Numba's fixed cost.
DIJKSTRA_S_PER_ARC = 62e-9
BUILD_S_PER_ARC = 15e-6
PHAST_FIXED_S = 2.0

#: Mean out-degree from which one source is solved by sweeping every arc (edgelist).
DENSE_DEGREE = 8.0

#: GPU: without a held hierarchy, phast (and its build) for at least this share of n sources
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
        if graph.has_negative:
            return "bellman-ford"
        return "phast" if cpu_phast_applies(graph, n_sources) else "dijkstra"
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
    raise UsageError("no GPU method is registered that accepts this graph")


def _warm_here() -> bool:
    """Whether this process already loaded the CPU phast kernels (without importing Numba).

    Another thread may be importing ``cpu_phast`` right now (a worker's warm-up): the
    module is then in ``sys.modules`` before its ``_WARM`` exists, and it is not warm."""
    import sys

    warm = getattr(sys.modules.get("gpu_sssp.kernels.cpu_phast"), "_WARM", None)
    return warm is not None and warm.is_set()


def cpu_phast_min_sources(graph, warm: bool = False) -> int:
    """Sources from which ``auto`` on the CPU builds a hierarchy and runs ``phast`` (when
    the graph holds none yet): the Dijkstra time saved must be twice the fixed cost,
    the build plus, unless ``warm`` (the kernels are loaded already, or a study's
    workers load them as they start: ``pipeline.warmup``), Numba's ``PHAST_FIXED_S``."""
    warm = warm or _warm_here()
    fixed = graph.m * BUILD_S_PER_ARC + (0.0 if warm else PHAST_FIXED_S)
    per_source = max(graph.m, 1) * DIJKSTRA_S_PER_ARC * (1 - 1 / 20)
    return max(1, int(math.ceil(2 * fixed / per_source)))


def cpu_phast_applies(graph, n_sources: int, warm: bool = False) -> bool:
    """Whether ``auto`` on the CPU runs ``phast`` (the rule in the module docstring;
    ``warm``: see :func:`cpu_phast_min_sources`)."""
    from gpu_sssp.kernels import hierarchy

    if "phast" not in registry.available_methods("cpu"):
        return False
    if hierarchy.eligible(graph) is not None:
        return False
    if hierarchy.has_hierarchy(graph):
        return True
    return (n_sources >= cpu_phast_min_sources(graph, warm) and not hierarchy.scattered(graph)
            and hierarchy.structure(graph) is None)


def phast_applies(graph, n_sources: int) -> bool:
    """Whether ``auto`` on the GPU runs ``phast`` for ``n_sources`` sources (module docstring)."""
    from gpu_sssp.kernels import hierarchy

    if hierarchy.eligible(graph) is not None:
        return False
    if hierarchy.has_hierarchy(graph):
        h = hierarchy.get_hierarchy(graph)
        return (h.m_up + h.m_down <= HIERARCHY_MAX_ARC_RATIO * max(graph.m, 1)
                and h.levels <= HIERARCHY_MAX_LEVELS)
    return (n_sources > 1 and n_sources >= PHAST_BUILD_SHARE * graph.n
            and not hierarchy.scattered(graph) and hierarchy.structure(graph) is None)
