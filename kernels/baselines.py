"""CPU anchors for ``sssp bench``: SciPy, NetworKit and rustworkx Dijkstra.

Each baseline is prepared once per graph (building its own graph structure, not
timed) and then solves one source at a time, returning the full distance vector
(float64, ``+inf`` where unreachable) and the milliseconds spent inside the
library's own call, so the bench checks the baselines' answers exactly like the
GPU methods'.

SciPy is always there (it is the project's reference).  NetworKit and rustworkx
come with the optional ``bench`` extra; :func:`unavailable_reason` says why one
cannot run here (not installed, negative weights) instead of raising.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

#: Baselines in the order the bench runs them.
BASELINES = ("scipy", "networkit", "rustworkx")

_DESCRIPTIONS = {
    "scipy": "scipy.sparse.csgraph.dijkstra (binary heap), one source per call",
    "networkit": "networkit.distance.Dijkstra, one source per call",
    "rustworkx": "rustworkx.digraph_dijkstra_shortest_path_lengths, one source per call",
}

SolveOne = Callable[[int], "tuple[np.ndarray, float]"]


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
        elif name == "networkit":
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
    return {"networkit": _networkit, "rustworkx": _rustworkx}[name](graph)


def _scipy(graph, sources=None) -> SolveOne:
    import scipy.sparse.csgraph as csg

    from gpu_sssp.kernels.cpu import _matrix, check_negative_cycle, reachable_part

    graph.check_exact()
    mat = _matrix(graph)
    n = graph.n
    local = None
    if graph.has_negative and sources is not None:
        check_negative_cycle(graph, sources)
        keep, local, mat = reachable_part(mat, sources)  # as bellman-ford's Johnson
    solver = csg.johnson if graph.has_negative else csg.dijkstra

    def solve_one(source: int):
        s = int(source) if local is None else int(local[int(source)])
        if s < 0:
            raise ValueError(f"source {int(source)} was not among the sources the scipy baseline was prepared for")
        t0 = time.perf_counter()
        dist = solver(mat, directed=True, indices=s)
        ms = (time.perf_counter() - t0) * 1e3
        dist = np.asarray(dist, dtype=np.float64).reshape(-1)
        if local is not None:  # back to every vertex (not timed)
            full = np.full(n, np.inf)
            full[keep] = dist
            dist = full
        return dist, ms

    return solve_one


def _networkit(graph) -> SolveOne:
    import networkit as nk

    g = nk.Graph(graph.n, weighted=True, directed=True)
    if graph.m:
        g.addEdges((graph.weights.astype(np.float64),
                    (graph.tails().astype(np.uint64), graph.indices.astype(np.uint64))))
    big = np.finfo(np.float64).max / 2

    def solve_one(source: int):
        t0 = time.perf_counter()
        algo = nk.distance.Dijkstra(g, int(source), storePaths=False)
        algo.run()
        raw = algo.getDistances()
        ms = (time.perf_counter() - t0) * 1e3
        dist = np.asarray(raw, dtype=np.float64)
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
