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
import time

import numpy as np

from distributed.diagnostics.plugin import WorkerPlugin

from gpu_sssp.kernels.errors import SsspError, counted, render

log = logging.getLogger(__name__)

_lock = threading.Lock()
# fingerprint -> Graph, per worker process (several threads of a worker share it)
_GRAPHS: dict = {}


def plugin_name(fingerprint: str, hierarchy: bool = False) -> str:
    """The worker plugin's name: one per graph, and a second one (``-ch``) for a study
    that loads the graph's contraction hierarchy too.  A registration is idempotent (a
    name the scheduler has keeps its first plugin), so a ``phast`` study of a graph that a
    study without the hierarchy registered first (at once, or kept with
    ``sssp.study.keep-graph``) would otherwise get a plugin that never loads it, and
    every worker would build the hierarchy itself in its first task."""
    return f"sssp-graph-{fingerprint}" + ("-ch" if hierarchy else "")


def _plugins(worker, fingerprint: str) -> list:
    """This worker's graph plugins of ``fingerprint`` (the hierarchy's first)."""
    return [p for p in (worker.plugins.get(plugin_name(fingerprint, h)) for h in (True, False))
            if p is not None]


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


class WorkerVersionError(RuntimeError):
    """A worker whose gpu-sssp is another version than the study's client's."""


#: the logger of a graph plugin's failure to load (its traceback): a local cluster's
#: workers silence it (``pipeline.cluster.dask_setup``), as the study's client says it
#: in one line and logs the traceback with ``-v``; a real cluster's workers keep it
load_log = logging.getLogger(__name__ + ".load")


def describe_failure(exc: BaseException) -> str:
    """A plugin's load error as one line: ``Type: message`` (a ``MemoryError`` says that
    the worker is out of memory for the graph).  Its option names stay marked
    (``kernels.errors.raw``): the study's client renders them for its caller."""
    from gpu_sssp.kernels.errors import raw

    text = " ".join(raw(exc).split())
    kind = type(exc).__name__
    why = f"{kind}: {text}" if text else kind
    if isinstance(exc, MemoryError):
        why = f"out of memory for the graph ({why})"
    return why


class WorkerGraphError(SsspError, RuntimeError):
    """Workers of a study that cannot load its graph (or its contraction hierarchy) in
    their graph plugin: the file unreadable or damaged there, no memory for it, another
    gpu-sssp.  One line naming each worker, the file and the reason, exit status 1 (the
    study folder records the failure and resumes once the workers are fixed).

    ``failures``: ``[(worker, reason), ...]``; ``path``: the graph file (and
    ``hierarchy``: the hierarchy file, for ``phast``) the workers load; ``of``: how many
    workers the study had; ``tracebacks``: ``{worker: traceback text}`` of the loads
    (the client logs them at INFO, ``sssp -v``; not in the line)."""

    exit_code = 1

    def __init__(self, failures, path: str = "", hierarchy: str | None = None, of: int | None = None,
                 tracebacks: dict | None = None):
        self._failures = [(str(w), str(r)) for w, r in failures]  # (reasons with their option marks)
        self.path = str(path or "")
        self.hierarchy = hierarchy if isinstance(hierarchy, str) else None
        self.of = of
        self.tracebacks = {str(w): str(t) for w, t in (tracebacks or {}).items() if t}
        super().__init__(str(self))

    def __str__(self) -> str:
        from gpu_sssp.pipeline.fsnames import shown

        n = len(self._failures)
        # (escaped where a name holds a line break: print_error folds one into a space)
        files = shown(self.path) + (f" and its hierarchy {shown(self.hierarchy)}" if self.hierarchy else "")
        # workers with the same reason are named together
        by: dict = {}
        for w, r in self._failures:
            by.setdefault(r, []).append(w)
        named = "; ".join(f"{', '.join(ws[:4])}{f' and {len(ws) - 4} more' if len(ws) > 4 else ''}: {r}"
                          for r, ws in list(by.items())[:3])
        if len(by) > 3:
            named += f"; and {counted(len(by) - 3, 'other reason')}"
        of = f" of {self.of}" if self.of else ""
        noun = "worker" if (self.of or n) == 1 else "workers"  # 1 worker, 1 of 2 workers, 1 of 1 worker
        return f"{n}{of} {noun} cannot load the study's graph {files}: {named}"

    def __reduce__(self):
        return (type(self), (self._failures, self.path, self.hierarchy, self.of, self.tracebacks))

    @property
    def failures(self) -> list:
        """``[(worker, reason), ...]``, the reasons in the caller's words."""
        return [(w, render(r)) for w, r in self._failures]


def _check_version(want: str | None) -> None:
    """Raise :class:`WorkerVersionError` when this process's gpu-sssp is not ``want``."""
    if not want:
        return
    from gpu_sssp.pipeline.cluster import _gpu_sssp_version, _other_version

    mine = _gpu_sssp_version()
    if _other_version(mine, want):
        raise WorkerVersionError(f"gpu-sssp {mine} on this worker, the study's client has {want}: start "
                                 "every worker in the client's Python environment")


def use_gpu(backend: str) -> bool:
    """Whether this process solves on a GPU for ``backend`` ("gpu", "cpu" or "auto")."""
    if backend == "cpu":
        return False
    from gpu_sssp import kernels

    return kernels.device_count() > 0


class GraphPlugin(WorkerPlugin):
    """Load a graph on a worker (and upload it to the worker's GPU) in ``setup``.

    ``setup`` returns at once and does the work in a thread of its own, so that
    registering the plugin does not wait for the slowest worker, the worker's event
    loop stays free (heartbeats) and each worker starts on its first task as soon as
    it is ready itself; a task waits for the load (:func:`worker_graph`) and raises its
    error if it failed.  On a GPU the kernels are compiled (or read from CuPy's on-disk
    cache, ``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``) in a second thread
    while the hierarchy loads, then one warm-up solve of one source prepares the
    method's device arrays, so that the first batch pays none of it.  What each step
    took is kept in :attr:`timings` (the study reports it as start-up).

    Parameters
    ----------
    path : str
        Parquet edge list, readable by the workers.
    fingerprint : str
        ``Graph.fingerprint`` of that file; checked after loading.
    backend : {"auto", "gpu", "cpu"}
        ``auto`` and ``gpu`` upload the graph when the worker sees a CUDA device.
    hierarchy : bool or str
        Also load the graph's contraction hierarchy, for ``phast``: from the cache file
        the client wrote (a path; ``True``: the default ``<path>.ch.npz``).  Workers never
        build it (``pipeline.hierarchy.load_hierarchy(build=False)``).
    method : str, optional
        The study's method (``auto`` decided for ``unit`` sources, as the tasks decide
        it): warmed up in ``setup``.  ``None``: no warm-up.
    unit : int
        The study's batch size.
    hierarchy_key : str, optional
        The key of the hierarchy arrays the client checked or built
        (``pipeline.hierarchy.vouched``): a file with these verified checksums is not
        checked again for covering the graph (``kernels.hierarchy.check_covers``).
    version : str, optional
        The client's gpu-sssp version: a worker with another one does not load the graph
        (its tasks raise instead of solving batches with other code; "unknown" on either
        side, a checkout on ``PYTHONPATH``, is not compared).  ``None``: not checked.
    """

    #: registering it again (a second study of the same graph on a long-lived cluster)
    #: keeps the loaded graph instead of tearing it down and loading it again; workers
    #: that join or restart later still get it from the scheduler
    idempotent = True

    def __init__(self, path: str, fingerprint: str, backend: str = "auto", hierarchy=False,
                 method: str | None = None, unit: int = 1, hierarchy_key: str | None = None,
                 version: str | None = None):
        self.version = version
        self.hierarchy = hierarchy  # load the graph's cached contraction hierarchy (phast)
        self.hierarchy_key = hierarchy_key
        self.path = os.fspath(path)
        self.fingerprint = fingerprint
        self.backend = backend
        self.method = method
        self.unit = int(unit)
        self.name = plugin_name(fingerprint, bool(hierarchy))
        self.graph = None
        self.device = "cpu"
        self.timings: dict = {}
        self._ready = None
        self._error = None

    def __getstate__(self):  # sent to the scheduler and the workers: no thread state
        state = dict(self.__dict__)
        state.update(graph=None, _ready=None, _error=None, timings={})
        for key in ("_worker", "_traceback"):
            state.pop(key, None)
        return state

    def setup(self, worker=None):
        self._ready = threading.Event()
        self.timings = {"setup_at": time.time()}
        threading.Thread(target=self._load, args=(worker,), name=f"sssp-load-{self.fingerprint[:8]}",
                         daemon=True).start()

    def wait(self, timeout: float | None = None):
        """The loaded graph, once ``setup``'s thread is done (its error raised)."""
        if self._ready is None:
            return None
        self._ready.wait(timeout)
        if self._error is not None:
            raise self._error
        return self.graph

    def failure(self) -> dict | None:
        """``{"worker", "reason", "traceback"}`` of a load that failed, else None."""
        if self._error is None:
            return None
        return {"worker": getattr(self, "_worker", "?"), "reason": describe_failure(self._error),
                "traceback": getattr(self, "_traceback", "")}

    def failure_error(self) -> "WorkerGraphError":
        """The :class:`WorkerGraphError` a task of this worker raises where the load
        failed (:func:`worker_graph`): this worker, the file and the reason."""
        f = self.failure() or {"worker": "?", "reason": "?"}
        return WorkerGraphError([(f["worker"], f["reason"])], self.path, self.hierarchy,
                                tracebacks={f["worker"]: f.get("traceback") or ""})

    def _load(self, worker):
        tm = self.timings
        t0 = time.perf_counter()
        try:
            _check_version(getattr(self, "version", None))
            graph = _load(self.path, self.fingerprint)
            tm["graph_load_s"] = time.perf_counter() - t0
            gpu = use_gpu(self.backend)
            compiler = None
            if gpu and self.hierarchy:
                compiler = threading.Thread(target=self._compile, args=(graph,), daemon=True)
                compiler.start()
            if self.hierarchy:
                from gpu_sssp.pipeline.hierarchy import load_hierarchy, vouch

                t = time.perf_counter()
                vouch(self.fingerprint, getattr(self, "hierarchy_key", None))
                hpath = self.hierarchy if isinstance(self.hierarchy, str) else None
                load_hierarchy(graph, hpath, build=False)  # once per worker process
                tm["hierarchy_load_s"] = time.perf_counter() - t
            if gpu:
                from gpu_sssp import kernels

                t = time.perf_counter()
                kernels.upload_graph(graph)
                self.device = kernels.device_name()
                tm["upload_s"] = time.perf_counter() - t
            if compiler is not None:
                t = time.perf_counter()
                compiler.join()
                tm["compile_wait_s"] = time.perf_counter() - t
            if self.method is not None:
                t = time.perf_counter()
                tm["warm_method"] = self._warm(graph)
                tm["warm_s"] = time.perf_counter() - t
            self.graph = graph
        except BaseException as exc:  # raised again by the tasks that wait (wait())
            import traceback

            self._error = exc
            self._worker = _worker_label(worker)
            self._traceback = "".join(traceback.format_exception(exc))
            load_log.error("graph %s (%s) could not be loaded on %s: %s", self.fingerprint, self.path,
                           self._worker, render(describe_failure(exc)), exc_info=exc)
        finally:
            tm["setup_s"] = time.perf_counter() - t0
            tm["ready_at"] = time.time()
            self._ready.set()
        if self._error is None:
            log.info("graph %s (%s) ready on %s (%s) in %.2f s", graph.name, self.fingerprint,
                     getattr(worker, "address", "?"), self.device, tm["setup_s"])

    def _compile(self, graph):
        t = time.perf_counter()
        try:
            from gpu_sssp.kernels.gpu import phast

            phast.load_kernels(graph)
        except Exception as exc:  # the warm-up solve (or the first batch) compiles and reports
            log.debug("phast kernels not compiled ahead: %s", exc)
        self.timings["compile_s"] = time.perf_counter() - t

    def _warm(self, graph) -> str | None:
        """One solve with the study's method (stats only), its statistics encoded as a
        batch file would be: compiles what is left, loads Numba's compiled sweep on
        CPUs, builds the method's device arrays, sets Parquet's writer up.  ``phast`` on a
        GPU solves one whole batch (``unit`` sources spread over the graph: its kernel
        variant, its kept work arrays at the study's size, CuPy's gather kernels; 4-15 ms
        of kernel time on NY or FLA, where the first batch of a study paid 80 ms more than
        the next ones); every other method one source."""
        from gpu_sssp import kernels
        from gpu_sssp.kernels.registry import resolve_backend
        from gpu_sssp.pipeline.study.task import _solve_turn, _study_method

        try:
            method, backend = _study_method(graph, self.method, self.backend, self.unit)
            turn = _solve_turn(method, backend)
            on_gpu = resolve_backend(method, backend) == "gpu"
            k = min(self.unit, graph.n) if (method == "phast" and on_gpu) else 1
            sources = np.unique(np.linspace(0, graph.n - 1, max(1, k)).astype(np.int64))
            res = kernels.solve(graph, sources, method=method, backend=backend, distances=False, turn=turn)
            self.timings["warm_sources"] = int(len(sources))
            # the first batch's statistics file then pays no Parquet set-up either
            from gpu_sssp.pipeline.study.task import STATS_PARQUET, STUDY_KEY
            from gpu_sssp.pipeline.writers import encode_parquet

            encode_parquet(res.stats_table(graph.id_base, worker="warm-up", for_file=True), **STATS_PARQUET,
                           key_value_metadata={STUDY_KEY: "warm-up"})
            return method
        except ImportError:  # a dependency missing from this worker's environment (scipy):
            # every batch would fail the same way, and its retries ended the study with a
            # traceback (also when the worker joined mid-study): a load failure, so that
            # the worker is set aside with a note naming it
            raise
        except Exception as exc:  # not fatal: the batches report what is wrong
            log.warning("warm-up solve on %s failed: %s", graph.name, exc)
            return None

    def teardown(self, worker=None):
        """Forget the graph: the host copy and its device copies (with the arrays the
        kernels derived from them, e.g. the batched kernel's layout) and the memory
        pool's free blocks, so a long-lived worker does not keep every graph it ever
        studied on its GPU."""
        from gpu_sssp import kernels

        if self._ready is not None:
            self._ready.wait()  # the loading thread holds the graph until it is done
        with _lock:
            graph = _GRAPHS.pop(self.fingerprint, None)
        graph = self.graph if self.graph is not None else graph
        self.graph = None
        if graph is not None:
            kernels.release_device_memory(graph)
        log.info("graph %s released on %s", self.fingerprint, getattr(worker, "address", "?"))


async def wait_ready(fingerprint: str, timeout: float, dask_worker=None) -> bool:
    """Wait (in the worker's event loop, without blocking it) until this worker's graph
    plugin is done loading; True when it is ready (or the worker has no such plugin to
    wait for), False after ``timeout`` seconds or when its loading failed (the tasks
    then raise its error).  For ``client.run``: :func:`pipeline.study.run.run_study`
    starts the batches once every worker is ready."""
    import asyncio

    if dask_worker is None:
        return True
    end = time.monotonic() + float(timeout)
    for plugin in _plugins(dask_worker, fingerprint):
        ready = getattr(plugin, "_ready", None)
        if ready is None:
            continue
        while not ready.is_set():
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(0.002)
        if getattr(plugin, "_error", None) is not None:
            return False
    return True


def _worker_label(worker) -> str:
    """``name (address)`` of a Dask worker (its address alone where the name is it)."""
    if worker is None:
        return "?"
    addr = str(getattr(worker, "address", "?"))
    name = getattr(worker, "name", None)
    name = str(name) if name is not None else ""
    return f"{name} ({addr})" if name and name != addr else addr


def load_failure(fingerprint: str, dask_worker=None) -> dict | None:
    """Why this worker's graph plugin of ``fingerprint`` failed to load
    (:meth:`GraphPlugin.failure`), None where it did not (or is still loading); for
    ``client.run`` (:func:`pipeline.study.run.wait_for_workers`)."""
    if dask_worker is None:
        return None
    for plugin in _plugins(dask_worker, fingerprint):
        ready = getattr(plugin, "_ready", None)
        if ready is not None and ready.is_set() and getattr(plugin, "_error", None) is not None:
            got = plugin.failure()
            got["worker"] = _worker_label(dask_worker)
            return got
    return None


def retry_failed_load(fingerprint: str, hierarchy: bool, dask_worker=None) -> bool:
    """Load this worker's graph plugin (``plugin_name(fingerprint, hierarchy)``) again
    where its load has failed: a registration of a plugin the scheduler holds already
    is skipped (idempotent), so a worker whose load failed for an earlier study kept
    that error for every later one, also once its cause was fixed.  True where it
    started a new load (for ``client.run``, :func:`pipeline.study.run.register_graph`)."""
    if dask_worker is None:
        return False
    plugin = dask_worker.plugins.get(plugin_name(fingerprint, hierarchy))
    ready = getattr(plugin, "_ready", None)
    if plugin is None or ready is None or not ready.is_set() or getattr(plugin, "_error", None) is None:
        return False
    plugin._error = None
    plugin.graph = None
    plugin.setup(dask_worker)
    return True


def worker_startup(fingerprint: str, dask_worker=None) -> dict:
    """The start-up timings of this worker's graph plugin (for ``client.run``)."""
    if dask_worker is None:
        return {}
    name = str(dask_worker.name) if dask_worker.name is not None else str(dask_worker.address)
    found = _plugins(dask_worker, fingerprint)
    if not found:
        return {"worker": name}
    plugin = max(found, key=lambda p: getattr(p, "timings", {}).get("setup_at", 0.0))  # the latest
    return dict(getattr(plugin, "timings", {}), device=getattr(plugin, "device", "cpu"), worker=name)


def worker_graph(fingerprint: str, path: str | None = None):
    """The graph held by this worker's plugin (loaded now if the plugin has not run).

    Called inside tasks.  Falls back to loading ``path`` so that a task never fails
    because it raced a plugin registration.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
        found = _plugins(worker, fingerprint)
        for plugin in found:  # the hierarchy's plugin first: it attaches the hierarchy to the graph
            if plugin.graph is None and getattr(plugin, "_ready", None) is not None:
                try:
                    plugin.wait()  # setup's thread is loading it
                except BaseException as exc:  # its load failed: one line naming this worker and why
                    if getattr(plugin, "_error", None) is exc:
                        raise plugin.failure_error() from exc
                    raise
        for plugin in found:
            if plugin.graph is not None:
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
