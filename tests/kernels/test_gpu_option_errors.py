"""Every GPU method refuses an option it does not take as an ``OptionError`` (an
``SsspError``, still a ``TypeError``), as the CPU methods do; they raised bare
TypeErrors (a review, 2026-12-02)."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_unknown_options_are_option_errors():
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import OptionError
    from gpu_sssp.kernels.registry import get

    g = sssp.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([5, 5]), n=3)
    tried = []
    for name in sssp.available_methods():
        try:
            spec = get(name, "gpu")
        except Exception:
            continue
        if spec.backend != "gpu":
            continue
        with pytest.raises(OptionError):
            sssp.solve(g, [0], method=name, backend="gpu", foo=1)
        tried.append(name)
    assert "batched" in tried and "phast" in tried, tried
