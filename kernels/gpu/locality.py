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

Options: ``k`` (1..5; default: measured best on NY/BAY/COL (BENCHMARKS.md), 1 in
persistent mode - the barrier is cheaper than a longer per-thread chain - and 2 in the
launched mode; the paper found 4 on its GPU),
``vertices_per_thread`` (1, 2, 4; default 1, measured - the paper used 2), ``blind`` (int or None; launched mode),
``persistent`` (True), ``blocks_per_sm`` (4; persistent mode), ``arc_batch`` (8: the arcs of
a frame are relaxed together - heads, weights and distances loaded side by side, the
atomicMins issued back to back - and the improved children visited depth-first; 0: the
paper's one arc at a time).
"""
from __future__ import annotations

import numpy as np

from kernels.gpu.common import SourceLoop, check_options

DEFAULTS = {"k": None, "vertices_per_thread": 1, "blind": None, "persistent": True, "blocks_per_sm": 4,
            "arc_batch": 8}
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
    if opts["k"] is None:  # measured best (BENCHMARKS.md): 1 in one persistent launch, 2 launched
        opts["k"] = 1 if opts["persistent"] else 2
    k = int(opts["k"])
    vpt = int(opts["vertices_per_thread"])
    if not 1 <= k <= 5:
        raise ValueError(f"locality: k must be 1..5, got {k}")
    if vpt not in (1, 2, 4):
        raise ValueError(f"locality: vertices_per_thread must be 1, 2 or 4, got {vpt}")
    n = graph.n

    persistent = bool(opts["persistent"])
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
    history = dg.cached(("locality-launches", k, vpt), list)
    null = np.uint64(0)
    blind_total = checked_total = 0
    if persistent:
        return _persistent(loop, graph, sources, d, flags, k, vpt, int(opts["blocks_per_sm"]), ab)
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
    return loop.result(sources, k=k, vertices_per_thread=vpt, arc_batch=ab, blind_launches=blind_total,
                       checked_launches=checked_total)


def _persistent(loop, graph, sources, d, flags, k, vpt, blocks_per_sm, ab):
    """One cooperative launch per source (see the module docstring)."""
    from kernels.gpu.loader import coop_blocks, load_module

    cp, dg, n = loop.cp, loop.dg, graph.n
    name = f"loc_persistent<{loop.wt}, {loop.dt}, {k}, {vpt}, {ab}>"
    kern = load_module("locality.cu", [name], cooperative=True).get_function(name)
    blocks = coop_blocks(kern, blocks_per_sm)
    init = loop.fn(f"loc_init<{loop.dt}>")
    ptr = loop.ptr64()
    act = cp.zeros(3, dtype=cp.int32)
    info = cp.zeros(2, dtype=cp.int32)
    maxit = np.int32(min(n + 2, 2**31 - 1))
    infos = []
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), flags[0], flags[1], d, np.int32(s)))
        act.fill(0)
        args = (np.int32(n), ptr, dg.indices, dg.weights, flags[0], flags[1], d, act, maxit, info, loop.relax_ptr)
        while True:
            try:
                loop.launch(kern, blocks, args)
                break
            except Exception as exc:  # cooperative grid too large for this device state
                if blocks <= 1 or "TOO_LARGE" not in str(exc).upper():
                    raise
                blocks //= 2
        if graph.has_negative:
            got = loop.read(info)
            if got[1]:
                loop.negative_cycle(s)
        infos.append(info.copy())
        loop.end(s, d, 0)
    got = loop.read(cp.stack(infos)) if infos else np.zeros((0, 2), np.int32)
    loop.iters = [int(x) for x in got[:, 0]]
    return loop.result(sources, k=k, vertices_per_thread=vpt, persistent=True, blocks=blocks, arc_batch=ab,
                       blind_launches=0, checked_launches=0)
