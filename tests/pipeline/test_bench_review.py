"""Defects found reading `sssp bench` again (CPU only): each test failed before its fix."""
from __future__ import annotations

import pytest

from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline import bench_report as report
from tests.pipeline.test_bench import _run, grid_graph, registry_guard  # noqa: F401 (a fixture)


@pytest.mark.parametrize("limit, timed", [(0, {"scipy"}), (0.05, {"scipy", "slow"})])
def test_the_graph_time_limit_never_drops_the_scipy_anchor(registry_guard, limit, timed):
    """--graph-time-limit 0 skipped SciPy's rows too (its time was over 0 s before it
    started): the report had no anchor for any ratio.  The limit stops the variants after
    the anchor only: 0 leaves the anchor alone; a small limit lets the first variant
    after it start (`slow`: 6 calls of 0.15 s) and stops the next."""
    registry_guard.register("slow", "cpu", "tests.pipeline.test_bench:slower_solver")
    out, _ = _run([grid_graph()], ["slow", "dijkstra"], baselines=["scipy"],
                  settings={"graph_time_limit_s": limit})
    rows = out.table.to_pylist()
    assert {r["variant"] for r in rows} == timed
    assert len([r for r in rows if r["variant"] == "scipy"]) == 6 and out.failures == 0
    skipped = [n for n in out.notes if "time limit" in n]
    assert len(skipped) == 3 - len(timed) and not any("scipy" in n for n in skipped)
    assert all(f"time limit of {limit:g} s was used up" in n for n in skipped), skipped
    agg = report.aggregate(out.table)
    if "slow" in timed:  # its ratio has the anchor to go by
        assert next(s for s in report.speedups(agg) if s["variant"] == "slow")["vs_scipy"]


def _tiny_gr(tmp_path):
    g = tmp_path / "in" / "tiny.gr"
    g.parent.mkdir(exist_ok=True)
    g.write_text("p sp 4 5\na 1 2 3\na 2 3 4\na 3 4 5\na 4 1 6\na 1 3 9\n")
    return g


def test_a_finished_run_that_measured_nothing_does_not_say_yet(tmp_path, capsys):
    """`sssp bench G --algorithms dijkstra --baselines '' --graph-time-limit 0` (every
    variant skipped) finished with "No rows: nothing was measured (yet)." in its summary
    and exit 0.  "yet" is for a run still going (or cut short); a finished one says that
    everything was skipped, and exits 2 with one line, as `sssp verify` does where it
    checked nothing."""
    from gpu_sssp.workflows.cli import main

    out = tmp_path / "bench"
    rc = main(["bench", str(_tiny_gr(tmp_path)), "--algorithms", "dijkstra", "--baselines", "",
               "--graph-time-limit", "0", "--sources", "2", "--no-plots", "--out", str(out)])
    err = capsys.readouterr().err
    text = (out / "summary.md").read_text()
    assert "nothing was measured" in text and "yet" not in text, text
    assert report.PARTIAL_NOTE not in text
    assert rc == 2
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "nothing was measured" in errors[0], err
    # while a run goes on, the summary of no rows so far says "yet"
    going = report.summary_markdown(bm.ROW_SCHEMA.empty_table(), {"notes": [report.PARTIAL_NOTE]})
    assert "nothing was measured yet" in going


def test_the_protocol_line_says_the_sources_measured_not_those_asked(tmp_path):
    """`sssp bench rome99.gr --sources 5000` (3,353 vertices) said "5000 random sources per
    graph" in the summary's protocol line while 3,353 were measured.  More sources than
    vertices is how an all-sources run is asked (and one --sources serves graphs of every
    size), so it is capped, not refused: the line says what was measured and that it was
    capped; the run of a graph with that many says the count as before."""
    g = grid_graph()  # 180 vertices
    out, _ = _run([g], ["dijkstra"], baselines=["scipy"], settings={"sources": 500})
    assert len(set(out.table.column("source").to_pylist())) == g.n
    text = report.summary_markdown(out.table, report.context_of(out))
    line = next(ln for ln in text.splitlines() if ln.startswith("- protocol:"))
    assert "500 random sources" not in line and "180 sources (every vertex; 500 asked, capped; seed 0) whose" in line, line
    # two graphs, one of them too small: the asked count, and the graph that had fewer
    big = grid_graph(rows=30, cols=30, name="big")  # 900 vertices
    out, _ = _run([big, g], ["dijkstra"], baselines=["scipy"], settings={"sources": 500})
    line = next(ln for ln in report.summary_markdown(out.table, report.context_of(out)).splitlines()
                if ln.startswith("- protocol:"))
    assert "500 random sources per graph (seed 0; fewer where there are not that many: 180 on grid (every vertex)) whose" in line, line
    assert "on big" not in line
    out, _ = _run([g], ["dijkstra"], baselines=["scipy"], settings={"sources": 20})
    assert "- protocol: 20 random sources per graph (seed" in report.summary_markdown(out.table, report.context_of(out))
