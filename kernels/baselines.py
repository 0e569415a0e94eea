"""CPU anchors for ``sssp bench``: SciPy, NetworKit and rustworkx Dijkstra.

Each baseline is prepared once per graph (building its own graph structure, not
timed) and then solves one source at a time, returning the full distance vector
(float64, ``+inf`` where unreachable) and the milliseconds spent inside the
library's own call, so the bench checks the baselines' answers exactly like the
GPU methods'.  ``networkit-spsp`` is the many-core anchor: NetworKit's SPSP runs
Dijkstra from every source of a call in parallel on all the host cores this process
may use (:func:`host_threads`); it solves many sources per call
(:data:`BATCHED_BASELINES`, :func:`prepare_many`), timed per call like the batched
methods.

SciPy is always there (it is the project's reference).  NetworKit and rustworkx
come with the optional ``bench`` extra; :func:`unavailable_reason` says why one
cannot run here (not installed, negative weights) instead of raising.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

#: Baselines in the order the bench runs them.
BASELINES = ("scipy", "networkit", "networkit-spsp", "rustworkx")
#: Baselines that solve many sources per call (:func:`prepare_many`).
BATCHED_BASELINES = frozenset({"networkit-spsp"})
#: Distances (sources x vertices) one ``networkit-spsp`` call may hand back: NetworKit
#: returns them as Python lists of floats (about 32 bytes each), so 16M is about 0.5 GB.
SPSP_CELLS = 16_000_000

_DESCRIPTIONS = {
    "scipy": ("scipy.sparse.csgraph.dijkstra (binary heap), one source per call; scipy.sparse.csgraph.johnson "
              "on the part the sources reach where the graph has negative arcs"),
    "networkit": ("networkit.distance.Dijkstra, one source per call; timed: its construction and run(), not "
                  "the conversion of the distances to Python"),
    "networkit-spsp": ("networkit.distance.SPSP (Dijkstra from every source of a call in parallel) on all "
                       "usable host cores; timed: its run(), not the conversion of the distances to Python"),
    "rustworkx": ("rustworkx.digraph_dijkstra_shortest_path_lengths, one source per call (its edge_cost_fn, "
                  "a Python callable rustworkx requires, is called per arc and timed)"),
}

SolveOne = Callable[[int], "tuple[np.ndarray, float]"]
SolveMany = Callable[["np.ndarray"], "tuple[np.ndarray, float]"]


def host_threads() -> int:
    """The host cores this process may run on (its CPU affinity; ``os.cpu_count()``
    where that is unknown): the threads ``networkit-spsp`` uses."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def sources_per_call(name: str, graph, n_sources: int) -> int:
    """How many sources one call of a batched baseline takes: every one of them, unless
    their distances would pass :data:`SPSP_CELLS`; never fewer than two per thread (so
    that every core has work), nor more than ``n_sources``."""
    _check_name(name)
    if name not in BATCHED_BASELINES:
        return 1
    per = max(2 * host_threads(), SPSP_CELLS // max(1, graph.n))
    return max(1, min(int(n_sources), per))


def describe(name: str) -> str:
    """One line saying what the baseline runs."""
    _check_name(name)
    return _DESCRIPTIONS[name]


def _check_name(name: str) -> None:
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose from {', '.join(BASELINES)}")


def version(name: str) -> str | None:
    """The installed version of the library behind a baseline (None if absent)."""
    _check_name(name)
    try:
        if name == "scipy":
            import scipy as mod
        elif name in ("networkit", "networkit-spsp"):
            import networkit as mod
        else:
            import rustworkx as mod
    except Exception:
        return None
    return str(getattr(mod, "__version__", "unknown"))


def unavailable_reason(name: str, graph) -> str | None:
    """Why ``name`` cannot run on ``graph`` here, or None when it can.

    Raises
    ------
    ValueError
        ``name`` is not a known baseline.
    """
    _check_name(name)
    if name == "scipy":
        return None
    if version(name) is None:
        return f"{name} is not installed (pip install 'gpu-sssp[bench]')"
    if graph.has_negative:
        return f"{name} Dijkstra needs non-negative weights; {graph.name} has negative arcs"
    return None


def prepare(name: str, graph, sources=None) -> SolveOne:
    """Build the baseline's graph once; return ``solve_one(source) -> (dist, ms)``.

    ``source`` is an internal (0-based) vertex index; ``dist`` has shape ``(n,)``.
    ``sources`` (internal indices): the sources that will be solved.  For ``scipy`` on
    a graph with negative arcs they are checked for a reachable negative cycle first
    (``kernels.cpu.check_negative_cycle``), and Johnson then runs on the part of the graph they
    reach (as the ``bellman-ford`` method does: SciPy's Johnson rejects a negative
    cycle anywhere, even one no source reaches); only the sources given may then be
    solved.

    Raises
    ------
    ValueError
        Unknown baseline, or one that cannot run on this graph (see
        :func:`unavailable_reason`).
    kernels.result.NegativeCycleError
        ``scipy`` with ``sources``: a negative cycle is reachable from one of them.
    """
    reason = unavailable_reason(name, graph)
    if reason:
        raise ValueError(reason)
    if name == "scipy":
        return _scipy(graph, sources)
    if name in BATCHED_BASELINES:
        many = prepare_many(name, graph)

        def solve_one(source: int):  # a call of one source
            dist, ms = many(np.array([int(source)]))
            return dist[0], ms

        return solve_one
    return {"networkit": _networkit, "rustworkx": _rustworkx}[name](graph)


def prepare_many(name: str, graph) -> SolveMany:
    """A batched baseline (:data:`BATCHED_BASELINES`): build its graph once; return
    ``solve_many(sources) -> (dist, ms)``, ``dist`` of shape ``(len(sources), n)``
    (float64, ``+inf`` where unreachable), ``ms`` the library's own call for all of them.

    Raises
    ------
    ValueError
        Not a batched baseline, or one that cannot run on this graph.
    """
    _check_name(name)
    if name not in BATCHED_BASELINES:
        raise ValueError(f"{name} solves one source per call: use prepare()")
    reason = unavailable_reason(name, graph)
    if reason:
        raise ValueError(reason)
    return _networkit_spsp(graph)


def _scipy(graph, sources=None) -> SolveOne:
    import scipy.sparse.csgraph as csg

    from gpu_sssp.kernels.cpu import _matrix, check_negative_cycle, johnson_needs_settling, reachable_part, \
        settle_johnson

    graph.check_exact()
    mat = _matrix(graph)
    n = graph.n
    local = None
    if graph.has_negative and sources is not None:
        check_negative_cycle(graph, sources)
        keep, local, mat = reachable_part(mat, sources)  # as bellman-ford's Johnson
    solver = csg.johnson if graph.has_negative else csg.dijkstra
    # Johnson's float64 reweighting can round (bellman-ford's settle_johnson): where it
    # can, the answer is made exact after the timed call, from an untimed one with the tree
    settle = graph.has_negative and johnson_needs_settling(graph)

    def solve_one(source: int):
        s = int(source) if local is None else int(local[int(source)])
        if s < 0:
            raise ValueError(f"source {int(source)} was not among the sources the scipy baseline was prepared for")
        t0 = time.perf_counter()
        dist = solver(mat, directed=True, indices=s)
        ms = (time.perf_counter() - t0) * 1e3
        dist = np.asarray(dist, dtype=np.float64).reshape(-1)
        if settle:  # not timed
            d1, p1 = solver(mat, directed=True, indices=[s], return_predecessors=True)
            p1 = np.atleast_2d(p1).astype(np.int64)
            p1[p1 < 0] = -1
            dist = settle_johnson(mat, np.array([s]), np.atleast_2d(d1), p1,
                                  integer=graph.integer_weights)[0].reshape(-1)
        if local is not None:  # back to every vertex (not timed)
            full = np.full(n, np.inf)
            full[keep] = dist
            dist = full
        return dist, ms

    return solve_one


def _networkit_graph(graph):
    import networkit as nk

    g = nk.Graph(graph.n, weighted=True, directed=True)
    if graph.m:
        g.addEdges((graph.weights.astype(np.float64),
                    (graph.tails().astype(np.uint64), graph.indices.astype(np.uint64))))
    return g


def _networkit_spsp(graph) -> SolveMany:
    import networkit as nk

    g = _networkit_graph(graph)
    big = np.finfo(np.float64).max / 2
    threads = host_threads()

    def solve_many(sources):
        sources = [int(s) for s in np.asarray(sources).reshape(-1)]
        nk.setNumberOfThreads(threads)  # every usable core (NetworKit's default may differ)
        algo = nk.distance.SPSP(g, sources)
        t0 = time.perf_counter()
        algo.run()
        ms = (time.perf_counter() - t0) * 1e3
        dist = np.asarray(algo.getDistances(), dtype=np.float64).reshape(len(sources), graph.n)
        dist[dist >= big] = np.inf  # NetworKit marks unreachable with the largest double
        return dist, ms

    return solve_many


def _networkit(graph) -> SolveOne:
    import networkit as nk

    g = _networkit_graph(graph)
    big = np.finfo(np.float64).max / 2

    def solve_one(source: int):
        t0 = time.perf_counter()
        algo = nk.distance.Dijkstra(g, int(source), storePaths=False)
        algo.run()
        ms = (time.perf_counter() - t0) * 1e3
        # not timed, as for networkit-spsp: the copy of the distances into a Python list
        # (NY: a list of 264,346 floats) is the binding's cost, not Dijkstra's
        dist = np.asarray(algo.getDistances(), dtype=np.float64)
        dist[dist >= big] = np.inf  # NetworKit marks unreachable with the largest double
        return dist, ms

    return solve_one


def _rustworkx(graph) -> SolveOne:
    import rustworkx as rx

    g = rx.PyDiGraph(multigraph=True)
    g.add_nodes_from(range(graph.n))
    if graph.m:
        g.extend_from_weighted_edge_list(
            list(zip(graph.tails().tolist(), graph.indices.tolist(),
                     graph.weights.astype(np.float64).tolist()))
        )
    n = graph.n

    def solve_one(source: int):
        t0 = time.perf_counter()
        lengths = rx.digraph_dijkstra_shortest_path_lengths(g, int(source), edge_cost_fn=float)
        ms = (time.perf_counter() - t0) * 1e3
        dist = np.full(n, np.inf)
        dist[int(source)] = 0.0  # rustworkx leaves the source out of its mapping
        if len(lengths):
            dist[np.fromiter(lengths.keys(), dtype=np.int64, count=len(lengths))] = np.fromiter(
                lengths.values(), dtype=np.float64, count=len(lengths))
        return dist, ms

    return solve_one
