"""GPU solvers of papers 000-003 (locality, edgelist, bfs-*, dijkstra-gpu, queue-bf, delta)
against the CPU backend.

Integer weights compare exactly, float weights with ``kernels.check.compare``'s
tolerances; predecessors are checked by ``kernels.check.compare`` (``dist[pred] + w ==
dist[v]``, reached vertices have one, the source and unreached vertices none).  Random
graphs are fresh every run (the seed is printed).
"""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels.check import compare
from gpu_sssp.kernels.result import NegativeCycleError
from gpu_sssp.pipeline.graph import Graph

from . import graphs as G

pytestmark = pytest.mark.gpu

WEIGHTED = [
    ("locality", {}),
    ("locality", dict(k=1, vertices_per_thread=1)),
    ("locality", dict(k=5, vertices_per_thread=4)),
    ("locality", dict(persistent=False)),
    ("locality", dict(persistent=False, k=2, vertices_per_thread=1)),
    ("locality", dict(arc_batch=0)),
    ("locality", dict(persistent=False, arc_batch=0)),
    ("locality", dict(resident=False)),
    ("locality", dict(resident=True)),
    ("locality", dict(prefetch=False)),
    ("locality", dict(k=2, resident=True)),
    ("edgelist", {}),
    ("edgelist", dict(restrict=False, segment=1024)),
    ("edgelist", dict(directed=True)),
    ("queue-bf", {}),
    ("delta", {}),
    ("delta", dict(delta="median")),
    ("delta", dict(delta="maxw-maxdeg")),
    ("delta", dict(delta=3)),
    ("delta", dict(delta="mean")),
    ("delta", dict(delta="mean*32")),
    ("delta", dict(delta=1e30)),
]
WEIGHTED_IDS = [m + "".join(f"-{k}={v}" for k, v in o.items()) for m, o in WEIGHTED]
NEGATIVE_OK = ["locality", "locality-k2", "locality-global", "locality-launched", "edgelist", "queue-bf"]
_ALIASES = {"locality-launched": ("locality", dict(persistent=False)),
            "locality-k2": ("locality", dict(k=2, resident=True)),
            "locality-global": ("locality", dict(resident=False))}


def _m(method):
    """(registry name, options) of a test id: locality-launched is locality with
    persistent=False, locality-global the persistent kernel without the block-resident arcs."""
    return _ALIASES.get(method, (method, {}))
BFS = ["bfs-naive", "bfs-blocked", "bfs-hierarchical"]


def check(g, sources, method, opts=None, *, preds=True, negative=False):
    opts = opts or {}
    sources = np.asarray(sources, dtype=np.int64)
    ref = kernels.solve(g, sources, method="bellman-ford" if negative else "dijkstra", backend="cpu")
    res = kernels.solve(g, sources, method=method, predecessors=preds, count_work=True, **opts)
    assert res.backend == "gpu" and res.distances.shape == (len(sources), g.n)
    problems = compare(g, ref, res)
    assert not problems, f"{method} {opts} on {g.name}: {problems}"
    if g.integer_weights:
        assert np.array_equal(res.distances, ref.distances)
        assert np.array_equal(res.sum_distance, ref.sum_distance)
    c = res.counters
    for key in ("iterations", "launches", "host_syncs", "relaxations", "kernel_ms", "mteps"):
        assert key in c, key
    assert c["launches"] > 0 and c["host_syncs"] > 0
    if g.m and np.any(ref.reached > 1):
        assert c["relaxations"] > 0
    return res


# ---------------------------------------------------------------------- real graphs
@pytest.mark.parametrize("method,opts", WEIGHTED + [("dijkstra-gpu", {}), ("dijkstra-gpu", dict(threads_per_block=1024))],
                         ids=WEIGHTED_IDS + ["dijkstra-gpu", "dijkstra-gpu-tpb1024"])
def test_rome99_checksums(method, opts):
    g = G.load("dimacs9/rome99.gr")
    res = check(g, [0, 1000, 3352], method, opts)
    assert res.reached[0] == 3353
    assert res.sum_distance[0] == 116_006_476
    assert res.eccentricity[0] == 69_102


@pytest.mark.parametrize("parallel", ["min", "keep"])
@pytest.mark.parametrize("method", ["locality", "edgelist", "queue-bf", "delta", "dijkstra-gpu"])
def test_gapbs(method, parallel):
    g = G.load("gapbs/4.gr", parallel=parallel)
    res = check(g, np.arange(g.n), method)
    assert (res.reached < g.n).any()


@pytest.mark.parametrize("method,opts", WEIGHTED, ids=WEIGHTED_IDS)
def test_delaunay_n15(method, opts):
    g = G.load("metis/delaunay_n15.graph", weights="random:1:1000:7")
    res = check(g, [0, 12345, 32767], method, opts)
    if method == "edgelist" and not opts.get("directed"):
        assert res.counters["variant"] == "undirected"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", ["locality", "edgelist", "queue-bf", "delta", "dijkstra-gpu"])
def test_usair97_float(method, dtype):
    g = G.with_dtype(G.load("mtx/USAir97.mtx"), dtype)
    check(g, [0, 100, 331], method)


@pytest.mark.parametrize("method", ["locality", "edgelist", "queue-bf", "delta", "dijkstra-gpu"])
def test_lederberg_directed(method):
    g = G.load("mtx/Lederberg.tar.gz")
    assert g.directed
    res = check(g, [0, 17, 4000, 8842], method)
    if method == "edgelist":
        assert res.counters["variant"] == "directed"


@pytest.mark.parametrize("method,opts", WEIGHTED + [("dijkstra-gpu", {})], ids=WEIGHTED_IDS + ["dijkstra-gpu"])
def test_ny_seeded(method, opts):
    g = G.load("road-topology/NY.gr.xz", weights="random:1:1000:7")
    assert (g.n, g.m) == (264_346, 730_100)
    rng = np.random.default_rng(G.fresh_seed())
    k = 1 if method == "dijkstra-gpu" else 2
    check(g, rng.integers(0, g.n, size=k), method, opts)


# ---------------------------------------------------------------------- generated
DTYPES = [np.int32, np.int64, np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("method", ["locality", "edgelist", "queue-bf", "delta", "dijkstra-gpu"])
def test_grid_rmat_random(method, dtype):
    seed = G.fresh_seed()
    rng = np.random.default_rng(seed)
    for g in (G.rmat(10, 8, seed=seed, dtype=dtype), G.grid(40, 30, seed=seed, dtype=dtype),
              G.random_graph(500, 3000, seed=seed, dtype=dtype, parallel="keep")):
        check(g, rng.integers(0, g.n, size=3), method)


@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "launched"])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("vpt", [1, 4])
def test_locality_k_vpt(k, vpt, persistent):
    seed = G.fresh_seed()
    g = G.grid(30, 30, seed=seed)
    opts = dict(k=k, vertices_per_thread=vpt, persistent=persistent)
    res = check(g, [0, 899, 450], "locality", opts)
    assert res.counters["k"] == k and res.counters["vertices_per_thread"] == vpt
    assert res.iterations.min() > 0
    # a second solve on the same graph uses the launch estimate (blind launches)
    res2 = check(g, [1, 2], "locality", opts)
    if not persistent:
        assert res2.counters["blind_launches"] > 0


@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "launched"])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_locality_paper_dfs(k, persistent):
    """arc_batch=0: the paper's one-arc-at-a-time depth-first relaxation."""
    seed = G.fresh_seed()
    g = G.rmat(11, 8, seed=seed)
    check(g, np.random.default_rng(seed).integers(0, g.n, size=3), "locality",
          dict(k=k, vertices_per_thread=1, persistent=persistent, arc_batch=0))
    gn = G.with_potentials(G.grid(15, 15, seed=seed), seed=seed)
    check(gn, [0, 100], "locality", dict(k=k, persistent=persistent, arc_batch=0), negative=True)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("prefetch", [True, False])
def test_locality_resident(prefetch, k):
    """The block-resident kernel (default for k=1) on graphs whose blocks own one to
    hundreds of vertices, and its fallback where a block's arcs do not fit."""
    seed = G.fresh_seed()
    rng = np.random.default_rng(seed)
    for g in (G.grid(300, 300, seed=seed), G.rmat(12, 8, seed=seed), G.grid(3, 3, seed=seed),
              G.with_dtype(G.grid(100, 120, seed=seed), np.float32)):
        res = check(g, rng.integers(0, g.n, size=3), "locality", dict(prefetch=prefetch, k=k))
        assert res.counters["resident"] is True and res.counters["prefetch"] is prefetch, (g.name, seed)
        assert res.counters["k"] == k
        assert res.iterations.min() > 0
    fan = G.fan(seed)
    res = check(fan, [0, 1], "locality", dict(prefetch=prefetch, k=k))
    assert res.counters["resident"] is False
    with pytest.raises(ValueError, match="shared memory"):
        kernels.solve(fan, [0], method="locality", resident=True)
    with pytest.raises(ValueError, match="k=1 or 2"):
        kernels.solve(G.grid(5, 5), [0], method="locality", k=3, resident=True)


@pytest.mark.parametrize("method", ["locality", "locality-global", "locality-launched", "edgelist", "queue-bf",
                                    "delta", "dijkstra-gpu"] + BFS)
def test_single_vertex_and_isolated_source(method):
    method, opts = _m(method)
    one = Graph.from_edges(np.array([], np.int64), np.array([], np.int64), np.array([], np.int64), 1, name="one")
    res = kernels.solve(one, [0], method=method, predecessors=True, **opts)
    assert res.distances.tolist() == [[0.0]] and res.reached[0] == 1 and res.predecessors[0, 0] == -1
    # vertex 3 has no arcs at all; unit weights so BFS accepts the graph
    g = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1, 1, 1]), 4, name="iso")
    res = kernels.solve(g, [3, 0], method=method, predecessors=True, **opts)
    assert res.distances[0].tolist() == [np.inf, np.inf, np.inf, 0.0]
    assert res.reached.tolist() == [1, 3]
    assert res.distances[1].tolist() == [0.0, 1.0, 2.0, np.inf]


# ---------------------------------------------------------------------- zero weights (issue 14)
@pytest.mark.parametrize("method,opts", WEIGHTED + [("dijkstra-gpu", {})],
                         ids=WEIGHTED_IDS + ["dijkstra-gpu"])
def test_zero_weights_predecessor_tree(method, opts):
    """2 -> 0 (1), 0 -> 1 (0), 1 -> 0 (0) from vertex 2 (the tree is 2 -> 0 -> 1), and a
    grid of weights 0..2: every predecessor chain ends at its source (kernels.check)."""
    g3 = Graph.from_edges([2, 0, 1], [0, 1, 0], [1, 0, 0], 3, name="zero-cycle")
    res = check(g3, [2, 0, 1], method, opts)
    assert res.predecessors[0].tolist() == [2, 0, -1]
    seed = G.fresh_seed()
    check(G.grid(25, 25, seed=seed, lo=0, hi=2), [0, 624, 300], method, opts)


@pytest.mark.parametrize("method", NEGATIVE_OK)
def test_negative_weights_zero_cycles(method):
    method, opts = _m(method)
    seed = G.fresh_seed()
    g = G.with_potentials(G.grid(20, 20, seed=seed, lo=0, hi=2), seed=seed)
    check(g, [0, 399, 150], method, opts, negative=True)


# ---------------------------------------------------------------------- negative weights
@pytest.mark.parametrize("method", NEGATIVE_OK)
def test_negative_weights(method):
    method, opts = _m(method)
    seed = G.fresh_seed()
    g = G.with_potentials(G.grid(20, 20, seed=seed), seed=seed)
    check(g, [0, 399, 123], method, opts, negative=True)
    g2 = G.with_potentials(G.random_graph(300, 2000, seed=seed), seed=seed + 1)
    check(g2, [0, 5], method, opts, negative=True)


@pytest.mark.parametrize("method", NEGATIVE_OK)
def test_negative_cycle(method):
    method, opts = _m(method)
    g, cycle = G.negative_cycle_graph()
    for s in (0, 1, 5):
        with pytest.raises(NegativeCycleError) as info:
            kernels.solve(g, [s], method=method, **opts)
        assert info.value.vertex in cycle
    res = kernels.solve(g, [4, 6], method=method, **opts)  # sources that do not reach it
    assert res.reached.tolist() == [1, 1]


@pytest.mark.parametrize("method", ["delta", "dijkstra-gpu"] + BFS)
def test_negative_refused(method):
    g = G.with_potentials(G.grid(10, 10, seed=1), seed=1)
    with pytest.raises(ValueError, match="non-negative"):
        kernels.solve(g, [0], method=method)


def test_dijkstra_gpu_refuses_long_runs():
    g = G.grid(40, 40, seed=3)
    with pytest.raises(ValueError, match="force=True"):
        kernels.solve(g, [0], method="dijkstra-gpu", max_seconds=1e-9)
    check(g, [0], "dijkstra-gpu", dict(max_seconds=1e-9, force=True))


# ---------------------------------------------------------------------- BFS
@pytest.mark.parametrize("method", BFS)
def test_bfs_unit_weights(method):
    for g in (G.load("road-topology/NY.gr.xz"), G.load("metis/delaunay_n15.graph"),
              G.load("mtx/Lederberg.tar.gz")):
        if not g.unweighted:  # Lederberg has weights: make them all 1
            g = Graph.from_edges(g.tails(), g.indices, np.ones(g.m, np.int64), g.n, name=g.name + "-unit")
        rng = np.random.default_rng(G.fresh_seed())
        src = rng.integers(0, g.n, size=3)
        res = check(g, src, method)
        # Lederberg is directed: a random source may have no out-arcs (nothing to scan)
        if g.out_degree()[src].sum() > 0:
            assert res.counters["relaxations"] > 0
        else:
            assert res.counters["relaxations"] == 0 and (res.reached == 1).all()


@pytest.mark.parametrize("method", BFS)
def test_bfs_equal_weights_and_refusal(method):
    seed = G.fresh_seed()
    g = G.rmat(12, 8, seed=seed)
    g7 = Graph.from_edges(g.tails(), g.indices, np.full(g.m, 7, np.int32), g.n, name="rmat-w7")
    res = check(g7, [0, 1, 2], method)
    assert res.counters["hop_weight"] == 7
    g0 = Graph.from_edges(g.tails(), g.indices, np.zeros(g.m, np.float64), g.n, name="rmat-w0")
    check(g0, [0, 5], method)
    with pytest.raises(ValueError, match="hop distances"):
        kernels.solve(g, [0], method=method)


@pytest.mark.parametrize("method", BFS)
def test_bfs_big_frontier(method):
    """A star overflows the shared block / warp queues (the global fallback path)."""
    n = 50_000
    hub = np.zeros(n - 1, np.int64)
    leaves = np.arange(1, n, dtype=np.int64)
    g = Graph.from_edges(np.concatenate([hub, leaves]), np.concatenate([leaves, hub]),
                         np.ones(2 * (n - 1), np.int64), n, name="star")
    res = check(g, [0, 7], method)
    assert res.eccentricity.tolist() == [1, 2]


def test_edgelist_symmetry_detection():
    from gpu_sssp.kernels.gpu.edgelist import symmetric

    g = G.load("metis/delaunay_n15.graph", weights="random:1:1000:7")
    assert symmetric(g)
    assert not symmetric(G.load("mtx/Lederberg.tar.gz"))
    t = g.tails()
    w = g.weights.copy()
    w[0] += 1  # one direction heavier: no longer symmetric
    assert not symmetric(Graph.from_edges(t, g.indices, w, g.n, parallel="keep"))
