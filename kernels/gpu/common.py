"""Host helpers shared by the single-source GPU solvers (harish, hbf, spmv-*).

* the weight dtype -> C type mapping used in ``name_expressions`` templates, and the
  distance type: integer weights get int32 distances only while ``n * max|w|`` fits in
  int32 (and no weight is negative), otherwise int64 (integer results stay exact);
* :class:`SourceLoop`: one object per ``solve`` call that loads the module, uploads
  the derived arrays once per device (``DeviceGraph.cached``), counts kernel launches
  and host synchronisations, times each source with CUDA events, runs the
  predecessor pass and the reductions on the GPU and builds the :class:`Result`.

Predecessors (:func:`predecessor_tree`, shared with ``batched``): a tree of tight arcs
built after the distances are final by ``pred_init`` / ``pred_round`` of common.cuh.
Round 0 gives every vertex with a tight in-arc from a strictly closer vertex that arc
(no negative weight: that is every vertex when all weights are positive integers);
round r gives a vertex still without one a tight in-arc from a vertex done before
round r.  (distance, round) strictly decreases along the chosen arcs, so zero-weight
arcs and zero-weight cycles cannot close a loop.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging

import numpy as np

from gpu_sssp.kernels._gpu import cupy as _cupy, device_name
from gpu_sssp.kernels.errors import OptionError
from gpu_sssp.kernels.gpu.loader import check_fits, device_graph, load_module, sm_count
from gpu_sssp.kernels.result import NegativeCycleError, Result, reduce_distances

log = logging.getLogger(__name__)

CTYPES = {
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
INT32_MAX = np.iinfo(np.int32).max
BLOCK = 256


def ctype(dtype) -> str:
    """C type name of a NumPy dtype (for template arguments)."""
    try:
        return CTYPES[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"weights of type {np.dtype(dtype)} are not supported on the GPU "
                        "(use int32, int64, float32 or float64)") from None


def dist_dtype(graph) -> np.dtype:
    """Distance type of the kernels for ``graph``.

    Integer weights (int32 or int64): int32 distances when ``n * max|w|`` (a bound on
    any path and any candidate d[u] + w) fits in int32 and no weight is negative,
    otherwise int64 (int32 weights widen).  Float weights: their own type, except float32
    weights whose path lengths may pass float32's range: float64."""
    w = np.dtype(graph.weights.dtype)
    if w in (np.int32, np.int64):
        if graph.has_negative:  # a negative cycle must not wrap a distance before detection
            return np.dtype(np.int64)
        bound = float(graph.n) * float(graph.max_abs_weight)
        return np.dtype(np.int64) if bound >= INT32_MAX else np.dtype(np.int32)
    if w.kind == "u":
        raise TypeError(f"unsigned weights ({w}) are not supported; convert to int64")
    ctype(w)
    if w == np.float32 and graph.m and \
            float(graph.path_bound()) + float(graph.max_abs_weight) >= float(np.finfo(np.float32).max):
        # float32 weights whose paths (or a candidate d[u] + w) may pass float32's range
        # (kernels.solve only bounds them in float64): float64 distances, or they would
        # overflow to inf and read as unreachable
        return np.dtype(np.float64)
    return w


def inf_value(dtype):
    dtype = np.dtype(dtype)
    return dtype.type(np.inf) if dtype.kind == "f" else np.iinfo(dtype).max


def common_names(wt: str, dt: str) -> list[str]:
    """Name expressions of the shared kernels of common.cuh for weight/distance types."""
    return [f"sink_fixup<{wt}, {dt}>", f"to_float64<{dt}>"] + pred_names(wt, dt, "long long", "long long")


def pred_names(wt: str, dt: str, it: str, pt: str) -> list[str]:
    """Name expressions of common.cuh's predecessor kernels for weight, distance, arc
    index (reverse CSR offsets) and predecessor C types."""
    return [f"pred_init<{wt}, {dt}, {it}, {pt}>", f"pred_round<{wt}, {dt}, {it}, {pt}>"]


#: pred_round launches between two reads of the flag (the group doubles from 1 up to this)
PRED_GROUP_MAX = 32


def predecessor_tree(k_init, k_round, grid, *, n, B, nb, rptr, rsrc, rw, dist, src, pred, rank, flag,
                     strict, complete):
    """Fill ``pred`` with a shortest-path tree of tight arcs, one per source slot.

    Runs common.cuh's ``pred_init`` then ``pred_round`` r = 1, 2, ... until a round
    changes nothing (rounds are launched in groups of 1, 2, 4, ... ``PRED_GROUP_MAX``
    between two reads of ``flag``; a round after the last useful one changes nothing
    either).  The chosen arcs are tight and (distance, round) strictly decreases along
    them, so every chain from a reached vertex ends at its source, with zero-weight
    arcs and cycles too.

    Parameters
    ----------
    k_init, k_round : cupy.RawKernel
        ``pred_init`` / ``pred_round`` instantiated for the arrays' types.
    grid : int
        Blocks of ``BLOCK`` threads (the kernels loop over ``n * B`` pairs).
    n, B, nb : int
        Vertices, slots per vertex in ``dist`` / ``pred`` / ``rank`` (vertex-major,
        ``B = 1`` for one source) and slots in use.
    rptr, rsrc, rw : cupy.ndarray
        Reverse CSR: in-arc offsets, tails (int32) and weights.
    dist : cupy.ndarray
        Final distances, ``n * B``, the kernels' type with its +inf sentinel.
    src : cupy.ndarray of int64
        Each slot's source (``nb`` entries at least).
    pred, rank : cupy.ndarray
        Output predecessors (``-1`` for none) and work ranks (int32), ``n * B`` each.
    flag : cupy.ndarray of int32, shape (1,)
        Work word (the last round that ranked a vertex).
    strict : bool
        No negative weight: round 0 takes tight arcs from strictly closer vertices.
    complete : bool
        Every weight is a positive integer: round 0 ranks every reached vertex, no round
        follows.

    Returns
    -------
    tuple of int
        Kernel launches, host synchronisations and the last round that ranked a vertex.
    """
    i32 = np.int32
    head = (i32(n), i32(B), i32(nb), rptr, rsrc, rw, dist)
    k_init((int(grid),), (BLOCK,), head + (src, pred, rank, i32(1 if strict else 0)))
    launches, syncs, last = 1, 0, 0
    if complete or n == 0:
        return launches, syncs, last
    flag.fill(0)
    r, group = 1, 1
    while r <= n:  # each useful round ranks a new vertex: at most n of them
        g = min(group, n - r + 1)
        for j in range(g):
            k_round((int(grid),), (BLOCK,), head + (pred, rank, i32(r + j), flag))
        launches += g
        last = int(flag.get()[0])
        syncs += 1
        if last < r + g - 1:  # the group's last round changed nothing: nor would any later one
            break
        r += g
        group = min(2 * group, PRED_GROUP_MAX)
    return launches, syncs, last


def check_options(method: str, options: dict, allowed: dict) -> dict:
    """Merge ``options`` over ``allowed`` defaults; unknown names raise TypeError, a value
    not of its default's kind (True/False, a whole number, a number) ``OptionError``
    (``kernels.registry.check_option_kinds``)."""
    from gpu_sssp.kernels.registry import check_option_kinds

    bad = sorted(set(options) - set(allowed))
    if bad:
        raise OptionError(f"method {method!r} got unknown option(s) {bad}; it takes {sorted(allowed)}")
    check_option_kinds(method, options, allowed)  # persistent="no" was truthy, lanes=2.5 was 2
    out = dict(allowed)
    out.update(options)
    return out


# targets= of kernels.solve for the engines below: each source's row is cut down to the
# target columns on the device, before it is copied to the host (set by the registry)
_TARGETS: contextvars.ContextVar = contextvars.ContextVar("sssp_gather_targets", default=None)


@contextlib.contextmanager
def gather_targets(targets):
    """While open, :class:`SourceLoop` keeps only the ``targets`` columns (internal
    indices, a 1-D int64 array) of every distance row, gathered on the device."""
    tok = _TARGETS.set(np.asarray(targets, dtype=np.int64))
    try:
        yield
    finally:
        _TARGETS.reset(tok)


class SourceLoop:
    """State of one solve call over B sources, one source at a time.

    Parameters
    ----------
    graph : kernels.graph.Graph
    method : str
        Registry name (for the result and messages).
    filename : str
        ``kernels/cuda/<filename>``.
    names : callable (wt, dt) -> list of str
        The algorithm's own name expressions; the shared ones are added.
    count_work : bool
        Count relax operations exactly with an atomic counter.
    extra_bytes : int
        Device bytes the method needs beyond the graph (checked before allocating).
    """

    def __init__(self, graph, method, filename, names, *, count_work=False, predecessors=False,
                 distances=True, extra_bytes=0, options=(), cooperative=False):
        cp = self.cp = _cupy()
        self.graph = graph
        self.method = method
        self.W = np.dtype(graph.weights.dtype)
        self.D = dist_dtype(graph)
        self.wt, self.dt = ctype(self.W), ctype(self.D)
        self.dg = device_graph(graph)
        n = graph.n
        need = extra_bytes + n * (self.D.itemsize + 8 + 8)  # distances, float64 row, predecessors
        if predecessors:  # reverse CSR, ranks
            need += (n + 1) * 8 + graph.m * (4 + self.W.itemsize) + n * 4
        check_fits(graph, need, what=f"{method} working set for")
        self.mod = load_module(filename, list(names(self.wt, self.dt)) + common_names(self.wt, self.dt),
                               tuple(options), cooperative=cooperative)
        self.count_work = count_work
        self.want_pred = predecessors
        self.want_dist = distances
        self.relax_buf = cp.zeros(1, dtype=cp.uint64)
        self.sms = sm_count(cp.cuda.Device().id)
        self.launches = 0
        tg = _TARGETS.get()
        self.targets = None if tg is None else cp.asarray(tg)
        self.host_syncs = 0
        self.kernel_ms = 0.0
        self.rows, self.preds, self.stats, self.stats_int = [], [], [], []
        self.iters, self.relax = [], []
        self.reached_arcs = 0
        self._start = cp.cuda.Event()
        self._stop = cp.cuda.Event()
        self.extra = {}
        self.pred_rounds = 0  # the most pred_round rounds any source's tree needed
        self._pred_work = None

    # ------------------------------------------------------------------ helpers
    def fn(self, name: str):
        return self.mod.get_function(name)

    def grid(self, items: int, cap_per_sm: int = 16) -> int:
        return int(max(1, min((int(items) + BLOCK - 1) // BLOCK, self.sms * cap_per_sm)))

    def launch(self, fn, grid, args, *, block=BLOCK, shared_mem=0):
        self.launches += 1
        fn((int(grid),), (int(block),), args, shared_mem=int(shared_mem))

    def read(self, arr):
        """Device -> host copy (one host synchronisation)."""
        self.host_syncs += 1
        return arr.get()

    @property
    def relax_ptr(self):
        return self.relax_buf if self.count_work else np.uint64(0)

    def ptr64(self):
        cp = self.cp
        return self.dg.cached("ptr64", lambda: self.dg.indptr.astype(cp.int64))

    def reverse(self):
        """Reverse CSR on the device: (rptr int64, rsrc int32, rweights)."""
        cp, g = self.cp, self.graph

        def build():
            rp, rs, rw, _ = g.reverse()
            return (cp.asarray(rp.astype(np.int64)), cp.asarray(rs.astype(np.int32)), cp.asarray(rw))

        return self.dg.cached("reverse", build)

    def out_degree(self):
        cp = self.cp
        return self.dg.cached("outdeg64", lambda: cp.asarray(self.graph.out_degree()))

    # ------------------------------------------------------------------ per source
    def begin(self):
        if self.count_work:
            self.relax_buf.fill(0)
        self._start.record()

    def end(self, s: int, d_row, iterations: int):
        """Stop the clock for source ``s`` and take its distances (kernel dtype)."""
        ev = self._stop
        ev.record()
        ev.synchronize()
        self.host_syncs += 1
        self.kernel_ms += self.cp.cuda.get_elapsed_time(self._start, self._stop)
        self.iters.append(int(iterations))
        self.relax.append(int(self.read(self.relax_buf)[0]) if self.count_work else 0)
        self._finish_row(s, d_row)

    def _finish_row(self, s, d_row):
        cp, n = self.cp, self.graph.n
        out = cp.empty(n, dtype=cp.float64)
        if n:
            self.launch(self.fn(f"to_float64<{self.dt}>"), self.grid(n), (d_row, out, np.int32(n)))
        reached, ecc, tot = reduce_distances(out.reshape(1, n), integer=self.graph.integer_weights, xp=cp)
        arcs = (self.out_degree() * cp.isfinite(out)).sum() if n else cp.zeros((), cp.int64)
        self.stats.append(cp.stack([reached[0].astype(cp.float64), ecc[0], tot[0].astype(cp.float64),
                                    arcs.astype(cp.float64)]))
        self.stats_int.append(tot[0])
        if self.want_pred:
            self.preds.append(self._predecessors(s, d_row))
        if self.want_dist:
            self.rows.append(out if self.targets is None else out[self.targets])

    def _predecessors(self, s, d_row):
        cp, g = self.cp, self.graph
        n = g.n
        pred = cp.full(n, -1, dtype=cp.int64)
        if n == 0 or g.m == 0:
            return pred
        rptr, rsrc, rw = self.reverse()
        if self._pred_work is None:
            self._pred_work = (cp.empty(n, dtype=cp.int32), cp.zeros(1, dtype=cp.int32),
                               cp.empty(1, dtype=cp.int64))
        rank, flag, src = self._pred_work
        src.fill(int(s))
        it = "long long"
        k_init, k_round = (self.fn(name) for name in pred_names(self.wt, self.dt, it, it))
        launches, syncs, rounds = predecessor_tree(
            k_init, k_round, self.grid(n), n=n, B=1, nb=1, rptr=rptr, rsrc=rsrc, rw=rw, dist=d_row,
            src=src, pred=pred, rank=rank, flag=flag, strict=not g.has_negative,
            complete=g.integer_weights and g.min_weight > 0)
        self.launches += launches
        self.host_syncs += syncs
        self.pred_rounds = max(self.pred_rounds, rounds)
        return pred

    def negative_cycle(self, s: int):
        """Raise NegativeCycleError for source ``s`` naming a vertex on the cycle."""
        from gpu_sssp.kernels.cpu import find_negative_cycle

        cyc = find_negative_cycle(self.graph, [int(s)])
        if not cyc:  # the GPU bound says there is one; name the source's cycle search failure
            raise NegativeCycleError(int(s), int(s), self.graph.id_base)
        raise NegativeCycleError(cyc[0], int(s), self.graph.id_base, cyc)

    # ------------------------------------------------------------------ result
    def result(self, sources, **more_counters) -> Result:
        cp = self.cp
        b = len(sources)
        st = self.read(cp.stack(self.stats)) if b else np.zeros((0, 4))
        tot_exact = self.read(cp.stack(self.stats_int)) if b else np.zeros(0)
        reached = st[:, 0].astype(np.int64)
        ecc = st[:, 1]
        if self.graph.integer_weights and tot_exact.dtype.kind in "iu":
            sums = tot_exact.astype(np.int64)
        else:  # real weights, or integer sums reduce_distances gave as float64 (beyond +-2**62):
            # a cast back to int64 would wrap those past +-2**63 (negative ones unnoticed)
            sums = tot_exact.astype(np.float64)
        arcs = float(st[:, 3].sum())
        dist = self.read(cp.stack(self.rows)) if self.want_dist and b else None
        pred = self.read(cp.stack(self.preds)) if self.want_pred and b else None
        iters = np.asarray(self.iters, dtype=np.int64)
        relax = np.asarray(self.relax, dtype=np.int64)
        counters = {
            "iterations": int(iters.max(initial=0)),
            "iterations_total": int(iters.sum()),
            "launches": self.launches,
            "host_syncs": self.host_syncs,
            "relaxations": int(relax.sum()),
            "relaxations_counted": bool(self.count_work),
            "kernel_ms": float(self.kernel_ms),
            "ms_per_source": float(self.kernel_ms) / max(b, 1),
            "reached_arcs": int(arcs),
            "mteps": arcs / (self.kernel_ms * 1e3) if self.kernel_ms > 0 else 0.0,
            "distance_type": str(self.D),
        }
        if self.want_pred:
            counters["predecessor_rounds"] = self.pred_rounds
        if self.targets is not None:
            counters["targets_gathered"] = "device"
        counters.update(more_counters)
        return Result(
            sources=np.asarray(sources, dtype=np.int64),
            distances=dist,
            predecessors=pred,
            reached=reached,
            eccentricity=ecc,
            sum_distance=sums,
            iterations=iters,
            relaxations=relax,
            method=self.method,
            backend="gpu",
            device=device_name(),
            counters=counters,
        )
