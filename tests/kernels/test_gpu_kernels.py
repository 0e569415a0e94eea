"""GPU kernels (harish, hbf and its ablation variants, spmv-*) against the CPU backend.

hbf's default picks ``hops=2`` (two-hop relaxation) on sparse graphs and ``hops=1`` (H-BF's
own kernels) elsewhere; both run wherever plain hbf runs: the ablation variants in ``ALL``
pin one or the other, and ``METHOD_OPTS`` has both for the tests parametrized by method
only.

Integer weights must match exactly (``np.array_equal``); float32 within rtol 1e-5.
Predecessors must satisfy ``dist[pred] + w(pred, v) == dist[v]`` and form a tree
rooted at the source.  Random graphs are fresh every run (the seed is printed).
"""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import tree_problems
from gpu_sssp.kernels.result import NegativeCycleError

from . import graphs as G

pytestmark = pytest.mark.gpu

METHODS = ["harish", "hbf", "spmv-csr-scalar", "spmv-csr-vector", "spmv-ell"]
HBF_VARIANTS = {
    # hops=1: exactly H-BF's kernels (the default picks hops=2 on sparse graphs)
    "hops1": dict(hops=1),
    "launch": dict(hops=1, persistent=False),
    "noclass": dict(hops=1, edge_classes=False),
    "nodedup": dict(hops=1, dedup64=False),
    "nocoal": dict(hops=1, coalesced_enqueue=False),
    "warpcoal": dict(hops=1, coalesced_enqueue="warp"),  # H-BF's warp enqueue (the default is "block")
    "warpcoal-launch": dict(hops=1, coalesced_enqueue="warp", persistent=False),
    "fixedvw": dict(hops=1, virtual_warps=False, lanes=8),
    "heavy4": dict(hops=1, heavy_threshold=4),
    "alloff": dict(hops=1, edge_classes=False, dedup64=False, coalesced_enqueue=False, virtual_warps=False,
                   heavy_threshold=0, persistent=False),
    # hops=2: hbf_persistent_h2 / hbf_step_h2, alone and with the switches that change its path
    "hops2": dict(hops=2),
    "hops2-launch": dict(hops=2, persistent=False),
    "hops2-noclass": dict(hops=2, edge_classes=False),
    "hops2-nodedup": dict(hops=2, dedup64=False),
    "hops2-heavy4": dict(hops=2, heavy_threshold=4),
    "hops2-warpcoal": dict(hops=2, coalesced_enqueue="warp"),
    "hops2-alloff": dict(hops=2, edge_classes=False, dedup64=False, coalesced_enqueue=False,
                         virtual_warps=False, heavy_threshold=0, persistent=False),
}
ALL = [(m, {}) for m in METHODS] + [("hbf", v) for v in HBF_VARIANTS.values()]
ALL_IDS = METHODS + [f"hbf-{k}" for k in HBF_VARIANTS]
# every method with its defaults, plus hbf hops=2 (tests that take no ablation variants)
METHOD_OPTS = [(m, {}) for m in METHODS] + [("hbf", dict(hops=1)), ("hbf", dict(hops=2))]
METHOD_IDS = METHODS + ["hbf-hops1", "hbf-hops2"]
DTYPES = [np.int32, np.int64, np.float32, np.float64]


def _ell_refuses(g, method, max_fill=3.0):
    if method != "spmv-ell" or g.m == 0:
        return False
    return g.n * int(g.in_degree().max()) > max_fill * g.m


def check_predecessors(g, res):
    """The one predecessor checker (kernels.check): tight arcs, a tree whose every chain
    from a reached vertex ends at the source."""
    rtol = 0.0 if g.integer_weights else (1e-5 if g.weights.dtype == np.float32 else 1e-12)
    problems = tree_problems(g, res.distances, res.predecessors, res.sources, rtol=rtol)
    assert problems == [], f"{res.method} on {g.name}: {problems}"


def check(g, sources, method, opts=None, *, preds=True, negative=False):
    opts = opts or {}
    sources = np.asarray(sources, dtype=np.int64)
    ref = kernels.solve(g, sources, method="bellman-ford" if negative else "dijkstra", backend="cpu")
    if _ell_refuses(g, method):
        with pytest.raises(ValueError, match="max_fill"):
            kernels.solve(g, sources, method=method, **opts)
        opts = dict(opts, max_fill=float("inf"))  # still check the kernel on this graph
    res = kernels.solve(g, sources, method=method, predecessors=preds, count_work=True, **opts)
    assert res.backend == "gpu" and res.distances.shape == (len(sources), g.n)
    assert res.distances.dtype == np.float64
    if g.integer_weights:
        assert np.array_equal(res.distances, ref.distances), _diff(res.distances, ref.distances)
        assert np.array_equal(res.sum_distance, ref.sum_distance)
        assert res.sum_distance.dtype == np.int64
    else:
        assert np.array_equal(np.isinf(res.distances), np.isinf(ref.distances))
        fin = np.isfinite(ref.distances)
        rtol = 1e-5 if g.weights.dtype == np.float32 else 1e-9
        np.testing.assert_allclose(res.distances[fin], ref.distances[fin], rtol=rtol)
    assert np.array_equal(res.reached, ref.reached)
    c = res.counters
    for key in ("iterations", "launches", "host_syncs", "relaxations", "kernel_ms", "mteps"):
        assert key in c, key
    assert c["launches"] > 0 and c["host_syncs"] > 0 and c["kernel_ms"] > 0
    if g.m and np.any(ref.reached > 1):
        assert c["relaxations"] > 0
    if preds:
        check_predecessors(g, res)
    return res


def _diff(a, b):
    bad = np.argwhere(a != b)
    return f"{len(bad)} differences, first {bad[:5].tolist()}: {a[tuple(bad[:5].T)]} vs {b[tuple(bad[:5].T)]}"


# ---------------------------------------------------------------------- real graphs
@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_rome99_checksums(method, opts):
    g = G.load("dimacs9/rome99.gr")
    res = check(g, [0, 1000, 3352], method, opts)
    assert res.reached[0] == 3353
    assert res.sum_distance[0] == 116_006_476
    assert res.eccentricity[0] == 69_102
    assert res.counters["distance_type"] == "int32"  # int64 weights, bound fits: narrowed


@pytest.mark.parametrize("parallel", ["min", "keep"])
@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_gapbs(method, opts, parallel):
    g = G.load("gapbs/4.gr", parallel=parallel)
    res = check(g, np.arange(g.n), method, opts)
    assert (res.reached < g.n).any()  # the unreachable vertex


@pytest.mark.parametrize("weights", [None, "random:1:1000:7"], ids=["unit", "seeded"])
@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_delaunay_n15(method, opts, weights):
    g = G.load("metis/delaunay_n15.graph", weights=weights)
    check(g, [0, 12345, 32767], method, opts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_usair97_float(method, opts, dtype):
    g = G.with_dtype(G.load("mtx/USAir97.mtx"), dtype)
    check(g, [0, 100, 331], method, opts)


@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_lederberg_directed(method, opts):
    g = G.load("mtx/Lederberg.tar.gz")
    assert g.directed
    check(g, [0, 17, 4000, 8842], method, opts)


@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_ny_seeded(method, opts):
    g = G.load("road-topology/NY.gr.xz", weights="random:1:1000:7")
    assert (g.n, g.m) == (264_346, 730_100)
    rng = np.random.default_rng(G.fresh_seed())
    check(g, rng.integers(0, g.n, size=2), method, opts)


# ---------------------------------------------------------------------- generated
@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_rmat_and_grid(method, opts, dtype):
    seed = G.fresh_seed()
    rng = np.random.default_rng(seed)
    for g in (G.rmat(10, 8, seed=seed, dtype=dtype), G.grid(40, 30, seed=seed, dtype=dtype),
              G.random_graph(500, 3000, seed=seed, dtype=dtype, parallel="keep")):
        check(g, rng.integers(0, g.n, size=3), method, opts)


@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_hbf_variants_rmat(method, opts):
    seed = G.fresh_seed()
    g = G.rmat(12, 16, seed=seed, dtype=np.int32)
    check(g, np.random.default_rng(seed).integers(0, g.n, size=3), method, opts)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64], ids=["int32", "int64", "float64"])
@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_negative_weights(method, opts, dtype):
    seed = G.fresh_seed()
    base = G.grid(20, 20, seed=seed, dtype=np.int64)
    g = G.with_potentials(base, seed=seed)
    g = G.with_dtype(g, dtype)
    check(g, [0, 399, 123], method, opts, negative=True)
    g2 = G.with_dtype(G.with_potentials(G.random_graph(300, 2000, seed=seed), seed=seed + 1), dtype)
    check(g2, [0, 5], method, opts, negative=True)


@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_negative_cycle(method, opts):
    g, cycle = G.negative_cycle_graph()
    for s in (0, 1, 5):
        with pytest.raises(NegativeCycleError) as err:
            kernels.solve(g, [s], method=method, **opts)
        assert err.value.vertex in cycle
    res = kernels.solve(g, [4, 6], method=method, **opts)
    assert res.reached.tolist() == [1, 1]


@pytest.mark.parametrize("method,opts", ALL + [("auto", {})], ids=ALL_IDS + ["auto"])
@pytest.mark.parametrize("weights", ["int", "float"])
def test_negative_self_loop_is_a_negative_cycle(method, opts, weights):
    """A negative self-loop reachable from a source is a negative cycle (hbf's arc
    classes skipped every self-loop, so it solved such graphs: found by
    tests/fuzz_methods.py); one on a vertex no source reaches is not."""
    from gpu_sssp.kernels.graph import Graph

    w = np.array([4, -2, 3, 5, -1], dtype=np.int64 if weights == "int" else np.float64)
    if weights == "float":
        w = w + 0.25
    # 0 -> 1 -> 2, a self-loop at 1 (negative) and at 0 (positive); 3 -> 3 negative, unreached
    g = Graph.from_edges(np.array([0, 1, 1, 0, 3]), np.array([1, 1, 2, 0, 3]), w, 4)
    for s in (0, 1):
        with pytest.raises(NegativeCycleError) as err:
            kernels.solve(g, [s], method=method, backend="gpu", **opts)
        assert err.value.vertex == 1
    one = Graph.from_edges(np.array([0, 0]), np.array([0, 0]), w[:2], 1, parallel="keep")
    with pytest.raises(NegativeCycleError):
        kernels.solve(one, [0], method=method, backend="gpu", **opts)
    res = kernels.solve(g, [2], method=method, backend="gpu", **opts)
    assert res.reached.tolist() == [1]


def test_negative_cycle_large():
    seed = G.fresh_seed()
    g = G.with_potentials(G.grid(30, 30, seed=seed), seed=seed)
    t, h, w = g.tails(), g.indices.copy(), g.weights.copy()
    # a planted cycle 10 -> 11 -> 10 made negative
    k = np.nonzero((t == 10) & (h == 11))[0][0]
    k2 = np.nonzero((t == 11) & (h == 10))[0][0]
    w[k] = -(abs(int(w[k2])) + 5)
    from gpu_sssp.pipeline.graph import Graph

    g2 = Graph.from_edges(t, h, w, g.n, parallel="keep")
    for method, opts in METHOD_OPTS:
        with pytest.raises(NegativeCycleError) as err:
            kernels.solve(g2, [0], method=method, **opts)
        assert err.value.vertex in (10, 11)


# ---------------------------------------------------------------------- small cases
@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_single_vertex_and_isolated(method, opts, dtype):
    from gpu_sssp.pipeline.graph import Graph

    one = Graph.from_edges(np.array([], np.int64), np.array([], np.int64), np.array([], dtype), 1)
    res = kernels.solve(one, [0], method=method, predecessors=True, **opts)
    assert res.distances.tolist() == [[0.0]] and res.predecessors.tolist() == [[-1]]
    loop = Graph.from_edges(np.array([0]), np.array([0]), np.array([3], dtype), 1)
    assert kernels.solve(loop, [0], method=method, **opts).distances.tolist() == [[0.0]]
    g = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1, 2, 3], dtype), 5)
    res = kernels.solve(g, [3, 0], method=method, predecessors=True, **opts)
    assert res.reached.tolist() == [1, 3]
    assert np.isinf(res.distances[0, [0, 1, 2, 4]]).all() and res.distances[0, 3] == 0


@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_int32_widening(method, opts):
    from gpu_sssp.pipeline.graph import Graph

    n = 6
    w = np.full(n - 1, 2**30, dtype=np.int32)
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), w, n)
    res = kernels.solve(g, [0], method=method, **opts)
    assert res.counters["distance_type"] == "int64"
    assert res.distances[0].tolist() == [float(i * 2**30) for i in range(n)]
    assert res.sum_distance[0] == sum(i * 2**30 for i in range(n))


@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_zero_weights_predecessor_tree(method, opts):
    seed = G.fresh_seed()
    g = G.grid(25, 25, seed=seed, lo=0, hi=2)
    assert g.min_weight == 0
    check(g, [0, 624], method, opts)


@pytest.mark.parametrize("method,opts", ALL, ids=ALL_IDS)
def test_zero_weight_cycle_three_vertices(method, opts):
    """2 -> 0 (1), 0 -> 1 (0), 1 -> 0 (0) from vertex 2: the tree is 2 -> 0 -> 1 (issue 14)."""
    from gpu_sssp.pipeline.graph import Graph

    g = Graph.from_edges([2, 0, 1], [0, 1, 0], [1, 0, 0], 3, name="zero-cycle")
    res = check(g, [2, 0, 1], method, opts)
    assert res.predecessors[0].tolist() == [2, 0, -1]


@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_negative_weights_zero_cycles_predecessor_tree(method, opts):
    # potentials keep cycle sums: the zero cycles of a 0..2 grid stay zero, now with negative arcs
    seed = G.fresh_seed()
    g = G.with_potentials(G.grid(20, 20, seed=seed, lo=0, hi=2), seed=seed)
    check(g, [0, 399, 150], method, opts, negative=True)


@pytest.mark.parametrize("method,opts", METHOD_OPTS, ids=METHOD_IDS)
def test_float_absorbed_arc_has_a_predecessor(method, opts):
    # 1e20 + 1.0 == 1e20: the arc 1 -> 2 is tight between equal distances
    from gpu_sssp.pipeline.graph import Graph

    g = Graph.from_edges([0, 1, 2], [1, 2, 1], np.array([1e20, 1.0, 1.0]), 3, name="absorbed")
    res = check(g, [0], method, opts)
    assert res.predecessors[0].tolist() == [-1, 0, 1]


def test_ell_refuses_padding():
    from gpu_sssp.pipeline.graph import Graph

    n = 1000
    g = Graph.from_edges(np.arange(1, n), np.zeros(n - 1, np.int64), np.ones(n - 1, np.int64), n)
    with pytest.raises(ValueError, match="max_fill"):
        kernels.solve(g, [1], method="spmv-ell")
    assert kernels.solve(g, [1], method="spmv-ell", max_fill=2000).reached[0] == 2


def test_unknown_option():
    g = G.grid(5, 5)
    with pytest.raises(TypeError):
        kernels.solve(g, [0], method="hbf", nonsense=1)


@pytest.mark.parametrize("hops", [0, 3, True, "2"])
def test_hbf_bad_hops(hops):
    g = G.grid(5, 5)
    with pytest.raises(ValueError, match="hops"):
        kernels.solve(g, [0], method="hbf", hops=hops)


def test_hbf_hops2_counters_and_rounds():
    """hops=2 reports itself, matches hops=1 exactly and takes fewer rounds on a road graph
    (rounds vary run to run, so only the total over the sources is compared)."""
    g = G.load("dimacs9/rome99.gr")
    src = [0, 1000, 3352]
    one = kernels.solve(g, src, method="hbf", count_work=True, hops=1)
    two = kernels.solve(g, src, method="hbf", count_work=True, hops=2)
    auto = kernels.solve(g, src[:1], method="hbf")
    assert auto.counters["hops"] == 2  # rome99: mean out-degree 2.7
    assert one.counters["hops"] == 1 and two.counters["hops"] == 2
    assert np.array_equal(one.distances, two.distances)
    assert two.iterations.sum() < one.iterations.sum(), (two.iterations, one.iterations)
    assert np.all(two.relaxations > 0)


@pytest.mark.parametrize("opts", [dict(heavy_threshold=0, blocks_per_sm=1, hops=1),
                                  dict(heavy_threshold=0, blocks_per_sm=1, dedup64=False, hops=1),
                                  dict(heavy_threshold=0, persistent=False, hops=1),
                                  dict(heavy_threshold=0, blocks_per_sm=1, hops=2)],
                         ids=["persistent", "nodedup", "launch", "hops2"])
def test_hbf_block_stage_spill(opts):
    """More enqueues in one block and round than its stage holds: exact all the same."""
    seed = G.fresh_seed()
    g = G.fan(seed)
    res = check(g, [0, 1], "hbf", opts)
    assert res.counters["enqueue"] == "block", (seed, res.counters["enqueue"])
