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
    eccentricity only.  Found by tests/fuzz_methods.py."""
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
