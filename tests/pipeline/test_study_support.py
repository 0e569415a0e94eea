"""Helpers for the study tests (graph files, SciPy references) and unit tests of the
study's small parts: source planning, atomic writers, the journal, size estimates."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
ROME = (REPO.parent / "shared" / "data" / "dimacs9" / "rome99.gr").resolve()
ROME_LOCAL = REPO / "data" / "rome99.gr"


def local_cpu_cluster(n: int = 2, silence: int = logging.WARNING):
    """``(cluster, client)``: a local CPU cluster of ``n`` single-thread worker processes,
    its dashboard on a free port."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=silence)
    return cluster, Client(cluster)


def cpu_client(n: int = 2, silence: int = logging.WARNING):
    """A module fixture's body (``yield from cpu_client(n)``): the client of
    :func:`local_cpu_cluster`, closed with its cluster after the module."""
    cluster, client = local_cpu_cluster(n, silence)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def rome_source() -> Path:
    for p in (ROME_LOCAL, ROME):
        if p.exists():
            return p
    pytest.skip("rome99.gr is not available (data/ or ../shared/data/dimacs9)")


def write_edge_parquet(path, src, dst, w, *, n, id_base, directed=True) -> Path:
    """A Parquet edge list in the project's contract (file ids, ``sssp`` metadata)."""
    w = np.asarray(w)
    meta = {"vertices": int(n), "arcs": int(len(src)), "directed": bool(directed), "id_base": int(id_base),
            "weight_type": str(w.dtype)}
    table = pa.table({"src": np.asarray(src, dtype=np.int64), "dst": np.asarray(dst, dtype=np.int64), "weight": w})
    table = table.replace_schema_metadata({b"sssp": json.dumps(meta).encode()})
    pq.write_table(table, path)
    return Path(path)


def _parse_gr(path):
    src, dst, w = [], [], []
    n = None
    with open(path) as fh:
        for line in fh:
            if line.startswith("p "):
                n = int(line.split()[2])
            elif line.startswith("a "):
                _, a, b, c = line.split()
                src.append(int(a)), dst.append(int(b)), w.append(int(c))
    return n, np.array(src), np.array(dst), np.array(w, dtype=np.int64)


def rome_parquet(folder) -> Path:
    """rome99 as a Parquet edge list in ``folder`` (via ``pipeline.ingest`` when present)."""
    out = Path(folder) / "rome99.parquet"
    if out.exists():
        return out
    gr = rome_source()
    try:
        from gpu_sssp.pipeline.ingest import ingest
    except ImportError:
        ingest = None
    if ingest is not None:
        ingest(gr, out)
    else:
        n, s, d, w = _parse_gr(gr)
        write_edge_parquet(out, s, d, w, n=n, id_base=1)
    return out


def grid_parquet(folder, rows=120, cols=120, seed=3) -> Path:
    """A directed 4-neighbour grid (both directions, different weights), 0-based ids."""
    out = Path(folder) / f"grid{rows}x{cols}.parquet"
    if out.exists():
        return out
    idx = np.arange(rows * cols).reshape(rows, cols)
    pairs = [(idx[:, :-1].ravel(), idx[:, 1:].ravel()), (idx[:-1, :].ravel(), idx[1:, :].ravel())]
    s = np.concatenate([np.concatenate([a, b]) for a, b in pairs])
    d = np.concatenate([np.concatenate([b, a]) for a, b in pairs])
    w = np.random.default_rng(seed).integers(1, 100, size=len(s)).astype(np.int64)
    return write_edge_parquet(out, s, d, w, n=rows * cols, id_base=0)


#: the study of :func:`two_worker_folder` (keywords of ``study()`` and of ``plan_study``'s sources)
TWO_WORKER_STUDY = dict(random=190, seed=3, algorithm="dijkstra", outputs="distances")


def two_worker_folder(graph_path, out) -> list[int]:
    """A study folder (manifest written, nothing solved) of :data:`TWO_WORKER_STUDY` on
    ``graph_path`` (the 30 x 30 grid) whose default batches were laid out for 2 CPU
    workers: 64, 64, 31, 31 (``batch_workers`` 2, where the plain split of 64 is 64, 64,
    62).  Returns the batch sizes."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import Study, plan_study

    g = read_parquet(graph_path)
    kw = dict(TWO_WORKER_STUDY)
    sp = plan_sources(g, random=kw.pop("random"), seed=kw.pop("seed"))
    plan = plan_study(g, graph_path, sp, out=out, batch_size="auto", **kw)
    plan.resolve_batch_size(["cpu", "cpu"])
    assert plan.identity["batch_workers"] == 2
    s = Study(plan)
    s.start({})
    s.close()
    return [len(b) for b in plan.batches]


def scipy_stats(graph, sources_internal):
    """(reached, eccentricity, exact sum) per source with SciPy's Dijkstra."""
    from scipy.sparse.csgraph import dijkstra

    dist = dijkstra(graph.to_scipy(), directed=True, indices=np.asarray(sources_internal))
    fin = np.isfinite(dist)
    reached = fin.sum(axis=1)
    ecc = np.where(fin, dist, -np.inf).max(axis=1)
    total = np.where(fin, dist, 0).astype(np.int64).sum(axis=1)
    return reached, ecc, total, dist


# ---------------------------------------------------------------------- unit tests
def solve_counter():
    """A scheduler plugin counting how often each task's result was stored
    (``.memory[key]``): a batch solved twice goes to ``memory`` twice.  Added to a
    LocalCluster's scheduler, it counts in this process."""
    from collections import Counter

    from distributed.diagnostics.plugin import SchedulerPlugin

    class SolveCounter(SchedulerPlugin):
        name = "count-solves"

        def __init__(self):
            self.memory = Counter()

        def transition(self, key, start, finish, *args, **kwargs):
            if finish == "memory":
                self.memory[key] += 1

    return SolveCounter()


def test_plan_sources_kinds(tmp_path):
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.pipeline.sources import plan_sources

    g = read_parquet(grid_parquet(tmp_path, 10, 10))
    a = plan_sources(g, sources="all", order="given")
    assert a.count == 100 and (a.sources == np.arange(100)).all()
    loc = plan_sources(g, sources="all")
    assert sorted(loc.sources.tolist()) == list(range(100)) and loc.how["order"] == "locality"
    r1 = plan_sources(g, random=30, seed=5)
    r2 = plan_sources(g, random=30, seed=5)
    r3 = plan_sources(g, random=30, seed=6)
    assert (r1.sources == r2.sources).all() and len(set(r1.sources.tolist())) == 30
    assert set(r1.sources.tolist()) != set(r3.sources.tolist())
    lst = plan_sources(g, ids=[5, 7, 5, 9], order="given")
    assert lst.sources.tolist() == [5, 7, 9] and lst.how["duplicates_dropped"] == 1
    with pytest.raises(ValueError, match="source 100 does not exist"):
        plan_sources(g, ids=[1, 100])
    with pytest.raises(ValueError, match="must be integers"):
        plan_sources(g, ids=[1, 2.5])  # not silently vertex 2
    with pytest.raises(ValueError, match="between 1 and"):
        plan_sources(g, random=101)
    with pytest.raises(ValueError, match="one way only"):
        plan_sources(g, ids=[1], random=3)


def test_sources_file(tmp_path):
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.pipeline.sources import plan_sources

    g = read_parquet(grid_parquet(tmp_path, 10, 10))
    f = tmp_path / "s.ss"
    f.write_text("p aux sp ss 3\ns 4\ns 8\ns 4\n")
    p = plan_sources(g, sources_file=f, order="given")
    assert p.sources.tolist() == [4, 8] and p.how["kind"] == "file"
    empty = tmp_path / "empty.ss"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty|no sources"):
        plan_sources(g, sources_file=empty)


def test_writers_atomic_and_journal(tmp_path):
    from gpu_sssp.pipeline.writers import Journal, remove_temporaries, write_json_atomic, write_parquet_atomic

    t = pa.table({"a": [1, 2, 3]})
    size = write_parquet_atomic(t, tmp_path / "x" / "t.parquet", metadata={"k": 1})
    assert size > 0 and pq.read_table(tmp_path / "x" / "t.parquet").num_rows == 3
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["t.parquet"]
    write_json_atomic({"a": np.int64(3)}, tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": 3}
    (tmp_path / "x" / ".t2.parquet.tmp-0123456789ab").write_bytes(b"partial")  # a killed writer's
    assert remove_temporaries(tmp_path, ["t2.parquet"]) == 0  # not below the folder given
    assert remove_temporaries(tmp_path / "x", ["t2.parquet"]) == 1
    j = Journal(tmp_path / "journal.jsonl")
    j.append({"batch": 0})
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"batch": 1, "ro')  # a line torn by a crash
    j.append({"batch": 2})
    assert [e["batch"] for e in j.entries()] == [0, 2]
    # several batches journaled with one write and one fsync, after another torn line
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"batch": 3, "ro')
    j.extend([{"batch": 4}, {"batch": 5, "files": [tmp_path / "a"]}])
    j.extend([])
    assert [e["batch"] for e in j.entries()] == [0, 2, 4, 5]
    with pytest.raises(TypeError):
        j.extend([{"batch": 6}, {"batch": 7, "x": object()}])
    assert [e["batch"] for e in j.entries()] == [0, 2, 4, 5]  # nothing of a failed extend
    # a resume cuts a torn last line: the file is valid JSON Lines again, nothing else lost
    assert j.repair() == 0
    with open(tmp_path / "journal.jsonl", "a") as fh:
        fh.write('{"batch": 8, "ro')
    assert j.repair() == len('{"batch": 8, "ro')
    raw = (tmp_path / "journal.jsonl").read_bytes()
    assert raw.endswith(b"\n") and b'"batch": 8' not in raw
    j.append({"batch": 9})
    assert [e["batch"] for e in j.entries()] == [0, 2, 4, 5, 9]


def test_distance_estimate_and_limit(tmp_path):
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import StudyError, distance_bytes, plan_study

    # all-sources NY (264,346 vertices) in long form: 32 bytes a row
    assert distance_bytes(264_346, 264_346, "long", False) == 264_346**2 * 32
    assert distance_bytes(10, 100, "wide", True) == 10 * 100 * 16 + 800
    g = read_parquet(grid_parquet(tmp_path, 10, 10))
    sp = plan_sources(g, sources="all")
    with pytest.raises(StudyError, match="max_distance_bytes=320000"):
        plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o", outputs="distances", max_distance_bytes=1000)
    import dask.config

    with dask.config.set({"sssp.study.max-distance-bytes": 10**6, "sssp.study.batch-size": 7}):
        plan = plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o", outputs="distances")
    assert plan.batch_size == 7 and len(plan.batches) == 15
    with pytest.raises(StudyError, match="unknown output"):
        plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o", outputs="stats,paths")
    with pytest.raises(StudyError, match="unknown algorithm"):
        plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o", algorithm="nope")


def test_task_keys_digest_the_sources_once(tmp_path, monkeypatch):
    """Every batch's task key carries the study id (a digest of all sources); keys for
    many batches compute it once, not once per batch (all of NY: 517 batches took 0.6 s
    to submit when each key hashed the 264,346 sources again)."""
    from gpu_sssp.pipeline.graph import Graph, read_parquet
    from gpu_sssp.pipeline.sources import SourcePlan, plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(grid_parquet(tmp_path, 10, 10))
    plan = plan_study(g, tmp_path / "g.parquet", plan_sources(g, sources="all"), out=tmp_path / "o",
                      batch_size=7)
    calls = []
    orig = SourcePlan.digest
    monkeypatch.setattr(SourcePlan, "digest", lambda self: calls.append(1) or orig(self))
    keys = plan.chunk_keys([[i] for i in range(len(plan.batches))], "phast")
    assert len(calls) == 1 and len(keys) == len(set(keys)) == 15
    assert keys[3] == plan.task_key(3, "phast") == f"phast-batch-000003-000003-{plan.study_id}"
    assert plan.chunk_keys([[4, 5, 6]], "dijkstra") == [f"dijkstra-batch-000004-000006-{plan.study_id}"]
    from distributed.utils import key_split

    assert key_split(keys[3]) == "phast-batch"  # the dashboard's task prefix


def test_statistics_file_reads_back_as_the_statistics_table(tmp_path):
    """A batch's statistics file is written from dictionary columns without the Arrow
    schema (a faster encode); it must read back exactly as ``Result.stats_table``."""
    from gpu_sssp import kernels
    from gpu_sssp.kernels.graph import Graph
    from gpu_sssp.kernels.result import STATS_SCHEMA
    from gpu_sssp.pipeline.study.task import STATS_PARQUET
    from gpu_sssp.pipeline.writers import encode_parquet, write_parquet_atomic

    rng = np.random.default_rng(4)
    g = Graph.from_edges(rng.integers(0, 40, 200), rng.integers(0, 40, 200), rng.integers(1, 9, 200), 40)
    res = kernels.solve(g, [0, 5, 5, 39], method="dijkstra")
    plain = res.stats_table(g.id_base, worker="w-1")
    f = tmp_path / "stats" / "batch-000000.parquet"
    write_parquet_atomic(res.stats_table(g.id_base, worker="w-1", for_file=True), f, **STATS_PARQUET)
    back = pq.read_table(f)
    assert back.schema.equals(STATS_SCHEMA)
    assert back.equals(plain)
    assert back.column("worker").to_pylist() == ["w-1"] * 4
    # as the warm-up encodes it (pipeline.plugins), with a study id in the footer
    data = encode_parquet(res.stats_table(worker="w-1", for_file=True), **STATS_PARQUET,
                          key_value_metadata={"gpu_sssp.study": "x"})
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.metadata[b"gpu_sssp.study"] == b"x"
    # as a task writes it (encoded in memory): LZ4, min/max statistics for the sources only
    from gpu_sssp.pipeline.study.task import _write_batch

    _write_batch(res, g, 1, ("stats",), "long", tmp_path, "w-1", False)
    f1 = tmp_path / "stats" / "batch-000001.parquet"
    assert pq.read_table(f1).equals(plain)
    rg = pq.ParquetFile(f1).metadata.row_group(0)
    cols = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
    assert {c.compression for c in cols.values()} <= {"LZ4", "LZ4_RAW"}
    assert cols["source"].statistics is not None and cols["source"].statistics.min == 0
    assert cols["eccentricity"].statistics is None


def test_journal_honours_the_umask_of_a_group_shared_folder(tmp_path):
    """The journal is created as the other files are (mode 0o666 less the umask): with
    umask 002 the group can append to it (a colleague's ``--resume``), not 0o644."""
    import os

    from gpu_sssp.pipeline.writers import Journal, write_json_atomic

    old = os.umask(0o002)
    try:
        Journal(tmp_path / "journal.jsonl").append({"batch": 0})
        write_json_atomic({"a": 1}, tmp_path / "manifest.json")
    finally:
        os.umask(old)
    assert (tmp_path / "journal.jsonl").stat().st_mode & 0o777 == 0o664
    assert (tmp_path / "manifest.json").stat().st_mode & 0o777 == 0o664


def test_plan_sources_takes_file_ids_and_files_as_sources_as_matrix_does(tmp_path):
    """``study(sources=[...])`` is what a Python user writes first (``matrix`` takes it):
    file ids, one or a sequence, or a file of ids - it was refused with the command
    line's wording ('--sources takes all ... use --source ID')."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources

    g = read_parquet(grid_parquet(tmp_path, 10, 10))
    want = plan_sources(g, ids=[5, 7, 9], order="given")
    for given in ([5, 7, 9], (5, 7, 9), np.array([5, 7, 9]), range(5, 10, 2)):
        sp = plan_sources(g, sources=given, order="given")
        assert sp.sources.tolist() == want.sources.tolist() and sp.how["kind"] == "list"
    assert plan_sources(g, sources=7).sources.tolist() == [7]
    assert plan_sources(g, sources=np.int32(7)).sources.tolist() == [7]
    assert plan_sources(g, ids=7).sources.tolist() == [7]
    f = tmp_path / "s.ss"
    f.write_text("s 4\ns 8\n")
    for given in (f, str(f)):
        sp = plan_sources(g, sources=given, order="given")
        assert sp.sources.tolist() == [4, 8] and sp.how == dict(sp.how, kind="file", file=str(f))
    with pytest.raises(ValueError, match="source 100 does not exist"):
        plan_sources(g, sources=[1, 100])
    for bad in (True, 2.5, {"a": 1}, {5, 7}, object(), np.zeros((2, 2), dtype=np.int64)):
        with pytest.raises(ValueError, match="sources: expected 'all', an id, a sequence of ids or a file") as err:
            plan_sources(g, sources=bad)
        assert "--source" not in str(err.value)  # no command-line wording for a Python caller
    # the review's cases: a name as bytes is a file (it was read as a list of byte values),
    # a 0-d array one id (a traceback), ids=True refused in one line (a traceback)
    assert plan_sources(g, sources=os.fsencode(str(f)), order="given").sources.tolist() == [4, 8]
    assert plan_sources(g, sources=np.array(7)).sources.tolist() == [7]
    for bad in (True, "s.ss"):
        with pytest.raises(ValueError, match="ids: expected an id"):
            plan_sources(g, ids=bad)
    with pytest.raises(ValueError, match="an empty name is neither 'all' nor a file of ids"):
        plan_sources(g, sources="")
    with pytest.raises(ValueError, match=r"one way only \(got sources, ids\)"):
        plan_sources(g, sources=[1], ids=[2])
    with pytest.raises(ValueError, match=r"one way only \(got sources, random\)"):
        plan_sources(g, sources=f, random=3)
    with pytest.raises(ValueError, match=r"one way only \(got all, ids\)"):
        plan_sources(g, sources="all", ids=[2])
    with pytest.raises(ValueError, match="no such|not found|No such"):
        plan_sources(g, sources=tmp_path / "absent.ss")


def test_the_manifest_names_the_version_of_the_code_that_runs():
    """A checkout on PYTHONPATH (no installed metadata, or another copy's) was recorded
    as gpu-sssp "unknown" (the GPU host's cluster bench showed it)."""
    import gpu_sssp
    from gpu_sssp.pipeline.study.versions import versions

    assert versions()["gpu-sssp"] == gpu_sssp.__version__
