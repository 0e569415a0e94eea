"""The benchmark protocol (pipeline.bench_protocol) and its report (pipeline.bench_report), on CPU.

GPU methods are stood in for by CPU fakes registered under their names (and the
registry restored afterwards), so every section of the report - ablation, locality
k sweep, batched timing, edgelist scaling, speedup over harish - is exercised here.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels import cpu as kernels_cpu
from gpu_sssp.kernels import baselines as bl
from gpu_sssp.kernels import registry
from gpu_sssp.kernels.result import reduce_distances
from gpu_sssp.pipeline import bench_report as report
from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline.graph import Graph

HBF_SWITCHES = {"edge_classes", "dedup64", "coalesced_enqueue", "virtual_warps", "heavy_threshold", "hops"}
CALLS: list[dict] = []


# ----------------------------------------------------------------------------- fakes
def fake_solver(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """A stand-in for a GPU method: SciPy's answer, GPU-like counters, work counted on request."""
    bad = set(options) - HBF_SWITCHES - {"k"}
    if bad:
        raise TypeError(f"unknown option(s) {sorted(bad)}")
    CALLS.append({"sources": list(map(int, sources)), "count_work": count_work, **options})
    res = kernels_cpu.dijkstra(graph, sources, distances=distances)
    b = len(sources)
    res.counters.update(launches=4 * b, host_syncs=2 * b, kernel_ms=0.01 * b)
    if not count_work:  # like a GPU kernel that counts only when asked
        res.relaxations = np.zeros(b, dtype=np.int64)
        res.counters["relaxations"] = 0
    else:
        res.relaxations = res.relaxations * 3
    return res


def fake_no_k(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """An hbf without the ablation switches: every switch is an unknown option."""
    if options:
        raise TypeError(f"hbf takes no options here, got {sorted(options)}")
    return kernels_cpu.dijkstra(graph, sources, distances=distances)


def wrong_solver(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Plants a wrong answer: one reached vertex's distance is one too large."""
    res = kernels_cpu.dijkstra(graph, sources, distances=True)
    dist = res.distances.copy()
    for row, s in zip(dist, sources):
        fin = np.flatnonzero(np.isfinite(row))
        fin = fin[fin != s]
        if len(fin):
            row[fin[0]] += 1
    res.reached, res.eccentricity, res.sum_distance = reduce_distances(dist, integer=graph.integer_weights)
    res.distances = dist if distances else None
    return res


def swapping_solver(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Plants a wrong answer its statistics cannot show: two reached vertices' distances
    swapped (vertices reached, distance sum and eccentricity all stay the reference's),
    as a kernel that writes its distances in a reordered vertex numbering would."""
    res = kernels_cpu.dijkstra(graph, sources, distances=True)
    dist = res.distances.copy()
    for row in dist:
        fin = np.flatnonzero(np.isfinite(row))
        other = fin[row[fin] != row[fin[0]]]
        if len(other):
            row[fin[0]], row[other[0]] = row[other[0]], row[fin[0]]
    res.reached, res.eccentricity, res.sum_distance = reduce_distances(dist, integer=graph.integer_weights)
    res.distances = dist if distances else None
    return res


def wrong_when_solver(graph, sources, *, predecessors=False, distances=True, count_work=False, **options):
    """Right, except with k=2 (locality) or dedup64 off (hbf): then one distance too large."""
    if options.get("k") == 2 or options.get("dedup64") is False:
        return wrong_solver(graph, sources, distances=distances)
    if set(options) - HBF_SWITCHES - {"k"}:
        raise TypeError(f"unknown option(s) {sorted(options)}")
    return kernels_cpu.dijkstra(graph, sources, distances=distances)


def crashing_solver(graph, sources, **kw):
    raise RuntimeError("kernel exploded")


def refusing_solver(graph, sources, **kw):
    raise ValueError("this method needs unit weights")


def slow_solver(graph, sources, **kw):
    import time

    time.sleep(0.02)
    return kernels_cpu.dijkstra(graph, sources, distances=kw.get("distances", True))


@pytest.fixture
def registry_guard():
    saved = dict(registry._METHODS)
    saved_variants = {k: dict(v) for k, v in registry._VARIANTS.items()}
    CALLS.clear()
    yield registry
    registry._METHODS.clear()
    registry._METHODS.update(saved)
    registry._VARIANTS.clear()
    registry._VARIANTS.update(saved_variants)


@pytest.fixture
def fakes(registry_guard):
    for name in ("harish", "hbf", "locality", "edgelist", "batched"):
        # the fake replaces the GPU method (a name registered on both backends keeps its
        # GPU variant first, so drop that one for the test)
        registry_guard._VARIANTS.pop(name, None)
        registry_guard.register(name, "cpu", "tests.pipeline.test_bench:fake_solver")
    return registry_guard


# ----------------------------------------------------------------------------- graphs
def grid_graph(rows=12, cols=15, seed=3, name="grid") -> Graph:
    rng = np.random.default_rng(seed)
    idx = np.arange(rows * cols).reshape(rows, cols)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    w = rng.integers(1, 100, size=len(a))
    return Graph.from_edges(np.r_[a, b], np.r_[b, a], np.r_[w, w], rows * cols, directed=False, name=name)


def directed_graph() -> Graph:
    """A 40-vertex directed cycle (one SCC), a 10-vertex path into it, 5 isolated vertices."""
    cyc = np.arange(40)
    src = list(cyc) + list(range(40, 49)) + [49]
    dst = list(np.roll(cyc, -1)) + list(range(41, 50)) + [0]
    w = np.arange(1, len(src) + 1)
    return Graph.from_edges(src, dst, w, 55, name="dir")


def float_graph() -> Graph:
    g = grid_graph(6, 7, seed=9, name="fgrid")
    return Graph.from_edges(g.tails(), g.indices, g.weights.astype(np.float64) / 7.0, g.n, name="fgrid")


# ----------------------------------------------------------------------------- sources
def test_draw_sources_lowers_threshold_with_a_note():
    g = grid_graph()
    d = bm.draw_sources(g, 10, min_component=100_000, seed=1)
    assert len(d.sources) == 10 and len(set(d.sources.tolist())) == 10
    assert d.min_component == g.n // 2 and d.asked_min_component == 100_000
    assert any("lowered" in n for n in d.notes)
    again = bm.draw_sources(g, 10, min_component=100_000, seed=1)
    assert np.array_equal(d.sources, again.sources)  # seeded
    assert not np.array_equal(d.sources, bm.draw_sources(g, 10, min_component=1, seed=2).sources)


def test_draw_sources_respects_reachability_on_directed_graphs():
    import scipy.sparse.csgraph as csg

    g = directed_graph()
    d = bm.draw_sources(g, 6, min_component=45, seed=0)
    assert d.min_component == 45 and not d.notes
    mat = g.to_scipy()
    for s in d.sources:
        assert len(csg.breadth_first_order(mat, int(s), return_predecessors=False)) >= 45
    # only path vertices 40..45 reach 45 or more (the path's tail and the cycle's 40 reach fewer)
    assert sorted(d.sources.tolist()) == list(range(40, 46))
    # asking for more than qualify lowers the threshold until enough do
    many = bm.draw_sources(g, 30, min_component=45, seed=0)
    assert len(many.sources) == 30 and many.min_component < 45
    assert any("lowered" in n for n in many.notes)


def test_draw_sources_rejects_bad_counts():
    with pytest.raises(ValueError, match="at least 1"):
        bm.draw_sources(grid_graph(), 0)


# ----------------------------------------------------------------------------- checks
def test_answers_compare_exactly_for_integers_and_with_tolerance_for_reals():
    g = grid_graph()
    dist = np.array([0.0, 3.0, np.inf, 7.0])
    a = bm.answer_from_distances(dist, True)
    assert (a.reached, a.total, a.ecc, a.checksum) == (3, 10, 7.0, 13.0)
    assert bm.same_answer(bm.Answer(3, 10, 7.0), a, g)
    assert not bm.same_answer(bm.Answer(3, 11, 7.0), a, g)
    assert not bm.same_answer(bm.Answer(2, 10, 7.0), a, g)
    fg = float_graph()
    r = bm.Answer(3, 1.0 / 3.0, 0.5)
    assert bm.same_answer(bm.Answer(3, 1.0 / 3.0 + 1e-13, 0.5), r, fg)
    assert not bm.same_answer(bm.Answer(3, 0.34, 0.5), r, fg)


# ----------------------------------------------------------------------------- variants
def test_plan_variants_expands_sweep_ablation_and_baselines(fakes):
    vs = bm.plan_variants(["harish", "locality", "dijkstra"], ablation=["hbf"],
                          baselines=["scipy", "networkit"], locality_k=(1, 4))
    labels = [v.label for v in vs]
    assert labels == ["harish", "locality[k=1]", "locality[k=4]", "dijkstra", "hbf",
                      "hbf[edge_classes=off]", "hbf[dedup64=off]", "hbf[coalesced_enqueue=off]",
                      "hbf[virtual_warps=off]", "hbf[heavy_threshold=0]", "hbf[coalesced_enqueue=warp]",
                      "hbf[hops=1]", "scipy", "networkit"]
    assert [v.role for v in vs].count("ablation") == 7
    assert vs[-1].kind == "baseline"


def test_plan_variants_locality_ablation(fakes):
    """locality's ablation: its default run, then the resident arcs and the prefetch off,
    labelled by what they turn off in the report."""
    vs = bm.plan_variants(["locality"], ablation=["locality"], baselines=[], locality_k=(1, 2))
    assert [v.label for v in vs] == ["locality[k=1]", "locality[k=2]", "locality",
                                     "locality[resident=off]", "locality[prefetch=off]"]
    off = [v for v in vs if v.role == "ablation"]
    assert [v.ablates for v in off] == ["resident_arcs", "prefetch"]
    from gpu_sssp.pipeline.bench_report import _switch_name
    assert "block-resident" in _switch_name("resident", False)
    assert "prefetch" in _switch_name("prefetch", False)


@pytest.mark.parametrize("kw, match", [
    ({"algorithms": ["nope"]}, "unknown method"),
    ({"algorithms": ["auto"]}, "auto"),
    ({"algorithms": ["dijkstra"], "ablation": ["harish"]}, "no ablation"),
    ({"algorithms": ["dijkstra"], "baselines": ["boost"]}, "unknown baseline"),
])
def test_plan_variants_rejects_unknown_names(kw, match):
    algorithms = kw.pop("algorithms")
    with pytest.raises(ValueError, match=match):
        bm.plan_variants(algorithms, **kw)


# ----------------------------------------------------------------------------- baselines
@pytest.mark.parametrize("name", bl.BASELINES)
def test_baselines_match_scipy(name):
    g = directed_graph()
    why = bl.unavailable_reason(name, g)
    if why:
        pytest.skip(why)
    solve = bl.prepare(name, g)
    ref = bl.prepare("scipy", g)
    for s in (0, 45, 52):
        d, ms = solve(s)
        r, _ = ref(s)
        assert ms >= 0
        np.testing.assert_array_equal(d, r)


def test_baselines_refuse_negative_weights_with_a_reason():
    g = Graph.from_edges([0, 1], [1, 2], [3, -1], 3, name="neg")
    assert bl.unavailable_reason("scipy", g) is None
    d, _ = bl.prepare("scipy", g)(0)
    assert d.tolist() == [0.0, 3.0, 2.0]
    for name in ("networkit", "rustworkx"):
        assert bl.unavailable_reason(name, g)  # not installed, or negative weights
    with pytest.raises(ValueError, match="unknown baseline"):
        bl.prepare("boost", g)


# ----------------------------------------------------------------------------- end to end
def _run(graphs, algorithms, **kw):
    settings = bm.BenchSettings(**{"sources": 6, "min_component": 10, "seed": 0, **kw.pop("settings", {})})
    vs = bm.plan_variants(algorithms, **kw)
    events = []
    out = bm.run_benchmark(graphs, vs, settings, progress=lambda e, **i: events.append((e, i)))
    return out, events


def test_benchmark_rows_cover_every_variant_source_and_run(fakes, tmp_path):
    g, d = grid_graph(), directed_graph()
    out, events = _run([g, d], ["harish", "locality", "edgelist", "batched", "dijkstra", "bellman-ford"],
                       ablation=["hbf"], baselines=["scipy", "networkit", "rustworkx"],
                       locality_k=(1, 2, 3), settings={"runs": 2, "batch_size": 4})
    t = out.table
    assert t.schema.equals(bm.ROW_SCHEMA)
    assert out.failures == 0, [r["error"] for r in t.to_pylist() if not r["ok"]]
    rows = t.to_pylist()
    n_base = 1 + sum(bl.unavailable_reason(b, g) is None for b in ("networkit", "rustworkx"))
    per_graph = (1 + 3 + 1 + 1 + 2 + 1 + 7 + n_base) * 6 * 2  # 7 ablation rows
    assert len(rows) == 2 * per_graph
    # the same sources for every variant of a graph
    for gname in ("grid", "dir"):
        by_var = {}
        for r in rows:
            if r["graph"] == gname:
                by_var.setdefault(r["variant"], set()).add(r["source"])
        assert len({frozenset(s) for s in by_var.values()}) == 1
    # batched: 6 sources in calls of 4 and 2, time divided per source
    br = [r for r in rows if r["algorithm"] == "batched"]
    assert sorted({r["batch_size"] for r in br}) == [2, 4]
    assert all(r["launches"] == 4.0 and r["host_syncs"] == 2.0 for r in br)
    # relaxations came from one untimed counting pass per source (not counted twice)
    fr = [r for r in rows if r["variant"] == "harish"]
    assert all(r["relaxations"] and r["relaxations"] > 0 for r in fr)
    counting = [c for c in CALLS if c["count_work"] and not c.get("k") and not (set(c) & HBF_SWITCHES)]
    assert counting, "no counting pass made"
    assert all(r["edges_per_s"] > 0 and r["mteps"] > 0 for r in fr)
    # checksums equal the reference and carry file ids
    assert all(r["checksum"] == r["ref_checksum"] for r in rows)
    assert {r["source"] for r in rows if r["graph"] == "grid"} <= set(range(g.n))
    assert {r["ok"] for r in rows} == {True}
    assert ("graph", {"name": "grid", "total": 6 * (1 + 2 * (per_graph // 12))}) in events
    steps = sum(i["advance"] for e, i in events if e == "step")
    assert steps == 2 * 6 * (1 + 2 * (per_graph // 12))
    versions = json.loads(rows[0]["versions"])
    assert "numpy" in versions and "scipy" in versions

    ctx = report.context_of(out)
    report.write_rows(t, tmp_path / "rows.parquet", ctx)
    written = report.write_report(t, ctx, tmp_path)
    text = written["summary"].read_text()
    for heading in ("## Graphs", "## Correctness", "## Time per algorithm and graph", "## Speedup",
                    "## Ablation", "## locality: time versus k", "## edgelist: edges per second"):
        assert heading in text, heading
    assert "hbf" in text and "dedup64" in text and "k=3" in text
    pytest.importorskip("matplotlib")
    names = {p.name for p in written["plots"]}
    assert names == set(report.PLOT_FILES.values())
    for p in written["plots"]:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_speedups_are_ratios_of_means_in_the_same_run(fakes):
    out, _ = _run([grid_graph()], ["harish", "dijkstra"], baselines=["scipy"])
    agg = report.aggregate(out.table)
    mean = {a["variant"]: a["mean_ms"] for a in agg}
    sp = {s["variant"]: s for s in report.speedups(agg)}
    assert sp["dijkstra"]["vs_harish"] == pytest.approx(mean["harish"] / mean["dijkstra"])
    assert sp["dijkstra"]["vs_scipy"] == pytest.approx(mean["scipy"] / mean["dijkstra"])
    assert sp["scipy"]["vs_scipy"] == pytest.approx(1.0)


def test_planted_wrong_answer_marks_rows_and_the_outcome(registry_guard):
    registry_guard.register("wrong", "cpu", "tests.pipeline.test_bench:wrong_solver")
    out, _ = _run([grid_graph()], ["dijkstra", "wrong"], baselines=["scipy"])
    rows = out.table.to_pylist()
    bad = [r for r in rows if r["algorithm"] == "wrong"]
    assert bad and not any(r["ok"] for r in bad)
    assert all("wrong answer" in r["error"] for r in bad)
    assert all(r["checksum"] == r["ref_checksum"] + 1 for r in bad)
    assert all(r["ok"] for r in rows if r["algorithm"] != "wrong")
    assert out.failures == len(bad)
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "FAILED" in text and "wrong" in text


@pytest.mark.parametrize("batched", [False, True])
def test_wrong_distances_with_the_right_statistics_are_caught(registry_guard, batched):
    """The check compared only vertices reached, distance sum and eccentricity: a method
    whose distances sit at the wrong vertices passed every row (ok=True, its speedup in
    the tables).  Its distance vectors are now checked against SciPy's too."""
    name = "batched" if batched else "swapper"
    if batched:
        registry_guard._VARIANTS.pop(name, None)
    registry_guard.register(name, "cpu", "tests.pipeline.test_bench:swapping_solver")
    out, _ = _run([grid_graph()], [name, "dijkstra"], baselines=["scipy"])
    rows = out.table.to_pylist()
    bad = [r for r in rows if r["algorithm"] == name]
    assert len(bad) == 6
    assert all(r["checksum"] == r["ref_checksum"] for r in bad)  # the statistics agree
    assert not any(r["ok"] for r in bad)
    assert all("wrong distance" in r["error"] for r in bad)
    assert all(r["ok"] for r in rows if r["algorithm"] != name)
    assert out.failures == len(bad)
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "FAILED" in text and "wrong distance" in text
    good, _ = _run([grid_graph()], ["dijkstra"], baselines=["scipy"])
    assert "whole distance vectors" in report.summary_markdown(good.table, report.context_of(good))


def test_a_wrong_method_gets_no_speedup(registry_guard):
    """A fast wrong answer must not become a ratio: the Speedup table (and the stdout
    table and speedup.png, which read report.speedups) printed the wrong method's
    ratio like any other."""
    registry_guard.register("wrong", "cpu", "tests.pipeline.test_bench:wrong_solver")
    out, _ = _run([grid_graph()], ["dijkstra", "wrong"], baselines=["scipy"])
    agg = report.aggregate(out.table)
    sp = {s["variant"]: s for s in report.speedups(agg)}
    assert sp["dijkstra"]["vs_scipy"] is not None
    assert sp["wrong"]["vs_scipy"] is None and sp["wrong"]["failures"] == 6
    text = report.summary_markdown(out.table, report.context_of(out))
    line = next(ln for ln in text.splitlines() if ln.startswith("| grid | wrong |"))
    assert "x" not in line.split("|")[5] + line.split("|")[6] and "failed" in line


def test_a_crashing_method_fails_its_rows_but_not_the_bench(registry_guard):
    registry_guard.register("boom", "cpu", "tests.pipeline.test_bench:crashing_solver")
    out, _ = _run([grid_graph()], ["boom", "dijkstra"], baselines=[])
    rows = out.table.to_pylist()
    boom = [r for r in rows if r["algorithm"] == "boom"]
    assert len(boom) == 6 and not any(r["ok"] for r in boom)
    assert "kernel exploded" in boom[0]["error"]
    assert all(r["ok"] for r in rows if r["algorithm"] == "dijkstra")
    assert any("boom" in n for n in out.notes)


def test_ablation_switch_unknown_to_the_method_is_skipped_with_a_note(registry_guard):
    registry_guard._VARIANTS.pop("hbf", None)  # the fake replaces the GPU hbf
    registry_guard.register("hbf", "cpu", "tests.pipeline.test_bench:fake_no_k")
    out, _ = _run([grid_graph()], ["hbf"], ablation=["hbf"], baselines=[])
    assert out.failures == 0
    assert {r["variant"] for r in out.table.to_pylist()} == {"hbf"}
    assert sum("skipped" in n for n in out.notes) == len(bm.HBF_ABLATION)


def test_gpu_methods_are_skipped_with_a_note_without_a_device(registry_guard, monkeypatch):
    monkeypatch.setenv("SSSP_DISABLE_GPU", "1")
    registry_guard.register("fakegpu", "gpu", "tests.pipeline.test_bench:fake_solver")
    out, _ = _run([grid_graph()], ["fakegpu", "dijkstra"], baselines=["scipy"])
    assert "fakegpu" not in {r["algorithm"] for r in out.table.to_pylist()}
    assert any("fakegpu skipped: no CUDA device" in n for n in out.notes)
    assert out.env["gpu"] == ""


def test_negative_weights_skip_dijkstra_only_methods_and_use_johnson():
    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], [4, -2, 1, 9], 4, name="neg")
    out, _ = _run([g], ["dijkstra", "bellman-ford"], baselines=["scipy", "networkit"],
                  settings={"sources": 2, "min_component": 2})
    rows = out.table.to_pylist()
    assert {r["variant"] for r in rows} == {"bellman-ford", "scipy"}
    assert all(r["ok"] for r in rows)
    assert any("dijkstra skipped" in n for n in out.notes)


def test_a_negative_cycle_reachable_from_a_source_ends_the_bench_naming_it():
    """The SciPy reference used to raise scipy's own NegativeCycleError (a traceback);
    it is the product's, as in `sssp solve` and `sssp verify`, naming a vertex on it."""
    g = Graph.from_edges([0, 1, 2, 2], [1, 2, 0, 3], [1, -5, 1, 1], 4, name="negcyc")
    for baselines in (["scipy"], []):
        with pytest.raises(kernels.NegativeCycleError, match="vertex [012] lies on it") as err:
            _run([g], ["bellman-ford"], baselines=baselines, settings={"sources": 2, "min_component": 2})
        assert err.value.exit_code == 3 and err.value.vertex in (0, 1, 2)


def test_a_negative_cycle_no_source_reaches_does_not_stop_the_reference():
    """SciPy's Johnson rejects a negative cycle anywhere; the reference runs on the part
    of the graph the sources reach (as bellman-ford does), so a cycle elsewhere is fine."""
    ring = np.arange(20)
    src = np.r_[ring, [20, 21, 22]]
    dst = np.r_[(ring + 1) % 20, [21, 22, 20]]
    w = np.r_[np.arange(1, 21), [1, -5, 1]]
    g = Graph.from_edges(src, dst, w, 23, name="negaway")
    out, _ = _run([g], ["bellman-ford"], baselines=["scipy"], settings={"sources": 3, "min_component": 20})
    rows = out.table.to_pylist()
    assert {r["variant"] for r in rows} == {"bellman-ford", "scipy"}
    assert all(r["ok"] for r in rows) and all(r["source"] < 20 for r in rows)
    assert all(r["reached"] == 20 for r in rows)


def test_float_weights_are_checked_with_tolerance():
    out, _ = _run([float_graph()], ["dijkstra"], baselines=["scipy"])
    assert out.failures == 0


def test_load_rows_merges_files_and_rejects_others(tmp_path):
    out1, _ = _run([grid_graph()], ["dijkstra"], baselines=["scipy"])
    out2, _ = _run([directed_graph()], ["dijkstra"], baselines=[])
    report.write_rows(out1.table, tmp_path / "a" / "rows.parquet", report.context_of(out1))
    report.write_rows(out2.table, tmp_path / "b" / "rows.parquet", report.context_of(out2))
    table, ctx = report.load_rows([tmp_path / "a", tmp_path / "b" / "rows.parquet"])
    assert len(table) == len(out1.table) + len(out2.table)
    assert [g["graph"] for g in ctx["graphs"]] == ["grid", "dir"]
    text = report.summary_markdown(table, ctx)
    assert "### grid" in text and "### dir" in text and "rows from" in text
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(ValueError, match="not a `sssp bench` rows file"):
        report.load_rows([tmp_path / "other.parquet"])
    with pytest.raises(FileNotFoundError):
        report.load_rows([tmp_path / "missing"])


def test_summary_says_the_min_component_used_where_it_was_lowered(tmp_path):
    """The summary said 'at least 100000 vertices' (and, merged, 'min component 100000')
    where the draw had lowered it: it names the value used on each graph."""
    out, _ = _run([grid_graph(), directed_graph()], ["dijkstra"], baselines=[],
                  settings={"sources": 3, "min_component": 100_000})
    ctx = report.context_of(out)
    text = report.summary_markdown(out.table, ctx)
    assert "at least 100,000 vertices (lowered to 90 on grid, " in text
    assert "| 90 (lowered from 100,000) |" in text
    assert "at least 100000" not in text
    same, _ = _run([grid_graph()], ["dijkstra"], baselines=[], settings={"sources": 3, "min_component": 20})
    text = report.summary_markdown(same.table, report.context_of(same))
    assert "at least 20 vertices," in text and "lowered" not in text.split("## Graphs")[0]
    # merged rows: each run's line says it too
    report.write_rows(out.table, tmp_path / "a" / "rows.parquet", ctx)
    report.write_rows(same.table, tmp_path / "b" / "rows.parquet", report.context_of(same))
    table, merged = report.load_rows([tmp_path / "a", tmp_path / "b"])
    text = report.summary_markdown(table, merged)
    assert "min component 100,000 (lowered to 90 on grid, " in text and "min component 20, " in text


def test_load_rows_reads_a_file_given_twice_once_with_a_note(tmp_path):
    out, _ = _run([grid_graph()], ["dijkstra"], baselines=["scipy"])
    report.write_rows(out.table, tmp_path / "a" / "rows.parquet", report.context_of(out))
    table, ctx = report.load_rows([tmp_path / "a", tmp_path / "a", tmp_path / "a" / "rows.parquet"])
    assert len(table) == len(out.table)
    assert [r["file"] for r in ctx["runs"]] == [str(tmp_path / "a" / "rows.parquet")]
    assert ctx["read_notes"] == [f"rows file {tmp_path / 'a' / 'rows.parquet'} given 3 times: read once, "
                                 "its rows merged once"]
    assert ctx["read_notes"][0] in report.summary_markdown(table, ctx)


def test_settings_are_validated():
    g = grid_graph()
    vs = bm.plan_variants(["dijkstra"], baselines=[])
    for kw, match in (({"runs": 0}, "--runs"), ({"warmup": -1}, "--warmup"), ({"batch_size": 0}, "--batch-size")):
        with pytest.raises(ValueError, match=match):
            bm.run_benchmark([g], vs, bm.BenchSettings(**kw), env={})


def test_a_method_that_refuses_the_graph_is_skipped_with_a_note(registry_guard):
    registry_guard.register("picky", "cpu", "tests.pipeline.test_bench:refusing_solver")
    out, _ = _run([grid_graph()], ["picky", "dijkstra"], baselines=[])
    assert out.failures == 0
    assert "picky" not in {r["algorithm"] for r in out.table.to_pylist()}
    assert any("picky skipped: ValueError: this method needs unit weights" in n for n in out.notes)


def test_slow_methods_are_timed_on_fewer_sources(registry_guard):
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slow_solver")
    out, events = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"],
                       settings={"slow_ms": 10.0, "slow_sources": 2})
    rows = out.table.to_pylist()
    assert len([r for r in rows if r["algorithm"] == "slow"]) == 2
    assert len([r for r in rows if r["algorithm"] == "dijkstra"]) == 6
    assert any("timed on its first 2 sources only" in n for n in out.notes)
    total = [i["total"] for e, i in events if e == "graph"][0]
    assert sum(i["advance"] for e, i in events if e == "step") == total


def test_a_method_timed_on_fewer_sources_is_compared_on_those_sources(registry_guard):
    """--slow-ms cut a method to its first sources, but its speedup divided SciPy's mean
    over all sources by the method's mean over two: not the same sources."""
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slow_solver")
    out, _ = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"],
                  settings={"slow_ms": 10.0, "slow_sources": 2})
    rows = out.table.to_pylist()
    slow_src = {r["source"] for r in rows if r["algorithm"] == "slow"}
    scipy_ms = [r["time_ms"] for r in rows if r["algorithm"] == "scipy" and r["source"] in slow_src]
    slow_ms = [r["time_ms"] for r in rows if r["algorithm"] == "slow"]
    sp = {s["variant"]: s for s in report.speedups(report.aggregate(out.table))}
    assert sp["slow"]["vs_scipy"] == pytest.approx(np.mean(scipy_ms) / np.mean(slow_ms))
    assert sp["slow"]["subset"] and not sp["dijkstra"]["subset"]
    all_scipy = np.mean([r["time_ms"] for r in rows if r["algorithm"] == "scipy"])
    dij = np.mean([r["time_ms"] for r in rows if r["algorithm"] == "dijkstra"])
    assert sp["dijkstra"]["vs_scipy"] == pytest.approx(all_scipy / dij)
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "| grid | slow (2 sources) | cpu |" in text


def slower_solver(graph, sources, **kw):
    import time

    time.sleep(0.15)
    return kernels_cpu.dijkstra(graph, sources, distances=kw.get("distances", True))


def test_graph_time_limit_skips_the_remaining_methods(registry_guard):
    """The limit (0.5 s) lies between the SciPy baseline's time (its first run is the
    reference pass: milliseconds, but it once took over 0.1 s on a loaded machine, and
    `slow` was skipped too) and `slow`'s (8 calls of 0.15 s)."""
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slower_solver")
    out, _ = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"],
                  settings={"graph_time_limit_s": 0.5})
    variants = {r["variant"] for r in out.table.to_pylist()}
    assert "scipy" in variants and "slow" in variants and "dijkstra" not in variants
    assert any("time limit" in n for n in out.notes)


def _timed(table: pa.Table, ms: dict) -> pa.Table:
    """``table`` with every row's ``time_ms`` set to ``ms[variant]`` (ratios known exactly)."""
    col = pa.array([ms[v] for v in table.column("variant").to_pylist()], pa.float64())
    return table.set_column(table.schema.get_field_index("time_ms"), "time_ms", col)


def _two_runs_of_one_graph(tmp_path):
    """Two rows files of the same graph, different protocols: run a has bellman-ford, 3
    sources, one call for all; run b has no bellman-ford, 4 sources, batches of 2."""
    a, _ = _run([grid_graph()], ["dijkstra", "bellman-ford"], baselines=["scipy"], settings={"sources": 3})
    b, _ = _run([grid_graph()], ["dijkstra"], baselines=["scipy"], settings={"sources": 4, "batch_size": 2})
    report.write_rows(_timed(a.table, {"dijkstra": 2.0, "bellman-ford": 4.0, "scipy": 1.0}),
                      tmp_path / "a" / "rows.parquet", report.context_of(a))
    report.write_rows(_timed(b.table, {"dijkstra": 1.0, "scipy": 4.0}),
                      tmp_path / "b" / "rows.parquet", report.context_of(b))
    return [tmp_path / "a", tmp_path / "b"]


def test_rows_of_one_graph_from_two_runs_stay_apart_and_ratios_stay_within_a_run(tmp_path):
    """--from-rows pooled two runs of the same graph into one line (mixing sources and
    batch sizes) and divided a method's run-a mean by SciPy's mean over both runs."""
    table, ctx = report.load_rows(_two_runs_of_one_graph(tmp_path))
    agg = report.aggregate(table, runs=[r["file"] for r in ctx["runs"]])
    lines = {(a["graph"], a["variant"]): a for a in agg}
    assert set(lines) == {("grid (run 1)", "dijkstra"), ("grid (run 1)", "bellman-ford"), ("grid (run 1)", "scipy"),
                          ("grid (run 2)", "dijkstra"), ("grid (run 2)", "scipy")}
    assert lines["grid (run 1)", "scipy"]["rows"] == 3 and lines["grid (run 2)", "scipy"]["rows"] == 4
    sp = {(s["graph"], s["variant"]): s["vs_scipy"] for s in report.speedups(agg)}
    assert sp["grid (run 1)", "bellman-ford"] == pytest.approx(0.25)
    assert sp["grid (run 1)", "dijkstra"] == pytest.approx(0.5)
    assert sp["grid (run 2)", "dijkstra"] == pytest.approx(4.0)
    text = report.summary_markdown(table, ctx)
    assert "### grid (run 1)" in text and "### grid (run 2)" in text and "### grid\n" not in text
    assert "| grid (run 1) | bellman-ford | cpu | 4.00 | - | 0.250x |" in text
    assert "| grid (run 2) | dijkstra | cpu | 1.00 | - | 4.00x |" in text
    assert f"- run 1: rows from `{tmp_path / 'a' / 'rows.parquet'}`" in text
    assert f"- run 2: rows from `{tmp_path / 'b' / 'rows.parquet'}`" in text and "batch size 2" in text
    graphs = text.split("## Graphs")[1].split("## Correctness")[0]
    assert "| grid (run 1) |" in graphs and "| grid (run 2) |" in graphs
    # the merged rows keep the runs apart when they are merged again
    report.write_rows(table, tmp_path / "ab" / "rows.parquet", ctx)
    again, ctx2 = report.load_rows([tmp_path / "ab"])
    assert [r["file"] for r in ctx2["runs"]] == [r["file"] for r in ctx["runs"]]
    sp2 = {(s["graph"], s["variant"]): s["vs_scipy"]
           for s in report.speedups(report.aggregate(again, runs=[r["file"] for r in ctx2["runs"]]))}
    assert sp2 == sp
    assert report.summary_markdown(again, ctx2).split("## Notes")[0] == text.split("## Notes")[0]


def test_one_run_keeps_plain_graph_names(tmp_path):
    a, _ = _run([grid_graph(), directed_graph()], ["dijkstra"], baselines=["scipy"], settings={"sources": 3})
    report.write_rows(a.table, tmp_path / "a" / "rows.parquet", report.context_of(a))
    table, ctx = report.load_rows([tmp_path / "a"])
    assert {x["graph"] for x in report.aggregate(table)} == {"grid", "dir"}
    text = report.summary_markdown(table, ctx)
    assert "### grid\n" in text and "(run 1)" not in text


def test_the_first_warm_up_call_is_reported_not_hidden(registry_guard):
    """The warm-up call (graph upload, compilation, phast's hierarchy) was excluded from
    the times and reported nowhere: a method whose preprocessing takes seconds looked
    as cheap as its sweeps.  Its wall time is now on every row of the variant and in
    the summary's time table."""
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slow_solver")
    out, _ = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"])
    rows = out.table.to_pylist()
    slow = [r["warmup_ms"] for r in rows if r["algorithm"] == "slow"]
    assert len(set(slow)) == 1 and slow[0] >= 20.0  # slow_solver sleeps 20 ms a call
    assert all(r["warmup_ms"] is not None for r in rows if r["algorithm"] == "dijkstra")
    assert all(r["warmup_ms"] is None for r in rows if r["algorithm"] == "scipy")
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "first call ms |" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| slow |"))
    assert line.rstrip(" |").split("|")[-1].strip() == report.fmt_number(slow[0])
    out0, _ = _run([grid_graph()], ["dijkstra"], baselines=[], settings={"warmup": 0})
    assert {r["warmup_ms"] for r in out0.table.to_pylist()} == {None}


def test_summary_rates_are_arcs_over_the_mean_time():
    """The summary defines MTEPS as arcs / kernel time and prints the mean kernel time
    beside it, but averaged the per-row rates: above arcs / mean time whenever the
    times vary (NY's hbf: 299 printed against 730,100 / 2.46 ms = 297)."""
    g = grid_graph()
    out, _ = _run([g], ["dijkstra"], baselines=["scipy"])
    rows = [r for r in out.table.to_pylist() if r["algorithm"] == "dijkstra"]
    k = [r["kernel_ms"] for r in rows]
    assert len(set(k)) > 1  # CPU times vary from source to source
    a = next(a for a in report.aggregate(out.table) if a["variant"] == "dijkstra")
    assert a["kernel_ms"] == pytest.approx(np.mean(k))
    assert a["mteps"] == pytest.approx(g.m / (np.mean(k) * 1e3), rel=1e-12)
    relax = [r["relaxations"] for r in rows]
    assert a["edges_per_s"] == pytest.approx(np.mean(relax) / (np.mean(k) * 1e-3), rel=1e-12)


def test_a_wrong_configuration_is_no_best_k_and_has_no_slowdown(registry_guard):
    """The locality k table set the fastest k in bold and the ablation table printed a
    slowdown whether or not that configuration's answers were right."""
    for name in ("locality", "hbf"):
        registry_guard._VARIANTS.pop(name, None)
        registry_guard.register(name, "cpu", "tests.pipeline.test_bench:wrong_when_solver")
    out, _ = _run([grid_graph()], ["locality"], ablation=["hbf"], baselines=["scipy"], locality_k=(1, 2, 3))
    agg = report.aggregate(out.table)
    ab = {a["variant"]: a for a in report.ablation(agg)}
    assert ab["hbf[dedup64=off]"]["slowdown"] is None and ab["hbf[dedup64=off]"]["failures"] == 6
    assert ab["hbf[edge_classes=off]"]["slowdown"] is not None
    text = report.summary_markdown(out.table, report.context_of(out))
    line = next(ln for ln in text.splitlines() if ln.startswith("| grid | hbf | dedup64 |"))
    assert "x |" not in line and "failed" in line
    kline = next(ln for ln in text.splitlines() if ln.startswith("| grid |") and "k=" not in ln
                 and ln.count("|") == 5)
    cells = [c.strip() for c in kline.split("|")[2:5]]
    assert cells[1].endswith("(failed)") and "**" not in cells[1]
    assert sum("**" in c for c in cells) == 1


def test_speedup_over_networkit_is_in_the_table_when_it_ran():
    """NetworKit ran as an anchor in the same run but the Speedup table had only
    'vs harish' and 'vs SciPy': BENCHMARKS.md's 'vs NetworKit Dijkstra' column was
    worked out by hand from the rows."""
    import pyarrow.compute  # noqa: F401 - pa.compute is there only once imported

    out, _ = _run([grid_graph()], ["dijkstra"], baselines=["scipy"])
    t = out.table
    sc = t.filter(pa.compute.equal(t.column("algorithm"), "scipy"))
    nk = sc.set_column(t.schema.get_field_index("algorithm"), "algorithm", pa.array(["networkit"] * len(sc)))
    nk = nk.set_column(t.schema.get_field_index("variant"), "variant", pa.array(["networkit"] * len(sc)))
    table = _timed(pa.concat_tables([t, nk]), {"dijkstra": 2.0, "scipy": 4.0, "networkit": 6.0})
    sp = {s["variant"]: s for s in report.speedups(report.aggregate(table))}
    assert sp["dijkstra"]["vs_scipy"] == pytest.approx(2.0) and sp["dijkstra"]["vs_networkit"] == pytest.approx(3.0)
    text = report.summary_markdown(table, report.context_of(out))
    assert "| vs SciPy Dijkstra | vs NetworKit Dijkstra |" in text
    assert "| grid | dijkstra | cpu | 2.00 | - | 2.00x | 3.00x |" in text
    assert "vs NetworKit" not in report.summary_markdown(t, report.context_of(out))


def test_the_environment_names_the_code_commit():
    """Rows named the package version (0.1.0 at every commit) but not the code's commit,
    which BENCHMARKS.md uses to tell runs apart."""
    import subprocess
    from pathlib import Path

    here = Path(bm.__file__).resolve().parent
    head = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    got = bm.environment()["versions"]["gpu-sssp-commit"]
    assert got.split("+")[0] == head.stdout.strip()


# ----------------------------------------------------------------------------- the many-core anchor
def test_networkit_spsp_solves_many_sources_as_scipy():
    """``networkit-spsp`` (NetworKit's SPSP on every usable core) hands back one row per
    source, equal to SciPy's, unreachable vertices as +inf, zero-weight arcs kept."""
    g = directed_graph()
    why = bl.unavailable_reason("networkit-spsp", g)
    if why:
        pytest.skip(why)
    z = Graph.from_edges(g.tails(), g.indices, np.where(np.arange(g.m) % 3 == 0, 0, g.weights), g.n, name="zero")
    for graph in (g, z):
        srcs = np.array([0, 45, 52, 41, 45])  # 52 is isolated; a repeated source kept
        dist, ms = bl.prepare_many("networkit-spsp", graph)(srcs)
        ref, _ = bl.prepare("scipy", graph)(0)
        assert dist.shape == (len(srcs), graph.n) and ms >= 0
        for j, s in enumerate(srcs):
            np.testing.assert_array_equal(dist[j], bl.prepare("scipy", graph)(int(s))[0])
        assert np.isinf(dist[2]).sum() == graph.n - 1
    assert bl.sources_per_call("networkit", g, 100) == 1
    assert bl.BATCHED_BASELINES == {"networkit-spsp"}
    with pytest.raises(ValueError, match="one source per call"):
        bl.prepare_many("networkit", g)


def test_sources_per_call_bounds_the_distances_and_feeds_every_core(monkeypatch):
    monkeypatch.setattr(bl, "host_threads", lambda: 8)
    small, big = directed_graph(), Graph.from_edges([0], [1], [1], 4_000_000, name="big")
    assert bl.sources_per_call("networkit-spsp", small, 100) == 100  # all of them
    assert bl.sources_per_call("networkit-spsp", small, 3) == 3
    assert bl.sources_per_call("networkit-spsp", big, 100) == 16  # 2 per thread, not 4 (16M cells)
    monkeypatch.setattr(bl, "host_threads", lambda: 1)
    assert bl.sources_per_call("networkit-spsp", big, 100) == 4  # 16M cells / 4M vertices


def test_the_many_core_anchor_is_timed_per_call_and_ratioed(tmp_path):
    """Its rows carry the call's size and the call's time per source; the Speedup table
    has its column; its description names the cores."""
    g = grid_graph()
    if bl.unavailable_reason("networkit-spsp", g):
        pytest.skip(bl.unavailable_reason("networkit-spsp", g))
    out, _ = _run([g], ["dijkstra"], baselines=["scipy", "networkit-spsp"], settings={"batch_size": 4})
    rows = out.table.to_pylist()
    nk = [r for r in rows if r["algorithm"] == "networkit-spsp"]
    assert nk and all(r["ok"] for r in nk) and all(r["kind"] == "baseline" for r in nk)
    assert sorted({r["batch_size"] for r in nk}) == [2, 4]  # 6 sources in calls of 4 and 2
    # a --batch-size past the distances' bound is an upper bound only (a GPU-sized batch
    # on a big graph would be tens of GB of Python floats)
    import unittest.mock as mock

    with mock.patch.object(bl, "SPSP_CELLS", 3 * g.n), mock.patch.object(bl, "host_threads", lambda: 1):
        capped, _ = _run([g], [], baselines=["scipy", "networkit-spsp"], settings={"batch_size": 4096})
    assert {r["batch_size"] for r in capped.table.to_pylist() if r["algorithm"] == "networkit-spsp"} == {3}
    sp = {s["variant"]: s for s in report.speedups(report.aggregate(out.table))}
    mean = {a["variant"]: a["mean_ms"] for a in report.aggregate(out.table)}
    assert sp["dijkstra"]["vs_networkit_spsp"] == pytest.approx(mean["networkit-spsp"] / mean["dijkstra"])
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "vs NetworKit SPSP, all cores" in text and "all usable host cores" in text


def test_a_wrong_many_core_anchor_fails_its_rows(monkeypatch):
    """The batched anchor's answers are checked like a method's: distances at the wrong
    vertices (statistics intact) fail every row, and it gets no ratio."""
    g = grid_graph()
    if bl.unavailable_reason("networkit-spsp", g):
        pytest.skip(bl.unavailable_reason("networkit-spsp", g))
    real = bl.prepare_many

    def swapped(name, graph):
        many = real(name, graph)

        def solve(sources):
            d, ms = many(sources)
            d = d.copy()
            d[:, [1, 2]] = d[:, [2, 1]]
            return d, ms
        return solve

    monkeypatch.setattr(bl, "prepare_many", swapped)
    out, _ = _run([g], ["dijkstra"], baselines=["scipy", "networkit-spsp"])
    bad = [r for r in out.table.to_pylist() if r["algorithm"] == "networkit-spsp"]
    assert bad and not any(r["ok"] for r in bad)
    assert all("wrong distance" in r["error"] for r in bad)


def test_networkit_one_source_timer_leaves_out_the_copy_to_python(monkeypatch):
    """The one-source NetworKit anchor timed ``getDistances()`` too (the binding copying
    n floats into a Python list) where ``networkit-spsp`` did not: the anchor looked
    slower than NetworKit's Dijkstra is.  A stand-in NetworKit whose copy takes 0.2 s
    shows what the timer covers."""
    import sys
    import time
    import types

    import numpy as np

    from gpu_sssp.kernels import baselines as bl
    from gpu_sssp.kernels.graph import Graph

    class Dijkstra:
        def __init__(self, g, s, storePaths=False):
            self.n = g.n

        def run(self):
            return self

        def getDistances(self):
            time.sleep(0.2)
            return [0.0] * self.n

    class FakeGraph:
        def __init__(self, n, weighted=True, directed=True):
            self.n = n

        def addEdges(self, data):
            pass

    fake = types.SimpleNamespace(Graph=FakeGraph, distance=types.SimpleNamespace(Dijkstra=Dijkstra),
                                 __version__="fake")
    monkeypatch.setitem(sys.modules, "networkit", fake)
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([1, 1]), n=3)
    dist, ms = bl.prepare("networkit", g)(0)
    assert dist.shape == (3,) and ms < 100, ms
