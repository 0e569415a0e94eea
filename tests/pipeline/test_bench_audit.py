"""Defects found by the `sssp bench` user audit (CPU only): each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline import bench_report as report
from tests.pipeline.test_bench import _run, grid_graph


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
