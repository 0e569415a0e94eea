"""The GPU side of ``test_study_determinism``: a study on one GPU (``phast`` and
``batched``), and ``gpu_sssp.solve(backend="gpu")``, give the CPU's results.

Integer weights: statistics, ``summary.json`` and the distance files (long and wide form,
read back) IDENTICAL to the CPU study's / SciPy's; the predecessor trees the GPU wrote are
valid (the invariant, chains that end at the source).  Real weights: the README's
tolerances (sums and means float64 in each method's order of additions: rtol 1e-12 for
float64 weights), and the largest difference in ulps is printed (``-s``) for the record.

One GPU, small graphs: well under a minute on an H100/H200 (most of it the local CUDA
cluster's start and the kernels' compilation).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.pipeline.test_study_determinism import (STATS, _check_tree, _distances, _same, _same_summary, _stats,
                                                   _summary)
from tests.pipeline.test_study_support import rome_parquet

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    from gpu_sssp.pipeline import generate

    folder = tmp_path_factory.mktemp("determinism-gpu-graphs")
    src, dst, w, n = generate.grid(12, 15, seed=1, weights=(0, 1))
    generate.write(folder / "grid.parquet", src, dst, w, n, directed=False)
    src, dst, w, n = generate.random_graph(250, 1500, seed=3, weights=(0, 2))
    generate.write(folder / "random.parquet", src, dst, w, n, directed=True)
    src, dst, w, n = generate.random_graph(300, 2400, seed=4, weights=(0.0, 1.0), weight_type="float64")
    generate.write(folder / "float.parquet", src, dst, w, n, directed=True)
    return {"grid": folder / "grid.parquet", "random": folder / "random.parquet", "rome": rome_parquet(folder),
            "float": folder / "float.parquet"}


@pytest.fixture(scope="module")
def gpu_client():
    pytest.importorskip("dask_cuda")
    from gpu_sssp.pipeline.cluster import start_cluster

    handle = start_cluster(gpus="0", dashboard=False)
    try:
        yield handle.client
    finally:
        handle.close()


@pytest.fixture(scope="module")
def cpu_refs(graphs, tmp_path_factory):
    """The CPU study of every source of each integer graph (one CPU worker), with
    distances: the reference."""
    import gpu_sssp

    folder = tmp_path_factory.mktemp("determinism-cpu-ref")
    refs = {}
    for name in ("grid", "random", "float"):
        out = folder / name
        gpu_sssp.study(str(graphs[name]), sources="all", algorithm="dijkstra", outputs="stats,distances",
                       cpu_workers=1, out=str(out))
        refs[name] = out
    return refs


def _ulps(a, b) -> int:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    m = np.isfinite(a) & np.isfinite(b)
    return int(np.abs(a[m].view(np.int64) - b[m].view(np.int64)).max(initial=0))


def test_gpu_study_equals_the_cpu_study_for_integer_weights(gpu_client, graphs, cpu_refs, tmp_path):
    import gpu_sssp

    runs = [("grid", dict(algorithm="phast")), ("grid", dict(algorithm="phast", batch_size=7, order="given")),
            ("grid", dict(algorithm="batched")), ("random", dict(algorithm="batched", batch_size=64)),
            ("random", dict(algorithm="auto"))]
    for i, (name, kw) in enumerate(runs):
        out = tmp_path / f"stats-{i}"
        gpu_sssp.study(str(graphs[name]), sources="all", out=str(out), client=gpu_client, **kw)
        _same(_stats(cpu_refs[name]), _stats(out), f"GPU {name} {kw}")
        _same_summary(_summary(cpu_refs[name]), _summary(out), f"GPU {name} {kw}")
    # distances, long and wide form, with predecessors: the CPU's pairs, valid trees
    for i, (name, method, form) in enumerate((("grid", "phast", "long"), ("grid", "batched", "wide"),
                                              ("random", "batched", "long"))):
        out = tmp_path / f"dist-{i}"
        gpu_sssp.study(str(graphs[name]), sources="all", out=str(out), client=gpu_client, algorithm=method,
                       outputs="stats,predecessors", distance_form=form, batch_size=64)
        ref = _distances(cpu_refs[name])
        got = _distances(out)
        for a, b, c in zip(ref[:3], got[:3], ("source", "vertex", "distance")):
            assert np.array_equal(a, b), f"GPU {name} {method} {form}: {c} differs from the CPU study's"
        _check_tree(graphs[name], *got)
        _same(_stats(cpu_refs[name]), _stats(out), f"GPU {name} {method} {form}")


def test_gpu_solve_equals_the_cpu_for_integer_weights(graphs):
    import gpu_sssp

    for name, methods in (("rome", ("phast", "batched")), ("random", ("batched",))):
        g = gpu_sssp.read_parquet(str(graphs[name]))
        src = np.arange(0, g.n, max(1, g.n // 200))
        ref = gpu_sssp.solve(g, src, method="dijkstra", backend="cpu")
        for method in methods:
            for distances in (False, True):
                res = gpu_sssp.solve(g, src, method=method, backend="gpu", distances=distances)
                for c in ("reached", "eccentricity", "sum_distance"):
                    assert np.array_equal(getattr(ref, c), getattr(res, c)), f"{name} {method} {c}"
                if distances:
                    assert np.array_equal(ref.distances, res.distances), f"{name} {method} distances"


def test_gpu_study_with_real_weights_within_the_readme_tolerance(gpu_client, graphs, cpu_refs, tmp_path):
    """float64 weights: reached identical; eccentricity, sums and means within rtol 1e-12
    of the CPU's (README: each method's order of additions); the distances too."""
    import gpu_sssp

    out = tmp_path / "float"
    gpu_sssp.study(str(graphs["float"]), sources="all", out=str(out), client=gpu_client, algorithm="batched",
                   outputs="stats,distances", batch_size=64)
    ref, got = _stats(cpu_refs["float"]), _stats(out)
    assert np.array_equal(ref["source"], got["source"]) and np.array_equal(ref["reached"], got["reached"])
    for c in STATS[2:]:
        np.testing.assert_allclose(got[c], ref[c], rtol=1e-12, err_msg=c)
        print(f"float64 batched vs CPU {c}: largest difference {_ulps(ref[c], got[c])} ulp")
    rd, gd = _distances(cpu_refs["float"]), _distances(out)
    assert np.array_equal(rd[0], gd[0]) and np.array_equal(rd[1], gd[1])
    np.testing.assert_allclose(gd[2], rd[2], rtol=1e-12)
    print(f"float64 batched vs CPU distances: largest difference {_ulps(rd[2], gd[2])} ulp")


def test_gpu_float32_weights_within_the_readme_tolerance(gpu_client, tmp_path):
    """float32 weights: the README's rtol 1e-5 for sums and means against the CPU (SciPy,
    float64 arithmetic); the largest differences in ulps (float64) are printed."""
    import gpu_sssp
    from gpu_sssp.pipeline import generate

    src, dst, w, n = generate.random_graph(300, 2400, seed=6, weights=(0.0, 1.0), weight_type="float32")
    path = tmp_path / "float32.parquet"
    generate.write(path, src, dst, w, n, directed=True)
    out = tmp_path / "f32"
    gpu_sssp.study(str(path), sources="all", out=str(out), client=gpu_client, algorithm="batched", batch_size=64)
    got = _stats(out)
    g = gpu_sssp.read_parquet(str(path))
    ref = gpu_sssp.solve(g, g.to_index(got["source"]), method="dijkstra", backend="cpu")
    assert np.array_equal(got["reached"], ref.reached)
    for c, want in (("eccentricity", ref.eccentricity), ("sum_distance", ref.sum_distance),
                    ("mean_distance", ref.mean_distance())):
        np.testing.assert_allclose(got[c], want, rtol=1e-5, err_msg=c)
        print(f"float32 batched vs CPU {c}: largest difference {_ulps(want, got[c])} ulp (float64)")
