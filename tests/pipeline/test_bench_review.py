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
