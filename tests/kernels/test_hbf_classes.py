"""hbf's arc classes (``kernels.gpu.hbf._classes``), checked on the host: no GPU needed."""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.graph import Graph
from gpu_sssp.kernels.gpu.hbf import SKIP, _classes


def _skipped(g) -> set:
    marked, _, _ = _classes(g)
    cls = marked.view(np.uint32) >> np.uint32(30)
    tails = g.tails()
    heads = g.indices
    return {(int(t), int(h), float(w)) for t, h, w, c in zip(tails, heads, g.weights, cls) if c == SKIP}


def test_a_negative_self_loop_is_relaxed_not_skipped():
    """A negative self-loop is a negative cycle: skipped, the GPU never saw it (the
    fuzzer's find); non-negative self-loops and arcs into sinks are still skipped."""
    g = Graph.from_edges(np.array([0, 1, 1, 0, 2]), np.array([1, 1, 2, 0, 3]),
                         np.array([4, -2, 3, 5, 1]), 4)
    assert g.has_negative
    assert _skipped(g) == {(0, 0, 5.0), (2, 3, 1.0)}
    pos = Graph.from_edges(np.array([0, 1, 1]), np.array([1, 1, 2]), np.array([4, 2, 3]), 3)
    assert (1, 1, 2.0) in _skipped(pos)
