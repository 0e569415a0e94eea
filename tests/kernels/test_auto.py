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
