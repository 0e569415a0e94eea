"""``delta``: delta-stepping (paper 003 and Meyer & Sanders) on the GPU.

One cooperative persistent kernel per source (``kernels/cuda/delta.cu``): buckets are a
per-vertex index ``floor(d[v] / delta)``; light arcs (``w <= delta``) are relaxed
repeatedly from the vertices of the current bucket, heavy arcs once from every vertex
removed from it, light / heavy decided on the fly; requests are placed at positions
from atomic prefix counters; the next bucket is the least bucket index of the live far
entries.  No host communication until the source is done.

``delta`` option:
``"median"`` - the median arc weight;  ``"mean"`` - the mean arc weight;
``"maxw-maxdeg"`` - max weight / max out-degree (the paper's choice);  ``"RULE*F"`` - a
rule's width times ``F`` (e.g. ``"mean*32"``);  a number.
The default, ``"mean*128"``, is the width measured best on NY (BENCHMARKS.md:
of the three named rules mean and median tie and max-weight/max-degree is twice as slow,
and wider buckets are faster still on road networks, whose hop depth, not their bucket
count, bounds the number of phases).
Integer weights round ``delta`` down to an integer >= 1.  Non-negative weights only
(the registry refuses negative ones with a clear error).
Other options: ``blocks_per_sm`` (2).
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.gpu.common import SourceLoop, check_options
from gpu_sssp.kernels.gpu.loader import coop_blocks, launch_cooperative, load_module

RULES = ("median", "mean", "maxw-maxdeg")
DEFAULT_RULE = "mean*128"
DEFAULTS = {"delta": DEFAULT_RULE, "blocks_per_sm": 2}


def choose_delta(graph, rule):
    """The bucket width for ``rule`` (a name from RULES or a positive number)."""
    w = graph.weights
    factor = 1.0
    if isinstance(rule, str) and "*" in rule:
        base, _, f = rule.partition("*")
        try:
            factor = float(f)
        except ValueError:
            raise ValueError(f"delta: {rule!r} is not RULE*FACTOR") from None
        if not factor > 0:
            raise ValueError(f"delta: factor in {rule!r} must be positive")
        rule = base.strip()
    if isinstance(rule, str):
        if rule not in RULES:
            raise ValueError(f"delta: rule must be one of {RULES} or a positive number, got {rule!r}")
        if graph.m == 0:
            val = 1.0
        elif rule == "median":
            val = float(np.median(w))
        elif rule == "mean":
            val = float(np.mean(w, dtype=np.float64))
        else:
            val = float(w.max()) / max(1, int(graph.out_degree().max()))
        val *= factor
    else:
        val = float(rule)
        if not val > 0:
            raise ValueError(f"delta must be positive, got {rule!r}")
    if graph.integer_weights:
        val = min(val, 2.0**62)
        return max(1, int(np.floor(val)))
    if not val > 0:
        val = 1.0  # every weight is 0: any width works
    return val


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Delta-stepping from each source; see the module docstring.

    Returns
    -------
    kernels.result.Result
        counters add ``delta`` (the width used), ``delta_rule``, ``buckets`` (total over
        the sources) and ``light_iterations`` (total).
    """
    opts = check_options("delta", options, DEFAULTS)
    if graph.has_negative:
        raise ValueError(f"delta needs non-negative weights; {graph.name} has negative arcs (use hbf or locality)")
    n = graph.n
    delta = choose_delta(graph, opts["delta"])

    def names(wt, dt):
        return [f"delta_init<{dt}>"]

    loop = SourceLoop(graph, "delta", "delta.cu", names, count_work=count_work, predecessors=predecessors,
                      distances=distances, extra_bytes=n * 32 + 1024)
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    coop = load_module("delta.cu", [f"delta_solve<{loop.wt}, {loop.dt}>"], cooperative=True)
    kern = coop.get_function(f"delta_solve<{loop.wt}, {loop.dt}>")
    blocks = coop_blocks(kern, opts["blocks_per_sm"])
    cap = max(n, 1)
    d = cp.empty(n, dtype=loop.D)
    cq0, cq1, fq0, fq1, rq = (cp.empty(cap, dtype=cp.int32) for _ in range(5))
    cmark, rmark, infar = (cp.empty(cap, dtype=cp.int32) for _ in range(3))
    cc = cp.zeros(3, dtype=cp.int32)
    fc = cp.zeros(2, dtype=cp.int32)
    rc = cp.zeros(1, dtype=cp.int32)
    mins = cp.zeros(2, dtype=cp.int64)
    info = cp.zeros(2, dtype=cp.int32)
    if loop.D.kind in "iu":
        delta = min(int(delta), int(np.iinfo(loop.D).max))
    else:  # a width past float32's range: one bucket, as the largest finite width gives
        delta = min(float(delta), float(np.finfo(loop.D).max))
    dval = loop.D.type(delta)
    init = loop.fn(f"delta_init<{loop.dt}>")
    infos = []
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(n), (np.int32(n), d, cq0, cmark, rmark, infar, cc, fc, rc, mins, np.int32(s)))
        args = (ptr, dg.indices, dg.weights, d, dval, cq0, cq1, fq0, fq1, rq, cmark, rmark, infar, cc, fc, rc,
                mins, info, loop.relax_ptr)
        blocks = launch_cooperative(lambda b: loop.launch(kern, b, args), blocks)
        infos.append(info.copy())
        loop.end(s, d, 0)
    got = loop.read(cp.stack(infos)) if infos else np.zeros((0, 2), np.int32)
    loop.iters = [int(x) for x in got[:, 0]]
    return loop.result(sources, delta=float(delta), delta_rule=str(opts["delta"]), buckets=int(got[:, 1].sum()),
                       light_iterations=int(got[:, 0].sum()), blocks=blocks)
