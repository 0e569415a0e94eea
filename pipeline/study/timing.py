"""Where a study's time went, per worker: start-up, busy time, idle time, the tail.

Pure functions of what the run recorded (no cluster): the tasks' wall-clock stamps
(:func:`pipeline.study.task.solve_chunk` returns ``worker``, ``started``, ``ended``,
``kernel_ms``, ``rows``), each worker's graph-plugin start-up (``GraphPlugin.timings``:
``setup_at``, ``graph_load_s``, ``hierarchy_load_s``, ``compile_s``, ``warm_s``, ``setup_s``,
``ready_at``) and the run's clock (when its timed part began and when its last batch was
collected).  Stamps are ``time.time()`` of the worker's host, comparable with the client's
on one host or under NTP.
"""
from __future__ import annotations


def union_length(intervals) -> float:
    """Total length covered by ``[(start, end), ...]`` (overlaps counted once)."""
    total = 0.0
    cur_s = cur_e = None
    for s, e in sorted((float(a), float(b)) for a, b in intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def cluster_timings(tasks: list[dict], startup: dict | None = None, *, started_at: float,
                    collected_at: float) -> dict:
    """Per-worker and whole-run figures of a study's run.

    Parameters
    ----------
    tasks : list of dict
        One per finished task: ``worker``, ``started``, ``ended`` (epoch seconds),
        ``kernel_ms``, ``rows``.  A task that started before its worker's graph was
        ready (it waited for the plugin's loading thread) counts from the ready time.
    startup : dict, optional
        ``{worker: GraphPlugin.timings}`` (empty for a worker whose plugin was loaded by
        an earlier study: it paid nothing now).
    started_at, collected_at : float
        Epoch seconds: the timed part's start (before the graph's registration) and the
        collection of its last batch.

    Returns
    -------
    dict
        ``workers``: per worker ``tasks``, ``sources``, ``busy_s`` (union of its tasks'
        intervals: a worker with two threads overlaps them), ``kernel_s``, ``ready_s``
        (graph, hierarchy, kernels loaded, from ``started_at``; ``None`` when loaded before),
        ``first_task_s`` (its first task's start from ``started_at``), ``first_batch_s`` (its
        first task's end), ``finish_s`` (its last task's end), ``idle_s`` (time between
        ready - or its first task - and its finish with no task of it running: waiting
        for the scheduler) and its start-up steps; and over the workers ``busy_s_max``,
        ``tail_s`` (last worker's finish minus the first's), ``first_batch_s`` (the latest
        worker's first batch), ``scheduler_overhead_s`` (sum of ``idle_s``: time a ready
        worker had nothing to run), ``dispatch_s`` (sum over workers of first task start
        minus ready: the first task's trip through the scheduler), ``drain_s``
        (``collected_at`` minus the last task's end).  Where tasks carry their device
        work's ``gpu_start``/``gpu_end``, each worker adds ``gpu_busy_s``,
        ``gpu_lead_s``, ``gpu_gaps_s`` and ``gpu_drain_s`` (:func:`_gpu_figures`) and the
        run their sums (``gpu_busy_s_sum``, ...).
    """
    startup = startup or {}
    per: dict[str, dict] = {}
    for t in tasks:
        w = str(t.get("worker", "?"))
        d = per.setdefault(w, {"tasks": 0, "sources": 0, "kernel_s": 0.0, "iv": []})
        d["tasks"] += 1
        d["sources"] += int(t.get("rows", 0))
        d["kernel_s"] += float(t.get("kernel_ms", 0.0)) / 1e3
        s, e = float(t["started"]), float(t["ended"])
        ready = (startup.get(w) or {}).get("ready_at")
        if ready is not None:  # a task that began before its worker was ready waited for it
            s = min(max(s, float(ready)), e)
        d["iv"].append((s, e))
        if t.get("gpu_start") is not None and t.get("gpu_end") is not None:
            d.setdefault("gpu", []).append((float(t["gpu_start"]), float(t["gpu_end"])))
    solve_start = min((min(s for s, _ in d["iv"]) for d in per.values()), default=None)
    out: dict[str, dict] = {}
    for w, d in sorted(per.items()):
        iv = d.pop("iv")
        gpu = d.pop("gpu", None)
        first = min(s for s, _ in iv)
        last = max(e for _, e in iv)
        busy = union_length(iv)
        st = startup.get(w) or {}
        ready = st.get("ready_at")
        ready_s = (float(ready) - started_at) if ready is not None and float(ready) >= started_at else None
        since = max(first if ready_s is None else min(first, float(ready)), started_at)
        row = dict(d, busy_s=busy, first_task_s=first - started_at, first_batch_s=min(e for _, e in iv) - started_at,
                   finish_s=last - started_at, ready_s=ready_s,
                   idle_s=max(0.0, (last - since) - busy),
                   dispatch_s=(max(0.0, first - float(ready)) if ready_s is not None else None))
        for k in ("graph_load_s", "hierarchy_load_s", "upload_s", "compile_s", "compile_wait_s", "warm_s", "setup_s"):
            if k in st:
                row[k] = float(st[k])
        if st.get("warm_method"):
            row["warm_method"] = str(st["warm_method"])
        if gpu:
            row.update(_gpu_figures(gpu, solve_start, collected_at))
        out[w] = row
    finishes = [r["finish_s"] for r in out.values()]
    last_end = max((t["ended"] for t in tasks), default=None)
    return {
        "workers": out,
        "workers_used": len(out),
        "busy_s_max": max((r["busy_s"] for r in out.values()), default=0.0),
        "busy_s_min": min((r["busy_s"] for r in out.values()), default=0.0),
        "tail_s": (max(finishes) - min(finishes)) if finishes else 0.0,
        "first_batch_s": max((r["first_batch_s"] for r in out.values()), default=None),
        "ready_s_max": max((r["ready_s"] for r in out.values() if r["ready_s"] is not None), default=None),
        "scheduler_overhead_s": sum(r["idle_s"] for r in out.values()),
        "dispatch_s": sum(r["dispatch_s"] for r in out.values() if r["dispatch_s"] is not None),
        "drain_s": (collected_at - float(last_end)) if last_end is not None else None,
        "tasks": len(tasks),
        **{f"{k}_sum": sum(r[k] for r in out.values() if k in r)
           for k in ("gpu_busy_s", "gpu_lead_s", "gpu_gaps_s", "gpu_drain_s")
           if any(k in r for r in out.values())},
    }


def _gpu_figures(spans, solve_start: float, collected_at: float) -> dict:
    """One GPU's side of the solve wall (epoch ``spans`` of its calls' device work,
    ``kernels.gpu.clock``): ``gpu_busy_s`` (their union), ``gpu_lead_s`` (from the
    study's first task anywhere to this GPU's first kernel), ``gpu_gaps_s`` (idle
    between its first and last kernel: the host fed it too slowly), ``gpu_drain_s``
    (from its last kernel's end to the last batch collected: writing, reporting, other
    GPUs' tails).  ``lead + busy + gaps + drain`` is the solve wall."""
    busy = union_length(spans)
    first = min(s for s, _ in spans)
    last = max(e for _, e in spans)
    return {"gpu_busy_s": busy, "gpu_lead_s": max(0.0, first - solve_start),
            "gpu_gaps_s": max(0.0, (last - first) - busy), "gpu_drain_s": max(0.0, collected_at - last)}
