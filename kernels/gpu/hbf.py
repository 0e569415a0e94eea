"""``hbf``: frontier-based Bellman-Ford with the H-BF optimisations (Busato & Bombieri).

Each optimisation is an option, so the ablation table is one loop over options:

``edge_classes`` (True)
    Arc classes in the two high bits of each head id: self-loops (non-negative ones:
    a negative self-loop is a negative cycle, relaxed to be found) and arcs into
    vertices that cannot pass anything on (out-degree 0; with non-negative weights
    also a leaf whose only out-arc returns to the tail) are skipped and those heads
    get their distance from one fix-up kernel at the end; arcs into an in-degree-1
    vertex are plain stores (when duplicates are removed, the tail is then the only
    writer in a round); the source's arcs in round 0 are plain stores.  Needs
    ``n < 2**30`` (otherwise off, said in ``counters['edge_classes']``).
``dedup64`` (True)
    Duplicate removal: one 64-bit ``atomicMin`` on ``(key(distance) << 32) | round``
    for 32-bit distances (int32, float32), as in H-BF.  64-bit distances (int64,
    float64, widened int32) do not fit in one word with the round; they use a sound
    variant instead, a per-vertex round stamp swapped with ``atomicExch`` after a
    successful ``atomicMin`` (``counters['dedup']`` says which).  False: duplicates
    stay in the frontier (a queue overflow then re-runs that source with stamps).
``coalesced_enqueue`` ("block")
    ``"warp"`` (or True): H-BF's warp-aggregated enqueue: ballot + popc, one
    ``atomicAdd`` per warp step and contiguous writes, instead of one ``atomicAdd`` per
    enqueued vertex (False).  ``"block"``: the warps append to a stage in shared memory
    and each block reserves its range of the next frontier with one ``atomicAdd`` per
    round (an addition, not in H-BF: a round's thousands of same-address atomics
    become one per block).
``virtual_warps`` (True)
    Lanes per frontier vertex each round = largest power of two <= resident
    threads / |frontier|, clamped to [4, 32]; False uses ``lanes`` (default 32).
``heavy_threshold`` (4096)
    Frontier vertices of larger out-degree go to a separate queue whose arcs the
    whole grid splits (in place of H-BF's dynamic parallelism); None/0 turns it off.
    The degree test costs two loads per relaxation, so a graph without such vertices
    (road networks) runs without it (``counters['heavy_vertices']`` = 0).
``persistent`` (True)
    All rounds run in one persistent kernel on a co-resident grid (blocks per SM from
    the occupancy calculator) with a grid-wide barrier between rounds (one release add
    per block on a per-round word that also carries the block's enqueued count, so the
    next frontier's size arrives with the barrier): no launch and no host round trip per
    round.  False: one launch per round, the host reading the frontier counts every K
    launches (K doubles from 8 to 512, or ``check_every``).
``blocks_per_sm`` (2)
    Resident blocks of 256 threads per SM for the fixed grid.
``hops`` (None: 2 when the mean out-degree is at most 4, else 1)
    2: a lane that improves v (and enqueues it) also relaxes v's out-arcs at once with
    the distance it wrote, when v has out-degree <= 32 and is not heavy (kernels
    ``hbf_step_h2`` / ``hbf_persistent_h2``; the warp relaxes the second-hop arcs of all
    its lanes in one pass).  v is still enqueued, so nothing is lost; half the rounds on
    road networks, whose rounds are bound by latency, not work (NY: 317 rounds instead
    of 632, 2.4 ms per source instead of 3.0 on an H200).  Borrowed from the locality
    paper's multi-step relaxation; not part of H-BF.  Every relaxation is then atomic
    (the in-degree-1 and round-0 source plain stores are off: two writers per round
    become possible).  1 runs exactly the H-BF kernels (the ablation's "two-hop" row).

Distances are int32 for integer weights whenever ``n * max|w|`` fits and no weight is
negative (int64 weights included), so the 64-bit (distance, round) word of
``dedup64`` applies to them; with negative weights integer distances are int64 (a
negative cycle then cannot wrap a distance before it is detected).

Negative weights work.  A frontier still non-empty after ``n`` rounds means a
negative cycle: ``NegativeCycleError`` names a vertex on it (found by the CPU
backend's parent-graph search from that source).
"""
from __future__ import annotations

import logging

import numpy as np

from gpu_sssp.kernels.gpu.common import SourceLoop, check_options
from gpu_sssp.kernels.gpu.loader import coop_blocks

log = logging.getLogger(__name__)

DEFAULTS = {
    "edge_classes": True,
    "dedup64": True,
    "coalesced_enqueue": "block",
    "virtual_warps": True,
    "lanes": 32,
    "heavy_threshold": 4096,
    "persistent": True,
    "blocks_per_sm": 2,
    "check_every": 0,
    "hops": None,
}
SKIP, INDEG1 = 1, 2
ST_ROUNDS, ST_STATUS, ST_OVF, ST_DONE = 12, 13, 14, 15  # words of the state array (hbf.cu)
NO_HEAVY = np.iinfo(np.int32).max


def _classes(graph):
    """Marked head ids (int32 with the class in bits 30-31) and the fix-up vertex list."""
    n = graph.n
    heads = graph.indices.astype(np.int64)
    tails = graph.tails().astype(np.int64)
    od = graph.out_degree()
    idg = graph.in_degree()
    sink = od == 0
    if not graph.has_negative and graph.m:
        first = graph.indptr[:-1].astype(np.int64)
        only = np.where(od == 1, graph.indices[np.minimum(first, graph.m - 1)], -1)
        leaf = (od == 1) & (only >= 0)
        skip_arc = (tails == heads) | sink[heads] | (leaf[heads] & (only[heads] == tails))
        fix = sink | leaf
    else:
        # a negative self-loop is a negative cycle: relaxed like any arc, it keeps its
        # tail in the frontier until the round limit reports the cycle (skipped, it
        # went unseen: the fuzzer's find); non-negative ones never help
        skip_arc = ((tails == heads) & (np.asarray(graph.weights) >= 0)) | sink[heads]
        fix = sink
    indeg1 = (idg[heads] == 1) & ~skip_arc
    cls = np.where(skip_arc, SKIP, np.where(indeg1, INDEG1, 0)).astype(np.uint32)
    marked = (heads.astype(np.uint32) | (cls << np.uint32(30))).view(np.int32)
    fix_list = np.nonzero(fix & (idg > 0))[0].astype(np.int32)
    return marked, fix_list, {"skip_arcs": int(skip_arc.sum()), "indeg1_arcs": int(indeg1.sum()),
                              "fixup_vertices": int(len(fix_list))}


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Frontier Bellman-Ford (H-BF) from each source; options in the module docstring.

    Returns
    -------
    kernels.result.Result
        ``counters`` adds ``mode`` (persistent/launch), ``dedup``, ``edge_classes``,
        ``overflow_restarts`` and the class counts.

    Raises
    ------
    NegativeCycleError
        A negative cycle is reachable from a source.
    """
    opts = check_options("hbf", options, DEFAULTS)
    n, m = graph.n, graph.m
    classes = bool(opts["edge_classes"]) and n < 2**30 and m > 0
    heavy = opts["heavy_threshold"]
    heavy = NO_HEAVY if not heavy else int(min(int(heavy), NO_HEAVY))
    heavy_vertices = 0
    if heavy != NO_HEAVY:  # counted once per graph and threshold (kept with the resident graph)
        from gpu_sssp.kernels.gpu.loader import device_graph

        heavy_vertices = device_graph(graph).cached(
            ("hbf-heavy-vertices", heavy), lambda: int(np.count_nonzero(graph.out_degree() > heavy)))
    # no vertex above the threshold: the kernels skip the per-arc degree test altogether
    kernel_heavy = heavy if heavy_vertices else NO_HEAVY
    lanes = 0 if opts["virtual_warps"] else int(opts["lanes"])
    if lanes not in (0, 1, 2, 4, 8, 16, 32):
        raise ValueError(f"hbf: lanes must be a power of two up to 32, got {opts['lanes']}")
    ce = opts["coalesced_enqueue"]
    if ce in ("block", 2):
        coalesced = 2
    elif ce in ("warp", True, 1):
        coalesced = 1
    elif ce in (False, None, 0, "off"):
        coalesced = 0
    else:
        raise ValueError(f"hbf: coalesced_enqueue must be 'block', 'warp' (True) or False, got {ce!r}")
    persistent = bool(opts["persistent"])
    hops = opts["hops"]
    if hops is None:
        hops = 2 if m <= 4 * max(n, 1) else 1
    if isinstance(hops, bool) or hops not in (1, 2):
        raise ValueError(f"hbf: hops must be 1 or 2, got {hops!r}")
    hops = int(hops)
    k_step, k_pers = ("hbf_step", "hbf_persistent") if hops == 1 else ("hbf_step_h2", "hbf_persistent_h2")

    def mode_of(D):
        if not opts["dedup64"]:
            return 0
        return 2 if D.itemsize == 4 else 1

    def names(wt, dt):
        out = []
        for md in (0, 1, 2):  # every mode in one module: one compile per type pair
            if md == 2 and dt not in ("int", "float"):
                continue
            out += [f"hbf_init<{wt}, {dt}, {md}>", f"{k_step}<{wt}, {dt}, {md}>",
                    f"{k_pers}<{wt}, {dt}, {md}>"]
        if dt in ("int", "float"):
            out.append(f"unpack_dist<{dt}>")
        return out

    loop = SourceLoop(graph, "hbf", "hbf.cu", names, count_work=count_work, predecessors=predecessors,
                      distances=distances, extra_bytes=n * 8 + 4 * (n + 64) * 4 + n * 4 + 4096)
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    info = {}
    if classes:
        idx, fix_list, info = dg.cached("hbf_classes", lambda: _to_dev(cp, _classes(graph)))
    else:
        idx, fix_list = dg.indices, None
    mode = mode_of(loop.D)
    cap = n + 64
    d = cp.empty(n, dtype=loop.D)
    packed = cp.empty(n, dtype=cp.uint64) if mode == 2 else None
    stamp = cp.empty(n, dtype=cp.uint32)
    F0, F1, H0, H1 = (cp.empty(cap, dtype=cp.int32) for _ in range(4))
    st = cp.zeros(64, dtype=cp.int32)  # hbf.cu: counts and flags, then the barrier's line
    blocks = max(1, loop.sms * int(opts["blocks_per_sm"]))
    restarts = 0

    def resident_blocks(tmpl):
        """Blocks that are surely co-resident (the persistent kernel's barrier needs it)."""
        nonlocal blocks
        blocks = coop_blocks(loop.fn(k_pers + tmpl), int(opts["blocks_per_sm"]))
        return blocks

    def run_source(s, md):
        nonlocal cap, F0, F1, H0, H1
        dptr = packed if md == 2 else d
        if md == 0:  # duplicates: the queues may need more room than n
            cap = 2 * max(m, n) + 64
            if len(F0) < cap:
                F0, F1, H0, H1 = (cp.empty(cap, dtype=cp.int32) for _ in range(4))
        base = (np.int32(n), np.int32(s), np.int32(kernel_heavy), np.int32(classes), np.int32(lanes),
                np.int32(coalesced), np.int32(cap), np.int32(n), ptr, idx, dg.weights, dptr, stamp,
                F0, F1, H0, H1, st, loop.relax_ptr)
        tmpl = f"<{loop.wt}, {loop.dt}, {md}>"
        loop.launch(loop.fn("hbf_init" + tmpl), loop.grid(n), base)
        if persistent:
            loop.launch(loop.fn(k_pers + tmpl), resident_blocks(tmpl), base)
            return loop.read(st)
        step = loop.fn(k_step + tmpl)
        r = 0
        k = int(opts["check_every"]) or 8
        while True:
            for j in range(k):
                loop.launch(step, blocks, base + (np.int32(r + j),))
            r += k
            h = loop.read(st)
            if h[ST_DONE] or h[ST_STATUS] or h[ST_OVF]:
                return h
            if not opts["check_every"]:
                k = min(2 * k, 512)

    for s in sources:
        s = int(s)
        loop.begin()
        md = mode
        h = run_source(s, md)
        if h[ST_OVF]:  # queue overflow without duplicate removal: redo with stamps
            restarts += 1
            md = 1
            h = run_source(s, md)
        if h[ST_STATUS]:
            loop.negative_cycle(s)
        if md == 2:
            loop.launch(loop.fn(f"unpack_dist<{loop.dt}>"), loop.grid(n), (packed, d, np.int32(n)))
        if classes and len(fix_list):
            rptr, rsrc, rw = loop.reverse()
            loop.launch(loop.fn(f"sink_fixup<{loop.wt}, {loop.dt}>"), loop.grid(len(fix_list)),
                        (fix_list, np.int32(len(fix_list)), rptr, rsrc, rw, d))
        loop.end(s, d, int(h[ST_ROUNDS]))
    dedup = "off" if not opts["dedup64"] else ("atomicMin64 (distance, round)" if mode == 2
                                                else "round stamp + atomicExch (64-bit distances)")
    return loop.result(
        sources,
        mode="persistent" if persistent else "launch",
        blocks=blocks,
        dedup=dedup,
        edge_classes=classes,
        heavy_threshold=None if heavy == NO_HEAVY else heavy,
        heavy_vertices=heavy_vertices,
        lanes="dynamic" if lanes == 0 else lanes,
        hops=hops,
        enqueue={0: "per vertex", 1: "warp", 2: "block"}[coalesced],
        overflow_restarts=restarts,
        **info,
    )


def _to_dev(cp, parts):
    marked, fix_list, info = parts
    return cp.asarray(marked), cp.asarray(fix_list), info
