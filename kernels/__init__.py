"""Shortest-path solvers on one device: CUDA kernels (CuPy) and the CPU reference.

Public interface: :func:`solve`, :func:`available_methods`, :func:`device_count`,
:class:`Result`, :class:`NegativeCycleError`, :class:`Graph` (the CSR graph every solver
takes), and the device helpers of :mod:`kernels.device` that the other layers use.
"""
from gpu_sssp.kernels.device import device_info, device_name, release_device_memory, upload_graph
from gpu_sssp.kernels.graph import Graph
from gpu_sssp.kernels.registry import available_methods, device_count, get, register, solve
from gpu_sssp.kernels.result import (DISTANCE_SCHEMA, MATRIX_LONG_SCHEMA, MATRIX_SCHEMA, STATS_SCHEMA,
                                      NegativeCycleError, Result)
from gpu_sssp.kernels import methods as _methods  # noqa: F401  (registers GPU methods)

__all__ = [
    "solve",
    "available_methods",
    "device_count",
    "device_name",
    "device_info",
    "upload_graph",
    "release_device_memory",
    "Graph",
    "register",
    "get",
    "Result",
    "NegativeCycleError",
    "DISTANCE_SCHEMA",
    "STATS_SCHEMA",
    "MATRIX_SCHEMA",
    "MATRIX_LONG_SCHEMA",
]
