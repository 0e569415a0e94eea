"""Running a study on a Dask client: the graph's worker plugin, one task per batch, the
journal kept as batches finish."""
from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
import uuid

from gpu_sssp.kernels.errors import counted, opt, render
from gpu_sssp.pipeline.config import setting
from gpu_sssp.pipeline.dashboard import REPORTS
from gpu_sssp.pipeline.study import matrix as _matrix
from gpu_sssp.pipeline.study.folder import Study
from gpu_sssp.pipeline.study.plan import StudyError, StudyPlan, workers_backend
from gpu_sssp.pipeline.study.task import solve_chunk_task

log = logging.getLogger(__name__)


def _task_kwargs(plan: StudyPlan, backend: str, retries: int | None):
    """``(retries, backend, keyword arguments of every task)``."""
    retries = int(setting("study.retries", retries))
    fsync = bool(setting("study.fsync", None, default=True))
    method = plan.algorithm
    if method != "auto":
        from gpu_sssp.kernels.registry import backends_of

        # a method on one backend runs there; one on several (phast) where asked
        on = backends_of(method)
        if backend not in on:
            backend = on[0] if len(on) == 1 else "auto"
    kw = dict(fingerprint=plan.graph.fingerprint, graph_path=plan.graph_path, method=method,
              backend=backend, outputs=plan.outputs, distance_form=plan.distance_form,
              out=os.fspath(plan.out.resolve()), fsync=fsync, unit=plan.batch_size, study=plan.study_id,
              **_matrix.task_options(plan))
    return retries, kw


def submit_chunks(client, plan: StudyPlan, chunks, *, prefix: str = "sssp", backend: str = "auto",
                  retries: int | None = None, report: str | None = None):
    """Submit one task per chunk of consecutive batches; return ``{future: chunk}``.

    Tasks are not pinned to workers (a dead worker's chunks go elsewhere); keys are
    ``<prefix>-batch-<first>-<last>-<study id>`` (:meth:`StudyPlan.chunk_keys`).  The
    chunks of one call go to the scheduler in one message (``client.map``).

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Its ``graph_path`` must already be set (see :meth:`Study.start`).
    chunks : list of list of int
        Batch indices, each list consecutive (:class:`pipeline.study.schedule.ChunkSchedule`).
    prefix : str
        The method's name, for the keys (what the dashboard shows).
    backend : {"auto", "gpu", "cpu"}
        Backend the tasks ask for; ignored when the plan names an algorithm, whose
        own backend is used so that a method never runs on the wrong device.
    retries : int, optional
        Retries per task; default from dask config ``sssp.study.retries``.  Whether
        workers fsync their files comes from ``sssp.study.fsync`` (default on).
    report : str, optional
        Dask event topic each task reports its result on as well (:class:`_Reports`).
    """
    chunks = [[int(i) for i in c] for c in chunks if len(c)]
    if not chunks:
        return {}
    retries, kw = _task_kwargs(plan, backend, retries)
    if report:
        kw["report"] = report
    keys = plan.chunk_keys(chunks, prefix)
    futs = client.map(solve_chunk_task, chunks, [[plan.batches[i] for i in c] for c in chunks],
                      key=keys, pure=False, retries=retries,
                      priority=chunk_priorities(plan, chunks, keys, start=_virtual_start(client)), **kw)
    return dict(zip(futs, chunks))


def chunk_priorities(plan: StudyPlan, chunks, keys, *, start: int = 0):
    """Dask priorities of a run's tasks, for studies that share a cluster (fair queuing
    by work): each chunk's is minus ``start`` plus the work its run submitted before it
    (sources x the graph's arcs), so that the scheduler hands a free worker thread the
    task of the run that has had the least work since it joined.

    ``start`` (:func:`_virtual_start`) is where the runs already on the cluster are: the
    least work any of them has had.  A run that joins starts level with them and they
    take turns from then on: a small study started during a long one no longer waits
    for that one's end (it waited for all of its queued tasks, and counted the wait as
    its workers' idle time), and a long one started late does not hold back one nearly
    done until it has caught up.  One study alone runs its chunks in order, as before
    (the priorities decrease along them).  Other Dask work at the default priority 0
    goes before a study's tasks.  Returned as a callable (Dask applies it to each key on
    the scheduler): a bound ``dict.get``, which the scheduler unpickles without
    gpu_sssp."""
    per_source = max(1, int(plan.graph.m))
    prio: dict = {}
    done = int(start)
    for key, chunk in zip(keys, chunks):
        prio[key] = -done
        done += per_source * sum(len(plan.batches[i]) for i in chunk)
    return prio.get


def _virtual_start(client) -> int:
    """The least work any run on the cluster has had: the smallest ``-priority`` among the
    unfinished tasks of studies (:func:`chunk_priorities`), 0 when there are none (or
    the scheduler cannot say).  Sent by value: the scheduler needs no gpu_sssp."""
    def on_scheduler(dask_scheduler=None):
        least = None
        for ts in dask_scheduler.tasks.values():
            if ts.state not in ("waiting", "queued", "no-worker", "processing") or not ts.priority:
                continue
            key = ts.key
            if not (isinstance(key, str) and "-batch-" in key and (ts.annotations or {}).get("priority") is not None):
                continue
            work = ts.priority[0]  # minus the priority the run gave it
            least = work if least is None else min(least, work)
        return least or 0

    try:
        return max(0, int(client.run_on_scheduler(on_scheduler)))
    except Exception as exc:  # best effort: a run then starts at 0
        log.debug("the cluster's studies' work not asked: %s", exc)
        return 0


def submit_batches(client, plan: StudyPlan, indices, *, backend: str = "auto", retries: int | None = None):
    """Submit one task per batch index (a chunk of one); return ``{future: [index]}``."""
    return submit_chunks(client, plan, [[int(i)] for i in indices], backend=backend, retries=retries)


def task_prefix(plan: StudyPlan, devices=None) -> str:
    """The method a study's batches run, for its task keys: the named one, or what
    ``auto`` picks for one batch on the workers' devices (``sssp`` when unsure)."""
    if plan.algorithm != "auto":
        return plan.algorithm
    backend = workers_backend(devices)
    if backend is None:
        return "sssp"
    try:
        from gpu_sssp.kernels import auto

        return auto.choose(plan.graph, int(plan.batch_size or 1), backend)
    except Exception:
        return "sssp"


def chunk_cap(plan: StudyPlan) -> int | None:
    """Most batches in one chunk: unbounded for statistics; with distance outputs (or a
    travel-time matrix), what keeps a chunk's distances in memory below
    ``sssp.study.chunk-bytes`` (default 2 GB; at least one batch)."""
    targets = getattr(plan, "targets", None)
    if targets is None and not ({"distances", "predecessors"} & set(plan.outputs)):
        return None
    limit = float(setting("study.chunk-bytes", None, default=2e9))
    if targets is not None:  # a matrix study: a batch's rows hold the targets only
        per_batch = max(1, int(plan.batch_size or 1) * int(targets.count) * 8)
    else:
        per_batch = max(1, int(plan.batch_size or 1) * plan.graph.n * (16 if "predecessors" in plan.outputs else 8))
    return max(1, int(limit // per_batch))


def register_graph(client, plan: StudyPlan, backend: str = "auto", devices=None, *,
                   free_if_lost: bool = False) -> dict:
    """Register the graph's worker plugin (runs now on every worker, and on restarts).

    Registering a plugin rather than scattering the graph means a worker that
    restarts or joins later loads the graph too.  Where the study solves with ``phast``,
    the client first builds (or loads) the hierarchy and writes its cache file beside
    the Parquet file the workers read (``pipeline.hierarchy.place_for_workers``); the
    workers load that file and never build one.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Gives the Parquet path the workers read and the fingerprint they check.
    backend : {"auto", "gpu", "cpu"}
        Passed to :class:`pipeline.plugins.GraphPlugin`.
    devices : list of str, optional
        The workers' devices (``describe_cluster``), for the task prefix.
    free_if_lost : bool
        The run unregisters the plugin at its end: the scheduler does it too should
        this client leave without ending the run (:func:`graph_users`).

    Returns
    -------
    dict
        ``client_hierarchy_s`` (the hierarchy's load or build on the client),
        ``hierarchy_file`` (what the workers load, or None), ``register_s``, ``prefix``,
        ``user`` (this run's use of the graph on the scheduler, for :func:`forget_graph`).
    """
    from gpu_sssp.pipeline.cluster import _gpu_sssp_version
    from gpu_sssp.pipeline.hierarchy import place_for_workers, prepare_study, vouched
    from gpu_sssp.pipeline.plugins import GraphPlugin, retry_failed_load

    t0 = time.perf_counter()
    devices = list(devices or [])
    decide = backend
    if backend == "auto":  # an attached cluster: what its workers are decides
        decide = workers_backend(devices) or "auto"
    h = prepare_study(plan.graph, plan.sources.count, decide, plan.algorithm)
    hfile = os.fspath(place_for_workers(h, plan.graph, plan.graph_path)) if h is not None else None
    t1 = time.perf_counter()
    user = f"{plan.study_id}-{uuid.uuid4().hex[:12]}"
    registered: list = []
    try:  # counted before the plugin exists: a study ending meanwhile does not unregister it
        registered = graph_users(client, plan.graph.fingerprint, user, add=True, free_if_lost=free_if_lost) or []
    except Exception as exc:  # best effort: the study runs without the count
        log.debug("graph use not counted on the scheduler: %s", exc)
    plugin = GraphPlugin(plan.graph_path, plan.graph.fingerprint, backend, hierarchy=hfile or False,
                         method=plan.algorithm, unit=int(plan.batch_size or 1),
                         hierarchy_key=vouched(plan.graph) if hfile else None, version=_gpu_sssp_version())
    client.register_plugin(plugin)
    if plugin.name in registered:
        # kept from an earlier study (sssp.study.keep-graph) or another study's: the
        # registration was skipped, and a worker whose load of it failed then (a file
        # since fixed: "fix it, then --resume") kept that failure for good; it loads again
        try:
            again = client.run(retry_failed_load, plan.graph.fingerprint, bool(hfile), on_error="return")
            retried = sum(v is True for v in again.values())
            if retried:
                log.info("graph plugin loaded again on %s where an earlier study's load had failed",
                         counted(retried, "worker"))
        except Exception as exc:  # noqa: BLE001 - best effort: such a worker's tasks say why
            log.debug("failed graph loads not retried: %s", exc)
    t2 = time.perf_counter()
    return {"client_hierarchy_s": t1 - t0, "hierarchy_file": hfile, "register_s": t2 - t1,
            "prefix": task_prefix(plan, devices), "user": user}


def _hold_late_workers(client, reg: dict, plan: StudyPlan, cluster_info: dict, on_wait=None):
    """On an attached cluster, the hold on the workers that join while this run goes on
    (``pipeline.cluster.hold_late_workers``: paused until they can serve the study, or
    refused with one line told to ``on_wait``); None on a cluster started here."""
    from gpu_sssp.pipeline.cluster import hold_late_workers
    from gpu_sssp.pipeline.plugins import plugin_name

    if (cluster_info or {}).get("mode") != "attached":
        return None
    return hold_late_workers(client, reg["user"],
                             plugin=plugin_name(plan.graph.fingerprint, bool(reg.get("hierarchy_file"))),
                             vetted=[w["address"] for w in cluster_info.get("worker_list") or ()],
                             on_refused=on_wait, study_id=plan.study_id, out=os.path.abspath(plan.out))


def wait_for_workers(client, fingerprint: str) -> dict:
    """Block until every worker has loaded the graph (its plugin's setup: graph,
    hierarchy, kernels, warm-up), at most ``sssp.study.ready-wait`` seconds (default
    120; 0: not at all).

    The first batches go out after this: a task handed to a worker that is still
    loading waits there while the others may idle, and the guided chunk sizes assume
    that every worker takes its share from the start (on 2 GPUs the workers became
    ready up to 0.1 s apart, as long as a quarter of an all-NY study).  The workers load
    in parallel, so the study waits only for the slowest one.  Returns
    ``{"ready_wait_s", "workers_ready", "workers_waited"}``.
    """
    from gpu_sssp.pipeline.plugins import load_failure, wait_ready

    limit = float(setting("study.ready-wait", None, default=120))
    t = time.perf_counter()
    got: dict = {}
    failed: dict = {}
    if limit > 0:
        try:
            got = client.run(wait_ready, fingerprint, limit)
        except Exception as exc:  # best effort: the tasks wait for their worker's graph anyway
            log.debug("workers' readiness not awaited: %s", exc)
        not_ready = [a for a, v in got.items() if not v]
        if not_ready:  # failed, or still loading after the wait
            try:
                answers = client.run(load_failure, fingerprint, workers=not_ready, on_error="return")
                failed = {a: f for a, f in answers.items() if isinstance(f, dict)}
            except Exception as exc:  # best effort: such a worker's tasks then say why
                log.debug("workers' load failures not asked: %s", exc)
    return {"ready_wait_s": time.perf_counter() - t, "workers_ready": sum(bool(v) for v in got.values()),
            "workers_waited": len(got), "load_failed": failed}


def _log_load_traceback(worker, reason, traceback) -> None:
    """A worker's failed graph load with its traceback, at INFO (``sssp -v``: as lines)."""
    log.info("graph plugin of worker %s failed: %s\n%s", worker, render(str(reason)), str(traceback or "").rstrip(),
             extra={"keep_lines": True})


def _set_aside(client, failed: dict, plan: StudyPlan, reg: dict, on_wait=None):
    """Workers whose graph plugin failed to load (:func:`wait_for_workers`'s
    ``load_failed``: ``{address: {"worker", "reason", "traceback"}}``): where every
    worker failed, raise :class:`pipeline.plugins.WorkerGraphError` (one line naming
    them, the file and the reason); otherwise pause them on the scheduler, so that no
    task of this run goes there, and say so once (``on_wait``, else a log warning): the
    study goes on with the others.  Their tracebacks are logged at INFO (``sssp -v``).
    Returns the function that puts the paused workers back (None: none paused)."""
    from gpu_sssp.pipeline.plugins import WorkerGraphError

    if not failed:
        return None
    for addr, f in sorted(failed.items()):
        _log_load_traceback(f.get("worker", addr), f.get("reason"), f.get("traceback"))
    failures = sorted((str(f.get("worker", addr)), str(f.get("reason", "?"))) for addr, f in failed.items())
    hfile = reg.get("hierarchy_file")
    try:
        live = set(client.run_on_scheduler(_live_workers))
    except Exception as exc:  # noqa: BLE001 - the scheduler's word, best effort
        log.debug("the scheduler's workers not asked: %s", exc)
        live = set(_workers_of(client))
    good = live - set(failed)
    if not good:
        raise WorkerGraphError(failures, plan.graph_path, hfile, of=len(live | set(failed)))
    token = f"sssp-set-aside-{uuid.uuid4().hex[:12]}"
    try:
        paused = client.run_on_scheduler(_pause_workers(), addresses=sorted(failed), token=token)
    except Exception as exc:  # noqa: BLE001 - not paused: such a worker's tasks stop the study in one line
        log.debug("workers that cannot load the graph not paused: %s", exc)
        return None
    line = (f"{WorkerGraphError(failures, plan.graph_path, hfile, of=len(live | set(failed)))}; they get no "
            f"batch of this study, which goes on with the other {counted(len(good), 'worker')}")
    (on_wait or log.warning)(line)

    def put_back():
        if _connected(client):
            try:
                client.run_on_scheduler(_pause_workers(), addresses=list(paused), token=token, undo=True)
            except Exception as exc:  # noqa: BLE001 - workers or scheduler gone
                log.debug("paused workers not put back: %s", exc)

    return put_back


def _workers_of(client) -> list:
    try:
        return list(client.scheduler_info().get("workers", {}))
    except Exception:  # noqa: BLE001
        return []


def _pause_workers():
    """The function that pauses workers on the scheduler, built here so that it is sent
    by value (an attached scheduler needs no gpu_sssp): it pauses the running workers
    ``addresses`` (no task goes to them; their running tasks end) and holds them for
    ``token``, or, with ``undo``, gives up ``token``'s hold and puts back those that no
    other study still holds and are still paused.  A worker that another study set
    aside (two studies of one graph on an attached cluster, sharing a worker that cannot
    load it) is held by both: the first to end put it back under the other, whose tasks
    then reached it and stopped that study.  It returns the addresses held (or put
    back)."""

    def pause(dask_scheduler=None, addresses=(), token="", undo=False):
        from time import time

        from distributed.core import Status

        holds = dask_scheduler.__dict__.setdefault("_sssp_set_aside_holds", {})  # {addr: {token, ...}}
        done = []
        for addr in addresses:
            ws = dask_scheduler.workers.get(addr)
            if undo:
                by = holds.get(addr)
                if by is not None and token in by:
                    by.discard(token)
                    if by:  # another study still sets it aside
                        continue
                    del holds[addr]
                    if ws is not None and ws.status == Status.paused:
                        dask_scheduler.handle_worker_status_change(Status.running, ws, f"{token}-back-{time()}")
                        done.append(addr)
                continue
            if ws is None:
                continue
            if ws.status == Status.running:
                holds[addr] = {token}
                dask_scheduler.handle_worker_status_change(Status.paused, ws, f"{token}-{time()}")
                done.append(addr)
            elif ws.status == Status.paused and holds.get(addr):  # set aside by another study
                holds[addr].add(token)
                done.append(addr)
        for addr in [a for a in holds if a not in dask_scheduler.workers]:  # workers gone meanwhile
            del holds[addr]
        return done

    return pause


def graph_users(client, fingerprint: str, user: str, *, add: bool, unregister: bool = True,
                free_if_lost: bool = False):
    """Count the studies that use a graph's worker plugins, on the scheduler.

    Several clients share a long-lived cluster: two studies of one graph (at once, from
    two users) share its plugin, and the first to end must not unregister it under the
    other, whose tasks would then load the graph again each (outside the plugin, never
    freed) and whose own unregistration fails with an ERROR in the scheduler's log.  Each
    run adds itself (``add=True``, before it registers the plugin) and removes itself at
    its end; the plugins (:func:`pipeline.plugins.plugin_name`, with and without the
    hierarchy) are unregistered then only when no other run of a connected client still
    uses the graph (a user whose client is gone, e.g. killed, no longer counts) and
    ``unregister`` is true (``sssp.study.keep-graph`` removes the run and keeps them).
    Both steps happen in one call on the scheduler's event loop, so no registration
    comes between the count and the removal.

    A client that goes away without ending its run (killed, its host lost) never removes
    itself: the scheduler ends its uses when it leaves (a scheduler plugin,
    ``sssp-graph-users``, installed by the first ``add``) and, where one of them was to
    free the graph (``free_if_lost``, given with ``add``: the run would unregister the
    plugins at its end) and no user is left, unregisters the plugins, so that the workers
    do not hold the graph until another study of it ends.

    The functions are sent by value: the scheduler needs no gpu_sssp.  Returns the
    names unregistered (``[]``: none, in use or kept); raises what ``run_on_scheduler``
    raises (scheduler gone)."""
    from gpu_sssp.pipeline.plugins import plugin_name

    names = [plugin_name(fingerprint, h) for h in (True, False)]
    client_id = str(client.id)
    grace = float(setting("study.lost-client-grace", None, default=40.0))

    async def on_scheduler(dask_scheduler=None):
        s = dask_scheduler
        # {fingerprint: {user: client id}} as ever (a client of an earlier version on the
        # same scheduler reads and writes it too); which users would free their graph if
        # lost is kept apart, {user: True}
        table = s.__dict__.setdefault("_sssp_graph_users", {})
        frees = s.__dict__.setdefault("_sssp_graph_frees", {})
        s.__dict__.setdefault("_sssp_graph_plugins", {})[fingerprint] = list(names)
        users = table.setdefault(fingerprint, {})
        if add:
            users[user] = client_id
            if free_if_lost:
                frees[user] = True
            if getattr(s.plugins.get(_WATCH), "version", 0) < _WATCH_VERSION:
                # none yet, or an earlier version's (a long-lived scheduler): this one
                # replaces it (an earlier version's client never replaces a later one)
                s.plugins.pop(_WATCH, None)
                s.add_plugin(_watch_class()(grace), name=_WATCH)
            # the graph's plugins registered already (kept, or another study's): a
            # registration of one of them is skipped (idempotent)
            return [name for name in names if name in getattr(s, "worker_plugins", {})]
        users.pop(user, None)
        frees.pop(user, None)
        away = s.__dict__.get("_sssp_graph_away", {})
        for u, cid in list(users.items()):
            if cid not in s.clients and cid not in away:  # its client left (ended or killed) for good
                del users[u]
                frees.pop(u, None)
        if users:
            return []
        table.pop(fingerprint, None)
        if not unregister:
            return []
        gone = []
        for name in names:
            if table.get(fingerprint):  # a study of the graph began meanwhile: its plugin stays
                break
            if name in s.worker_plugins:
                await s.unregister_worker_plugin(None, name)
                gone.append(name)
        return gone

    _WATCH = "sssp-graph-users"
    _WATCH_VERSION = 3  # 2: the lost-client grace; 3: a lost client's prompt streams put back

    def _watch_class():
        from distributed.diagnostics.plugin import SchedulerPlugin

        class GraphUsersWatch(SchedulerPlugin):
            """Ends the graph uses of a client that left without ending them, once it
            has stayed away ``grace`` seconds (a client whose connection broke comes
            back under the same id within Dask's reconnection time, its study going
            on); a graph left with no user, one of whose lost users would have freed
            it, has its worker plugins unregistered (unless a new user came first)."""

            version = _WATCH_VERSION

            def __init__(self, grace: float = 40.0):
                self.grace = float(grace)

            def remove_client(self, scheduler=None, client=None):
                if not any(client in users.values()
                           for users in scheduler.__dict__.get("_sssp_graph_users", {}).values()):
                    return
                away = scheduler.__dict__.setdefault("_sssp_graph_away", {})
                away[client] = away.get(client, 0) + 1
                tasks = scheduler._ongoing_background_tasks
                if not tasks.closed:  # (closed: the scheduler is stopping)
                    tasks.call_soon(self._after_grace, scheduler, client)

            async def _after_grace(self, scheduler, client):
                import asyncio

                try:
                    await asyncio.sleep(self.grace)
                finally:
                    away = scheduler.__dict__.get("_sssp_graph_away", {})
                    away[client] = away.get(client, 1) - 1
                    if away[client] <= 0:
                        del away[client]
                if client in scheduler.clients or client in away:
                    return  # back (reconnected), or away again since: a later check decides
                self._lost(scheduler, client)

            def _lost(self, scheduler, client):
                try:  # the streams its studies made prompt (_prompt_streams): put back
                    tokens = _lost_client_streams(scheduler, client)
                except Exception:  # best effort: a study's results do not depend on it
                    tokens = []
                if tokens and not scheduler._ongoing_background_tasks.closed:
                    scheduler._ongoing_background_tasks.call_soon(self._workers_back, scheduler, tokens)
                table = scheduler.__dict__.get("_sssp_graph_users", {})
                frees = scheduler.__dict__.get("_sssp_graph_frees", {})
                for fp, users in list(table.items()):
                    lost = [u for u, cid in users.items() if cid == client]
                    if not lost:
                        continue
                    free = any([frees.pop(u, False) for u in lost])  # (a list: every flag popped)
                    for u in lost:
                        del users[u]
                    if users:
                        continue
                    del table[fp]
                    tasks = scheduler._ongoing_background_tasks
                    if free and not tasks.closed:
                        tasks.call_soon(self._free, scheduler, fp)

            async def _workers_back(self, scheduler, tokens):
                from distributed.protocol.pickle import dumps

                try:
                    await scheduler.broadcast(msg={"op": "run", "function": dumps(_worker_streams_end),
                                                   "args": dumps(()), "kwargs": dumps({"tokens": list(tokens)}),
                                                   "wait": True}, on_error="ignore")
                except Exception:  # workers gone meanwhile: nothing to put back
                    pass

            async def _free(self, scheduler, fp):
                for name in scheduler.__dict__.get("_sssp_graph_plugins", {}).get(fp, ()):
                    if scheduler.__dict__.get("_sssp_graph_users", {}).get(fp):
                        return  # a study of the graph began meanwhile: its plugin stays
                    if name in scheduler.worker_plugins:
                        await scheduler.unregister_worker_plugin(None, name)

        return GraphUsersWatch

    return client.run_on_scheduler(on_scheduler)


def forget_graph(client, plan: StudyPlan, user: str | None = None, *, unregister: bool = True) -> None:
    """End a run's use of the graph: unregister its worker plugins unless another study
    (of a connected client) still uses them (:func:`graph_users`), so that every worker's
    teardown frees its host and device copies of the graph.  ``unregister=False``
    (``sssp.study.keep-graph``) only ends the run's use.  Best effort (a study's result
    does not depend on it).  ``user``: the token :func:`register_graph` returned
    (``None``: a caller of the old form, unregistered as the only user)."""
    try:
        graph_users(client, plan.graph.fingerprint, user or f"anonymous-{uuid.uuid4().hex}", add=False,
                    unregister=unregister)
    except Exception as exc:  # workers or scheduler gone
        log.debug("graph plugin not unregistered: %s", exc)


def _worker_startup(client, fingerprint: str) -> dict:
    """``{worker name: GraphPlugin.timings}`` (best effort: empty on failure)."""
    from gpu_sssp.pipeline.plugins import worker_startup

    try:
        got = client.run(worker_startup, fingerprint)
    except Exception as exc:
        log.debug("start-up timings not collected: %s", exc)
        return {}
    return {str(v.get("worker", k)): v for k, v in got.items()}


def run_study(client, plan: StudyPlan, *, resume: bool = False, backend: str = "auto",
              cluster_info: dict | None = None, on_batch=None, on_start=None,
              study: "Study | None" = None, registered: list | None = None,
              keep_graph: bool | None = None, on_wait=None) -> dict:
    """Run (or resume) a study on a connected client; return its summary.

    The pending batches go out in chunks of shrinking size, a bounded number in flight
    (:mod:`pipeline.study.schedule`; dask config ``sssp.study.schedule``: ``guided``,
    the default, or ``batch``: one task per batch, all submitted at once).

    Parameters
    ----------
    client : distributed.Client or None
        None only for a study with nothing pending (a complete study resumed).
    plan : StudyPlan
    resume : bool
        Skip the batches a previous run finished.
    backend : {"auto", "gpu", "cpu"}
        Backend tasks ask for (``pipeline.cluster.ClusterHandle.backend``).
    cluster_info : dict, optional
        Stored in the manifest (``pipeline.cluster.describe_cluster``); its worker devices
        set the batch size when the plan leaves it open (asked of the cluster when absent).
    on_start : callable(study), optional
        Called once the folder is ready (``study.sources_done`` already done).
    on_batch : callable(meta, study), optional
        Called on the client after each batch is recorded.
    on_wait : callable(str), optional
        Told once, when the cluster has no worker left while batches are pending (the
        run waits for workers to join); and once for each worker that joins an attached
        cluster mid-run and is refused (it cannot serve the study: another environment
        or gpu-sssp version, or the graph not readable there; no batch goes to it).
    study : Study, optional
        The folder, already checked (``Study(plan, resume=...)``); made here when absent.
    registered : list, optional
        Gets this run's use of the graph (the ``user`` token of :func:`register_graph`)
        once it has registered the graph's plugin (a run with nothing to do registers
        none), also when the run then stops: what :func:`forget_graph` is to end.
    keep_graph : bool, optional
        With ``registered``: the caller keeps the graph's plugin at the end (default
        ``sssp.study.keep-graph``, else False).  A run whose plugin is to go is also
        ended by the scheduler should this client leave without ending it.

    Returns
    -------
    dict
        The summary; its ``timings`` hold ``startup`` (cluster start, the hierarchy on
        the client, registration, the workers' loading, the first batch) and
        ``cluster`` (per-worker busy time, tail, scheduler overhead:
        :func:`pipeline.study.timing.cluster_timings`) beside the study's wall time.

    Raises
    ------
    StudyError
        See :class:`Study`.
    pipeline.plugins.WorkerGraphError
        Every worker failed to load the graph (or its hierarchy) in its graph plugin: one
        line naming them, the file and the reason; the manifest says ``failed`` and
        ``resume`` continues once they are fixed.  Where only some failed they are
        paused on the scheduler for this run (told once to ``on_wait``) and the others
        solve every batch; one that fails later (a restart) stops the run with this
        error, naming it.
    SsspError
        A batch failed with a product error (``NegativeCycleError``, ...), raised as
        itself; the remaining tasks are cancelled, the finished ones stay recorded
        (``resume`` continues from there) and the manifest's status is ``failed``
        with the reason.
    Exception
        A batch failed after its retries (a bug, a lost worker too often): as above.
    KeyboardInterrupt
        As above, with the status ``interrupted``.
    """
    if study is None:
        study = Study(plan, resume=resume)
    try:
        if plan.batch_size is None or cluster_info is None:
            from gpu_sssp.pipeline.cluster import ClusterHandle, describe_cluster, worker_devices

            if cluster_info is None:
                cluster_info = describe_cluster(ClusterHandle(client, None, "attached", backend))
            plan.resolve_batch_size(worker_devices(cluster_info))
        if client is not None and (cluster_info or {}).get("mode") == "attached" and study.pending:
            from gpu_sssp.pipeline.cluster import refuse_study_running_elsewhere

            # before the folder is started: a refused run leaves it as it was (it was
            # left marked failed, and the same command run again asked for --resume)
            refuse_study_running_elsewhere(client, plan.study_id, os.path.abspath(plan.out))
        study.start(cluster_info)
    except BaseException:
        study.close()
        raise
    if on_start is not None:
        on_start(study)
    workers = 0 if client is None else (len(client.scheduler_info().get("workers", {})) or 1)
    if cluster_info and cluster_info.get("workers"):
        workers = int(cluster_info["workers"])
    pending = study.pending
    run_meta: list[dict] = []
    run_tasks: list[dict] = []
    reg: dict = {}
    board = None
    t0 = time.perf_counter()
    t_end = None
    started_at = time.time()
    if pending:
        futures: dict = {}
        failed_batch = None
        restore_stream = reports = late = set_aside = None
        reg: dict = {}
        reported: dict = {}
        try:
            if client is None:  # a caller's slip (study() decides no cluster only for a complete study)
                raise RuntimeError(f"{counted(len(pending), 'batch', 'batches')} to solve and no cluster (client=None)")
            # an "auto" study resumed goes on with the method its finished batches used
            work = _resumed_method(plan, study, backend, cluster_info)
            free = registered is not None and not setting("study.keep-graph", keep_graph, default=False)
            reg = register_graph(client, work, backend, cluster_info.get("devices"), free_if_lost=free)
            if registered is not None:
                registered.append(reg["user"])
            mode = setting("study.schedule", None, default="guided")  # checked: guided or batch
            chunks = study_chunks(pending, mode, cluster_info.get("worker_list"), cap=chunk_cap(plan))
            # before the dashboard's entry (by study id): a run of this study under way into
            # another folder is refused here, and its entry must stay as it is
            late = _hold_late_workers(client, reg, plan, cluster_info, on_wait)
            board = _board(client, plan, study, reg["prefix"], cluster_info)
            reg.update(wait_for_workers(client, plan.graph.fingerprint))
            set_aside = _set_aside(client, reg.pop("load_failed", None), plan, reg, on_wait)
            reports = _Reports(client, f"{REPORTS}{plan.study_id}-{uuid.uuid4().hex[:8]}", on_idle=on_wait)
            restore_stream = (_prompt_streams(client) if setting("study.prompt-streams", None, default=True)
                              else _prompt_client_stream(client))
            # every chunk goes to Dask at once: its scheduler queues them and hands a
            # worker the next one as soon as one of its threads is free, with no round trip
            # to this client between a worker's tasks (when this loop ran the queue, a
            # client busy journaling left GPUs idle for 8-15 ms at a 4-GPU study's tail)
            got = submit_chunks(client, work, chunks, prefix=reg["prefix"], backend=backend,
                                report=reports.topic)
            futures = {f.key: (f, c) for f, c in got.items()}
            # each task reports its batches itself (a Dask event, pushed to this client
            # on the streams its completion takes): no fetch of its result per task, which
            # took 3-15 ms from a task's end to this loop; the futures are watched for
            # errors (and for a report that never came: their result is fetched)
            recorded: set = set()  # batches journaled from a CPU chunk's reports, before its end
            for group in reports.groups(futures):
                metas, error = [], None
                arrived = time.time()  # on the client: ended -> collected is the report's trip
                for key, got in group:
                    if isinstance(got, dict) and got.get("partial"):  # a batch of a chunk still running
                        for m in got["batches"]:
                            if int(m["batch"]) not in recorded:  # (a chunk run twice reports twice)
                                recorded.add(int(m["batch"]))
                                metas.append(dict(m, collected=arrived))
                        continue
                    fut, chunk = futures.pop(key)
                    # a reported task may still be "processing" on the scheduler (its
                    # report overtook its completion): its future is kept until it is
                    # finished, so that no running task is released (cancelled)
                    reported[key] = fut
                    if isinstance(got, dict) and "error" in got:  # a product error, see task
                        error = error or (got.get("batch", chunk[0]), got["error"])
                    else:
                        for m in got["batches"]:
                            if int(m["batch"]) not in recorded:  # (else journaled as it ended)
                                metas.append(dict(m, collected=arrived))
                        run_tasks.append({k: v for k, v in got.items() if k != "batches"} | {"collected": arrived})
                # journaled chunks' futures are dropped once finished: the scheduler then
                # forgets their results, and a worker that dies later does not make it
                # solve them again (a held future of a lost result is recomputed)
                group = got = fut = None
                _drop_ended(reported)
                study.record_many(metas)
                for meta in metas:
                    run_meta.append(meta)
                    if on_batch is not None:
                        on_batch(meta, study)
                if error is not None:
                    failed_batch, exc = error
                    # a worker whose load failed after the ready-wait (or with no wait,
                    # sssp.study.ready-wait 0): its traceback, as _set_aside logs one
                    for w, tb in sorted((getattr(exc, "tracebacks", None) or {}).items()):
                        _log_load_traceback(w, dict(exc.failures).get(w, "?"), tb)
                    raise exc
            # the study ends once every task has ended too: a task flushes its statistics
            # files after its report (pipeline.study.task.solve_chunk)
            _settle(reported)
            t_end = time.perf_counter()  # the streams' restore below is not the study's time
        except BaseException as exc:
            # a client that lost its scheduler asks it nothing more: each call would wait
            # for Dask's reconnection (30 s) before the one line that says so
            if _connected(client):
                client.cancel([f for f, _c in futures.values()])
                _board_end(client, board, "failed" if not isinstance(exc, KeyboardInterrupt) else "interrupted")
            reported.clear()
            gone = not isinstance(exc, (KeyboardInterrupt, StudyError)) and study.removed()
            lost = None if gone or isinstance(exc, KeyboardInterrupt) else _lost_error(client, exc)
            if lost is not None:  # Dask's own text is a traceback and "re-run your work": say what to do
                exc = lost
            study.stop(exc, batch=failed_batch)
            if gone:  # what the workers met (a missing file or folder) says less than this
                raise study.removed_error() from exc
            if lost is not None:
                raise lost from None
            raise
        finally:
            if restore_stream is not None and _connected(client):
                restore_stream()
            if reports is not None and _connected(client):
                reports.close()
            if late is not None and _connected(client):
                late.close()
            if set_aside is not None:
                set_aside()
            if registered is None and reg.get("user") and _connected(client):
                # called on its own (not through study(), which ends the use after the
                # run): end this run's count of the graph now, keeping its plugin as before,
                # or a later study of the graph from this client would never free it
                try:
                    graph_users(client, plan.graph.fingerprint, reg["user"], add=False, unregister=False)
                except Exception as exc:
                    log.debug("graph use not uncounted: %s", exc)
    try:
        return _wrap_up(client, plan, study, board, reg, cluster_info, run_tasks, run_meta, workers,
                        t0=t0, t_end=t_end, started_at=started_at)
    except BaseException as exc:
        # Ctrl-C or SIGTERM (or a failure) once every batch is in: the manifest said
        # "running" (the stop above covers the batches only), and the next resume called
        # the run killed.  Recorded as interrupted or failed; study.finish has not written
        # the manifest's end yet (stop does nothing once it has)
        study.stop(exc)
        raise


def _wrap_up(client, plan, study, board, reg, cluster_info, run_tasks, run_meta, workers, *, t0, t_end,
             started_at) -> dict:
    """The run's end once its batches are in: timings, ``Study.finish``, the board."""
    from gpu_sssp.pipeline.study.timing import cluster_timings

    wall = (t_end if t_end is not None else time.perf_counter()) - t0
    collected_at = started_at + wall
    run_sources = sum(m["rows"] for m in run_meta)
    extra = {}
    late_workers = []
    if run_tasks:
        from gpu_sssp.pipeline.cluster import describe_late_workers

        late_workers = describe_late_workers(client, (cluster_info or {}).get("backend") or "auto", cluster_info,
                                             {m.get("worker") for m in run_meta})
        startup_workers = _worker_startup(client, plan.graph.fingerprint)
        ct = cluster_timings(run_tasks, startup_workers, started_at=started_at, collected_at=collected_at)
        extra["cluster"] = ct
        extra["startup"] = {
            "cluster_start_s": (cluster_info or {}).get("start_s"),
            "client_hierarchy_s": reg.get("client_hierarchy_s"),
            "register_s": reg.get("register_s"),
            "hierarchy_file": reg.get("hierarchy_file"),
            "ready_wait_s": reg.get("ready_wait_s"),
            "workers_ready_s": ct["ready_s_max"],
            "first_batch_s": ct["first_batch_s"],
            "graph_load_s_max": max((w.get("graph_load_s", 0.0) for w in ct["workers"].values()), default=0.0),
            "hierarchy_load_s_max": max((w.get("hierarchy_load_s", 0.0) for w in ct["workers"].values()),
                                        default=0.0),
            "compile_s_max": max((w.get("compile_s", 0.0) for w in ct["workers"].values()), default=0.0),
            "warm_s_max": max((w.get("warm_s", 0.0) for w in ct["workers"].values()), default=0.0),
        }
        extra["task_prefix"] = reg.get("prefix")
        extra["schedule"] = {"mode": str(setting("study.schedule", None, default="guided")),
                             "tasks": len(run_tasks), "batches": len(run_meta)}
        # the study itself, start-up apart: from the first worker's first task (once its
        # graph was ready) to the collection of the last batch
        solve_wall = wall - min(w["first_task_s"] for w in ct["workers"].values())
        kernel_s = sum(m.get("kernel_ms", 0.0) for m in run_meta) / 1e3
        extra["solve_wall_s"] = solve_wall
        extra["outside_kernels_solve_s"] = max(solve_wall * workers - kernel_s, 0.0)
        extra["outside_kernels_solve_vs_kernel"] = (extra["outside_kernels_solve_s"] / kernel_s) if kernel_s > 0 else None
    summary = study.finish(wall_s=wall, run_sources=run_sources, run_meta=run_meta, workers=workers,
                           clock=(started_at, collected_at), extra_timings=extra, late_workers=late_workers)
    _board_end(client, board, "complete" if summary.get("complete") else "incomplete", summary)
    return summary


def _connected(client) -> bool:
    """Whether ``client`` is connected to its scheduler (not reconnecting after losing it,
    nor closed); ``None`` (no cluster) is not."""
    return client is not None and getattr(client, "status", "running") == "running"


def _lost_error(client, exc: BaseException):
    """The ``SchedulerLostError`` to raise where ``exc`` means the client lost its
    scheduler (``pipeline.cluster.scheduler_lost``), else None."""
    from gpu_sssp.pipeline.cluster import SchedulerLostError, scheduler_lost

    if not scheduler_lost(client, exc):
        return None
    try:
        where = f" {client.scheduler.address}"
    except Exception:
        where = ""
    return SchedulerLostError(f"lost the connection to the scheduler{where} during the study (it stopped or "
                              "restarted, or the network went); once a scheduler and its workers are back, "
                              f"add {opt('--resume')}")


def _resumed_method(plan: StudyPlan, study: Study, backend: str, cluster_info: dict | None) -> StudyPlan:
    """The plan a resumed ``auto`` study solves its remaining batches with: the method
    every finished batch used, where it runs on the workers' backend.

    ``auto`` decides with what it finds then (a hierarchy cache file beside the graph
    makes ``phast`` free, the devices): a cache written by another study between two runs
    made the rest of a study ``phast`` after ``dijkstra`` batches, and its tables (the
    method's ``iterations``, ``relaxations``, ``algorithm``) were those of no uninterrupted
    run.  ``plan`` itself (its identity: ``auto``) is left as it is."""
    import dataclasses

    if plan.algorithm != "auto" or not study.done:
        return plan
    used = {e.get("algorithm") for e in study.done.values()}
    if len(used) != 1 or not isinstance(method := used.pop(), str):
        return plan  # several (a mixed cluster's workers), or unknown
    if backend == "auto":
        backend = workers_backend((cluster_info or {}).get("devices")) or "auto"
    try:
        from gpu_sssp.kernels.registry import backends_of

        if backend not in backends_of(method):
            return plan
    except Exception:  # a method this version does not know
        return plan
    return dataclasses.replace(plan, algorithm=method, study_id_of=plan.study_id)


#: most batches in one task on CPU workers.  A CPU batch takes 0.1-3 s (NY: phast, 256
#: sources, 0.3-0.5 s; dijkstra, 64 sources, about 3 s), beside which a task's own cost
#: (Dask's round trips, a few ms) is nothing, while a guided chunk of a CPU study held
#: minutes of work: all NY on two CPU workers began with chunks of 129 batches (24-35 s),
#: during which the progress bar stood still and a Ctrl-C lost the whole chunk.
CPU_CHUNK_BATCHES = 4


def study_chunks(pending, mode: str, workers=None, *, cap: int | None = None) -> list[list[int]]:
    """The chunks of consecutive batches a run submits (all at once, in this order).

    ``guided``: shrinking chunks (:func:`pipeline.study.schedule.plan_chunks`) when there
    are more of them than twice the cluster's threads - Dask then queues them on its
    scheduler (root-ish tasks) and gives each worker the next one as a thread frees, so
    the big chunks go first and single batches end the study.  Fewer chunks than that
    are assigned to workers as they are submitted, by count: then every batch is a task
    of its own, of equal size, so that each worker gets an even share.  ``batch``: one task
    per batch.  On CPU workers (every worker's ``device`` is ``cpu``) a chunk holds at most
    :data:`CPU_CHUNK_BATCHES` batches."""
    from gpu_sssp.pipeline.study.schedule import plan_chunks, slots_for

    pending = [int(i) for i in pending]
    if mode == "batch":
        return [[i] for i in pending]
    if workers and all(str(w.get("device", "")) == "cpu" for w in workers):
        cap = min(cap, CPU_CHUNK_BATCHES) if cap is not None else CPU_CHUNK_BATCHES
    threads = sum(max(1, int(w.get("nthreads", 1))) for w in (workers or [])) or 1
    chunks = plan_chunks(pending, slots_for(workers), cap=cap)
    if len(chunks) <= 2 * threads:
        return [[i] for i in pending]
    return chunks


def _settle(reported: dict, timeout: float = 60.0) -> None:
    """Wait until the reported tasks' futures are finished, then drop them.

    A task reports its batches before it flushes their statistics files
    (``pipeline.study.task.solve_chunk``): the study is over only once its tasks are,
    and a flush that failed (its task erred after its report) fails the study here.  A
    task released while the scheduler still has it processing would also be cancelled
    there, and the dashboard's board would not count it.  Past ``timeout`` seconds (a
    worker lost after its report: Dask would solve the chunk again) they are dropped
    with a warning; the batches' files were complete when reported."""
    from distributed import wait

    try:
        if reported:
            try:
                wait(list(reported.values()), timeout=timeout)
            except Exception as exc:  # timed out or gone
                log.warning("%s not ended after %.0f s: %s", counted(len(reported), "reported task"), timeout, exc)
            _drop_ended(reported)
    finally:
        reported.clear()


def _drop_ended(reported: dict) -> None:
    """Drop the reported tasks' futures that have ended; raise what one raised after its
    report (its statistics files' flush, ``pipeline.study.task.solve_chunk``)."""
    for key in [k for k, f in reported.items() if f.status != "pending"]:
        if reported[key].status == "error":
            reported[key].result()
        del reported[key]


#: seconds the run loop waits for a task's report before it looks at the futures
REPORT_POLL_S = 0.05
#: seconds without a report after which the run looks whether the cluster still has workers
NO_WORKER_LOOK_S = 2.0


class _Reports:
    """The tasks' reports of a run, pushed to this client as Dask events on ``topic``
    (``Worker.log_event`` at the end of :func:`pipeline.study.task.solve_chunk`; the
    scheduler forwards them to subscribed clients on the same streams as the task's
    completion), so that no result is fetched per task."""

    def __init__(self, client, topic: str, on_idle=None):
        self.client = client
        self.topic = topic
        self.on_idle = on_idle
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.subscribed = False
        try:
            client.subscribe_topic(topic, self._handler)
            self.subscribed = True
        except Exception as exc:  # every result is then fetched from its future
            log.debug("task reports not subscribed: %s", exc)

    def _handler(self, event) -> None:
        _t, msg = event
        res = msg.get("result") if isinstance(msg, dict) else None
        if isinstance(res, dict) and res.get("task") is not None:
            self.queue.put(res)

    def groups(self, futures: dict):
        """Yield lists of ``(task key, result)`` until ``futures`` (``{key: (future,
        chunk)}``, emptied by the caller as it handles each key) is empty: reports as
        they come, several at once when several are waiting (a CPU chunk's report of one
        of its batches, ``"partial"``, leaves its key in ``futures``); every ``REPORT_POLL_S``
        without one, the futures that ended without a report (a product error, a failure
        after the retries: raised here; a lost report: the result fetched)."""
        last_poll = last_report = last_look = time.perf_counter()
        said = False
        while futures:
            got = []
            try:
                got.append(self.queue.get(timeout=REPORT_POLL_S))
                while True:
                    got.append(self.queue.get_nowait())
            except queue.Empty:
                pass
            group, seen = [], set()
            for msg in got:
                key = str(msg["task"])
                if msg.get("partial"):  # a batch of a CPU chunk (task.solve_chunk): the chunk goes on
                    if key in futures:
                        group.append((key, msg))
                elif key in futures and key not in seen:  # a repeat (a task run twice) is dropped
                    seen.add(key)
                    group.append((key, msg))
            if not got or time.perf_counter() - last_poll > REPORT_POLL_S:
                last_poll = time.perf_counter()
                for key, (fut, _chunk) in list(futures.items()):
                    if key in seen:
                        continue
                    if fut.status == "pending":
                        continue
                    if fut.status == "finished":
                        group.append((key, fut.result()))
                    else:  # error, cancelled, lost: raises what the task raised
                        fut.result()
                        raise RuntimeError(f"task {key} ended as {fut.status}")
            if group:
                last_report = time.perf_counter()
                yield group
            elif self.on_idle is not None and time.perf_counter() - max(last_report, last_look) > NO_WORKER_LOOK_S:
                said = self._no_worker_note(said)
                last_look = time.perf_counter()

    def _no_worker_note(self, said: bool) -> bool:
        """After ``NO_WORKER_LOOK_S`` without a report: when the cluster has no worker
        left, say once (``on_idle``) that the study waits for workers (it printed nothing
        while its progress line showed an ETA); again should they come and all go again.
        Returns whether it is said for the workers' present absence."""
        from gpu_sssp.pipeline.cluster import serving_workers

        try:  # workers refused mid-study (pipeline.cluster.hold_late_workers) do not count
            none = not serving_workers(self.client)
        except Exception:  # the scheduler lost: the futures say so
            return said
        if none and not said:
            address = getattr(getattr(self.client, "scheduler", None), "address", None) or "the scheduler"
            self.on_idle(render(f"no worker left on {address}: the study waits for workers to join (start "
                                f"them again, or Ctrl-C and {opt('--resume')})"))
        return none

    def close(self) -> None:
        if self.subscribed:
            try:
                self.client.unsubscribe_topic(self.topic)
            except Exception as exc:
                log.debug("task reports not unsubscribed: %s", exc)
            self.subscribed = False


#: seconds between the messages of each of Dask's batched streams while a study runs
#: (client to scheduler, scheduler to client, scheduler to workers, workers to scheduler)
STREAM_INTERVAL = 0.0005
#: the client's own stream (kept as the name the tests know)
CLIENT_SEND_INTERVAL = STREAM_INTERVAL


def _prompt_state(obj, key) -> dict:
    """``{"orig": interval before the first study, "users": set of study tokens}`` of one
    stream, kept on the Dask server object ``obj`` (a worker, the scheduler)."""
    table = obj.__dict__.setdefault("_sssp_prompt_streams", {})
    return table.setdefault(key, {"orig": None, "users": set()})


def _set_prompt(obj, key, comm, interval, restore, token):
    """Prompt ``comm`` (``restore is None``) or end study ``token``'s use of it; returns
    the interval before the first study that prompted it.

    On a cluster several clients share, studies overlap: the second saw the first's
    prompt interval as the "old" one and put it back at its end, after the first had
    restored Dask's, leaving the cluster's streams prompt for good.  The interval is
    kept once, before the first study, and put back when the last one ends."""
    state = _prompt_state(obj, key)
    if restore is None:
        if not state["users"]:
            state["orig"] = comm.interval
        state["users"].add(token)
        comm.interval = min(comm.interval, interval)
        return state["orig"]
    state["users"].discard(token)
    if not state["users"]:
        comm.interval = state["orig"] if state["orig"] is not None else restore
        state["orig"] = None
    return state["orig"]


def _scheduler_streams(dask_scheduler=None, client_id=None, interval=None, restore=None, token=None):
    """On the scheduler: set the interval of its batched streams to the workers and to
    client ``client_id``; return the old intervals (``{"client": s, "workers": {addr: s}}``),
    or put back ``restore`` (such a dict).  The workers' streams, which every client's
    studies share, are put back only when the last study that prompted them (``token``,
    the study's) ends (:func:`_set_prompt`)."""
    old = {"client": None, "workers": {}}
    cc = dask_scheduler.client_comms.get(client_id)
    # which client each study's token belongs to: a client lost without putting its streams
    # back has its tokens ended by the scheduler's watch (graph_users' GraphUsersWatch)
    owners = dask_scheduler.__dict__.setdefault("_sssp_stream_owners", {})
    if restore is not None:
        owners.pop(token, None)
        if cc is not None and restore.get("client") is not None:
            cc.interval = restore["client"]
        for addr, v in restore.get("workers", {}).items():
            bc = dask_scheduler.stream_comms.get(addr)
            if bc is not None:
                _set_prompt(dask_scheduler, addr, bc, None, v, token)
        return old
    if token is not None:
        owners[token] = client_id
    if cc is not None:
        old["client"] = cc.interval
        cc.interval = min(cc.interval, interval)
    for addr, bc in dask_scheduler.stream_comms.items():
        old["workers"][addr] = _set_prompt(dask_scheduler, addr, bc, interval, None, token)
    return old


def _end_prompt(obj, key, comm, token) -> None:
    """End study ``token``'s use of ``comm`` where it has one (:func:`_set_prompt`: the
    interval before the first study comes back when no study uses it any more)."""
    if token in _prompt_state(obj, key)["users"]:
        _set_prompt(obj, key, comm, None, comm.interval, token)


def _lost_client_streams(dask_scheduler, client_id) -> list:
    """On the scheduler: end the stream uses of the studies of ``client_id``, a client that
    left without putting them back (killed): the scheduler's own streams to the workers
    here; returns the tokens, whose uses the workers end (:func:`_worker_streams_end`)."""
    owners = dask_scheduler.__dict__.get("_sssp_stream_owners", {})
    tokens = [t for t, c in list(owners.items()) if c == client_id]
    for t in tokens:
        owners.pop(t, None)
        for addr, bc in list(dask_scheduler.stream_comms.items()):
            _end_prompt(dask_scheduler, addr, bc, t)
    return tokens


def _worker_streams_end(dask_worker=None, tokens=()) -> None:
    """On a worker: end the stream uses of the studies ``tokens`` (a lost client's)."""
    bs = getattr(dask_worker, "batched_stream", None)
    if bs is not None:
        for t in tokens:
            _end_prompt(dask_worker, "scheduler", bs, t)


def _worker_stream(dask_worker=None, interval=None, restore=None, token=None):
    """On a worker: set (or put back) the interval of its batched stream to the scheduler;
    return the old one, put back only when the last study that prompted it (``token``,
    the study's) ends (:func:`_set_prompt`)."""
    bs = getattr(dask_worker, "batched_stream", None)
    if bs is None:
        return None
    return _set_prompt(dask_worker, "scheduler", bs, interval, restore, token)


def _live_workers(dask_scheduler=None) -> list:
    """On the scheduler: the addresses of the workers it has now."""
    return list(dask_scheduler.workers)


def _restore_worker_streams(client, old: dict, token: str) -> None:
    """Put back the workers' stream intervals ``old`` (``{address: interval}``), on the
    workers that are still there only.

    A worker lost during the study (killed, restarted by its nanny under a new address)
    is skipped: a ``client.run`` naming its address made the scheduler wait the whole
    connect timeout (30 s) after the study's last batch and then log an ERROR.  The
    workers there now are asked of the scheduler itself (the client's
    ``scheduler_info()`` is refreshed only every few seconds)."""
    try:
        live = set(client.run_on_scheduler(_live_workers))
    except Exception as exc:  # a scheduler that cannot run this package's functions
        log.debug("the scheduler's workers not asked: %s", exc)
        live = set(client.scheduler_info().get("workers", {}))
    by_value: dict = {}  # one call per old interval (all workers had Dask's 2 ms)
    for addr, v in old.items():
        if v is not None and addr in live:
            by_value.setdefault(v, []).append(addr)
    if not by_value:
        return

    def put_back():
        for v, addrs in by_value.items():
            # a worker lost in between: its error is returned, not raised, and skipped
            client.run(_worker_stream, restore=v, token=token, workers=addrs, on_error="return")

    # a worker that dies between the question and the call (as the study ends: a killed
    # worker the scheduler has not yet removed) is still named, and the scheduler retries
    # its refused connection for the whole connect timeout (30 s) before answering: the
    # study does not wait for more than RESTORE_WAIT_S (the call goes on in the background)
    t = threading.Thread(target=_best_effort, args=(put_back,), name="sssp-restore-streams", daemon=True)
    t.start()
    t.join(RESTORE_WAIT_S)
    if t.is_alive():
        log.debug("the workers' stream intervals are still being put back after %.0f s", RESTORE_WAIT_S)


#: seconds a study's end waits for its workers' stream intervals to be put back
RESTORE_WAIT_S = 3.0


def _best_effort(fn) -> None:
    try:
        fn()
    except Exception as exc:  # a worker or the scheduler gone meanwhile: nothing to put back
        log.debug("a stream's interval not put back: %s", exc)


def _prompt_streams(client, interval: float | None = None):
    """Let Dask's messages go out within ``interval`` (default: dask config
    ``sssp.study.stream-interval``, :data:`STREAM_INTERVAL`)
    instead of its batching intervals: the client's stream to the scheduler (10 ms), the
    scheduler's to this client (2 ms) and to each worker (5 ms), each worker's to the
    scheduler (2 ms).  Returns the function that puts them back.

    A ``BatchedSend`` sends a message at once when its last send is older than its
    interval, otherwise at that deadline: at a study's tail, where a task runs a few ms on
    the GPU, each hop of a finished task's report and of the next task's dispatch waited
    up to its interval (17 ms over the four hops), while the GPU ran dry.  At a study's
    rate of messages (a few per task) sending each at once costs nothing.  The intervals
    are Dask's constants, not its config: set on the live objects (``run_on_scheduler``,
    ``run``), best effort (a scheduler that cannot run this package's functions keeps
    its own); a worker that joins during the study keeps Dask's."""
    interval = float(setting("study.stream-interval", interval, default=STREAM_INTERVAL))
    undo = [_prompt_client_stream(client, interval)]
    token = uuid.uuid4().hex  # this study's use of the streams other clients' studies share
    if getattr(client, "run_on_scheduler", None) is not None:
        try:
            sched_old = client.run_on_scheduler(_scheduler_streams, client_id=client.id, interval=interval,
                                                token=token)
            undo.append(lambda: client.run_on_scheduler(_scheduler_streams, client_id=client.id,
                                                        restore=sched_old, token=token))
        except Exception as exc:
            log.debug("the scheduler's streams keep their intervals: %s", exc)
        try:
            workers_old = client.run(_worker_stream, interval=interval, token=token)

            def workers_back():
                _restore_worker_streams(client, workers_old, token)

            undo.append(workers_back)
        except Exception as exc:
            log.debug("the workers' streams keep their intervals: %s", exc)

    def restore():
        for fn in reversed(undo):
            try:
                fn()
            except Exception as exc:  # a worker gone meanwhile: nothing to put back
                log.debug("a stream's interval not put back: %s", exc)

    return restore


def _prompt_client_stream(client, interval: float = CLIENT_SEND_INTERVAL):
    """Only the client's stream to the scheduler (Dask's 10 ms; see :func:`_prompt_streams`);
    returns the function that puts it back.  A client without that stream, or with a
    quicker one, is left alone; a client that reconnected meanwhile keeps its new stream."""
    comm = getattr(client, "scheduler_comm", None)
    old = getattr(comm, "interval", None)
    if not isinstance(old, (int, float)) or old <= interval:
        return lambda: None
    comm.interval = interval

    def restore():
        if getattr(client, "scheduler_comm", None) is comm:
            comm.interval = old

    return restore


def _board(client, plan, study, prefix, cluster_info):
    """Show the study on the dashboard's ``/sssp`` page (best effort; None without a
    dashboard or where the scheduler cannot import this package)."""
    if not (cluster_info or {}).get("dashboard"):
        return None
    try:
        from gpu_sssp.pipeline.dashboard import announce

        return announce(client, plan, study, prefix)
    except Exception as exc:
        log.warning("the study is not shown on the dashboard's /sssp page: %s", exc)
        return None


def _board_end(client, board, status: str, summary: dict | None = None) -> None:
    if board is None:
        return
    try:
        from gpu_sssp.pipeline.dashboard import conclude

        conclude(client, board, status, summary)
    except Exception as exc:
        log.debug("dashboard not updated: %s", exc)


def check_local_method(algorithm, *, gpus=None, cpu_workers=None) -> None:
    """Refuse a GPU-only ``algorithm`` for a local cluster of CPU workers (no GPU visible,
    or ``cpu_workers``) before the cluster starts and the folder is made (it used to fail
    the warm-up on every worker and leave a 'failed' study).  ``gpus``: a GPU cluster is
    asked for, which ``start_cluster`` refuses on its own where there is none.  An
    attached cluster decides on its own devices: not checked here."""
    if algorithm in (None, "auto") or gpus:
        return
    from gpu_sssp import kernels
    from gpu_sssp.kernels.errors import GPUUnavailableError, OptionError
    from gpu_sssp.kernels.registry import backends_of

    if algorithm not in kernels.available_methods() or "cpu" in backends_of(algorithm):
        return  # unknown names get the study's own message
    cpu = ", ".join(m for m in kernels.available_methods("cpu") if m != "auto")
    if kernels.device_count() == 0:
        raise GPUUnavailableError(f"{opt(f'--algorithm {algorithm}')}: a GPU method needs a CUDA device; none is "
                                  f"visible here, and the local cluster would be CPU workers (use auto or "
                                  f"a CPU method: {cpu})")
    if cpu_workers is not None:
        raise OptionError(f"{opt(f'--algorithm {algorithm}')} runs on GPUs, and {opt('--cpu-workers')} starts a "
                          f"CPU cluster (drop {opt('--cpu-workers')}, or use auto or a CPU method: {cpu})")


def _check_client(client, **cluster_options) -> None:
    """``study(client=...)``: a ``distributed.Client``, and none of the options for a
    cluster started or attached by the study, which would be dropped without a word."""
    from distributed import Client

    from gpu_sssp.kernels.errors import OptionError

    if not isinstance(client, Client):
        raise OptionError(f"client= takes a distributed.Client, got {type(client).__name__} {client!r:.80}; "
                          "a scheduler's address goes to scheduler=")
    given = [f"{k}=" for k, v in cluster_options.items() if v is not None and v is not False]
    if given:
        raise OptionError(f"{', '.join(given)} apply to a cluster the study starts or attaches, not to client=, "
                          "whose cluster is used as it is")


def study(graph, *, sources=None, ids=None, sources_file=None, random: int | None = None,
          seed: int | None = None, order: str | None = None, algorithm: str | None = None,
          batch_size: int | None = None, outputs=None, distance_form: str | None = None,
          max_distance_bytes: int | None = None, out="study-out", resume: bool = False,
          client=None, scheduler: str | None = None, scheduler_file: str | None = None,
          gpus=None, cpu_workers: int | None = None, dashboard: bool = False,
          host: str | None = None, dashboard_address: str | None = None,
          keep_graph: bool | None = None, on_cluster=None, on_start=None, on_batch=None,
          on_wait=None, targets=None, random_targets: int | None = None, target_seed: int | None = None,
          stats_over: str | None = None, matrix_form: str | None = None, report=None,
          **ingest_options) -> dict:
    """Run (or resume) a study from Python, as ``sssp study`` does; return its summary.

    Parameters
    ----------
    graph : str, os.PathLike or kernels.graph.Graph
        An input file or Parquet edge list (loaded with ``pipeline.graph.load_graph`` and
        ``ingest_options``), or a graph already loaded from one (its ``path``).
    sources, ids, sources_file, random, seed, order
        The sources (exactly one of ``sources``, ``ids``, ``sources_file``, ``random``;
        see ``pipeline.sources.plan_sources``): ``sources`` is ``"all"`` or, as
        :func:`gpu_sssp.matrix` takes it, file ids or a file of ids.  Default: every vertex.
    algorithm, batch_size, outputs, distance_form, max_distance_bytes, out, resume
        As the CLI's options (``pipeline.study.plan_study``; default ``algorithm``
        ``"auto"``, ``outputs`` ``"stats"``).  On ``resume`` the algorithm, outputs, batch
        size, distance form and order not given again are the folder's, also where
        dask config sets them (``sssp.study.batch-size``, ...): the settings are for
        new studies.
    client : distributed.Client, optional
        Run on this client's cluster (left open).  Otherwise a cluster is started or
        attached with ``scheduler``, ``scheduler_file``, ``gpus`` or ``cpu_workers``
        (``pipeline.cluster.start_cluster``) and closed at the end.
    dashboard : bool
        Serve the Dask dashboard of a cluster started here (off by default).
    host, dashboard_address : str, optional
        Where a cluster started here listens (default: 127.0.0.1 only; see
        ``pipeline.cluster.start_cluster``).  Checked first, with the settings
        ``sssp.cluster.host`` and ``dashboard-address``: a bad form or a host name that
        does not resolve here is a ``UsageError`` before the graph is read.
    keep_graph : bool, optional
        On a cluster this call did not start (``client``, ``scheduler``), keep the
        graph loaded on the workers (and their GPUs) after the study, for the next
        study of the same graph.  Default: config ``sssp.study.keep-graph``, else
        False: the graph's worker plugin is unregistered, which frees the workers'
        host and device copies, so that long-lived workers do not grow with every
        graph studied.
    on_cluster : callable(info, plan, study), optional
        Called once the cluster is up and the batches are fixed; ``info["mode"]`` is
        ``none`` where no cluster was started or attached: a ``resume`` of a complete
        study (nothing pending, no ``report``) is summarised without one.
    on_start, on_batch : callable, optional
        See :func:`run_study`.
    on_wait : callable(str), optional
        Told once, with one line, when an attached cluster (``client``, ``scheduler``,
        ``scheduler_file``) has no worker yet: the study waits for the first one
        (``pipeline.cluster.await_first_worker``; default: a log warning); once
        when the cluster has no worker left mid-study, and once for each worker that
        joins mid-study and is refused (:func:`run_study`).
    targets, random_targets, target_seed, stats_over, matrix_form : optional
        A matrix study (``pipeline.study.matrix``): targets ``"all"``, a targets file or
        file ids, or ``random_targets`` K drawn with ``target_seed``
        (``pipeline.targets.plan_targets``); ``stats_over`` ``targets`` (default) or
        ``all``; ``matrix_form`` ``wide`` (default) or ``long`` (both refused without
        targets).  On ``resume`` without target options, a matrix study goes on with the
        folder's targets (its ``targets.parquet``), ``stats_over`` and form.
    report : str or os.PathLike, optional
        Save Dask's performance report of the run (an HTML file) here
        (``pipeline.cluster.performance_report``: from the first batch's submission to
        the summary, written also when the run stops early).

    Returns
    -------
    dict
        The summary (also in ``<out>/summary.json``).

    Raises
    ------
    StudyError
        Bad options, a folder in the way or held by another run (checked before any
        cluster starts).
    pipeline.plugins.WorkerGraphError
        The workers cannot load the graph or its hierarchy (see :func:`run_study`).
    SsspError, Exception, KeyboardInterrupt
        A batch failed (its error raised as itself, e.g. ``NegativeCycleError``) or
        the run was interrupted; finished batches stay recorded for ``resume`` and the
        manifest says ``failed`` (with the reason) or ``interrupted``.
    """
    from gpu_sssp.pipeline.cluster import (ClusterHandle, describe_cluster, listen_addresses,
                                           quiet_in_spawned_import, start_cluster, worker_devices)
    from gpu_sssp.pipeline.config import check_settings
    from gpu_sssp.pipeline.graph import load_graph
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study.folder import resumed_settings
    from gpu_sssp.pipeline.study.plan import distance_limit, plan_study, refuse_idle_distance_form

    quiet_in_spawned_import()  # a worker importing an unguarded script: its parent says why
    check_settings()  # every sssp.* setting, before any folder or cluster exists
    from gpu_sssp.kernels.errors import OptionError
    from gpu_sssp.kernels.registry import check_flag
    from gpu_sssp.pipeline.sources import _whole_number

    resume = check_flag(resume, "resume")  # "no" is truthy: it resumed (or summarised) the folder's study
    dashboard = check_flag(dashboard, "dashboard")  # ("no" started one)
    keep_graph = None if keep_graph is None else check_flag(keep_graph, "keep_graph")
    distance_limit(max_distance_bytes)  # a bad value is refused where no output would use it too
    for name, value in (("batch_size", batch_size), ("cpu_workers", cpu_workers)):
        # int() took 1.5 as 1 and "2" as 2 (the command line and the settings refuse them)
        if value is not None and not _whole_number(value):
            raise OptionError(f"{name} must be a whole number, got {value!r}")
    for name, value in (("on_cluster", on_cluster), ("on_start", on_start), ("on_batch", on_batch),
                        ("on_wait", on_wait)):
        if value is not None and not callable(value):  # it failed once batches were done, the study "failed"
            raise OptionError(f"{name} must be a callable, got {type(value).__name__}")
    if ingest_options:
        import inspect

        from gpu_sssp.pipeline.graph import refuse_unknown_options

        refuse_unknown_options("study", ingest_options, [n for n in inspect.signature(study).parameters
                                                         if n != "ingest_options"])
    if ingest_options and not isinstance(graph, (str, os.PathLike)):
        # with a path they go to load_graph, which refuses a typo; with a Graph they were dropped
        # without a word (study(g, ranom=2) solved every source)
        raise OptionError(f"study() got {', '.join(sorted(ingest_options))} with a {type(graph).__name__}: "
                          "options for reading a graph file (load_graph's), or unknown; a Graph is used as "
                          "it is")
    if client is not None:
        _check_client(client, scheduler=scheduler, scheduler_file=scheduler_file, gpus=gpus,
                      cpu_workers=cpu_workers, dashboard=dashboard, host=host, dashboard_address=dashboard_address)
    # what can be refused before the graph is read, in the caller's words (the command
    # line's --report or Python's report=: kernels.errors.opt), is refused here once
    if report is not None:  # not written once the study is done (a folder, no bokeh, ...)
        from gpu_sssp.pipeline.writers import refuse_bad_report_path

        inputs = [p for p in (graph if isinstance(graph, (str, os.PathLike)) else getattr(graph, "path", None),
                              sources_file, sources, targets) if isinstance(p, (str, os.PathLike))]
        refuse_bad_report_path(report, "--report", inputs=inputs, folder=out)
    if seed is not None and random is None:  # the seed would be dropped without a word
        raise OptionError(f"{opt('--seed')} goes with {opt('--random K')} (the number of sources to draw); "
                          "it draws nothing alone")
    from gpu_sssp.pipeline.sources import check_seed

    for option, value in (("--seed", seed), ("--target-seed", target_seed)):
        if value is not None:
            check_seed(value, opt(option))  # (plan_sources / plan_targets check it too)
    from gpu_sssp.pipeline.writers import check_output_dir

    check_output_dir(out)
    # on a resume, what is not given again is the folder's study's (the batch size is
    # adopted by Study); a matrix study's targets too, when no target option is given
    kept = resumed_settings(out) if resume else {}
    # (a plain --resume of a `-m dijkstra --outputs distances` study was refused until both
    # were given again)
    if algorithm is None:  # (a method this version does not know: the resume names the difference)
        from gpu_sssp.kernels import available_methods

        algorithm = kept["algorithm"] if kept.get("algorithm") in available_methods() else "auto"
    outputs = outputs if outputs is not None else kept.get("outputs", "stats")
    # the caller's own value (a resume fills it from the folder below)
    refuse_idle_distance_form(distance_form, outputs, targets is not None or random_targets is not None)
    if client is None and scheduler is None and scheduler_file is None:
        # a cluster started here: where it listens (forms, and that a host name resolves)
        # is refused now, not by Dask's traceback once the folder exists
        if dashboard_address is not None and not dashboard:
            # (the command line's dashboard is on unless --no-dashboard; study()'s is off)
            raise OptionError(opt("--dashboard-address and --no-dashboard contradict each other",
                                  python="dashboard_address= goes with dashboard=True: a cluster started by "
                                  "study() serves no dashboard unless asked"))
        listen_addresses(host, dashboard_address, dashboard)
        check_local_method(algorithm, gpus=gpus, cpu_workers=cpu_workers)
    elif client is None:  # an attached cluster: its address or file, before the graph is read
        from gpu_sssp.pipeline.cluster import check_scheduler_address, read_scheduler_file

        if scheduler is not None and scheduler_file is None:
            check_scheduler_address(scheduler)
        elif scheduler_file is not None and scheduler is None:
            read_scheduler_file(scheduler_file)  # (start_cluster reads it again: it may change)
    # (is None: a value that is no string, an array, is refused by its own check below,
    # where "or" raised NumPy's "truth value of an array is ambiguous")
    distance_form = distance_form if distance_form is not None else kept.get("distance_form")
    order = order if order is not None else kept.get("order")
    stats_over = stats_over if stats_over is not None else kept.get("stats_over")
    matrix_form = matrix_form if matrix_form is not None else kept.get("matrix_form")
    if targets is None and random_targets is None and not kept.get("targets"):
        _matrix.refuse_without_targets(stats_over, matrix_form)  # before the graph is loaded
    if isinstance(graph, (str, os.PathLike)):
        graph_path, g = os.fspath(graph), load_graph(graph, **ingest_options)
    else:
        g = graph
        graph_path = g.path or ""
        if int(g.id_base) not in (0, 1):
            # the workers read the graph from a Parquet edge list, whose ids are 0- or
            # 1-based: refused here, not once the folder and the cluster exist
            from gpu_sssp.kernels.errors import UsageError

            raise UsageError(f"a study's graph has 0- or 1-based ids (its workers read it from a Parquet edge "
                             f"list); {g.name}'s id_base is {g.id_base}: build it with id_base=0 or 1")
    if all(v is None for v in (sources, ids, sources_file, random)):
        sources = "all"
    sp = plan_sources(g, sources=sources, ids=ids, sources_file=sources_file, random=random, seed=seed,
                      order=setting("study.order", order))
    from gpu_sssp.pipeline.targets import plan_targets

    tp = plan_targets(g, targets=targets, random=random_targets, seed=target_seed,
                      on_count=_matrix.targets_limit(sp.count, max_distance_bytes, matrix_form))
    if tp is None and kept.get("targets"):  # the folder's matrix study goes on with its targets
        tp = _matrix.resumed_targets(out, kept["targets"], g)
    plan = plan_study(g, graph_path, sp, out=out, algorithm=algorithm, batch_size=batch_size,
                      outputs=outputs, distance_form=distance_form, max_distance_bytes=max_distance_bytes,
                      targets=tp, stats_over=stats_over, matrix_form=matrix_form)
    # folder checks (and its lock) before any cluster starts; with an attached cluster the
    # workers may not share this machine's files, so the graph goes to the folder
    folder = Study(plan, resume=resume,
                   shared=client is not None or scheduler is not None or scheduler_file is not None)
    close = False
    registered: list = []  # the graph's plugin, once this run registered it
    t_cluster = time.perf_counter()
    try:
        if resume and plan.batches and not folder.pending and report is None:
            # a complete study resumed: its summary without a cluster (which took some 2 s
            # to start, or an attach to a scheduler, for nothing); the folder was checked
            # as ever (Study), and its batch files (a missing one would be pending).  Not
            # with a report: Dask's performance report needs a cluster.  Not before the
            # batches are laid out: a resume that finds no study recorded, without
            # --batch-size, has none yet (the workers' devices decide them, below)
            handle = ClusterHandle(None, None, "none", "auto")
        elif client is not None:
            handle = ClusterHandle(client, None, "attached", "auto")
        else:
            handle = start_cluster(scheduler=scheduler, scheduler_file=scheduler_file, gpus=gpus,
                                   cpu_workers=cpu_workers, dashboard=dashboard, host=host,
                                   dashboard_address=dashboard_address)
            close = True
    except BaseException:
        folder.close()
        raise
    stopped = False
    try:
        info = describe_cluster(handle, notice=on_wait)
        info["start_s"] = time.perf_counter() - t_cluster if close else None  # started here
        plan.resolve_batch_size(worker_devices(info))
        if on_cluster is not None:
            on_cluster(info, plan, folder)
        from gpu_sssp.pipeline.cluster import performance_report

        with (performance_report(report, handle.client) if report is not None else contextlib.nullcontext()):
            return run_study(handle.client, plan, resume=resume, backend=handle.backend, cluster_info=info,
                             on_start=on_start, on_batch=on_batch, on_wait=on_wait, study=folder,
                             registered=registered,
                             # a cluster started here goes at the end, the graph with it
                             keep_graph=True if handle.cluster is not None else keep_graph)
    except BaseException:
        stopped = True
        raise
    finally:
        folder.close()  # released already unless the run stopped before it began
        # a cluster this call did not start (a client given, or attached with --scheduler
        # or --scheduler-file) outlives the study: free the workers' copies of the graph
        # (only a plugin this run registered: a resume with nothing to do registers none)
        if registered and handle.cluster is None and handle.client is not None and _connected(handle.client):
            forget_graph(handle.client, plan, registered[0],
                         unregister=not setting("study.keep-graph", keep_graph, default=False))
        if close:
            handle.close()
            if stopped:  # its workers are gone: what they were writing is removed now
                folder.tidy_after_stop()
