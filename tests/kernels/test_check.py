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
