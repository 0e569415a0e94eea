"""The contraction hierarchy as hostile input: a cache file (``<graph>.ch.npz``) whose
arrays were changed and whose checksums were written again to match (a tool, a hand edit)
passes the checksums, the consistency checks and the covering check; a shortcut made
lighter than the walk it stands for then gave silently too small distances.  Every arc's
weight is now checked to be derivable (kernels.hierarchy.check_derived)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels.graph import Graph
from tests.conftest import DATA

pytest.importorskip("routingkit_ch")


@pytest.fixture()
def rome_parquet(tmp_path):
    from gpu_sssp.pipeline.ingest import ingest

    out = tmp_path / "rome99.parquet"
    ingest(DATA / "rome99.gr", out)
    return out


def _shortcut(h: hmod.Hierarchy, g: Graph, which: str) -> int:
    """The index of a hierarchy arc (``up``/``down``) that is not an arc of ``g``."""
    a = g.to_scipy().tocsr()
    ptr, other = (h.up_indptr, h.up_head) if which == "up" else (h.down_indptr, h.down_tail)
    row = np.repeat(np.arange(h.n), np.diff(ptr))
    ends = (h.order[row], h.order[other]) if which == "up" else (h.order[other], h.order[row])
    shortcuts = np.flatnonzero(np.asarray(a[ends[0], ends[1]]).ravel() == 0)
    assert len(shortcuts)
    return int(shortcuts[len(shortcuts) // 2])


@pytest.mark.parametrize("which", ["up", "down"])
def test_a_lighter_shortcut_in_a_cache_file_is_rebuilt_not_used(rome_parquet, which, caplog):
    import gpu_sssp
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    g = read_parquet(rome_parquet)
    h = hmod.build_hierarchy(g)
    k = _shortcut(h, g, which)
    w = getattr(h, f"{which}_weight").copy()
    w[k] //= 2
    forged = dataclasses.replace(h, **{f"{which}_weight": w})
    ph.write_cache(forged, g, ph.cache_path(g))  # checksums of the changed arrays
    ph._VOUCHED.clear()  # as in another process: nothing vouched for
    g = read_parquet(rome_parquet)
    got, why = ph.read_cache(g, ph.cache_path(g))
    assert got is None and "below every walk" in why
    sources = np.arange(0, g.n, 5)
    m = gpu_sssp.matrix(str(rome_parquet), g.to_ids(sources), "all", method="phast", backend="cpu")
    assert np.array_equal(m, csg.dijkstra(g.to_scipy(), indices=sources))
    assert "rebuilding the hierarchy cache" in caplog.text


def test_every_fresh_build_passes_the_derivation_check():
    """What a cache file is checked with never refuses a hierarchy RoutingKit built:
    parallel arcs (either policy), self-loops, zero weights, ties."""
    rng = np.random.default_rng(7)
    for _ in range(120):
        n = int(rng.integers(2, 50))
        m = int(rng.integers(1, 4 * n))
        w = rng.integers(0, int(rng.choice([1, 3, 100, 10**6])) + 1, m)
        g = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), w, n,
                             parallel=str(rng.choice(["min", "keep"])))
        h = hmod.build_hierarchy(g)
        hmod.check_hierarchy(h)
        hmod.check_derived(h, g)


def test_an_arc_with_no_walk_behind_it_is_refused():
    """An arc between two vertices that neither the graph nor a lower vertex joins."""
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], [4, 4, 4], 4)
    h = hmod.build_hierarchy(g)
    lv = h.level_of_position()
    hmod.check_derived(h, g)
    # a down arc from the top vertex into the deepest one that is not there: add it
    top, deep = int(np.argmin(lv)), int(np.argmax(lv))
    row = h.down_tail[h.down_indptr[deep]:h.down_indptr[deep + 1]]
    assert not np.any(row == top) and h.order[deep] != h.order[top] + 1
    ptr = h.down_indptr.copy()
    ptr[deep + 1:] += 1
    at = int(h.down_indptr[deep] + np.searchsorted(row, top))
    tail = np.insert(h.down_tail, at, top).astype(np.int32)
    weight = np.insert(h.down_weight, at, 1000).astype(np.uint32)
    bad = dataclasses.replace(h, down_indptr=ptr, down_tail=tail, down_weight=weight)
    hmod.check_hierarchy(bad)
    with pytest.raises(ValueError, match="no walk of the graph"):
        hmod.check_derived(bad, g)


def test_empty_levels_are_refused(rome_parquet):
    """A level_ptr padded with empty levels (8 bytes each in the file) passed every check:
    the GPU sweep launches its kernels once per level, so a file of a few hundred MB was
    tens of millions of launches a batch.  A built hierarchy has none."""
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    g = read_parquet(rome_parquet)
    h = hmod.build_hierarchy(g)
    assert np.all(np.diff(h.level_ptr) > 0)
    padded = np.concatenate([np.zeros(100_000, dtype=np.int64), h.level_ptr])
    ph.write_cache(dataclasses.replace(h, level_ptr=padded), g, ph.cache_path(g))
    ph._VOUCHED.clear()
    got, why = ph.read_cache(read_parquet(rome_parquet), ph.cache_path(g))
    assert got is None and "100,000 empty level(s)" in why


def test_a_routingkit_arc_head_out_of_range_is_a_valueerror():
    """RoutingKit's file (parse_routingkit, layout): a head beyond the vertex count was read
    out of bounds by the Numba level pass and then raised IndexError, which the callers do
    not take for a bad hierarchy."""
    n = 4
    rank = np.arange(n, dtype=np.uint32)
    fwd = (np.array([0, 1, 1, 1, 1], dtype=np.uint32), np.array([10**6], dtype=np.uint32),
           np.array([5], dtype=np.uint32))
    bwd = (np.zeros(n + 1, dtype=np.uint32), np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint32))
    with pytest.raises(ValueError, match="forward arc head 1000000 beyond 3"):
        hmod.layout(rank, fwd, bwd, build_s=0.0, library="test")


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_hierarchy_given_without_a_fingerprint_is_checked_against_the_graph(backend):
    """``solve(..., method="phast", hierarchy=h)`` with a hierarchy that names no graph
    (``fingerprint=""``: made by hand, or by ``layout``) of another graph of as many
    vertices answered 700 of 900 distances wrong, silently (CPU phast; the GPU's
    ``kernels.gpu.phast.prepare`` took it unchecked too)."""
    from gpu_sssp import kernels

    if backend == "gpu" and kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")
    rng = np.random.default_rng(0)
    n = 30
    src, dst = rng.integers(0, n, 90), rng.integers(0, n, 90)
    a = Graph.from_edges(src, dst, rng.integers(1, 100, 90), n)
    b = Graph.from_edges(src, dst, rng.integers(1, 100, 90), n)
    opts = {"force": True} if backend == "gpu" else {}
    mine = dataclasses.replace(hmod.build_hierarchy(b), fingerprint="")
    r = kernels.solve(b, np.arange(n), method="phast", backend=backend, hierarchy=mine, **opts)
    assert np.array_equal(r.distances, csg.dijkstra(b.to_scipy()))
    other = dataclasses.replace(hmod.build_hierarchy(a), fingerprint="")
    with pytest.raises(ValueError, match="the hierarchy given is not one of"):
        kernels.solve(b, np.arange(n), method="phast", backend=backend, hierarchy=other, **opts)


def test_a_vertex_with_too_many_arcs_in_and_out_is_refused_before_the_pairs_are_walked(monkeypatch):
    """check_derived walks every vertex's (arc in, arc out) pairs: a forged file with one
    vertex of 10^5 arcs in and out would be 10^10 steps; refused by their count first."""
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 90), rng.integers(0, 30, 90)
    g = Graph.from_edges(np.r_[src, dst], np.r_[dst, src], np.tile(rng.integers(1, 100, 90), 2), 30)
    h = hmod.build_hierarchy(g)
    pairs = int(np.dot(np.diff(h.down_indptr), np.diff(h.up_indptr)))
    assert pairs >= 1
    hmod.check_derived(h, g)  # within the bound
    monkeypatch.setattr(hmod, "MAX_DERIVED_PAIRS", pairs - 256 * (h.m_up + h.m_down) - 1)
    monkeypatch.setattr(hmod, "_DERIVED", lambda *a: (_ for _ in ()).throw(AssertionError("walked")))
    with pytest.raises(ValueError, match="pairs, beyond"):
        hmod.check_derived(h, g)


def test_the_derived_check_is_not_compiled_again_in_every_process(tmp_path):
    """Every load of a cached hierarchy compiled check_derived's numba function again
    (1.7 s for rome99, whose hierarchy takes 0.3 s to build): defined inside a function
    and calling another one defined there, it missed numba's on-disk cache in each new
    process (38 cache entries of it had piled up).  A second process finds it cached."""
    import subprocess
    import sys

    code = ("import numpy as np, gpu_sssp\n"
            "from gpu_sssp.kernels.hierarchy import check_derived, _derived_numba\n"
            "from gpu_sssp.pipeline.hierarchy import load_hierarchy\n"
            f"g = gpu_sssp.load_graph({str(tmp_path / 'g.gr')!r})\n"
            "h = load_hierarchy(g)\n"
            "check_derived(h, g)\n"
            "s = _derived_numba().stats\n"
            "print(len(s.cache_hits), len(s.cache_misses))\n")
    (tmp_path / "g.gr").write_text("p sp 4 5\na 1 2 1\na 2 3 1\na 3 4 1\na 4 1 1\na 1 3 5\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    hits, misses = map(int, runs[1].stdout.split()[-2:])
    assert hits >= 1 and misses == 0, runs[1].stdout
