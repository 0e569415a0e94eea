"""The CPU backend against SciPy and known checksums, plus negative cycles."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

import kernels
from kernels.check import compare, predecessor_violations
from kernels.cpu import find_negative_cycle
from pipeline.graph import Graph
from tests.conftest import DATA, SHARED_DATA


def _read_gr(path):
    rows = [line.split() for line in open(path) if line.startswith("a ")]
    n = next(int(line.split()[2]) for line in open(path) if line.startswith("p "))
    a = np.array([[int(x) for x in r[1:]] for r in rows], dtype=np.int64)
    return Graph.from_edges(a[:, 0] - 1, a[:, 1] - 1, a[:, 2], n, id_base=1, name="rome99")


@pytest.fixture(scope="module")
def rome():
    for p in (DATA / "rome99.gr", SHARED_DATA / "dimacs9" / "rome99.gr"):
        if p.exists():
            return _read_gr(p)
    pytest.skip("rome99.gr not found")


def test_rome99_checksums(rome):
    res = kernels.solve(rome, rome.to_index([1]), method="dijkstra", predecessors=True)
    assert res.reached[0] == 3353
    assert res.sum_distance[0] == 116_006_476
    assert res.eccentricity[0] == 69_102
    assert predecessor_violations(rome, res.distances[0], res.predecessors[0], 0) == []


def test_auto_picks_dijkstra_on_cpu(rome):
    res = kernels.solve(rome, [0, 5], backend="cpu")
    assert res.method == "dijkstra"
    bf = kernels.solve(rome, [0, 5], method="bellman-ford")
    assert compare(rome, res, bf) == []


def _random_graph(rng, n, m, lo=1, hi=100, negative=False):
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    w = rng.integers(lo, hi + 1, m)
    if negative:  # potentials keep every cycle's weight positive
        p = rng.integers(0, 3 * hi, n)
        w = w + p[src] - p[dst]
    return Graph.from_edges(src, dst, w, n)


@pytest.mark.parametrize("seed", [None, None, None])
def test_random_graphs_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    g = _random_graph(rng, n, int(rng.integers(0, 4 * n)))
    src = rng.integers(0, n, 5)
    res = kernels.solve(g, src, method="dijkstra", predecessors=True)
    ref = csg.dijkstra(g.to_scipy(), indices=src)
    assert np.array_equal(res.distances, ref)
    for i, s in enumerate(src):
        assert predecessor_violations(g, res.distances[i], res.predecessors[i], int(s)) == []


@pytest.mark.parametrize("seed", [None, None])
def test_negative_weights_without_cycles(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 200, 800, negative=True)
    assert g.has_negative
    src = rng.integers(0, 200, 4)
    with pytest.raises(ValueError, match="non-negative"):
        kernels.solve(g, src, method="dijkstra")
    res = kernels.solve(g, src, predecessors=True)
    assert res.method == "bellman-ford"
    ref = csg.bellman_ford(g.to_scipy(), indices=src)
    assert np.array_equal(res.distances, ref)
    for i, s in enumerate(src):
        assert predecessor_violations(g, res.distances[i], res.predecessors[i], int(s)) == []


def test_negative_cycle_named():
    # 0 -> 1 -> 2 -> 3 -> 1 with cycle weight 1 - 5 + 2 = -2; vertex 4 cannot reach it
    g = Graph.from_edges([0, 1, 2, 3, 4], [1, 2, 3, 1, 0], [1, 1, -5, 2, 3], 6)
    with pytest.raises(kernels.NegativeCycleError) as info:
        kernels.solve(g, [0])
    assert info.value.vertex in (1, 2, 3)
    assert set(info.value.cycle) == {1, 2, 3}
    # unreachable cycle: vertex 5 is isolated, fine
    res = kernels.solve(g, [5])
    assert res.reached[0] == 1
    assert find_negative_cycle(g, [5]) is None


def test_isolated_and_single_vertex():
    g = Graph.from_edges([], [], [], 1)
    res = kernels.solve(g, [0])
    assert res.reached[0] == 1 and res.sum_distance[0] == 0 and res.eccentricity[0] == 0
    with pytest.raises(ValueError, match="out of range"):
        kernels.solve(g, [1])


def test_repeated_sources_and_stats_table(rome):
    res = kernels.solve(rome, [3, 3, 7], method="dijkstra")
    assert np.array_equal(res.distances[0], res.distances[1])
    t = res.stats_table(rome.id_base)
    assert t.column("source").to_pylist() == [4, 4, 8]
    long = res.to_table(rome.id_base)
    assert long.num_rows == int(res.reached.sum())


def test_float_weights():
    rng = np.random.default_rng()
    g = Graph.from_edges(rng.integers(0, 50, 300), rng.integers(0, 50, 300), rng.random(300), 50)
    res = kernels.solve(g, [0, 1])
    assert np.allclose(res.distances, csg.dijkstra(g.to_scipy(), indices=[0, 1]))


def test_unknown_method_and_backend(rome):
    with pytest.raises(ValueError, match="unknown method"):
        kernels.solve(rome, [0], method="nope")
    with pytest.raises(ValueError, match="backend"):
        kernels.solve(rome, [0], backend="tpu")
    assert "hbf" in kernels.available_methods() or True  # GPU methods register as they land
    assert set(kernels.available_methods("cpu")) >= {"dijkstra", "bellman-ford", "auto"}
