"""Compile CUDA sources once per process and device; keep graphs resident on devices.

``load_module("hbf.cu", name_expressions=[...])`` reads ``kernels/cuda/hbf.cu`` with
``importlib.resources``, pastes every ``#include "X.cuh"`` of a header from the same
folder into the source text (so CuPy's on-disk compile cache keys on every change),
and returns a ``cupy.RawModule`` compiled for the current device.

``device_graph(graph)`` uploads a :class:`kernels.graph.Graph` to the current device
once and returns the same :class:`DeviceGraph` for every later solve; the bytes
needed are computed first and a graph that does not fit raises ``MemoryError`` naming
both figures.
"""
from __future__ import annotations

import functools
import logging
import re
import threading
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from gpu_sssp.kernels._gpu import cupy as _cupy

log = logging.getLogger(__name__)
_INCLUDE = re.compile(r'^\s*#include\s+"([A-Za-z0-9_\-]+\.cuh)"\s*$', re.M)
_lock = threading.Lock()
_modules: dict = {}
_graphs: dict = {}


def cuda_source(filename: str) -> str:
    """The text of ``kernels/cuda/<filename>`` with local headers pasted in."""
    root = resources.files("gpu_sssp.kernels") / "cuda"
    text = (root / filename).read_text()
    seen: set[str] = set()

    def paste(m):
        name = m.group(1)
        if name in seen:
            return ""
        seen.add(name)
        return _INCLUDE.sub(paste, (root / name).read_text())

    return _INCLUDE.sub(paste, text)


def load_module(filename: str, name_expressions=(), options=(), *, cooperative: bool = False):
    """A ``cupy.RawModule`` of ``kernels/cuda/<filename>`` for the current device."""
    cp = _cupy()
    dev = cp.cuda.Device().id
    key = (filename, tuple(name_expressions), tuple(options), cooperative, dev)
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            opts = ("--std=c++17", "-DSSSP_CUPY=1") + tuple(options)
            mod = cp.RawModule(code=cuda_source(filename), options=opts,
                               name_expressions=list(name_expressions) or None,
                               enable_cooperative_groups=cooperative)
            _modules[key] = mod
        return mod


@functools.lru_cache(maxsize=None)
def sm_count(dev_id: int) -> int:
    """Streaming multiprocessors of device ``dev_id`` (asked once: Device.attributes
    queries every attribute)."""
    return int(_cupy().cuda.Device(dev_id).attributes["MultiProcessorCount"])


_per_sm: dict = {}


def coop_blocks(kern, per_sm_limit=None, block: int = 256, smem: int = 0) -> int:
    """Blocks of a grid of ``kern`` (a ``cupy.RawKernel``) that are surely co-resident on
    the current device: SMs x min(``per_sm_limit``, blocks per SM from the occupancy
    calculator, which counts registers, static shared memory and ``smem`` bytes of dynamic
    shared memory per block).  Persistent kernels with a grid-wide barrier need every
    block resident.  Cached per kernel, block size, shared memory and device.
    """
    cp = _cupy()
    dev = cp.cuda.Device().id
    ptr = kern.kernel.ptr if hasattr(kern, "kernel") else kern.ptr
    key = (ptr, block, smem, dev)
    per_sm = _per_sm.get(key)
    if per_sm is None:
        try:
            from cupy.cuda import driver

            per_sm = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(ptr, block, smem))
        except Exception:  # older CuPy: estimate from the register count
            try:
                regs = max(1, int(kern.num_regs))
                per_sm = min(2048 // block, 65536 // (((regs + 7) // 8) * 8 * block),
                             (228 * 1024) // max(1, smem + 1024))
            except Exception:
                per_sm = 1
        per_sm = max(1, per_sm)
        _per_sm[key] = per_sm
    if per_sm_limit:
        per_sm = min(per_sm, int(per_sm_limit))
    return sm_count(dev) * max(1, per_sm)


def launch_cooperative(go, blocks: int, *, shrink: bool = True) -> int:
    """Run ``go(blocks)`` (a cooperative launch); when the device refuses the grid as too
    large (another context holds part of the SMs), halve it and retry.  Returns the blocks
    of the launch that went.  ``shrink=False`` re-raises instead (kernels whose work split
    depends on the grid size)."""
    while True:
        try:
            go(blocks)
            return blocks
        except Exception as exc:  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
            if not shrink or blocks <= 1 or "TOO_LARGE" not in str(exc).upper():
                raise
            blocks //= 2


@dataclass
class DeviceGraph:
    """A graph's CSR (and reverse CSR on demand) resident on one device."""

    n: int
    m: int
    indptr: object
    indices: object
    weights: object
    device: int
    fingerprint: str
    extra: dict = field(default_factory=dict)  # per-method derived arrays, cached

    def cached(self, key, build):
        """Per-graph derived device arrays (e.g. ELL layout), built once."""
        if key not in self.extra:
            self.extra[key] = build()
        return self.extra[key]


def bytes_needed(graph, *, extra_per_vertex: int = 0, extra_per_arc: int = 0) -> int:
    return (graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
            + graph.n * extra_per_vertex + graph.m * extra_per_arc)


# Work buffers a method keeps on a device between its calls (``phast``'s search arrays,
# which its kernel leaves at rest): one set per device, {device: (key, arrays, bytes)}.
# They are reclaimable: a method that needs room drops them first (:func:`check_fits`,
# :func:`free_bytes`), and they are dropped with the graph they belong to.  Dropping is
# safe while kernels that use them are still queued: their memory goes back to CuPy's
# pool, which hands it out again in stream order (all our kernels use one stream).
_scratch: dict = {}
_scratch_lock = threading.Lock()


def scratch(key):
    """The work arrays kept under ``key`` (``(graph fingerprint, ...)``) on the current
    device (a dict), or None when the device keeps none under that key."""
    dev = _cupy().cuda.Device().id
    with _scratch_lock:
        got = _scratch.get(dev)
    if got is None or got[0] != key:
        return None
    return got[1]


def keep_scratch(key, arrays: dict) -> dict:
    """Keep ``arrays`` on the current device under ``key`` (replacing what it kept)."""
    dev = _cupy().cuda.Device().id
    nbytes = int(sum(int(a.nbytes) for a in arrays.values()))
    with _scratch_lock:
        _scratch[dev] = (key, arrays, nbytes)
    return arrays


def scratch_bytes() -> int:
    """Bytes of the work arrays kept on the current device."""
    dev = _cupy().cuda.Device().id
    with _scratch_lock:
        got = _scratch.get(dev)
    return 0 if got is None else got[2]


def drop_scratch(fingerprint: str | None = None, *, here: bool = False) -> None:
    """Drop kept work arrays back into the memory pool: every device's (``here``: the
    current device's only), or only those of the graph ``fingerprint``."""
    dev_here = _cupy().cuda.Device().id if here else None
    with _scratch_lock:
        for dev in list(_scratch):
            if here and dev != dev_here:
                continue
            if fingerprint is None or _scratch[dev][0][0] == fingerprint:
                del _scratch[dev]


def free_bytes() -> int:
    """Device bytes available to a new allocation: free memory, the pool's free blocks
    and the reclaimable work arrays (:func:`scratch`)."""
    cp = _cupy()
    free, _total = cp.cuda.runtime.memGetInfo()
    return int(free) + int(cp.get_default_memory_pool().free_bytes()) + scratch_bytes()


def check_fits(graph, nbytes: int, what: str = "graph") -> None:
    """Raise ``MemoryError`` naming the bytes needed and free when ``nbytes`` does not fit
    (kept work arrays, :func:`scratch`, are dropped first when that makes it fit)."""
    cp = _cupy()
    free, total = cp.cuda.runtime.memGetInfo()
    pool_free = cp.get_default_memory_pool().free_bytes()
    if nbytes > free + pool_free and scratch_bytes():
        drop_scratch(here=True)
        pool_free = cp.get_default_memory_pool().free_bytes()
    if nbytes > free + pool_free:
        raise MemoryError(
            f"{what} {graph.name} needs {nbytes:,} bytes on GPU {cp.cuda.Device().id} but only "
            f"{free + pool_free:,} of {total:,} are free"
        )


def device_graph(graph) -> DeviceGraph:
    """Upload ``graph`` to the current device once; later calls return the same copy."""
    cp = _cupy()
    dev = cp.cuda.Device().id
    key = (graph.fingerprint, graph.meta.get("parallel_policy", "min"), dev)
    with _lock:
        dg = _graphs.get(key)
        if dg is not None:
            return dg
        check_fits(graph, bytes_needed(graph))
        dg = DeviceGraph(
            n=graph.n,
            m=graph.m,
            indptr=cp.asarray(graph.indptr),
            indices=cp.asarray(graph.indices.astype(np.int32, copy=False)
                               if graph.n < 2**31 else graph.indices),
            weights=cp.asarray(graph.weights),
            device=dev,
            fingerprint=graph.fingerprint,
        )
        _graphs[key] = dg
        return dg


def forget_graphs(graph=None) -> None:
    """Drop the resident copies of ``graph`` (of every graph when None), on every device,
    with the work arrays kept for it (:func:`drop_scratch`)."""
    drop_scratch(None if graph is None else graph.fingerprint)
    with _lock:
        if graph is None:
            _graphs.clear()
        else:
            for key in [k for k in _graphs if k[0] == graph.fingerprint]:
                del _graphs[key]
