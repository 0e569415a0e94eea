"""``locality``: locality-based k-step relaxation for road networks (paper 000).

A thread owns ``vertices_per_thread`` consecutive vertices (the paper: 2, vertices
``2t`` and ``2t+1``).  From every flagged vertex it relaxes depth-first up to ``k``
hops with one ``atomicMin`` per relaxation and no thread synchronisation; vertices
improved at depth ``k`` are flagged in the other of two alternating flag arrays.

Host loop (the paper's ``Kernel_1`` / ``Kernel_2``): ``N`` launches without any host
communication, then launches that raise a device flag, read after each launch, until a
launch sets no flag.  ``N`` ("blind" launches) is estimated by the solver itself: 0.9 x
the median launch count of the previous sources solved on the same graph with the same
``k`` / ``vertices_per_thread`` (kept on the resident :class:`DeviceGraph`, so it carries
over between ``solve`` calls); the first source ever runs with ``N = 0``.  ``blind=``
overrides it.

Negative weights: k-step relaxation with ``atomicMin`` is a label-correcting method, so
it is exact without negative cycles; each launch does at least one Bellman-Ford round, so
a launch count above ``n`` with flags still set proves a negative cycle, which raises
:class:`~kernels.result.NegativeCycleError` naming a vertex on it.

``persistent=True`` (the default, measured faster: BENCHMARKS.md) runs the same steps in
one cooperative launch per source with a grid-wide barrier between steps and the flag
test on the device (no host round trip at all); ``persistent=False`` is the paper's host
protocol above.

Block-resident arcs (``resident``, persistent mode, ``k`` 1 or 2, one vertex per thread
unit; our addition, in the ablation): block ``b`` owns a contiguous run of vertices and
copies their CSR slice into shared memory once per solve, so a step reads its flagged
vertices' arcs without global round trips; improvements are issued without waiting for
the atomicMin's result, the depth-2 relaxations of ``k=2`` are done by the warp (a lane
per improved head), and the quiet test rides on the grid barrier's counter.  Used where a
block's slice fits in 48 KiB of shared memory (road graphs of a few million vertices on
an H100/H200); elsewhere the global-memory kernel runs (``counters["resident"]`` says
which).  On NY: k=2 resident 2.74 ms/source against 3.31 for the global kernel's best
(k=1) on an H200.

Options: ``k`` (1..5; default: measured best on NY/BAY/COL (BENCHMARKS.md): 2 with the
block-resident arcs, 1 in the global persistent kernel - there a longer per-thread chain
costs more than the barriers it saves - and 2 in the launched mode; the paper found 4 on
its GPU), ``vertices_per_thread`` (1, 2, 4; default 1, measured - the paper used 2),
``blind`` (int or None; launched mode), ``persistent`` (True), ``blocks_per_sm`` (4;
persistent mode), ``arc_batch`` (8: the arcs of a frame are relaxed together - heads,
weights and distances loaded side by side, the atomicMins issued back to back - and the
improved children visited depth-first; 0: the paper's one arc at a time), ``resident``
(None: where it fits; True: required, an error where it cannot run; False: off),
``prefetch`` (True: a step loads its vertices' distances with their flags, one round trip
fewer for flagged vertices; measured within noise of False for k=2).
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

DEFAULTS = {"k": None, "vertices_per_thread": 1, "blind": None, "persistent": True, "blocks_per_sm": 4,
            "arc_batch": 8, "resident": None, "prefetch": True}
_HISTORY = 32


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Locality-based k-step relaxation from each source; see the module docstring.

    Returns
    -------
    kernels.result.Result
        counters add ``k``, ``vertices_per_thread``, ``blind_launches`` (total over the
        sources) and ``checked_launches`` (launches followed by a host read).

    Raises
    ------
    ValueError
        ``k`` or ``vertices_per_thread`` out of range.
    NegativeCycleError
        A negative cycle is reachable from a source.
    """
    opts = check_options("locality", options, DEFAULTS)
    persistent = bool(opts["persistent"])
    # k=None: measured best (BENCHMARKS.md): 2 launched; persistent: 2 with the block-resident
    # arcs, 1 without them (a longer per-thread chain costs more than the barrier it saves)
    k = None if opts["k"] is None and persistent else int(opts["k"] or 2)
    vpt = int(opts["vertices_per_thread"])
    if k is not None and not 1 <= k <= 5:
        raise ValueError(f"locality: k must be 1..5, got {k}")
    if vpt not in (1, 2, 4):
        raise ValueError(f"locality: vertices_per_thread must be 1, 2 or 4, got {vpt}")
    n = graph.n

    if opts["resident"] and not persistent:
        raise ValueError("locality: resident=True needs persistent=True (the block-resident arcs live in "
                         "the one cooperative launch)")
    ab = int(opts["arc_batch"] or 0)
    if ab not in (0, 8):
        raise ValueError(f"locality: arc_batch must be 0 (the paper's arc-at-a-time DFS) or 8, got {ab}")

    def names(wt, dt):  # the persistent kernel lives in a cooperative module of its own
        return ([] if persistent else [f"loc_step<{wt}, {dt}, {k}, {vpt}, {ab}>"]) + [f"loc_init<{dt}>"]

    loop = SourceLoop(graph, "locality", "locality.cu", names, count_work=count_work,
                      predecessors=predecessors, distances=distances, extra_bytes=n * 10 + 64)
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    d = cp.empty(n, dtype=loop.D)
    flags = (cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8))
    active = cp.zeros(1, dtype=cp.int32)
    init = loop.fn(f"loc_init<{loop.dt}>")
    grid = loop.grid((n + vpt - 1) // vpt)
    if persistent:
        return _persistent(loop, graph, sources, d, flags, k, vpt, int(opts["blocks_per_sm"]), ab,
                           opts["resident"], bool(opts["prefetch"]))
    history = dg.cached(("locality-launches", k, vpt), list)
    null = np.uint64(0)
    blind_total = checked_total = 0
    step = loop.fn(f"loc_step<{loop.wt}, {loop.dt}, {k}, {vpt}, {ab}>")
    for s in sources:
        s = int(s)
        if opts["blind"] is not None:
            blind = max(0, int(opts["blind"]))
        elif history:
            blind = int(0.9 * np.median(history))  # drifts down until a source undershoots
        else:
            blind = 0
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), flags[0], flags[1], d, np.int32(s)))
        i = 0
        for _ in range(min(blind, n + 1)):
            loop.launch(step, grid, (np.int32(n), ptr, dg.indices, dg.weights, flags[i & 1],
                                     flags[(i & 1) ^ 1], d, null, loop.relax_ptr))
            i += 1
        blind_total += i
        while True:
            if i > n + 1:
                loop.negative_cycle(s)
            active.fill(0)
            loop.launch(step, grid, (np.int32(n), ptr, dg.indices, dg.weights, flags[i & 1],
                                     flags[(i & 1) ^ 1], d, active, loop.relax_ptr))
            i += 1
            checked_total += 1
            if not loop.read(active)[0]:
                break
        loop.end(s, d, i)
        # launches this source needed (the last one found nothing to do)
        history.append(i - 1)
        del history[:-_HISTORY]
    return loop.result(sources, k=k, vertices_per_thread=vpt, arc_batch=ab, resident=False, prefetch=False,
                       blind_launches=blind_total,
                       checked_launches=checked_total)


def _resident_plan(loop, blocks_per_sm, prefetch, k):
    """(kernel, blocks, span, cap, shared bytes) of the block-resident kernel on this graph
    and device, or None when a block's CSR slice does not fit in shared memory with
    ``blocks_per_sm`` blocks per SM (then the global-memory kernel runs).  Cached on the
    device graph."""
    from gpu_sssp.kernels.gpu.loader import coop_blocks, load_module, sm_count

    cp, dg, n = loop.cp, loop.dg, loop.dg.n
    name = f"loc_resident<{loop.wt}, {loop.dt}, {int(bool(prefetch))}, {int(k)}>"

    def build():
        kern = load_module("locality.cu", [name], cooperative=True).get_function(name)
        blocks = sm_count(cp.cuda.Device().id) * int(blocks_per_sm)
        span = max(1, -(-n // blocks))
        bounds = cp.minimum(cp.arange(blocks + 1, dtype=cp.int64) * span, n)
        ptr = loop.ptr64()
        cap = int((ptr[bounds[1:]] - ptr[bounds[:-1]]).max().get()) if n else 0
        cap = max(cap, 1)
        smem = cap * (loop.W.itemsize + 4) + (span + 1) * 4
        if smem > _RESIDENT_SMEM or coop_blocks(kern, blocks_per_sm, smem=smem) < blocks:
            return None
        return kern, blocks, span, cap, smem

    return dg.cached(("locality-resident", name, int(blocks_per_sm)), build)


# Dynamic shared memory per block the resident kernel may use (the 48 KiB a launch gets
# without opting in; 4 blocks per SM then hold 192 of an H100/H200 SM's 228 KiB).
_RESIDENT_SMEM = 48 * 1024


def _persistent(loop, graph, sources, d, flags, k, vpt, blocks_per_sm, ab, resident, prefetch):
    """One cooperative launch per source (see the module docstring)."""
    from gpu_sssp.kernels.gpu.loader import coop_blocks, launch_cooperative, load_module

    cp, dg, n = loop.cp, loop.dg, graph.n
    plan = None
    eligible = k in (None, 1, 2) and vpt == 1 and ab
    if resident is not False and eligible:
        plan = _resident_plan(loop, blocks_per_sm, prefetch, k or 2)
    if k is None:
        k = 2 if plan is not None else 1
    if resident is True and plan is None:
        why = ("k=1 or 2, vertices_per_thread=1 and arc_batch=8" if not eligible
               else f"a block's CSR slice within {_RESIDENT_SMEM:,} bytes of shared memory")
        raise UsageError(f"locality: resident=True needs {why} on {graph.name}")
    if plan is not None:
        kern, blocks, span, cap, smem = plan
    else:
        name = f"loc_persistent<{loop.wt}, {loop.dt}, {k}, {vpt}, {ab}>"
        kern = load_module("locality.cu", [name], cooperative=True).get_function(name)
        blocks = coop_blocks(kern, blocks_per_sm)
    init = loop.fn(f"loc_init<{loop.dt}>")
    ptr = loop.ptr64()
    act = cp.zeros(3, dtype=cp.uint64 if plan else cp.int32)
    info = cp.zeros(2, dtype=cp.int32)
    maxit = np.int32(min(n + 2, 2**31 - 1))
    infos = []
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), flags[0], flags[1], d, np.int32(s)))
        act.fill(0)
        if plan is not None:
            args = (np.int32(n), np.int32(span), np.int32(cap), ptr, dg.indices, dg.weights, flags[0], flags[1],
                    d, act, maxit, info, loop.relax_ptr)
            # the vertex split depends on the grid: no shrinking (an error if refused)
            launch_cooperative(lambda b: loop.launch(kern, b, args, shared_mem=smem), blocks, shrink=False)
        else:
            args = (np.int32(n), ptr, dg.indices, dg.weights, flags[0], flags[1], d, act, maxit, info,
                    loop.relax_ptr)
            blocks = launch_cooperative(lambda b: loop.launch(kern, b, args), blocks)
        if graph.has_negative:
            got = loop.read(info)
            if got[1]:
                loop.negative_cycle(s)
        infos.append(info.copy())
        loop.end(s, d, 0)
    got = loop.read(cp.stack(infos)) if infos else np.zeros((0, 2), np.int32)
    loop.iters = [int(x) for x in got[:, 0]]
    return loop.result(sources, k=k, vertices_per_thread=vpt, persistent=True, blocks=blocks, arc_batch=ab,
                       resident=plan is not None, prefetch=bool(prefetch) if plan else False,
                       blind_launches=0, checked_launches=0)
