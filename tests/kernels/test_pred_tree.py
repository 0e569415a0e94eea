"""The predecessor-tree pass shared by every GPU method (``kernels.gpu.common.
predecessor_tree`` driving common.cuh's ``pred_init`` / ``pred_round``), run on the CPU:
the host loop as it is, the two kernels as NumPy models of their CUDA text (one thread
per (vertex, slot) pair, the first qualifying in-arc in reverse-CSR order; a round's
writes are invisible to its own qualifying test, as in the kernel).  The GPU tests
(``-m gpu``) check the kernels themselves with the same checker."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import tree_problems
from gpu_sssp.kernels.gpu.common import PRED_GROUP_MAX, predecessor_tree
from gpu_sssp.pipeline.graph import Graph

from . import graphs as G


class _Flag:
    """A stand-in for the one-int32 device array (``fill`` and ``get`` as CuPy's)."""

    def __init__(self):
        self.a = np.zeros(1, np.int32)

    def fill(self, x):
        self.a.fill(x)

    def get(self):
        return self.a.copy()


def _arcs(n, B, nb, rptr, rsrc):
    heads = np.repeat(np.arange(n), np.diff(rptr))
    return heads, rsrc


def _first(pair, ok, tot):
    """For each pair index, the first arc (in order) with ok; -1 where none."""
    idx = np.nonzero(ok)[0]
    out = np.full(tot, -1, np.int64)
    p = pair[idx]
    uniq, first = np.unique(p, return_index=True)
    out[uniq] = idx[first]
    return out


def k_init(grid, block, args):
    n, B, nb, rptr, rsrc, rw, d, src, pred, rank, strict = args
    n, B, nb = int(n), int(B), int(nb)
    heads, tails = _arcs(n, B, nb, rptr, rsrc)
    pred[:] = -1
    rank[:] = -1
    inf = np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).max
    for s in range(nb):  # slots: vectorised over arcs
        dv = d[heads * B + s]
        du = d[tails * B + s]
        ok = (du != inf) & (dv != inf) & (du < dv) & (du + rw.astype(d.dtype) == dv) & bool(strict)
        ok &= heads != src[s]
        e = _first(heads, ok, n)
        has = e >= 0
        pred[np.nonzero(has)[0] * B + s] = tails[e[has]]
        rank[np.nonzero(has)[0] * B + s] = 0
        pred[src[s] * B + s] = -1
        rank[src[s] * B + s] = 0


def k_round(grid, block, args):
    n, B, nb, rptr, rsrc, rw, d, pred, rank, r, flag = args
    n, B, nb, r = int(n), int(B), int(nb), int(r)
    heads, tails = _arcs(n, B, nb, rptr, rsrc)
    inf = np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).max
    before = rank.copy()  # what every thread's qualifying test sees
    for s in range(nb):
        tv, tu = heads * B + s, tails * B + s
        ku = before[tu]
        ok = (before[tv] == -1) & (d[tv] != inf) & (ku >= 0) & (ku < r)
        ok &= d[tu] + rw.astype(d.dtype) == d[tv]
        e = _first(heads, ok, n)
        has = np.nonzero(e >= 0)[0]
        pred[has * B + s] = tails[e[has]]
        rank[has * B + s] = r
        if len(has):
            flag.a[0] = r


def tree(g, dist, sources):
    """predecessor_tree on the CPU models: (pred (B, n), launches, syncs, rounds)."""
    sources = np.asarray(sources, dtype=np.int64)
    B, n = len(sources), g.n
    integer = g.integer_weights
    dt = np.int64 if integer else np.float64
    inf = np.iinfo(np.int64).max if integer else np.inf
    d = np.where(np.isfinite(dist), dist, 0).astype(dt)
    d[~np.isfinite(dist)] = inf
    d = np.ascontiguousarray(d.T).reshape(-1)  # vertex-major, as the batched kernel
    rptr, rsrc, rw, _ = g.reverse()
    pred = np.empty(n * B, np.int64)
    rank = np.empty(n * B, np.int32)
    out = predecessor_tree(k_init, k_round, 1, n=n, B=B, nb=B, rptr=rptr, rsrc=rsrc, rw=rw, dist=d,
                           src=sources, pred=pred, rank=rank, flag=_Flag(), strict=not g.has_negative,
                           complete=integer and g.m > 0 and g.min_weight > 0)
    return (pred.reshape(n, B).T, *out)


def _check(g, sources, method="dijkstra"):
    ref = kernels.solve(g, sources, method=method)
    pred, launches, syncs, rounds = tree(g, ref.distances, sources)
    assert tree_problems(g, ref.distances, pred, sources) == []
    return pred, launches, syncs, rounds


def test_three_vertex_zero_cycle():
    g = Graph.from_edges([2, 0, 1], [0, 1, 0], [1, 0, 0], 3)
    pred, launches, syncs, rounds = _check(g, [2, 0, 1, 2])
    assert pred[0].tolist() == [2, 0, -1]  # 0 from 2 in round 0, 1 from 0 in round 1
    assert rounds == 1 and launches == 1 + 1 + 2 and syncs == 2  # groups of 1, then 2


def test_positive_integers_need_round_zero_only():
    g = G.random_graph(300, 1500, seed=5, lo=1, hi=9)
    _, launches, syncs, rounds = _check(g, [0, 7, 7, 299])
    assert (launches, syncs, rounds) == (1, 0, 0)


def test_float_weights_with_absorbed_arcs():
    # 0 -> 1 (1e20), 1 -> 2 (1.0): 1e20 + 1 == 1e20, a tight arc between equal distances
    g = Graph.from_edges([0, 1, 2], [1, 2, 1], np.array([1e20, 1.0, 1.0]), 3)
    pred, _, _, rounds = _check(g, [0])
    assert pred[0].tolist() == [-1, 0, 1] and rounds == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_zero_weight_grids_and_groups(seed):
    g = G.grid(40, 40, seed=seed, lo=0, hi=1)  # half the arcs weigh 0: long zero chains
    pred, launches, syncs, rounds = _check(g, [0, 1599, 800])
    assert rounds > 2
    # groups 1, 2, 4, ... up to PRED_GROUP_MAX rounds between two reads of the flag
    sizes = []  # the groups run: up to one group past the last useful round
    r, group = 1, 1
    while r <= rounds:
        sizes.append(group)
        r += group
        group = min(2 * group, PRED_GROUP_MAX)
    if r == rounds + 1:  # the last group ended on a useful round: one more group to see it
        sizes.append(group)
    assert syncs == len(sizes) and launches == 1 + sum(sizes)


def test_all_zero_weights_is_a_bfs():
    g = G.grid(30, 30, seed=4, lo=0, hi=0)
    pred, _, _, rounds = _check(g, [0, 899])
    assert rounds == 58  # the hop depth of a 30 x 30 grid from a corner


@pytest.mark.parametrize("seed", [1, 2])
def test_negative_weights_with_zero_cycles(seed):
    # potentials keep cycle sums: zero cycles of the 0..2 grid stay zero, with negative arcs
    g = G.with_potentials(G.grid(20, 20, seed=seed, lo=0, hi=2), seed=seed)
    assert g.has_negative
    _check(g, [0, 399, 150], method="bellman-ford")


def test_bay_weights_0_to_3():
    from tests.kernels import batched_graphs as bg
    from tests.conftest import SHARED_DATA

    if not (SHARED_DATA / "road-topology" / "BAY.gr.xz").exists():
        pytest.skip("BAY.gr.xz is not present")
    g = bg.load("road-topology/BAY.gr.xz", weights="random:0:3:7")
    assert g.min_weight == 0
    _, _, syncs, rounds = _check(g, [1000, 200000])
    assert 0 < rounds < 40 and syncs <= 6  # the longest tight zero-weight chain, not the depth
