"""matrix() reads a graph given as a path with ingest options, as study() does: a 0-based
DIMACS file needed load_graph() first, since matrix(path, zero_based=True) passed
zero_based to the method ("unknown option")."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_sssp as sssp
from gpu_sssp.kernels.errors import OptionError


def test_matrix_path_with_ingest_options(tmp_path):
    el = tmp_path / "tiny.gr"  # DIMACS ids are 1-based unless zero_based
    el.write_text("p sp 3 3\na 0 1 4\na 1 2 5\na 0 2 11\n")
    with pytest.raises(ValueError, match="0"):
        sssp.matrix(el, [1], [1], method="dijkstra", backend="cpu")
    m = sssp.matrix(el, [0], [0, 1, 2], method="dijkstra", backend="cpu", ingest={"zero_based": True})
    assert m.tolist() == [[0.0, 4.0, 9.0]]
    g = sssp.load_graph(el, zero_based=True)
    assert np.array_equal(sssp.matrix(g, [0], [0, 1, 2], method="dijkstra", backend="cpu"), m)
    with pytest.raises(OptionError, match="ingest options .*zero_based.* with a Graph"):
        sssp.matrix(g, [0], [1], ingest={"zero_based": True})
    with pytest.raises(OptionError, match="ingest must be a dict"):
        sssp.matrix(el, [0], [1], ingest=True)
