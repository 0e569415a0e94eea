"""Running a study on a Dask client: the graph's worker plugin, one task per batch, the
journal kept as batches finish."""
from __future__ import annotations

import logging
import os
import time

from gpu_sssp.pipeline.config import setting
from gpu_sssp.pipeline.study import matrix as _matrix
from gpu_sssp.pipeline.study.folder import Study
from gpu_sssp.pipeline.study.plan import StudyPlan
from gpu_sssp.pipeline.study.task import solve_batch_task

log = logging.getLogger(__name__)


def submit_batches(client, plan: StudyPlan, indices, *, backend: str = "auto", retries: int | None = None):
    """Submit one task per batch index; return ``{future: index}``.

    Tasks are not pinned to workers (a dead worker's batches go elsewhere); keys are
    ``sssp-batch-<study id>-<index>``.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Its ``graph_path`` must already be set (see :meth:`Study.start`).
    indices : iterable of int
        Batch indices to run.
    backend : {"auto", "gpu", "cpu"}
        Backend the tasks ask for; ignored when the plan names an algorithm, whose
        own backend is used so that a method never runs on the wrong device.
    retries : int, optional
        Retries per task; default from dask config ``sssp.study.retries``.  Whether
        workers fsync their files comes from ``sssp.study.fsync`` (default on).

    Returns
    -------
    dict
        ``{future: batch index}``.
    """
    retries = int(setting("study.retries", retries))
    fsync = bool(setting("study.fsync", None, default=True))
    method = plan.algorithm
    if method != "auto":
        from gpu_sssp import kernels

        from gpu_sssp.kernels.registry import backends_of

        # a method on one backend runs there; one on several (phast) where asked
        on = backends_of(method)
        if backend not in on:
            backend = on[0] if len(on) == 1 else "auto"
    indices = [int(i) for i in indices]
    if not indices:
        return {}
    # one message for every batch (client.map): submitted one by one, the batches after
    # the first waited for the client's next batched send (10 ms), and so did the GPU
    # that got none of the first ones
    futs = client.map(
        solve_batch_task, indices, [plan.batches[i] for i in indices],
        key=plan.task_keys(indices), pure=False, retries=retries,
        fingerprint=plan.graph.fingerprint, graph_path=plan.graph_path, method=method,
        backend=backend, outputs=plan.outputs, distance_form=plan.distance_form,
        out=os.fspath(plan.out.resolve()), fsync=fsync, **_matrix.task_options(plan),
    )
    return dict(zip(futs, indices))


def register_graph(client, plan: StudyPlan, backend: str = "auto") -> None:
    """Register the graph's worker plugin (runs now on every worker, and on restarts).

    Registering a plugin rather than scattering the graph means a worker that
    restarts or joins later loads the graph too.

    Parameters
    ----------
    client : distributed.Client
    plan : StudyPlan
        Gives the Parquet path the workers read and the fingerprint they check.
    backend : {"auto", "gpu", "cpu"}
        Passed to :class:`pipeline.plugins.GraphPlugin`.
    """
    from gpu_sssp.pipeline.hierarchy import prepare_study
    from gpu_sssp.pipeline.plugins import GraphPlugin

    # phast: the client builds and caches the hierarchy once, the workers read it
    ch = prepare_study(plan.graph, plan.sources.count, backend, plan.algorithm) is not None
    client.register_plugin(GraphPlugin(plan.graph_path, plan.graph.fingerprint, backend, hierarchy=ch))


def forget_graph(client, plan: StudyPlan) -> None:
    """Unregister the graph's worker plugin: every worker's teardown frees its host and
    device copies of the graph.  Best effort (a study's result does not depend on it)."""
    from gpu_sssp.pipeline.plugins import plugin_name

    try:
        client.unregister_worker_plugin(plugin_name(plan.graph.fingerprint))
    except Exception as exc:  # never registered (nothing to solve), or workers gone
        log.debug("graph plugin not unregistered: %s", exc)


def run_study(client, plan: StudyPlan, *, resume: bool = False, backend: str = "auto",
              cluster_info: dict | None = None, on_batch=None, on_start=None,
              study: "Study | None" = None) -> dict:
    """Run (or resume) a study on a connected client; return its summary.

    Parameters
    ----------
    client : distributed.Client
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
    study : Study, optional
        The folder, already checked (``Study(plan, resume=...)``); made here when absent.

    Raises
    ------
    StudyError
        See :class:`Study`.
    SsspError
        A batch met a product error (``NegativeCycleError``, ...), raised as itself;
        the remaining tasks are cancelled, the finished ones stay recorded
        (``resume`` continues from there) and the manifest's status is ``failed``
        with the reason.
    Exception
        A batch failed after its retries (a bug, a lost worker too often): as above.
    KeyboardInterrupt
        As above, with the status ``interrupted``.
    """
    from distributed import as_completed

    if study is None:
        study = Study(plan, resume=resume)
    try:
        if plan.batch_size is None:
            if cluster_info is None:
                from gpu_sssp.pipeline.cluster import ClusterHandle, describe_cluster

                cluster_info = describe_cluster(ClusterHandle(client, None, "attached", backend))
            plan.resolve_batch_size(cluster_info["devices"])
        study.start(cluster_info)
    except BaseException:
        study.close()
        raise
    if on_start is not None:
        on_start(study)
    workers = len(client.scheduler_info().get("workers", {})) or 1
    if cluster_info and cluster_info.get("workers"):
        workers = int(cluster_info["workers"])
    pending = study.pending
    run_meta: list[dict] = []
    t0 = time.perf_counter()
    started_at = time.time()
    if pending:
        futures: dict = {}
        failed_batch = None
        try:
            register_graph(client, plan, backend)
            futures = submit_batches(client, plan, pending, backend=backend)
            # results are fetched in the background as tasks finish (not one round trip
            # per batch in this loop), and batches that finish together are journaled
            # with one fsync: the tail of a short study is mostly this bookkeeping
            done = as_completed(list(futures), with_results=True)
            for group in done.batches():
                metas, error = [], None
                for fut, meta in group:
                    index = futures.pop(fut)
                    if isinstance(meta, dict) and "error" in meta:  # a product error, see task
                        error = error or (index, meta["error"])
                    else:
                        metas.append(meta)
                # journaled batches' futures are dropped here: the scheduler then
                # forgets their results, and a worker that dies later does not make it
                # solve them again (a held future of a lost result is recomputed)
                group = fut = meta = None
                study.record_many(metas)
                for meta in metas:
                    run_meta.append(meta)
                    if on_batch is not None:
                        on_batch(meta, study)
                if error is not None:
                    failed_batch, exc = error
                    raise exc
        except BaseException as exc:
            client.cancel(list(futures))
            study.stop(exc, batch=failed_batch)
            raise
    wall = time.perf_counter() - t0
    run_sources = sum(m["rows"] for m in run_meta)
    return study.finish(wall_s=wall, run_sources=run_sources, run_meta=run_meta, workers=workers,
                        clock=(started_at, started_at + wall))


def study(graph, *, sources=None, ids=None, sources_file=None, random: int | None = None,
          seed: int | None = None, order: str | None = None, algorithm: str = "auto",
          batch_size: int | None = None, outputs="stats", distance_form: str | None = None,
          max_distance_bytes: int | None = None, out="study-out", resume: bool = False,
          client=None, scheduler: str | None = None, scheduler_file: str | None = None,
          gpus=None, cpu_workers: int | None = None, dashboard: bool = False,
          host: str | None = None, dashboard_address: str | None = None,
          keep_graph: bool | None = None, on_cluster=None, on_start=None, on_batch=None,
          targets=None, random_targets: int | None = None, target_seed: int | None = None,
          stats_over: str | None = None, matrix_form: str | None = None, **ingest_options) -> dict:
    """Run (or resume) a study from Python, as ``sssp study`` does; return its summary.

    Parameters
    ----------
    graph : str, os.PathLike or kernels.graph.Graph
        An input file or Parquet edge list (loaded with ``pipeline.graph.load_graph`` and
        ``ingest_options``), or a graph already loaded from one (its ``path``).
    sources, ids, sources_file, random, seed, order
        The sources (exactly one of ``sources="all"``, ``ids``, ``sources_file``,
        ``random``; see ``pipeline.sources.plan_sources``).  Default: every vertex.
    algorithm, batch_size, outputs, distance_form, max_distance_bytes, out, resume
        As the CLI's options (``pipeline.study.plan_study``).  On ``resume`` the batch
        size, distance form and order not given again are the folder's.
    client : distributed.Client, optional
        Run on this client's cluster (left open).  Otherwise a cluster is started or
        attached with ``scheduler``, ``scheduler_file``, ``gpus`` or ``cpu_workers``
        (``pipeline.cluster.start_cluster``) and closed at the end.
    dashboard : bool
        Serve the Dask dashboard of a cluster started here (off by default).
    host, dashboard_address : str, optional
        Where a cluster started here listens (default: 127.0.0.1 only; see
        ``pipeline.cluster.start_cluster``).
    keep_graph : bool, optional
        On a cluster this call did not start (``client``, ``scheduler``), keep the
        graph loaded on the workers (and their GPUs) after the study, for the next
        study of the same graph.  Default: config ``sssp.study.keep-graph``, else
        False: the graph's worker plugin is unregistered, which frees the workers'
        host and device copies, so that long-lived workers do not grow with every
        graph studied.
    on_cluster : callable(info, plan, study), optional
        Called once the cluster is up and the batches are fixed.
    on_start, on_batch : callable, optional
        See :func:`run_study`.
    targets, random_targets, target_seed, stats_over, matrix_form : optional
        A matrix study (``pipeline.study.matrix``): targets ``"all"``, a targets file or
        file ids, or ``random_targets`` K drawn with ``target_seed``
        (``pipeline.targets.plan_targets``); ``stats_over`` ``targets`` (default) or
        ``all``; ``matrix_form`` ``wide`` (default) or ``long``.

    Returns
    -------
    dict
        The summary (also in ``<out>/summary.json``).

    Raises
    ------
    StudyError
        Bad options, a folder in the way or held by another run (checked before any
        cluster starts).
    SsspError, Exception, KeyboardInterrupt
        A batch failed (its error raised as itself, e.g. ``NegativeCycleError``) or
        the run was interrupted; finished batches stay recorded for ``resume`` and the
        manifest says ``failed`` (with the reason) or ``interrupted``.
    """
    from gpu_sssp.pipeline.cluster import ClusterHandle, describe_cluster, start_cluster
    from gpu_sssp.pipeline.graph import load_graph
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study.folder import resumed_settings
    from gpu_sssp.pipeline.study.plan import plan_study

    if resume:
        kept = resumed_settings(out)  # the batch size not given again is adopted by Study
        distance_form = distance_form or kept.get("distance_form")
        order = order or kept.get("order")
        stats_over = stats_over or kept.get("stats_over")
        matrix_form = matrix_form or kept.get("matrix_form")
    if isinstance(graph, (str, os.PathLike)):
        graph_path, g = os.fspath(graph), load_graph(graph, **ingest_options)
    else:
        g = graph
        graph_path = g.path or ""
    if all(v is None for v in (sources, ids, sources_file, random)):
        sources = "all"
    sp = plan_sources(g, sources=sources, ids=ids, sources_file=sources_file, random=random, seed=seed,
                      order=setting("study.order", order))
    from gpu_sssp.pipeline.targets import plan_targets

    tp = plan_targets(g, targets=targets, random=random_targets, seed=target_seed)
    plan = plan_study(g, graph_path, sp, out=out, algorithm=algorithm, batch_size=batch_size,
                      outputs=outputs, distance_form=distance_form, max_distance_bytes=max_distance_bytes,
                      targets=tp, stats_over=stats_over, matrix_form=matrix_form)
    folder = Study(plan, resume=resume)  # folder checks (and its lock) before any cluster starts
    close = False
    try:
        if client is not None:
            handle = ClusterHandle(client, None, "attached", "auto")
        else:
            handle = start_cluster(scheduler=scheduler, scheduler_file=scheduler_file, gpus=gpus,
                                   cpu_workers=cpu_workers, dashboard=dashboard, host=host,
                                   dashboard_address=dashboard_address)
            close = True
    except BaseException:
        folder.close()
        raise
    try:
        info = describe_cluster(handle)
        plan.resolve_batch_size(info["devices"])
        if on_cluster is not None:
            on_cluster(info, plan, folder)
        return run_study(handle.client, plan, resume=resume, backend=handle.backend, cluster_info=info,
                         on_start=on_start, on_batch=on_batch, study=folder)
    finally:
        folder.close()  # released already unless the run stopped before it began
        if close:
            handle.close()
        elif not setting("study.keep-graph", keep_graph, default=False):
            forget_graph(handle.client, plan)
