"""The device side of the public interface: what the other layers may ask of the GPU.

``pipeline`` uses these names (never ``kernels._gpu`` or ``kernels.gpu.loader``): to
name a worker's device, to upload a graph once when a worker takes it, and to give the
device memory back when a worker lets a graph go.  Every function here is safe to call
where no GPU can be used: it answers ``"cpu"``/``{}`` or does nothing.
"""
from __future__ import annotations

import logging

from gpu_sssp.kernels import _gpu

log = logging.getLogger(__name__)

device_count = _gpu.device_count
GPUUnavailableError = _gpu.GPUUnavailableError


def device_name(device_id: int | None = None) -> str:
    """The CUDA device's name (e.g. ``NVIDIA H200``); ``"cpu"`` where no GPU is usable."""
    if _gpu.device_count() == 0:
        return "cpu"
    return _gpu.device_name(device_id)


def device_info() -> dict:
    """``{"gpu", "cuda_runtime", "driver"}`` of the current device; empty without a GPU."""
    if _gpu.device_count() == 0:
        return {}
    cp = _gpu.cupy()
    info = {"gpu": _gpu.device_name(), "cuda_runtime": str(cp.cuda.runtime.runtimeGetVersion()),
            "driver": ""}
    try:
        v = int(cp.cuda.runtime.driverGetVersion())
        info["driver"] = f"CUDA {v // 1000}.{(v % 1000) // 10}"
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            info["driver"] = v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # the runtime's number is kept
        pass
    return info


def upload_graph(graph) -> None:
    """Put ``graph`` on the current device now (later solves reuse that copy)."""
    from gpu_sssp.kernels.gpu.loader import device_graph

    device_graph(graph)


def release_device_memory(graph=None) -> None:
    """Drop the device copies of ``graph`` (of every graph when None) and the memory
    pool's cached blocks.  Does nothing where no GPU is in use."""
    import sys

    if "cupy" not in sys.modules:  # nothing was ever put on a device in this process
        return
    try:
        from gpu_sssp.kernels.gpu import loader

        loader.forget_graphs(graph)
        _gpu.cupy().get_default_memory_pool().free_all_blocks()
    except Exception as exc:  # only memory is at stake
        log.debug("could not release device memory: %s", exc)
