"""``queue-bf``: Bellman-Ford driven by per-block queues of updated vertices (paper 003).

Every block owns a queue (vertex ``x`` belongs to block ``x % blocks``); an iteration
relaxes the out-arcs of the queued vertices and appends the improved ones, once each
(a queued mark per vertex), to their owner's next queue.  The queue sizes stay on the
device; the host reads them every ``check_every`` iterations (default 8).  The paper
keeps its circular queues in zero-copy host memory and tries the SLF / LLL heuristics:
here the queues are in device memory (a host read of the counts replaces the zero-copy
polling) and SLF / LLL are not implemented (their order makes no sense in a parallel
queue; the paper found them of little use on the GPU).

Negative weights work (label correcting); each iteration is at least a Bellman-Ford
round, so queued vertices after iteration ``n`` prove a negative cycle:
:class:`~kernels.result.NegativeCycleError`.  Options: ``blocks_per_sm`` (4),
``check_every`` (8).
"""
from __future__ import annotations

import numpy as np

from gpu_sssp.kernels.gpu.common import SourceLoop, check_options

DEFAULTS = {"blocks_per_sm": 4, "check_every": 8}


def solve(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Queue Bellman-Ford from each source; see the module docstring."""
    opts = check_options("queue-bf", options, DEFAULTS)
    check_every = max(1, int(opts["check_every"]))
    n = graph.n

    def names(wt, dt):
        return [f"qbf_step<{wt}, {dt}>", f"qbf_init<{dt}>"]

    loop = SourceLoop(graph, "queue-bf", "queue_bf.cu", names, count_work=count_work,
                      predecessors=predecessors, distances=distances, extra_bytes=n * 16 + (1 << 20))
    cp = loop.cp
    dg = loop.dg
    ptr = loop.ptr64()
    nb = int(max(1, min(loop.sms * max(1, int(opts["blocks_per_sm"])), n)))
    cap = (n + nb - 1) // nb
    d = cp.empty(n, dtype=loop.D)
    mark = cp.empty(n, dtype=cp.int32)
    q = (cp.empty(nb * cap, dtype=cp.int32), cp.empty(nb * cap, dtype=cp.int32))
    cnt = cp.zeros(3 * nb, dtype=cp.int32)
    step = loop.fn(f"qbf_step<{loop.wt}, {loop.dt}>")
    init = loop.fn(f"qbf_init<{loop.dt}>")
    for s in sources:
        s = int(s)
        loop.begin()
        loop.launch(init, loop.grid(max(n, 3 * nb)), (np.int32(n), np.int32(nb), np.int32(cap), d, mark, q[0], cnt,
                                                       np.int32(s)))
        it = 0
        while True:
            for _ in range(check_every):
                loop.launch(step, nb, (np.int32(n), np.int32(nb), np.int32(cap), ptr, dg.indices, dg.weights, d,
                                       q[it & 1], q[(it & 1) ^ 1], cnt, mark, np.int32(it), loop.relax_ptr))
                it += 1
            c = loop.read(cnt).reshape(3, nb)
            if int(c[it % 3].sum()) == 0:
                break
            if it > n + 1:
                loop.negative_cycle(s)
        loop.end(s, d, it)
    return loop.result(sources, blocks=nb)
