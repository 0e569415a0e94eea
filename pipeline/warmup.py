"""Worker preload: load the CPU ``phast`` kernels in the background as a worker starts.

``dask worker --preload gpu_sssp.pipeline.warmup`` (local CPU clusters started by
``pipeline.cluster.start_cluster`` pass it themselves) calls :func:`dask_setup`, which
starts one daemon thread running ``kernels.cpu_phast.warm_up()`` and returns at once: the
worker registers with the scheduler without waiting, and Numba's one-time cost per
process (about a second: BENCHMARKS.md) overlaps the cluster's start, the client's plan,
the hierarchy build and the graph's loading.  A task that calls ``phast`` before the
thread is done waits on Numba's compiler lock, never compiles twice.  Nothing is warmed
where Numba or the contraction library is missing (then no CPU ``phast`` runs anyway), or
where ``SSSP_WARMUP=0``.
"""
from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)


def _warm() -> None:
    try:
        from gpu_sssp.kernels import cpu_phast, hierarchy

        if not hierarchy.library_available():
            return
        s = cpu_phast.warm_up()
        log.info("phast kernels loaded in %.2f s", s)
    except Exception as exc:  # a failed warm-up only loses its head start
        log.warning("phast warm-up failed: %s", exc)


def start() -> threading.Thread | None:
    """Start the warm-up thread (``None`` when switched off by ``SSSP_WARMUP=0``)."""
    if os.environ.get("SSSP_WARMUP", "1") == "0":
        return None
    t = threading.Thread(target=_warm, name="sssp-warm-up", daemon=True)
    t.start()
    return t


def dask_setup(worker=None) -> None:
    """Dask's preload hook."""
    start()
