"""The batched multi-source GPU kernel against the CPU backend, every source of a batch.

Integer weights compare exactly; float weights with the checker's tolerance.  Every
solve is also repeated in statistics-only mode (``distances=False``) and its reductions
must equal those of the distance vectors.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import compare
from gpu_sssp.kernels.result import NegativeCycleError, reduce_distances
from gpu_sssp.pipeline.graph import Graph
from tests.kernels import batched_graphs as bg

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _need_gpu():
    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")


def _fresh_seed() -> int:
    seed = int(time.time_ns() % 2**31)
    print(f"random seed {seed}")
    return seed


def check(g, sources, *, ref="dijkstra", batch_size=None, predecessors=True, **opts):
    """Every kernel variant (pull; pairs and push too for integer weights) against the CPU backend."""
    sources = np.asarray(sources, dtype=np.int64)
    want = kernels.solve(g, sources, method=ref)
    modes = (["pull", "push", "pairs"] if g.integer_weights and "mode" not in opts
             else [opts.pop("mode", None)])
    for mode in modes:
        got = kernels.solve(g, sources, method="batched", batch_size=batch_size,
                            predecessors=predecessors, mode=mode, **opts)
        problems = compare(g, want, got)
        assert problems == [], (mode, problems)
        e_w = np.where(want.reached > 0, want.eccentricity, np.nan)
        np.testing.assert_allclose(got.eccentricity, e_w, rtol=1e-12, equal_nan=True)
        # the device reductions agree with the distances they summarise
        r, e, s = reduce_distances(got.distances, integer=g.integer_weights)
        assert np.array_equal(r, got.reached)
        # statistics only: no distance vectors, same figures
        lite = kernels.solve(g, sources, method="batched", batch_size=batch_size,
                             distances=False, mode=mode, **opts)
        assert lite.distances is None and lite.predecessors is None
        assert np.array_equal(lite.reached, got.reached)
        np.testing.assert_allclose(lite.eccentricity, got.eccentricity, rtol=0, equal_nan=True)
        if g.integer_weights:
            assert np.array_equal(lite.sum_distance, np.asarray(want.sum_distance).astype(np.int64))
        else:
            np.testing.assert_allclose(lite.sum_distance, want.sum_distance, rtol=1e-9)
        assert got.counters["relaxations"] == int(got.relaxations.sum()) > 0
        assert got.counters["host_syncs"] >= 1
    return got


@pytest.mark.parametrize("mode", ["pull", "push", "pairs"])
def test_rome99_vertex_1_checksums(mode):
    g = bg.load("dimacs9/rome99.gr")
    res = kernels.solve(g, g.to_index([1]), method="batched", mode=mode)
    assert res.reached[0] == 3353
    assert res.sum_distance[0] == 116_006_476
    assert res.eccentricity[0] == 69_102


@pytest.mark.parametrize("bs", [None, 1, 32, 96])
def test_rome99_batches(bs):
    g = bg.load("dimacs9/rome99.gr")
    rng = np.random.default_rng(3)
    src = rng.integers(0, g.n, 100)
    src[5] = src[17] = src[40]  # repeated sources, in one batch and across batches
    check(g, src, batch_size=bs)


def test_gapbs_all_sources():
    g = bg.load("gapbs/4.gr")
    check(g, np.arange(g.n), batch_size=5)  # one vertex unreachable from 1


def test_delaunay_n15():
    g = bg.load("metis/delaunay_n15.graph")
    check(g, np.random.default_rng(1).integers(0, g.n, 300), batch_size=128)


def test_usair97_float_weights():
    g = bg.load("mtx/USAir97.mtx")
    assert not g.integer_weights
    check(g, np.arange(g.n))


def test_lederberg_directed():
    g = bg.load("mtx/Lederberg.tar.gz")
    check(g, np.random.default_rng(2).integers(0, g.n, 200))


def test_ny_seeded_weights():
    g = bg.road("NY")
    assert (g.n, g.m) == (264_346, 730_100)
    src = np.random.default_rng(11).integers(0, g.n, 40)
    check(g, src, batch_size=None)


def test_random_graphs_fresh_seed():
    seed = _fresh_seed()
    for i in range(3):
        g = bg.random_graph(2000 + 500 * i, 9000, seed + i, isolated=3)
        src = np.r_[np.random.default_rng(seed).integers(0, g.n, 70), g.n - 1, g.n - 1]
        check(g, src, batch_size=[None, 64, 33][i])
    g = bg.random_graph(1500, 6000, seed + 7, floats=True, lo=0.0, hi=10.0)
    check(g, np.arange(0, g.n, 7))


def test_hub_vertices_fresh_seed():
    """Vertices of hundreds of arcs (the pairs kernel hands them to a whole warp)."""
    seed = _fresh_seed()
    rng = np.random.default_rng(seed)
    base = bg.random_graph(3000, 9000, seed)
    hubs = rng.integers(0, 3000, 4)
    ends = rng.integers(0, 3000, (4, 400))
    src = np.r_[base.tails(), np.repeat(hubs, 400), ends.ravel()]
    dst = np.r_[base.indices, ends.ravel(), np.repeat(hubs, 400)]
    w = np.r_[base.weights, rng.integers(1, 2000, 3200)]
    g = Graph.from_edges(src, dst, w, 3000, name=f"hubs-{seed}")
    assert int(g.out_degree().max()) > 300
    res = check(g, np.r_[hubs, rng.integers(0, 3000, 90)], batch_size=64)
    assert res.counters["mode"] == "pairs"


def test_default_mode_is_pairs_for_integers():
    g = bg.random_graph(500, 2000, 5)
    assert kernels.solve(g, [0, 1], method="batched").counters["mode"] == "pairs"
    # most arcs at hubs of more than 32 arcs: push
    hubs = np.repeat(np.arange(10), 150)  # 10 hubs x 150 arcs to leaves 10..499
    leaves = np.arange(1500) % 490 + 10
    back = np.arange(10, 500)  # every leaf -> one hub
    star = Graph.from_edges(np.r_[hubs, back], np.r_[leaves, back % 10],
                            np.ones(1990, np.int64), 500)
    res = kernels.solve(star, [0, 20], method="batched")
    assert res.counters["mode"] == "push" and res.reached.tolist() == [500, 500]
    with pytest.raises(TypeError):
        kernels.solve(bg.random_graph(50, 200, 1, floats=True), [0], method="batched",
                      mode="pairs")


def test_unreachable_isolated_source():
    g = bg.random_graph(500, 2000, 5, isolated=2)
    res = check(g, [g.n - 1, 0, g.n - 2, g.n - 1], batch_size=32)
    assert res.reached[0] == 1 and res.sum_distance[0] == 0 and res.eccentricity[0] == 0


def test_a_delta_below_the_distances_ulp_ends():
    """delta=0.5 with float weights near 1e38: thr = least far distance + delta stayed at
    that distance in float64 and the far pairs waited for ever (a hang found by
    tests/fuzz_methods.py on an H200).  The width is raised to 2**-50 of the path bound."""
    w = np.array([3.36e37, 1.37e38, 5.62e37, 1.91e38, 1.35e38, 2.74e38, 1.29e38, 2.33e38], dtype=np.float32)
    g = Graph.from_edges(np.array([1, 4, 0, 0, 2, 0, 4, 0]), np.array([2, 4, 4, 3, 1, 3, 0, 0]), w, 5)
    res = kernels.solve(g, [4, 3, 2, 0, 1], method="batched", delta=0.5)
    ref = kernels.solve(g, [4, 3, 2, 0, 1], method="dijkstra", backend="cpu")
    assert np.allclose(res.distances, ref.distances, rtol=1e-12) and res.counters["delta"] > 0.5


def test_negative_weights_without_cycle():
    seed = _fresh_seed()
    base = bg.load("dimacs9/rome99.gr")
    g, p = bg.reweighted(base, seed)
    assert g.has_negative
    src = np.random.default_rng(seed).integers(0, g.n, 40)
    check(g, src, ref="bellman-ford", batch_size=32)
    r = bg.random_graph(800, 4000, seed, isolated=1)
    g2, _ = bg.reweighted(r, seed + 1)
    check(g2, np.r_[np.arange(0, 800, 13), 799], ref="bellman-ford")


def test_negative_cycle_raises():
    base = bg.random_graph(400, 2400, 9)
    g, cyc = bg.with_negative_cycle(base, 4)
    import scipy.sparse as sp

    mat = sp.csr_array(g.to_scipy())
    for mode in ("pull", "push", "pairs"):
        with pytest.raises(NegativeCycleError) as info:
            kernels.solve(g, np.arange(0, 400, 20), method="batched", mode=mode)
        err = info.value
        assert err.cycle and err.vertex in err.cycle, mode
        # the named cycle has negative weight
        c = err.cycle
        total = sum(float(mat[c[i], c[(i + 1) % len(c)]]) for i in range(len(c)))
        assert total < 0, mode


def test_histogram_and_delta_inf():
    g = bg.load("dimacs9/rome99.gr")
    src = np.arange(0, g.n, 97)
    want = kernels.solve(g, src, method="dijkstra")
    got = kernels.solve(g, src, method="batched", histogram_bins=16, distances=False)
    h = got.counters["histogram"]
    for i in range(len(src)):
        d = want.distances[i][np.isfinite(want.distances[i])]
        c, _ = np.histogram(d, bins=h["edges"][i])
        assert np.array_equal(c, h["counts"][i])
    edges = np.linspace(0, 80_000, 9)
    got = kernels.solve(g, src, method="batched", histogram_bins=edges, distances=False)
    for i in range(len(src)):
        d = want.distances[i][np.isfinite(want.distances[i])]
        assert np.array_equal(np.histogram(d, bins=edges)[0], got.counters["histogram"]["counts"][i])
    check(g, src, delta=float("inf"))
    check(g, src, delta=1.0, batch_size=64)


def test_turn_two_threads_queue_behind_each_other():
    """Two threads share one GPU turn (as a study worker's two task threads do): each
    call gives it back once its launches are enqueued and collects its statistics on a
    side stream; every result equals the serial one, and every call's kernel time stays
    within its own solve."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    seed = _fresh_seed()
    g = bg.random_graph(3000, 24000, seed)
    rng = np.random.default_rng(seed)
    groups = [rng.integers(0, g.n, size=96) for _ in range(6)]
    serial = [kernels.solve(g, s, method="batched", distances=True) for s in groups]
    lock = threading.Lock()

    def one(s, with_dist):
        t = time.perf_counter()
        r = kernels.solve(g, s, method="batched", distances=with_dist, turn=lock)
        return r, (time.perf_counter() - t) * 1e3

    for with_dist in (False, True):
        with ThreadPoolExecutor(2) as ex:
            got = list(ex.map(lambda s: one(s, with_dist), groups))
        for (r, wall_ms), want, s in zip(got, serial, groups):
            assert np.array_equal(r.reached, want.reached), seed
            assert np.array_equal(r.sum_distance, want.sum_distance), seed
            assert np.array_equal(np.nan_to_num(r.eccentricity, nan=-1), np.nan_to_num(want.eccentricity, nan=-1))
            if with_dist:
                assert np.array_equal(r.distances, want.distances), seed
            assert 0 < r.counters["kernel_ms"] <= wall_ms
    assert not lock.locked()


# ---------------------------------------------------------------- zero-weight arcs (issue 14)
def test_zero_weight_cycle_three_vertices():
    """2 -> 0 (1), 0 -> 1 (0), 1 -> 0 (0) from vertex 2: 0 and 1 are tight predecessors of
    each other; the tree must be 2 -> 0 -> 1, whatever the kernel and batch."""
    g = Graph.from_edges([2, 0, 1], [0, 1, 0], [1, 0, 0], 3, name="zero-cycle")
    for srcs in ([2], [2, 0, 1, 2]):
        res = check(g, srcs)
        assert res.predecessors[0].tolist() == [2, 0, -1]
        assert res.counters["predecessor_rounds"] == 1
    f = Graph.from_edges([2, 0, 1], [0, 1, 0], np.array([1.0, 0.0, 0.0]), 3, name="zero-cycle-f64")
    assert check(f, [2, 0]).predecessors[0].tolist() == [2, 0, -1]


def test_bay_weights_0_to_3_predecessor_tree():
    """The report's case: BAY with weights 0..3, several sources (what auto sends to
    batched); every chain must end at its source."""
    if not (bg.shared_data() / "road-topology" / "BAY.gr.xz").exists():
        pytest.skip("BAY.gr.xz is not present")
    g = bg.load("road-topology/BAY.gr.xz", weights="random:0:3:7")
    assert g.min_weight == 0
    src = np.random.default_rng(14).integers(0, g.n, 40)
    res = check(g, src, batch_size=32)  # two chunks
    assert 0 < res.counters["predecessor_rounds"] < 40  # zero chains, not the tree depth
    auto = kernels.solve(g, src[:3], predecessors=True)
    assert auto.method == "batched"
    assert compare(g, kernels.solve(g, src[:3], method="dijkstra"), auto) == []


def test_zero_weights_generated_fresh_seed():
    """Zero-weight arcs and cycles (weights 0..2), also with negative arcs around the zero
    cycles (potentials keep every cycle's sum), and as float64 (pull)."""
    seed = _fresh_seed()
    g = bg.random_graph(3000, 12000, seed, lo=0, hi=2, isolated=2)
    src = np.r_[np.random.default_rng(seed).integers(0, g.n, 70), g.n - 1]
    check(g, src, batch_size=64)
    neg, _ = bg.reweighted(g, seed + 1)
    assert neg.has_negative
    check(neg, src, ref="bellman-ford", batch_size=64)
    f = Graph.from_edges(g.tails(), g.indices, g.weights.astype(np.float64), g.n, name="zeros-f64")
    check(f, src)
    # every weight 0: the tree is a BFS over all arcs
    z = Graph.from_edges(g.tails(), g.indices, np.zeros(g.m, np.int64), g.n, name="all-zero")
    check(z, src[:8])


def test_predecessor_work_only_when_asked():
    """Without predecessors no predecessor kernel runs: the launches are the solve's and
    the reductions' alone, as many as with positive weights."""
    g = bg.random_graph(2000, 8000, 3, lo=0, hi=2)
    src = np.arange(0, 2000, 50)
    plain = kernels.solve(g, src, method="batched", mode="pairs")
    tree = kernels.solve(g, src, method="batched", mode="pairs", predecessors=True)
    assert "predecessor_rounds" not in plain.counters and plain.predecessors is None
    assert plain.counters["launches"] == 2 * plain.counters["batches"]  # solve + reduce per chunk
    assert tree.counters["launches"] > plain.counters["launches"]
