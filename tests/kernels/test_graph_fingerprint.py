"""Graph.fingerprint: every Graph has one, however it was built, and it names the
content (two graphs share a device upload or a worker's copy only when it is equal)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpu_sssp.kernels.graph import Graph


def _csr(weights):
    return dict(n=3, indptr=np.array([0, 1, 2, 2], dtype=np.int32), indices=np.array([1, 2], dtype=np.int32),
                weights=np.asarray(weights))


def test_direct_construction_has_a_content_fingerprint():
    a = Graph(**_csr(np.array([3, 4], dtype=np.int64)))
    b = Graph(**_csr(np.array([3, 5], dtype=np.int64)))
    assert len(a.fingerprint) == 16 and len(b.fingerprint) == 16
    assert a.fingerprint != b.fingerprint
    # the same content built through from_edges gives the same fingerprint
    assert Graph.from_edges([0, 1], [1, 2], np.array([3, 4], dtype=np.int64)).fingerprint == a.fingerprint


def test_replace_with_other_arrays_gets_its_own():
    a = Graph.from_edges([0, 1], [1, 2], np.array([3, 4], dtype=np.int64))
    b = dataclasses.replace(a, weights=np.array([5, 5], dtype=np.int64))
    assert b.fingerprint != a.fingerprint
    assert b.fingerprint == Graph.from_edges([0, 1], [1, 2], np.array([5, 5], dtype=np.int64)).fingerprint


def test_a_known_fingerprint_is_kept_without_hashing(monkeypatch):
    """A loader that knows it (the CSR cache) assigns it; no hashing happens."""
    g = Graph(**_csr(np.array([3, 4], dtype=np.int64)))
    monkeypatch.setattr(Graph, "_compute_fingerprint", lambda self: (_ for _ in ()).throw(AssertionError))
    g.fingerprint = "0123456789abcdef"
    assert g.fingerprint == "0123456789abcdef"


@pytest.mark.gpu
def test_directly_built_graphs_get_their_own_device_upload():
    """kernels.gpu.loader keys device uploads by fingerprint: two graphs built
    without from_edges used to share the key '' (and the first one's arrays)."""
    from gpu_sssp import kernels
    from gpu_sssp.kernels.gpu.loader import device_graph

    a = Graph(**_csr(np.array([3, 4], dtype=np.int64)))
    b = Graph(**_csr(np.array([7, 8], dtype=np.int64)))
    assert device_graph(a) is not device_graph(b)
    assert int(device_graph(b).weights.sum().get()) == 15
    res = kernels.solve(b, [0], method="hbf")
    assert res.distances[0].tolist() == [0, 7, 15]
