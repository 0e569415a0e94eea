"""Found by an adversarial audit of travel-time matrices: ``solve``'s ``stats_over`` is
checked whether or not targets are given (a misspelt value was ignored without them)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.kernels.graph import Graph


def _graph():
    return Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1, 2, 3]), 3)


@pytest.mark.parametrize("bad", ["target", "vertices", "ALL", None, ["all"], np.array(["all"]), np.array(["all", "targets"])])
@pytest.mark.parametrize("targets", [None, [2]])
def test_stats_over_is_checked_with_or_without_targets(bad, targets):
    """``solve(g, s, stats_over="target")`` (no targets) solved and said nothing; with
    targets it was refused, and an array was a NumPy 'truth value is ambiguous' error."""
    with pytest.raises(UsageError, match="stats_over must be one of"):
        kernels.solve(_graph(), [0], method="dijkstra", backend="cpu", targets=targets, stats_over=bad)


@pytest.mark.parametrize("over", ["targets", "all"])
def test_stats_over_values_still_taken_without_targets(over):
    res = kernels.solve(_graph(), [0], method="dijkstra", backend="cpu", stats_over=over)
    assert res.stats_over == "vertices" and res.reached.tolist() == [3]
