"""The CPU backend against SciPy and known checksums, plus negative cycles."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

from gpu_sssp import kernels
from gpu_sssp.kernels.check import compare, predecessor_violations
from gpu_sssp.kernels.cpu import find_negative_cycle
from gpu_sssp.pipeline.graph import Graph
from tests.conftest import DATA, SHARED_DATA


def _raw_gr(path):
    rows = [line.split() for line in open(path) if line.startswith("a ")]
    a = np.array([[int(x) for x in r[1:]] for r in rows], dtype=np.int64)
    return a[:, 0] - 1, a[:, 1] - 1, a[:, 2]


def _read_gr(path):
    n = next(int(line.split()[2]) for line in open(path) if line.startswith("p "))
    return Graph.from_edges(*_raw_gr(path), n, id_base=1, name="rome99")


def _reference_matrix(src, dst, w, n):
    """SciPy input built from the raw arcs, independent of Graph's CSR: the lightest
    of parallel arcs, explicit zeros kept as arcs."""
    lightest = {}
    for s, d, x in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(w).tolist()):
        if (s, d) not in lightest or x < lightest[(s, d)]:
            lightest[(s, d)] = x
    keys = list(lightest)
    rows = np.array([k[0] for k in keys], dtype=np.int64)
    cols = np.array([k[1] for k in keys], dtype=np.int64)
    vals = np.array([lightest[k] for k in keys], dtype=np.float64)
    return sp.csr_array((vals, (rows, cols)), shape=(n, n))


def _rome_path():
    for p in (DATA / "rome99.gr", SHARED_DATA / "dimacs9" / "rome99.gr"):
        if p.exists():
            return p
    pytest.skip("rome99.gr not found")


@pytest.fixture(scope="module")
def rome():
    return _read_gr(_rome_path())


def test_rome99_checksums(rome):
    res = kernels.solve(rome, rome.to_index([1]), method="dijkstra", predecessors=True)
    # the checksums are SciPy's on the arcs as read by _read_gr, not this backend's
    ref = csg.dijkstra(_reference_matrix(*_raw_gr(_rome_path()), 3353), indices=[0])[0]
    assert np.array_equal(res.distances[0], ref)
    assert int(ref[np.isfinite(ref)].sum()) == 116_006_476 and ref.max() == 69_102
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
    return Graph.from_edges(src, dst, w, n), _reference_matrix(src, dst, w, n)


# fixed seeds: a failure must be reproducible
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_random_graphs_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    g, mat = _random_graph(rng, n, int(rng.integers(0, 4 * n)))
    src = rng.integers(0, n, 5)
    res = kernels.solve(g, src, method="dijkstra", predecessors=True)
    ref = csg.dijkstra(mat, indices=src)
    assert np.array_equal(res.distances, ref)
    for i, s in enumerate(src):
        assert predecessor_violations(g, res.distances[i], res.predecessors[i], int(s)) == []


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_negative_weights_without_cycles(seed):
    rng = np.random.default_rng(seed)
    g, mat = _random_graph(rng, 200, 800, negative=True)
    assert g.has_negative
    src = rng.integers(0, 200, 4)
    with pytest.raises(ValueError, match="non-negative"):
        kernels.solve(g, src, method="dijkstra")
    res = kernels.solve(g, src, predecessors=True, backend="cpu")  # auto's CPU choice (a GPU's differs)
    assert res.method == "bellman-ford"
    ref = csg.bellman_ford(mat, indices=src)
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


@pytest.mark.parametrize("method", ["dijkstra", "bellman-ford", "auto"])
def test_tables_give_file_ids_by_default(method):
    """Result.to_table() / stats_table() / matrix_table() defaulted to id_base=0: on a
    1-based graph they labelled internal indices as file ids ("source 0, predecessor 0").
    kernels.solve now records the graph's id base on the Result, and the tables use it
    unless one is passed; the arrays stay internal indices."""
    g = Graph.from_edges([0, 1], [1, 2], [2, 3], 3, id_base=1, name="one-based")
    res = kernels.solve(g, [0], method=method, predecessors=True)
    assert res.id_base == 1 and res.sources.tolist() == [0] and res.predecessors[0].tolist() == [-1, 0, 1]
    long = res.to_table()
    assert long.column("source").to_pylist() == [1, 1, 1]
    assert long.column("vertex").to_pylist() == [1, 2, 3]
    assert long.column("predecessor").to_pylist() == [-1, 1, 2]
    assert res.stats_table().column("source").to_pylist() == [1]
    # an explicit id base still wins (every caller in the product passes graph.id_base)
    assert res.to_table(0).column("vertex").to_pylist() == [0, 1, 2]
    assert res.stats_table(0).column("source").to_pylist() == [0]
    assert res.to_table(g.id_base).equals(long)
    m = kernels.solve(g, [0, 1], method=method, targets=[2, 0])
    assert m.id_base == 1 and m.targets.tolist() == [2, 0]
    wide = m.matrix_table()
    assert wide.column("source").to_pylist() == [1, 2] and wide.column("distance").to_pylist() == [[5, 0], [3, np.inf]]
    assert m.matrix_table(form="long").column("target").to_pylist() == [3, 1, 3, 1]
    assert m.matrix_table(0).column("source").to_pylist() == [0, 1]
    # a Result built by hand has no graph: id base 0, as before
    from gpu_sssp.kernels.result import Result

    assert Result(sources=np.array([0]), distances=None, predecessors=None, reached=np.array([1]),
                  eccentricity=np.array([0.0]), sum_distance=np.array([0.0]), iterations=np.array([0]),
                  relaxations=np.array([0]), method="x", backend="cpu").id_base == 0


def test_float_weights():
    rng = np.random.default_rng(21)
    s, d, w = rng.integers(0, 50, 300), rng.integers(0, 50, 300), rng.random(300)
    g = Graph.from_edges(s, d, w, 50)
    res = kernels.solve(g, [0, 1])
    assert np.allclose(res.distances, csg.dijkstra(_reference_matrix(s, d, w, 50), indices=[0, 1]))


def test_unknown_method_and_backend(rome):
    with pytest.raises(ValueError, match="unknown method"):
        kernels.solve(rome, [0], method="nope")
    with pytest.raises(ValueError, match="backend"):
        kernels.solve(rome, [0], backend="tpu")
    # every registered method is listed, GPU or not (DESIGN.md: public interface)
    gpu_methods = {"harish", "hbf", "spmv-csr-scalar", "spmv-csr-vector", "spmv-ell", "locality",
                   "edgelist", "bfs-naive", "bfs-blocked", "bfs-hierarchical", "dijkstra-gpu",
                   "queue-bf", "delta", "batched"}
    assert set(kernels.available_methods()) >= gpu_methods | {"dijkstra", "bellman-ford", "auto"}
    assert not gpu_methods & set(kernels.available_methods("cpu"))
    assert set(kernels.available_methods("cpu")) >= {"dijkstra", "bellman-ford", "auto"}


class _RecordingTurn:
    """A stand-in GPU turn that records how a solve takes and returns it."""

    def __init__(self):
        self.events = []

    def acquire(self):
        self.events.append("acquire")

    def release(self):
        self.events.append("release")

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


def test_turn_held_for_the_whole_call_by_methods_without_device_turn(rome):
    """kernels.solve(turn=...): a method that does not take the turn itself (here the CPU
    Dijkstra) runs entirely inside it, once; batched is the one that takes it itself."""
    turn = _RecordingTurn()
    res = kernels.solve(rome, [0, 5], method="dijkstra", backend="cpu", turn=turn)
    assert turn.events == ["acquire", "release"] and res.distances.shape == (2, rome.n)
    assert kernels.get("batched").device_turn and not kernels.get("hbf").device_turn
