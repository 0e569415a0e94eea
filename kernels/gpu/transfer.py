"""Large device-to-host copies at the link's speed.

``cupy.ndarray.get(out=numpy_array)`` into ordinary (pageable) memory runs at a few GB/s
when the destination is fresh: the driver stages through its own buffer and every
destination page faults on first touch, in one thread.  The 800 MB matrix of a
10,000 x 10,000 travel-time table took 235 ms that way on an H200 (3.4 GB/s).
:func:`to_host` instead copies in chunks through two reused pinned buffers: the DMA
engine fills one while host threads copy the other into the destination (touching its
pages in parallel; NumPy's copy releases the GIL); :func:`host_empty` gives that
destination transparent huge pages.
"""
from __future__ import annotations

import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpu_sssp.kernels._gpu import cupy as _cupy
from gpu_sssp.kernels.memory import check_host_memory

#: bytes per chunk; below ``4 * CHUNK`` a copy goes the plain way
CHUNK = 1 << 26
_local = threading.local()


def _threads() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(16, cpus))


def host_empty(shape, dtype) -> np.ndarray:
    """An uninitialised host array for a large copy's destination, backed by anonymous
    memory advised to use transparent huge pages (one page fault per 2 MB instead of
    per 4 KB, where the kernel allows it); a plain ``np.empty`` below 64 MB or where
    ``madvise`` is not offered.  An array larger than the memory available is refused
    first (``kernels.memory.check_host_memory``)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    check_host_memory(nbytes, f"a host array of shape {tuple(shape)} ({dtype})", "solve fewer sources at a time")
    if nbytes < (1 << 26) or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.empty(shape, dtype=dtype)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        mm.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # not offered by this kernel: ordinary pages
        pass
    return np.frombuffer(mm, dtype=dtype).reshape(shape)


def _state(chunk: int):
    st = getattr(_local, "state", None)
    if st is None or st[0] != chunk:
        cp = _cupy()
        bufs = []
        for _ in range(2):
            mem = cp.cuda.alloc_pinned_memory(chunk)
            bufs.append(np.frombuffer(mem, dtype=np.uint8, count=chunk))
        st = (chunk, bufs, ThreadPoolExecutor(_threads(), thread_name_prefix="d2h"))
        _local.state = st
    return st


def to_host(src, out: np.ndarray, *, chunk: int = CHUNK) -> np.ndarray:
    """Copy the C-contiguous device array ``src`` into the C-contiguous host array ``out``
    (same number of bytes) after the work queued on the current stream; return ``out``."""
    cp = _cupy()
    if not (src.flags.c_contiguous and out.flags.c_contiguous) or src.nbytes != out.nbytes:
        raise ValueError("to_host needs C-contiguous arrays of the same size")
    nbytes = int(src.nbytes)
    if nbytes < 4 * chunk:
        src.get(out=out.reshape(src.shape) if out.shape != src.shape else out)
        return out
    _, bufs, pool = _state(chunk)
    s8 = src.reshape(-1).view(cp.uint8)
    d8 = out.reshape(-1).view(np.uint8)
    stream = cp.cuda.get_current_stream()
    nthreads = pool._max_workers
    done = [cp.cuda.Event(disable_timing=True), cp.cuda.Event(disable_timing=True)]
    busy = [[], []]  # host copies still reading each buffer
    nch = (nbytes + chunk - 1) // chunk

    def enqueue(c):
        j = c % 2
        for f in busy[j]:
            f.result()
        busy[j] = []
        lo, hi = c * chunk, min(nbytes, (c + 1) * chunk)
        dst = bufs[j][:hi - lo]
        cp.cuda.runtime.memcpyAsync(dst.ctypes.data, s8.data.ptr + lo, hi - lo,
                                    cp.cuda.runtime.memcpyDeviceToHost, stream.ptr)
        done[j].record(stream)

    enqueue(0)
    for c in range(nch):
        if c + 1 < nch:
            enqueue(c + 1)  # the DMA of the next chunk runs while this one is copied out
        j = c % 2
        done[j].synchronize()
        lo, hi = c * chunk, min(nbytes, (c + 1) * chunk)
        step = (hi - lo + nthreads - 1) // nthreads
        busy[j] = [pool.submit(np.copyto, d8[a:min(hi, a + step)], bufs[j][a - lo:min(hi, a + step) - lo])
                   for a in range(lo, hi, step)]
    for fs in busy:
        for f in fs:
            f.result()
    return out


def to_device_async(host: np.ndarray):
    """``(device array, keep)``: ``host`` copied to the current device without the host
    waiting for the stream.

    ``cupy.asarray`` of pageable memory is a synchronous copy on the stream: it waits for
    every kernel queued before it.  A solve that enqueues its work behind another call's
    kernels (``kernels.solve(turn=...)``) would stall there, holding the GPU turn, and
    launch only once the GPU had run dry.  Here the bytes go through pinned memory and an
    asynchronous copy; ``keep`` (the pinned buffer) must stay referenced until the stream
    has passed the copy (e.g. until the caller has synchronised on a later event).
    """
    cp = _cupy()
    host = np.ascontiguousarray(host)
    mem = cp.cuda.alloc_pinned_memory(max(host.nbytes, 1))
    staged = np.frombuffer(mem, dtype=host.dtype, count=host.size).reshape(host.shape)
    staged[...] = host
    dev = cp.empty(host.shape, dtype=host.dtype)
    if host.size:
        dev.set(staged, stream=cp.cuda.get_current_stream())
    return dev, mem

