"""A GPU method that refuses a graph says so with an SsspError (one line on the command
line, exit 2), not a plain ValueError, which the CLI treats as a bug (traceback).  The
refusals below are raised before any device work, so they are checked without a GPU.
Found reading the GPU methods' refusals for tests/fuzz_methods.py's refusal check."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpu_sssp.kernels.errors import SsspError, UsageError
from gpu_sssp.kernels.graph import Graph


def test_spmv_ell_refuses_a_hub_with_a_usage_error():
    from gpu_sssp.kernels.gpu import spmv

    n = 200  # in-star: ELL pads every vertex to the hub's 199 in-arcs
    g = Graph.from_edges(np.arange(1, n), np.zeros(n - 1, dtype=np.int64), np.ones(n - 1, dtype=np.int64), n)
    with pytest.raises(UsageError, match="max_fill") as err:
        spmv._ell(SimpleNamespace(graph=g, cp=None), 4.0)
    assert isinstance(err.value, ValueError)  # still a ValueError for Python callers


def test_dijkstra_gpu_refuses_an_hour_long_run_with_a_usage_error():
    from gpu_sssp.kernels.gpu import dijkstra_gpu

    n = 200_000
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, dtype=np.int64), n)
    with pytest.raises(SsspError, match="would take about") as err:
        dijkstra_gpu.solve(g, np.arange(1000, dtype=np.int64))
    # the way on is Python's force=True: no command has a --force option
    assert "force=True" in str(err.value) and "--force" not in str(err.value)
