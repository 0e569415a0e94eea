"""The one place that imports the optional GPU stack (CuPy).

Nothing here runs at import time: ``device_count()`` answers 0 rather than raising
when CuPy, the driver or a device is missing, and it asks NVML first so that the
client process does not create a CUDA context just to count devices.
"""
from __future__ import annotations

import functools
import logging
import os

from gpu_sssp.kernels.errors import GPUUnavailableError  # noqa: F401  (raised here; defined with the others)

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _nvml_count() -> int | None:
    try:
        import pynvml  # provided by nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver
        return 0


def device_count() -> int:
    """Number of CUDA devices usable through CuPy here (0 when none or no CuPy)."""
    if os.environ.get("SSSP_DISABLE_GPU"):
        return 0
    try:
        import cupy  # noqa: F401
    except Exception:
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    count = _nvml_count()
    if count is None:
        try:
            import cupy

            count = int(cupy.cuda.runtime.getDeviceCount())
        except Exception:
            return 0
    if visible is not None and count:
        ids = [v for v in visible.split(",") if v.strip() not in ("", "-1")]
        count = min(count, len(ids))
    return count


def cupy():
    """Import and return CuPy, or raise :class:`GPUUnavailableError` naming why."""
    try:
        import cupy as cp
    except Exception as exc:
        raise GPUUnavailableError(
            f"CuPy is not importable ({exc}); install the 'gpu-cuda12' or 'gpu-cuda13' extra"
        ) from exc
    if device_count() == 0:
        raise GPUUnavailableError("no CUDA device is visible (CUDA_VISIBLE_DEVICES / driver)")
    return cp


def device_name(device_id: int | None = None) -> str:
    """Human name of the current (or given) CUDA device, e.g. 'NVIDIA H100 80GB HBM3'."""
    cp = cupy()
    return _device_name(cp.cuda.Device(device_id).id if device_id is not None else cp.cuda.Device().id)


@functools.lru_cache(maxsize=None)
def _device_name(dev_id: int) -> str:
    # cudaGetDeviceProperties takes about a millisecond; every solve names its device
    props = cupy().cuda.runtime.getDeviceProperties(dev_id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)
