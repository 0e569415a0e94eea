"""The CPU engines' ``targets=`` keep one array of the matrix's size: a matrix study's
worker must not need several times its batch's matrix (it was killed for memory on a
batch the study's size check let through).  Memory is measured with tracemalloc
(NumPy reports its allocations there), not timed."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg


def _graph(n=300, m=1200, seed=4):
    from gpu_sssp.kernels.graph import Graph

    rng = np.random.default_rng(seed)
    w = rng.integers(0, 40, m)
    w[rng.random(m) < 0.2] = 0  # zero-weight arcs
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), w.astype(np.int64), n)


def _reference(g, src, tg):
    tails = np.repeat(np.arange(g.n), np.diff(g.indptr))
    a = sp.csr_matrix((g.weights.astype(np.float64), (tails, g.indices)), shape=(g.n, g.n))
    return csg.dijkstra(a, directed=True, indices=src)[:, tg]


@pytest.mark.parametrize("method", ["dijkstra", "bellman-ford"])
@pytest.mark.parametrize("stats_over, repeats", [("targets", True), ("targets", False), ("all", True)])
def test_cpu_targets_peak_memory_is_one_matrix(monkeypatch, method, stats_over, repeats):
    from gpu_sssp.kernels import registry

    g = _graph()
    rng = np.random.default_rng(1)
    src = rng.integers(0, g.n, 40)
    # many columns: repeated targets (a long targets file) or every vertex many times over
    tg = rng.integers(0, g.n, 60_000) if repeats else np.tile(rng.permutation(g.n), 200)
    ref = _reference(g, src, tg)
    # several chunks of rows, as a big graph has
    monkeypatch.setattr(registry, "GENERIC_CHUNK_BYTES", 8 * g.n * 7)
    mat_bytes = len(src) * len(tg) * 8
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        r = registry.solve(g, src, targets=tg, method=method, backend="cpu", stats_over=stats_over)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert np.array_equal(r.matrix, ref) and r.matrix.flags["C_CONTIGUOUS"]
    # the matrix, and small things besides (before: twice and more)
    assert peak < 1.3 * mat_bytes, f"peak {peak / mat_bytes:.2f}x the matrix"
    cols = np.unique(tg) if stats_over == "targets" else np.arange(g.n)
    full = _reference(g, src, cols)
    fin = np.isfinite(full)
    assert np.array_equal(r.reached, fin.sum(1))
    assert np.array_equal(np.asarray(r.sum_distance, dtype=np.float64), np.where(fin, full, 0).sum(1))
    ecc = np.where(fin.any(1), np.where(fin, full, -np.inf).max(1), np.nan)
    assert np.array_equal(r.eccentricity, ecc, equal_nan=True)
    assert r.stats_over == ("targets" if stats_over == "targets" else "vertices")
    assert np.array_equal(r.targets, tg) and np.array_equal(r.sources, src)
