"""kernels.check: the comparison used by tests, `sssp verify` and `sssp bench` must
notice every kind of difference between two results."""
from __future__ import annotations

import copy

import numpy as np

from gpu_sssp import kernels
from gpu_sssp.kernels.check import compare, predecessor_violations
from gpu_sssp.pipeline.graph import Graph


def _path_graph():
    # 0 -> 1 -> 2 -> 3 with weights 1, 2, 3; vertex 4 isolated
    return Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 2, 3], 5)


def test_equal_results_compare_clean():
    g = _path_graph()
    a = kernels.solve(g, [0, 2, 4], method="dijkstra", predecessors=True)
    b = kernels.solve(g, [0, 2, 4], method="bellman-ford", predecessors=True)
    assert compare(g, a, b) == []


def test_wrong_eccentricity_is_reported_without_distances():
    g = _path_graph()
    ref = kernels.solve(g, [0, 1], method="dijkstra")
    bad = kernels.solve(g, [0, 1], method="dijkstra", distances=False)
    assert compare(g, ref, bad) == []
    bad = copy.copy(bad)
    bad.eccentricity = np.asarray(bad.eccentricity, dtype=np.float64).copy()
    bad.eccentricity[0] += 1  # 7 instead of 6; reached and sum unchanged
    problems = compare(g, ref, bad)
    assert any("eccentricit" in p for p in problems), problems


def test_wrong_distance_and_reachability_reported():
    g = _path_graph()
    ref = kernels.solve(g, [0], method="dijkstra")
    bad = copy.copy(ref)
    bad.distances = ref.distances.copy()
    bad.distances[0, 3] = 7.0
    assert any("distances differ" in p for p in compare(g, ref, bad))
    bad.distances = ref.distances.copy()
    bad.distances[0, 3] = np.inf
    assert any("reachability differs" in p for p in compare(g, ref, bad))


def test_predecessor_violations_found():
    g = _path_graph()
    dist = np.array([0.0, 1.0, 3.0, 6.0, np.inf])
    good = np.array([-1, 0, 1, 2, -1])
    assert predecessor_violations(g, dist, good, 0) == []
    no_arc = good.copy()
    no_arc[3] = 0  # there is no arc 0 -> 3
    assert any("not joined" in p for p in predecessor_violations(g, dist, no_arc, 0))
    missing = good.copy()
    missing[2] = -1
    assert any("no predecessor" in p for p in predecessor_violations(g, dist, missing, 0))
    wrong = dist.copy()
    wrong[3] = 5.0  # 3 + w(2, 3) = 6 != 5
    assert any("violations" in p for p in predecessor_violations(g, wrong, good, 0))


def _zero_cycle_graph():
    # 2 -> 0 (1), 0 -> 1 (0), 1 -> 0 (0): from vertex 2 both 0 and 1 are at distance 1
    return Graph.from_edges([2, 0, 1], [0, 1, 0], [1, 0, 0], 3)


def test_looping_predecessors_are_reported():
    g = _zero_cycle_graph()
    dist = np.array([1.0, 1.0, 0.0])
    assert predecessor_violations(g, dist, np.array([2, 0, -1]), 2) == []
    # every arc tight, every reached vertex has a predecessor, yet 0 and 1 point at each other
    loop = np.array([1, 0, -1])
    problems = predecessor_violations(g, dist, loop, 2)
    assert len(problems) == 1 and "loop" in problems[0], problems
    assert "2 reached vertices" in problems[0]


def test_loop_far_from_the_source_and_other_roots():
    # a path 0 -> 1 -> ... -> 99 of zero weights with an arc back 99 -> 50 (weight 0)
    n = 100
    src = list(range(n - 1)) + [99]
    dst = list(range(1, n)) + [50]
    g = Graph.from_edges(src, dst, [0] * n, n)
    dist = np.zeros(n)
    good = np.arange(-1, n - 1)
    assert predecessor_violations(g, dist, good, 0) == []
    bad = good.copy()
    bad[50] = 99  # 50 <- 99 <- ... <- 51 <- 50: the loop takes 50..99, all tight
    problems = predecessor_violations(g, dist, bad, 0)
    assert any("50 reached vertices' predecessor chains loop" in p for p in problems), problems
    # a chain that ends at a vertex without predecessor other than the source
    cut = good.copy()
    cut[30] = -1
    problems = predecessor_violations(g, dist, cut, 0)
    assert any("no predecessor" in p for p in problems), problems
    assert any("69 reached vertices' predecessor chains end at another vertex" in p for p in problems), problems


def test_compare_reports_a_loop_in_any_row():
    g = _zero_cycle_graph()
    ref = kernels.solve(g, [2, 2, 0], method="dijkstra", predecessors=True)
    assert compare(g, ref, ref) == []
    bad = copy.copy(ref)
    bad.predecessors = ref.predecessors.copy()
    bad.predecessors[1] = [1, 0, -1]  # the second row (source 2) loops
    problems = compare(g, ref, bad)
    assert len(problems) == 1 and "loop" in problems[0] and "source 2" in problems[0], problems


def test_chain_ends_vectorised():
    from gpu_sssp.kernels.check import chain_ends

    rng = np.random.default_rng(7)
    n = 5000
    # rows 0, 1: random trees rooted at 0 (each parent below its vertex); row 2: a path
    trees = [np.r_[-1, rng.integers(0, np.arange(1, n))] for _ in range(2)]
    pred = np.stack(trees + [np.arange(-1, n - 1)])
    assert np.array_equal(chain_ends(pred), np.zeros((3, n), dtype=np.int64))
    pred[2, 10] = 4000  # the path now loops 10 -> 11 -> ... -> 4000 -> 10
    ends = chain_ends(pred)
    assert np.array_equal(ends[:2], np.zeros((2, n), dtype=np.int64))
    assert np.all(ends[2, :10] == 0)
    assert np.all((ends[2, 10:] >= 10) & (ends[2, 10:] <= 4000))  # on the loop
    assert np.all(pred[2, ends[2, 10:]] >= 0)


def test_wrong_sums_are_reported_at_any_scale():
    """Real weights around 1e-30: a sum off by half passed (``np.allclose``'s default
    ``atol=1e-8`` is far above every sum); a sum within the float64 rounding of the
    additions still compares clean."""
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], [1e-30, 2e-30, 3e-30], 5)
    ref = kernels.solve(g, [0, 1], method="dijkstra")
    res = kernels.solve(g, [0, 1], method="bellman-ford", distances=False)
    assert compare(g, ref, res) == []
    near = copy.copy(res)
    near.sum_distance = np.asarray(res.sum_distance, dtype=np.float64) * (1 + 1e-15)
    assert compare(g, ref, near) == []
    bad = copy.copy(res)
    bad.sum_distance = np.asarray(res.sum_distance, dtype=np.float64) * 0.5
    assert any("sums of distances differ" in p for p in compare(g, ref, bad))
    # without the reference's distances too (the scale from reached x eccentricity)
    ref_stats = kernels.solve(g, [0, 1], method="dijkstra", distances=False)
    assert any("sums of distances differ" in p for p in compare(g, ref_stats, bad))
    assert compare(g, ref_stats, near) == []
