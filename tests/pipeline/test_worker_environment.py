"""A worker whose Python environment differs from the client's (found by the 2026-12-07
attached-cluster audit):

- a worker without scipy imported gpu_sssp, passed the start check (its warm-up solve's
  ``ModuleNotFoundError`` was logged as "not fatal"), and every batch sent to it failed:
  the study ended with a traceback, also when that worker joined mid-study.  The
  warm-up's ImportError is now a load failure: the worker is set aside with a note;
- a worker without ch-router was told that the hierarchy's folder "must be shared with
  the workers under the same path", which it was."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp.kernels.graph import Graph


def _graph():
    return Graph.from_edges([0, 1, 2], [1, 2, 3], np.array([1, 2, 3]), 4, name="g")


def test_a_missing_dependency_in_the_warm_up_is_a_load_failure(monkeypatch):
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.plugins import GraphPlugin

    plugin = GraphPlugin("g.parquet", "f" * 16, backend="cpu", method="dijkstra")
    plugin.timings = {}

    def no_scipy(*a, **kw):
        raise ModuleNotFoundError("No module named 'scipy'")

    monkeypatch.setattr(kernels, "solve", no_scipy)
    with pytest.raises(ModuleNotFoundError, match="scipy"):
        plugin._warm(_graph())

    def other(*a, **kw):  # anything else: the batches say what is wrong, as before
        raise ValueError("something a batch reports")

    monkeypatch.setattr(kernels, "solve", other)
    assert plugin._warm(_graph()) is None


def test_a_hierarchy_of_a_library_not_installed_names_the_environment(tmp_path, monkeypatch):
    from gpu_sssp.kernels import hierarchy as hmod
    from gpu_sssp.pipeline import hierarchy as ph

    g = _graph()
    path = tmp_path / "g.parquet.ch.npz"
    ph.load_hierarchy(g, path)  # built and written
    assert path.is_file()
    g2 = _graph()  # (no hierarchy kept with it)
    monkeypatch.setattr(hmod, "library_version", lambda: "ch-router unknown (RoutingKit)")
    with pytest.raises(Exception, match=r"ch-router is not installed here\); this process's Python environment "
                                        r"differs from the one that built it: install gpu-sssp with the same "
                                        r"dependencies on every node") as exc:
        ph.load_hierarchy(g2, path, build=False)
    assert "must be shared" not in str(exc.value)
    monkeypatch.setattr(hmod, "library_version", lambda: "ch-router 0.0.1 (RoutingKit)")
    with pytest.raises(Exception, match=r"installed is ch-router 0\.0\.1 \(RoutingKit\)\); this process's Python"):
        ph.load_hierarchy(_graph(), path, build=False)
