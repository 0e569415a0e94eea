"""Fixtures shared by the kernel tests."""
from __future__ import annotations

import pytest

from gpu_sssp import kernels


@pytest.fixture(scope="module")
def cp():
    """CuPy, for GPU tests that drive the device directly; skips without a device."""
    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")
    import cupy

    return cupy
