"""Travel-time matrices (``kernels.solve(targets=)``) against SciPy, exactly: RPHAST on the
CPU and (marked gpu) on the GPU, the gathering engines, repeated / unreachable targets,
targets equal to the sources; the GPU selection's arrays checked on the CPU by emulating
the restricted sweep."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

from gpu_sssp import kernels
from gpu_sssp.kernels.graph import Graph
from tests.kernels import batched_graphs as bg
from tests.kernels import graphs


def scipy_rows(g: Graph, sources) -> np.ndarray:
    a = sp.csr_matrix((g.weights.astype(np.float64), g.indices, g.indptr), shape=(g.n, g.n))
    return csg.dijkstra(a, directed=True, indices=np.asarray(sources))


def check_matrix(g: Graph, sources, targets, res, ref_rows, stats_over):
    """The matrix equals SciPy's target columns; the statistics are over the distinct
    targets or every vertex as asked."""
    targets = np.asarray(targets)
    assert res.matrix.shape == (len(sources), len(targets))
    assert np.array_equal(res.targets, targets)
    want = ref_rows[:, targets]
    assert np.array_equal(res.matrix, want), f"{int((res.matrix != want).sum())} entries differ"
    over = ref_rows if stats_over == "all" else ref_rows[:, np.unique(targets)]
    fin = np.isfinite(over)
    assert res.stats_over == ("vertices" if stats_over == "all" else "targets")
    assert np.array_equal(res.reached, fin.sum(axis=1))
    assert np.array_equal(res.sum_distance, np.where(fin, over, 0).sum(axis=1).astype(np.int64))
    ecc = np.where(fin.any(axis=1), np.where(fin, over, -np.inf).max(axis=1), np.nan)
    assert np.array_equal(res.eccentricity, ecc, equal_nan=True)


@pytest.fixture(scope="module")
def rome():
    return graphs.load("dimacs9/rome99.gr")


@pytest.fixture(scope="module")
def rome_rows(rome):
    return scipy_rows(rome, np.arange(rome.n))


@pytest.fixture(scope="module")
def ny():
    """NY road topology with fresh weights (seed 11, not the benchmarks' 7)."""
    return bg.load("road-topology/NY.gr.xz", weights="random:1:1000:11")


@pytest.fixture(scope="module")
def unreachable():
    """A directed grid whose last three rows the rest cannot reach (the arcs between them
    and the rows above point up only), plus 5 isolated vertices; weights 0..19."""
    side = 30
    n = side * side + 5
    rng = np.random.default_rng(3)
    src, dst = [], []
    for r in range(side):
        for c in range(side):
            v = r * side + c
            if c + 1 < side:
                src += [v, v + 1]
                dst += [v + 1, v]
            if r + 1 < side:
                if r + 1 >= side - 3:  # into the bottom rows never, out of them always
                    src.append(v + side)
                    dst.append(v)
                else:
                    src += [v, v + side]
                    dst += [v + side, v]
    w = rng.integers(0, 20, len(src))  # zero weights too
    return Graph.from_edges(np.array(src), np.array(dst), w, n, name="cut-grid")


CPU_METHODS = [("phast", "targets"), ("phast", "all"), ("dijkstra", "targets"), ("dijkstra", "all")]


@pytest.mark.parametrize("method, stats_over", CPU_METHODS)
def test_rome99_all_by_all(rome, rome_rows, method, stats_over):
    s = np.arange(rome.n)
    res = kernels.solve(rome, s, method=method, backend="cpu", targets=s, stats_over=stats_over)
    check_matrix(rome, s, s, res, rome_rows, stats_over)
    if method == "phast" and stats_over == "targets":
        assert res.counters["rphast"] and res.counters["selected_rows"] == rome.n


@pytest.mark.parametrize("method, stats_over", CPU_METHODS)
def test_rome99_repeated_targets_and_sources(rome, rome_rows, method, stats_over):
    rng = np.random.default_rng(5)
    s = rng.integers(0, rome.n, 150)
    s[:10] = s[0]  # repeated sources
    t = np.concatenate([rng.integers(0, rome.n, 300), s[:40], [7, 7, 7]])  # repeats, sources among them
    res = kernels.solve(rome, s, method=method, backend="cpu", targets=t, stats_over=stats_over)
    check_matrix(rome, s, t, res, rome_rows[s], stats_over)
    # a target that is the source: distance 0
    assert all(res.matrix[i, 300 + i] == 0 for i in range(40))
    if method == "phast" and stats_over == "targets":
        assert 0 < res.counters["selected_rows"] < rome.n


@pytest.mark.parametrize("stats_over", ["targets", "all"])
def test_targets_equal_sources(rome, rome_rows, stats_over):
    s = np.random.default_rng(9).choice(rome.n, 200, replace=False)
    res = kernels.solve(rome, s, method="phast", backend="cpu", targets=s, stats_over=stats_over)
    check_matrix(rome, s, s, res, rome_rows[s], stats_over)
    assert np.all(np.diag(res.matrix) == 0)
    st = res.stats_table(rome.id_base)
    if stats_over == "targets":  # mean over the other reached targets
        m = res.matrix
        fin = np.isfinite(m)
        want = np.where(fin, m, 0).sum(1) / (fin.sum(1) - 1)
        assert np.allclose(st.column("mean_distance").to_numpy(), want)


@pytest.mark.parametrize("method, stats_over", CPU_METHODS)
def test_unreachable_targets(unreachable, method, stats_over):
    g = unreachable
    s = np.arange(0, g.n, 7)
    t = np.concatenate([np.arange(g.n - 5, g.n), np.arange(g.n - 100, g.n - 5, 3), [0, 0]])
    ref = scipy_rows(g, s)
    opts = {"force": True} if method == "phast" else {}
    res = kernels.solve(g, s, method=method, backend="cpu", targets=t, stats_over=stats_over, **opts)
    assert np.isinf(res.matrix).any() and np.isfinite(res.matrix).any()
    check_matrix(g, s, t, res, ref, stats_over)
    tab = res.matrix_table(g.id_base)
    assert tab.schema.equals(kernels.MATRIX_SCHEMA, check_metadata=False)
    assert np.isinf(np.asarray(tab.column("distance").combine_chunks().flatten())).any()


@pytest.mark.parametrize("stats_over", ["targets", "all"])
def test_ny_sample(ny, stats_over):
    rng = np.random.default_rng(21)
    s = rng.choice(ny.n, 48, replace=False)
    t = rng.choice(ny.n, 3000, replace=False)
    res = kernels.solve(ny, s, method="phast", backend="cpu", targets=t, stats_over=stats_over)
    check_matrix(ny, s, t, res, scipy_rows(ny, s), stats_over)
    if stats_over == "targets":
        assert res.counters["selected_rows"] < ny.n // 2


def test_ny_selection_emulated(ny):
    """The GPU's selection arrays (kernels.gpu.rphast.select, host code), checked by
    emulating phast_restricted on the CPU: upward values by Dijkstra on the upward
    arcs, then the downward pass over the selected rows in order."""
    from gpu_sssp.kernels.gpu import phast as gphast
    from gpu_sssp.kernels.gpu import rphast

    prep = gphast.prepare(ny)
    rng = np.random.default_rng(4)
    t = np.concatenate([rng.choice(ny.n, 2000, replace=False), [5, 5]])
    sel = rphast.select(prep, t)
    assert np.all(np.diff(sel.sel_pos) > 0) and sel.sel_level_ptr[-1] == sel.rows
    assert np.all(np.diff(sel.sel_level_ptr) > 0)
    # every arc's tail is a row of an earlier level
    lvl_of_row = np.repeat(np.arange(len(sel.sel_level_ptr) - 1), np.diff(sel.sel_level_ptr))
    heads = np.repeat(np.arange(sel.rows), np.diff(sel.sdn_ptr))
    assert np.all(lvl_of_row[sel.sdn_src] < lvl_of_row[heads])
    n = prep.n
    up = sp.csr_matrix((prep.push_w.astype(np.float64) + 0.0, prep.push_head, prep.push_ptr), shape=(n, n))
    s = rng.choice(ny.n, 6, replace=False)
    upv = csg.dijkstra(up, directed=True, indices=prep.position[s])
    for i in range(len(s)):
        d = upv[i, sel.sel_pos].copy()
        for r in range(sel.rows):
            a, b = sel.sdn_ptr[r], sel.sdn_ptr[r + 1]
            if b > a:
                d[r] = min(d[r], (d[sel.sdn_src[a:b]] + sel.sdn_w[a:b]).min())
        want = scipy_rows(ny, [s[i]])[0, t]
        assert np.array_equal(d[sel.tg_row], want)
    assert sel.first.sum() == len(np.unique(t))


def test_errors(rome):
    s = np.arange(3)
    with pytest.raises(ValueError, match="target index 5000 out of range"):
        kernels.solve(rome, s, method="phast", backend="cpu", targets=[1, 5000])
    with pytest.raises(TypeError, match="predecessors"):
        kernels.solve(rome, s, method="dijkstra", backend="cpu", targets=[1], predecessors=True)
    with pytest.raises(ValueError, match="stats_over"):
        kernels.solve(rome, s, method="dijkstra", backend="cpu", targets=[1], stats_over="some")
    with pytest.raises(TypeError, match="integers"):
        kernels.solve(rome, s, method="dijkstra", backend="cpu", targets=[1.5])
    with pytest.raises(ValueError, match="no targets"):
        kernels.solve(rome, s, method="dijkstra", backend="cpu", targets=np.zeros(0, np.int64))
    res = kernels.solve(rome, s, method="dijkstra", backend="cpu")
    with pytest.raises(TypeError, match="no matrix"):
        res.matrix


def test_matrix_table_forms(rome, rome_rows):
    s, t = np.array([0, 5]), np.array([3, 1, 3])
    res = kernels.solve(rome, s, method="phast", backend="cpu", targets=t)
    wide = res.matrix_table(1)
    assert wide.column("source").to_pylist() == [1, 6]
    assert wide.column("distance").to_pylist() == rome_rows[np.ix_(s, t)].tolist()
    import json

    assert json.loads(wide.schema.metadata[b"sssp"])["targets"] == [4, 2, 4]
    long = res.matrix_table(1, "long")
    assert long.schema.equals(kernels.MATRIX_LONG_SCHEMA, check_metadata=False)
    assert long.column("target").to_pylist() == [4, 2, 4, 4, 2, 4]
    assert long.column("distance").to_pylist() == rome_rows[np.ix_(s, t)].reshape(-1).tolist()
    with pytest.raises(TypeError, match="matrix_table"):
        res.to_table()


# ----------------------------------------------------------------------------- GPU
GPU_METHODS = [("phast", "targets"), ("phast", "all"), ("batched", "targets"), ("batched", "all"),
               ("hbf", "targets")]


@pytest.mark.gpu
@pytest.mark.parametrize("method, stats_over", GPU_METHODS)
def test_gpu_rome99_all_by_all(rome, rome_rows, method, stats_over):
    s = np.arange(rome.n) if method != "hbf" else np.arange(0, rome.n, 97)
    t = np.arange(rome.n)
    res = kernels.solve(rome, s, method=method, backend="gpu", targets=t, stats_over=stats_over)
    check_matrix(rome, s, t, res, rome_rows[s], stats_over)
    assert res.counters["targets_gathered"] == "device"


@pytest.mark.gpu
@pytest.mark.parametrize("method, stats_over", GPU_METHODS)
def test_gpu_repeats_and_sources(rome, rome_rows, method, stats_over):
    rng = np.random.default_rng(5)
    s = rng.integers(0, rome.n, 150 if method != "hbf" else 12)
    s[:5] = s[0]
    t = np.concatenate([rng.integers(0, rome.n, 300), s, [7, 7]])
    res = kernels.solve(rome, s, method=method, backend="gpu", targets=t, stats_over=stats_over)
    check_matrix(rome, s, t, res, rome_rows[s], stats_over)


@pytest.mark.gpu
@pytest.mark.parametrize("stats_over", ["targets", "all"])
@pytest.mark.parametrize("batch_size", [None, 1, 3, 37])
def test_gpu_phast_unreachable(unreachable, stats_over, batch_size):
    g = unreachable
    s = np.arange(0, g.n, 5)
    t = np.concatenate([np.arange(g.n - 5, g.n), np.arange(g.n - 100, g.n - 5, 3), [0, 0]])
    res = kernels.solve(g, s, method="phast", backend="gpu", targets=t, stats_over=stats_over,
                        force=True, batch_size=batch_size)
    check_matrix(g, s, t, res, scipy_rows(g, s), stats_over)


@pytest.mark.gpu
@pytest.mark.parametrize("method, stats_over", [("phast", "targets"), ("phast", "all"), ("batched", "targets")])
def test_gpu_ny_sample(ny, method, stats_over):
    rng = np.random.default_rng(22)
    s = rng.choice(ny.n, 300, replace=False)
    t = rng.choice(ny.n, 5000, replace=False)
    res = kernels.solve(ny, s, method=method, backend="gpu", targets=t, stats_over=stats_over)
    check_matrix(ny, s, t, res, scipy_rows(ny, s), stats_over)
    # the same matrix, a second time: the selection is cached
    again = kernels.solve(ny, s[:40], method=method, backend="gpu", targets=t, stats_over=stats_over)
    assert np.array_equal(again.matrix, res.matrix[:40])
    if method == "phast" and stats_over == "targets":
        assert again.counters["select_ms"] == 0.0 and res.counters["selected_rows"] < ny.n
