"""PHAST on the GPU: all-pairs-scale studies as level-ordered sweeps of a contraction hierarchy.

``solve(graph, sources)`` takes the graph's contraction hierarchy (built once per graph
by :mod:`kernels.hierarchy`, RoutingKit through ``routingkit_ch``, or passed in) and
solves the sources in batches of ``B``: one cooperative kernel per batch
(``kernels/cuda/phast.cu``) runs the upward phase (by default a warp per source searches
its upward search space, level by level, into a +inf-at-rest array; or, ``upward="sweep"``,
a sweep of the whole upward DAG level by level from the bottom for every source at once)
and the downward sweep (level by level from the top), with a grid-wide barrier between
levels, the labels
vertex-major (a vertex's ``B`` labels contiguous) and the per-source reductions (reached
count, eccentricity, exact 64-bit sum of distances) fused into the downward sweep, so
the labels are written once per phase and never passed over again.  Distances (graph
order, float64) and predecessors are produced only when asked.

Preparation (:func:`prepare`, once per graph and hierarchy, kept with the graph): the
hierarchy's sweep positions are permuted inside each level so that the vertices with
upward in-arcs come first (the upward phase sweeps just those), the upward arcs are
turned into pull form (arcs into each position), and the vertices whose label nobody
reads again (no upward in-arcs, no downward out-arcs: 39% of NY) get no label row:
their upward value is 0 for their own source and +inf otherwise, computed on the fly,
and their final value is only reduced.  Labels are unsigned, 16 bits when every path
length fits (graphs with small weights), else 32; +inf is the all-ones value and
additions saturate at it.

Measured on one H100 (NY and FLA road topologies, weights U[1,1000] seed 7, statistics
only, ``tests/kernels/phast_timing.py``): all 264,346 NY sources in 0.33 s of kernel time
(1.24 us per source; the whole-DAG sweep: 0.64 s), FLA 4.3 us per source over 16,384
random sources, one NY source 0.36 ms (0.39 ms with its distances).  The searches cut
the modelled label traffic per NY source from 6.5 MB to 4.0 MB; the kernel moves it
at 1.06x the device's copy bandwidth (gathers partly served by L2).

Only graphs with integer weights >= 0 whose path lengths fit the hierarchy's weight type
are eligible (:func:`kernels.hierarchy.eligible`); the others raise ``ValueError``
naming the reason, and ``method="auto"`` keeps ``batched`` for them.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass

import numpy as np

from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels.errors import OptionError, UsageError
from gpu_sssp.kernels.result import Result

log = logging.getLogger(__name__)

#: label type -> (C type, +inf)
LABEL_TYPES = {
    np.dtype(np.uint16): ("unsigned short", 0xFFFF),
    np.dtype(np.uint32): ("unsigned int", 0xFFFFFFFF),
}
#: largest default batch (sources per sweep); lowered to fit device memory.  A study's
#: task leaves it to this default: its 8,192-source batches ran as two sweeps of 4,096
#: until 2026-11-23, when one sweep of 8,192 took all NY sources' kernel time from 0.269 to
#: 0.261 s on an H200 (FLA fits 7,168 lanes there: no change)
DEFAULT_MAX_BATCH = 8192
#: share of the free device memory the labels (and outputs) of one batch may take
MEMORY_SHARE = 0.6
#: the upward phase by default: "search" (per-source searches) or "sweep" (whole DAG)
DEFAULT_UPWARD = "search"
_BLOCK = 256
#: above this many sources a sweep's lanes are the next multiple of it, below it the next
#: power of two: the kernel's lane groups (lanes / 4) then divide its grid's thread count.
#: Idle lanes cost as much as used ones: with powers of two throughout, a sweep of 2,202
#: sources ran in 4,096 lanes (4.4 ms on NY on an H200, now 3.3 ms in 3,072) and one of
#: 8,742 in 16,384 (16.4 ms, now 9.5 ms in 9,216)
LANE_STEP = 1024
_PREP_KEY = "phast-prepared"


@dataclass(frozen=True)
class Prepared:
    """Host arrays of the sweep for one graph and hierarchy (see the module docstring).

    Positions here are the hierarchy's, permuted inside each level (upward-phase
    vertices first).  Arc arrays are int32; ``*_full`` index rows when every position
    has a row (row = position), ``*_compact`` when only ``compact_rows`` positions do.
    """

    n: int
    levels: int
    label_dtype: np.dtype
    order: np.ndarray          # int32 (n,): position -> graph vertex
    position: np.ndarray       # int32 (n,): graph vertex -> position
    level_ptr: np.ndarray      # int32 (L+1,)
    up_end: np.ndarray         # int32 (L,): [level_ptr[l], up_end[l]) have upward in-arcs
    up_ptr: np.ndarray         # int32 (n+1,): upward arcs INTO each position
    up_src_full: np.ndarray    # int32: tail position if it has upward in-arcs, else -(tail)-1
    up_src_compact: np.ndarray  # int32: tail row, or -(tail position)-1
    up_w: np.ndarray           # label dtype, clamped at +inf
    dn_ptr: np.ndarray         # int32 (n+1,): downward arcs into each position
    dn_src_full: np.ndarray    # int32: tail position
    dn_src_compact: np.ndarray  # int32: tail row
    dn_w: np.ndarray
    row_compact: np.ndarray    # int32 (n,): row or -1
    compact_rows: int
    level_of: np.ndarray       # int32 (n,): level of each position
    push_ptr: np.ndarray       # int32 (n+1,): upward arcs OUT of each position (search mode)
    push_head: np.ndarray      # int32: head position
    push_w: np.ndarray         # uint32
    m_up: int
    m_down: int
    hierarchy: object
    prepare_s: float

    @property
    def ctype(self) -> str:
        return LABEL_TYPES[self.label_dtype][0]

    @property
    def inf(self) -> int:
        return LABEL_TYPES[self.label_dtype][1]

    def summary(self) -> dict:
        return {"levels": self.levels, "up_arcs": self.m_up, "down_arcs": self.m_down,
                "label_type": str(self.label_dtype), "label_rows": self.compact_rows,
                "upward_vertices": int((self.up_end - self.level_ptr[:-1]).sum())}


def label_dtype(graph) -> np.dtype:
    """The narrowest unsigned label type whose all-ones +inf exceeds every path length
    (:func:`kernels.hierarchy.path_length_bound`)."""
    bound = hmod.path_length_bound(graph)
    for dt, (_, inf) in LABEL_TYPES.items():
        if bound < inf:
            return dt
    raise ValueError(f"{graph.name}: path lengths may reach {bound}, beyond 32-bit labels")


def _layout(graph, h) -> Prepared:
    t0 = time.perf_counter()
    n = h.n
    L = h.levels
    dt = label_dtype(graph)
    inf = LABEL_TYPES[dt][1]
    if max(h.m_up, h.m_down, n) >= 2**31 - 1:
        raise ValueError(f"{graph.name}: the hierarchy has more than 2**31 arcs (int32 indices)")
    lv = h.level_of_position().astype(np.int64)
    up_tail = np.repeat(np.arange(n, dtype=np.int64), np.diff(h.up_indptr))
    up_head = h.up_head.astype(np.int64)
    dn_head = np.repeat(np.arange(n, dtype=np.int64), np.diff(h.down_indptr))
    dn_tail = h.down_tail.astype(np.int64)
    up_in = np.bincount(up_head, minlength=n)
    dn_out = np.bincount(dn_tail, minlength=n)
    # new position of each hierarchy position: by level, upward-phase vertices first
    perm = np.lexsort((np.arange(n), up_in == 0, lv))  # new -> old
    new_of = np.empty(n, dtype=np.int64)
    new_of[perm] = np.arange(n)
    order = h.order[perm].astype(np.int32)
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    level_ptr = h.level_ptr.astype(np.int32)
    has_up = (up_in > 0)[perm]  # by new position
    up_end = level_ptr[:-1].astype(np.int64) + np.bincount(lv[perm][has_up], minlength=L)[:L]
    up_end = np.asarray(up_end, dtype=np.int32)
    stored = ((up_in > 0) | (dn_out > 0))[perm]
    row_compact = np.full(n, -1, dtype=np.int64)
    row_compact[stored] = np.arange(int(stored.sum()))

    def pull(heads, tails, w):
        hn, tn = new_of[heads], new_of[tails]
        o = np.lexsort((tn, hn))
        hn, tn = hn[o], tn[o]
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(hn, minlength=n), out=ptr[1:])
        wc = np.minimum(np.asarray(w, dtype=np.int64)[o], inf).astype(dt)
        return ptr.astype(np.int32), tn, wc

    up_ptr, up_t, up_w = pull(up_head, up_tail, h.up_weight)
    t_has_up = has_up[up_t]
    up_src_full = np.where(t_has_up, up_t, -up_t - 1).astype(np.int32)
    up_src_compact = np.where(t_has_up, row_compact[up_t], -up_t - 1).astype(np.int32)
    dn_ptr, dn_t, dn_w = pull(dn_head, dn_tail, h.down_weight)
    push_ptr, push_h, _ = pull(up_tail, up_head, h.up_weight)  # keyed by tail: push form
    push_w = np.asarray(h.up_weight, dtype=np.uint32)[np.lexsort((new_of[up_head], new_of[up_tail]))]
    return Prepared(
        n=n, levels=L, label_dtype=dt, order=order, position=position, level_ptr=level_ptr,
        up_end=up_end, up_ptr=up_ptr, up_src_full=up_src_full, up_src_compact=up_src_compact,
        up_w=up_w, dn_ptr=dn_ptr, dn_src_full=dn_t.astype(np.int32),
        dn_src_compact=row_compact[dn_t].astype(np.int32), dn_w=dn_w,
        row_compact=row_compact.astype(np.int32), compact_rows=int(stored.sum()),
        level_of=lv[perm].astype(np.int32), push_ptr=push_ptr, push_head=push_h.astype(np.int32),
        push_w=push_w,
        m_up=h.m_up, m_down=h.m_down, hierarchy=h, prepare_s=time.perf_counter() - t0)


def prepare(graph, hierarchy=None) -> Prepared:
    """The sweep arrays of ``graph`` (built once per graph and hierarchy, kept with the graph).

    Parameters
    ----------
    graph : kernels.graph.Graph
    hierarchy : kernels.hierarchy.Hierarchy, optional
        The graph's hierarchy (e.g. loaded from the on-disk cache); default: the one the
        graph holds, built with :func:`kernels.hierarchy.get_hierarchy` when it holds none.

    Returns
    -------
    Prepared

    Raises
    ------
    ValueError
        The graph is not eligible (float or negative weights, path lengths beyond the
        label type), or ``hierarchy`` belongs to another graph.
    """
    why = hmod.eligible(graph)
    if why is not None:
        raise ValueError(f"phast: {why}; use method='batched' (or 'auto')")
    if hierarchy is None:
        hierarchy = hmod.get_hierarchy(graph)
    if hierarchy.n != graph.n:
        raise ValueError(f"phast: the hierarchy has {hierarchy.n} vertices, {graph.name} has {graph.n}")
    if hierarchy.fingerprint and graph.fingerprint and hierarchy.fingerprint != graph.fingerprint:
        raise ValueError(f"phast: the hierarchy was built for graph {hierarchy.fingerprint}, "
                         f"not {graph.name} ({graph.fingerprint})")
    slot = graph.cached(_PREP_KEY, dict)
    prep = slot.get("prepared")
    if prep is None or prep.hierarchy is not hierarchy:
        if not hierarchy.fingerprint:  # once per hierarchy laid out
            hmod.check_given(hierarchy, graph)
        prep = _layout(graph, hierarchy)
        slot["prepared"] = prep
    return prep


def _device_slot(graph) -> dict:
    """Per-graph, per-device cache of the sweep's device arrays (``DeviceGraph.extra``)."""
    from gpu_sssp.kernels.gpu.loader import device_graph

    return device_graph(graph).cached("phast", dict)


def _device_arrays(graph, prep: Prepared, full: bool):
    """The prepared arrays on the current device (uploaded once per graph, device and mode)."""
    from gpu_sssp.kernels._gpu import cupy as _cupy

    cp = _cupy()
    cache = _device_slot(graph)
    key = ("sweep", full)
    got = cache.get(key)
    if got is None or got[0] is not prep:
        arrs = {
            "level_ptr": cp.asarray(prep.level_ptr), "up_end": cp.asarray(prep.up_end),
            "up_ptr": cp.asarray(prep.up_ptr),
            "up_src": cp.asarray(prep.up_src_full if full else prep.up_src_compact),
            "up_w": cp.asarray(prep.up_w), "dn_ptr": cp.asarray(prep.dn_ptr),
            "dn_src": cp.asarray(prep.dn_src_full if full else prep.dn_src_compact),
            "dn_w": cp.asarray(prep.dn_w),
            "row": cp.arange(prep.n, dtype=cp.int32) if full else cp.asarray(prep.row_compact),
            "position": cp.asarray(prep.position),
            "level_of": cp.asarray(prep.level_of), "push_ptr": cp.asarray(prep.push_ptr),
            "push_head": cp.asarray(prep.push_head), "push_w": cp.asarray(prep.push_w),
        }
        got = (prep, arrs)
        cache[key] = got
    return got[1]


def _reverse_arrays(graph, prep: Prepared):
    """The original graph's in-arcs on the device (for predecessors), weights in the label type."""
    from gpu_sssp.kernels._gpu import cupy as _cupy

    cp = _cupy()
    cache = _device_slot(graph)
    key = "reverse"
    got = cache.get(key)
    if got is None or got[0] is not prep:
        rptr, rsrc, rw, _ = graph.reverse()
        w = np.minimum(rw.astype(np.int64), prep.inf).astype(prep.label_dtype)
        got = (prep, (cp.asarray(rptr.astype(np.int64)), cp.asarray(rsrc.astype(np.int32)), cp.asarray(w)))
        cache[key] = got
    return got[1]


def _pow2_at_least(k: int) -> int:
    return 1 << max(0, int(k - 1).bit_length())


def _pow2_at_most(k: int) -> int:
    return 1 << (max(1, int(k)).bit_length() - 1)


def lanes_for(k: int) -> int:
    """The lanes a sweep of ``k`` sources runs in (idle lanes cost as much as used ones):
    the next power of two up to :data:`LANE_STEP`, else the next multiple of it."""
    k = max(1, int(k))
    return _pow2_at_least(k) if k <= LANE_STEP else -(-k // LANE_STEP) * LANE_STEP


def _rows_within(lanes: int) -> int:
    """The most sources whose :func:`lanes_for` is at most ``lanes`` (at least 1)."""
    lanes = max(1, int(lanes))
    return lanes // LANE_STEP * LANE_STEP if lanes >= LANE_STEP else _pow2_at_most(lanes)


def _modules(ct: str, search: bool):
    """The sweep module (cooperative) and the auxiliary one for label type ``ct``."""
    from gpu_sssp.kernels.gpu.loader import load_module

    sname = "true" if search else "false"
    mod = load_module("phast.cu", name_expressions=[f"phast::phast_sweep<{ct}, {v}, {sname}>" for v in (1, 4)],
                      cooperative=True)
    aux = load_module("phast.cu", name_expressions=[f"phast::phast_distances<{ct}>",
                                                    f"phast::phast_pred_strict<{ct}>",
                                                    f"phast::phast_pred_zero<{ct}>"])
    return mod, aux


def load_kernels(graph, upward=None) -> None:
    """Compile (or read from CuPy's on-disk kernel cache) and load on the current device the
    kernels that :func:`solve` runs for ``graph`` (its label type decides them).  Needs
    the graph only, not its hierarchy: a study's worker runs it while it loads the
    hierarchy (``pipeline.plugins.GraphPlugin``)."""
    dt = label_dtype(graph)
    upward = DEFAULT_UPWARD if upward is None else upward
    _modules(LABEL_TYPES[dt][0], upward == "search")


def plan_batches(graph, N: int, per_lane: int, batch_size=None) -> tuple[int, int, list]:
    """``(kmax, Bmax, starts)`` for ``N`` sources of ``per_lane`` device bytes each:
    sources per sweep (``batch_size``, or up to ``DEFAULT_MAX_BATCH``, within
    ``MEMORY_SHARE`` of the device's free memory, counting the work arrays kept from
    earlier calls, :func:`kernels.gpu.loader.free_bytes`, as free), the kernel's lanes
    (:func:`lanes_for`) and each sweep's first source.

    Raises
    ------
    ValueError
        ``batch_size`` below 1.
    MemoryError
        One source, or a batch of ``batch_size``, does not fit.
    """
    from gpu_sssp.kernels._gpu import cupy as _cupy
    from gpu_sssp.kernels.gpu.loader import free_bytes

    cp = _cupy()
    free = free_bytes()  # the work arrays kept from the previous call count as free
    fit = int(free * MEMORY_SHARE) // max(per_lane, 1)
    if fit < 1:
        raise MemoryError(f"phast on {graph.name}: one source needs {per_lane:,} bytes on GPU "
                          f"{cp.cuda.Device().id}, {free:,} are free")
    if batch_size is None:
        kmax = min(N, DEFAULT_MAX_BATCH, _rows_within(fit))
    else:
        kmax = int(batch_size)
        if kmax < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        kmax = min(kmax, N)
        if lanes_for(kmax) > fit:
            raise MemoryError(f"phast on {graph.name}: batch_size {batch_size} needs "
                              f"{lanes_for(kmax) * per_lane:,} bytes, more than "
                              f"{MEMORY_SHARE:.0%} of the {free:,} bytes free; use a batch of at most "
                              f"{_rows_within(fit)} (or leave batch_size unset)")
    return kmax, lanes_for(kmax), list(range(0, N, kmax))


def source_positions(prep: Prepared, sources, starts, kmax: int, Bmax: int) -> np.ndarray:
    """Every sweep's source positions at once, ``(len(starts), Bmax)`` int32, -1 in the
    unused lanes (one upload, no host sync between batches)."""
    N = len(sources)
    src_pos = np.full((len(starts), Bmax), -1, dtype=np.int32)
    for i, s0 in enumerate(starts):
        k = min(kmax, N - s0)
        src_pos[i, :k] = prep.position[sources[s0:s0 + k]]
    return src_pos


def _work_arrays(graph, prep: Prepared, rows: int, Bmax: int, search: bool) -> dict:
    """The sweep's work arrays for ``Bmax`` lanes: the labels (``rows`` per lane) and, for
    the upward searches, the +inf-at-rest upward values, the per-level buckets and their
    counts (zero at rest).

    The kernel puts the search arrays back at rest after every batch, so they are kept
    on the device between calls (:func:`kernels.gpu.loader.scratch`, reclaimable by other
    allocations) and filled once per device, not once per call: for NY at 4,096 lanes
    that fill was a 4.3 GB memset, most of a call's 6 ms outside its kernel.  A call
    that needs more lanes or label rows than are kept allocates anew (the old arrays go
    back to the memory pool first)."""
    from gpu_sssp.kernels._gpu import cupy as _cupy
    from gpu_sssp.kernels.gpu.loader import drop_scratch, keep_scratch, scratch

    cp = _cupy()
    key = (graph.fingerprint, "phast", prep.label_dtype.str, prep.n, prep.levels)
    need = {"lab": max(rows * Bmax, 1), "upd": prep.n * Bmax if search else 0,
            "bcount": prep.levels * Bmax if search else 0}
    got = scratch(key)
    if got is not None and all(got[k].size >= v for k, v in need.items()):
        return got
    drop_scratch(here=True)
    got = None
    arrs = {"lab": cp.empty(need["lab"], dtype=prep.label_dtype)}
    if search:
        arrs["upd"] = cp.full(need["upd"], 0xFFFFFFFF, dtype=cp.uint32)
        arrs["bucket"] = cp.empty(need["upd"], dtype=cp.int32)
        arrs["bcount"] = cp.zeros(max(need["bcount"], 1), dtype=cp.int32)
    else:
        arrs.update(upd=cp.empty(1, dtype=cp.uint32), bucket=cp.empty(1, dtype=cp.int32),
                    bcount=cp.empty(1, dtype=cp.int32))
        arrs["bcount"].fill(0)
    return keep_scratch(key, arrs)


@contextlib.contextmanager
def _kept_arrays_guard():
    """Around a call's launches that use the kept work arrays (:func:`_work_arrays`): a
    failure half-way may leave them off their rest state, so they are dropped (the next
    call fills them again), once what was enqueued has run out (its pinned upload must
    not be freed under it)."""
    try:
        yield
    except BaseException:
        from gpu_sssp.kernels._gpu import cupy as _cupy
        from gpu_sssp.kernels.gpu.loader import drop_scratch

        try:
            _cupy().cuda.get_current_stream().synchronize()
        except Exception:  # a dead context: nothing more to protect
            pass
        drop_scratch(here=True)
        raise


def lanes_of(k: int, blocks_per_sm=None) -> tuple[int, int, int, int | None]:
    """A sweep of ``k`` sources: ``(B, V, G, blocks per SM)`` - the lanes (:func:`lanes_for`),
    labels per thread, the lane groups ``B / V`` (a power of two up to ``_BLOCK`` or a
    multiple of it), and the resident blocks per SM (``blocks_per_sm``, default 1 for up
    to 32 lanes where cheaper barriers matter more than occupancy, else all that fit)."""
    B = lanes_for(k)
    V = 4 if B % 4 == 0 else 1
    per_sm = blocks_per_sm if blocks_per_sm is not None else (1 if B <= 32 else None)
    return B, V, B // V, per_sm


def sweep_args(prep: Prepared, arrs: dict, work: dict, B: int, G: int, src_pos, reached, ecc, total) -> tuple:
    """One batch's arguments of ``phast_sweep`` (in the order of its parameters in
    ``phast.cu``): the layout's device arrays (:func:`_device_arrays`), the kept work
    arrays (:func:`_work_arrays`), the batch's source positions and statistics rows."""
    return (np.int32(prep.levels), np.int32(B), np.int32(G), arrs["level_ptr"], arrs["up_end"],
            arrs["up_ptr"], arrs["up_src"], arrs["up_w"], arrs["dn_ptr"], arrs["dn_src"], arrs["dn_w"],
            arrs["row"], src_pos, work["lab"], reached, ecc, total, arrs["level_of"],
            arrs["push_ptr"], arrs["push_head"], arrs["push_w"], work["upd"], work["bucket"], work["bcount"])


def launch_sweep(kern, args, B: int, V: int, per_sm) -> int:
    """One cooperative launch of a sweep kernel for ``B`` lanes of ``V`` labels per thread
    (a grid of as many resident blocks as fit, halved while the device refuses it, and a
    multiple of the blocks one lane group needs); returns the blocks it ran with."""
    from gpu_sssp.kernels.gpu import loader

    G = B // V
    if G > _BLOCK and G % _BLOCK:
        raise ValueError(f"phast: {B} lanes of {V} make {G} lane groups, not a multiple of {_BLOCK}")
    mult = max(1, G // _BLOCK)  # the grid's thread count must be a multiple of G
    went = []

    def go(b):
        bb = (b // mult) * mult
        if bb < 1:
            raise RuntimeError(f"phast: a grid of {b} blocks cannot serve {B} lanes "
                               f"(needs a multiple of {mult} blocks)")
        kern((bb,), (_BLOCK,), args)
        went.append(bb)

    loader.launch_cooperative(go, loader.coop_blocks(kern, per_sm, _BLOCK))
    return went[-1]


def stats_to_host(stats, starts, kmax: int, N: int, Bmax: int, stream=None):
    """``(reached, eccentricity, sum of distances)`` of ``N`` sources from the per-batch
    lane rows ``stats`` (``(3, batches, Bmax)`` uint64), copied whole in one transfer (on
    ``stream`` when given) and the used lanes picked on the host; eccentricity NaN where
    nothing was reached.

    No kernel: the copy runs on a copy engine beside whatever the device is running.  A
    gather kernel (the lanes picked on the device) waited for the next call's sweep, a
    cooperative kernel that holds every SM, so a study's task got its statistics 4-5 ms
    after its own kernels had ended (``tests/pipeline/turn_trace.py``)."""
    take = np.concatenate([np.arange(min(kmax, N - s0)) + i * Bmax for i, s0 in enumerate(starts)])
    with (stream if stream is not None else contextlib.nullcontext()):
        got = stats.reshape(3, -1).get(stream=stream)[:, take]
    reached = got[0].astype(np.int64)
    return reached, np.where(reached > 0, got[1].astype(np.float64), np.nan), got[2].astype(np.int64)


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False,
          batch_size=None, hierarchy=None, blocks_per_sm=None, upward=None, force=False,
          targets=None, stats_over="targets", turn=None, **options) -> Result:
    """Shortest paths from every source by PHAST sweeps of the graph's hierarchy.

    Parameters
    ----------
    graph : kernels.graph.Graph
        Integer weights >= 0 (see :func:`kernels.hierarchy.eligible`).
    sources : ndarray of int64
        Internal 0-based source indices (repeats allowed).
    predecessors : bool
        Also return a predecessor per (source, vertex): a tight original in-arc, the
        chosen arcs forming a tree rooted at the source (zero-weight arcs included).
    distances : bool
        Return the (len(sources), n) float64 distances; False keeps the statistics only
        (and stores labels only for the vertices whose label is read again).
    count_work : bool
        Accepted for the common interface; the relaxations are known exactly (every
        hierarchy arc once per source).
    batch_size : int, optional
        Sources per sweep (default: up to ``DEFAULT_MAX_BATCH``, lowered to fit the
        device's free memory); the kernel runs ``B`` = :func:`lanes_for` lanes.
    hierarchy : kernels.hierarchy.Hierarchy, optional
        The graph's hierarchy (default: the one it holds, built when it holds none).
    blocks_per_sm : int, optional
        Resident blocks per SM of the cooperative kernel (default: 1 for batches of up
        to 32 lanes, where cheaper barriers matter more than occupancy; else all that fit).
    upward : {"search", "sweep"}, optional
        The upward phase: ``search`` (default: ``DEFAULT_UPWARD``): one warp per source
        pushes along the upward arcs of its search space only, level by level with
        warp barriers, into a +inf-at-rest array that is put back to rest after
        the batch; ``sweep``: a pull sweep of the whole upward DAG for every lane, one
        grid-wide barrier per level.
    force : bool
        Build the hierarchy even for a graph that does not look road-like
        (:func:`kernels.hierarchy.structure`: on expanders and power-law graphs the contraction
        can run for hours).  Not needed when the graph holds its hierarchy or one is given.
    targets : ndarray of int64, optional
        Return the ``(len(sources), len(targets))`` travel-time matrix instead
        (``kernels.solve(targets=)``; :mod:`kernels.gpu.rphast`): RPHAST's restricted
        sweep with statistics over the distinct targets (``stats_over="targets"``), or
        the full sweep with the statistics over every vertex (``"all"``); the matrix is
        gathered on the device.  The upward phase is then always ``search``.
    stats_over : {"targets", "all"}
    turn : lock, optional
        Held from the plan to the last launch enqueued (see :func:`kernels.solve`): a
        concurrent call (a study worker's other thread) then plans and queues its
        batches behind ours while ours run; our statistics come back on a side stream
        that waits for our own end event only.  With ``targets``, held for the call.

    Returns
    -------
    Result
        ``counters`` hold ``kernel_ms`` (CUDA events around each batch's device work,
        device-to-host copies of distances and predecessors excluded), ``levels``,
        ``batches``, ``batch_size``, ``label_type``, ``label_rows`` and the hierarchy's
        figures.

    Raises
    ------
    ValueError
        The graph is not eligible (the reason is named), is not road-like and holds no
        hierarchy (without ``force``), or a bad ``batch_size``.
    MemoryError
        One source's labels do not fit on the device.
    """
    from gpu_sssp.kernels._gpu import cupy as _cupy
    from gpu_sssp.kernels._gpu import device_name
    from gpu_sssp.kernels.gpu.clock import anchor, span
    from gpu_sssp.kernels.gpu.transfer import to_device_async

    from gpu_sssp.kernels.registry import check_flag, check_hierarchy_option, check_whole

    if options:
        raise OptionError(f"method 'phast' got unknown option(s) {sorted(options)}")
    # whole numbers (2.5 was 2, "4" 4), True/False (force="no" was truthy), a Hierarchy
    batch_size = check_whole(batch_size, "phast: batch_size", minimum=1)
    blocks_per_sm = check_whole(blocks_per_sm, "phast: blocks_per_sm", minimum=1)
    force = check_flag(force, "phast: force")
    check_hierarchy_option(hierarchy)
    hmod.check_phast(graph, hierarchy=hierarchy, force=force, ineligible="use method='batched' (or 'auto')",
                     fallback="batched")
    upward = DEFAULT_UPWARD if upward is None else upward
    if upward not in ("search", "sweep"):
        raise ValueError(f"upward must be 'search' or 'sweep', got {upward!r}")
    search = upward == "search"
    cp = _cupy()
    prep = prepare(graph, hierarchy)
    if targets is not None:
        if not search:
            raise UsageError("phast with targets runs the upward phase as searches (upward='search')")
        from gpu_sssp.kernels.gpu.rphast import solve_targets

        with (turn if turn is not None else contextlib.nullcontext()):
            return solve_targets(graph, prep, sources, targets, stats_over=stats_over, batch_size=batch_size,
                                 blocks_per_sm=blocks_per_sm)
    sources = np.asarray(sources, dtype=np.int64)
    N = len(sources)
    n = graph.n
    full = bool(distances or predecessors)
    rows = n if full else prep.compact_rows
    isz = prep.label_dtype.itemsize
    # bytes per lane: labels, plus the float64 distances and int32 predecessors + stamps
    # (search mode: the +inf-at-rest upward values and the per-level buckets, 4 + 4 bytes)
    per_lane = (rows * isz + (n * 8 if distances else 0) + (n * 8 if predecessors else 0)
                + (n * 8 if search else 0))
    ct = prep.ctype
    sname = "true" if search else "false"
    mod, aux = _modules(ct, search)
    arrs = _device_arrays(graph, prep, full)
    # the GPU turn is held from the plan to the last launch enqueued
    with (turn if turn is not None else contextlib.nullcontext()), _kept_arrays_guard():
        kmax, Bmax, starts = plan_batches(graph, N, per_lane, batch_size)
        nb = len(starts)
        work = _work_arrays(graph, prep, rows, Bmax, search)
        clock = anchor()
        lab = work["lab"]
        # asynchronous upload: enqueued behind another call's sweeps without waiting for them
        src_pos_d, src_pos_keep = to_device_async(source_positions(prep, sources, starts, kmax, Bmax))
        stats = cp.zeros((3, nb, Bmax), dtype=cp.uint64)  # reached, eccentricity, sum
        reached, ecc, total = stats[0], stats[1], stats[2]
        out_dist = np.empty((N, n), dtype=np.float64) if distances else None
        out_pred = np.empty((N, n), dtype=np.int64) if predecessors else None
        dist_buf = cp.empty((kmax, n), dtype=cp.float64) if distances else None
        if predecessors:
            pred_buf = cp.empty(n * Bmax, dtype=cp.int32)
            stamp = cp.empty(n * Bmax, dtype=cp.int32)
            flags = cp.zeros(1, dtype=cp.int32)
            progress = cp.zeros(2, dtype=cp.uint64)
            rptr, rsrc, rw = _reverse_arrays(graph, prep)
        launches = 0
        host_syncs = 0
        zero_rounds = 0
        grid_used = []
        events = []
        for i, s0 in enumerate(starts):
            k = min(kmax, N - s0)
            B, V, G, per_sm = lanes_of(k, blocks_per_sm)
            kern = mod.get_function(f"phast::phast_sweep<{ct}, {V}, {sname}>")
            args = sweep_args(prep, arrs, work, B, G, src_pos_d[i], reached[i], ecc[i], total[i])
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
            ev0.record()
            events.append((ev0, ev1))
            if prep.levels:
                grid_used.append(launch_sweep(kern, args, B, V, per_sm))
                launches += 1
            if distances:
                tot = k * n
                k_d = aux.get_function(f"phast::phast_distances<{ct}>")
                k_d((max(1, min((tot + _BLOCK - 1) // _BLOCK, 65535)),), (_BLOCK,),
                    (np.int32(n), np.int32(B), np.int32(k), arrs["position"], lab, dist_buf))
                launches += 1
            if predecessors:
                src_d = cp.asarray(sources[s0:s0 + k])
                tot = n * B
                grid = (max(1, min((tot + _BLOCK - 1) // _BLOCK, 65535)),)
                flags.fill(0)
                aux.get_function(f"phast::phast_pred_strict<{ct}>")(
                    grid, (_BLOCK,), (np.int32(n), np.int32(B), np.int32(k), rptr, rsrc, rw,
                                      arrs["position"], lab, src_d, pred_buf, stamp, flags))
                launches += 1
                pending = int(flags.get()[0])
                host_syncs += 1
                r = 0
                k_z = aux.get_function(f"phast::phast_pred_zero<{ct}>")
                while pending:
                    r += 1
                    progress.fill(0)
                    k_z(grid, (_BLOCK,), (np.int32(n), np.int32(B), np.int32(k), np.int32(r), rptr, rsrc,
                                          rw, arrs["position"], lab, pred_buf, stamp, progress))
                    launches += 1
                    done, left = (int(x) for x in progress.get())
                    host_syncs += 1
                    if left == 0:
                        break
                    if done == 0:
                        raise RuntimeError(f"phast predecessors on {graph.name}: {left} reached "
                                           "(source, vertex) pairs have no tight in-arc")
                zero_rounds = max(zero_rounds, r)
            ev1.record()
            if distances:
                out_dist[s0:s0 + k] = dist_buf[:k].get()
                host_syncs += 1
            if predecessors:
                out_pred[s0:s0 + k] = pred_buf[:n * B].reshape(n, B)[:, :k].T.astype(cp.int64).get()
                host_syncs += 1
        end = cp.cuda.Event()
        end.record()
    # every launch is enqueued: a concurrent call may queue its batches behind ours now.
    # The host waits for our end event first (cuEventSynchronize holds no driver lock);
    # only then do our statistics come back, on a side stream that our later neighbours
    # do not use.  A pageable copy made to wait on the GPU instead (a side stream that
    # waits on ``end``) blocked every other thread's CUDA calls - the next call's launches
    # included - until our kernels ended: in a Dask worker the GPU turn was held 30 ms
    # for 1 ms of launches (tests/pipeline/turn_trace.py)
    end.synchronize()
    side = cp.cuda.Stream(non_blocking=True)
    reached_h, ecc_h, sum_h = stats_to_host(stats, starts, kmax, N, Bmax, stream=side)
    host_syncs += 1
    del src_pos_keep  # the stream is past its copy (our end event is done)
    kernel_ms = float(sum(cp.cuda.get_elapsed_time(a, b) for a, b in events))
    per_source = prep.m_up + prep.m_down
    relax = np.full(N, per_source, dtype=np.int64)
    counters = {
        "iterations": 2 * prep.levels,
        "launches": launches,
        "host_syncs": host_syncs,
        "relaxations": int(relax.sum()),
        "relaxations_counted": True,
        "kernel_ms": kernel_ms,
        "ms_per_source": kernel_ms / max(N, 1),
        "mteps": N * graph.m / (kernel_ms * 1e3) if kernel_ms > 0 else 0.0,
        "batches": nb,
        "batch_size": kmax,
        "lanes": Bmax,
        "grid_blocks": max(grid_used) if grid_used else 0,
        "predecessor_zero_rounds": zero_rounds,
        "upward": upward,
        "hierarchy_build_s": float(prep.hierarchy.build_s),
        "label_bytes_per_source": rows * isz,
    }
    if events:
        counters.update(span(clock, events[0][0], end))  # when the device ran this call
    counters.update(prep.summary())
    counters["label_type"] = str(prep.label_dtype)
    counters["label_rows"] = rows
    return Result(
        sources=sources,
        distances=out_dist,
        predecessors=out_pred,
        reached=reached_h,
        eccentricity=ecc_h,
        sum_distance=sum_h,
        iterations=np.full(N, 2 * prep.levels, dtype=np.int64),
        relaxations=relax,
        method="phast",
        backend="gpu",
        device=device_name(),
        counters=counters,
    )
