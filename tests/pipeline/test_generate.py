"""Generators: sizes, determinism, weight ranges, negative weights without negative cycles."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import johnson

from gpu_sssp.pipeline import generate as G
from gpu_sssp.pipeline.ingest import read_meta

from ._ingest_helpers import arcs


def _no_negative_cycle(src, dst, w, n):
    # keep the cheapest of parallel arcs (scipy would sum them)
    order = np.lexsort((w, dst, src))
    s, d, x = src[order], dst[order], w[order]
    first = np.ones(len(s), dtype=bool)
    first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
    keep = first & (s != d)
    mat = sp.csr_matrix((x[keep].astype(float), (s[keep], d[keep])), shape=(n, n))
    johnson(mat, directed=True, indices=[0])  # raises NegativeCycleError on a negative cycle


def test_rmat_sizes_and_determinism():
    s, d, w, n = G.rmat(8, 4, seed=3)
    assert n == 256 and len(s) == len(d) == len(w) == 1024
    assert s.min() >= 0 and max(s.max(), d.max()) < 256
    assert w.min() >= 1 and w.max() <= 100
    s2, d2, w2, _ = G.rmat(8, 4, seed=3)
    assert (s == s2).all() and (d == d2).all() and (w == w2).all()
    s3, _, _, _ = G.rmat(8, 4, seed=4)
    assert not (s == s3).all()
    # skew: quadrant a=0.45 puts more sources in the lower half
    assert (s < 128).mean() > 0.55


def test_rmat_undirected_and_bad_probabilities():
    s, d, w, n = G.rmat(6, 2, seed=1, undirected=True)
    u, v, _, _ = G.rmat(6, 2, seed=1)  # the same draw, one arc an edge
    loops = int((u == v).sum())
    assert loops > 0  # (R-MAT draws self-loops; this seed does)
    # both arcs of every edge, a self-loop once (it was written twice: a duplicate arc)
    assert len(s) == 2 * 128 - loops
    arcs = np.stack([s, d], 1)
    assert sorted(map(tuple, arcs)) == sorted(map(tuple, np.concatenate(
        [np.stack([u, v], 1), np.stack([v, u], 1)[u != v]])))
    assert (s == d).sum() == loops
    i = 0
    while i < len(s):  # an edge's two arcs side by side, with one weight
        if s[i] != d[i]:
            assert (s[i + 1], d[i + 1], w[i + 1]) == (d[i], s[i], w[i])
            i += 1
        i += 1
    with pytest.raises(ValueError):
        G.rmat(4, 2, a=0.9, b=0.2, c=0.1)


def test_grid():
    s, d, w, n = G.grid(3, 4, seed=0, weights=(5, 9))
    assert n == 12 and len(s) == 2 * (3 * 3 + 2 * 4)
    assert (np.abs(s - d) == 1).sum() + (np.abs(s - d) == 4).sum() == len(s)
    assert (w[0::2] == w[1::2]).all() and w.min() >= 5 and w.max() <= 9
    pairs = set(zip(s.tolist(), d.tolist()))
    assert all((b, a) in pairs for a, b in pairs)


def test_random_graph():
    s, d, w, n = G.random_graph(50, 300, seed=2)
    assert n == 50 and len(s) == 300 and (s != d).all()
    assert len(set(zip(s.tolist(), d.tolist()))) == 300
    s, d, w, n = G.random_graph(20, 190, seed=2, undirected=True)  # complete graph
    assert len(s) == 380 and len(set(zip(s.tolist(), d.tolist()))) == 380
    with pytest.raises(ValueError):
        G.random_graph(5, 21)


def test_float_weights():
    s, d, w, n = G.random_graph(30, 100, seed=1, weights=(0.5, 2.0), weight_type="float32")
    assert w.dtype == np.float32 and 0.5 <= w.min() and w.max() <= 2.0


@pytest.mark.parametrize("family", ["rmat", "grid", "random"])
@pytest.mark.parametrize("fraction", [0.05, 0.3])
def test_negative_fraction_no_negative_cycle(family, fraction):
    if family == "rmat":
        s, d, w, n = G.rmat(9, 8, seed=5, negative_fraction=fraction)
    elif family == "grid":
        s, d, w, n = G.grid(20, 30, seed=5, negative_fraction=fraction, undirected=False)
    else:
        s, d, w, n = G.random_graph(400, 4000, seed=5, negative_fraction=fraction)
    neg = float((w < 0).mean())
    assert abs(neg - fraction) < 0.05
    _no_negative_cycle(s, d, w, n)


def test_negative_fraction_needs_nonnegative_base():
    with pytest.raises(ValueError):
        G.grid(3, 3, weights=(-1, 5), negative_fraction=0.1)


def test_write_contract(tmp_path):
    out = tmp_path / "r.parquet"
    meta = G.generate("rmat", out, scale=7, edge_factor=4, seed=9, weights=(1, 10))
    assert read_meta(out) == meta
    assert meta["vertices"] == 128 and meta["arcs"] == 512 and meta["id_base"] == 0
    assert meta["format"] == "generated:rmat" and meta["generator"]["scale"] == 7
    assert meta["weights"] == "uniform:1:10:9" and meta["created_by"].startswith("sssp-generate")
    s, d, w = arcs(out)
    s0, d0, w0, _ = G.rmat(7, 4, seed=9, weights=(1, 10))
    assert (s == s0).all() and (d == d0).all() and (w == w0).all()
    assert meta["self_loops"] == int((s == d).sum())
    assert not list(tmp_path.glob(".*tmp"))


def test_rmat_metadata_names_the_d_it_drew_with(tmp_path, capsys):
    """``d`` defaults to 1 - a - b - c: the metadata said ``"d": null``, and the graph
    could not be drawn again from its recorded parameters alone."""
    from gpu_sssp.workflows.cli import main

    for argv, want in (([], (0.45, 0.15, 0.15, 0.25)), (["-a", "0.5", "-b", "0.2", "-c", "0.1"], (0.5, 0.2, 0.1, None))):
        out = tmp_path / "r.parquet"
        assert main(["generate", "rmat", "--scale", "5", *argv, "-o", str(out), "-q"]) == 0
        gen = read_meta(out)["generator"]
        a, b, c, d = (gen[k] for k in "abcd")
        assert d == 1.0 - a - b - c and (a, b, c) == want[:3] and (want[3] is None or d == want[3]), gen
        again = {k: v for k, v in gen.items() if k in ("scale", "edge_factor", "a", "b", "c", "d", "seed")}
        s0, d0, w0, _ = G.rmat(**again, weights=tuple(gen["weights"]))
        s, dd, w = arcs(out)
        assert (s == s0).all() and (dd == d0).all() and (w == w0).all()



def test_write_int32_weights(tmp_path):
    out = tmp_path / "g.parquet"
    meta = G.generate("grid", out, rows=5, cols=5, weight_type="int32", negative_fraction=0.2, seed=1,
                      undirected=False)
    assert meta["weight_type"] == "int32" and meta["negative_weights"] > 0 and meta["directed"] is True
    assert "potentials" in meta["weights"]


@pytest.mark.parametrize("family, kw", [
    ("grid", dict(rows=3, cols=5)),
    ("grid", dict(rows=3, cols=5, undirected=False)),
    ("rmat", dict(scale=6, edge_factor=3)),
    ("rmat", dict(scale=6, edge_factor=3, undirected=True)),
    ("random", dict(n=40, m=70)),
    ("random", dict(n=40, m=70, undirected=True)),
])
def test_planned_size_is_what_is_generated(tmp_path, family, kw):
    n, arcs, _ = G.planned_size(family, **kw)
    meta = G.generate(family, tmp_path / "g.parquet", **kw)
    if family == "rmat" and kw.get("undirected"):  # the most: a self-loop is one arc
        u, v, _, _ = G.rmat(kw["scale"], kw["edge_factor"])
        arcs -= int((u == v).sum())
    assert meta["vertices"] == n and meta["arcs"] == arcs


@pytest.mark.parametrize("family, kw, message", [
    ("grid", dict(rows=100_000, cols=100_000), "10,000,000,000 vertices, above the limit sssp.ingest.max-vertices"),
    ("rmat", dict(scale=40), "1,099,511,627,776 vertices, above the limit sssp.ingest.max-vertices"),
    ("random", dict(n=2**31, m=1), "2,147,483,648 vertices, above the limit sssp.ingest.max-vertices"),
    ("grid", dict(rows=4, cols=4, max_vertices=15), "16 vertices, above the limit sssp.ingest.max-vertices = 15"),
    ("grid", dict(rows=4, cols=4, max_arcs=47), "48 arcs, above the limit sssp.ingest.max-arcs = 47"),
])
def test_generate_refuses_sizes_above_the_ingest_limits(tmp_path, monkeypatch, family, kw, message):
    """Checked before anything is allocated (a grid of 10**10 vertices used to ask NumPy
    for 74.5 GiB); the one line names the limit and how to raise it."""
    from gpu_sssp.kernels.errors import UsageError

    def no_generation(*a, **k):
        raise AssertionError("generated before the size was checked")

    for name in ("rmat", "grid", "random_graph"):
        monkeypatch.setattr(G, name, no_generation)
    with pytest.raises(UsageError) as err:
        G.generate(family, tmp_path / "g.parquet", **kw)
    assert message in str(err.value) and "DASK_SSSP__INGEST__MAX_" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_generate_limits_follow_the_settings(tmp_path, monkeypatch):
    import dask.config

    from gpu_sssp.kernels.errors import UsageError

    with dask.config.set({"sssp.ingest.max-vertices": 10}):
        with pytest.raises(UsageError, match="above the limit sssp.ingest.max-vertices = 10;"):
            G.generate("grid", tmp_path / "g.parquet", rows=4, cols=4)
        # an explicit limit wins over the setting, as for ingest
        assert G.generate("grid", tmp_path / "g.parquet", rows=4, cols=4, max_vertices=16)["vertices"] == 16


def test_generate_refuses_what_cannot_fit_in_memory(tmp_path, monkeypatch):
    from gpu_sssp.kernels.errors import UsageError

    from gpu_sssp.kernels import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 10_000)
    with pytest.raises(UsageError, match=r"grid --rows 30 --cols 30: 900 vertices and 3,480 arcs need at least"):
        G.generate("grid", tmp_path / "g.parquet", rows=30, cols=30)
    assert list(tmp_path.iterdir()) == []
    # 168 arcs, 2.7 kB of ids and weights, about twice that to generate: fits
    assert G.generate("grid", tmp_path / "g.parquet", rows=7, cols=7)["vertices"] == 49


# -- bad arguments: one line (UsageError; exit 2 from sssp generate), nothing written ---------
def _cli(tmp_path, capsys, *argv):
    from gpu_sssp.workflows.cli import main

    out = tmp_path / "g.parquet"
    capsys.readouterr()
    rc = main(["generate", *argv, "-o", str(out), "-q"])
    err = capsys.readouterr().err
    return rc, err, out


@pytest.mark.parametrize("bounds", ["0.2:0.9", "1.5:3.5", "1:2.5", "-0.5:3"])
def test_fractional_bounds_refused_for_integer_weights(tmp_path, capsys, bounds):
    """--weights 0.2:0.9 with the default int64 weights drew only zeros, 1.5:3.5 drew
    1..3 (1 outside the range), and the metadata said uniform:0.2:0.9."""
    from gpu_sssp.kernels.errors import UsageError

    lo, hi = (float(x) for x in bounds.split(":"))
    for wt in ("int64", "int32"):
        with pytest.raises(UsageError, match=rf"--weights {lo:g}.*{wt} weights are whole numbers.*--weight-type float64"):
            G.random_graph(20, 50, weights=(lo, hi), weight_type=wt)
    rc, err, out = _cli(tmp_path, capsys, "random", "-n", "20", "-m", "50", f"--weights={bounds}")
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "whole numbers" in err and "--weight-type float64" in err and not out.exists()
    # real weights take them, within [LO, HI]
    _, _, w, _ = G.random_graph(20, 50, weights=(lo, hi), weight_type="float64")
    assert lo <= w.min() and w.max() <= hi


def test_whole_bounds_for_integer_weights(tmp_path, capsys):
    """Whole numbers written as reals are the integers they are (label and draws alike);
    negative bounds work; the range may reach int64's largest value."""
    ints = G.random_graph(30, 100, seed=4, weights=(2, 9))[2]
    assert (G.random_graph(30, 100, seed=4, weights=(2.0, 9.0))[2] == ints).all()
    assert ints.min() >= 2 and ints.max() <= 9
    meta = G.generate("random", tmp_path / "a.parquet", n=30, m=100, seed=4, weights=(2.0, 9.0))
    assert meta["weights"] == "uniform:2:9:4" and meta["generator"]["weights"] == [2, 9]
    w = G.random_graph(30, 100, seed=1, weights=(-5, -1))[2]
    assert w.min() >= -5 and w.max() <= -1
    top = np.iinfo(np.int64).max
    w = G.random_graph(30, 100, seed=1, weights=(top - 3, top))[2]
    assert w.min() >= top - 3 and w.dtype == np.int64
    rc, err, out = _cli(tmp_path, capsys, "random", "-n", "20", "-m", "50", "--weights", "1.0:3e0")
    assert rc == 0 and read_meta(out)["weights"] == "uniform:1:3:0"


@pytest.mark.parametrize("bounds, wt, message", [
    ((1, float("inf")), "float64", "finite"),
    ((float("nan"), 1.0), "float64", "finite"),
    ((1.0, 1e39), "float32", "do not fit float32"),
    ((-1e308, 1e308), "float64", "overflows"),
    ((5, 1), "int64", "HI < LO"),
    ((0, 2**31), "int32", "do not fit int32"),
    (("1", 2), "int64", "must be numbers"),
])
def test_bad_weight_bounds_are_one_line(bounds, wt, message):
    from gpu_sssp.kernels.errors import UsageError

    with pytest.raises(UsageError, match=message):
        G.random_graph(10, 20, weights=bounds, weight_type=wt)


@pytest.mark.parametrize("family, kw, hint", [
    ("random", dict(n=50, m=200, undirected=True), "no --undirected"),
    ("rmat", dict(scale=5, edge_factor=4, undirected=True), "no --undirected"),
    ("grid", dict(rows=4, cols=5), "for grid, --asymmetric"),  # a grid is undirected by default
])
def test_negative_fraction_refused_on_undirected_graphs(tmp_path, family, kw, hint):
    """generate ... --negative-fraction F --undirected wrote directed: false while the
    potentials gave every arc a weight other than its reverse's; an undirected graph
    with a negative edge has a negative cycle (there and back), so it is refused."""
    from gpu_sssp.kernels.errors import UsageError, speaking

    with pytest.raises(UsageError, match=r"undirected edge of negative weight is a negative cycle.*undirected=False"):
        G.generate(family, tmp_path / "g.parquet", negative_fraction=0.3, seed=2, **kw)
    with speaking("cli"):  # the command line's words
        with pytest.raises(UsageError, match=rf"undirected edge of negative weight is a negative cycle.*{hint}"):
            G.generate(family, tmp_path / "g.parquet", negative_fraction=0.3, seed=2, **kw)
    assert list(tmp_path.iterdir()) == []
    # directed, it is what it says: negative arcs, no negative cycle, directed: true
    directed = dict(kw, undirected=False)
    meta = G.generate(family, tmp_path / "d.parquet", negative_fraction=0.3, seed=2, **directed)
    assert meta["directed"] is True and meta["negative_weights"] > 0
    s, d, w = arcs(tmp_path / "d.parquet")
    _no_negative_cycle(s, d, w, meta["vertices"])


def test_negative_fraction_undirected_cli_is_exit_2(tmp_path, capsys):
    for argv in (["random", "-n", "50", "-m", "200", "--negative-fraction", "0.5", "--undirected"],
                 ["grid", "--rows", "4", "--cols", "5", "--negative-fraction", "0.2"]):
        rc, err, out = _cli(tmp_path, capsys, *argv)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "negative cycle" in err, err
        assert not out.exists()
    rc, _, out = _cli(tmp_path, capsys, "grid", "--rows", "4", "--cols", "5", "--negative-fraction", "0.2",
                      "--asymmetric")
    assert rc == 0 and read_meta(out)["directed"] is True


def test_negative_seed_is_a_usage_error(tmp_path, capsys):
    """sssp generate random -n 5 -m 4 --seed -1 was a NumPy traceback (exit 1)."""
    from gpu_sssp.kernels.errors import UsageError

    for family, kw in (("random", dict(n=5, m=4)), ("rmat", dict(scale=3)), ("grid", dict(rows=2, cols=2))):
        with pytest.raises(UsageError, match="--seed -1: a seed must be a whole number >= 0"):
            G.generate(family, tmp_path / "g.parquet", seed=-1, **kw)
    for seed in (1.5, True, "3"):
        with pytest.raises(UsageError, match="--seed .*: expected a whole number >= 0"):
            G.random_graph(5, 4, seed=seed)
    assert list(tmp_path.iterdir()) == []
    rc, err, out = _cli(tmp_path, capsys, "random", "-n", "5", "-m", "4", "--seed", "-1")
    assert rc == 2 and "Traceback" not in err and "--seed -1" in err and not out.exists(), err


@pytest.mark.parametrize("undirected", [False, True])
def test_a_dense_random_graph_up_to_every_pair_is_drawn_at_once(undirected):
    """`generate random -n 300 -m 89700` (every arc) was still drawing after 60 s: each
    pass found a few new pairs near the bound (found by the 2026-12-07 audit).  Above half
    of all pairs, m of them are drawn without repeats."""
    import time

    from gpu_sssp.pipeline.generate import gnm_max_edges, random_graph

    n = 300
    cap = gnm_max_edges(n, undirected)
    for m in (cap, cap - 7, cap // 2 + 1):
        t0 = time.perf_counter()
        src, dst, w, got_n = random_graph(n, m, seed=3, undirected=undirected)
        assert time.perf_counter() - t0 < 30
        pairs = set(zip(src.tolist(), dst.tolist()))
        assert got_n == n and len(src) == (2 * m if undirected else m) and len(pairs) == len(src)
        assert not (src == dst).any() and src.min() >= 0 and max(src.max(), dst.max()) < n
    a = random_graph(n, cap - 7, seed=3, undirected=undirected)
    b = random_graph(n, cap - 7, seed=3, undirected=undirected)
    assert all(np.array_equal(x, y) for x, y in zip(a[:3], b[:3]))  # the seed decides


def test_a_negative_fraction_no_potentials_reach_is_refused():
    """`--negative-fraction 0.6` ran the potentials' scale to its 1e15 cap: a float graph of
    weights near +-1.7e15, 50% negative, written with exit 0; integer weights were refused
    as drawn too large "by --weights" (found by the 2026-12-07 audit)."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.generate import random_graph

    for wt in ("int64", "float64"):
        with pytest.raises(UsageError, match=r"negative_fraction=0\.6.*make at most about 0\.\d\d of this graph's arcs"):
            random_graph(100, 300, seed=1, weight_type=wt, negative_fraction=0.6)
    src, dst, w, _ = random_graph(100, 300, seed=1, negative_fraction=0.3)
    assert 0.25 <= float(np.mean(w < 0)) <= 0.35
