"""Wrong answers found by the property search (test_correct_props.py), each kept as the
smallest graph that showed it."""
from __future__ import annotations

import random

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import tree_problems
from gpu_sssp.kernels.graph import Graph


def _exact_bellman_ford(n, arcs, s):
    """Distances from ``s`` in Python numbers (None: unreachable); no negative cycle."""
    best = {}
    for u, v, w in arcs:
        best[(u, v)] = min(best.get((u, v), w), w)
    d = [None] * n
    d[s] = 0
    for _ in range(n):
        for (u, v), w in best.items():
            if d[u] is not None and (d[v] is None or d[u] + w < d[v]):
                d[v] = d[u] + w
    return d


def test_bellman_ford_exact_for_integer_weights_near_the_bound():
    # the path bound is 2**52 + 1 (< 2**53: solved), but Johnson's reweighted length of
    # 0 -> 1 is 2**53 + 1 once source 2 puts its potential of -2**52 on vertex 1: float64
    # rounded the distance 2**52 + 1 to 2**52, and the predecessor arc was not tight
    w = 2**52
    g = Graph.from_edges([0, 2], [1, 1], np.array([w + 1, -w], dtype=np.int64), 3)
    res = kernels.solve(g, [0, 2], method="bellman-ford", backend="cpu", predecessors=True)
    assert res.distances[0, 1] == w + 1 and int(res.distances[0, 1]) == w + 1
    assert res.distances[1, 1] == -w
    assert int(res.sum_distance[0]) == w + 1 and float(res.eccentricity[0]) == w + 1
    assert tree_problems(g, res.distances, res.predecessors, res.sources) == []
    auto = kernels.solve(g, [0, 2], method="auto", backend="cpu")
    assert auto.distances[0, 1] == w + 1


def test_bellman_ford_exact_on_random_graphs_near_the_bound():
    rng = random.Random(7)
    checked = 0
    for _ in range(1500):
        n = rng.randint(3, 6)
        v = rng.randrange(n)
        base = rng.choice([2**52, 2**51 + 2**50, 2**52 - 2**49])
        arcs = [(u, v, rng.choice([1, -1]) * (base + rng.randint(-5, 5)))
                for u in (rng.randrange(n) for _ in range(rng.randint(2, 4))) if u != v]
        arcs += [(a, b, rng.randint(-3, 5)) for a, b in ((rng.randrange(n), rng.randrange(n))
                                                          for _ in range(rng.randint(0, 6))) if b != v]
        if not arcs:
            continue
        g = Graph.from_edges([a[0] for a in arcs], [a[1] for a in arcs],
                             np.array([a[2] for a in arcs], dtype=np.int64), n)
        sources = sorted({rng.randrange(n) for _ in range(rng.randint(1, 4))})
        try:
            res = kernels.solve(g, sources, method="bellman-ford", backend="cpu", predecessors=True)
        except ValueError:  # beyond the bound, or a negative cycle: not this test's subject
            continue
        checked += 1
        for i, s in enumerate(sources):
            want = _exact_bellman_ford(n, arcs, s)
            got = [None if not np.isfinite(x) else int(x) for x in res.distances[i]]
            assert got == want, (n, arcs, sources)
        assert tree_problems(g, res.distances, res.predecessors, res.sources) == [], (n, arcs, sources)
    assert checked > 400


def test_bellman_ford_keeps_a_tiny_real_distance_beside_a_large_potential():
    # vertex 0's potential is -0.3 (source 1's arc): Johnson's reweighted 2 -> 0 became
    # 1e-300 + (-0.3) - (-0.3) = 0, so the distance 1e-300 came out 0 (100% wrong)
    g = Graph.from_edges([1, 2], [0, 0], np.array([-0.3, 1e-300]), 3)
    res = kernels.solve(g, [1, 2], method="bellman-ford", backend="cpu", predecessors=True)
    assert res.distances[1, 0] == 1e-300
    assert res.distances[0, 0] == -0.3
    assert tree_problems(g, res.distances, res.predecessors, res.sources, rtol=1e-12) == []


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_bellman_ford_real_weights_two_paths_the_shorter_kept(dtype):
    # two paths 2 -> 0: 1e-30 direct and 2e-30 through 3; potentials of -1 from source 1
    g = Graph.from_edges([1, 2, 2, 3], [0, 0, 3, 0], np.array([-1.0, 1e-30, 1e-30, 1e-30], dtype=dtype), 4)
    res = kernels.solve(g, [1, 2], method="bellman-ford", backend="cpu", predecessors=True)
    assert res.distances[1, 0] == np.float64(np.asarray(1e-30, dtype=dtype))
    assert tree_problems(g, res.distances, res.predecessors, res.sources, rtol=1e-12) == []


@pytest.mark.parametrize("weights, want", [((2**52 + 1, -2**52), 2**52 + 1), ((1e-300, -0.3), 1e-300)])
def test_scipy_baseline_is_exact_where_johnson_rounds(weights, want):
    # the bench's reference (its "scipy" baseline) ran the same Johnson as bellman-ford
    from gpu_sssp.kernels import baselines

    g = Graph.from_edges([0, 2], [1, 1], np.array(weights), 3)
    solve_one = baselines.prepare("scipy", g, [0, 2])
    dist, _ = solve_one(0)
    assert dist[1] == want
    assert baselines.prepare("scipy", g, [0, 2])(2)[0][1] == weights[1]


def test_negative_cycle_named_is_negative_with_real_weights():
    # 0 -> 1 (0.1), 1 -> 4 (-1.0), 4 -> 0 (0.1) is a negative cycle; 1 -> 4 -> 1 weighs 0,
    # but fl(fl(0.1 - 1.0) + 1.0) < 0.1 made 4 the parent of 1 and that loop was named
    import math

    from gpu_sssp.kernels.result import NegativeCycleError

    w = {(0, 1): 0.1, (1, 4): -1.0, (4, 0): 0.1, (4, 1): 1.0}
    g = Graph.from_edges([a for a, _ in w], [b for _, b in w], np.array(list(w.values())), 6)
    with pytest.raises(NegativeCycleError) as e:
        kernels.solve(g, [0], method="bellman-ford", backend="cpu")
    cyc = e.value.cycle
    assert e.value.vertex in cyc
    assert math.fsum(w[(cyc[i], cyc[(i + 1) % len(cyc)])] for i in range(len(cyc))) < 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tiny_negative_self_loop_is_a_negative_cycle(dtype):
    # vertex 3 is at -0.3 from source 1; its self-loop of -1e-30 rounded away in
    # -0.3 + -1e-30, so no round improved and the graph was solved as if it had no cycle
    from gpu_sssp.kernels.result import NegativeCycleError

    g = Graph.from_edges([1, 3, 0], [3, 3, 0], np.array([-0.3, -1e-30, -1.0], dtype=dtype), 4)
    with pytest.raises(NegativeCycleError) as e:
        kernels.solve(g, [1], method="bellman-ford", backend="cpu")
    assert e.value.vertex == 3 and e.value.cycle == [3] and e.value.source == 1
    # vertex 0's loop (-1.0) is reached by neither source 1 nor source 2: not reported
    res = kernels.solve(g, [2], method="bellman-ford", backend="cpu")
    assert res.distances[0].tolist() == [np.inf, np.inf, 0.0, np.inf]


def test_compare_finds_a_wrong_answer_the_reference_shares():
    # `sssp verify` checks bellman-ford against bellman-ford on graphs with negative arcs:
    # a wrong answer shared by both, with a tight tree, was reported ok
    import copy

    from gpu_sssp.kernels.check import compare

    g = Graph.from_edges([0, 0, 2], [1, 2, 1], np.array([5, 1, 1], dtype=np.int64), 3)
    good = kernels.solve(g, [0], method="dijkstra", backend="cpu", predecessors=True)
    assert compare(g, good, good) == []
    bad = copy.copy(good)
    bad.distances = np.array([[0.0, 5.0, 1.0]])  # 0 -> 1 directly: tight, not shortest
    bad.predecessors = np.array([[-1, 0, 0]])
    bad.sum_distance = np.array([6])
    bad.eccentricity = np.array([5.0])
    problems = compare(g, bad, bad)
    assert any("shorten" in p for p in problems), problems
