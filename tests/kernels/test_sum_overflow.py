"""Per-source sums of integer distances never wrap silently: each distance is below
2**53 (the exactness rule), but thousands of them can pass 2**63 (CPU only)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.errors import SumOverflowError
from gpu_sssp.kernels.graph import Graph
from gpu_sssp.kernels.result import Result


def _chain(n: int, w: int) -> Graph:
    return Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.full(n - 1, w, dtype=np.int64), n, name="chain")


def test_a_sum_past_2_63_is_summed_in_halves_not_wrapped():
    g = _chain(4100, 2**40)  # every path below 2**53, the sum from vertex 0 about 1.00002 * 2**63
    g.check_exact()
    res = kernels.solve(g, [0, 4000], method="dijkstra", backend="cpu")
    exact = 2**40 * (4099 * 4100 // 2)
    assert exact >= 2**63 and res.sum_distance.dtype == np.float64
    assert res.sum_distance[0] == float(exact)  # exact, rounded once to float64
    assert int(res.sum_distance[1]) == 2**40 * (99 * 100 // 2)  # the small one stays exact
    # the statistics table holds it as it is (float64 column)
    assert res.stats_table().column("sum_distance").to_pylist()[0] == float(exact)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_result_checks_integer_sums_only(dtype):
    common = dict(sources=np.array([0]), distances=None, predecessors=None, iterations=np.zeros(1, np.int64),
                  relaxations=np.zeros(1, np.int64), method="m", backend="cpu")
    with pytest.raises(SumOverflowError):
        Result(reached=np.array([4097]), eccentricity=np.array([2.0**51]), sum_distance=np.zeros(1, dtype), **common)
    Result(reached=np.array([4095]), eccentricity=np.array([2.0**51]), sum_distance=np.zeros(1, dtype), **common)
    Result(reached=np.array([4097]), eccentricity=np.array([2.0**51]), sum_distance=np.zeros(1), **common)  # float
    Result(reached=np.array([0]), eccentricity=np.array([np.nan]), sum_distance=np.zeros(1, dtype), **common)


@pytest.mark.parametrize("method", ["bellman-ford", "auto"])
def test_negative_distances_summing_past_minus_2_63_are_not_wrapped(method):
    """A chain of negative arcs: every distance is within 2**53 and the largest is 0 (the
    source), but their sum is about -1.46 * 2**63.  The int64 sum wrapped to a large
    positive number (4.9e18) because the switch to the two-halves sum looked at the
    eccentricity only.  Found reading reduce_distances during the fuzzing audit."""
    n = 3000
    w = -((2**53 - 1) // (n - 1))
    g = _chain(n, w)
    g.check_exact()
    res = kernels.solve(g, [0, n - 10], method=method, backend="cpu")
    exact = w * (n - 1) * n // 2
    assert exact < -2**63 and res.eccentricity[0] == 0
    assert res.sum_distance.dtype == np.float64 and res.sum_distance[0] == float(exact)
    assert int(res.sum_distance[1]) == w * 45  # 0 + w + ... + 9w, exact
    assert res.mean_distance()[0] == pytest.approx(exact / (n - 1))


def test_batched_negative_sums_resummed_or_refused_on_the_host():
    """``batched`` sums integer distances with int64 atomics: negative distances summing
    past -2**63 wrap unseen by Result's check (the eccentricity is 0).  Its host-side
    guard (no GPU needed) sums again from the distances, or refuses without them."""
    from gpu_sssp.kernels.gpu.batched import _negative_sums

    n = 3000
    w = -((2**53 - 1) // (n - 1))
    g = _chain(n, w)
    dist = kernels.solve(g, [0, n - 10], method="bellman-ford", backend="cpu").distances
    reached = np.isfinite(dist).sum(axis=1)
    def wrap(x):  # what int64 atomics leave of a sum
        x = int(x) % 2**64
        return x - 2**64 if x >= 2**63 else x

    exact = w * (n - 1) * n // 2
    wrapped = np.array([wrap(exact), wrap(45 * w)], dtype=np.int64)
    assert wrapped[0] > 0  # the silent wrap this guards against
    got = _negative_sums(g, np.array([0, n - 10]), reached, wrapped, dist, None, None)
    assert got[0] == float(exact) and int(got[1]) == 45 * w
    tg = np.concatenate([np.arange(n), [5]])  # every vertex, one repeated
    t_reached = np.isfinite(dist).sum(axis=1)
    got = _negative_sums(g, np.array([0, n - 10]), t_reached, wrapped, dist[:, tg], tg, "targets")
    assert got[0] == float(exact) and int(got[1]) == 45 * w
    with pytest.raises(SumOverflowError, match="-2\\*\\*63"):
        _negative_sums(g, np.array([0, n - 10]), reached, wrapped, None, None, None)
    small = _chain(10, -5)  # far from the limit: the kernel's sums stand
    assert _negative_sums(small, np.array([0]), np.array([10]), np.array([-225]), None, None, None)[0] == -225


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["batched", "hbf", "harish"])
def test_gpu_negative_distances_summing_past_minus_2_63(method):
    """The GPU engines on the chain of negative arcs: the sums of the CPU, never wrapped
    (SourceLoop kept reduce_distances' float64 sum but cast it back to int64)."""
    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")
    n = 3000
    w = -((2**53 - 1) // (n - 1))
    g = _chain(n, w)
    want = kernels.solve(g, [0, n - 10], method="bellman-ford", backend="cpu")
    got = kernels.solve(g, [0, n - 10], method=method, backend="gpu")
    assert np.array_equal(got.distances, want.distances)
    assert got.sum_distance[0] == want.sum_distance[0] == float(w * (n - 1) * n // 2)
    assert int(got.sum_distance[1]) == 45 * w
