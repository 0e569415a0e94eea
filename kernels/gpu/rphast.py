"""Travel-time matrices with ``phast`` on the GPU: RPHAST, a sweep restricted to the targets.

RPHAST (Delling, Goldberg, Werneck, "Faster Batched Shortest Paths in Road Networks",
ATMOS 2011): a target's final PHAST label depends only on the labels of the vertices
from which it can be reached by downward arcs (its *upward closure in the downward
DAG*).  The union of these closures over a set of targets is selected once per target
set (:func:`select`, on the host, a pass over the positions from the bottom level up,
kept with the graph), renumbered into rows level by level, and every batch of sources
then runs:

1. the upward phase of ``phast`` (a warp per source searches its upward search space
   into the +inf-at-rest array ``upd``, see ``kernels/cuda/phast.cu``),
2. the downward sweep over the selected rows only (``phast_restricted``: a row's value is
   its upward value, lowered over its downward arcs, all from selected rows),
3. ``phast_matrix``: the target rows transposed into a ``(k, T)`` float64 block on the
   device (and, for ``stats_over="targets"``, each source's reached count, largest and
   exact sum over the distinct targets), which is the only thing copied to the host.

With ``stats_over="all"`` step 2 is the full sweep (``phast_sweep``, every position a
row, the statistics over every vertex fused as usual) and step 3 only gathers.

Vertices outside the selection are never written, so the labels take ``rows x B``
entries instead of ``n x B``.  The selection of 10,000 random NY targets and the times of
each step are measured by ``tests/kernels/matrix_timing.py`` (BENCHMARKS.md).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpu_sssp.kernels.gpu.transfer import host_empty, to_host
from gpu_sssp.kernels.result import Result

_SEL_KEY = "phast-selections"


@dataclass(frozen=True)
class Selection:
    """The rows of a restricted sweep (host arrays, int32 unless said).

    ``sel_pos[r]``: the sweep position of row ``r`` (ascending, so rows are grouped by
    level, top first); ``sel_level_ptr``: the rows of each level that holds any;
    ``sdn_ptr``/``sdn_src``/``sdn_w``: downward arcs into each row, tails as rows;
    ``tg_row``: the row of each target; ``first``: uint8, 1 at the first occurrence of
    each distinct target."""

    key: bytes
    prepared: object
    sel_pos: np.ndarray
    sel_level_ptr: np.ndarray
    sdn_ptr: np.ndarray
    sdn_src: np.ndarray
    sdn_w: np.ndarray
    tg_row: np.ndarray
    first: np.ndarray
    select_s: float

    @property
    def rows(self) -> int:
        return int(len(self.sel_pos))

    @property
    def arcs(self) -> int:
        return int(len(self.sdn_src))


def select(prep, targets) -> Selection:
    """RPHAST's selection for ``targets`` (internal indices) in the prepared sweep ``prep``
    (:func:`kernels.gpu.phast.prepare`)."""
    from gpu_sssp.kernels.cpu_phast import _closure, first_occurrences, targets_key

    t0 = time.perf_counter()
    targets = np.asarray(targets, dtype=np.int64)
    n = prep.n
    tpos = prep.position[targets].astype(np.int64)
    mark = np.zeros(n, dtype=np.bool_)
    mark[tpos] = True
    # positions are by level, a downward arc's tail on a smaller level: one pass from
    # the last position back marks every tail of a marked head
    _closure(n, prep.dn_ptr, prep.dn_src_full, mark)
    sel_pos = np.flatnonzero(mark)
    row_of = np.full(n, -1, dtype=np.int64)
    row_of[sel_pos] = np.arange(len(sel_pos))
    per_level = np.diff(np.searchsorted(sel_pos, prep.level_ptr))
    lp = np.concatenate([[0], np.cumsum(per_level[per_level > 0])]).astype(np.int32)
    ptr = prep.dn_ptr.astype(np.int64)
    counts = ptr[sel_pos + 1] - ptr[sel_pos]
    sptr = np.zeros(len(sel_pos) + 1, dtype=np.int64)
    np.cumsum(counts, out=sptr[1:])
    idx = np.repeat(ptr[sel_pos] - sptr[:-1], counts) + np.arange(int(sptr[-1]), dtype=np.int64)
    return Selection(key=targets_key(targets), prepared=prep, sel_pos=sel_pos.astype(np.int32),
                     sel_level_ptr=lp, sdn_ptr=sptr.astype(np.int32),
                     sdn_src=row_of[prep.dn_src_full[idx]].astype(np.int32),
                     sdn_w=np.ascontiguousarray(prep.dn_w[idx]), tg_row=row_of[tpos].astype(np.int32),
                     first=first_occurrences(targets).astype(np.uint8), select_s=time.perf_counter() - t0)


def get_selection(graph, prep, targets) -> Selection:
    """:func:`select`, made once per target set and kept with the graph (the last four)."""
    from gpu_sssp.kernels.cpu_phast import kept_selection

    return kept_selection(graph, _SEL_KEY, targets, lambda sel: sel.prepared is prep, lambda: select(prep, targets))


def _device_selection(graph, sel: Selection):
    from gpu_sssp.kernels._gpu import cupy as _cupy
    from gpu_sssp.kernels.gpu.phast import _device_slot

    cp = _cupy()
    cache = _device_slot(graph).setdefault("selections", {})
    got = cache.get(sel.key)
    if got is None or got[0] is not sel:
        while len(cache) >= 4:
            cache.pop(next(iter(cache)))
        got = (sel, {k: cp.asarray(getattr(sel, k)) for k in
                     ("sel_pos", "sel_level_ptr", "sdn_ptr", "sdn_src", "sdn_w", "tg_row", "first")})
        cache[sel.key] = got
    return got[1]


def solve_targets(graph, prep, sources, targets, *, stats_over="targets", batch_size=None,
                  blocks_per_sm=None) -> Result:
    """The ``(len(sources), len(targets))`` matrix by RPHAST (or the full sweep for
    ``stats_over="all"``); called by :func:`kernels.gpu.phast.solve` with ``targets``.

    ``counters`` hold ``kernel_ms`` (CUDA events around the sweeps and the matrix
    kernels), ``copy_ms`` (the matrix blocks' copies to the host, wall time),
    ``select_ms`` (the selection, 0 when it was cached), ``selected_rows`` /
    ``selected_arcs`` and the figures ``phast`` reports."""
    from gpu_sssp.kernels._gpu import cupy as _cupy
    from gpu_sssp.kernels._gpu import device_name
    from gpu_sssp.kernels.cpu_phast import targets_key
    from gpu_sssp.kernels.gpu.loader import load_module
    from gpu_sssp.kernels.gpu.phast import (_device_arrays, _kept_arrays_guard, _work_arrays, lanes_of,
                                            launch_sweep, plan_batches, source_positions, stats_to_host,
                                            sweep_args)

    cp = _cupy()
    sources = np.asarray(sources, dtype=np.int64)
    targets = np.asarray(targets, dtype=np.int64)
    N, T, n = len(sources), len(targets), graph.n
    restricted = stats_over == "targets"
    t_sel = time.perf_counter()
    held = graph.cached(_SEL_KEY, dict).get(targets_key(targets)) if restricted else None
    cached = held is not None and held.prepared is prep
    sel = get_selection(graph, prep, targets) if restricted else None
    select_ms = 0.0 if (cached or not restricted) else (time.perf_counter() - t_sel) * 1e3
    rows = sel.rows if restricted else n
    isz = prep.label_dtype.itemsize
    per_lane = max(rows, 1) * isz + T * 8 + n * 8  # labels, matrix block, upd + buckets
    kmax, Bmax, starts = plan_batches(graph, N, per_lane, batch_size)
    nb = len(starts)
    ct = prep.ctype
    names = ([f"phast::phast_restricted<{ct}, {v}>" for v in (1, 4)] if restricted
             else [f"phast::phast_sweep<{ct}, {v}, true>" for v in (1, 4)])
    mod = load_module("phast.cu", name_expressions=names, cooperative=True)
    aux = load_module("phast.cu", name_expressions=[f"phast::phast_matrix<{ct}>"])
    k_mat = aux.get_function(f"phast::phast_matrix<{ct}>")
    arrs = _device_arrays(graph, prep, True)
    if restricted:
        sd = _device_selection(graph, sel)
        tg_row, first = sd["tg_row"], sd["first"]
    else:
        tg_row = cp.asarray(prep.position[targets].astype(np.int32))
        first = cp.asarray(np.ones(T, dtype=np.uint8))
    # the labels and the upward searches' arrays: kept on the device between calls, as
    # phast's (the restricted sweep leaves the search arrays at rest too)
    work = _work_arrays(graph, prep, rows, Bmax, True)
    lab, upd, bucket, bcount = work["lab"], work["upd"], work["bucket"], work["bcount"]
    src_pos_d = cp.asarray(source_positions(prep, sources, starts, kmax, Bmax))
    stats = cp.zeros((3, nb, Bmax), dtype=cp.uint64)  # reached, eccentricity, sum
    reached, ecc, total = stats[0], stats[1], stats[2]
    mat_buf = cp.empty(kmax * T, dtype=cp.float64)
    out = host_empty((N, T), np.float64)
    events = []
    copy_s = 0.0
    launches = host_syncs = 0
    grid_used = []
    with _kept_arrays_guard():
        for i, s0 in enumerate(starts):
            k = min(kmax, N - s0)
            B, V, G, per_sm = lanes_of(k, blocks_per_sm)
            if restricted:
                kern = mod.get_function(f"phast::phast_restricted<{ct}, {V}>")
                args = (np.int32(prep.levels), np.int32(len(sel.sel_level_ptr) - 1), np.int32(B), np.int32(G),
                        arrs["level_ptr"], sd["sel_level_ptr"], sd["sel_pos"], sd["sdn_ptr"], sd["sdn_src"],
                        sd["sdn_w"], src_pos_d[i], lab, arrs["level_of"], arrs["push_ptr"], arrs["push_head"],
                        arrs["push_w"], upd, bucket, bcount)
            else:
                kern = mod.get_function(f"phast::phast_sweep<{ct}, {V}, true>")
                args = sweep_args(prep, arrs, work, B, G, src_pos_d[i], reached[i], ecc[i], total[i])
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
            ev0.record()
            if prep.levels:
                grid_used.append(launch_sweep(kern, args, B, V, per_sm))
                launches += 1
            if T and k:
                k_mat(((T + 31) // 32, (k + 31) // 32), (32, 8),
                      (np.int32(B), np.int32(k), np.int32(T), tg_row, first, lab, mat_buf,
                       np.int32(1 if restricted else 0), reached[i], ecc[i], total[i]))
                launches += 1
            ev1.record()
            events.append((ev0, ev1))
            ev1.synchronize()  # the copy's own time, not the kernels' it would wait for
            host_syncs += 1
            tc = time.perf_counter()
            to_host(mat_buf[:k * T], out[s0:s0 + k])
            copy_s += time.perf_counter() - tc
            host_syncs += 1
    kernel_ms = float(sum(cp.cuda.get_elapsed_time(a, b) for a, b in events))
    reached_h, ecc_h, sum_h = stats_to_host(stats, starts, kmax, N, Bmax)
    host_syncs += 1
    relax = np.full(N, prep.m_up + (sel.arcs if restricted else prep.m_down), dtype=np.int64)
    counters = {
        "iterations": 2 * prep.levels,
        "launches": launches,
        "host_syncs": host_syncs,
        "relaxations": int(relax.sum()),
        "relaxations_counted": False,  # upper bound: every upward arc, every swept downward arc
        "kernel_ms": kernel_ms,
        "copy_ms": copy_s * 1e3,
        "select_ms": select_ms,
        "ms_per_source": kernel_ms / max(N, 1),
        "mteps": N * graph.m / (kernel_ms * 1e3) if kernel_ms > 0 else 0.0,
        "batches": nb,
        "batch_size": kmax,
        "lanes": Bmax,
        "grid_blocks": max(grid_used) if grid_used else 0,
        "upward": "search",
        "hierarchy_build_s": float(prep.hierarchy.build_s),
        "targets": T,
        "stats_over": stats_over,
        "rphast": restricted,
        "label_rows": rows,
        "label_type": str(prep.label_dtype),
        "targets_gathered": "device",
    }
    if restricted:
        counters.update(selected_rows=sel.rows, selected_arcs=sel.arcs,
                        selected_levels=int(len(sel.sel_level_ptr) - 1))
    return Result(
        sources=sources, distances=out, predecessors=None, reached=reached_h, eccentricity=ecc_h,
        sum_distance=sum_h, iterations=np.full(N, 2 * prep.levels, dtype=np.int64), relaxations=relax,
        method="phast", backend="gpu", device=device_name(), counters=counters, targets=targets,
        stats_over="targets" if restricted else "vertices")
