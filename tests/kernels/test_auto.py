"""The `auto` rule (no GPU needed: it only names a method)."""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.auto import DENSE_DEGREE, choose
from gpu_sssp.pipeline.graph import Graph


def _graph(n, degree, negative=False, seed=0):
    rng = np.random.default_rng(seed)
    m = int(n * degree)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 100, m)
    if negative:
        p = rng.integers(0, 300, n)
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n, parallel="keep")


def test_cpu_rule():
    assert choose(_graph(100, 3), 5, "cpu") == "dijkstra"
    assert choose(_graph(100, 3, negative=True), 5, "cpu") == "bellman-ford"


def test_gpu_rule():
    sparse, dense = _graph(1000, 2.5), _graph(1000, DENSE_DEGREE + 1)
    assert choose(sparse, 1, "gpu") == "hbf"
    assert choose(dense, 1, "gpu") == "edgelist"
    assert choose(sparse, 64, "gpu") == "batched"
    assert choose(dense, 64, "gpu") == "batched"
    # negative weights: every preferred method accepts them
    assert choose(_graph(1000, 2.5, negative=True), 1, "gpu") == "hbf"


def test_warm_check_during_another_threads_import(monkeypatch):
    """While a worker's warm-up thread imports cpu_phast, the module sits in sys.modules
    without its ``_WARM`` yet: ``auto`` in a task thread must read "not warm", not fail
    (it raised AttributeError "partially initialized module" in a study once)."""
    import sys
    import threading
    import types

    from gpu_sssp.kernels import auto

    monkeypatch.setitem(sys.modules, "gpu_sssp.kernels.cpu_phast", types.ModuleType("gpu_sssp.kernels.cpu_phast"))
    assert auto._warm_here() is False
    ready = types.ModuleType("gpu_sssp.kernels.cpu_phast")
    ready._WARM = threading.Event()
    monkeypatch.setitem(sys.modules, "gpu_sssp.kernels.cpu_phast", ready)
    assert auto._warm_here() is False
    ready._WARM.set()
    assert auto._warm_here() is True


def test_auto_takes_no_phast_where_every_component_is_small():
    """A graph of isolated vertices (no arcs) or of scattered small pieces: ``auto``
    chose ``phast`` (100M isolated vertices, one source: a 2.4 GB hierarchy and 100 s,
    16 s with Dijkstra; found by a review).  Each source reaches at most a component, where
    a sweep covers every vertex: Dijkstra, on either backend.  A ``phast`` asked for by
    name still runs, and exactly."""
    import scipy.sparse.csgraph as csg

    from gpu_sssp.kernels import auto, hierarchy, solve
    from gpu_sssp.kernels.graph import Graph

    n = 10_000
    empty = Graph.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), n)
    rng = np.random.default_rng(3)
    a = rng.integers(0, n // 100, 3 * n) * 100  # pieces of 100 vertices: within each, random arcs
    src, dst = a + rng.integers(0, 100, a.size), a + rng.integers(0, 100, a.size)
    pieces = Graph.from_edges(src, dst, rng.integers(1, 50, a.size), n)
    for g in (empty, pieces):
        assert hierarchy.scattered(g) and hierarchy.structure(g) is None
        assert not auto.cpu_phast_applies(g, n, warm=True) and not auto.phast_applies(g, n)
        assert auto.choose(g, 1, "cpu") == "dijkstra" and auto.choose(g, n, "cpu") == "dijkstra"
        got = solve(g, np.arange(0, n, 997), method="phast", backend="cpu")  # by name: runs
        want = csg.dijkstra(g.to_scipy(), indices=np.arange(0, n, 997))
        assert np.array_equal(got.distances, want)
    joined = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, np.int64), n)  # one path
    assert not hierarchy.scattered(joined)
