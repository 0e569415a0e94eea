"""Shortest-path solvers on one device: CUDA kernels (CuPy) and the CPU reference.

Public interface: :func:`solve`, :func:`available_methods`, :func:`device_count`,
:class:`Result`, :class:`NegativeCycleError`.
"""
from gpu_sssp.kernels.registry import available_methods, device_count, get, register, solve
from gpu_sssp.kernels.result import DISTANCE_SCHEMA, STATS_SCHEMA, NegativeCycleError, Result
from gpu_sssp.kernels import methods as _methods  # noqa: F401  (registers GPU methods)

__all__ = [
    "solve",
    "available_methods",
    "device_count",
    "register",
    "get",
    "Result",
    "NegativeCycleError",
    "DISTANCE_SCHEMA",
    "STATS_SCHEMA",
]
