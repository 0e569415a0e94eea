"""Defects found by the `sssp bench` user audit (CPU only): each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline import bench_report as report
from tests.pipeline.test_bench import _run, grid_graph, registry_guard  # noqa: F401 (a fixture)


def _set(table: pa.Table, column: str, values) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(i, column, pa.array(values, table.schema.field(column).type))


def test_plots_survive_a_mean_one_ulp_off_its_equal_rows(tmp_path):
    """A batched method's rows all carry the call's time / batch size; NumPy's mean of 30
    equal values can be an ulp off the value, and matplotlib refused the negative error
    bar ('xerr' must not contain negative values): `sssp bench delaunay_n15.graph
    --weights random:1:100:3 --algorithms cpu --sources 30` ended in a traceback, exit 1,
    with no plots, after the timing was done."""
    pytest.importorskip("matplotlib")
    out, _ = _run([grid_graph(rows=12, cols=15)], ["dijkstra"], baselines=["scipy"], settings={"sources": 30})
    x = 0.7
    assert float(np.mean([x] * 30)) < x  # the premise: the mean is below every row's time
    t = _set(out.table, "time_ms", [x] * len(out.table))
    written = report.write_report(t, report.context_of(out), tmp_path)
    assert {p.name for p in written["plots"]} >= {report.PLOT_FILES["time"], report.PLOT_FILES["speedup"]}
    a = report.aggregate(t)[0]
    assert a["min_ms"] <= a["mean_ms"] <= a["max_ms"]


def _sink_graph():
    """0 -> 1 -> 2 -> 0 (a cycle), 2 -> 3 -> 4: vertex 4 is a sink, it relaxes no arc."""
    from gpu_sssp.pipeline.graph import Graph

    return Graph.from_edges([0, 1, 2, 2, 3], [1, 2, 0, 3, 4], [5, 2, 1, 4, 1], 5, name="sink")


def test_a_source_that_relaxes_no_arc_counts_zero_not_unknown():
    """A method's row for a source that scans no arc (a sink) had ``relaxations`` None
    (``int(r) or None``), so the summary's relax/|E| and edges/s were means over the other
    sources only: `sssp bench pos.wel --algorithms cpu --sources 5` showed relax/|E| 0.800
    for dijkstra and bellman-ford beside SciPy's 0.640, from the same sources."""
    g = _sink_graph()
    out, _ = _run([g], ["dijkstra", "bellman-ford"], baselines=["scipy"],
                  settings={"sources": 5, "min_component": 1})
    rows = out.table.to_pylist()
    sink = [r for r in rows if r["source"] == 4]
    assert {r["variant"] for r in sink} == {"dijkstra", "bellman-ford", "scipy"}
    assert all(r["relaxations"] == 0 for r in sink), sink
    per = {a["variant"]: a["relax_per_arc"] for a in report.aggregate(out.table)}
    assert per["dijkstra"] == pytest.approx(per["scipy"]) and per["bellman-ford"] == pytest.approx(per["scipy"])


def test_relaxations_not_counted_stay_unknown(registry_guard):
    """With --no-count-work a method that counts only on request has no count: None (not 0)."""
    registry_guard._VARIANTS.pop("harish", None)
    registry_guard.register("harish", "cpu", "tests.pipeline.test_bench:fake_solver")
    out, _ = _run([grid_graph()], ["harish"], baselines=[], settings={"count_work": False})
    assert all(r["relaxations"] is None for r in out.table.to_pylist())
    assert report.aggregate(out.table)[0]["relax_per_arc"] is None


@pytest.mark.parametrize("argv, start", [
    (["--algorithms", "nope"], "--algorithms nope: unknown method"),
    (["--algorithms", "auto"], "--algorithms auto: "),
    (["--algorithms", "dijkstra@gpu"], "--algorithms dijkstra@gpu: "),
    (["--algorithms", "phast@tpu"], "--algorithms phast@tpu: "),
    (["--algorithms", "dijkstra", "--backend", "gpu"], "--algorithms dijkstra (--backend gpu): "),
    (["--algorithms", "dijkstra", "--baselines", "boost"], "--baselines boost: unknown baseline"),
    (["--algorithms", "dijkstra", "--ablation", "foo"], "--ablation foo: no ablation"),
])
def test_a_bad_method_baseline_or_ablation_names_its_option(tmp_path, capsys, argv, start):
    """`sssp bench rome99.gr --baselines boost` said "error: unknown baseline 'boost'" (and
    --ablation foo, dijkstra@gpu the same way), naming neither the option nor, for
    --backend gpu, why a CPU method was refused."""
    from gpu_sssp.workflows.cli import main

    rc = main(["bench", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"error: {start}"), err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_the_slow_guard_applies_without_a_warm_up_call(registry_guard):
    """--slow-ms judged a method by its warm-up call only: with --warmup 0 the warm-up
    time was 0, never over the guard, which silently timed every source of a slow method
    (`sssp bench G --slow-ms 0 --warmup 0` timed them all, with no note)."""
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slow_solver")
    out, events = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"],
                       settings={"slow_ms": 10.0, "slow_sources": 2, "warmup": 0, "runs": 2})
    rows = out.table.to_pylist()
    slow = [r for r in rows if r["algorithm"] == "slow"]
    assert len(slow) == 2 * 2 and {r["run"] for r in slow} == {0, 1}
    assert len({r["source"] for r in slow}) == 2
    assert len([r for r in rows if r["algorithm"] == "dijkstra"]) == 6 * 2
    assert any("first timed call" in n and "--warmup 0" in n for n in out.notes)
    total = [i["total"] for e, i in events if e == "graph"][0]
    assert sum(i["advance"] for e, i in events if e == "step") == total


@pytest.mark.parametrize("warmup", [1, 0])
def test_a_method_that_refuses_the_graph_is_skipped_with_or_without_warm_up(registry_guard, warmup):
    """A refusal (ValueError/TypeError/MemoryError) in the warm-up is a skip with a note;
    with --warmup 0 the same refusal in the first timed call failed all the method's rows
    and made the bench exit 1."""
    registry_guard.register("refuse", "cpu", "tests.pipeline.test_bench:refusing_solver")
    out, events = _run([grid_graph()], ["refuse", "dijkstra"], baselines=["scipy"],
                       settings={"warmup": warmup, "runs": 2})
    assert out.failures == 0
    assert not [r for r in out.table.to_pylist() if r["algorithm"] == "refuse"]
    assert any("refuse skipped: ValueError" in n for n in out.notes)
    total = [i["total"] for e, i in events if e == "graph"][0]
    assert sum(i["advance"] for e, i in events if e == "step") == total


@pytest.mark.parametrize("out", ["", " "])
def test_an_empty_out_is_refused_not_the_current_folder(tmp_path, monkeypatch, capsys, out):
    """`sssp bench G --out ""` (an unset "$OUT") wrote rows.parquet, summary.md and the
    PNGs into the current folder (Path("") is "."), removing PNGs of ours found there."""
    from gpu_sssp.workflows.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.parquet").write_bytes(b"")
    rc = main(["bench", "g.parquet", "--algorithms", "dijkstra", "--out", out])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --out") and "empty" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.parquet"]


@pytest.mark.parametrize("extra", [[], ["--no-plots"]])
def test_a_plot_name_that_is_a_folder_is_refused_before_the_graph_is_read(tmp_path, capsys, extra):
    """`mkdir o/speedup.png; sssp bench rome99.gr --out o` read the graph, wrote empty
    partial rows, then stopped with "error: [Errno 21] Is a directory: 'o/speedup.png'"
    (no option named, no summary)."""
    from gpu_sssp.workflows.cli import main

    out = tmp_path / "o"
    (out / report.PLOT_FILES["speedup"]).mkdir(parents=True)
    (tmp_path / "g.parquet").write_bytes(b"")  # never read: the refusal comes first
    rc = main(["bench", str(tmp_path / "g.parquet"), "--algorithms", "dijkstra", "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"error: --out {out}: ") and "speedup.png is a folder" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["speedup.png"]


def test_the_summary_says_scipy_ran_johnson_on_negative_arcs():
    """On a graph with negative arcs the anchor is SciPy's Johnson, but the summary's
    anchors line said only "scipy.sparse.csgraph.dijkstra (binary heap)"."""
    from gpu_sssp.pipeline.graph import Graph

    g = Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], [4, -2, 1, 9], 4, name="neg")
    out, _ = _run([g], ["bellman-ford"], baselines=["scipy"], settings={"sources": 2, "min_component": 2})
    text = report.summary_markdown(out.table, report.context_of(out))
    assert "csgraph.johnson" in text


def test_source_commit_writes_nothing_in_the_checkout(tmp_path, monkeypatch):
    """``source_commit`` ran a plain ``git status``, which refreshes the index of the
    user's checkout under ``.git/index.lock``: a bench killed meanwhile (``ulimit -f``)
    left the lock, and every git command there then failed.  It now reads only."""
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "checkout"
    (repo / "pipeline").mkdir(parents=True)
    from gpu_sssp.pipeline import bench_protocol

    copy = repo / "pipeline" / "bench_protocol.py"
    shutil.copy(bench_protocol.__file__, copy)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env, capture_output=True)
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # a stale index entry
    index = repo / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes())
    spec = importlib.util.spec_from_file_location("_bp_copy", copy)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "_bp_copy", module)  # (its dataclasses look it up)
    spec.loader.exec_module(module)
    commit = module.source_commit()
    assert commit is not None and not commit.endswith("+dirty"), commit  # (the file's content is the commit's)
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before  # the index was not rewritten
    # (a plain status does rewrite it here: the test's stale entry is one it refreshes)
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], check=True, capture_output=True)
    assert (index.stat().st_mtime_ns, index.read_bytes()) != before
