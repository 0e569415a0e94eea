"""Batched multi-source shortest paths: many sources per kernel, reductions on the GPU.

Measured figures and the commands that produced them: ``BENCHMARKS.md``.

``batched(graph, sources)`` solves ``B`` sources at once (``B`` = 32 x words, chosen
per graph and device when not given; longer source lists run in chunks of ``B`` cut
from :func:`kernels.order.locality_order`, one region of the graph per chunk) with
one cooperative persistent kernel per chunk (``kernels/cuda/batched.cu``; ``mode``
picks a thread per improved pair, a warp per changed vertex, or a pull kernel): distances
vertex-major (a vertex's B values contiguous), only improved (vertex, source) pairs
relaxed next, a near-far threshold shared by the batch (pairs at or above it wait
until no pair below it is left), termination decided on the device.  Per-source
reached count, eccentricity, exact sum of distances and an optional histogram are
reduced on the GPU; the (B, n) distances and predecessors are copied to the host only
when asked.

Negative weights run the same kernel without a threshold (frontier Bellman-Ford);
more than ``n + 4`` rounds means a reachable negative cycle, which is then located and
raised as :class:`kernels.result.NegativeCycleError`.
"""
from __future__ import annotations

import logging
import math

import numpy as np

from gpu_sssp.kernels._gpu import cupy as _cupy
from gpu_sssp.kernels._gpu import device_name
from gpu_sssp.kernels.errors import OptionError, UsageError
from gpu_sssp.kernels.gpu.clock import anchor, span
from gpu_sssp.kernels.gpu.common import pred_names, predecessor_tree
from gpu_sssp.kernels.gpu.loader import check_fits, coop_blocks, device_graph, launch_cooperative, load_module
from gpu_sssp.kernels.order import locality_order
from gpu_sssp.kernels.result import NegativeCycleError, Result

log = logging.getLogger(__name__)

_CTYPE = {"int32": "int", "int64": "long long", "float64": "double"}
_NPTYPE = {"int32": np.int32, "int64": np.int64, "float64": np.float64}
_INF = {"int32": np.iinfo(np.int32).max, "int64": np.iinfo(np.int64).max, "float64": np.inf}
_WORDS = (1, 2, 4, 8, 16, 32)
_C_A, _C_Q, _C_F, _C_ITERS, _C_STATUS, _C_BUCKETS, _C_MAXQ, _C_MAXA, _C_R, _C_SIZE = (
    0, 2, 4, 7, 8, 9, 10, 11, 12, 16)
_L_MF, _L_SUMQ, _L_SUMA, _L_SUMF, _L_SIZE = 0, 3, 4, 5, 8
#: default sources per kernel (lowered to fit device memory)
DEFAULT_BATCH = 512
#: kernels: "pairs" (integer weights), "push" (integer weights), "pull" (any weights)
_MODES = ("pull", "push", "pairs")
#: "pairs" relaxes the arcs of a vertex with more than this many with a whole warp,
#: one such vertex at a time (the value of PAIRS_HEAVY in batched.cu)
PAIRS_HEAVY = 32
#: default for integer weights: "pairs" unless more than this share of the arcs leaves
#: vertices of more than PAIRS_HEAVY arcs (RMAT 2^20: 81%, where "push" is 1.8x faster;
#: road graphs, delaunay_n15, rgg_n_2_15: 0%, where "pairs" is 2.1-4.7x faster), or
#: n x B does not fit the 32-bit pair index; "push" then
PAIRS_MAX_HEAVY_SHARE = 0.5


def _heavy_share(graph) -> float:
    """Share of the arcs that leave vertices of more than PAIRS_HEAVY arcs (once per graph)."""
    def share():
        deg = graph.out_degree()
        return float(deg[deg > PAIRS_HEAVY].sum()) / max(graph.m, 1)

    return graph.cached("batched-heavy-share", share)


def default_mode(graph, tname: str, n_b: int) -> str:
    """The kernel ``batched`` runs when ``mode`` is not given (see PAIRS_MAX_HEAVY_SHARE)."""
    if tname == "float64":
        return "pull"
    heavy = _heavy_share(graph)
    if heavy > PAIRS_MAX_HEAVY_SHARE or graph.n * n_b >= 2**32:
        return "push"
    return "pairs"
_LLMAX = np.iinfo(np.int64).max
_BLOCK = 256
#: default near-far bucket width, in units of the mean |weight| (set from the NY sweep)
DELTA_FACTOR = 16.0


def _dist_type(graph) -> str:
    if not graph.integer_weights:
        return "float64"
    if graph.has_negative:
        # a negative cycle drives distances down for n + 4 rounds before it is detected:
        # int64 keeps them from wrapping (as the single-source kernels do)
        return "int64"
    wmax = float(graph.max_abs_weight) if graph.m else 0.0
    bound = graph.max_path_bound() + wmax
    return "int32" if bound < 2**31 - 2 else "int64"


def _words_for(b: int) -> int:
    need = max(1, math.ceil(b / 32))
    for w in _WORDS:
        if w >= need:
            return w
    raise ValueError(f"batch_size {b} is larger than the kernel's limit {32 * _WORDS[-1]}")


def _device_arrays(dg, graph, tname):
    """Forward and reverse CSR (int32) with weights in the distance type, cached."""
    cp = _cupy()

    def build():
        if graph.m >= 2**31 or graph.n >= 2**31:
            raise MemoryError(f"{graph.name}: the batched kernel indexes arcs with int32")
        rptr, ridx, rw, _ = graph.reverse()
        return (
            cp.asarray(graph.indptr.astype(np.int32)),
            cp.asarray(graph.indices.astype(np.int32)),
            cp.asarray(rptr.astype(np.int32)),
            cp.asarray(ridx.astype(np.int32)),
            cp.asarray(rw.astype(_NPTYPE[tname])),
            cp.asarray(graph.weights.astype(_NPTYPE[tname])),
        )

    return dg.cached(("batched", tname), build)


def _own_options() -> list[str]:
    """``batched``'s own options, from its signature (not a list kept beside it): its
    keywords less those every method takes (``kernels.solve``'s) and the study's turn."""
    import inspect

    common = {"predecessors", "distances", "targets", "stats_over", "turn"}
    return sorted(p.name for p in inspect.signature(batched).parameters.values()
                  if p.kind is p.KEYWORD_ONLY and p.name not in common)


def batched(graph, sources, *, predecessors=False, distances=True, count_work=False,
            batch_size=None, histogram_bins=None, delta=None, locality=True, mode=None,
            blocks_per_sm=None, turn=None, targets=None, stats_over="targets", **options) -> Result:
    """Shortest paths from every source, ``batch_size`` sources per kernel.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : ndarray of int64
        Internal 0-based source indices (repeats allowed).
    predecessors : bool
        Also return a shortest-path tree per source: tight arcs (``dist[p] + w ==
        dist[v]``) whose chains all end at the source, zero-weight cycles included
        (:func:`kernels.gpu.common.predecessor_tree`, after each batch converged; no
        cost when False).
    distances : bool
        Return the (B, n) float64 distances; False keeps only the statistics.
    count_work : bool
        Accepted for the common interface; relax operations are always counted.
    batch_size : int, optional
        Sources per kernel (1..512); default min(256, len(sources)), lowered to fit memory.
    histogram_bins : int or array_like, optional
        An int: that many equal bins per source from its smallest to its largest finite
        distance; an increasing array: shared bin edges.  Reported in
        ``counters["histogram"]`` as ``{"edges", "counts"}`` (counts: (len(sources), bins)).
    delta : float, optional
        Near-far bucket width (default ``DELTA_FACTOR`` x mean |weight|; ``inf`` for plain
        frontier Bellman-Ford, always used with negative weights).
    locality : bool
        Cut the batches from :func:`kernels.order.locality_order` (sources of one
        region together) instead of the given order.
    mode : {"pairs", "push", "pull"}, optional
        ``pairs`` (integer weights): a thread per improved (vertex, source) pair
        scatters with ``atomicMin`` (a warp for a vertex of more than 32 out-arcs);
        needs n x B below 2**32.  ``push`` (integer weights): a warp per changed
        vertex, all its improved sources.  Default: :func:`default_mode`.
        ``pull``: a warp per vertex whose in-neighbours changed gathers the
        improvements, no atomics on distances, a settle phase per iteration (floats
        always).
    blocks_per_sm : int, optional
        Resident blocks per SM of the cooperative kernel (default: as many as fit);
        fewer blocks make the grid-wide barrier cheaper.
    turn : lock, optional
        Held from the first chunk's set-up to the last launch enqueued (see
        :func:`kernels.solve`); the statistics then come back on a side stream that
        waits for this call's end event only, not for the next call's kernels.
    targets : ndarray of int64, optional
        Keep only these columns (``kernels.solve(targets=)``): each batch's target rows
        are gathered on the device, converted and copied to the host as a ``(k, T)``
        block; ``stats_over="targets"`` reduces that block (on the device) instead of
        reporting the statistics over every vertex.

    Returns
    -------
    Result

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from a source.
    MemoryError
        The batch does not fit on the device.
    """
    if options:  # (they were dropped without a word: a misspelt batch_size ran the default)
        raise OptionError(f"method 'batched' got unknown option(s) {sorted(options)}; it takes {_OPTIONS}")
    cp = _cupy()
    from gpu_sssp.kernels.registry import check_flag, check_whole

    # whole numbers (2.5 was 2, "64" 64) and True/False ("no" was truthy)
    batch_size = check_whole(batch_size, "batched: batch_size", minimum=1)
    blocks_per_sm = check_whole(blocks_per_sm, "batched: blocks_per_sm", minimum=1)
    locality = check_flag(locality, "batched: locality")
    sources = np.asarray(sources, dtype=np.int64)
    N = len(sources)
    n = graph.n
    tname = _dist_type(graph)
    ctype = _CTYPE[tname]
    tsize = np.dtype(_NPTYPE[tname]).itemsize
    dg = device_graph(graph)
    optr, oidx, rptr, ridx, rw, ow = _device_arrays(dg, graph, tname)

    if batch_size is None:
        bs = min(DEFAULT_BATCH, N)
    else:
        bs = int(batch_size)
        if bs < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        bs = min(bs, 32 * _WORDS[-1])
    W = _words_for(bs)
    if mode is None:
        mode = default_mode(graph, tname, 32 * W)
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if mode in ("push", "pairs") and tname == "float64":
        raise OptionError(f"mode={mode!r} needs integer weights (atomicMin on integers)")
    if mode == "pairs" and n * 32 * W >= 2**32:
        raise UsageError(f"mode='pairs' needs n x B below 2**32 (n = {n}, B = {32 * W})")
    while True:
        Bcap = 32 * W
        # predecessors: int32 predecessor and rank per (vertex, slot)
        need = n * (Bcap * tsize + 8 * W + 4 * 8 + 1) + (n * Bcap * 8 if predecessors else 0)
        if mode == "pairs":  # four pair lists (near x 2, far x 2) and three bit arrays
            need += n * (4 * Bcap * 4 + 12 * W)
        try:
            check_fits(graph, need, what=f"batched (B={Bcap})")
            break
        except MemoryError:
            if W == 1 or batch_size is not None:
                raise
            W //= 2
            bs = min(bs, 32 * W)

    if graph.has_negative:
        dlt = math.inf
    elif delta is None:
        mean_w = graph.mean_abs_weight if graph.m else 1.0
        dlt = DELTA_FACTOR * max(mean_w, 1e-300)
    else:
        dlt = float(delta)
        if not dlt > 0:
            raise ValueError(f"delta must be positive, got {delta}")
    if not math.isinf(dlt) and tname == "float64" and graph.m:
        # thr = (least far distance) + delta must pass that distance in float64: a delta
        # below its ulp leaves thr where it was and the far pairs wait for ever (a hang
        # tests/fuzz_methods.py found: delta=0.5 with weights near 1e38); 2**-50 of the
        # path bound always passes, whatever the distance
        dlt = max(dlt, graph.max_path_bound() * 2.0**-50)
    inf_t = _INF[tname]
    npT = _NPTYPE[tname]
    if math.isinf(dlt):
        thr0 = npT(inf_t)
        delta_t = npT(inf_t) if tname != "float64" else np.float64(np.inf)
    elif tname == "float64":
        thr0, delta_t = np.float64(dlt), np.float64(dlt)
    else:
        d = int(min(max(1, math.ceil(dlt)), inf_t))
        thr0, delta_t = npT(d), npT(d)
    if graph.has_negative:
        maxit = n + 4
    else:
        maxit = int(min(2**31 - 1, 64 * n + 4096))

    stname = "double" if tname == "float64" else "long long"
    # one module per distance type holds every batch width (one compile, not six);
    # the reductions live in a plain module: CuPy caps every grid of a cooperative one
    kname = {"pull": "batched_solve", "push": "batched_push", "pairs": "batched_pairs"}[mode]
    mod = load_module(
        "batched.cu",
        name_expressions=[f"batched::{kname}<{ctype}, {w}>" for w in _WORDS],
        cooperative=True,
    )
    aux = load_module(
        "batched.cu",
        name_expressions=[f"batched::batched_reduce<{ctype}, {stname}>",
                          f"batched::batched_histogram<{ctype}>"]
        + pred_names(ctype, ctype, "int", "int"),
    )
    k_solve = mod.get_function(f"batched::{kname}<{ctype}, {W}>")
    k_reduce = aux.get_function(f"batched::batched_reduce<{ctype}, {stname}>")
    k_hist = aux.get_function(f"batched::batched_histogram<{ctype}>")
    k_pred_init, k_pred_round = (aux.get_function(name) for name in pred_names(ctype, ctype, "int", "int"))

    # plan: chunks of bs sources, close ones together
    if locality and N > bs:
        order = locality_order(graph, sources)
    else:
        order = np.arange(N)
    chunks = [order[i:i + bs] for i in range(0, N, bs)]

    # work arrays (reused by every chunk: the stream orders them)
    dist = cp.empty(n * Bcap, dtype=npT)
    if mode == "pairs":
        # near bits x 2, far bits; near lists x 2, far lists x 2 of (vertex, slot) pairs
        pbits = [cp.empty(n * W, dtype=cp.uint32) for _ in range(3)]
        plists = [cp.empty(max(n * Bcap, 1), dtype=cp.uint32) for _ in range(4)]
        log_b = int(Bcap).bit_length() - 1
    else:
        pend = cp.empty(n * W, dtype=cp.uint32)
        imp = cp.empty(n * W, dtype=cp.uint32)
        inF = cp.empty(n, dtype=cp.uint8)
        qstamp = cp.empty(n, dtype=cp.int32)
        astamp = cp.empty(n, dtype=cp.int32)
        lists = [cp.empty(max(n, 1), dtype=cp.int32) for _ in range(6)]
    ctl = cp.zeros((len(chunks), _C_SIZE), dtype=cp.int32)
    ll0 = np.zeros(_L_SIZE, dtype=np.int64)
    ll0[_L_MF:_L_MF + 3] = _LLMAX
    ll = cp.asarray(np.tile(ll0, (len(chunks), 1)))
    integer = tname != "float64"
    stype = cp.int64 if integer else cp.float64
    reached = cp.zeros(N, dtype=cp.uint64)
    ecc = cp.full(N, np.iinfo(np.int64).min if integer else -np.inf, dtype=stype)
    total = cp.zeros(N, dtype=stype)
    relax = cp.zeros(N, dtype=cp.uint64)
    hist_edges = hist_counts = None
    shared_edges = None
    if histogram_bins is not None:
        if np.ndim(histogram_bins) == 0:
            nbins = int(histogram_bins)
            if nbins < 1:
                raise ValueError(f"histogram_bins must be at least 1, got {histogram_bins}")
        else:
            shared_edges = np.asarray(histogram_bins, dtype=np.float64)
            if shared_edges.ndim != 1 or len(shared_edges) < 2 or np.any(np.diff(shared_edges) < 0):
                raise ValueError("histogram_bins as edges must be a 1-D increasing array of >= 2 values")
            nbins = len(shared_edges) - 1
        hist_edges = cp.zeros((N, nbins + 1), dtype=cp.float64)
        hist_counts = cp.zeros((N, nbins), dtype=cp.uint64)
    tg_d = None
    if targets is not None:
        targets = np.asarray(targets, dtype=np.int64)
        tg_d = cp.asarray(targets)
        t_stats = (np.zeros(N, np.int64), np.zeros(N, np.float64), np.zeros(N, np.float64 if not integer
                                                                             else np.int64))
    out_dist = np.empty((N, n if targets is None else len(targets)), dtype=np.float64) if distances else None
    out_pred = np.empty((N, n), dtype=np.int64) if predecessors else None
    pred_buf = cp.empty(n * Bcap, dtype=cp.int32) if predecessors else None
    rank_buf = cp.empty(n * Bcap, dtype=cp.int32) if predecessors else None
    pred_flag = cp.zeros(1, dtype=cp.int32) if predecessors else None
    pred_rounds = 0

    blocks = coop_blocks(k_solve, blocks_per_sm, _BLOCK)
    launches = 0
    host_syncs = 0
    red_grid_x = max(1, min(1024, (n + 255) // 256))
    start_ev, end_ev = cp.cuda.Event(), cp.cuda.Event()
    if turn is not None:
        turn.acquire()
    try:
        clock = anchor()
        start_ev.record()
        for ci, rows in enumerate(chunks):
            k = len(rows)
            srcs = sources[rows]
            outrow = np.full(Bcap, -1, dtype=np.int64)
            outrow[:k] = rows
            outrow_d = cp.asarray(outrow)
            src_slots = np.full(Bcap, -1, dtype=np.int64)
            src_slots[:k] = srcs
            slot = np.arange(k)
            dist.fill(inf_t)
            dist.reshape(n, Bcap)[cp.asarray(srcs), cp.asarray(slot)] = 0
            c = np.zeros(_C_SIZE, dtype=np.int32)
            if mode == "pairs":
                for b in pbits:
                    b.fill(0)
                # one near pair per slot (repeated sources are separate slots)
                plists[0][:k] = cp.asarray((srcs * Bcap + slot).astype(np.uint32))
                c[_C_R] = k
            else:
                uniq, inv = np.unique(srcs, return_inverse=True)
                masks = np.zeros((len(uniq), W), dtype=np.uint32)
                np.bitwise_or.at(masks, (inv, slot // 32),
                                 (np.uint32(1) << (slot % 32).astype(np.uint32)))
                uniq_d = cp.asarray(uniq.astype(np.int32))
                pend.fill(0)
                imp.fill(0)
                imp.reshape(n, W)[uniq_d] = cp.asarray(masks)
                inF.fill(0)
                qstamp.fill(0)
                astamp.fill(-1)
                astamp[uniq_d] = 0
                lists[0][:len(uniq)] = uniq_d
                c[_C_A if mode == "pull" else _C_R] = len(uniq)
            ctl[ci] = cp.asarray(c)
            if mode == "pairs":
                args = (np.int32(n), np.int32(Bcap), np.int32(log_b), optr, oidx, ow, dist,
                        pbits[0], pbits[1], pbits[2], plists[0], plists[1], plists[2], plists[3],
                        ctl[ci], ll[ci], thr0, delta_t, np.int32(maxit), relax, outrow_d)
            elif mode == "pull":
                args = (np.int32(n), np.int32(Bcap), optr, oidx, rptr, ridx, rw, dist, pend, imp, inF,
                        qstamp, astamp, lists[0], lists[1], lists[2], lists[3], lists[4], lists[5],
                        ctl[ci], ll[ci], thr0, delta_t, np.int32(maxit), relax, outrow_d)
            else:
                args = (np.int32(n), np.int32(Bcap), optr, oidx, ow, dist, pend, imp, inF, astamp,
                        lists[0], lists[1], lists[4], lists[5], ctl[ci], ll[ci], thr0, delta_t,
                        np.int32(maxit), relax, outrow_d)
            blocks = launch_cooperative(lambda b: k_solve((b,), (_BLOCK,), args), blocks)
            launches += 1
            k_reduce((red_grid_x, (Bcap + _BLOCK - 1) // _BLOCK), (_BLOCK,),
                     (np.int32(n), np.int32(Bcap), np.int32(k), dist, outrow_d, reached, ecc, total))
            launches += 1
            if graph.has_negative:
                st = int(ctl[ci, _C_STATUS].get())
                host_syncs += 1
                if st == 1:
                    _raise_negative_cycle(graph, (pbits[0] | pbits[1]) if mode == "pairs" else (pend | imp),
                                          W, src_slots, k)
            if hist_edges is not None:
                rows_d = cp.asarray(rows)
                if shared_edges is not None:
                    hist_edges[rows_d] = cp.asarray(shared_edges)[None, :]
                else:
                    blk = dist.reshape(n, Bcap)[:, :k]
                    fin = blk != inf_t
                    lo = cp.where(fin, blk, inf_t).min(axis=0).astype(cp.float64)
                    hi = ecc[rows_d].astype(cp.float64)
                    lo = cp.where(fin.any(axis=0), lo, 0.0)
                    hi = cp.where(fin.any(axis=0), hi, 1.0)
                    same = hi <= lo
                    lo = cp.where(same, lo - 0.5, lo)
                    hi = cp.where(same, hi + 0.5, hi)
                    t = cp.arange(nbins + 1, dtype=cp.float64) / nbins
                    e = lo[:, None] + (hi - lo)[:, None] * t[None, :]
                    e[:, -1] = hi
                    hist_edges[rows_d] = e
                k_hist((red_grid_x, (Bcap + _BLOCK - 1) // _BLOCK), (_BLOCK,),
                       (np.int32(n), np.int32(Bcap), np.int32(k), np.int32(nbins), dist, outrow_d,
                        hist_edges, hist_counts))
                launches += 1
            if distances:
                if tg_d is None:
                    blk = dist.reshape(n, Bcap)[:, :k].T
                else:  # the target rows only, gathered here: (k, T) goes to the host
                    blk = dist.reshape(n, Bcap)[tg_d][:, :k].T
                d64 = cp.where(blk == inf_t, cp.inf, blk.astype(cp.float64))
                out_dist[rows] = d64.get()
                host_syncs += 1
                if tg_d is not None and stats_over == "targets":
                    from gpu_sssp.kernels.registry import target_stats

                    r_, e_, s_ = target_stats(d64, targets, integer=integer, xp=cp)
                    t_stats[0][rows], t_stats[1][rows], t_stats[2][rows] = r_.get(), e_.get(), s_.get()
                    host_syncs += 3
            if predecessors:
                tot = n * Bcap
                n_l, n_s, rounds = predecessor_tree(
                    k_pred_init, k_pred_round, max(1, min((tot + _BLOCK - 1) // _BLOCK, 1 << 20)),
                    n=n, B=Bcap, nb=k, rptr=rptr, rsrc=ridx, rw=rw, dist=dist, src=cp.asarray(src_slots),
                    pred=pred_buf, rank=rank_buf, flag=pred_flag, strict=not graph.has_negative,
                    complete=integer and graph.m > 0 and graph.min_weight > 0)
                launches += n_l
                host_syncs += n_s
                pred_rounds = max(pred_rounds, rounds)
                out_pred[rows] = pred_buf.reshape(n, Bcap)[:, :k].T.astype(cp.int64).get()
                host_syncs += 1
        end_ev.record()
    finally:
        if turn is not None:
            turn.release()
    # every launch is enqueued (and distances or predecessors copied back): a concurrent
    # call may queue its work behind ours now; our statistics come back on a side stream
    # ordered after our end event only
    side = cp.cuda.Stream(non_blocking=True)
    side.wait_event(end_ev)
    end_ev.synchronize()
    host_syncs += 1
    kernel_ms = cp.cuda.get_elapsed_time(start_ev, end_ev)
    ctl_h = ctl.get(stream=side)
    ll_h = ll.get(stream=side)
    status = ctl_h[:, _C_STATUS]
    if np.any(status == 2):
        raise RuntimeError(f"batched kernel on {graph.name}: inconsistent state (status 2)")
    if np.any(status == 1):
        if graph.has_negative:  # pragma: no cover - raised per chunk above
            raise RuntimeError("negative cycle suspected but not located")
        raise RuntimeError(
            f"batched kernel on {graph.name} did not converge in {maxit} iterations")
    reached_h = reached.get(stream=side).astype(np.int64)
    ecc_h = ecc.get(stream=side).astype(np.float64)
    sum_h = total.get(stream=side)
    ecc_h = np.where(reached_h > 0, ecc_h, np.nan)
    relax_h = relax.get(stream=side).astype(np.int64)
    iters = np.zeros(N, dtype=np.int64)
    for ci, rows in enumerate(chunks):
        iters[rows] = ctl_h[ci, _C_ITERS]
    total_relax = int(relax_h.sum())
    counters = {
        "iterations": int(ctl_h[:, _C_ITERS].sum()),
        "launches": launches,
        "host_syncs": host_syncs,
        "relaxations": total_relax,
        "kernel_ms": float(kernel_ms),
        "mteps": total_relax / (kernel_ms * 1e3) if kernel_ms > 0 else 0.0,
        "mteps_dijkstra_equivalent": N * graph.m / (kernel_ms * 1e3) if kernel_ms > 0 else 0.0,
        "batches": len(chunks),
        "batch_size": bs,
        "words": W,
        "delta": dlt,
        "dist_type": tname,
        "mode": mode,
        "grid_blocks": blocks,
        "bucket_advances": int(ctl_h[:, _C_BUCKETS].sum()),
        "max_q": int(ctl_h[:, _C_MAXQ].max()) if len(chunks) else 0,
        "max_a": int(ctl_h[:, _C_MAXA].max()) if len(chunks) else 0,
        "pull_visits": int(ll_h[:, _L_SUMQ].sum()),
        "settle_visits": int(ll_h[:, _L_SUMA].sum()),
        "far_scans": int(ll_h[:, _L_SUMF].sum()),
        "ms_per_source": float(kernel_ms) / max(N, 1),
        **span(clock, start_ev, end_ev),  # when the device ran this call
    }
    if predecessors:
        counters["predecessor_rounds"] = pred_rounds
    extra = {}
    if targets is not None:
        counters["targets_gathered"] = "device"
        extra = {"targets": targets, "stats_over": "vertices"}
        if stats_over == "targets":
            reached_h, ecc_h, sum_h = t_stats
            extra["stats_over"] = "targets"
    if hist_edges is not None:
        counters["histogram"] = {
            "edges": shared_edges if shared_edges is not None else hist_edges.get(stream=side),
            "counts": hist_counts.get(stream=side).astype(np.int64),
        }
    sum_distance = sum_h.astype(np.int64) if integer else sum_h.astype(np.float64)
    if integer and graph.has_negative:
        sum_distance = _negative_sums(graph, sources, reached_h, sum_distance, out_dist, targets,
                                      extra.get("stats_over"))
    return Result(
        sources=sources,
        distances=out_dist,
        predecessors=out_pred,
        reached=reached_h,
        eccentricity=ecc_h,
        sum_distance=sum_distance,
        iterations=iters,
        relaxations=relax_h,
        method="batched",
        backend="gpu",
        device=device_name(),
        counters=counters,
        **extra,
    )


_OPTIONS = _own_options()


def _negative_sums(graph, sources, reached, sums, out_dist, targets, stats_over):
    """Integer sums with negative weights: the kernel's int64 sums (and the int64 sums over
    targets) wrap when a source's negative distances add up past -2**63, which
    ``Result``'s check (on the eccentricity, the largest distance) cannot see.  Where the
    bound ``(reached - 1) x graph.path_bound()`` allows it, sum again on the host from the
    distances (``reduce_distances``: float64 beyond 2**62, never wrapped); without them,
    refuse (``SumOverflowError``)."""
    risky = (np.asarray(reached, dtype=np.float64) - 1) * float(graph.path_bound()) >= 2.0 ** 62
    if not risky.any():
        return sums
    from gpu_sssp.kernels.result import reduce_distances

    if out_dist is not None and targets is None:
        return reduce_distances(out_dist, integer=True)[2]
    if out_dist is not None and stats_over == "targets":
        from gpu_sssp.kernels.registry import target_stats

        return target_stats(out_dist, targets, integer=True)[2]
    from gpu_sssp.kernels.errors import SumOverflowError

    i = int(np.argmax(risky))
    raise SumOverflowError(
        f"the sum of distances from source index {int(sources[i])} may pass -2**63 ({int(reached[i]):,} vertices "
        f"reached, |distances| up to {graph.path_bound()}): batched sums them in int64, so without the distances "
        "no statistics are reported (solve with distances=True, or scale the weights down)")


def _raise_negative_cycle(graph, pend, W, src_slots, k):
    """Name a negative cycle reachable from a source of the chunk whose pairs never settled."""
    from gpu_sssp.kernels.cpu import find_negative_cycle

    bits = pend.reshape(-1, W).get()
    words = np.bitwise_or.reduce(bits, axis=0) if len(bits) else np.zeros(W, np.uint32)
    pending = [j for j in range(k) if (int(words[j // 32]) >> (j % 32)) & 1]
    candidates = [int(src_slots[j]) for j in pending] or [int(s) for s in src_slots[:k]]
    seen = set()
    for s in candidates:
        if s in seen:
            continue
        seen.add(s)
        cyc = find_negative_cycle(graph, [s])
        if cyc:
            raise NegativeCycleError(cyc[0], source=s, id_base=graph.id_base, cycle=cyc)
    raise NegativeCycleError(candidates[0], source=candidates[0], id_base=graph.id_base)
