"""`sssp bench` with many rows: each measured row is converted from a dict once and
the report is computed on the columns (CPU only; each test failed before its fix).

An all-sources bench of a road graph (264,346 NY sources x ~10 methods) held every row
as a dict for the whole run and, after every method, converted all of them to an Arrow
table again (``pa.Table.from_pylist(rows)``) for the rows file; the summary written
then turned every row back into a dict (``table.to_pylist()``): gigabytes, and work
growing with the square of the methods.
"""
from __future__ import annotations

import json
import math
import tracemalloc
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pytest

from gpu_sssp.pipeline import bench_protocol as bm
from gpu_sssp.pipeline import bench_report as report
from tests.pipeline.test_bench import _run, grid_graph, registry_guard  # noqa: F401 (a fixture)


def _counting_pa(counted: list):
    """``pyarrow`` as ``bench_protocol`` sees it, with every ``from_pylist`` (of a table
    or a record batch) counting the rows it converts into ``counted``."""
    import types

    def wrap(real):
        class Meta(type):
            def __getattr__(cls, name):
                return getattr(real, name)

        class Counting(metaclass=Meta):
            @staticmethod
            def from_pylist(mapping, *a, **k):
                counted.append(len(mapping))
                return real.from_pylist(mapping, *a, **k)
        return Counting

    mod = types.ModuleType("pyarrow")
    mod.__dict__.update({k: getattr(pa, k) for k in dir(pa) if not k.startswith("__")})
    mod.Table, mod.RecordBatch = wrap(pa.Table), wrap(pa.RecordBatch)
    return mod


def test_each_measured_row_is_converted_from_a_dict_once(monkeypatch):
    """After every method the old code converted every row so far again: three variants of
    20 sources converted 20 + 40 + 60 rows for the progress tables and 60 more at the end
    (180 conversions for 60 rows)."""
    counted: list = []
    monkeypatch.setattr(bm, "pa", _counting_pa(counted))
    out, events = _run([grid_graph()], ["dijkstra", "bellman-ford"], baselines=["scipy"],
                       settings={"sources": 20})
    assert len(out.table) == 60 and out.failures == 0
    assert sum(counted) == len(out.table), counted
    # the callers still get every row so far after each variant, in the row schema
    so_far = [i["table"] for e, i in events if e == "rows"]
    assert [len(t) for t in so_far] == [20, 40, 60]
    assert all(t.schema.equals(bm.ROW_SCHEMA) for t in so_far)
    assert so_far[-1].equals(out.table)


def test_a_variant_failed_by_the_distance_check_fails_its_rows_already_converted(registry_guard, monkeypatch):
    """Rows are converted a batch at a time while a variant runs; the whole-vector check
    comes after its timed runs and must still fail every row, those in earlier batches
    too, adding its reason to an error a row already had."""
    monkeypatch.setattr(bm, "CHUNK_ROWS", 4)
    registry_guard.register("swapping", "cpu", "tests.pipeline.test_bench:swapping_solver")
    out, _ = _run([grid_graph()], ["swapping", "dijkstra"], baselines=["scipy"], settings={"sources": 10, "runs": 2})
    rows = out.table.to_pylist()
    bad = [r for r in rows if r["variant"] == "swapping"]
    assert len(bad) == 20 and not any(r["ok"] for r in bad)
    assert all(r["error"].startswith("wrong distances from source") for r in bad), {r["error"] for r in bad}
    assert all(r["ok"] and r["error"] is None for r in rows if r["variant"] != "swapping")

    rows_ = bm._Rows()
    rows_ += [{"source": i, "ok": i != 1, "error": None if i != 1 else "wrong answer"} for i in range(6)]
    rows_.fail("wrong distances")
    t = rows_.table()
    assert t.column("ok").to_pylist() == [False] * 6
    assert t.column("error").to_pylist() == ["wrong distances", "wrong answer; wrong distances"] + ["wrong distances"] * 4


def _many_rows():
    out, _ = _run([grid_graph()], ["dijkstra", "bellman-ford"], baselines=["scipy"], settings={"sources": 20})
    return out, pa.concat_tables([out.table] * 300)  # 18,000 rows


def test_the_summary_makes_no_dict_per_row():
    """The summary (written after every method while the bench runs) aggregated from
    ``table.to_pylist()``: 18,000 rows came to about 35 MiB of Python objects (a
    road graph's all-sources run to gigabytes); on the columns it is under 2 MiB."""
    out, t = _many_rows()
    tracemalloc.start()
    try:
        report.summary_markdown(t, report.context_of(out))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB"


def _set(table: pa.Table, column: str, values) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(i, column, pa.array(values, table.schema.field(column).type))


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_aggregate_on_the_columns_gives_what_the_dicts_gave(tmp_path):
    """The columnar aggregate against the one it replaced, on rows with unset and zero
    kernel times, unset relaxations, failed rows, a NaN time, batch sizes and two runs."""
    out, _ = _run([grid_graph()], ["dijkstra", "bellman-ford"], baselines=["scipy"],
                  settings={"sources": 6, "runs": 2})
    t = out.table
    n = len(t)
    rng = np.random.default_rng(5)
    t = _set(t, "kernel_ms", [None if i % 5 == 0 else (0.0 if i % 7 == 0 else float(rng.random())) for i in range(n)])
    t = _set(t, "relaxations", [None if i % 3 == 0 else int(rng.integers(0, 10**6)) for i in range(n)])
    t = _set(t, "time_ms", [None if i % 11 == 0 else (math.nan if i == 4 else float(rng.random())) for i in range(n)])
    t = _set(t, "ok", [i % 13 != 0 for i in range(n)])
    t = _set(t, "batch_size", [None if i % 4 == 0 else int(i % 3) for i in range(n)])
    t = _set(t, "warmup_ms", [None if i % 2 else 1.5 for i in range(n)])
    for table in (t, t.slice(0, 0)):
        want, got = _aggregate_by_dicts(table), report.aggregate(table)
        assert len(want) == len(got)
        for w, g in zip(want, got):
            assert list(w) == list(g)
            bad = {k: (w[k], g[k]) for k in w if not _same(w[k], g[k])}
            assert not bad, (w["variant"], bad)
    # two runs of the same graph, merged
    report.write_rows(t, tmp_path / "a" / "rows.parquet", report.context_of(out))
    report.write_rows(t.slice(0, n // 2), tmp_path / "b" / "rows.parquet", report.context_of(out))
    merged, ctx = report.load_rows([tmp_path / "a", tmp_path / "b"])
    runs = report.run_labels(ctx)
    want, got = _aggregate_by_dicts(merged, runs), report.aggregate(merged, runs)
    assert [(w["graph"], w["variant"]) for w in want] == [(g["graph"], g["variant"]) for g in got]
    assert all(_same(w[k], g[k]) for w, g in zip(want, got) for k in w)


def _aggregate_by_dicts(table: pa.Table, runs=None) -> list[dict]:
    """`aggregate` as it was written before (a dict per row): the reference."""
    recs = table.to_pylist()
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for r in recs:
        groups.setdefault((r.get(report.RUN_COLUMN), r["graph"], r["variant"]), []).append(r)
    names = report._line_names([(k[0], k[1]) for k in groups], runs)
    groups = OrderedDict(((names[k[0], k[1]], k[2]), v) for k, v in groups.items())
    # per graph: GPU methods, CPU methods, then the baselines; ablation configurations last
    kind_rank = {"gpu": 0, "cpu": 1, "baseline": 2}
    role_rank = {"main": 0, "sweep": 0, "ablation": 1}
    graph_rank = {g: i for i, g in enumerate(OrderedDict.fromkeys(k[0] for k in groups))}
    order = sorted(enumerate(groups.items()), key=lambda e: (
        graph_rank[e[1][0][0]], role_rank.get(e[1][1][0]["role"], 0),
        kind_rank.get(e[1][1][0]["kind"], 3), e[0]))
    out = []
    for _, ((g, var), rs) in order:
        times = [r["time_ms"] for r in rs if r["time_ms"] is not None]
        per_source: "OrderedDict[int, list]" = OrderedDict()
        for r in rs:
            if r["time_ms"] is not None:
                per_source.setdefault(r["source"], []).append(r["time_ms"])
        first = rs[0]
        arcs = first["arcs"] or 0
        relax = report._mean([r["relaxations"] for r in rs])
        # the rates of the means (as the table's definitions say: arcs / kernel time),
        # not means of per-row rates, which exceed them whenever the times vary
        rate_ms = report._mean([r["kernel_ms"] if r["kernel_ms"] and r["kernel_ms"] > 0 else r["time_ms"]
                         for r in rs if r["time_ms"] is not None or r["kernel_ms"]])
        relax_ms = report._mean([r["kernel_ms"] if r["kernel_ms"] and r["kernel_ms"] > 0 else r["time_ms"]
                          for r in rs if r["relaxations"] is not None and (r["time_ms"] is not None or r["kernel_ms"])])
        out.append({
            "graph": g, "graph_name": first["graph"], "run": first.get(report.RUN_COLUMN),
            "variant": var, "algorithm": first["algorithm"], "kind": first["kind"],
            "role": first["role"], "options": json.loads(first["options"] or "{}"), "arcs": arcs,
            "vertices": first["vertices"], "rows": len(rs),
            "sources": len({r["source"] for r in rs}), "runs": len({r["run"] for r in rs}),
            "batch_size": max((r["batch_size"] or 1) for r in rs),
            # the mean kept within min..max: NumPy's mean of equal times (a batched call's,
            # divided per source) can be an ulp off them, which broke the plot's error bars
            "mean_ms": float(np.clip(np.mean(times), np.min(times), np.max(times))) if times else None,
            "min_ms": float(np.min(times)) if times else None,
            "max_ms": float(np.max(times)) if times else None,
            "kernel_ms": report._mean([r["kernel_ms"] for r in rs]),
            "warmup_ms": report._mean([r["warmup_ms"] for r in rs]),
            "mteps": (arcs / (rate_ms * 1e3)) if rate_ms else None,
            "edges_per_s": (report._mean([r["relaxations"] for r in rs if r["relaxations"] is not None]) / (relax_ms * 1e-3))
            if relax_ms else None,
            "relax_per_arc": (relax / arcs) if (relax is not None and arcs) else None,
            "iterations": report._mean([r["iterations"] for r in rs]),
            "launches": report._mean([r["launches"] for r in rs]),
            "host_syncs": report._mean([r["host_syncs"] for r in rs]),
            "failures": sum(1 for r in rs if not r["ok"]),
            "source_ms": {s: float(np.mean(ts)) for s, ts in per_source.items()},
        })
    return out

