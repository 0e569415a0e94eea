"""The ``phast`` GPU method: its sweep layout (CPU) and its kernel against SciPy (GPU).

CPU tests: the arrays :func:`kernels.gpu.phast.prepare` lays out are driven by a NumPy
model of ``phast_sweep`` (same pull order, same row and leaf rules, saturating adds) and
must give SciPy's distances exactly, in both layouts (every position stored, or only the
vertices whose label is read again).

GPU tests (``-m gpu``): every source of a batch exactly against the CPU reference,
statistics-only runs equal to the distance runs, predecessor trees whose chains end at
the source (zero-weight arcs and zero-weight cycles included), repeated sources, batch
sizes that do not divide the source count, unreachable and isolated vertices, 16-bit
labels, ineligible graphs refused.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from gpu_sssp import kernels
from gpu_sssp.kernels import auto
from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels.check import compare
from gpu_sssp.kernels.graph import Graph
from gpu_sssp.kernels.gpu import phast
from gpu_sssp.kernels.result import reduce_distances
from tests.conftest import DATA


# ----------------------------------------------------------------------------- graphs
def rome99() -> Graph:
    rows = [line.split() for line in open(DATA / "rome99.gr") if line.startswith("a ")]
    a = np.array([[int(x) for x in r[1:]] for r in rows], dtype=np.int64)
    return Graph.from_edges(a[:, 0] - 1, a[:, 1] - 1, a[:, 2], 3353, id_base=1, name="rome99")


def random_graph(n, m, seed, *, lo=1, hi=100, isolated=0, undirected=False, name=None) -> Graph:
    """G(n, m) (both directions when ``undirected``); the last ``isolated`` vertices have
    no arcs and a few vertices have only out-arcs or only in-arcs."""
    rng = np.random.default_rng(seed)
    k = n - isolated
    s, d = rng.integers(0, k, m), rng.integers(0, k, m)
    w = rng.integers(lo, hi + 1, m).astype(np.int64)
    if undirected:
        s, d, w = np.r_[s, d], np.r_[d, s], np.r_[w, w]
    return Graph.from_edges(s, d, w, n, name=name or f"random-{n}-{m}-{seed}")


def scipy_dist(g: Graph, sources) -> np.ndarray:
    return csg.dijkstra(g.to_scipy(), directed=True, indices=np.asarray(sources))


# ----------------------------------------------------------------------------- CPU: layout model
def model_sweep(prep: phast.Prepared, src_pos: np.ndarray, full: bool):
    """NumPy model of phast_sweep over ``prep``: labels (rows, B) and per-lane
    (reached, eccentricity, sum); garbage in the rows beforehand, as on the device."""
    n, B, inf = prep.n, len(src_pos), prep.inf
    rows = n if full else prep.compact_rows
    row = np.arange(n) if full else prep.row_compact.astype(np.int64)
    up_src = (prep.up_src_full if full else prep.up_src_compact).astype(np.int64)
    dn_src = (prep.dn_src_full if full else prep.dn_src_compact).astype(np.int64)
    lab = np.random.default_rng(0).integers(0, inf, (max(rows, 1), B)).astype(np.int64)
    lanes = np.arange(B)

    def own(ps):  # (len(ps), B): 0 where the lane's source is the position, else inf
        return np.where(src_pos[None, :] == ps[:, None], 0, inf).astype(np.int64)

    for lvl in range(prep.levels - 1, -1, -1):
        a, ue = prep.level_ptr[lvl], prep.up_end[lvl]
        if ue == a:
            continue
        ps = np.arange(a, ue)
        d = own(ps)
        e0, e1 = prep.up_ptr[a], prep.up_ptr[ue]
        head = np.repeat(ps, np.diff(prep.up_ptr[a:ue + 1])) - a
        s, w = up_src[e0:e1], prep.up_w[e0:e1].astype(np.int64)
        stored = s >= 0
        cand = np.minimum(lab[s[stored]] + w[stored, None], inf)
        np.minimum.at(d, head[stored], cand)
        x = -s[~stored] - 1
        leaf = np.where(src_pos[None, :] == x[:, None], w[~stored, None], inf)
        np.minimum.at(d, head[~stored], leaf)
        assert np.all(row[ps] >= 0)
        lab[row[ps]] = d
    final = np.empty((n, B), dtype=np.int64)
    for lvl in range(prep.levels):
        a, ue, b = prep.level_ptr[lvl], prep.up_end[lvl], prep.level_ptr[lvl + 1]
        ps = np.arange(a, b)
        d = own(ps)
        d[: ue - a] = lab[row[a:ue]]
        e0, e1 = prep.dn_ptr[a], prep.dn_ptr[b]
        head = np.repeat(ps, np.diff(prep.dn_ptr[a:b + 1])) - a
        cand = np.minimum(lab[dn_src[e0:e1]] + prep.dn_w[e0:e1].astype(np.int64)[:, None], inf)
        np.minimum.at(d, head, cand)
        keep = row[ps] >= 0
        lab[row[ps[keep]]] = d[keep]
        final[ps] = d
    fin = final != inf
    return final, fin.sum(0), np.where(fin, final, 0).max(0), np.where(fin, final, 0).sum(0), lanes


def check_layout(g: Graph, sources):
    prep = phast.prepare(g)
    h = prep.hierarchy
    n = g.n
    # permutation inside levels only, upward-phase vertices first
    lv = h.level_of_position()
    assert np.array_equal(np.sort(prep.order), np.arange(n))
    assert np.array_equal(prep.position[prep.order], np.arange(n))
    assert np.array_equal(lv[h.position[prep.order]], lv)
    up_in = np.diff(prep.up_ptr) > 0
    for lvl in range(prep.levels):
        a, ue, b = prep.level_ptr[lvl], prep.up_end[lvl], prep.level_ptr[lvl + 1]
        assert up_in[a:ue].all() and not up_in[ue:b].any()
    # the push form (search mode) holds the same upward arcs as the pull form
    heads = np.repeat(np.arange(n), np.diff(prep.up_ptr))
    tails = np.where(prep.up_src_full >= 0, prep.up_src_full, -prep.up_src_full - 1)
    pull = sorted(zip(tails.tolist(), heads.tolist(), prep.up_w.astype(np.int64).tolist()))
    ptail = np.repeat(np.arange(n), np.diff(prep.push_ptr))
    push = sorted(zip(ptail.tolist(), prep.push_head.tolist(), prep.push_w.astype(np.int64).tolist()))
    assert pull == push
    assert np.array_equal(prep.level_of, lv)
    assert np.all(prep.level_of[prep.push_head] < prep.level_of[ptail])
    # a row exactly for the vertices whose label is read again
    read_again = up_in.copy()
    read_again[prep.dn_src_full] = True
    assert np.array_equal(prep.row_compact >= 0, read_again)
    ref = scipy_dist(g, sources)
    for full in (True, False):
        final, reached, ecc, tot, _ = model_sweep(prep, prep.position[sources], full)
        got = final[prep.position].T.astype(np.float64)
        got[got == prep.inf] = np.inf
        assert np.array_equal(got, ref), full
        fin = np.isfinite(ref)
        assert np.array_equal(reached, fin.sum(1))
        assert np.array_equal(tot, np.where(fin, ref, 0).sum(1).astype(np.int64))
        assert np.array_equal(ecc, np.where(fin, ref, 0).max(1).astype(np.int64))
    return prep


def test_layout_rome99():
    g = rome99()
    prep = check_layout(g, np.r_[np.arange(0, g.n, 211), 5, 5])
    assert prep.label_dtype == np.uint32 and 0 < prep.compact_rows < g.n


def test_layout_random_isolated_and_16_bit_labels():
    g = random_graph(1500, 4000, 3, lo=1, hi=9, isolated=4)
    prep = check_layout(g, np.r_[np.arange(0, g.n, 37), g.n - 1, g.n - 2, 0, 0])
    assert prep.label_dtype == np.uint16  # 1499 x 9 < 65535


def test_layout_zero_weights():
    g = random_graph(800, 1500, 5, lo=0, hi=3, undirected=True)
    assert g.min_weight == 0
    check_layout(g, np.arange(0, g.n, 13))


def test_prepare_refuses_ineligible_graphs():
    floats = Graph.from_edges([0, 1], [1, 2], [0.5, 1.5], 3, name="floats")
    with pytest.raises(ValueError, match="phast: floats: float64 weights"):
        phast.prepare(floats)
    neg = Graph.from_edges([0, 1], [1, 2], [3, -1], 3, name="neg")
    with pytest.raises(ValueError, match="negative weights"):
        phast.prepare(neg)
    big = Graph.from_edges([0, 1], [1, 2], [2**29, 2**29 + 5], 3, name="big")
    with pytest.raises(ValueError, match="beyond the hierarchy's limit"):
        phast.prepare(big)
    g = random_graph(50, 120, 1)
    other = random_graph(50, 120, 2)
    with pytest.raises(ValueError, match="built for graph"):
        phast.prepare(g, hmod.build_hierarchy(other))


def test_prepare_is_kept_with_the_graph():
    g = random_graph(300, 900, 4)
    p1 = phast.prepare(g)
    assert phast.prepare(g) is p1
    assert phast.prepare(g, p1.hierarchy) is p1
    h2 = hmod.build_hierarchy(g)
    p2 = phast.prepare(g, h2)
    assert p2 is not p1 and p2.hierarchy is h2


# ----------------------------------------------------------------------------- CPU: auto
def grid_graph(rows, cols, seed, lo=1, hi=100) -> Graph:
    """A rows x cols grid, both directions, weights U[lo, hi] (the same both ways)."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    s = np.r_[idx[:, :-1].ravel(), idx[:-1, :].ravel()]
    d = np.r_[idx[:, 1:].ravel(), idx[1:, :].ravel()]
    w = np.random.default_rng(seed).integers(lo, hi + 1, len(s))
    return Graph.from_edges(np.r_[s, d], np.r_[d, s], np.r_[w, w], rows * cols, name="grid")


def test_auto_rule():
    road = grid_graph(60, 50, 9)
    assert hmod.structure(road) is None
    # an expander of the same degree is not road-like (its contraction blows up)
    assert hmod.structure(random_graph(3000, 9000, 9, undirected=True)) is not None
    assert auto.choose(road, 64, "gpu") == "batched"  # no hierarchy held, few sources
    assert auto.choose(road, road.n, "gpu") == "phast"  # a study over every vertex
    hmod.get_hierarchy(road)
    assert auto.choose(road, 64, "gpu") == "phast"  # hierarchy held
    assert auto.choose(road, 1, "gpu") == "phast"
    floats = Graph.from_edges([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.0], 3)
    assert auto.choose(floats, 3, "gpu") == "batched"
    rng = np.random.default_rng(1)
    s, d = rng.integers(0, 2000, 40000), rng.integers(0, 2000, 40000)
    dense = Graph.from_edges(s, d, rng.integers(1, 100, 40000), 2000)
    assert hmod.structure(dense) is not None
    assert auto.choose(dense, dense.n, "gpu") == "batched"


def test_solve_refuses_to_contract_an_expander_without_force():
    g = random_graph(3000, 9000, 9, undirected=True)
    with pytest.raises(ValueError, match="phast: .*force=True"):
        phast.solve(g, [0, 1])  # refused before any device work
    with pytest.raises(ValueError, match="phast: floats: float64"):
        phast.solve(Graph.from_edges([0, 1], [1, 2], [0.5, 1.5], 3, name="floats"), [0])
    assert not hmod.has_hierarchy(g)


# ----------------------------------------------------------------------------- GPU
need_gpu = pytest.mark.gpu


@pytest.fixture
def _gpu():
    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")


def chains_end_at_source(pred: np.ndarray, dist: np.ndarray, source: int) -> bool:
    """Every reached vertex's predecessor chain ends at ``source`` (pointer doubling:
    a cycle never reaches it)."""
    n = len(pred)
    p = np.where(pred >= 0, pred, np.arange(n))
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2))))) + 1):
        p = p[p]
    reached = np.isfinite(dist)
    return bool(np.all(p[reached] == source))


def gpu_check(g, sources, *, batch_size=None, predecessors=True):
    """Both upward modes against the CPU reference (returns the search mode's result)."""
    for upward in ("sweep", "search"):
        got = _gpu_check(g, sources, batch_size=batch_size, predecessors=predecessors, upward=upward)
    return got


def _gpu_check(g, sources, *, batch_size, predecessors, upward):
    sources = np.asarray(sources, dtype=np.int64)
    want = kernels.solve(g, sources, method="dijkstra")
    got = kernels.solve(g, sources, method="phast", batch_size=batch_size, predecessors=predecessors,
                        upward=upward, force=True)
    assert got.counters["upward"] == upward
    assert compare(g, want, got) == []
    assert np.array_equal(got.distances, want.distances)
    r, e, s = reduce_distances(got.distances, integer=True)
    assert np.array_equal(r, got.reached) and np.array_equal(s, got.sum_distance)
    if predecessors:
        for i, src in enumerate(sources):
            assert chains_end_at_source(got.predecessors[i], got.distances[i], int(src)), i
    lite = kernels.solve(g, sources, method="phast", batch_size=batch_size, distances=False, upward=upward,
                         force=True)
    assert lite.distances is None and lite.predecessors is None
    assert np.array_equal(lite.reached, want.reached)
    assert np.array_equal(lite.sum_distance, np.asarray(want.sum_distance).astype(np.int64))
    assert np.array_equal(lite.eccentricity, want.eccentricity, equal_nan=True)
    assert lite.counters["label_rows"] < g.n or g.n < 50
    return got


@need_gpu
def test_gpu_rome99(_gpu):
    g = rome99()
    res = kernels.solve(g, g.to_index([1]), method="phast")
    assert res.reached[0] == 3353 and res.sum_distance[0] == 116_006_476
    assert res.eccentricity[0] == 69_102
    src = np.random.default_rng(3).integers(0, g.n, 300)
    src[7] = src[100] = src[299]  # repeated, in one batch and across batches
    for bs in (None, 1, 3, 64, 100):  # 300 = 3 x 100; 64 and 3 leave a partial batch
        gpu_check(g, src[:60] if bs in (1, 3) else src, batch_size=bs)


def test_lanes_of_a_batch():
    """Up to LANE_STEP sources a sweep runs in the next power of two of lanes, above it
    in the next multiple of LANE_STEP (8,742 sources in 9,216 lanes, not 16,384); the lane
    groups then divide the grid's thread count, and the rows that fit in a number of
    lanes are the inverse."""
    step = phast.LANE_STEP
    assert [phast.lanes_for(k) for k in (1, 2, 3, 5, 32, 33, 1000, 1024)] == [1, 2, 4, 8, 32, 64, 1024, 1024]
    assert [phast.lanes_for(k) for k in (1025, 2048, 2202, 3072, 8192, 8742, 9293)] == \
        [2048, 2048, 3072, 3072, 8192, 9216, 10240]
    for k in list(range(1, 3 * step + 3)) + [8742, 16383, 16384, 16385]:
        B, V, G, _ = phast.lanes_of(k)
        assert B >= k and B == phast.lanes_for(k) and G * V == B
        # a grid of 256-thread blocks has a thread count divisible by G
        assert (G <= phast._BLOCK and phast._BLOCK % G == 0) or G % phast._BLOCK == 0, k
        assert phast.lanes_for(phast._rows_within(B)) <= B and phast._rows_within(B) >= k
        assert phast._rows_within(B) + 1 > B or phast.lanes_for(phast._rows_within(B) + 1) > B
    # room for a number of lanes that is no lane count: the most sources whose lanes fit it
    for fit, rows in ((1, 1), (3, 2), (1023, 512), (1024, 1024), (1500, 1024), (3500, 3072), (9000, 8192)):
        assert phast._rows_within(fit) == rows, fit
        assert phast.lanes_for(rows) <= fit < phast.lanes_for(rows + 1)


def test_sweep_threads_cover_every_vertex_and_lane_group_once():
    """A model of phast_sweep's work split: thread ``tid`` of a grid of ``bb`` 256-thread
    blocks (``launch_sweep``: a multiple of ``G / 256``) serves lane group ``tid % G`` and
    the vertices ``tid / G + m * (nthreads / G)`` of a level: every (vertex, group) pair of
    the level exactly once, for the lanes of any batch and grids of any resident size."""
    for k in (1, 2, 3, 31, 64, 700, 1024, 1025, 2202, 3000, 8742, 12_000, 16_385):
        B, V, G, _ = phast.lanes_of(k)
        mult = max(1, G // phast._BLOCK)
        for most in (528, 522, 132, mult):
            bb = (most // mult) * mult
            nthreads = bb * phast._BLOCK
            assert nthreads % G == 0
            tid = np.arange(nthreads)
            for count in (0, 1, 7, 1000):
                seen = np.zeros((count, G), dtype=np.int64)
                j, g, step = tid // G, tid % G, nthreads // G
                while True:
                    live = j < count
                    if not live.any():
                        break
                    np.add.at(seen, (j[live], g[live]), 1)
                    j = j + step
                assert (seen == 1).all(), (k, most, count)


@need_gpu
def test_gpu_batches_above_the_lane_step(_gpu):
    """Batches of more than LANE_STEP sources that are not powers of two (their lanes a
    multiple of LANE_STEP, their lane groups several blocks each) exactly against the CPU
    reference, distances, predecessors and statistics; the matrix sweep too."""
    g = rome99()
    src = np.random.default_rng(8).integers(0, g.n, 2500)
    src[10] = src[2400]
    for bs, lanes in ((1025, 2048), (2202, 3072), (2500, 3072)):
        got = gpu_check(g, src, batch_size=bs, predecessors=bs == 2202)
        assert got.counters["lanes"] == lanes
    every = np.arange(g.n)
    full = kernels.solve(g, every, method="phast", distances=False, batch_size=3353, force=True)
    assert full.counters["lanes"] == 4096
    want = kernels.solve(g, every, method="dijkstra")
    assert np.array_equal(full.sum_distance, np.asarray(want.sum_distance).astype(np.int64))
    assert np.array_equal(full.eccentricity, want.eccentricity, equal_nan=True)
    t = np.random.default_rng(9).integers(0, g.n, 200)
    for stats_over in ("targets", "all"):
        m = kernels.solve(g, src[:2300], method="phast", targets=t, stats_over=stats_over, batch_size=2300,
                          force=True)
        assert m.counters["lanes"] == 3072
        assert np.array_equal(m.matrix, scipy_dist(g, src[:2300])[:, t])


@need_gpu
def test_gpu_random_isolated_unreachable_16bit(_gpu):
    seed = int(time.time_ns() % 2**31)
    print(f"seed {seed}")
    for i, (lo, hi) in enumerate([(1, 9), (1, 1000), (0, 5)]):
        g = random_graph(1200, 2400, seed + i, lo=lo, hi=hi, isolated=5)
        res = gpu_check(g, np.r_[np.random.default_rng(seed).integers(0, g.n, 150), g.n - 1, g.n - 1],
                        batch_size=[None, 40, 77][i])
        # path lengths below 1199 x hi: 16-bit labels for hi = 9 and 5
        assert res.counters["label_type"] == ("uint16" if hi < 50 else "uint32")


@need_gpu
def test_gpu_zero_weight_cycles_tree(_gpu):
    seed = int(time.time_ns() % 2**31)
    print(f"seed {seed}")
    # both directions with many zero weights: zero-weight cycles everywhere
    for g in (grid_graph(70, 60, seed, lo=0, hi=2), random_graph(600, 1200, seed, lo=0, hi=2, undirected=True)):
        assert int((g.weights == 0).sum()) > 500
        res = gpu_check(g, np.random.default_rng(seed).integers(0, g.n, 130), batch_size=64)
        assert res.counters["predecessor_zero_rounds"] >= 1


@need_gpu
def test_gpu_ny(_gpu):
    from tests.kernels import batched_graphs as bg

    g = bg.road("NY")
    assert (g.n, g.m) == (264_346, 730_100)
    src = np.random.default_rng(11).integers(0, g.n, 96)
    src[3] = src[50]
    gpu_check(g, src, batch_size=40)
    for upward in ("sweep", "search"):
        one = kernels.solve(g, src[:1], method="phast", distances=False, upward=upward)
        assert one.counters["lanes"] == 1
        assert one.sum_distance[0] == int(scipy_dist(g, src[:1])[np.isfinite(scipy_dist(g, src[:1]))].sum())
    # the search mode's +inf-at-rest arrays are put back: two calls in a row agree
    a = kernels.solve(g, src, method="phast", distances=False, batch_size=32)
    b = kernels.solve(g, src[::-1], method="phast", distances=False, batch_size=64)
    assert np.array_equal(a.sum_distance, b.sum_distance[::-1])


@need_gpu
def test_gpu_ny_wide_batches(_gpu):
    """NY in batches of 8,742 and 12,000 sources (9,216 and 12,288 lanes: lane groups of
    9 and 12 blocks, grids that are multiples of them) against batches of 1,024 (a power
    of two, one block's groups) and against SciPy for a sample (statistics; rome99's test
    above checks distances and predecessors with more than 1,024 lanes)."""
    from tests.kernels import batched_graphs as bg

    g = bg.road("NY")
    src = np.random.default_rng(31).integers(0, g.n, 12_000)
    ref = kernels.solve(g, src, method="phast", distances=False, batch_size=1024)
    for bs, lanes, upward in ((8742, 9216, "search"), (8742, 9216, "sweep"), (12_000, 12_288, "search")):
        got = kernels.solve(g, src, method="phast", distances=False, batch_size=bs, upward=upward)
        assert got.counters["lanes"] == lanes
        assert np.array_equal(got.reached, ref.reached) and np.array_equal(got.sum_distance, ref.sum_distance)
        assert np.array_equal(got.eccentricity, ref.eccentricity, equal_nan=True)
    pick = np.random.default_rng(32).choice(len(src), 24, replace=False)
    want = scipy_dist(g, src[pick])
    fin = np.isfinite(want)
    assert np.array_equal(ref.reached[pick], fin.sum(1))
    assert np.array_equal(ref.sum_distance[pick], np.where(fin, want, 0).sum(1).astype(np.int64))


@need_gpu
def test_gpu_weights_at_the_edge_of_the_label_type(_gpu):
    """Path lengths just below the 16-bit +inf (65535) and at the hierarchy's 2**30 limit."""
    for n, w in ((300, 219), (200, 2**30 // 199)):
        # a chain both ways: the distance from an end to the other is the bound itself
        s, d = np.arange(n - 1), np.arange(1, n)
        g = Graph.from_edges(np.r_[s, d], np.r_[d, s], np.full(2 * (n - 1), w), n, name=f"chain-{n}-{w}")
        assert hmod.path_length_bound(g) == (n - 1) * w
        res = gpu_check(g, [0, n - 1, n // 2, 0], batch_size=3)
        assert res.counters["label_type"] == ("uint16" if w < 1000 else "uint32")
        assert res.eccentricity[0] == (n - 1) * w


@need_gpu
def test_gpu_roads_fresh_weight_seed(_gpu):
    from tests.kernels import batched_graphs as bg

    seed = int(time.time_ns() % 2**31)
    print(f"weight seed {seed}")
    for name in ("BAY", "COL"):
        g = bg.load(f"road-topology/{name}.gr.xz", weights=f"random:1:1000:{seed}")
        src = np.random.default_rng(seed).integers(0, g.n, 70)
        gpu_check(g, src, batch_size=32, predecessors=name == "BAY")


@need_gpu
def test_gpu_refuses_ineligible(_gpu):
    floats = Graph.from_edges([0, 1], [1, 2], [0.5, 1.5], 3, name="floats")
    with pytest.raises(ValueError, match="phast: floats"):
        kernels.solve(floats, [0], method="phast")
    with pytest.raises(ValueError):
        kernels.solve(Graph.from_edges([0, 1], [1, 2], [3, -1], 3), [0], method="phast")
    with pytest.raises(ValueError, match="upward"):
        kernels.solve(random_graph(50, 120, 1), [0], method="phast", upward="down", force=True)


@need_gpu
def test_gpu_kept_work_arrays(_gpu, monkeypatch):
    """The search arrays kept on the device between calls (``loader.scratch``): reused
    when they fit, grown when they do not, dropped after a failed call, when another
    allocation needs the room and with the graph; calls of two threads that share a
    turn (a study worker's threads) queue behind each other and stay exact."""
    import threading

    from gpu_sssp.kernels.gpu import loader

    seed = int(time.time_ns() % 2**31)
    print(f"seed {seed}")
    g = random_graph(3000, 9000, seed, lo=0, hi=40)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, g.n, 400)
    want = kernels.solve(g, src, method="dijkstra", distances=False)

    def exact(res, idx):
        assert np.array_equal(res.reached, want.reached[idx])
        assert np.array_equal(res.sum_distance, np.asarray(want.sum_distance[idx]).astype(np.int64))

    loader.drop_scratch()
    exact(kernels.solve(g, src[:50], method="phast", distances=False, batch_size=16, force=True), slice(0, 50))
    kept = loader.scratch_bytes()
    assert kept > 0
    exact(kernels.solve(g, src, method="phast", distances=False, batch_size=16, force=True), slice(None))
    assert loader.scratch_bytes() == kept  # reused, not grown
    exact(kernels.solve(g, src, method="phast", distances=False, batch_size=128, force=True), slice(None))
    assert loader.scratch_bytes() > kept  # grown for 128 lanes
    # distances after statistics-only calls: every label row, same kept search arrays
    full = kernels.solve(g, src[:70], method="phast", batch_size=33, force=True)
    ref = kernels.solve(g, src[:70], method="dijkstra")
    assert np.array_equal(full.distances, ref.distances)

    # two threads, one turn: each call plans and enqueues while the other's batches run
    lock = threading.Lock()
    errors = []

    def worker(part):
        mine = np.random.default_rng(seed + part)
        try:
            for rep in range(4):
                idx = np.sort(mine.choice(len(src), 150, replace=False)) if part else np.arange(150 + rep)
                res = kernels.solve(g, src[idx], method="phast", distances=False, batch_size=32 + 16 * part,
                                    turn=lock, force=True)
                exact(res, idx)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not lock.locked()

    # a launch that fails half-way: the call raises, the kept arrays are dropped, the
    # turn is given back, the next call is exact
    real = loader.launch_cooperative  # phast.launch_sweep calls it through the loader module
    calls = []

    def flaky(go, blocks, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected launch failure")
        return real(go, blocks, **kw)

    monkeypatch.setattr(loader, "launch_cooperative", flaky)
    with pytest.raises(RuntimeError, match="injected"):
        kernels.solve(g, src, method="phast", distances=False, batch_size=64, turn=lock, force=True)
    assert loader.scratch_bytes() == 0 and not lock.locked()
    monkeypatch.setattr(loader, "launch_cooperative", real)
    exact(kernels.solve(g, src, method="phast", distances=False, batch_size=64, force=True), slice(None))

    # another allocation that needs the room drops them; so does forgetting the graph
    import cupy as cp

    assert loader.scratch_bytes() > 0
    free, _ = cp.cuda.runtime.memGetInfo()
    need = free + cp.get_default_memory_pool().free_bytes() + 1
    loader.check_fits(g, need, what="test")  # fits once the kept arrays are dropped
    assert loader.scratch_bytes() == 0
    kernels.solve(g, src[:10], method="phast", distances=False, force=True)
    assert loader.scratch_bytes() > 0
    kernels.release_device_memory(g)
    assert loader.scratch_bytes() == 0
