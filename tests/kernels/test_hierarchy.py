"""The contraction hierarchy's sweep layout (kernels.hierarchy) against SciPy.

A plain NumPy PHAST written here (independent of the product's sweep) runs over the
arrays of :class:`Hierarchy`; its distances must equal SciPy's exactly.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels.graph import Graph
from tests.conftest import DATA
from tests.kernels import graphs


def numpy_phast(h: hmod.Hierarchy, sources) -> np.ndarray:
    """Distances (B, n) in graph order, int64 with -1 for unreachable: the upward DAG swept
    from the bottom level up (push), then the downward arcs level by level (pull)."""
    sources = np.asarray(sources)
    n, b = h.n, len(sources)
    inf = np.iinfo(np.int64).max // 4
    d = np.full((n, b), inf, dtype=np.int64)
    d[h.position[sources], np.arange(b)] = 0
    lv = h.level_of_position()
    up_tail = np.repeat(np.arange(n), np.diff(h.up_indptr))
    up_w = h.up_weight.astype(np.int64)
    for level in range(h.levels - 1, -1, -1):
        sel = lv[up_tail] == level
        t, hd, w = up_tail[sel], h.up_head[sel], up_w[sel]
        if len(t):
            np.minimum.at(d, hd, d[t] + w[:, None])
    down_head = np.repeat(np.arange(n), np.diff(h.down_indptr))
    down_w = h.down_weight.astype(np.int64)
    for level in range(h.levels):
        sel = lv[down_head] == level
        if sel.any():
            np.minimum.at(d, down_head[sel], d[h.down_tail[sel]] + down_w[sel][:, None])
    d = np.where(d >= inf, -1, d)
    return d[h.position].T


def scipy_int(g: Graph, sources) -> np.ndarray:
    ref = csg.dijkstra(g.to_scipy(), directed=True, indices=np.asarray(sources))
    return np.where(np.isfinite(ref), ref, -1).astype(np.int64)


def check(g: Graph, sources):
    h = hmod.build_hierarchy(g)
    hmod.check_hierarchy(h)
    hmod.check_covers(h, g)  # what a cache file is checked with never refuses a fresh build
    assert np.array_equal(numpy_phast(h, sources), scipy_int(g, sources))
    return h


@pytest.fixture(scope="module")
def rome():
    rows = [line.split() for line in open(DATA / "rome99.gr") if line.startswith("a ")]
    a = np.array([[int(x) for x in r[1:]] for r in rows], dtype=np.int64)
    return Graph.from_edges(a[:, 0] - 1, a[:, 1] - 1, a[:, 2], 3353, id_base=1, name="rome99")


def test_rome99_layout(rome):
    h = check(rome, np.arange(0, rome.n, 97))
    assert h.n == rome.n and h.levels > 1
    assert h.weight_bound == 2**31 - 2 and h.up_weight.dtype == np.uint32
    assert h.library.startswith("ch-router ") and "RoutingKit" in h.library
    assert h.fingerprint == rome.fingerprint and h.build_s > 0
    # positions sorted by level, levels contiguous, the top level first
    lv = h.level_of_position()
    assert np.all(np.diff(lv) >= 0) and lv[0] == 0
    # level(v) = 1 + max level over higher neighbours: some arc reaches level - 1
    up_tail = np.repeat(np.arange(h.n), np.diff(h.up_indptr))
    down_head = np.repeat(np.arange(h.n), np.diff(h.down_indptr))
    best = np.full(h.n, -1)
    np.maximum.at(best, up_tail, lv[h.up_head])
    np.maximum.at(best, down_head, lv[h.down_tail])
    assert np.array_equal(lv, best + 1)


def test_parallel_arcs_self_loops_zero_weights_isolated():
    # 0 -> 1 twice (5 and 3), 1 -> 2 weight 0, a loop at 2, 2 -> 0, vertex 3 isolated,
    # 4 -> 5 -> 4 a separate piece with zero weights
    src = [0, 0, 1, 2, 2, 4, 5]
    dst = [1, 1, 2, 2, 0, 5, 4]
    w = [5, 3, 0, 1, 7, 0, 0]
    g = Graph.from_edges(src, dst, w, 6, parallel="keep")
    h = check(g, np.arange(6))
    assert h.n == 6
    got = numpy_phast(h, [0])[0]
    assert got.tolist() == [0, 3, 3, -1, -1, -1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_directed_with_zeros(seed):
    rng = np.random.default_rng(seed)
    n, m = 400, 1400
    g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 4, m), n + 20)
    check(g, np.arange(0, n + 20, 7))


def test_no_arcs_and_single_vertex():
    g = Graph.from_edges(np.array([], dtype=np.int64), np.array([], dtype=np.int64),
                         np.array([], dtype=np.int64), 5)
    h = check(g, np.arange(5))
    assert h.m_up == h.m_down == 0
    check(Graph.from_edges([0], [0], [3], 1), [0])


def test_weights_at_the_edge():
    # a path whose length is exactly MAX_PATH_BOUND: eligible and exact
    n = 5
    w = hmod.MAX_PATH_BOUND // (n - 1)
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.full(n - 1, w), n)
    assert hmod.path_length_bound(g) == w * (n - 1) and hmod.eligible(g) is None
    check(g, [0, 2])
    g2 = Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.full(n - 1, w + 1), n)
    assert "beyond" in hmod.eligible(g2)
    with pytest.raises(ValueError, match="beyond"):
        hmod.build_hierarchy(g2)


def test_not_eligible():
    g = Graph.from_edges([0, 1], [1, 0], [1.5, 2.0], 2)
    assert "float" in hmod.eligible(g)
    g = Graph.from_edges([0, 1], [1, 0], [-1, 2], 2)
    assert "negative" in hmod.eligible(g)
    with pytest.raises(ValueError, match="negative"):
        hmod.build_hierarchy(g)


def test_path_bound_uses_largest_weights():
    # one heavy arc: (n - 1) x max would exceed the limit, the n - 1 largest do not
    n = 1000
    w = np.ones(n - 1, dtype=np.int64)
    w[0] = 2**29
    g = Graph.from_edges(np.arange(n - 1), np.arange(1, n), w, n)
    assert g.max_path_bound() > hmod.MAX_PATH_BOUND
    assert hmod.path_length_bound(g) == 2**29 + n - 2
    check(g, [0, 500])


def test_path_bound_never_wraps():
    """4,096 arcs of 2**52 into one vertex: every distance is exact (check_exact passes,
    each path has one arc), but the int64 sum of the n - 1 largest weights wrapped to 0, so
    the graph looked eligible and phast(force=True) built a hierarchy of the weights cast
    to uint32 (all 0): distances 0 instead of 2**52.  Found by tests/fuzz_methods.py."""
    from gpu_sssp import kernels

    n = 4097
    g = Graph.from_edges(np.arange(1, n), np.zeros(n - 1, dtype=np.int64), np.full(n - 1, 2**52, dtype=np.int64), n)
    g.check_exact()
    assert hmod.path_length_bound(g) == 4096 * 2**52
    assert "path lengths may reach" in hmod.eligible(g)
    with pytest.raises(ValueError, match="path lengths may reach"):
        kernels.solve(g, [1, 2], method="phast", backend="cpu", force=True)
    with pytest.raises(ValueError, match="path lengths may reach"):
        hmod.build_hierarchy(g)
    assert kernels.solve(g, [1], method="auto", backend="cpu").distances[0, 0] == 2**52


@pytest.mark.parametrize("name", ["4.gr", "4.wel", "4w.mtx", "4.graph"])
@pytest.mark.parametrize("parallel", ["min", "keep"])
def test_gapbs_graphs(name, parallel):
    g = graphs.load(f"gapbs/{name}", parallel=parallel)
    if not g.integer_weights:
        pytest.skip(f"{name}: {g.weight_type} weights")
    check(g, np.arange(g.n))


def test_get_hierarchy_once(rome):
    g = Graph.from_edges(rome.tails(), rome.indices, rome.weights, rome.n)
    assert not hmod.has_hierarchy(g)
    h1 = hmod.get_hierarchy(g)
    assert hmod.has_hierarchy(g) and hmod.get_hierarchy(g) is h1


def test_check_hierarchy_rejects_damage(rome):
    from dataclasses import replace

    h = hmod.get_hierarchy(rome)
    bad = h.up_head.copy()
    bad[0] = int(np.searchsorted(h.up_indptr, 0, side="right") - 1)  # arc 0 to its own tail
    with pytest.raises(ValueError):
        hmod.check_hierarchy(replace(h, up_head=bad))
    with pytest.raises(ValueError):
        hmod.check_hierarchy(replace(h, order=h.order[::-1].copy()))
    # a 0-d arc array raised TypeError (len() of unsized object)
    for name in ("up_head", "up_weight", "down_tail", "down_weight"):
        with pytest.raises(ValueError):
            hmod.check_hierarchy(replace(h, **{name: getattr(h, name)[:1].reshape(())}))
    # an order entry beyond n raised IndexError (read_cache only turns ValueError into
    # a rebuild: load_hierarchy crashed on such a cache file)
    for bad in (h.n, 10**6, -1, -h.n - 1):
        order = h.order.copy()
        order[0] = bad
        with pytest.raises(ValueError):
            hmod.check_hierarchy(replace(h, order=order))
        position = h.position.copy()
        position[3] = bad
        with pytest.raises(ValueError):
            hmod.check_hierarchy(replace(h, position=position))


# ---------------------------------------------------------------------- the cache file
@pytest.fixture()
def rome_parquet(tmp_path):
    from gpu_sssp.pipeline.ingest import ingest

    out = tmp_path / "rome99.parquet"
    ingest(DATA / "rome99.gr", out)
    return out


def _fresh(path):
    from gpu_sssp.pipeline.graph import read_parquet

    return read_parquet(path)


def _no_build(monkeypatch):
    def fail(graph):
        raise AssertionError("the hierarchy was built again")

    monkeypatch.setattr(hmod, "build_hierarchy", fail)


def test_cache_written_then_read(rome_parquet, monkeypatch):
    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    h = ph.load_hierarchy(g)
    cpath = ph.cache_path(g)
    assert cpath == rome_parquet.with_name("rome99.parquet.ch.npz") and cpath.exists()
    assert hmod.get_hierarchy(g) is h  # kept with the graph for the solvers
    assert not list(rome_parquet.parent.glob("*.tmp*"))
    _no_build(monkeypatch)
    g2 = _fresh(rome_parquet)
    h2 = ph.load_hierarchy(g2)
    for name in hmod.Hierarchy.ARRAYS:
        assert np.array_equal(getattr(h, name), getattr(h2, name)) and getattr(h, name).dtype == getattr(h2, name).dtype
    assert h2.build_s == h.build_s and h2.library == h.library and h2.fingerprint == g2.fingerprint
    assert np.array_equal(numpy_phast(h2, [0, 5]), scipy_int(g2, [0, 5]))


def _damage_bytes(path):
    raw = bytearray(path.read_bytes())
    i = len(raw) // 2
    raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _truncate(path):
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 3])


def _swap_array(path):
    # a well-formed file whose array does not match its recorded checksum
    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    d["down_weight"] = d["down_weight"] + np.uint32(1)
    np.savez(path.with_suffix(".x.npz"), **d)
    os.replace(path.with_suffix(".x.npz"), path)


def _rerecord(path, **changes):
    import json

    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    rec = json.loads(str(d["record"]))
    rec.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del rec[key]  # None: the field is missing
    d["record"] = json.dumps(rec)
    np.savez(path.with_suffix(".x.npz"), **d)
    os.replace(path.with_suffix(".x.npz"), path)


def _redigest(path, change):
    """Apply ``change`` to the arrays and record them again (dtype, shape, checksum): a
    file that matches its record, as one written for other arrays would."""
    import json

    from gpu_sssp.pipeline import hierarchy as ph

    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    change(d)
    rec = json.loads(str(d["record"]))
    for name in hmod.Hierarchy.ARRAYS:
        rec["arrays"][name] = [str(d[name].dtype), list(d[name].shape), ph._digest(d[name])]
    d["record"] = json.dumps(rec)
    np.savez(path.with_suffix(".x.npz"), **d)
    os.replace(path.with_suffix(".x.npz"), path)


def _swap_in_level(d):
    # two vertices of the bottom level trade places: every level rule still holds, but
    # the arcs now belong to other vertices (every distance of every source was wrong)
    a = int(d["level_ptr"][-2])
    order = d["order"].copy()
    order[[a, a + 1]] = order[[a + 1, a]]
    d["order"] = order
    d["position"] = d["position"].copy()
    d["position"][order] = np.arange(len(order), dtype=np.int32)


def _lighter_graph_arc(d):
    # an arc of the hierarchy made heavier than the graph's arc it stands for
    w = d["up_weight"].copy()
    w[:] += np.uint32(1)
    d["up_weight"] = w


def load_counting_builds(g, caplog):
    """``pipeline.hierarchy.load_hierarchy(g)`` with the hierarchy builds it made counted
    and its warnings in ``caplog``: ``(hierarchy, graphs built)``."""
    import logging

    from gpu_sssp.pipeline import hierarchy as ph

    built = []
    real = hmod.build_hierarchy

    def counting(graph):
        built.append(graph)
        return real(graph)

    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.hierarchy"):
        try:
            hmod.build_hierarchy = counting
            h = ph.load_hierarchy(g)
        finally:
            hmod.build_hierarchy = real
    return h, built


@pytest.mark.parametrize("damage, why", [
    (lambda p: _redigest(p, _swap_in_level), "arc"),
    (lambda p: _redigest(p, _lighter_graph_arc), "arc"),
    (_damage_bytes, ""), (_truncate, "unreadable"), (_swap_array, "checksum"),
    (lambda p: _rerecord(p, fingerprint="0123456789abcdef"), "built for graph"),
    (lambda p: _rerecord(p, library="ch-router 0.0.1 (RoutingKit)"), "built with"),
    (lambda p: _rerecord(p, format=0), "format"),
    # a record whose other fields are missing or not numbers raised from read_cache
    # (KeyError, ValueError, TypeError) instead of rebuilding the file
    (lambda p: _rerecord(p, weight_bound=None), "weight bound"),
    (lambda p: _rerecord(p, weight_bound="x"), "weight bound"),
    (lambda p: _rerecord(p, weight_bound=5), "weight bound"),
    (lambda p: _rerecord(p, build_s=[1]), "build time"),
    (lambda p: _rerecord(p, build_s=None), "build time"),
])
def test_corrupt_or_stale_cache_rebuilt(rome_parquet, damage, why, caplog):
    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    h = ph.load_hierarchy(g)
    cpath = ph.cache_path(g)
    damage(cpath)
    g2 = _fresh(rome_parquet)
    bad, reason = ph.read_cache(g2, cpath)
    assert bad is None and why in reason
    h2, built = load_counting_builds(g2, caplog)
    assert len(built) == 1 and "rebuilding" in caplog.text
    assert np.array_equal(numpy_phast(h2, [0, 7]), scipy_int(g2, [0, 7]))
    # the rebuilt file replaced the bad one and is good again
    h3, reason = ph.read_cache(_fresh(rome_parquet), cpath)
    assert h3 is not None, reason
    assert np.array_equal(h3.down_weight, h.down_weight)


def test_new_weights_new_hierarchy(tmp_path):
    """The same file path with other weights: the fingerprint differs, the cache is
    rebuilt for the new graph and its answers are exact."""
    from gpu_sssp.pipeline import hierarchy as ph

    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, 300, 1200), rng.integers(0, 300, 1200)
    g1 = Graph.from_edges(src, dst, rng.integers(1, 50, 1200), 300)
    g2 = Graph.from_edges(src, dst, rng.integers(1, 50, 1200), 300)
    cpath = tmp_path / "g.ch.npz"
    ph.load_hierarchy(g1, cpath)
    assert ph.read_cache(g1, cpath)[0] is not None
    assert "built for graph" in ph.read_cache(g2, cpath)[1]
    h2 = ph.load_hierarchy(g2, cpath)
    assert np.array_equal(numpy_phast(h2, [0, 1, 2]), scipy_int(g2, [0, 1, 2]))
    assert ph.read_cache(g2, cpath)[0] is not None


def test_unwritable_cache_folder_still_loads(tmp_path, caplog):
    from gpu_sssp.pipeline import hierarchy as ph

    g = Graph.from_edges([0, 1], [1, 2], [3, 4], 3)
    h = ph.load_hierarchy(g, tmp_path / "missing-dir" / "g.ch.npz")
    assert h.n == 3 and "could not write" in caplog.text
    # no path and no graph.path: no file at all, still kept with the graph
    g2 = Graph.from_edges([0, 1], [1, 2], [3, 4], 3)
    assert ph.cache_path(g2) is None and ph.load_hierarchy(g2) is hmod.get_hierarchy(g2)


def test_without_the_library(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "routingkit_ch" else real(name, *a))
    g = Graph.from_edges([0, 1], [1, 2], [3, 4], 3)
    assert "not installed" in hmod.eligible(g)
    from gpu_sssp.kernels import auto

    assert auto.choose(g, 10**7, "cpu") == "dijkstra"


def test_one_vertex_with_heavy_self_loops():
    """A 1-vertex graph's self-loops may weigh anything (no path uses them; check_exact and
    eligible accept it): the hierarchy is built without them, as RoutingKit drops loops."""
    from gpu_sssp import kernels

    g = Graph.from_edges([0, 0], [0, 0], np.array([3 * 2**60, 5], dtype=np.int64), 1, parallel="keep")
    assert hmod.eligible(g) is None
    h = hmod.build_hierarchy(g)
    assert h.n == 1 and h.m_up == 0 and h.m_down == 0
    res = kernels.solve(g, [0, 0], method="phast", backend="cpu")
    assert res.distances.tolist() == [[0.0], [0.0]]


def test_cache_member_that_inflates_is_refused_before_it_is_read(rome_parquet):
    """A cache file of a few hundred kilobytes whose compressed members inflate to
    128 MB (its record naming their dtype, shape and checksum) was read whole - every
    byte allocated and hashed - before the hierarchy's consistency check refused it.
    The cache is written uncompressed: a compressed member is refused from its header."""
    import json
    import tracemalloc

    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    ph.load_hierarchy(g)
    cpath = ph.cache_path(g)
    with np.load(cpath) as z:
        d = {k: z[k] for k in z.files}
    rec = json.loads(str(d["record"]))
    for name, dt in (("up_head", np.int32), ("up_weight", np.uint32)):
        d[name] = np.zeros(16_000_000, dtype=dt)
        rec["arrays"][name] = [str(d[name].dtype), list(d[name].shape), ph._digest(d[name])]
    d["record"] = json.dumps(rec)
    np.savez_compressed(cpath, **d)
    del d
    assert cpath.stat().st_size < 2_000_000
    tracemalloc.start()
    try:
        h, why = ph.read_cache(_fresh(rome_parquet), cpath)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert h is None and why
    assert peak < 20_000_000, f"{peak:,} bytes allocated reading a {cpath.stat().st_size:,}-byte file"


def test_no_room_for_routingkits_file_is_one_clear_oserror(rome):
    """RoutingKit hands its hierarchy over through a file in the temporary folder: with
    no room there (a full /tmp, a file size limit) the build raised RoutingKit's
    "RuntimeError: std::ostream::write failed while reading a contraction hierarchy",
    a traceback from sssp study.  It is an OSError naming the folder and TMPDIR now
    (the command line prints OSErrors as one line)."""
    import resource
    import tempfile

    g = Graph.from_edges(rome.tails(), rome.indices, rome.weights, rome.n)
    before = set(os.listdir(tempfile.gettempdir()))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, hard))
    try:
        with pytest.raises(OSError) as e:
            hmod.build_hierarchy(g)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert tempfile.gettempdir() in str(e.value) and "TMPDIR" in str(e.value)
    assert not [f for f in set(os.listdir(tempfile.gettempdir())) - before if f.startswith("sssp-ch-")]


def test_a_vouched_hierarchy_skips_only_its_own_covering_check(rome_parquet, monkeypatch):
    """The covering check (every graph arc in the hierarchy) costs 0.13-0.19 s a read on
    NY; a study's client read the file up to three times and every worker once more.
    Arrays this process built, checked, or was vouched for (the client's key, handed to
    the workers by the graph plugin) skip it - but only with the same verified checksums:
    another file (a tampered one, recorded again) is still checked."""
    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    ph.load_hierarchy(g)  # built and written here: vouched
    cpath = ph.cache_path(g)
    key = ph.vouched(g)
    assert key
    calls = []
    real = hmod.check_covers
    monkeypatch.setattr(hmod, "check_covers", lambda h, graph: (calls.append(1), real(h, graph)))
    assert ph.read_cache(_fresh(rome_parquet), cpath)[0] is not None and calls == []
    # a worker process: nothing vouched until the plugin hands over the client's key
    monkeypatch.setattr(ph, "_VOUCHED", {})
    assert ph.read_cache(_fresh(rome_parquet), cpath)[0] is not None and calls == [1]
    monkeypatch.setattr(ph, "_VOUCHED", {})
    ph.vouch(g.fingerprint, key)
    assert ph.read_cache(_fresh(rome_parquet), cpath)[0] is not None and calls == [1]
    # the file swapped for other arrays that match their new record: checked, refused
    _redigest(cpath, _swap_in_level)
    bad, why = ph.read_cache(_fresh(rome_parquet), cpath)
    assert bad is None and "arc" in why and calls == [1, 1]


def test_the_graph_plugin_hands_the_clients_key_to_the_workers(rome_parquet, monkeypatch):
    """A worker loads the file the client checked (or built) without checking its
    covering again: the plugin carries the client's key (and its pickled copy does)."""
    import pickle

    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.plugins import GraphPlugin

    g = _fresh(rome_parquet)
    ph.load_hierarchy(g)
    key, cpath = ph.vouched(g), str(ph.cache_path(g))

    def fail(h, graph):
        raise AssertionError("covering checked again on the worker")

    monkeypatch.setattr(hmod, "check_covers", fail)
    for given, loads in ((None, False), (key, True)):  # (a worker keeps a loaded graph)
        monkeypatch.setattr(ph, "_VOUCHED", {})  # a fresh worker process
        plugin = pickle.loads(pickle.dumps(GraphPlugin(str(rome_parquet), g.fingerprint, "cpu",
                                                       hierarchy=cpath, hierarchy_key=given)))
        plugin.setup(None)
        if loads:
            assert hmod.has_hierarchy(plugin.wait(60)) and ph._VOUCHED == {g.fingerprint: key}
        else:
            with pytest.raises(FileNotFoundError, match="covering checked again"):
                plugin.wait(60)


def test_a_ctrl_c_stops_the_caller_while_routingkit_contracts(rome, monkeypatch):
    """RoutingKit contracts in native code that ignores signals: a Ctrl-C waited for the
    whole contraction (BAY 6 s).  The contraction runs in a thread of its own, so the
    interrupt reaches the caller before it ends.  A stand-in that ignores signals (a
    NumPy sort of 30M values, seconds long) marks its end."""
    import signal
    import threading

    ended = threading.Event()

    class CH:
        @staticmethod
        def build(n, tails, heads, weights):
            try:
                np.sort(np.random.default_rng(0).random(30_000_000))
            finally:  # also when a KeyboardInterrupt is raised in here, after the sort
                ended.set()
            raise RuntimeError("the stand-in's contraction ended")

    rk = pytest.importorskip("routingkit_ch")
    monkeypatch.setattr(rk, "ContractionHierarchy", CH)
    main = threading.main_thread().ident
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            hmod.build_hierarchy(rome)
    finally:
        timer.cancel()
    assert not ended.is_set()  # the caller was stopped while the contraction still ran
    ended.wait(60)  # let the abandoned stand-in finish before the next test
