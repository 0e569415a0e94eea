"""`sssp bench` as a demanding user meets it: a re-run cut short, an --out that takes no
file, the summary table in a pipe, more sources than vertices, a method that answers
fewer sources than it was asked, wrong answers from an anchor, rows merged from two
machines.  Each test failed before its fix."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp.kernels import baselines as bl
from gpu_sssp.kernels import cpu as kernels_cpu
from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline import bench_report as report
from gpu_sssp.workflows.cli import main
from tests.pipeline.test_bench import grid_graph, registry_guard  # noqa: F401 (fixture)
from tests.workflows.test_cli_bench import scratch_registry, small_parquet  # noqa: F401 (fixtures)


def stop_at_once(graph, sources, **kw):
    """Ctrl-C in the method's first call (its warm-up): before any method is done."""
    raise KeyboardInterrupt


def short_solver(graph, sources, **kw):
    """A batched method that answers only the first source of each call (right answer)."""
    return kernels_cpu.dijkstra(graph, sources[:1], distances=kw.get("distances", True))


def test_a_rerun_cut_short_before_its_first_method_leaves_no_earlier_run_behind(
        small_parquet, tmp_path, capsys, scratch_registry):
    """An earlier run's finished rows.parquet, summary.md and plots stayed as they were
    when a new run into the same folder was stopped before its first method was done:
    they looked like this run's finished results (no 'still going' note)."""
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "3",
                 "--baselines", "scipy", "--out", str(out), "--no-plots"]) == 0
    (out / "speedup.png").write_bytes(b"\x89PNG earlier run")
    scratch_registry.register("stopper", "cpu", "tests.workflows.test_cli_bench_audit:stop_at_once")
    rc = main(["bench", str(small_parquet), "--algorithms", "stopper", "--sources", "2",
               "--baselines", "", "--out", str(out), "--no-plots"])
    assert rc == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "stopped: interrupted"
    assert len(pq.read_table(out / "rows.parquet")) == 0
    text = (out / "summary.md").read_text()
    # (the stop is said: "the run stopped: interrupted (Ctrl-C)", which was "still going")
    assert "the run stopped: interrupted (Ctrl-C)" in text and "No rows: the run stopped" in text, text
    assert "| dijkstra |" not in text
    assert not (out / "speedup.png").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_an_out_folder_that_takes_no_file_is_refused_before_any_graph_is_read(
        small_parquet, tmp_path, capsys, monkeypatch):
    """A read-only --out failed only once the SciPy reference pass and the first method
    were timed, with the OS's words about a temporary file and no option named.  (Root
    may write anywhere, so the folder's refusal is stood in for.)"""
    import tempfile

    import gpu_sssp.pipeline.graph as graph_mod

    out = tmp_path / "ro"
    out.mkdir()
    real = tempfile.mkstemp

    def refuse(*a, dir=None, **kw):
        if dir is not None and str(dir) == str(out):
            raise PermissionError(13, "Permission denied")
        return real(*a, dir=dir, **kw)

    def no_read(*a, **kw):
        raise AssertionError("a graph was read before --out was checked")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.setattr(graph_mod, "load_graph", no_read)
    for where in (out, out / "sub"):
        rc = main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2",
                   "--baselines", "scipy", "--out", str(where), "--no-plots"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1
        assert err[0].startswith(f"error: --out {where}: cannot write a file in {out}"), err
    assert list(out.iterdir()) == []


def test_an_out_whose_rows_file_is_a_folder_is_refused_at_once(small_parquet, tmp_path, capsys):
    out = tmp_path / "b"
    (out / "rows.parquet").mkdir(parents=True)
    rc = main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2",
               "--baselines", "scipy", "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: --out {out}: {out / 'rows.parquet'} is a folder; the bench writes a file there"]


def test_the_summary_table_names_every_method_whole_in_a_pipe(small_parquet, tmp_path, capsys):
    """At a pipe's 80 columns the table cut names to 'bellman…' / 'network…' (networkit
    and networkit-spsp alike) and a long graph name to its first letters."""
    g = tmp_path / "a_rather_long_graph_name_for_the_table.parquet"
    shutil.copy(small_parquet, g)
    rc = main(["bench", str(g), "--algorithms", "dijkstra,bellman-ford", "--sources", "2",
               "--baselines", "scipy", "--out", str(tmp_path / "b"), "--no-plots"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "…" not in text
    for name in ("a_rather_long_graph_name_for_the_table", "bellman-ford", "dijkstra", "scipy"):
        assert f" {name} " in text


def test_more_sources_than_vertices_keep_the_threshold():
    """Asking more sources than the graph has vertices halved the threshold down to 1,
    each step noted as 'only 180 vertices reach 90 vertices' (every vertex did)."""
    g = grid_graph()  # 180 vertices, connected
    draw = bm.draw_sources(g, 10_000, min_component=100, seed=1)
    assert draw.min_component == 100
    assert len(draw.sources) == g.n
    assert draw.notes == [f"grid: only {g.n:,} distinct sources available (asked 10,000)"]


def test_a_method_answering_fewer_sources_than_asked_fails_them(registry_guard):
    """zip() dropped the sources a batched call gave no answer for: their rows were
    missing, no row failed and the bench exited 0."""
    registry_guard._VARIANTS.pop("batched", None)
    registry_guard.register("batched", "cpu", "tests.workflows.test_cli_bench_audit:short_solver")
    g = grid_graph()
    out = bm.run_benchmark([g], bm.plan_variants(["batched"], baselines=["scipy"]),
                           bm.BenchSettings(sources=4, min_component=10))
    rows = [r for r in out.table.to_pylist() if r["algorithm"] == "batched"]
    assert len(rows) == 4
    assert not any(r["ok"] for r in rows)
    assert all("answered 1 source for 4 asked" in r["error"] for r in rows)
    assert out.failures == 4


def test_a_wrong_one_source_anchor_fails_its_rows(monkeypatch):
    """networkit (one source per call) planted wrong: every row not ok, no ratio."""
    g = grid_graph()
    if bl.unavailable_reason("networkit", g):
        pytest.skip(bl.unavailable_reason("networkit", g))
    real = bl.prepare

    def plant(name, graph, sources):
        solve = real(name, graph, sources)
        if name != "networkit":
            return solve

        def wrong(s):
            d, ms = solve(s)
            d = np.array(d, dtype=np.float64)
            fin = np.flatnonzero(np.isfinite(d) & (d > 0))
            d[fin[0]] += 1
            return d, ms
        return wrong

    monkeypatch.setattr(bl, "prepare", plant)
    out = bm.run_benchmark([g], bm.plan_variants(["dijkstra"], baselines=["scipy", "networkit"]),
                           bm.BenchSettings(sources=3, min_component=10, runs=2))
    rows = out.table.to_pylist()
    bad = [r for r in rows if r["algorithm"] == "networkit"]
    assert len(bad) == 6 and not any(r["ok"] for r in bad)
    assert all(r["ok"] for r in rows if r["algorithm"] != "networkit")
    sp = {s["variant"]: s for s in report.speedups(report.aggregate(out.table))}
    assert sp["networkit"]["vs_scipy"] is None


def _rows_file(path, env):
    g = grid_graph(name="grid")
    out = bm.run_benchmark([g], bm.plan_variants(["dijkstra"], baselines=["scipy"]),
                           bm.BenchSettings(sources=2, min_component=10), env=env)
    report.write_rows(out.table, path, report.context_of(out))
    return path


def test_rows_merged_from_two_machines_name_each_machine(tmp_path):
    """--from-rows of runs on two machines named only the first run's GPU, host and
    versions at the top of the summary, as if every run had been made there."""
    base = {"driver": "", "host": "h", "cpu": "CPU-X", "cpu_cores": 2,
            "versions": {"gpu-sssp-commit": "aaaa"}}
    a = _rows_file(tmp_path / "a.parquet", {**base, "gpu": "NVIDIA H100", "driver": "580"})
    b = _rows_file(tmp_path / "b.parquet", {**base, "gpu": "", "host": "h2", "cpu": "CPU-Y",
                                             "versions": {"gpu-sssp-commit": "bbbb"}})
    table, ctx = report.load_rows([a, b])
    text = report.summary_markdown(table, ctx)
    head = text.split("## Graphs")[0]
    assert "NVIDIA H100, driver 580" in head and "none (CPU only)" in head
    assert "CPU-X" in head and "CPU-Y" in head
    assert "aaaa" in head and "bbbb" in head
    lines = [ln for ln in head.splitlines() if ln.startswith("- run ")]
    assert "NVIDIA H100" in lines[0] and "CPU-Y" in lines[1]
    # one machine: the plain header, as before
    table, ctx = report.load_rows([a, _rows_file(tmp_path / "c.parquet", {**base, "gpu": "NVIDIA H100",
                                                                           "driver": "580"})])
    assert "- GPU: NVIDIA H100, driver 580" in report.summary_markdown(table, ctx)
    json.dumps(ctx)  # the merged context stays JSON (written as the rows' metadata)


def test_the_plots_name_the_machine_the_times_were_taken_on(tmp_path):
    """A PNG copied beside a document said nothing of the GPU or CPU it was timed on."""
    pytest.importorskip("matplotlib")
    from PIL import Image

    rows = _rows_file(tmp_path / "a.parquet", {"gpu": "NVIDIA H200", "driver": "580", "host": "h",
                                               "cpu": "CPU-X", "versions": {}})
    table, ctx = report.load_rows([rows])
    made = report.make_plots(table, tmp_path / "plots", runs=report.run_labels(ctx))
    assert {p.name for p in made} >= {"time_per_graph.png", "speedup.png"}
    for p in made:
        assert Image.open(p).info.get("Description") == "GPU: NVIDIA H200; CPU: CPU-X"
    cpu_only = _rows_file(tmp_path / "b.parquet", {"gpu": "", "host": "h", "cpu": "CPU-Y", "versions": {}})
    assert report.device_caption(report.load_rows([cpu_only])[0]) == "GPU: none (CPU only); CPU: CPU-Y"


def test_merged_runs_that_differ_in_cores_name_each_runs_cores(tmp_path):
    """Runs on one host with different cores usable (one under ``taskset -c 0``): the
    merged header named the first run's count for both, in the order the files were
    given, and `networkit-spsp`'s "all cores" column of the other run with it."""
    base = {"gpu": "", "driver": "", "host": "h", "cpu": "CPU-X", "versions": {}}
    a = _rows_file(tmp_path / "a.parquet", {**base, "cpu_cores": 2})
    b = _rows_file(tmp_path / "b.parquet", {**base, "cpu_cores": 1})
    for files in ([a, b], [b, a]):
        table, ctx = report.load_rows(files)
        head = report.summary_markdown(table, ctx).split("## Graphs")[0]
        runs = [ln for ln in head.splitlines() if ln.startswith("- run ")]
        assert "differ between the runs" in head, head
        cores = [("2 cores" in ln, "1 cores" in ln) for ln in runs]
        assert cores == ([(True, False), (False, True)] if files[0] == a else [(False, True), (True, False)]), runs


def test_a_merged_plot_caption_pairs_each_gpu_with_its_cpu(tmp_path):
    """The caption listed the GPUs and the CPUs apart ("GPU: NVIDIA H200; CPU: CPU-X,
    CPU-Y"): which CPU went with the GPU, and that one run had none, was not said."""
    a = _rows_file(tmp_path / "a.parquet", {"gpu": "NVIDIA H200", "host": "h", "cpu": "CPU-X", "versions": {}})
    b = _rows_file(tmp_path / "b.parquet", {"gpu": "", "host": "h2", "cpu": "CPU-Y", "versions": {}})
    table, _ctx = report.load_rows([a, b])
    assert report.device_caption(table) == ("GPU: NVIDIA H200, CPU: CPU-X; GPU: none (CPU only), CPU: CPU-Y")


def test_log_axes_read_as_numbers_not_raw_mathtext(tmp_path):
    """With every text drawn as it is (graph names are never mathtext), a log axis's
    ticks read ``$\\mathdefault{10^{-2}}$``."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False}):
        fig, ax = plt.subplots()
        ax.plot([0.01, 100], [1, 2])
        report._scale(ax, [0.01], [100])
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        plt.close(fig)
    assert labels and not any("$" in t or "mathdefault" in t for t in labels), labels
    assert "0.01" in labels and "100" in labels, labels


def test_the_protocol_line_with_no_warm_up(small_parquet, tmp_path, capsys):
    """`--warmup 0` read "0 warm-up calls per method excluded" (found by the 2026-12-07
    audit); it says there is none, and what the first timed call then holds."""
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2", "--warmup", "0",
                 "--out", str(out), "--no-plots"]) == 0
    text = " ".join((out / "summary.md").read_text().split())
    assert "0 warm-up" not in text and "no warm-up call (--warmup 0)" in text
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2", "--warmup", "1",
                 "--out", str(tmp_path / "c"), "--no-plots"]) == 0
    assert "1 warm-up call per method excluded" in " ".join((tmp_path / "c" / "summary.md").read_text().split())
