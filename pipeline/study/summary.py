"""The study summary (diameter, radius, closeness extremes, totals, timings) from its stats."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def _reach(n: int, what: str) -> str:
    """``1 source reaches every target it reaches``, ``3 sources reach every target they reach``."""
    if n == 1:
        return f"1 source reaches every {what} it reaches"
    return f"{n:,} sources reach every {what} they reach"


def _pick(values: np.ndarray, ids: np.ndarray, mask: np.ndarray, fn) -> dict | None:
    if not mask.any():
        return None
    sub = np.flatnonzero(mask)
    j = sub[fn(values[sub])]
    v = values[j]
    return {"value": (int(v) if float(v).is_integer() else float(v)), "source": int(ids[j])}


def summarize(stats: pa.Table, plan, *, wall_s: float = 0.0, run_sources: int = 0,
              run_meta: list | None = None, workers: int = 1,
              clock: tuple[float, float] | None = None, extra_timings: dict | None = None) -> dict:
    """The study summary from its stats table.

    Definitions (``n`` = vertices, over the solved sources):

    - ``eccentricity_max``: the largest eccentricity (over the vertices each source
      reaches) and its source.
    - ``diameter``: the largest eccentricity among sources that reach all ``n``
      vertices.  ``exact`` when every vertex was a source and each reaches all;
      ``infinite`` when some solved source does not reach all, every vertex a source or
      a sample alike (a vertex it misses is at infinite distance: the graph is not
      strongly connected): ``{"value": None, "kind": "infinite (not strongly
      connected)", "source"`` (one such source) ``, "largest_finite"`` (the largest
      eccentricity among the sources that reach all, when there is one) ``}``;
      otherwise a ``lower bound``.
    - ``radius``: the smallest eccentricity among sources that reach all vertices;
      exact when every vertex was a source, else an ``upper bound``; infinite when
      every vertex was a source and none reaches all; ``{"value": None, "kind":
      "unknown: ..."}`` when not every vertex was a source and no solved one reaches
      all (there is then no bound).
    - ``closeness``: ``others / sum_distance`` per source, ``others`` the vertices it
      reaches other than itself (``reached - 1``; with ``stats_over="targets"``, the
      distinct targets it reaches other than itself, unless the targets are every
      vertex: the summary is then a study's without targets); largest and smallest with their
      sources (sources reaching nothing else are left out).  A source that reaches
      others, all at distance exactly 0 (zero-weight arcs: eccentricity 0 and sum 0), has
      infinite closeness: the largest is then ``{"value": None, "kind": "infinite ...",
      "source", "sources" (how many), "largest_finite"}``, as the diameter's infinite
      form (JSON has no inf).  On a graph with a negative arc weight closeness is not
      defined (a sum of distances can be 0 or negative while they are not): both
      extremes are then ``{"value": None, "kind": "not defined: ..."}``.

    Parameters
    ----------
    stats : pyarrow.Table
        Per-source statistics of every finished batch (``STATS_SCHEMA``).
    plan : StudyPlan
    wall_s : float
        Wall-clock seconds of this run.
    run_sources : int
        Sources solved in this run (fewer than ``stats`` holds after a resume).
    run_meta : list of dict, optional
        The metadata :func:`solve_batch` returned for this run's batches; the
        ``*_this_run`` timings are summed from it.
    workers : int
        Workers of the cluster, to set the kernel time against the workers' total
        time.
    clock : (float, float), optional
        Wall-clock (epoch) times at which the timed part of the run began (before the
        graph's registration and the submissions) and its last batch was collected;
        kept as ``timings["started_at"]`` / ``["collected_at"]`` so that the batches'
        own ``started`` / ``ended`` stamps can be set against them.
    extra_timings : dict, optional
        Added to ``timings`` (the run's ``startup`` and per-worker ``cluster`` figures,
        :func:`pipeline.study.timing.cluster_timings`).

    Returns
    -------
    dict
        Counts (``sources_planned``, ``sources_solved``, ``complete``, ...),
        ``eccentricity_max``, ``diameter``, ``radius``, ``closeness_max`` and
        ``closeness_min`` (each ``{"value", "source"}`` or ``None``; where several
        sources share the value, the smallest source id, so that the summary does not
        depend on the batch order), totals, the
        algorithms and devices used, and ``timings``.  Sources are file ids as in
        the stats table.
    """
    run_meta = run_meta or []
    # in source order: a value several sources share (a diameter, a radius, a closeness)
    # names the smallest of them, not the first of the study's batch order (--order,
    # batch size and layout, the workers), which two runs of one study may not share
    stats = stats.sort_by("source")
    g = plan.graph
    n = g.n
    src = stats.column("source").to_numpy()
    reached = stats.column("reached").to_numpy()
    ecc = stats.column("eccentricity").to_numpy()
    sdist = stats.column("sum_distance").to_numpy()
    kernel_ms = stats.column("kernel_ms").to_numpy()
    relax = stats.column("relaxations").to_numpy()
    solved = int(len(src))
    # every vertex a source, however the sources were given (--sources all, or a list or
    # file that names every vertex): the diameter and radius are then exact, not bounds
    every_source = solved == n and len(np.unique(src)) == n
    tp = getattr(plan, "targets", None)
    distinct_targets = int(len(np.unique(tp.targets))) if tp is not None else 0
    # a matrix study's stats over its distinct targets: no diameter/radius, unless the
    # targets are every vertex (--targets all, or a file naming them all): its stats are
    # then over every vertex, and the summary is that of a study without targets
    over_targets = tp is not None and getattr(plan, "stats_over", "") == "targets" and distinct_targets < n
    universe = n
    if over_targets:
        universe = distinct_targets
        every_source = False
    full = reached == universe
    finite = np.isfinite(ecc)
    diam = _pick(ecc, src, full & finite, np.argmax)
    rad = _pick(ecc, src, full & finite, np.argmin)
    if diam is not None:
        diam["kind"] = "exact" if every_source and full.all() else "lower bound"
        rad["kind"] = "exact" if every_source else "upper bound"
    elif every_source and solved:
        # no vertex reaches every other: each eccentricity, so the smallest, is infinite
        rad = {"value": None, "kind": "infinite (no vertex reaches every other)"}
    elif solved:
        # a sample (or an unfinished all-sources study) with no source reaching all: an
        # unsampled vertex may reach every other, so the radius has no bound either way
        rad = {"value": None, "kind": "unknown: no sampled source reaches every vertex"}
    if solved and not full.all():
        # a solved source that misses a vertex is a pair at infinite distance, whether
        # every vertex was a source or a sample: the diameter is infinite, not unknown
        diam = {"value": None, "kind": "infinite (not strongly connected)",
                "source": int(src[np.argmin(full)]),
                **({"largest_finite": diam} if diam is not None else {})}
    others = reached - 1
    if over_targets:  # the source counts only where it is a target
        others = reached - np.isin(src, tp.targets + g.id_base).astype(np.int64)
        diam = rad = {"value": None, "kind": "not computed: statistics over the targets only (give --stats-over all for it)"}
    what = "target" if over_targets else "vertex"
    close_max = close_min = None
    if getattr(g, "has_negative", False):
        # (reached-1)/sum means nothing when distances can be negative: a sum of 0 or
        # below comes from distances that are not all 0, a positive sum can hide negative ones
        if solved:
            close_max = close_min = {"value": None, "kind": "not defined: the graph has negative arc weights"}
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            close = np.where((others > 0) & (sdist > 0), others / sdist, np.nan)
        ok = np.isfinite(close)
        close_max, close_min = _pick(close, src, ok, np.argmax), _pick(close, src, ok, np.argmin)
        # reaches others, every one at distance exactly 0 (the largest is 0 and they add up
        # to 0): closeness inf
        at_zero = (others > 0) & (sdist == 0) & (np.nan_to_num(ecc, nan=1.0) == 0)
        if at_zero.any():
            inf = {"value": None, "source": int(src[np.flatnonzero(at_zero)[0]]), "sources": int(at_zero.sum()),
                   "kind": f"infinite: {_reach(int(at_zero.sum()), what)} at distance 0 (zero-weight arcs)",
                   "largest_finite": close_max}
            close_max = inf
            if close_min is None:  # every source with a closeness has an infinite one
                close_min = dict(inf, largest_finite=None)
    algorithms = sorted(set(stats.column("algorithm").to_pylist())) if solved else []
    devices = sorted(set(stats.column("device").to_pylist())) if solved else []
    kernel_total = float(kernel_ms.sum())
    run_kernel = float(sum(m.get("kernel_ms", 0.0) for m in run_meta))
    worker_s = wall_s * max(workers, 1)
    outside = max(worker_s - run_kernel / 1e3, 0.0)
    timings = {
        "wall_s": wall_s,
        "workers": workers,
        "sources_this_run": run_sources,
        "sources_per_s": (run_sources / wall_s) if wall_s > 0 else None,
        "kernel_ms_this_run": run_kernel,
        "kernel_ms_total": kernel_total,
        "solve_ms_this_run": float(sum(m.get("solve_ms", 0.0) for m in run_meta)),
        "write_ms_this_run": float(sum(m.get("write_ms", 0.0) for m in run_meta)),
        "outside_kernels_s": outside,
        "outside_kernels_vs_kernel": (outside / (run_kernel / 1e3)) if run_kernel > 0 else None,
    }
    if clock is not None:
        timings["started_at"], timings["collected_at"] = float(clock[0]), float(clock[1])
    if extra_timings:
        timings.update(extra_timings)
    return {
        "study_id": plan.study_id,
        "graph": g.name,
        "vertices": n,
        "arcs": g.m,
        "sources_planned": plan.sources.count,
        "sources_solved": solved,
        "complete": solved == plan.sources.count,
        "sources_reaching_all": int(full.sum()),
        "eccentricity_max": _pick(ecc, src, finite, np.argmax),
        "diameter": diam,
        "radius": rad,
        "closeness_max": close_max,
        "closeness_min": close_min,
        "reached_total": int(reached.sum()),
        "relaxations_total": int(relax.sum()),
        "algorithms": algorithms,
        "devices": devices,
        "timings": timings,
        **({"stats_over": "targets" if getattr(plan, "stats_over", "") == "targets" else "vertices",
            "targets": tp.count, "distinct_targets": distinct_targets} if tp is not None else {}),
    }
