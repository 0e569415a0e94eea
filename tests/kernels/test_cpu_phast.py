"""``phast`` on the CPU backend against SciPy, exactly; predecessor trees; the auto rule."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from gpu_sssp import kernels
from gpu_sssp.kernels import auto, hierarchy
from gpu_sssp.kernels.check import compare, predecessor_violations
from gpu_sssp.kernels.graph import Graph
from tests.conftest import DATA
from tests.kernels import graphs


def reference(g: Graph, sources, **kw):
    return kernels.solve(g, sources, method="dijkstra", backend="cpu", **kw)


def phast(g: Graph, sources, **kw):
    return kernels.solve(g, sources, method="phast", backend="cpu", **kw)


def chains_end_at_sources(res) -> list[str]:
    """Follow every predecessor chain (pointer doubling): each reached vertex must get to
    its source, so the predecessors form a tree rooted there (no cycles)."""
    problems = []
    for i, s in enumerate(res.sources):
        pred = res.predecessors[i]
        n = len(pred)
        anc = np.where(pred < 0, np.arange(n), pred)
        for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
            anc = anc[anc]
        reached = np.isfinite(res.distances[i])
        if not np.all(anc[reached] == s):
            problems.append(f"source {s}: {int((anc[reached] != s).sum())} chains do not end at it")
        if pred[s] != -1:
            problems.append(f"source {s} has a predecessor")
    return problems


def check(g: Graph, sources, *, predecessors=False, **kw):
    ref = reference(g, sources)
    res = phast(g, sources, predecessors=predecessors, **kw)
    assert res.method == "phast" and res.backend == "cpu"
    assert compare(g, ref, res) == []
    assert np.array_equal(res.distances, ref.distances)
    assert np.array_equal(res.sum_distance, ref.sum_distance) and res.sum_distance.dtype == np.int64
    assert np.array_equal(res.reached, ref.reached)
    assert np.array_equal(res.eccentricity, ref.eccentricity)
    if predecessors:
        for i, s in enumerate(res.sources):
            assert predecessor_violations(g, res.distances[i], res.predecessors[i], int(s)) == []
        assert chains_end_at_sources(res) == []
    return res


@pytest.fixture(scope="module")
def rome():
    return graphs.load("dimacs9/rome99.gr") if (graphs.data_dir() / "dimacs9/rome99.gr").exists() \
        else graphs._local(DATA / "rome99.gr", None, "min", None)


def test_rome99_all_sources(rome):
    res = check(rome, np.arange(rome.n))
    # the known checksums of source 1 (file id), as in test_cpu
    assert res.sum_distance[0] == 116_006_476 and res.eccentricity[0] == 69_102
    st = phast(rome, np.arange(rome.n), distances=False)
    assert st.distances is None
    assert np.array_equal(st.sum_distance, res.sum_distance) and np.array_equal(st.reached, res.reached)
    assert (st.relaxations > 0).all() and (st.iterations == hierarchy.get_hierarchy(rome).levels).all()


def test_rome99_predecessors(rome):
    check(rome, np.arange(0, rome.n, 37), predecessors=True)


@pytest.mark.parametrize("lanes, threads", [(1, 1), (3, 2), (7, 1), (32, 2), (64, 2)])
def test_blocks_and_threads(rome, lanes, threads):
    """Lanes that do not divide the source count, one or two threads: the same answer."""
    src = np.random.default_rng(lanes).integers(0, rome.n, 45)
    check(rome, src, lanes=lanes, threads=threads)


def test_repeated_sources(rome):
    src = np.array([5, 7, 5, 5, 9, 7])
    res = check(rome, src, predecessors=True)
    assert np.array_equal(res.sources, src)
    assert np.array_equal(res.distances[0], res.distances[2]) and np.array_equal(res.distances[1], res.distances[5])
    st = phast(rome, src, distances=False)
    assert np.array_equal(st.sum_distance, res.sum_distance)


@pytest.mark.parametrize("name", ["4.gr", "4.wel", "4w.mtx", "4.graph"])
@pytest.mark.parametrize("parallel", ["min", "keep"])
def test_gapbs(name, parallel):
    g = graphs.load(f"gapbs/{name}", parallel=parallel)
    check(g, np.arange(g.n), predecessors=True)


def test_unreachable_and_isolated():
    rng = np.random.default_rng(11)
    n = 600
    src, dst = rng.integers(0, 400, 1500), rng.integers(0, 400, 1500)
    # a one-way bridge into a second piece, and vertices 500.. isolated
    src = np.concatenate([src, [3], rng.integers(400, 480, 200)])
    dst = np.concatenate([dst, [400], rng.integers(400, 480, 200)])
    w = rng.integers(1, 60, len(src))
    g = Graph.from_edges(src, dst, w, n)
    res = check(g, np.concatenate([np.arange(0, n, 13), [499, 599, 450]]), predecessors=True, force=True)
    assert (res.reached[-3:-1] == 1).all()  # isolated sources reach themselves only
    assert np.isinf(res.distances[:, 500:]).sum() > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_zero_weight_arcs_give_trees(seed):
    """Weights 0/1 with many zero-weight cycles: the predecessors still form trees."""
    rng = np.random.default_rng(seed)
    n, m = 500, 2500
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 2, m), n)
    assert g.min_weight == 0
    check(g, np.arange(0, n, 9), predecessors=True, force=True)


def test_all_zero_weights_undirected():
    g = graphs.grid(20, 20, lo=0, hi=0)
    assert g.max_weight == 0
    check(g, [0, 399, 210], predecessors=True)


def test_weights_at_the_edge():
    """Path lengths up to the hierarchy's limit (2**30): exact, no wrap in the sweep."""
    rng = np.random.default_rng(2)
    n = 64
    wmax = hierarchy.MAX_PATH_BOUND // (n - 1)
    # a chain 0 -> 1 -> ... of weight wmax per arc, plus heavy arcs going back
    a, b = rng.integers(0, n, 300), rng.integers(0, n, 300)
    back_src, back_dst = np.maximum(a, b), np.minimum(a, b)
    g = Graph.from_edges(np.r_[back_src, np.arange(n - 1)], np.r_[back_dst, np.arange(1, n)],
                         np.r_[rng.integers(wmax // 2, wmax + 1, 300), np.full(n - 1, wmax)], n)
    assert hierarchy.eligible(g) is None and hierarchy.path_length_bound(g) > 2**29
    res = check(g, np.arange(n), predecessors=True)
    assert res.distances[0, n - 1] == (n - 1) * wmax > 2**29


def test_road_graph_fresh_weights():
    """NY's topology with a fresh weight seed: a sample of sources against SciPy."""
    seed = graphs.fresh_seed() % 1_000_000
    g = graphs.load("road-topology/NY.gr.xz", weights=f"random:1:1000:{seed}")
    rng = np.random.default_rng(seed)
    src = rng.integers(0, g.n, 40)
    res = phast(g, src)
    ref = csg.dijkstra(g.to_scipy(), indices=src[:12])
    assert np.array_equal(res.distances[:12], ref)
    st = phast(g, src, distances=False)
    fin = np.isfinite(res.distances)
    assert np.array_equal(st.sum_distance, np.where(fin, res.distances, 0).sum(axis=1).astype(np.int64))
    assert np.array_equal(st.reached, fin.sum(axis=1))
    pr = phast(g, src[:3], predecessors=True)
    assert chains_end_at_sources(pr) == []
    for i in range(3):
        assert predecessor_violations(g, pr.distances[i], pr.predecessors[i], int(src[i])) == []


def test_not_eligible():
    g = Graph.from_edges([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.0], 3)
    with pytest.raises(ValueError, match="float64 weights.*dijkstra"):
        phast(g, [0])
    neg = Graph.from_edges([0, 1], [1, 0], [-1, 3], 2)
    with pytest.raises(ValueError, match="non-negative"):
        phast(neg, [0])
    with pytest.raises(TypeError, match="options"):
        phast(Graph.from_edges([0], [1], [1], 2), [0], bogus=1)


def test_not_road_like_refused_unless_forced_or_held():
    g = graphs.random_graph(1000, 4000, seed=4)
    assert "hop depth" in hierarchy.structure(g)
    with pytest.raises(ValueError, match="force=True"):
        phast(g, [0, 1])
    assert not hierarchy.has_hierarchy(g)
    res = check(g, [0, 1], force=True)
    assert res.method == "phast"
    check(g, [2, 3])  # held now: no refusal


def test_refusals_are_the_products_errors_and_the_registrys_rule():
    """phast's refusals are UsageErrors (one line, exit 2 on the command line), and
    ``Method.unsuitable`` gives the same reason beforehand on both backends, so that
    verify and bench skip phast and a study refuses it before its folder exists."""
    from gpu_sssp.kernels.errors import SsspError

    floats = Graph.from_edges([0, 1, 2], [1, 2, 0], [0.5, 1.5, 2.0], 3, name="flt")
    expander = graphs.random_graph(1000, 4000, seed=4)
    for g, what in ((floats, "float64 weights"), (expander, "hop depth")):
        with pytest.raises(SsspError, match=what) as err:
            phast(g, [0])
        assert err.value.exit_code == 2 and isinstance(err.value, ValueError)
        for backend in ("cpu", "gpu"):
            why = kernels.get("phast", backend).unsuitable(g)
            assert why and why.startswith("phast: ") and what in why, (backend, why)
        # the refusal names this backend's fallback
        assert "dijkstra" in kernels.get("phast", "cpu").unsuitable(g)
        assert "batched" in kernels.get("phast", "gpu").unsuitable(g)
    with pytest.raises(SsspError, match="float64 weights"):  # the kernel's own check too
        hierarchy.check_phast(floats, ineligible="x", fallback="y")
    # force (or a hierarchy given) lifts the structure refusal only
    assert kernels.get("phast", "cpu").unsuitable(expander, force=True) is None
    assert "float64" in kernels.get("phast", "cpu").unsuitable(floats, force=True)
    assert kernels.get("phast", "cpu").unsuitable(graphs.grid(20, 20)) is None  # road-like
    # a graph that holds its hierarchy (built once with force) is solved without it
    phast(expander, [0], force=True)
    assert kernels.get("phast", "cpu").unsuitable(expander) is None
    assert phast(expander, [1]).method == "phast"


def test_explicit_hierarchy(rome):
    g = Graph.from_edges(rome.tails(), rome.indices, rome.weights, rome.n)
    h = hierarchy.build_hierarchy(g)
    res = check(g, [0, 9, 99], hierarchy=h)
    assert not hierarchy.has_hierarchy(g)  # used, not adopted


def test_hierarchy_built_once(rome, monkeypatch):
    g = Graph.from_edges(rome.tails(), rome.indices, rome.weights, rome.n)
    phast(g, [0, 1])
    h = hierarchy.get_hierarchy(g)

    def fail(graph):
        raise AssertionError("built again")

    monkeypatch.setattr(hierarchy, "build_hierarchy", fail)
    phast(g, [2, 3], predecessors=True)
    assert hierarchy.get_hierarchy(g) is h


# ---------------------------------------------------------------------- auto
def test_auto_rule(rome, monkeypatch):
    monkeypatch.setattr(auto, "_warm_here", lambda: False)  # a cold process
    g = Graph.from_edges(rome.tails(), rome.indices, rome.weights, rome.n, name="rome-copy")
    k = auto.cpu_phast_min_sources(g)
    assert k > g.n  # rome99: all sources cost less Dijkstra time than a hierarchy's set-up
    # with the kernels loaded (a study's warmed workers) the build alone is the fixed cost
    kw = auto.cpu_phast_min_sources(g, warm=True)
    assert kw < g.n and auto.cpu_phast_applies(g, g.n, warm=True)
    monkeypatch.setattr(auto, "_warm_here", lambda: True)
    assert auto.cpu_phast_min_sources(g) == kw
    monkeypatch.setattr(auto, "_warm_here", lambda: False)
    assert auto.choose(g, g.n, "cpu") == "dijkstra"
    assert auto.choose(g, k, "cpu") == "phast"  # road-like, enough sources (repeats count)
    assert not hierarchy.has_hierarchy(g)  # choosing builds nothing
    res = kernels.solve(g, np.arange(k) % g.n, backend="cpu", distances=False)
    assert res.method == "phast" and hierarchy.has_hierarchy(g)
    assert auto.choose(g, 1, "cpu") == "phast"  # the hierarchy is held now
    # float weights: never phast
    gf = Graph.from_edges(rome.tails(), rome.indices, rome.weights.astype(np.float64), rome.n)
    assert auto.choose(gf, 10**7, "cpu") == "dijkstra"
    # negative weights: bellman-ford as before
    gn = Graph.from_edges([0, 1], [1, 0], [-1, 3], 2)
    assert auto.choose(gn, 10**7, "cpu") == "bellman-ford"


def test_auto_threshold_on_ny_sized_graphs():
    """The cost model: NY-sized graphs switch at a few hundred sources."""
    g = graphs.grid(500, 500)  # 250,000 vertices, ~1M arcs
    k = auto.cpu_phast_min_sources(g)
    assert 200 < k < 1500
    assert auto.choose(g, k - 1, "cpu") == "dijkstra" and auto.choose(g, k, "cpu") == "phast"


def test_auto_keeps_dijkstra_on_power_law_and_expanders():
    r = graphs.rmat(12)
    assert "degree" in hierarchy.structure(r)
    assert auto.choose(r, 10**7, "cpu") == "dijkstra"
    e = graphs.random_graph(4096, 4 * 4096)
    assert "hop depth" in hierarchy.structure(e)
    assert auto.choose(e, 10**7, "cpu") == "dijkstra"
    assert hierarchy.structure(graphs.grid(60, 60)) is None


def test_registered_on_cpu():
    assert "phast" in kernels.available_methods("cpu")
    assert kernels.get("phast", "cpu").backend == "cpu"
    assert not kernels.get("phast", "cpu").negative_weights


def test_warm_up_loads_the_kernels_once():
    from gpu_sssp.kernels import cpu_phast

    first = cpu_phast.warm_up()
    assert cpu_phast._WARM.is_set() and auto._warm_here()
    assert cpu_phast.warm_up() == 0.0 and first >= 0.0


def test_warmup_preload_thread(monkeypatch):
    """The worker preload starts one daemon thread and returns at once; SSSP_WARMUP=0 skips it."""
    from gpu_sssp.pipeline import warmup

    monkeypatch.setenv("SSSP_WARMUP", "0")
    assert warmup.start() is None
    monkeypatch.setenv("SSSP_WARMUP", "1")
    t = warmup.start()
    assert t is not None and t.daemon
    t.join(120)
    assert not t.is_alive() and auto._warm_here()


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5", "99999", " "])
def test_phast_threads_from_the_environment_is_checked(monkeypatch, value):
    """``SSSP_PHAST_THREADS=abc`` ended in int()'s traceback; ``0`` and ``-2`` were taken
    as 1 and a huge count started that many threads: one line naming the variable."""
    from gpu_sssp.kernels import cpu_phast
    from gpu_sssp.kernels.errors import UsageError

    monkeypatch.setenv("SSSP_PHAST_THREADS", value)
    if not value.strip():  # blank: as unset
        assert cpu_phast.default_threads() >= 1
        return
    with pytest.raises(UsageError, match="SSSP_PHAST_THREADS must be a whole number from 1 to 4096"):
        cpu_phast.default_threads()


def test_phast_threads_from_the_environment_is_used(monkeypatch):
    from gpu_sssp.kernels import cpu_phast

    monkeypatch.setenv("SSSP_PHAST_THREADS", "3")
    assert cpu_phast.default_threads() == 3
