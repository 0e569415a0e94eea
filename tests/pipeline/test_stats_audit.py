"""Statistics audit: per-source statistics and the study summary against their README
definitions, computed independently from SciPy's all-pairs distances."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

CPU_METHODS = ("dijkstra", "bellman-ford", "phast", "auto")


def _reference(src, dst, w, n):
    """(reached, eccentricity, sum) per source from SciPy's Dijkstra, lightest parallel arc."""
    best = {}
    for a, b, x in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(w).tolist()):
        best[(a, b)] = min(best.get((a, b), np.inf), x)
    rows = [k[0] for k in best] or [0]
    cols = [k[1] for k in best] or [0]
    vals = list(best.values()) or [np.inf]
    mat = sp.csr_array((np.array(vals, float), (rows, cols)), shape=(n, n))
    if not best:
        mat = sp.csr_array((n, n))
    dist = csg.dijkstra(mat, directed=True)
    fin = np.isfinite(dist)
    return fin.sum(1), np.where(fin, dist, -np.inf).max(1), np.where(fin, dist, 0.0).sum(1)


GRAPHS = {
    # name: (src, dst, weights, n)
    "unreachable parts and an isolated vertex": ([0, 1, 2, 3], [1, 2, 0, 2], [3, 4, 5, 1], 5),
    "zero-weight arcs": ([0, 1, 1, 2], [1, 0, 2, 3], [0, 0, 7, 0], 4),
    "all-zero weights": ([0, 1, 2], [1, 2, 0], [0, 0, 0], 3),
    "one vertex": ([], [], [], 1),
    "no arcs": ([], [], [], 4),
    "parallel arcs and loops": ([0, 0, 1, 1], [1, 1, 0, 1], [5, 2, 9, 4], 3),
}


@pytest.mark.parametrize("id_base", [0, 1])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_cpu_methods_statistics_equal_scipy_definitions(name, id_base):
    """reached / eccentricity / sum / mean of every CPU method equal the definitions over
    SciPy's distances, sources as file ids, on small graphs with awkward corners."""
    from gpu_sssp.kernels import solve
    from gpu_sssp.kernels.graph import Graph

    src, dst, w, n = GRAPHS[name]
    g = Graph.from_edges(np.array(src, np.int64), np.array(dst, np.int64), np.array(w, np.int64), n=n,
                         id_base=id_base, name="audit")
    reached, ecc, total = _reference(src, dst, w, n)
    with np.errstate(all="ignore"):
        mean = np.where(reached > 1, total / np.maximum(reached - 1, 1), np.nan)
    for method in CPU_METHODS:
        res = solve(g, np.arange(n), method=method, backend="cpu")
        t = res.stats_table()
        assert t.column("source").to_pylist() == list(range(id_base, n + id_base)), method
        assert t.column("reached").to_pylist() == reached.tolist(), method
        assert np.array_equal(t.column("eccentricity").to_numpy(), ecc), method
        assert np.array_equal(t.column("sum_distance").to_numpy(), total), method
        assert res.sum_distance.dtype == np.int64, method  # exact integer sums
        assert np.array_equal(t.column("mean_distance").to_numpy(), mean, equal_nan=True), method


def test_integer_sum_past_2_53_is_the_exact_sum_correctly_rounded():
    """A sum taken in 32-bit halves (its ceiling past 2**62) is the exact sum rounded once:
    the low half's sum of 2**22 + 1 distances passed 2**53 and was rounded to float64
    before the high half was added (a second rounding): 13,301,411,802,290,636 x 10**6
    instead of the correctly rounded ...638 x 10**6."""
    from gpu_sssp.kernels.result import reduce_distances

    copies = (1 << 22) + 1
    a = 738376 * 2**32 + 2173698049  # a distance below 2**53
    dist = np.full((1, copies + 1), float(a))
    dist[0, 0] = 0.0  # the source
    reached, ecc, total = reduce_distances(dist, integer=True)
    assert reached[0] == copies + 1 and ecc[0] == float(a)
    assert float(total[0]) == float(copies * a)  # Python's int -> float rounds once, to nearest
    # negative distances too (the halves of a negative int64 are a negative high, a positive low)
    reached, ecc, total = reduce_distances(-dist, integer=True)
    assert float(total[0]) == float(-copies * a)


def _summary(kind, sources, reached, ecc, sdist, *, n):
    from gpu_sssp.pipeline.study.summary import summarize

    k = len(sources)
    stats = pa.table({"source": np.array(sources, dtype=np.int64), "reached": np.array(reached, dtype=np.int64),
                      "eccentricity": np.array(ecc, dtype=float), "sum_distance": np.array(sdist, dtype=float),
                      "kernel_ms": np.zeros(k), "relaxations": np.zeros(k, dtype=np.int64),
                      "algorithm": ["dijkstra"] * k, "device": ["cpu"] * k})
    g = SimpleNamespace(n=n, m=3, name="g", id_base=0, has_negative=False)
    plan = SimpleNamespace(graph=g, sources=SimpleNamespace(how={"kind": kind}, count=k), study_id="x",
                           targets=None, stats_over="")
    s = summarize(stats, plan)
    json.dumps(s, allow_nan=False)
    return s


@pytest.mark.parametrize("kind", ["list", "file", "random"])
def test_sources_naming_every_vertex_give_an_exact_diameter_and_radius(kind):
    """README: the diameter is exact "when every vertex was a source", the radius exact
    likewise.  A cycle 0 -> 1 -> 2 -> 0 (weights 2, 3, 4) solved from --source 0 1 2 (or a
    sources file naming all three) reported them as a lower / upper bound, as a sample."""
    s = _summary(kind, [0, 1, 2], [3, 3, 3], [5, 7, 6], [7, 10, 10], n=3)
    assert s["diameter"] == {"value": 7, "source": 1, "kind": "exact"}
    assert s["radius"] == {"value": 5, "source": 0, "kind": "exact"}
    # none reaching all, every vertex a source: the radius is infinite, not unknown
    s = _summary(kind, [0, 1, 2], [2, 1, 1], [4, 0, 0], [4, 0, 0], n=3)
    assert s["radius"] == {"value": None, "kind": "infinite (no vertex reaches every other)"}
    # two of three vertices: still bounds
    s = _summary(kind, [0, 1], [3, 3], [5, 7], [7, 10], n=3)
    assert s["diameter"]["kind"] == "lower bound" and s["radius"]["kind"] == "upper bound"
