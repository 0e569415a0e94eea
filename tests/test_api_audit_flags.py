"""``load_graph`` / ``ingest`` True/False options (found by the user audit): a string was
taken for its truth, so ``undirected="no"`` made an undirected graph and
``zero_based="false"`` accepted 0-based ids."""
from __future__ import annotations

import pytest

import gpu_sssp
from gpu_sssp.kernels.errors import OptionError
from gpu_sssp.pipeline.ingest import ingest

GR = "p sp 3 2\na 1 2 5\na 2 3 7\n"


@pytest.mark.parametrize("option", ["undirected", "zero_based"])
@pytest.mark.parametrize("value", ["no", "false", "yes", 2, 0.0, [False]])
def test_a_flag_that_is_not_true_or_false_is_refused(tmp_path, option, value):
    gr = tmp_path / "g.gr"
    gr.write_text(GR)
    with pytest.raises(OptionError, match=f"^{option} must be True or False, got "):
        gpu_sssp.load_graph(gr, **{option: value})
    with pytest.raises(OptionError, match=f"^{option} must be True or False"):
        ingest(gr, tmp_path / "g.parquet", **{option: value})
    assert not (tmp_path / "g.parquet").exists()


@pytest.mark.parametrize("value, arcs", [(False, 2), (0, 2), (None, 2), (True, 4), (1, 4)])
def test_true_false_0_1_are_taken(tmp_path, value, arcs):
    gr = tmp_path / "g.gr"
    gr.write_text(GR)
    assert gpu_sssp.load_graph(gr, undirected=value).m == arcs


def test_backend_gpu_without_a_gpu_names_the_backend(monkeypatch):
    """``solve(g, s, backend="gpu")`` and ``matrix(..., backend="gpu")`` without a GPU said
    "method 'hbf' needs a CUDA device" (the method auto would pick), a name never given."""
    import numpy as np

    from gpu_sssp.kernels import registry
    from gpu_sssp.kernels.errors import GPUUnavailableError

    monkeypatch.setattr(registry, "device_count", lambda: 0)
    g = gpu_sssp.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([5, 7]), 3)
    for call in (lambda: gpu_sssp.solve(g, [0], backend="gpu"), lambda: gpu_sssp.matrix(g, [0], [2], backend="gpu")):
        with pytest.raises(GPUUnavailableError, match=r"^backend='gpu' needs a CUDA device; none is visible here"):
            call()
