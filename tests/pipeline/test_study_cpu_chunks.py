"""A CPU chunk is solved batch by batch: each batch's files are written and reported as
it ends.  A chunk of up to 4 CPU batches was one solver call whose files were all
written at its end: the progress bar stood still for the whole chunk (seconds per batch
on NY), and a chunk that failed or was interrupted in its last batch kept none of the
batches before it."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.sparse.csgraph import dijkstra

from tests.pipeline.test_study_support import cpu_client, rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    return rome_parquet(tmp_path_factory.mktemp("chunks"))


def _chunk(rome, out, parts, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.task import solve_chunk

    g = read_parquet(rome)
    for folder in ("stats",):
        (out / folder).mkdir(parents=True, exist_ok=True)
    return g, solve_chunk(fingerprint=g.fingerprint, graph_path=str(rome), indices=list(range(len(parts))),
                          sources=parts, method="dijkstra", backend="cpu", outputs=("stats",),
                          distance_form="wide", out=str(out), fsync=False, **kw)


def test_a_chunk_that_fails_in_its_last_batch_keeps_the_batches_before(rome, tmp_path):
    """Batch 2's source is no vertex: the chunk comes back with that batch's error, and
    batches 0 and 1 are written and right (before: one call for the chunk, no file)."""
    from gpu_sssp.pipeline.writers import batch_name

    parts = [np.arange(0, 5), np.arange(5, 9), np.array([10, 3353 + 7])]
    g, got = _chunk(rome, tmp_path, parts)
    assert got["batch"] == 2 and "out of range" in str(got["error"])
    assert sorted(p.name for p in (tmp_path / "stats").iterdir()) == [batch_name(0), batch_name(1)]
    ref = dijkstra(g.to_scipy(), indices=np.arange(9))
    t = pq.read_table(tmp_path / "stats").sort_by("source")
    fin = np.where(np.isfinite(ref), ref, 0)
    assert t["sum_distance"].to_pylist() == [int(v) for v in fin.sum(axis=1)]


def test_each_batch_is_reported_as_it_ends(rome, tmp_path, monkeypatch):
    """Batches 0 and 1 of a 3-batch CPU chunk are reported before the next batch's file
    exists; the chunk's report, last, lists all three (once each)."""
    from gpu_sssp.pipeline.study import task
    from gpu_sssp.pipeline.writers import batch_name

    monkeypatch.setattr(task, "_worker_name", lambda: ("w", "dijkstra-batch-0-2-study"))
    seen = []

    def report(topic, result):
        written = sorted(p.name for p in (tmp_path / "stats").iterdir())
        seen.append((topic, result, written))

    monkeypatch.setattr(task, "_report", report)
    parts = [np.arange(0, 5), np.arange(5, 9), np.arange(9, 12)]
    _g, got = _chunk(rome, tmp_path, parts, report="topic")
    assert [r.get("partial", False) for _t, r, _w in seen] == [True, True, False]
    assert [[m["batch"] for m in r["batches"]] for _t, r, _w in seen] == [[0], [1], [0, 1, 2]]
    assert [w for _t, _r, w in seen] == [[batch_name(0)], [batch_name(0), batch_name(1)],
                                          [batch_name(i) for i in range(3)]]
    assert got["rows"] == 12 and [m["rows"] for m in got["batches"]] == [5, 4, 3]
    first = seen[0][1]["batches"][0]
    assert first["ended"] <= got["ended"] and first["task_ms"] <= got["task_ms"]


def test_a_gpu_chunk_stays_one_solver_call(rome, tmp_path, monkeypatch):
    """A chunk solved under the GPU turn (its kernels back to back) is still one call."""
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.study import task

    calls = []
    real = kernels.solve
    monkeypatch.setattr(kernels, "solve", lambda g, s, **kw: calls.append(len(s)) or real(g, s, **kw))
    monkeypatch.setattr(task, "_solve_turn", lambda m, b: task._Turn(task._SOLVE_LOCK))
    _g, got = _chunk(rome, tmp_path, [np.arange(0, 5), np.arange(5, 9)])
    assert calls == [9] and [m["rows"] for m in got["batches"]] == [5, 4]
    calls.clear()
    monkeypatch.undo()
    monkeypatch.setattr(kernels, "solve", lambda g, s, **kw: calls.append(len(s)) or real(g, s, **kw))
    _chunk(rome, tmp_path / "cpu", [np.arange(0, 5), np.arange(5, 9)])
    assert calls == [5, 4]


@pytest.fixture(scope="module")
def client():
    yield from cpu_client(1)


def test_a_study_journals_a_chunks_batches_as_they_end(rome, tmp_path, client):
    """On a CPU cluster the client journals a chunk's batches one by one (before, all
    of a chunk's batches came in one report at its end, with one arrival time), each
    once; the study's statistics are SciPy's."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study, run_study

    g = read_parquet(rome)
    plan = plan_study(g, rome, plan_sources(g, sources="all"), out=tmp_path / "s", batch_size=40,
                      algorithm="dijkstra")
    seen = []
    summary = run_study(client, plan, backend="cpu", on_batch=lambda meta, st: seen.append(meta))
    assert sorted(m["batch"] for m in seen) == list(range(len(plan.batches)))  # each once
    chunks: dict = {}
    for m in seen:
        chunks.setdefault(m["chunk"], set()).add(m["collected"])
    multi = [c for c in chunks if max(m["chunk_batches"] for m in seen if m["chunk"] == c) > 1]
    assert multi, "no chunk of several batches: the test shows nothing"
    assert any(len(chunks[c]) > 1 for c in multi)
    assert summary["complete"]
    t = pq.read_table(tmp_path / "s" / "stats").sort_by("source")
    ref = dijkstra(g.to_scipy(), indices=np.arange(200))
    fin = np.where(np.isfinite(ref), ref, 0)
    assert t["sum_distance"].to_pylist()[:200] == [int(v) for v in fin.sum(axis=1)]
