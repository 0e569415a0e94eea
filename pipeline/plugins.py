"""Dask worker plugin that holds a study's graph on every worker (and its GPU).

``GraphPlugin(path, fingerprint)`` is registered once per graph with
``client.register_plugin``: the scheduler runs its ``setup`` on every worker present
and on every worker that joins or restarts later, so a graph is loaded once per
worker (and uploaded once per GPU) instead of being shipped with every task.  The
Parquet path must be readable by the workers under the same name: on a multi-node
cluster put it on a shared file system.
"""
from __future__ import annotations

import logging
import os
import threading

from distributed.diagnostics.plugin import WorkerPlugin

log = logging.getLogger(__name__)

_lock = threading.Lock()
# fingerprint -> Graph, per worker process (several threads of a worker share it)
_GRAPHS: dict = {}


def plugin_name(fingerprint: str) -> str:
    return f"sssp-graph-{fingerprint}"


def _load(path: str, fingerprint: str):
    from gpu_sssp.pipeline.graph import read_parquet

    with _lock:
        g = _GRAPHS.get(fingerprint)
        if g is not None:
            return g
        g = read_parquet(path)
        if g.fingerprint != fingerprint:
            raise ValueError(
                f"{path}: the graph on this worker has fingerprint {g.fingerprint}, the study expects "
                f"{fingerprint} (is the file the same on every node?)"
            )
        _GRAPHS[fingerprint] = g
        return g


def use_gpu(backend: str) -> bool:
    """Whether this process solves on a GPU for ``backend`` ("gpu", "cpu" or "auto")."""
    if backend == "cpu":
        return False
    from gpu_sssp import kernels

    return kernels.device_count() > 0


class GraphPlugin(WorkerPlugin):
    """Load a graph on a worker (and upload it to the worker's GPU) in ``setup``.

    Parameters
    ----------
    path : str
        Parquet edge list, readable by the workers.
    fingerprint : str
        ``Graph.fingerprint`` of that file; checked after loading.
    backend : {"auto", "gpu", "cpu"}
        ``auto`` and ``gpu`` upload the graph when the worker sees a CUDA device.
    hierarchy : bool
        Also load the graph's contraction hierarchy (``pipeline.hierarchy.load_hierarchy``,
        from the cache file the client wrote), for ``phast``.
    """

    #: registering it again (a second study of the same graph on a long-lived cluster)
    #: keeps the loaded graph instead of tearing it down and loading it again; workers
    #: that join or restart later still get it from the scheduler
    idempotent = True

    def __init__(self, path: str, fingerprint: str, backend: str = "auto", hierarchy: bool = False):
        self.hierarchy = hierarchy  # load the graph's cached contraction hierarchy (phast)
        self.path = os.fspath(path)
        self.fingerprint = fingerprint
        self.backend = backend
        self.name = plugin_name(fingerprint)
        self.graph = None
        self.device = "cpu"

    def setup(self, worker=None):
        self.graph = _load(self.path, self.fingerprint)
        if getattr(self, "hierarchy", False):
            from gpu_sssp.pipeline.hierarchy import load_hierarchy

            load_hierarchy(self.graph)  # once per worker process: read from the client's cache file
        if use_gpu(self.backend):
            from gpu_sssp import kernels

            kernels.upload_graph(self.graph)
            self.device = kernels.device_name()
        log.info("graph %s (%s) ready on %s (%s)", self.graph.name, self.fingerprint,
                 getattr(worker, "address", "?"), self.device)

    def teardown(self, worker=None):
        """Forget the graph: the host copy and its device copies (with the arrays the
        kernels derived from them, e.g. the batched kernel's layout) and the memory
        pool's free blocks, so a long-lived worker does not keep every graph it ever
        studied on its GPU."""
        from gpu_sssp import kernels

        with _lock:
            graph = _GRAPHS.pop(self.fingerprint, None)
        graph = self.graph if self.graph is not None else graph
        self.graph = None
        if graph is not None:
            kernels.release_device_memory(graph)
        log.info("graph %s released on %s", self.fingerprint, getattr(worker, "address", "?"))


def worker_graph(fingerprint: str, path: str | None = None):
    """The graph held by this worker's plugin (loaded now if the plugin has not run).

    Called inside tasks.  Falls back to loading ``path`` so that a task never fails
    because it raced a plugin registration.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
        plugin = worker.plugins.get(plugin_name(fingerprint))
        if plugin is not None and plugin.graph is not None:
            return plugin.graph
    except ValueError:  # not on a worker (local call)
        pass
    with _lock:
        g = _GRAPHS.get(fingerprint)
    if g is not None:
        return g
    if path is None:
        raise RuntimeError(f"graph {fingerprint} is not loaded on this worker and no path was given")
    return _load(path, fingerprint)
