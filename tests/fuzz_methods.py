#!/usr/bin/env python
"""Differential fuzzing of every shortest-path method against SciPy / an exact reference.

Not collected by pytest (no ``test_`` prefix).  Run from the checkout::

    python tests/fuzz_methods.py --seconds 120 --backend cpu|gpu|all --seed S [--out DIR]
                                 [--methods a,b] [--weights MODE,...] [--max-n N]
                                 [--call-timeout S] [-v]
    python tests/fuzz_methods.py --replay DIR/FILE.npz

For ``--seconds`` it builds fresh random graphs of many shapes (tiny graphs of 1..5
vertices, self-loops, parallel arcs of different weights with either parallel policy,
zero-weight arcs and zero-weight cycles, disconnected parts, directed and undirected,
id bases 0/1/7, int8 / int16 / int32 / int64 / unsigned / float16 / float32 / float64
weights, integer weights near the limits the product accepts (path lengths near 2**53,
int32 weights near 2**31, hierarchy path bounds near 2**30 and 0xFFFF, long chains whose
distance sums pass +-2**62) and beyond them, float32 weights whose paths pass float32's
range, grids and road-like graphs with long chains, stars and hubs, negative weights
without negative cycles (small and near 2**53 / n), and integer or real negative cycles
reachable or not from the sources) and sources (one, many, repeated, all; as arrays,
lists, int32 / uint32 arrays or a plain int).  It runs every method of
``available_methods(backend)`` (``auto`` included, with a few option variants each) on
each graph and checks:

- distances equal to an independent reference (SciPy Dijkstra, or an exact Bellman-Ford
  on the reachable part for negative weights): exact for integer weights, a tolerance
  for float ones; ``+inf`` exactly for unreachable vertices;
- predecessors (``predecessors=True``): ``-1`` at the source and unreachable vertices,
  ``dist[pred] + w(pred, v) == dist[v]`` with the lightest parallel arc, and every chain
  reaching its source without a cycle (zero-weight cycles included);
- statistics (``reached``, ``eccentricity``, ``sum_distance``) against the distances,
  also with ``distances=False``, and with ``targets=`` (the travel-time matrix, RPHAST for
  ``phast``) for both ``stats_over`` values;
- refusals: a method may refuse a graph only with an ``SsspError`` for a reason the
  README documents (negative weights for methods marked >= 0, unequal weights for BFS,
  phast's eligibility, path lengths beyond exactness, ...); anything else, or a crash,
  is a failure;
- negative cycles: a method accepting negative weights must raise
  ``NegativeCycleError`` when a negative cycle is reachable from a source (its
  ``.cycle``, when given, must be a reachable cycle of negative weight) and must solve
  the graph when none is reachable.

Prints one summary line per method (graphs tried, solved, refused, failures) and saves
each failing case as ``<out>/<method>-<n>.npz`` (src, dst, weights, n, sources, the
options and the failure); rerun one with ``--replay FILE``.  Exit status 1 on any
failure (3 when a call hangs past ``--call-timeout``: the case is saved first).

``phast`` (GPU and CPU) is run with ``force=True`` most of the time (its hierarchy is
built by RoutingKit, ``kernels.hierarchy``); 15% of its eligible graphs instead get their
hierarchy through ``pipeline.hierarchy``'s cache file (written, read back into a fresh
copy of the graph).  Without ``routingkit_ch`` installed phast's refusal is expected.
Imports no Dask (``kernels`` and ``pipeline.hierarchy`` only).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import threading
import time
import traceback
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gpu_sssp  # noqa: E402
from gpu_sssp.kernels import registry  # noqa: E402
from gpu_sssp.kernels.errors import SsspError  # noqa: E402
from gpu_sssp.kernels.graph import Graph  # noqa: E402
from gpu_sssp.kernels.result import NegativeCycleError  # noqa: E402

EXACT = 2**53
HIER_BOUND = 2**30


# ----------------------------------------------------------------------------- graphs
class Case:
    """One graph (arc arrays as given to Graph.from_edges) and its sources."""

    def __init__(self, kind, src, dst, w, n, *, directed=True, parallel="min", sources=None, id_base=0):
        self.kind = kind
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.w = w
        self.n = int(n)
        self.directed = directed
        self.parallel = parallel
        self.sources = sources
        self.id_base = int(id_base)

    def graph(self):
        return Graph.from_edges(self.src, self.dst, self.w, self.n, directed=self.directed,
                                parallel=self.parallel, name=f"fuzz-{self.kind}", id_base=self.id_base)


def _arcs_random(rng, n, m):
    return rng.integers(0, n, m), rng.integers(0, n, m)


def _grid(rng, r, c):
    idx = np.arange(r * c).reshape(r, c)
    s = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    d = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    if rng.random() < 0.3:  # holes
        keep = rng.random(len(s)) > 0.15
        s, d = s[keep], d[keep]
    return s, d, r * c


def _road(rng, n):
    """Long chains (a path) with a few shortcuts and side trees: deep, sparse."""
    s = list(range(n - 1))
    d = list(range(1, n))
    for _ in range(rng.integers(0, max(1, n // 10) + 1)):
        a, b = rng.integers(0, n, 2)
        s.append(a)
        d.append(b)
    return np.array(s), np.array(d), n


def _star(rng, n):
    hub = int(rng.integers(0, n))
    others = np.array([v for v in range(n) if v != hub], dtype=np.int64)
    way = rng.integers(0, 3)
    if way == 0:  # out-star
        s, d = np.full(len(others), hub), others
    elif way == 1:  # in-star
        s, d = others, np.full(len(others), hub)
    else:
        s, d = np.full(len(others), hub), others
    extra = rng.integers(0, n + 1)
    es, ed = _arcs_random(rng, n, extra)
    return np.concatenate([s, es]), np.concatenate([d, ed]), n


def _topology(rng, max_n):
    shape = rng.choice(["tiny", "random", "grid", "road", "star", "dense", "components", "tree"],
                       p=[0.2, 0.2, 0.12, 0.14, 0.1, 0.08, 0.1, 0.06])
    if shape == "tiny":
        n = int(rng.integers(1, 6))
        m = int(rng.integers(0, 9))
        s, d = _arcs_random(rng, n, m)
    elif shape == "random":
        n = int(rng.integers(2, max_n + 1))
        m = int(rng.integers(0, int(n * rng.uniform(0.5, 4)) + 2))
        s, d = _arcs_random(rng, n, m)
    elif shape == "grid":
        r = int(rng.integers(1, max(2, int(math.sqrt(max_n))) + 1))
        c = int(rng.integers(1, max(2, max_n // max(r, 1)) + 1))
        s, d, n = _grid(rng, r, c)
    elif shape == "road":
        s, d, n = _road(rng, int(rng.integers(2, max_n + 1)))
    elif shape == "star":
        s, d, n = _star(rng, int(rng.integers(2, max_n + 1)))
    elif shape == "dense":
        n = int(rng.integers(2, min(max_n, 40) + 1))
        m = int(rng.integers(n, n * n + 1))
        s, d = _arcs_random(rng, n, m)
    elif shape == "tree":
        n = int(rng.integers(2, max_n + 1))
        d = np.arange(1, n)
        s = np.array([rng.integers(0, v) for v in d], dtype=np.int64)
    else:  # components: two or three parts side by side
        parts, n = [], 0
        for _ in range(int(rng.integers(2, 4))):
            k = int(rng.integers(1, max(2, max_n // 3) + 1))
            ps, pd = _arcs_random(rng, k, int(rng.integers(0, 3 * k + 1)))
            parts.append((ps + n, pd + n))
            n += k
        s = np.concatenate([p[0] for p in parts])
        d = np.concatenate([p[1] for p in parts])
    s = np.asarray(s, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    if len(s) and rng.random() < 0.3:  # self-loops
        k = int(rng.integers(1, 4))
        v = rng.integers(0, n, k)
        s, d = np.concatenate([s, v]), np.concatenate([d, v])
    if len(s) and rng.random() < 0.3:  # parallel arcs (weights drawn per arc later)
        k = int(rng.integers(1, max(2, len(s) // 4) + 1))
        pick = rng.integers(0, len(s), k)
        s, d = np.concatenate([s, s[pick]]), np.concatenate([d, d[pick]])
    if n > 1 and rng.random() < 0.2:  # shuffle vertex numbering
        perm = rng.permutation(n)
        s, d = perm[s], perm[d]
    return str(shape), s, d, int(n)


def _weights(rng, s, d, n, mode):
    m = len(s)
    if mode == "int-small":
        return rng.integers(0, rng.choice([2, 4, 11]), m).astype(np.int64)
    if mode == "int":
        return rng.integers(1, 1001, m).astype(np.int64)
    if mode == "zero":
        return np.zeros(m, dtype=rng.choice([np.int64, np.float64]))
    if mode == "equal":
        c = rng.choice([1, 1, 3, 1000])
        return np.full(m, c, dtype=rng.choice([np.int64, np.int32]))
    if mode == "int32":
        return rng.integers(0, 100, m).astype(np.int32)
    if mode == "narrow":  # narrower than the kernels' types: int8, int16, float16
        dt = rng.choice([np.int8, np.int16, np.float16])
        return rng.integers(0, 100, m).astype(dt)
    if mode == "int32-big":  # near int32's limit: 64-bit distances on the GPU
        return (np.int64(2**31 - 1) - rng.integers(0, 1000, m)).astype(np.int32)
    if mode == "uint":
        dt = rng.choice([np.uint8, np.uint16, np.uint32])
        return rng.integers(0, 200, m).astype(dt)
    if mode == "near-exact":  # path bound just below 2**53 (or just above)
        top = (EXACT - 1) // max(n - 1, 1)
        if rng.random() < 0.3:
            top = top + rng.integers(1, 10)  # may go past the limit: must be refused
        lo = top // 2 if rng.random() < 0.5 else 0
        return rng.integers(lo, top + 1, m).astype(np.int64)
    if mode == "huge":  # beyond exactness whatever n: refused by every method (n > 1, m > 0)
        return rng.integers(2**60, 2**62, m).astype(np.int64)
    if mode == "near-hier":  # path bound near the hierarchy's 2**30
        top = max(1, HIER_BOUND // max(n - 1, 1) + int(rng.integers(-2, 3)))
        return rng.integers(max(0, top - 5), top + 1, m).astype(np.int64)
    if mode == "near-16bit":  # path bound near 0xFFFF: the GPU phast's 16-bit labels
        top = max(1, 0xFFFF // max(n - 1, 1) + int(rng.integers(-1, 2)))
        return rng.integers(max(0, top - 3), top + 1, m).astype(np.int64)
    if mode == "float":
        w = rng.random(m) * rng.choice([1.0, 1e-3, 1e6])
        if rng.random() < 0.3:
            w[rng.random(m) < 0.3] = 0.0
        return w.astype(np.float64)
    if mode == "float32":
        return (rng.random(m) * 100).astype(np.float32)
    if mode == "float32-huge":  # float32 weights whose path lengths pass float32's range (not float64's)
        return (rng.uniform(0.05, 1.0, m) * float(np.finfo(np.float32).max)).astype(np.float32)
    if mode == "float-int":  # float type, whole values
        return rng.integers(0, 20, m).astype(np.float64)
    if mode == "negative-big":  # |w| up to (2**53 - 1) / (n - 1): exact int64 arithmetic needed
        top = (EXACT - 1) // max(n - 1, 1)
        base = rng.integers(0, top // 2 + 1, m)
        p = rng.integers(-(top // 4), top // 4 + 1, n)
        return (base + p[s] - p[d]).astype(np.int64)
    if mode in ("negative", "negative-float"):
        # potentials keep every cycle's weight >= 0: negative arcs, no negative cycle
        base = rng.integers(0, 20, m) if mode == "negative" else rng.random(m) * 10
        p = rng.integers(-30, 31, n) if mode == "negative" else rng.random(n) * 20 - 10
        w = base + p[s] - p[d]
        return w.astype(np.int64 if mode == "negative" else np.float64)
    raise ValueError(mode)


WEIGHT_MODES = ["int-small", "int", "zero", "equal", "int32", "int32-big", "uint", "near-exact", "huge",
                "near-hier", "float", "float32", "float-int", "negative", "negative-float", "negative-big",
                "negcycle", "narrow", "negcycle-float", "long-chain", "long-negative-chain",
                "near-16bit", "hier-wrap", "float32-huge"]
WEIGHT_P = np.array([12, 12, 3, 8, 5, 4, 3, 6, 2, 5, 8, 4, 3, 10, 4, 5, 8, 3, 3, 0.5, 0.5, 5, 0.3, 2], dtype=float)


def make_case(rng, max_n, modes=None):
    kind, s, d, n = _topology(rng, max_n)
    if modes:
        mode = str(rng.choice(modes))
    else:
        mode = str(rng.choice(WEIGHT_MODES, p=WEIGHT_P / WEIGHT_P.sum()))
    undirected = not mode.startswith("neg") and not mode.startswith(("long", "hier-wrap")) and rng.random() < 0.3
    if mode in ("negcycle", "negcycle-float"):
        real = mode == "negcycle-float"
        w = _weights(rng, s, d, n, "negative-float" if real else "negative")
        # a cycle of negative weight through k vertices (maybe a negative self-loop)
        k = int(rng.integers(1, min(n, 5) + 1))
        cyc = rng.choice(n, k, replace=False)
        cs, cd = cyc, np.roll(cyc, -1)
        cw = rng.integers(-5, 6, k).astype(np.float64 if real else np.int64)
        cw[0] -= cw.sum() + (rng.uniform(0.5, 3) if real else int(rng.integers(1, 4)))  # total < 0
        s, d = np.concatenate([s, cs]), np.concatenate([d, cd])
        w = np.concatenate([w, cw]).astype(np.float64 if real else np.int64)
    elif mode == "hier-wrap":  # k arcs of 2**52 into one vertex: their int64 sum wraps to 0
        n = 4097
        kind = "in-star"
        s, d = np.arange(1, n), np.zeros(n - 1, dtype=np.int64)
        w = np.full(n - 1, 2**52, dtype=np.int64)
    elif mode in ("long-chain", "long-negative-chain"):
        # a long path of heavy arcs: distances near +-2**53, sums past +-2**62 (and -2**63)
        n = int(rng.integers(1000, 3000))
        kind = "chain"
        s, d = np.arange(n - 1), np.arange(1, n)
        top = (EXACT - 1) // (n - 1)
        w = rng.integers(top - top // 8, top + 1, n - 1).astype(np.int64)
        if mode == "long-negative-chain":
            w = -w
    else:
        if undirected:
            w = _weights(rng, s, d, n, mode)
            s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
        else:
            w = _weights(rng, s, d, n, mode)
    parallel = "keep" if rng.random() < 0.25 else "min"
    case = Case(f"{kind}/{mode}{'/undirected' if undirected else ''}{'/keep' if parallel == 'keep' else ''}",
                s, d, w, n, directed=not undirected, parallel=parallel, id_base=int(rng.choice([0, 0, 1, 7])))
    case.sources = make_sources(rng, n) if not mode.startswith(("long", "hier-wrap")) else rng.integers(0, 3, 2).astype(np.int64)
    return case


def make_sources(rng, n):
    way = rng.integers(0, 5)
    if way == 0:
        return np.array([rng.integers(0, n)], dtype=np.int64)
    if way == 1:
        return rng.integers(0, n, int(rng.integers(2, 9))).astype(np.int64)  # repeats likely
    if way == 2 and n <= 80:
        return np.arange(n, dtype=np.int64)
    if way == 3:
        v = int(rng.integers(0, n))
        return np.array([v, v, v], dtype=np.int64)
    k = int(rng.integers(1, min(n, 40) + 1))
    return rng.permutation(n)[:k].astype(np.int64)


# -------------------------------------------------------------------------- reference
class Reference:
    """Exact facts of a case, computed without the product's solvers."""

    def __init__(self, case: Case, g: Graph):
        self.case = case
        n = case.n
        src, dst = case.src, case.dst
        w = np.asarray(case.w)
        self.integer = w.dtype.kind in "iu"
        # the lightest arc of each (tail, head) pair, whatever the parallel policy
        wi = w.astype(object) if self.integer else w.astype(np.float64)
        best: dict = {}
        for a, b, x in zip(src.tolist(), dst.tolist(), wi.tolist()):
            x = int(x) if self.integer else float(x)
            if (a, b) not in best or x < best[(a, b)]:
                best[(a, b)] = x
        self.best = best
        self.tails = np.array([k[0] for k in best], dtype=np.int64)
        self.heads = np.array([k[1] for k in best], dtype=np.int64)
        self.wmin = np.array(list(best.values()), dtype=np.int64 if self.integer else np.float64) \
            if best else np.zeros(0, dtype=np.int64 if self.integer else np.float64)
        self.negative = bool(len(w) and (w.astype(np.float64) < 0).any())
        self.equal = bool(len(w) == 0 or (w.astype(np.float64) == w.astype(np.float64)[0]).all())
        # what the product accepts (README): integer path lengths below 2**53, bounded by the
        # smaller of (n-1) x max|w| and the sum of each vertex's largest |in-arc| weight
        self.exact_refusal = None
        if self.integer and n >= 2 and len(w):
            absw = [abs(int(x)) for x in np.asarray(g.weights).tolist()]
            crude = (n - 1) * max(absw)
            inmax = defaultdict(int)
            for h, x in zip(g.indices.tolist(), absw):
                inmax[h] = max(inmax[h], x)
            bound = min(crude, sum(inmax.values()))
            if bound >= EXACT:
                self.exact_refusal = f"path bound {bound} >= 2**53"
        self.hier_refusal = None
        if not self.integer:
            self.hier_refusal = "float weights"
        elif self.negative:
            self.hier_refusal = "negative weights"
        elif n >= 2 and len(w):
            ww = sorted((int(x) for x in np.asarray(g.weights).tolist()), reverse=True)  # Python ints: no wrap
            bound = min((n - 1) * ww[0], sum(ww[:n - 1]))
            if bound > HIER_BOUND:
                self.hier_refusal = f"hierarchy bound {bound} > 2**30"
        self.mat = sp.csr_array((self.wmin.astype(np.float64), (self.tails, self.heads)), shape=(n, n))
        self.pattern = sp.csr_array((np.ones(len(self.tails)), (self.tails, self.heads)), shape=(n, n))
        self._rows: dict = {}
        self.cycle_from: dict = {}

    def reach(self, s):
        order = csg.breadth_first_order(self.pattern, int(s), directed=True, return_predecessors=False)
        seen = np.zeros(self.case.n, dtype=bool)
        seen[order] = True
        return seen

    def row(self, s):
        """(distances, negative cycle reachable from s?)."""
        s = int(s)
        if s in self._rows:
            return self._rows[s]
        n = self.case.n
        if not self.negative:
            d = csg.dijkstra(self.mat, directed=True, indices=s)
            out = (np.asarray(d, dtype=np.float64), False)
        else:
            out = self._bellman_ford(s)
        self._rows[s] = out
        return out

    def _bellman_ford(self, s):
        n = self.case.n
        t, h = self.tails, self.heads
        if self.integer:  # exact in int64: every |distance| and candidate stays below 2**54
            big = np.int64(2**62)
            w = self.wmin.astype(np.int64)
            dist = np.full(n, big, dtype=np.int64)
            dist[s] = 0
            for _ in range(n + 1):
                ok = dist[t] != big
                cand = dist[t[ok]] + w[ok]
                better = cand < dist[h[ok]]
                if not better.any():
                    return np.where(dist == big, np.inf, dist.astype(np.float64)), False
                np.minimum.at(dist, h[ok][better], cand[better])
            return None, True
        dist = np.full(n, np.inf)
        dist[s] = 0.0
        for _ in range(n + 1):
            cand = dist[t] + self.wmin
            better = cand < dist[h]
            if not better.any():
                return dist, False
            np.minimum.at(dist, h[better], cand[better])
        return None, True

    def on_negative_closed_walk(self, v):
        """Whether ``v``'s strongly connected component holds a negative cycle (then a
        negative closed walk passes through ``v``)."""
        _, comp = csg.connected_components(self.pattern, directed=True, connection="strong")
        inside = (comp[self.tails] == comp[v]) & (comp[self.heads] == comp[v])
        t, h, w = self.tails[inside], self.heads[inside], self.wmin[inside].astype(np.float64)
        k = int((comp == comp[v]).sum())
        dist = np.full(self.case.n, np.inf)
        dist[v] = 0.0
        for _ in range(k + 1):
            cand = dist[t] + w
            better = cand < dist[h]
            if not better.any():
                return False
            np.minimum.at(dist, h[better], cand[better])
        return True

    def rows(self, sources):
        d = []
        cyc = False
        for s in sources:
            r, c = self.row(s)
            cyc |= c
            d.append(r)
        return (None if cyc else np.array(d)), cyc


# ---------------------------------------------------------------------------- methods
def _variants(name, backend):
    """Option sets tried for a method (the first is the default); each a function of the
    graph giving the options or None where they do not apply."""
    V = {
        ("phast", "cpu"): [{}, {"lanes": 3, "threads": 2}, {"lanes": 1, "threads": 1}, {"lanes": 64}],
        ("phast", "gpu"): [{}, {"upward": "sweep"}, {"batch_size": 3}, {"batch_size": 1}],
        ("hbf", "gpu"): [{}, {"hops": 1}, {"hops": 2}, {"edge_classes": False}, {"persistent": False},
                         {"coalesced_enqueue": "warp"}, {"coalesced_enqueue": False}, {"lanes": 4},
                         {"heavy_threshold": 2}, {"dedup64": False, "virtual_warps": False}],
        ("batched", "gpu"): [{}, {"mode": "pull"}, {"mode": "push"}, {"mode": "pairs"}, {"batch_size": 3},
                             {"batch_size": 33}, {"delta": 0.5}, {"locality": False}],
        ("locality", "gpu"): [{}, {"persistent": False}, {"k": 3}, {"k": 1}, {"vertices_per_thread": 2},
                              {"vertices_per_thread": 4}, {"resident": False}, {"arc_batch": 0},
                              {"prefetch": False}, {"persistent": False, "k": 5}],
        ("delta", "gpu"): [{}, {"delta": "maxw-maxdeg"}, {"delta": "mean*2"}, {"delta": "median"}, {"delta": 1},
                           {"delta": 1e-3}],
        ("edgelist", "gpu"): [{}, {"segment": 4}, {"restrict": False}, {"check_every": 1}],
        ("queue-bf", "gpu"): [{}, {"check_every": 1}, {"blocks_per_sm": 1}],
        ("dijkstra-gpu", "gpu"): [{}, {"check_every": 1}, {"threads_per_block": 128}],
        ("bfs-naive", "gpu"): [{}, {"check_every": 1}],
        ("bfs-blocked", "gpu"): [{}, {"check_every": 1}],
        ("bfs-hierarchical", "gpu"): [{}, {"check_every": 1}],
    }
    out = []
    for o in V.get((name, backend), [{}]):
        out.append(o)
    return out


def _option_applies(name, opts, ref: Reference):
    """Option sets that a method documents as not for this graph are not tried."""
    if name == "batched" and opts.get("mode") in ("push", "pairs") and not ref.integer:
        return False  # "needs integer weights (atomicMin on integers)"
    return True


def methods_for(backend):
    out = []
    for be in (["cpu", "gpu"] if backend == "all" else [backend]):
        for m in registry.registrations(be):
            out.append((m.name, be))
        out.append(("auto", be))
    return out


def expected_refusal(name, backend, ref: Reference, opts) -> list[str] | None:
    """Documented reasons this method may refuse this graph (message fragments), or None
    when it must solve it."""
    why = []
    if ref.exact_refusal:
        why.append("2**53")
    if name == "auto":
        return why or None
    spec = registry.get(name, backend)
    if ref.negative and not spec.negative_weights:
        why.append("non-negative")
    if spec.equal_weights and not ref.equal:
        why.append("hop distances")
    if spec.needs_hierarchy:
        from gpu_sssp.kernels import hierarchy as hmod

        if not hmod.library_available():
            why.append("routingkit_ch")
        if ref.hier_refusal:
            why.append("phast:")
        if not opts.get("force") and ref.case.n > hmod.SMALL_GRAPH:
            why.append("may take very long")
    if name == "spmv-ell":
        why.append("max_fill")
    if name == "dijkstra-gpu":
        why.append("would take about")
    return why or None


# ----------------------------------------------------------------------------- checks
def _close(a, b, integer, tol):
    if integer:
        return a == b
    return np.isclose(a, b, rtol=tol, atol=tol)


def check_distances(ref: Reference, want, got, integer, tol):
    problems = []
    if got.shape != want.shape:
        return [f"distances shape {got.shape}, expected {want.shape}"]
    fin_w, fin_g = np.isfinite(want), np.isfinite(got)
    if not np.array_equal(fin_w, fin_g):
        i, v = np.argwhere(fin_w != fin_g)[0]
        problems.append(f"reachability differs: row {i} vertex {v}: got {got[i, v]}, expected {want[i, v]}")
        return problems
    if np.isnan(got).any():
        problems.append("NaN distances")
    ok = np.where(fin_w, _close(np.where(fin_w, got, 0), np.where(fin_w, want, 0), integer, tol), True)
    if not ok.all():
        i, v = np.argwhere(~ok)[0]
        problems.append(f"distance row {i} vertex {v}: got {got[i, v]!r}, expected {want[i, v]!r} "
                        f"({int((~ok).sum())} wrong)")
    if not fin_g.all() and not (got[~fin_g] == np.inf).all():
        problems.append("unreachable vertices are not +inf")
    return problems


def check_predecessors(ref: Reference, sources, dist, pred, integer, tol):
    problems = []
    n = ref.case.n
    if pred is None:
        return ["predecessors=True but no predecessors returned"]
    if pred.shape != dist.shape:
        return [f"predecessors shape {pred.shape}, expected {dist.shape}"]
    for i, s in enumerate(sources):
        s = int(s)
        p, d = pred[i], dist[i]
        if p[s] != -1:
            problems.append(f"source {s}: has predecessor {p[s]}")
        unreached = ~np.isfinite(d)
        if (p[unreached] != -1).any():
            problems.append(f"source {s}: an unreachable vertex has a predecessor")
        for v in np.nonzero(np.isfinite(d))[0]:
            v = int(v)
            if v == s:
                continue
            u = int(p[v])
            if u < 0 or u >= n:
                problems.append(f"source {s}: reached vertex {v} has predecessor {u}")
                break
            if (u, v) not in ref.best:
                problems.append(f"source {s}: predecessor {u} of {v} is not joined to it by an arc")
                break
            wuv = ref.best[(u, v)]
            if integer:
                if not (np.isfinite(d[u]) and int(d[u]) + wuv == int(d[v])):
                    problems.append(f"source {s}: dist[{u}] + w({u},{v}) = {d[u]} + {wuv} != dist[{v}] = {d[v]}")
                    break
            elif not (np.isfinite(d[u]) and _close(d[u] + wuv, d[v], False, tol)):
                problems.append(f"source {s}: dist[{u}] + w({u},{v}) = {d[u]} + {wuv} != dist[{v}] = {d[v]}")
                break
        if problems:
            break
        # chains reach the source with no cycle
        anc = np.where(p < 0, np.arange(n), p)
        for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 2):
            anc = anc[anc]
        bad = np.isfinite(d) & (anc != s)
        if bad.any():
            v = int(np.argmax(bad))
            problems.append(f"source {s}: the predecessor chain of {v} does not end at the source (a cycle)")
            break
    return problems


def check_stats(res, dist, integer, tol, *, over=None):
    """reached / eccentricity / sum_distance of ``res`` against the rows ``dist``
    (columns ``over`` only, when given)."""
    problems = []
    d = dist if over is None else dist[:, over]
    fin = np.isfinite(d)
    reached = fin.sum(axis=1)
    if not np.array_equal(np.asarray(res.reached), reached):
        problems.append(f"reached {np.asarray(res.reached).tolist()[:8]}, expected {reached.tolist()[:8]}")
    ecc = np.array([d[i][fin[i]].max() if fin[i].any() else np.nan for i in range(len(d))])
    recc = np.asarray(res.eccentricity, dtype=np.float64)
    same = (np.isnan(ecc) & np.isnan(recc)) | _close(np.nan_to_num(recc, nan=-1.5), np.nan_to_num(ecc, nan=-1.5),
                                                      integer, tol)
    if not np.all(same):
        problems.append(f"eccentricity {recc.tolist()[:8]}, expected {ecc.tolist()[:8]}")
    if integer:
        sums = [sum(int(x) for x in d[i][fin[i]].tolist()) for i in range(len(d))]
        rs = np.asarray(res.sum_distance)
        ok = all((int(rs[i]) == sums[i]) if rs.dtype.kind in "iu" else
                 (sums[i] < 2**53 and float(rs[i]) == float(sums[i])) or
                 (sums[i] >= 2**53 and abs(float(rs[i]) - sums[i]) <= 8 * 2.0**-52 * sums[i])
                 for i in range(len(d)))
        if not ok:
            problems.append(f"sum_distance {rs.tolist()[:8]}, expected {sums[:8]}")
    else:
        sums = np.where(fin, d, 0).sum(axis=1)
        if not np.allclose(np.asarray(res.sum_distance, dtype=np.float64), sums, rtol=max(tol, 1e-9) * 10,
                           atol=tol * 10):
            problems.append(f"sum_distance {np.asarray(res.sum_distance).tolist()[:8]}, expected {sums.tolist()[:8]}")
    return problems


def check_tables(res, case: Case, dist, predecessors):
    """mean_distance and the long distance table (file ids) against the arrays."""
    problems = []
    others = np.asarray(res.reached) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.where(others > 0, np.asarray(res.sum_distance, dtype=np.float64) / np.maximum(others, 1), np.nan)
    got = np.asarray(res.mean_distance(), dtype=np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(want)) or not np.allclose(got[~np.isnan(got)], want[~np.isnan(want)]):
        problems.append(f"mean_distance {got.tolist()[:6]}, expected {want.tolist()[:6]}")
    if dist.size <= 20000:
        t = res.to_table()
        rows, cols = np.nonzero(np.isfinite(dist))
        base = case.id_base
        if t.num_rows != len(rows):
            problems.append(f"to_table has {t.num_rows} rows, {len(rows)} reached pairs")
        else:
            v = t.column("vertex").to_numpy()
            src = t.column("source").to_numpy()
            if not (np.array_equal(v, cols + base) and np.array_equal(src, np.asarray(res.sources)[rows] + base)):
                problems.append("to_table's source / vertex ids differ from the arrays plus id_base")
            elif not np.array_equal(t.column("distance").to_numpy(), dist[rows, cols]):
                problems.append("to_table's distances differ from the array")
            elif predecessors:
                p = np.asarray(res.predecessors)[rows, cols]
                if not np.array_equal(t.column("predecessor").to_numpy(), np.where(p >= 0, p + base, -1)):
                    problems.append("to_table's predecessors differ from the array plus id_base")
    return problems


def check_cycle_error(ref: Reference, e: NegativeCycleError, sources):
    problems = []
    n = ref.case.n
    reach = np.zeros(n, dtype=bool)
    for s in set(int(x) for x in sources):
        reach |= ref.reach(s)
    if not (0 <= e.vertex < n) or not reach[e.vertex]:
        problems.append(f"NegativeCycleError names vertex {e.vertex}, not reachable from the sources")
    if e.cycle:
        cyc = list(e.cycle)
        total = 0
        for a, b in zip(cyc, cyc[1:] + cyc[:1]):
            if (a, b) not in ref.best:
                problems.append(f"NegativeCycleError.cycle {cyc[:12]}: no arc {a} -> {b}")
                return problems
            total += ref.best[(a, b)]
        if not total < 0:
            problems.append(f"NegativeCycleError.cycle {cyc[:12]} weighs {total}, not negative")
        if e.vertex not in cyc:
            problems.append(f"NegativeCycleError.vertex {e.vertex} is not on its .cycle {cyc[:12]}")
    elif not problems and not ref.on_negative_closed_walk(e.vertex):
        problems.append(f"NegativeCycleError names vertex {e.vertex} (no .cycle), which lies on no negative "
                        "cycle (its strongly connected component holds none)")
    if e.source is not None and (e.source not in set(int(x) for x in sources)):
        problems.append(f"NegativeCycleError.source {e.source} is not a source")
    elif e.source is not None and 0 <= e.vertex < n and not ref.reach(e.source)[e.vertex]:
        problems.append(f"NegativeCycleError.source {e.source} does not reach its vertex {e.vertex}")
    return problems


# --------------------------------------------------------------------------- runner
class Tally:
    def __init__(self):
        self.tried = 0
        self.solved = 0
        self.refused = 0
        self.cycles = 0
        self.failures = 0
        self.seconds = 0.0
        self.refusals = defaultdict(int)

    def line(self, label):
        top = ", ".join(f"{k} x{v}" for k, v in sorted(self.refusals.items(), key=lambda kv: -kv[1])[:3])
        return (f"{label:24s} tried {self.tried:5d}  solved {self.solved:5d}  refused {self.refused:5d}  "
                f"neg-cycles {self.cycles:4d}  FAILURES {self.failures:3d}  {self.seconds:7.1f} s"
                + (f"   refusals: {top}" if top else ""))


def _short(msg, k=90):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= k else msg[:k] + "..."


def _refusal_key(msg):
    msg = str(msg)
    for frag in ("2**53", "non-negative", "hop distances", "may take very long", "routingkit_ch", "phast:",
                 "max_fill", "would take about", "2**63"):
        if frag in msg:
            return frag
    return _short(msg, 40)


def sum_refusal_ok(e, want, ref: Reference, g: Graph) -> bool:
    """A SumOverflowError the README allows: a source's integer sum of distances may pass
    +-2**63 ((reached - 1) x its largest |distance|, or with negative weights the
    conservative (reached - 1) x the graph's path bound)."""
    from gpu_sssp.kernels.errors import SumOverflowError

    if not isinstance(e, SumOverflowError) or want is None:
        return False
    fin = np.isfinite(want)
    reached = fin.sum(axis=1) - 1
    top = max(float(reached[i]) * float(np.abs(want[i][fin[i]]).max()) for i in range(len(want)))
    bound = float(reached.max()) * float(g.path_bound())
    return top >= 2.0**62 or (ref.negative and bound >= 2.0**62)


def run_one(case: Case, g: Graph, ref: Reference, name, backend, opts, rng, args):
    """Run one method on one case; return (status, problems) where status is 'solved',
    'refused:<key>', 'cycle' or 'fail'."""
    sources = case.sources
    integer = ref.integer
    # float32 (and float16, widened to float32) weights: the GPU kernels add in float32
    tol = 1e-4 if np.asarray(case.w).dtype.itemsize <= 4 and not integer else 1e-9
    want, cyc = (None, False) if ref.exact_refusal else ref.rows(sources)
    expect = expected_refusal(name, backend, ref, opts)
    predecessors = bool(rng.random() < 0.6)
    if ref.exact_refusal:
        expect = expect or ["2**53"]
    kw = {k: v for k, v in opts.items() if not k.startswith("_")}
    given = sources  # the API takes any integer container: vary it
    form = rng.integers(0, 5)
    if form == 1:
        given = sources.tolist()
    elif form == 2:
        given = sources.astype(np.int32)
    elif form == 3 and len(sources) == 1:
        given = int(sources[0])
    elif form == 4:
        given = sources.astype(np.uint32)
    try:
        res = gpu_sssp.solve(g, given, method=name, backend=backend, predecessors=predecessors, **kw)
    except NegativeCycleError as e:
        if cyc:
            return "cycle", check_cycle_error(ref, e, sources)
        if expect:
            return "fail", [f"NegativeCycleError on a graph it should refuse ({expect}): {e}"]
        return "fail", [f"NegativeCycleError but no negative cycle is reachable from the sources: {e}"]
    except SsspError as e:
        key = _refusal_key(e)
        if expect and any(f in str(e) for f in expect):
            return f"refused:{key}", []
        if sum_refusal_ok(e, want, ref, g):
            return f"refused:{key}", []
        return "fail", [f"undocumented refusal {type(e).__name__}: {_short(e, 300)}"]
    except Exception as e:  # a crash (not a product error)
        return "fail", [f"crash {type(e).__name__}: {_short(e, 300)}", traceback.format_exc(limit=6)]
    # it solved the graph
    if cyc:
        return "fail", ["solved a graph with a negative cycle reachable from a source (no NegativeCycleError)"]
    if ref.exact_refusal:
        return "fail", [f"solved a graph beyond exactness ({ref.exact_refusal}): expected a refusal"]
    problems = []
    if res.distances is None:
        return "fail", ["no distances returned"]
    if not np.array_equal(np.asarray(res.sources), sources):
        problems.append(f"sources {np.asarray(res.sources).tolist()[:8]}, expected {sources.tolist()[:8]}")
    dist = np.asarray(res.distances)
    if dist.dtype != np.float64:
        problems.append(f"distances dtype {dist.dtype}, expected float64")
    problems += check_distances(ref, want, dist, integer, tol)
    if not problems:
        problems += check_stats(res, dist, integer, tol)
    if not problems and predecessors:
        problems += check_predecessors(ref, sources, dist, None if res.predecessors is None
                                       else np.asarray(res.predecessors), integer, tol)
    if not problems:
        problems += check_tables(res, case, dist, predecessors)
    elif not predecessors and res.predecessors is not None:
        problems.append("predecessors returned though not asked")
    if not problems and rng.random() < 0.3:  # statistics only
        try:
            with_pred = bool(rng.random() < 0.3)
            st = gpu_sssp.solve(g, sources, method=name, backend=backend, distances=False,
                                predecessors=with_pred, **kw)
            if st.distances is not None:
                problems.append("distances=False returned distances")
            problems += [f"distances=False: {p}" for p in check_stats(st, want, integer, tol)]
            if with_pred and not problems:
                problems += [f"distances=False, predecessors=True: {p}" for p in check_predecessors(
                    ref, sources, want, None if st.predecessors is None else np.asarray(st.predecessors),
                    integer, tol)]
        except Exception as e:
            if not sum_refusal_ok(e, want, ref, g):
                problems.append(f"distances=False: {type(e).__name__}: {_short(e, 300)}")
    if not problems and rng.random() < 0.4:  # a travel-time matrix (RPHAST for phast)
        t = rng.integers(0, case.n, int(rng.integers(1, min(case.n, 12) + 2))).astype(np.int64)
        over = str(rng.choice(["targets", "all"]))
        try:
            tkw = dict(kw)
            if name == "phast" and tkw.get("upward") == "sweep":  # targets take searches (a documented refusal)
                tkw.pop("upward")
            mt = gpu_sssp.solve(g, sources, method=name, backend=backend, targets=t, stats_over=over, **tkw)
            mat = np.asarray(mt.distances)
            problems += [f"targets={t.tolist()} ({over}): {p}" for p in check_distances(ref, want[:, t], mat, integer, tol)]
            if not problems:
                cols = np.unique(t) if over == "targets" else None
                problems += [f"targets={t.tolist()} stats_over={over}: {p}"
                             for p in check_stats(mt, want, integer, tol, over=cols)]
        except SsspError as e:
            if not sum_refusal_ok(e, want, ref, g):
                problems.append(f"targets= refused: {_short(e, 300)}")
        except Exception as e:
            problems.append(f"targets=: crash {type(e).__name__}: {_short(e, 300)}")
    return ("fail", problems) if problems else ("solved", [])


def save_case(out: Path, label, case: Case, opts, problems, seed, index):
    out.mkdir(parents=True, exist_ok=True)
    safe = label.replace("@", "-at-").replace("/", "_")
    path = out / f"{safe}-seed{seed}-{index}.npz"
    np.savez_compressed(path, src=case.src, dst=case.dst, weights=np.asarray(case.w), n=case.n,
                        sources=case.sources, directed=case.directed, parallel=case.parallel, id_base=case.id_base,
                        kind=case.kind, options=json.dumps(opts), method=label, problems="\n".join(problems))
    return path


def load_case(path):
    z = np.load(path, allow_pickle=False)
    case = Case(str(z["kind"]), z["src"], z["dst"], z["weights"], int(z["n"]), directed=bool(z["directed"]),
                parallel=str(z["parallel"]), sources=z["sources"].astype(np.int64),
                id_base=int(z["id_base"]) if "id_base" in z else 0)
    return case, json.loads(str(z["options"])), str(z["method"]), str(z["problems"])


def via_hierarchy_cache(case: Case, g: Graph, out: Path) -> Graph:
    """A fresh copy of ``case``'s graph holding the hierarchy of ``g`` written to a cache
    file and read back by ``pipeline.hierarchy`` (checksums, fingerprint, layout checks)."""
    import tempfile

    from gpu_sssp.kernels import hierarchy as hmod
    from gpu_sssp.pipeline import hierarchy as phier

    if hmod.structure(g) is not None and not hmod.has_hierarchy(g):
        raise ValueError("not road-like: no hierarchy built for the round trip")
    h = hmod.get_hierarchy(g)
    with tempfile.TemporaryDirectory(prefix="fuzz-ch-") as tmp:
        path = Path(tmp) / "g.ch.npz"
        phier.write_cache(h, g, path)
        fresh = case.graph()
        phier.load_hierarchy(fresh, path, build=False)
    assert hmod.has_hierarchy(fresh)
    return fresh


class Watchdog:
    """Saves the case in flight and ends the process when one call runs longer than
    ``limit`` seconds (a kernel that never terminates: negative cycles, a lost flag).
    Best effort: it needs the GIL, which CuPy releases while it waits on the device."""

    def __init__(self, limit, out: Path, seed):
        self.limit, self.out, self.seed = limit, out, seed
        self.what = None
        self.since = None
        if limit > 0:
            threading.Thread(target=self._watch, daemon=True, name="fuzz-watchdog").start()

    def start(self, label, case, opts, index):
        self.what = (label, case, opts, index)
        self.since = time.monotonic()

    def stop(self):
        self.since = None

    def _watch(self):
        while True:
            time.sleep(1.0)
            since = self.since
            if since is not None and time.monotonic() - since > self.limit and self.what:
                label, case, opts, index = self.what
                path = save_case(self.out, label, case, opts, [f"no answer after {self.limit:.0f} s (hang)"],
                                 self.seed, index)
                print(f"HANG {label} {opts} on {case.kind} n={case.n} m={len(case.src)}: no answer after "
                      f"{self.limit:.0f} s\n     repro: {path}", flush=True)
                os._exit(3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--backend", choices=["cpu", "gpu", "all"], default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-failures")
    ap.add_argument("--methods", default="", help="comma-separated names (NAME or NAME@BACKEND); default all")
    ap.add_argument("--weights", default="", help="comma-separated weight modes to draw from; default all: "
                    + ",".join(WEIGHT_MODES))
    ap.add_argument("--max-n", type=int, default=120, help="largest random graph (vertices)")
    ap.add_argument("--replay", default="", help="rerun one saved .npz case and print its problems")
    ap.add_argument("--call-timeout", type=float, default=300.0,
                    help="seconds one method call may take before the case is saved and the run ends (exit 3)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    # phast forced on graphs that do not look road-like logs a warning each time
    logging.getLogger("gpu_sssp.kernels.hierarchy").setLevel(logging.ERROR)

    if args.replay:
        case, opts, label, old = load_case(args.replay)
        name, _, be = label.partition("@")
        be = be or registry.get(name).backend if name != "auto" else (be or "cpu")
        g = case.graph()
        ref = Reference(case, g)
        status, problems = run_one(case, g, ref, name, be, opts, np.random.default_rng(0), args)
        print(f"{label} {opts} on {case.kind} n={case.n} m={len(case.src)} sources={case.sources.tolist()[:10]}")
        print("saved problems:\n  " + old.replace("\n", "\n  "))
        print(f"now: {status}\n  " + "\n  ".join(problems))
        return 1 if status == "fail" else 0

    backend = args.backend
    if backend in ("gpu", "all") and gpu_sssp.device_count() == 0:
        if backend == "gpu":
            print("no CUDA device visible: the GPU methods cannot run here", file=sys.stderr)
            return 2
        print("no CUDA device visible: --backend all runs the CPU methods only", file=sys.stderr)
        backend = "cpu"
    todo = methods_for(backend)
    if args.methods:
        want = set(args.methods.split(","))
        todo = [(n, b) for n, b in todo if n in want or f"{n}@{b}" in want]
    rng = np.random.default_rng(args.seed)
    out = Path(args.out)
    tallies = {f"{n}@{b}": Tally() for n, b in todo}
    t_end = time.perf_counter() + args.seconds
    t_start = time.perf_counter()
    cases = 0
    saved = []
    dog = Watchdog(args.call_timeout, out, args.seed)
    while time.perf_counter() < t_end:
        case = make_case(rng, args.max_n, [m for m in args.weights.split(",") if m])
        try:
            g = case.graph()
        except Exception as e:
            print(f"Graph.from_edges failed on {case.kind}: {type(e).__name__}: {e}")
            saved.append(save_case(out, "from_edges", case, {}, [str(e)], args.seed, cases))
            cases += 1
            continue
        ref = Reference(case, g)
        cases += 1
        for name, be in todo:
            label = f"{name}@{be}"
            tally = tallies[label]
            variants = [o for o in _variants(name, be) if _option_applies(name, o, ref)]
            opts = dict(variants[int(rng.integers(0, len(variants)))]) if rng.random() < 0.5 else {}
            if name == "phast" and rng.random() < 0.7:
                opts["force"] = True
            g_use = g
            t0 = time.perf_counter()
            dog.start(label, case, opts, cases)
            if name == "phast" and ref.hier_refusal is None and rng.random() < 0.15:
                # the hierarchy through pipeline.hierarchy's cache file, into a fresh copy of the graph
                try:
                    g_use = via_hierarchy_cache(case, g, out)
                    opts["_via_cache"] = True
                except Exception as e:  # building refused (not road-like, library missing): phast's own answer
                    if args.verbose:
                        print(f"note: no hierarchy cache round trip: {type(e).__name__}: {_short(e)}")
                    if ref.exact_refusal is None and not isinstance(e, (ImportError, ModuleNotFoundError)) \
                            and "road-like" not in str(e):
                        # an eligible graph whose hierarchy cannot be built or cached: a failure
                        path = save_case(out, label, case, {"_via_cache": True}, [f"{type(e).__name__}: {e}"],
                                         args.seed, cases)
                        saved.append(path)
                        tally.failures += 1
                        print(f"FAIL {label} hierarchy build / cache round trip on {case.kind} n={case.n} "
                              f"m={len(case.src)}: {type(e).__name__}: {_short(e, 200)}\n     repro: {path}",
                              flush=True)
            status, problems = run_one(case, g_use, ref, name, be, opts, rng, args)
            dog.stop()
            tally.seconds += time.perf_counter() - t0
            tally.tried += 1
            if status == "solved":
                tally.solved += 1
            elif status == "cycle":
                tally.cycles += 1
                if problems:
                    status = "fail"
            elif status.startswith("refused:"):
                tally.refused += 1
                tally.refusals[status.split(":", 1)[1]] += 1
            if status == "fail":
                tally.failures += 1
                path = save_case(out, label, case, opts, problems, args.seed, cases)
                saved.append(path)
                print(f"FAIL {label} {opts} on {case.kind} n={case.n} m={len(case.src)} "
                      f"sources={case.sources.tolist()[:8]}: {problems[0]}\n     repro: {path}", flush=True)
                if args.verbose and len(problems) > 1:
                    print("     " + "\n     ".join(problems[1:]))
        if time.perf_counter() >= t_end:
            break
    wall = time.perf_counter() - t_start
    print(f"\n{cases} graphs in {wall:.1f} s (seed {args.seed}, backend {args.backend}, max n {args.max_n})")
    for label, t in tallies.items():
        print(t.line(label))
    total = sum(t.failures for t in tallies.values()) + sum(1 for p in saved if "from_edges" in p.name)
    if total:
        print(f"\n{total} failure(s); repros under {out}/ (rerun one: python {Path(__file__).name} --replay FILE)")
    if any(sys.modules.get(m) is not None for m in ("dask", "distributed")):
        print("note: dask/distributed was imported", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
