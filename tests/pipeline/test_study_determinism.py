"""A study's results do not depend on how it is run (README: "a study killed at any point
... and resumed gives the same tables as an uninterrupted one", batches "a pure function of
the sources, their order and the batch size", every method exact for integer weights).

Integer weights, on local CPU clusters of 1, 2 and 3 workers: the statistics columns
``source``, ``reached``, ``eccentricity``, ``sum_distance``, ``mean_distance``, the distance
files (long and wide form, read back), a matrix study's matrix and ``summary.json``'s
diameter, radius, closeness, eccentricity and counts are IDENTICAL across worker counts,
batch sizes (1, 7, 64, default), ``order``, methods (dijkstra, phast@cpu, auto,
bellman-ford), a resumed run against a fresh one, a sources file with repeats against the
same ids once, and ``gpu_sssp.solve`` / ``gpu_sssp.matrix`` on the same sources.
Predecessor trees may differ between methods; each one the study wrote must satisfy
``dist[pred] + w(pred, v) == dist[v]`` and lead back to its source.

The graphs are small and full of ties: a grid and a random graph whose weights are 0, 1 or
2 (many zero-weight arcs), so that many sources share an eccentricity or a closeness.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import cpu_client, local_cpu_cluster, rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

STATS = ("source", "reached", "eccentricity", "sum_distance", "mean_distance")
#: summary.json's deterministic keys (the rest: ids, timings, algorithms, devices)
SUMMARY = ("vertices", "arcs", "sources_planned", "sources_solved", "complete", "sources_reaching_all",
           "eccentricity_max", "diameter", "radius", "closeness_max", "closeness_min", "reached_total")


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def client():
    yield from cpu_client(2, logging.ERROR)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """``grid``: an undirected 12 x 15 grid, weights 0 or 1 (road-like: phast takes it);
    ``random``: a directed G(n, m), 250 vertices, weights 0..2; ``rome``: rome99."""
    from gpu_sssp.pipeline import generate

    folder = tmp_path_factory.mktemp("determinism-graphs")
    src, dst, w, n = generate.grid(12, 15, seed=1, weights=(0, 1))
    generate.write(folder / "grid.parquet", src, dst, w, n, directed=False)
    src, dst, w, n = generate.random_graph(250, 1500, seed=3, weights=(0, 2))
    generate.write(folder / "random.parquet", src, dst, w, n, directed=True)
    return {"grid": folder / "grid.parquet", "random": folder / "random.parquet", "rome": rome_parquet(folder)}


def _study(client, graph, out, **kw):
    import gpu_sssp

    gpu_sssp.study(str(graph), out=str(out), client=client, **kw)
    return Path(out)


# ----------------------------------------------------------------------------- readers
def _stats(out) -> dict:
    t = pq.read_table(Path(out) / "stats").sort_by("source")
    return {c: t.column(c).to_numpy(zero_copy_only=False) for c in STATS}


def _summary(out) -> dict:
    s = json.loads((Path(out) / "summary.json").read_text())
    return {k: s.get(k) for k in SUMMARY}


def _distances(out):
    """``(source, vertex, distance, predecessor)`` of every reached pair in the study's
    distance files (long or wide form, with its ``predecessors/`` files), sorted."""
    cols = [[], [], [], []]
    for f in sorted((Path(out) / "distances").glob("batch-*.parquet")):
        t = pq.read_table(f)
        if "distance" in t.column_names:  # long form
            for acc, c in zip(cols, ("source", "vertex", "distance", "predecessor")):
                acc.append(t.column(c).to_numpy())
            continue
        vertex = t.column("vertex").to_numpy()
        pf = Path(out) / "predecessors" / f.name
        pt = pq.read_table(pf) if pf.exists() else None
        if pt is not None:
            assert np.array_equal(pt.column("vertex").to_numpy(), vertex)
        for name in t.column_names:
            if name == "vertex":
                continue
            d = t.column(name).to_numpy()
            m = np.isfinite(d)
            cols[0].append(np.full(int(m.sum()), int(name)))
            cols[1].append(vertex[m])
            cols[2].append(d[m])
            cols[3].append(pt.column(name).to_numpy()[m] if pt is not None else np.full(int(m.sum()), -1))
    s, v, d, p = (np.concatenate(c) for c in cols)
    o = np.lexsort((v, s))
    return s[o], v[o], d[o], p[o]


def _check_tree(graph_path, s, v, d, p):
    """Every predecessor written satisfies the invariant, and every chain ends at its source."""
    from gpu_sssp.pipeline.graph import read_parquet

    g = read_parquet(graph_path)
    base = g.id_base
    w = {}
    for u in range(g.n):
        for k in range(g.indptr[u], g.indptr[u + 1]):
            key = (u + base, int(g.indices[k]) + base)
            w[key] = min(w.get(key, np.inf), g.weights[k])
    dist = {(a, b): x for a, b, x in zip(s.tolist(), v.tolist(), d.tolist())}
    pred = {(a, b): x for a, b, x in zip(s.tolist(), v.tolist(), p.tolist())}
    for (a, b), x in pred.items():
        if a == b:
            assert x == -1 and dist[a, b] == 0, (a, b, x)
            continue
        assert x != -1 and (a, x) in dist, f"source {a} vertex {b}: predecessor {x} not reached"
        assert dist[a, x] + w[x, b] == dist[a, b], f"source {a} vertex {b}: dist[pred] + w != dist"
    for (a, b) in pred:
        steps, x = 0, b
        while x != a:
            x = pred[a, x]
            steps += 1
            assert x != -1 and steps <= g.n, f"source {a}: the chain from {b} does not end at it"


def _same(ref, other, what):
    for c in STATS:
        assert np.array_equal(ref[c], other[c], equal_nan=True), f"{what}: stats column {c} differs"


def _same_summary(ref, other, what):
    for k in SUMMARY:
        assert ref[k] == other[k], f"{what}: summary {k} differs: {other[k]} against {ref[k]}"


# ------------------------------------------------------------------------------- tests
def test_summary_picks_the_same_source_among_ties_whatever_the_batch_order():
    """Diameter, radius, closeness and eccentricity extremes shared by several sources name
    the smallest source id, not the first in the study's batch order (``--order``, batch
    size and layout): two runs of the same study gave other sources in summary.json."""
    import pyarrow as pa

    from gpu_sssp.kernels.result import STATS_SCHEMA
    from gpu_sssp.pipeline.study.summary import summarize

    class G:
        n, m, id_base, name, has_negative = 4, 6, 0, "g", False

    class P:
        graph, study_id, targets = G(), "x", None

        class sources:
            count = 4

    rows = {"source": [0, 1, 2, 3], "reached": [4] * 4, "eccentricity": [5.0, 3.0, 5.0, 3.0],
            "sum_distance": [9.0, 6.0, 9.0, 6.0], "mean_distance": [3.0, 2.0, 3.0, 2.0],
            "iterations": [0] * 4, "relaxations": [0] * 4, "kernel_ms": [0.0] * 4, "device": ["cpu"] * 4,
            "worker": ["0"] * 4, "algorithm": ["dijkstra"] * 4, "mteps": [0.0] * 4}
    table = pa.table(rows, schema=STATS_SCHEMA)
    got = [summarize(table.take(order), P()) for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 3, 0, 1])]
    for s in got:
        assert s["diameter"]["source"] == 0 and s["eccentricity_max"]["source"] == 0
        assert s["radius"]["source"] == 1 and s["closeness_max"]["source"] == 1
        assert s["closeness_min"]["source"] == 0


def test_integer_results_do_not_depend_on_workers_batches_order_or_method(client, graphs, tmp_path):
    """Statistics and summary of every source of the zero-weight grid and random graph,
    identical on 1, 2 and 3 workers, batch sizes 1, 7, 64 and the default, both orders
    and every CPU method (phast on the road-like grid only)."""
    runs = {
        "grid": [dict(), dict(algorithm="dijkstra", batch_size=7), dict(algorithm="phast", batch_size=1, order="given"),
                 dict(algorithm="bellman-ford", batch_size=64, order="given"), dict(algorithm="phast", batch_size=64)],
        "random": [dict(), dict(algorithm="bellman-ford", batch_size=7, order="given"),
                   dict(algorithm="dijkstra", batch_size=1), dict(algorithm="dijkstra", batch_size=64, order="given")],
    }
    refs = {}
    for name, kws in runs.items():
        for i, kw in enumerate(kws):
            out = _study(client, graphs[name], tmp_path / f"{name}-{i}", sources="all", **kw)
            got = _stats(out), _summary(out)
            if name not in refs:
                refs[name] = got
                continue
            _same(refs[name][0], got[0], f"{name} {kw}")
            _same_summary(refs[name][1], got[1], f"{name} {kw}")
    # one and three workers (the default batches are laid out for the workers)
    for n in (1, 3):
        cluster, other = local_cpu_cluster(n, logging.ERROR)
        try:
            for name, kw in (("grid", dict(order="given")), ("random", dict(batch_size=7))):
                out = _study(other, graphs[name], tmp_path / f"{name}-w{n}", sources="all", **kw)
                _same(refs[name][0], _stats(out), f"{name} on {n} workers")
                _same_summary(refs[name][1], _summary(out), f"{name} on {n} workers")
        finally:
            other.close()
            cluster.close()


def test_rome_sample_equals_solve_for_every_method_and_batch_size(client, graphs, tmp_path):
    """150 random rome99 sources: every method and batch size gives the statistics that
    ``gpu_sssp.solve`` gives for the same sources."""
    import gpu_sssp

    g = gpu_sssp.read_parquet(str(graphs["rome"]))
    ref = None
    for i, kw in enumerate((dict(), dict(algorithm="dijkstra", batch_size=1), dict(algorithm="phast", batch_size=7),
                            dict(algorithm="bellman-ford", batch_size=64, order="given"))):
        got = _stats(_study(client, graphs["rome"], tmp_path / f"rome-{i}", random=150, seed=4, **kw))
        if ref is None:
            ref = got
            res = gpu_sssp.solve(g, g.to_index(got["source"]), method="dijkstra", backend="cpu", distances=False)
            t = res.stats_table().sort_by("source")
            _same({c: t.column(c).to_numpy(zero_copy_only=False) for c in STATS}, got, "gpu_sssp.solve")
        _same(ref, got, f"rome {kw}")


def test_distance_files_long_and_wide_hold_the_same_pairs_and_valid_trees(client, graphs, tmp_path):
    """Distances read back from the files, long and wide form, every method: the same
    (source, vertex, distance) set, equal to ``gpu_sssp.solve``'s; every predecessor
    tree written is valid (the invariant, chains that end at the source)."""
    import gpu_sssp

    for name, methods in (("grid", ("phast", "dijkstra", "bellman-ford")), ("random", ("auto", "bellman-ford"))):
        path = graphs[name]
        g = gpu_sssp.read_parquet(str(path))
        ref = None
        for i, (method, form, bs) in enumerate(zip(methods * 2, ("long", "wide") * 3, (None, 7, 64, 1, None, 7))):
            out = _study(client, path, tmp_path / f"{name}-{i}", random=40, seed=2, algorithm=method,
                         outputs="stats,predecessors", distance_form=form, batch_size=bs)
            s, v, d, p = _distances(out)
            _check_tree(path, s, v, d, p)
            if ref is None:
                ref = s, v, d
                res = gpu_sssp.solve(g, g.to_index(np.unique(s)), method="dijkstra", backend="cpu")
                t = res.to_table().sort_by([("source", "ascending"), ("vertex", "ascending")])
                for a, c in zip(ref, ("source", "vertex", "distance")):
                    assert np.array_equal(a, t.column(c).to_numpy()), f"{name}: {c} against gpu_sssp.solve"
            for a, b, c in zip(ref, (s, v, d), ("source", "vertex", "distance")):
                assert np.array_equal(a, b), f"{name} {method} {form} batch {bs}: {c} differs"


class _Stop(Exception):
    pass


def test_a_resumed_study_gives_the_tables_of_an_uninterrupted_one(client, graphs, tmp_path):
    """A study stopped after its first batches, then resumed: statistics, summary and
    distance files equal to those of the same study run in one go."""
    kw = dict(sources="all", algorithm="dijkstra", batch_size=7, outputs="stats,distances")
    whole = _study(client, graphs["random"], tmp_path / "whole", **kw)

    def stop(meta, folder):
        if len(folder.done) >= 3:
            raise _Stop()

    with pytest.raises(_Stop):
        _study(client, graphs["random"], tmp_path / "cut", on_batch=stop, **kw)
    cut = tmp_path / "cut"
    assert json.loads((cut / "manifest.json").read_text())["status"] != "complete"
    _study(client, graphs["random"], cut, resume=True, **kw)
    _same(_stats(whole), _stats(cut), "resumed")
    _same_summary(_summary(whole), _summary(cut), "resumed")
    for a, b in zip(_distances(whole), _distances(cut)):
        assert np.array_equal(a, b)


def test_a_sources_file_with_repeats_gives_the_study_of_the_ids_once(client, graphs, tmp_path):
    """README: repeated sources are solved once. A sources file naming ids twice gives the
    statistics, summary and distances of the same ids listed once."""
    ids = [5, 17, 5, 200, 17, 3, 99, 3, 3, 120, 240, 0]
    once = list(dict.fromkeys(ids))
    (tmp_path / "twice.txt").write_text("".join(f"{i}\n" for i in ids))
    (tmp_path / "once.txt").write_text("".join(f"{i}\n" for i in sorted(once)))
    twice = _study(client, graphs["random"], tmp_path / "twice", sources_file=str(tmp_path / "twice.txt"),
                   outputs="stats,distances", batch_size=4)
    single = _study(client, graphs["random"], tmp_path / "once", sources_file=str(tmp_path / "once.txt"),
                    outputs="stats,distances", order="given")
    assert len(_stats(twice)["source"]) == len(once)
    _same(_stats(single), _stats(twice), "sources file with repeats")
    _same_summary(_summary(single), _summary(twice), "sources file with repeats")
    for a, b in zip(_distances(single), _distances(twice)):
        assert np.array_equal(a, b)
    manifest = json.loads((twice / "manifest.json").read_text())
    assert manifest["sources"]["duplicates_dropped"] == len(ids) - len(once)


def _matrix(out):
    """{(source, target): distance} of a matrix study's files, wide or long form."""
    out = Path(out)
    cols = pq.read_table(out / "targets.parquet").sort_by("column").column("target").to_numpy()
    cells = {}
    for f in sorted((out / "matrix").glob("batch-*.parquet")):
        t = pq.read_table(f)
        if "target" in t.column_names:
            for s, x, d in zip(*(t.column(c).to_pylist() for c in ("source", "target", "distance"))):
                assert cells.setdefault((s, x), d) == d  # repeated targets: one value
        else:
            for s, row in zip(t.column("source").to_pylist(), t.column("distance").to_pylist()):
                assert len(row) == len(cols)
                for x, d in zip(cols.tolist(), row):
                    assert cells.setdefault((s, x), d) == d
    return cells


def test_matrix_study_is_the_same_matrix_however_it_is_run(client, graphs, tmp_path):
    """A travel-time matrix study (targets with a repeat): the same cells in wide and long
    form, for every batch size, order and method, and equal to ``gpu_sssp.matrix``."""
    import gpu_sssp

    targets = [3, 40, 3, 77, 150, 1, 249]
    ref = None
    for i, kw in enumerate((dict(), dict(matrix_form="long", batch_size=1, algorithm="bellman-ford"),
                            dict(batch_size=7, order="given", algorithm="dijkstra"))):
        out = _study(client, graphs["random"], tmp_path / f"m{i}", random=30, seed=5, targets=targets, **kw)
        got = _matrix(out), _stats(out), _summary(out)
        if ref is None:
            ref = got
            srcs = sorted({s for s, _ in got[0]})
            m = gpu_sssp.matrix(str(graphs["random"]), srcs, targets, backend="cpu")
            assert {(s, x): float(m[i, j]) for i, s in enumerate(srcs) for j, x in enumerate(targets)} == got[0]
            continue
        assert got[0] == ref[0], f"matrix {kw}"
        _same(ref[1], got[1], f"matrix {kw}")
        _same_summary(ref[2], got[2], f"matrix {kw}")


def test_real_weights_same_on_cpu_however_the_study_is_run(client, graphs, tmp_path):
    """float64 weights (0..1, so near-ties): on CPU workers the statistics, summary and
    distances are identical across batch sizes, orders, worker layouts and between
    dijkstra and bellman-ford (0 ulp measured; the README promises rtol 1e-12 across
    methods, GPU ones included: ``test_study_determinism_gpu``)."""
    from gpu_sssp.pipeline import generate

    src, dst, w, n = generate.random_graph(300, 2400, seed=4, weights=(0.0, 1.0), weight_type="float64")
    path = tmp_path / "float.parquet"
    generate.write(path, src, dst, w, n, directed=True)
    ref = None
    for i, kw in enumerate((dict(), dict(algorithm="bellman-ford", batch_size=7, order="given"),
                            dict(algorithm="dijkstra", batch_size=1, distance_form="wide"))):
        out = _study(client, path, tmp_path / f"f{i}", sources="all", outputs="stats,distances", **kw)
        got = _stats(out), _summary(out), _distances(out)[:3]
        if ref is None:
            ref = got
            continue
        _same(ref[0], got[0], f"float {kw}")
        _same_summary(ref[1], got[1], f"float {kw}")
        for a, b in zip(ref[2], got[2]):
            assert np.array_equal(a, b), f"float {kw}: distances differ"
