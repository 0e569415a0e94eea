"""Integer weights whose path lengths could leave float64's exact range (2**53) are
refused by ``kernels.solve`` before any method runs, naming the graph, the bound and the
weight; just inside the limit the answers are exact."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import compare
from gpu_sssp.kernels.graph import EXACT_LIMIT, Graph

LIMIT = 2**53
assert EXACT_LIMIT == LIMIT


def _every_method():
    return [(m, kernels.registry.get(m).backend) for m in kernels.available_methods() if m != "auto"]


def test_min_int64_weight_refused_by_every_method():
    # the report's graph: 2 -> 3 (1) in a batch with a source whose arc weighs -2**63
    g = Graph.from_edges([0, 2], [1, 3], np.array([-2**63, 1], dtype=np.int64), 4, name="minint")
    assert g.max_abs_weight == 2**63  # abs(np.int64(-2**63)) would wrap to -2**63
    for method, backend in _every_method() + [("auto", "auto")]:
        with pytest.raises(ValueError) as info:
            kernels.solve(g, [2, 0], method=method, backend=backend)
        msg = str(info.value)
        assert "minint" in msg and "-9223372036854775808" in msg and "0 -> 1" in msg, (method, msg)
        assert f"may reach {2**63 + 1} " in msg and "2**53" in msg, msg


def test_int64_limit_edges():
    dtype = np.int64
    # 0 -> 1 -> 2: (n - 1) * max|w| would say 2**53 for (2**52, 2**52 - 1); the in-arc
    # bound says 2**53 - 1, the true length, which float64 holds exactly
    inside = Graph.from_edges([0, 1], [1, 2], np.array([2**52, 2**52 - 1], dtype=dtype), 3, name="inside")
    assert inside.path_bound() == LIMIT - 1
    for method in ("dijkstra", "bellman-ford"):
        res = kernels.solve(inside, [0], method=method, predecessors=True)
        assert res.distances[0].tolist() == [0.0, 2.0**52, float(LIMIT - 1)]
        assert int(res.distances[0, 2]) == LIMIT - 1 and res.sum_distance[0] == 2**52 + LIMIT - 1
    outside = Graph.from_edges([0, 1], [1, 2], np.array([2**52, 2**52], dtype=dtype), 3, name="outside")
    with pytest.raises(ValueError, match=rf"outside: .*may reach {LIMIT} .*weight {2**52} on arc 0 -> 1"):
        kernels.solve(outside, [0])
    # one arc: 2**53 - 1 is fine, 2**53 is not; the same for negative weights (with ids from 1)
    for w, ok in ((LIMIT - 1, True), (LIMIT, False), (-(LIMIT - 1), True), (-LIMIT, False)):
        g = Graph.from_edges([0], [1], np.array([w], dtype=dtype), 2, id_base=1, name="one")
        if ok:
            assert kernels.solve(g, [0]).distances[0].tolist() == [0.0, float(w)]
        else:
            with pytest.raises(ValueError, match=rf"one: .*weight {w} on arc 1 -> 2"):
                kernels.solve(g, [0])


@pytest.fixture(scope="module")
def int32_paths():
    # a path of k arcs of weight 2**31 - 1 reaches 2**53 at k = 2**22 + 1
    def path(k):
        w = np.full(k, np.iinfo(np.int32).max, dtype=np.int32)
        return Graph.from_edges(np.arange(k), np.arange(1, k + 1), w, k + 1, name=f"path{k}")

    return path(2**22), path(2**22 + 1)


def test_int32_limit_edges(int32_paths):
    inside, outside = int32_paths
    assert inside.weights.dtype == np.int32
    assert inside.path_bound() == 2**22 * (2**31 - 1) < LIMIT <= outside.path_bound()
    res = kernels.solve(inside, [0, inside.n - 1], method="dijkstra")
    assert res.distances[0, -1] == float(2**22 * (2**31 - 1))  # exact, the longest path
    assert res.reached.tolist() == [inside.n, 1]
    with pytest.raises(ValueError, match=rf"path{2**22 + 1}: .*may reach {outside.path_bound()} .*"
                                         rf"weight {2**31 - 1}"):
        kernels.solve(outside, [outside.n - 1])


def test_many_vertices_few_heavy_arcs_accepted():
    # (n - 1) * max|w| is far beyond 2**53, but only two arcs are heavy: the in-arc
    # bound (2 * 2**50 + small) lets it through, and the answers are exact
    n = 2**13
    rng = np.random.default_rng(3)
    src = np.r_[0, 1, rng.integers(0, n, 4 * n)]
    dst = np.r_[1, 2, rng.integers(0, n, 4 * n)]
    w = np.r_[2**50, 2**50, rng.integers(0, 10, 4 * n)].astype(np.int64)
    g = Graph.from_edges(src, dst, w, n)
    assert g.max_path_bound() >= LIMIT and g.path_bound() < LIMIT
    a = kernels.solve(g, [0, 5], method="dijkstra", predecessors=True)
    b = kernels.solve(g, [0, 5], method="bellman-ford", predecessors=True)
    assert compare(g, a, b) == []


def test_kernel_distance_types_hold_every_accepted_graph():
    """What kernels.solve lets through fits the GPU kernels' distance types: int32 only
    while n * max|w| stays below 2**31 and no weight is negative (a negative cycle drives
    distances down for n + 4 rounds before it is found), int64 otherwise."""
    from gpu_sssp.kernels.gpu.batched import _dist_type
    from gpu_sssp.kernels.gpu.common import dist_dtype

    small = Graph.from_edges([0, 1], [1, 2], np.array([5, 7], dtype=np.int64), 3)
    assert _dist_type(small) == "int32" and dist_dtype(small) == np.int32
    neg = Graph.from_edges([0, 1], [1, 2], np.array([5, -7], dtype=np.int32), 3)
    assert _dist_type(neg) == "int64" and dist_dtype(neg) == np.int64
    big = Graph.from_edges([0, 1], [1, 2], np.array([2**30, 2**30], dtype=np.int32), 3)
    assert _dist_type(big) == "int64" and dist_dtype(big) == np.int64
    edge = Graph.from_edges([0, 1], [1, 2], np.array([2**52, 2**52 - 1], dtype=np.int64), 3)
    edge.check_exact()
    assert _dist_type(edge) == "int64" and dist_dtype(edge) == np.int64


# -- real weights: distances must never overflow to inf silently ---------------------------
def test_nan_or_inf_weight_refused_naming_the_arc():
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match=r"weight of arc 1 \(1 -> 2\) is (nan|inf|-inf): .*finite"):
            Graph.from_edges([0, 1, 2], [1, 2, 0], np.array([1.0, bad, 2.0]), 3)


def _refused_by_every_method(g, start: str) -> None:
    """Every method (and ``auto``) refuses ``g`` before solving: its 1e308 arc 1 -> 2
    would make a distance or a per-source sum overflow to inf."""
    for method, backend in _every_method() + [("auto", "auto")]:
        with pytest.raises(ValueError) as info:
            kernels.solve(g, [0], method=method, backend=backend)
        msg = str(info.value)
        assert msg.startswith(start) and "overflow to inf" in msg, (method, msg)
        assert "weight 1e+308 on arc 1 -> 2" in msg, msg


def test_real_weights_whose_paths_overflow_refused_by_every_method():
    # 1 -> 2 -> 3 with 1e308 twice: vertex 3 is at 2e308, beyond float64 (it used to be
    # reported as unreachable, exit 0)
    g = Graph.from_edges([0, 1], [1, 2], np.array([1e308, 1e308]), 3, id_base=1, name="huge")
    assert g.path_bound() == float("inf")
    _refused_by_every_method(g, "huge: real weights too large")
    # the in-arc bound keeps a graph whose crude bound (2 * 5e307: 2 distances within it
    # may sum to 2e308) fails
    from gpu_sssp.kernels.graph import path_bound_of, path_bound_ok

    ok = Graph.from_edges([0, 1], [1, 2], np.array([5e307, 1.0]), 3, name="ok")
    assert not path_bound_ok(path_bound_of(3, 5e307, False), False)
    assert ok.path_bound() == 5e307 + 1.0
    ok.check_exact()


def test_real_weights_whose_distances_sum_beyond_float64_refused():
    """Every distance finite, their per-source sum (sum_distance, float64) not: refused
    by the same rule (path_bound_of: (n - 1) x the bound must stay finite), before
    solving, instead of an inf sum and a RuntimeWarning."""
    for w in ([1e308, 1e308], [1e308, 1.0]):
        # a star 1 -> 2, 1 -> 3 (distances 1e308 each), and a chain 1 -> 2 -> 3 (1e308 + 1)
        tails = [0, 0] if w[1] == 1e308 else [0, 1]
        g = Graph.from_edges(tails, [1, 2], np.array(w), 3, id_base=1, name="sums")
        assert g.path_bound() == float("inf")
        _refused_by_every_method(g, "sums: real weights too large")
    chain = Graph.from_edges([0, 1], [1, 2], np.array([1e308, 1.0]), 3, name="chain")
    with pytest.raises(ValueError, match=r"chain: real weights too large: every shortest distance stays finite "
                                         r"\(at most 1e\+308, .*\), but the 2 distances of one source may sum to "
                                         r"inf, beyond float64's largest value .*sum_distance"):
        chain.check_exact()
    # the rule is the bound's: (n - 1) x 8e307 (with rounding) fits, and the sum is finite
    fits = Graph.from_edges([0, 1], [1, 2], np.array([8e307, 1.0]), 3)
    fits.check_exact()
    res = kernels.solve(fits, [0], method="dijkstra")
    assert np.isfinite(res.sum_distance).all()
    from gpu_sssp.kernels.graph import path_bound_of, path_bound_ok, sum_bound_of

    assert path_bound_ok(path_bound_of(3, 4e307, False), False)  # what ingest asks first: (n - 1) x max|w|
    assert not path_bound_ok(path_bound_of(3, 1e308, False), False)
    assert sum_bound_of(3, 1e308) == float("inf") and sum_bound_of(1, 1e308) == 0.0


@pytest.mark.parametrize("given, kept", [(np.int8, np.int32), (np.int16, np.int32), (np.float16, np.float32),
                                         (np.longdouble, np.float64)])
def test_narrow_and_wide_weight_types_become_solver_types(given, kept):
    """Graph.from_edges accepted int8 / int16 / float16 / longdouble weights and kept
    them: the CPU solved such a graph but every GPU method refused it with a TypeError
    (``kernels.gpu.common.ctype`` takes int32, int64, float32, float64 only).  Found reading
    the dtype paths for tests/fuzz_methods.py.  They are widened (or longdouble narrowed)
    exactly."""
    from gpu_sssp.kernels.gpu.common import CTYPES

    w = np.array([3, -2, 5], dtype=given) if np.dtype(given).kind == "i" else np.array([3, 0.5, 5], dtype=given)
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], w, 3)
    assert g.weights.dtype == np.dtype(kept) and np.dtype(g.weights.dtype) in CTYPES
    assert sorted(g.weights.astype(np.float64).tolist()) == sorted(w.astype(np.float64).tolist())
    method = "bellman-ford" if (w < 0).any() else "dijkstra"
    res = kernels.solve(g, [0], method=method, backend="cpu")
    assert res.distances[0, 1] == float(w[0])


def test_longdouble_weight_beyond_float64_refused():
    big = np.array([1, np.longdouble(np.finfo(np.float64).max) * 4], dtype=np.longdouble)
    if not np.isfinite(big[1]):  # a platform whose longdouble is float64
        pytest.skip("longdouble is float64 here")
    with pytest.raises(ValueError, match="beyond float64"):
        Graph.from_edges([0, 1], [1, 0], big, 2)


def test_float32_paths_beyond_float32_get_float64_gpu_distances():
    """float32 weights are bounded in float64 by check_exact, but the single-source GPU
    kernels added them in float32: two arcs of 2e38 made a distance of inf (read as
    unreachable).  Their distance type is float64 where a path may pass float32's range
    (kernels.gpu.common.dist_dtype, no GPU needed).  Found reading dist_dtype for
    tests/fuzz_methods.py's float32-huge graphs; the <float, double> kernels compile
    (nvcc, sm_90; checked by hand, not in test_nvcc's lists)."""
    from gpu_sssp.kernels.gpu.common import dist_dtype

    big = np.float32(2e38)
    g = Graph.from_edges([0, 1], [1, 2], np.array([big, big], dtype=np.float32), 3)
    g.check_exact()  # accepted: 4e38 is finite in float64
    assert dist_dtype(g) == np.float64
    ref = kernels.solve(g, [0], method="dijkstra", backend="cpu")
    assert ref.distances[0, 2] == 2 * float(big)
    small = Graph.from_edges([0, 1], [1, 2], np.array([1.5, 2.5], dtype=np.float32), 3)
    assert dist_dtype(small) == np.float32


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["harish", "hbf", "edgelist", "locality", "spmv-csr-scalar", "queue-bf",
                                    "delta", "dijkstra-gpu", "batched"])
def test_gpu_float32_paths_beyond_float32(method):
    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")
    big = np.float32(2e38)
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], np.array([big, big, 1.0], dtype=np.float32), 4)
    want = kernels.solve(g, [0, 1], method="dijkstra", backend="cpu")
    got = kernels.solve(g, [0, 1], method=method, backend="gpu", predecessors=True)
    assert compare(g, want, got, rtol=1e-6) == []
