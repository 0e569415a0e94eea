"""kernels.order: batches of sources from one region of the graph (CPU only)."""
from __future__ import annotations

import numpy as np

from tests.pipeline.test_study_support import grid_parquet


def test_locality_order_groups_close_sources(tmp_path):
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.kernels.order import locality_order

    side = 40
    g = read_parquet(grid_parquet(tmp_path, side, side))
    src = np.random.default_rng(3).permutation(g.n)[:800]
    order = locality_order(g, src, leaf=16)
    assert sorted(order.tolist()) == list(range(len(src)))
    rows, cols = np.divmod(src[order], side)

    def mean_span(r, c, size):  # mean bounding-box half-perimeter of consecutive groups
        k = len(r) // size
        r, c = r[:k * size].reshape(k, size), c[:k * size].reshape(k, size)
        return float(np.mean(np.ptp(r, axis=1) + np.ptp(c, axis=1)))

    rr, cc = np.divmod(src, side)
    # far more compact than the given (random) order (a BFS order from the first
    # source gave 48 / 53 / 57 here: long thin bands)
    for size, most in ((16, 0.35), (50, 0.6), (100, 0.6)):
        assert mean_span(rows, cols, size) < most * mean_span(rr, cc, size), size
    assert mean_span(rows, cols, 16) < 20


def test_locality_order_other_components_last():
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.kernels.order import locality_order

    # two paths 0-1-2-3 and 4-5, and an isolated vertex 6
    g = Graph.from_edges([0, 1, 2, 4, 1, 2, 3, 5], [1, 2, 3, 5, 0, 1, 2, 4], [1] * 8, 7, directed=False)
    src = np.array([6, 1, 4, 3, 0, 5])
    order = locality_order(g, src)
    assert sorted(order.tolist()) == list(range(6))
    first = src[order]
    # the first source's component first, then the others by component, then id
    assert first.tolist() == [6, 0, 1, 3, 4, 5]


def test_planner_and_batched_kernel_use_this_order():
    import gpu_sssp.kernels.gpu.batched as kb
    from gpu_sssp.kernels import order
    from gpu_sssp.pipeline import sources

    assert sources.locality_order is order.locality_order
    assert kb.locality_order is order.locality_order


def test_batched_default_mode_rule():
    """pairs unless most arcs leave hubs of more than 32 arcs (no GPU needed to decide)."""
    from gpu_sssp.kernels.gpu.batched import default_mode
    from gpu_sssp.pipeline.graph import Graph, read_parquet

    ring = Graph.from_edges(np.arange(100), (np.arange(100) + 1) % 100, np.ones(100, np.int64), 100)
    assert default_mode(ring, "int32", 512) == "pairs"
    assert default_mode(ring, "float64", 512) == "pull"
    assert default_mode(ring, "int32", 2**32 // 100 + 32) == "push"  # pair ids need 32 bits
    hubs = np.repeat(np.arange(10), 150)
    leaves = np.arange(1500) % 490 + 10
    back = np.arange(10, 500)
    star = Graph.from_edges(np.r_[hubs, back], np.r_[leaves, back % 10], np.ones(1990, np.int64), 500)
    assert default_mode(star, "int32", 512) == "push"


def test_landmarks_computed_once_per_graph(monkeypatch):
    """The landmark distances live with the graph (Graph.cached): a second ordering of
    the same graph reuses them, another graph gets its own."""
    import gpu_sssp.kernels.order as ko
    from gpu_sssp.pipeline.graph import Graph, read_parquet

    calls = []
    orig = ko.landmark_coordinates
    monkeypatch.setattr(ko, "landmark_coordinates", lambda *a, **k: calls.append(1) or orig(*a, **k))
    ring = Graph.from_edges(np.arange(60), (np.arange(60) + 1) % 60, np.ones(60, np.int64), 60)
    first = ko.locality_order(ring, np.arange(0, 60, 2), leaf=4)
    again = ko.locality_order(ring, np.arange(0, 60, 2), leaf=4)
    assert np.array_equal(first, again) and len(calls) == 1
    other = Graph.from_edges(np.arange(60), (np.arange(60) + 1) % 60, np.ones(60, np.int64), 60)
    ko.locality_order(other, np.arange(0, 60, 2), leaf=4)
    assert len(calls) == 2
