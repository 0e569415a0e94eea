"""Studies under faults: a journaled batch is never solved again when the worker that
ran it dies; one run per study folder (a lock naming its holder); a failed run leaves
the manifest ``failed`` with its reason; a resume refused for another seed names the
seed; attached studies of non-Parquet inputs give the workers ``DIR/graph.parquet``."""
from __future__ import annotations

import json
import logging
import os
import platform
import signal
import time

import numpy as np
import pytest

from tests.pipeline.test_study_support import (TWO_WORKER_STUDY, grid_parquet, rome_parquet, rome_source, solve_counter,
                                               two_worker_folder, write_edge_parquet)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _cluster(n=2):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    return cluster, Client(cluster)


def _plan(graph_path, out, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(graph_path)
    src_kw = {k: kw.pop(k) for k in ("sources", "ids", "random", "seed", "sources_file", "order") if k in kw}
    return plan_study(g, graph_path, plan_sources(g, **src_kw), out=out, **kw)


def test_journaled_batches_are_not_solved_again_when_their_worker_dies(tmp_path):
    from gpu_sssp.pipeline.study import run_study

    path = rome_parquet(tmp_path)
    cluster, client = _cluster(2)
    counter = solve_counter()
    cluster.scheduler.add_plugin(counter)
    try:
        plan = _plan(path, tmp_path / "study", sources="all", batch_size=8)
        killed: dict = {}

        def on_batch(meta, study):
            if killed or len(study.done) < 24:
                return
            # the worker that ran the latest batch holds the results of every batch it
            # finished while the client holds their futures; let the client's releases
            # reach the scheduler (without the fix they never do: the wait times out)
            journaled = {e["task"] for e in study.done.values()}  # the chunks' task keys
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(k in cluster.scheduler.tasks for k in journaled):
                time.sleep(0.05)
            info = client.scheduler_info()["workers"]
            addr = next(a for a, w in info.items() if str(w.get("name")) == meta["worker"])
            pid = client.run(os.getpid, workers=[addr])[addr]
            killed["journaled"] = set(study.done)
            killed["victim"] = [i for i, e in study.done.items() if e["worker"] == meta["worker"]]
            os.kill(pid, signal.SIGKILL)

        summary = run_study(client, plan, backend="cpu", on_batch=on_batch)
        assert killed and summary["complete"]
        lines = [json.loads(x) for x in (tmp_path / "study" / "journal.jsonl").read_text().splitlines()]
        keys = {e["batch"]: e["task"] for e in lines}
        # rome99's sources on CPU workers: phast (warm workers; dijkstra without ch-router)
        assert all(k.startswith(("phast-batch-", "dijkstra-batch-")) for k in keys.values()), keys
        before = sorted(killed["journaled"])
        assert len(killed["victim"]) >= 3, killed  # results the dead worker held
        twice = {i: counter.memory[keys[i]] for i in before if counter.memory[keys[i]] != 1}
        assert not twice, f"journaled batches solved again after the worker died: {twice}"
        # and every batch is journaled exactly once
        assert sorted(e["batch"] for e in lines) == list(range(len(plan.batches)))
    finally:
        client.close()
        cluster.close()


def test_one_run_per_folder_in_process(tmp_path):
    from gpu_sssp.pipeline.study import Study, StudyError

    path = grid_parquet(tmp_path, 10, 10)
    first = Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5))
    with pytest.raises(StudyError, match=rf"in use by another study run \(pid {os.getpid()} on host "
                       rf"{platform.node()} since"):
        Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5))
    first.close()
    Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5)).close()  # free again


def test_a_run_that_never_starts_leaves_no_folder(tmp_path):
    """The lock needs the folder; a run stopped before its first write (the cluster
    would not start) removes the folder it created, lock file and all."""
    from gpu_sssp.pipeline.study import Study

    path = grid_parquet(tmp_path, 10, 10)
    s = Study(_plan(path, tmp_path / "new", random=10, seed=1, batch_size=5))
    assert (tmp_path / "new" / ".lock").exists()
    s.close()
    assert not (tmp_path / "new").exists()
    # a folder that was there stays, and so does a started study's lock file
    (tmp_path / "old").mkdir()
    Study(_plan(path, tmp_path / "old", random=10, seed=1, batch_size=5)).close()
    assert (tmp_path / "old").is_dir()
    s = Study(_plan(path, tmp_path / "started", random=10, seed=1, batch_size=5))
    s.start({})
    s.close()
    assert (tmp_path / "started" / "manifest.json").exists()
    Study(_plan(path, tmp_path / "started", random=10, seed=1, batch_size=5), resume=True).close()


def test_failed_batch_marks_the_manifest_and_releases_the_folder(tmp_path):
    from gpu_sssp.kernels.result import NegativeCycleError
    from gpu_sssp.pipeline.study import Study, run_study

    g = write_edge_parquet(tmp_path / "neg.parquet", [1, 2, 3, 3, 4], [2, 3, 1, 4, 5],
                           np.array([1, -3, 1, 2, 1]), n=5, id_base=1)
    cluster, client = _cluster(1)
    try:
        plan = _plan(g, tmp_path / "s", ids=[5, 4, 1], batch_size=1, order="given")
        with pytest.raises(NegativeCycleError, match="negative cycle reachable from source 1"):
            run_study(client, plan, backend="cpu")
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["status"] == "failed"
        assert m["failure"]["error"] == "NegativeCycleError" and m["failure"]["batch"] == 2
        assert "negative cycle" in m["failure"]["reason"]
        assert m["runs"][-1]["status"] == "failed"
        Study(_plan(g, tmp_path / "s", ids=[5, 4, 1], batch_size=1, order="given"), resume=True).close()
    finally:
        client.close()
        cluster.close()


def test_resume_with_another_seed_names_the_seed(tmp_path):
    from gpu_sssp.pipeline.study import Study, StudyError

    path = grid_parquet(tmp_path, 10, 10)
    s = Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5))
    s.start({})
    s.close()
    with pytest.raises(StudyError) as err:
        Study(_plan(path, tmp_path / "s", random=10, seed=2, batch_size=5), resume=True)
    msg = str(err.value)
    assert "seed=: folder has 1, asked 2" in msg
    assert "sources_digest" not in msg and "sources_count" not in msg
    with pytest.raises(StudyError, match="number of sources: folder has 10, asked 12"):
        Study(_plan(path, tmp_path / "s", random=12, seed=1, batch_size=5), resume=True)
    with pytest.raises(StudyError) as err:
        Study(_plan(path, tmp_path / "s", sources="all", batch_size=5), resume=True)
    assert ("sources: the folder's study has 10 random sources (seed=1), asked all 100 sources "
            "(give random=10 seed=1 to resume it)") in str(err.value)
    srcs = tmp_path / "ids.txt"
    srcs.write_text("1\n2\n")
    with pytest.raises(StudyError) as err:  # (it said "--sources-file: folder has None, asked 'ids.txt'")
        Study(_plan(path, tmp_path / "s", sources_file=str(srcs), batch_size=5), resume=True)
    assert (f"the folder's study has 10 random sources (seed=1), asked 2 sources from sources_file='{srcs}' "
            "(give random=10 seed=1 to resume it)") in str(err.value)
    assert "None" not in str(err.value)


def test_resume_keeps_the_folders_batch_layout_and_refuses_another(tmp_path):
    """A study whose default batches were laid out for 2 workers (``batch_workers`` in
    its identity: 64, 64, 31, 31) resumes with that layout when no batch size is given,
    and when the folder's own ``--batch-size 64`` is given (it was refused, naming the
    internal ``batch_workers``: its plain split is 64, 64, 62).  Another batch size is
    refused naming it.  It used to be accepted (the key missing from the new identity was
    not compared): the batches were re-planned and the old ``batch-000003`` files stayed,
    221 statistics rows for 190 sources."""
    from gpu_sssp.pipeline.study import Study, StudyError

    path = grid_parquet(tmp_path, 30, 30)
    kw = dict(random=190, seed=3, algorithm="dijkstra", outputs="distances")
    p = _plan(path, tmp_path / "s", **kw)
    p.resolve_batch_size(["cpu", "cpu"])
    assert p.identity["batch_workers"] == 2 and [len(b) for b in p.batches] == [64, 64, 31, 31]
    s = Study(p)
    s.start({})
    s.close()
    again = _plan(path, tmp_path / "s", **kw)
    Study(again, resume=True).close()  # no batch size given: the folder's layout
    assert again.batch_workers == 2 and [len(b) for b in again.batches] == [64, 64, 31, 31]
    same = _plan(path, tmp_path / "s", batch_size=64, **kw)
    Study(same, resume=True).close()  # the folder's own batch size: its layout
    assert same.batch_workers == 2 and [len(b) for b in same.batches] == [64, 64, 31, 31]
    with pytest.raises(StudyError) as err:
        Study(_plan(path, tmp_path / "s", batch_size=32, **kw), resume=True)
    msg = str(err.value)
    assert "batch_size=: folder has 64, asked 32" in msg and "batch_workers" not in msg
    assert "4 batches of 31-64" in msg and "without batch_size=" in msg and len(msg.splitlines()) == 1


def test_resume_keeps_the_folders_batches_over_a_configured_batch_size(tmp_path):
    """``study(resume=True)`` with dask config's ``sssp.study.batch-size`` set (32 here,
    64 below) keeps the folder's batches (64, 64, 31, 31, laid out for 2 workers) and
    resumes on 1 worker, as without it; it was refused as a different study.  The
    setting still sizes a new study (plain split); ``batch_size=`` given is compared
    with the folder's, and its refusal says to leave it out, in the CLI's and in
    Python's terms."""
    import dask

    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    path = grid_parquet(tmp_path, 30, 30)
    out = tmp_path / "s"
    assert two_worker_folder(path, out) == [64, 64, 31, 31]
    kw = dict(TWO_WORKER_STUDY, out=out, resume=True, cpu_workers=1)
    with dask.config.set({"sssp.study.batch-size": 32}):
        summary = study(path, **kw)
        assert summary["complete"] and summary["sources_solved"] == 190
        m = json.loads((out / "manifest.json").read_text())
        assert m["identity"]["batch_size"] == 64 and m["identity"]["batch_workers"] == 2 and m["batches"] == 4
        assert study(path, batch_size=64, **kw)["complete"]  # the folder's own: its layout
        with pytest.raises(StudyError) as err:
            study(path, batch_size=48, **kw)
        msg = str(err.value)
        assert "batch_size=: folder has 64, asked 48" in msg and len(msg.splitlines()) == 1
        assert "resume without batch_size= to keep the folder's" in msg
        fresh = _plan(path, tmp_path / "new", random=190, seed=3)  # a new study: the setting's plain split
        assert fresh.batch_size == 32 and fresh.batch_workers == 1
    with dask.config.set({"sssp.study.batch-size": 64}):  # the plain split's size: the folder's layout too
        assert study(path, **kw)["sources_solved"] == 190
    assert json.loads((out / "manifest.json").read_text())["identity"]["batch_workers"] == 2


def test_resume_compares_identity_keys_present_on_one_side_only(tmp_path):
    """Every key of either identity is compared: one the folder's study has and the asked
    one has not is a difference (named), except an absent ``batch_workers``, which
    means 1 (the plain split; older folders, and this one, write it only above 1)."""
    from gpu_sssp.pipeline.study import Study, StudyError

    path = grid_parquet(tmp_path, 10, 10)
    s = Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5))
    s.start({})
    s.close()
    mpath = tmp_path / "s" / "manifest.json"
    m = json.loads(mpath.read_text())
    assert "batch_workers" not in m["identity"]
    m["identity"]["batch_workers"] = 1  # the same layout, spelled out
    mpath.write_text(json.dumps(m))
    Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5), resume=True).close()
    m["identity"]["lanes"] = 32  # a key this version does not know
    mpath.write_text(json.dumps(m))
    with pytest.raises(StudyError, match="lanes: folder has 32, asked none"):
        Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5), resume=True)
    del m["identity"]["lanes"]
    m["identity"].update(targets_digest="0123456789abcdef", targets_count=7, stats_over="targets",
                         matrix_form="wide")
    mpath.write_text(json.dumps(m))
    with pytest.raises(StudyError) as err:
        Study(_plan(path, tmp_path / "s", random=10, seed=1, batch_size=5), resume=True)
    msg = str(err.value)
    assert "targets: the folder's study has 7 targets" in msg and "asked none" in msg
    assert "stats_over" not in msg and "matrix_form" not in msg  # said by "targets"


def test_attached_study_of_a_raw_input_writes_graph_parquet(tmp_path):
    """An attached cluster's workers may be on other machines: they read the graph from
    the study folder (DIR/graph.parquet), not from this machine's ingestion cache."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.run import study

    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    cluster, client = _cluster(1)
    try:
        out = tmp_path / "s"
        summary = study(gr, random=20, seed=1, out=out, client=client)
        assert summary["complete"]
        m = json.loads((out / "manifest.json").read_text())
        assert m["graph"]["path"] == os.fspath((out / "graph.parquet").resolve())
        assert read_parquet(out / "graph.parquet").fingerprint == m["graph"]["fingerprint"]
    finally:
        client.close()
        cluster.close()


def _holds(fingerprint, dask_worker=None):
    from gpu_sssp.pipeline import plugins

    return (bool(plugins._plugins(dask_worker, fingerprint)), fingerprint in plugins._GRAPHS)


def test_attached_study_lets_the_graph_go_unless_kept(tmp_path):
    """On a long-lived cluster the graph's plugin is unregistered after the study: the
    workers' teardown frees their copies (host and device); keep_graph keeps them."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.run import study

    path = grid_parquet(tmp_path, 12, 12)
    fp = read_parquet(path).fingerprint
    cluster, client = _cluster(2)
    try:
        study(path, random=20, seed=1, batch_size=4, out=tmp_path / "a", client=client, keep_graph=True)
        assert set(client.run(_holds, fp).values()) == {(True, True)}
        study(path, random=20, seed=2, batch_size=4, out=tmp_path / "b", client=client)
        assert set(client.run(_holds, fp).values()) == {(False, False)}
        assert len(client.scheduler_info()["workers"]) == 2  # the cluster itself stays
    finally:
        client.close()
        cluster.close()


def test_a_study_ending_leaves_the_graph_to_another_clients_study_of_it(tmp_path):
    """Two users' studies of one graph on a shared cluster share its plugin: the first to
    end must not unregister it under the other (whose tasks then loaded the graph again
    outside the plugin, never freed, and whose own unregistration failed with an ERROR in
    the scheduler's log); the last one to end frees it."""
    from distributed import Client

    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.run import study

    path = grid_parquet(tmp_path, 12, 12)
    fp = read_parquet(path).fingerprint
    cluster, client = _cluster(2)
    other = Client(cluster.scheduler_address)
    seen = []

    def during_the_long_study(meta, _study):
        if not seen:  # the other user's study starts and ends while this one runs
            study(path, random=10, seed=2, batch_size=5, out=tmp_path / "short", client=other)
            seen.append(set(client.run(_holds, fp).values()))

    try:
        study(path, random=40, seed=1, batch_size=4, out=tmp_path / "long", client=client,
              on_batch=during_the_long_study)
        assert seen == [{(True, True)}]  # still held for the long study
        assert set(client.run(_holds, fp).values()) == {(False, False)}  # freed by the last to end
    finally:
        other.close()
        client.close()
        cluster.close()


def _no_hierarchy_builds():
    from gpu_sssp.kernels import hierarchy

    def refuse(graph):
        raise RuntimeError("a worker built a hierarchy")

    hierarchy.build_hierarchy = refuse


def test_a_phast_study_after_a_kept_graph_without_hierarchy_loads_the_clients_hierarchy(tmp_path):
    """A graph kept on the workers by a study that loaded no hierarchy (keep-graph, or
    another user's study still running): a ``phast`` study of it registers a plugin that
    loads the client's hierarchy file (an idempotent registration under the same name
    kept the first plugin, and every worker built the hierarchy in its first task)."""
    from gpu_sssp.pipeline.study.run import study

    path = grid_parquet(tmp_path, 12, 12)
    cluster, client = _cluster(2)
    try:
        client.run(_no_hierarchy_builds)
        study(path, random=20, seed=1, batch_size=4, algorithm="dijkstra", out=tmp_path / "a", client=client,
              keep_graph=True)
        study(path, random=20, seed=2, batch_size=4, algorithm="phast", out=tmp_path / "b", client=client)
        assert json.loads((tmp_path / "b" / "manifest.json").read_text())["status"] == "complete"
    finally:
        client.close()
        cluster.close()


def test_statistics_flushed_after_the_report_and_a_failed_flush_fails_the_study(tmp_path, monkeypatch):
    """A task reports its batches, then flushes their statistics files: the report's trip
    overlaps the flush.  A flush that fails after the report must still fail the study
    (not be dropped with the reported future), and the batches' files are complete."""
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study import run_study
    from gpu_sssp.pipeline.study import task as task_mod

    order = []
    real_report, real_flush = task_mod._report, task_mod.fsync_file

    def report(topic, result):
        order.append(("report", result["batches"][0]["batch"]))
        real_report(topic, result)

    def flush(path):
        order.append(("flush", int(str(path).rsplit("-", 1)[1].split(".")[0])))
        if "batch-000002" in str(path) and os.environ.get("SSSP_TEST_FAIL_FLUSH"):
            raise OSError(5, "Input/output error (injected)", str(path))
        real_flush(path)

    monkeypatch.setattr(task_mod, "_report", report)
    monkeypatch.setattr(task_mod, "fsync_file", flush)
    path = rome_parquet(tmp_path)
    # threads in this process: the patched functions are the workers' own
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        s = run_study(client, _plan(path, tmp_path / "ok", random=4, seed=1, batch_size=1), backend="cpu")
        assert s["complete"]
        for i in range(4):
            assert order.index(("report", i)) < order.index(("flush", i))
        order.clear()
        monkeypatch.setenv("SSSP_TEST_FAIL_FLUSH", "1")
        with pytest.raises(OSError, match="injected"):
            run_study(client, _plan(path, tmp_path / "bad", random=4, seed=1, batch_size=1), backend="cpu")
        m = json.loads((tmp_path / "bad" / "manifest.json").read_text())
        assert m["status"] == "failed" and "injected" in m["failure"]["reason"]
        assert ("report", 2) in order  # reported (and journaled), then its flush failed
        assert pq.read_metadata(tmp_path / "bad" / "stats" / "batch-000002.parquet").num_rows == 1
    finally:
        client.close()
        cluster.close()


@pytest.mark.parametrize("exc, status, reason", [
    (KeyboardInterrupt(), "interrupted", "interrupted by the user"),
    ("terminated", "interrupted", "terminated by SIGTERM"),
    (RuntimeError("disk\n full"), "failed", "disk full"),
    (RuntimeError(), "failed", "RuntimeError"),
])
def test_stop_records_the_reason_the_exception_carries(tmp_path, exc, status, reason):
    """Study.stop is the one path that records a stop: the reason is the exception's
    message (the command line's SIGTERM ``Terminated`` says "terminated by SIGTERM"), a
    bare Ctrl-C "interrupted by the user", a failure without one its exception's name."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.workflows.cli import Terminated

    if exc == "terminated":
        exc = Terminated(signal.SIGTERM)
    plan = _plan(grid_parquet(tmp_path, 4, 4), tmp_path / "out", sources="all", batch_size=4)
    study = Study(plan)
    study.start()
    study.stop(exc, batch=1)
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["status"] == status and m["runs"][-1]["status"] == status
    assert m["failure"]["reason"] == reason and m["failure"]["error"] == type(exc).__name__
    assert m["failure"]["batch"] == 1


def test_study_out_below_a_file_is_one_line_before_any_cluster(tmp_path, monkeypatch):
    """``study(out="ok.gr/sub")`` from Python: a UsageError naming the file in the way, not
    the OS's bare "Not a directory", and no cluster is started for it."""
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline import cluster

    g = grid_parquet(tmp_path, 6, 6)
    blocker = tmp_path / "ok.gr"
    blocker.write_text("not a folder\n")
    monkeypatch.setattr(cluster, "start_cluster", lambda **kw: pytest.fail("a cluster was started"))
    with pytest.raises(UsageError, match=r"^out='.*ok\.gr/sub': .*ok\.gr is a file, not a folder"):
        sssp.study(g, random=3, out=tmp_path / "ok.gr" / "sub", cpu_workers=1)
    assert blocker.read_text() == "not a folder\n"


def test_stop_keeps_the_runs_own_error_when_the_manifest_cannot_be_written(tmp_path, monkeypatch):
    """A folder made read-only (or full) mid-study: the write of the ``failed`` manifest
    fails too.  The error that stopped the run must be the one raised (the command line's
    one line), not the manifest's own ``EROFS`` naming a temporary file; the folder is
    released all the same."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.study import folder as folder_mod

    plan = _plan(grid_parquet(tmp_path, 4, 4), tmp_path / "out", sources="all", batch_size=4)
    study = Study(plan)
    study.start()

    def refuse(obj, path):
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(folder_mod, "write_json_atomic", refuse)
    study.stop(OSError(27, "File too large"), batch=1)  # raises nothing of its own
    assert not study.lock.held
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["status"] == "running"


def test_a_batch_file_that_cannot_be_written_stops_the_study_once_naming_the_batch(tmp_path, monkeypatch):
    """EFBIG (a file size limit), EROFS, ENOSPC while a worker writes a batch's files:
    the same on every try, so the task is not retried (each retry logged Dask's "Compute
    Failed" with a traceback on the terminal) and the study stops with the error naming
    the batch and the folder; the manifest records the batch."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study import run_study
    from gpu_sssp.pipeline.study import task as task_mod

    calls = []
    real = task_mod._write_batch

    def write(res, graph, index, *args, **kw):
        calls.append(index)
        if index == 2:
            raise OSError(27, "Error writing bytes to file. Detail: [errno 27] File too large")
        return real(res, graph, index, *args, **kw)

    monkeypatch.setattr(task_mod, "_write_batch", write)
    path = rome_parquet(tmp_path)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        plan = _plan(path, tmp_path / "s", random=4, seed=1, batch_size=1, order="given")
        with pytest.raises(OSError, match=r"writing batch 2 into .*s: .*File too large") as got:
            run_study(client, plan, backend="cpu")
        assert got.value.errno == 27
        assert calls.count(2) == 1, calls  # not retried
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["status"] == "failed" and m["failure"]["batch"] == 2 and "File too large" in m["failure"]["reason"]
    finally:
        client.close()
        cluster.close()


def test_a_folder_removed_during_the_run_is_not_made_again(tmp_path):
    """``rm -rf DIR`` while a study runs: the client's next journal line and the workers'
    next batch files must not make the folder again (it was left holding a journal of
    batches whose files were gone and no manifest, after a "add --resume" that every
    resume then refused), and the stop names what happened."""
    import shutil

    from gpu_sssp.pipeline.study import Study, StudyError
    from gpu_sssp.pipeline.study.task import _write_batch

    plan = _plan(grid_parquet(tmp_path, 4, 4), tmp_path / "out", sources="all", batch_size=4)
    study = Study(plan)
    study.start()
    study.record_many([{"batch": 0, "rows": 4}])
    shutil.rmtree(tmp_path / "out")
    with pytest.raises(StudyError, match=r"out: the study folder was removed during the run"):
        study.record_many([{"batch": 1, "rows": 4}])
    assert not (tmp_path / "out").exists()
    with pytest.raises(FileNotFoundError, match=r"no study folder .*out on this worker"):
        _write_batch(None, plan.graph, 1, ("stats",), "long", tmp_path / "out", "0", False)
    study.stop(RuntimeError("gone"), batch=1)
    assert not (tmp_path / "out").exists()


def test_an_auto_study_resumed_goes_on_with_the_method_of_its_finished_batches(tmp_path):
    """``--algorithm auto`` decides with what it finds: a hierarchy cache file written
    beside the graph (by another study) between two runs made the rest of a resumed study
    ``phast`` after ``dijkstra`` batches - the tables of no uninterrupted run (the method's
    ``iterations``, ``relaxations``, ``algorithm`` differ)."""
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.hierarchy import load_hierarchy
    from gpu_sssp.pipeline.study import run_study

    path = grid_parquet(tmp_path, 30, 30)
    out = tmp_path / "s"

    def cluster():  # each run on a cluster of its own, as each `sssp study` starts one
        c = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                         silence_logs=logging.ERROR)
        return c, Client(c)

    cl, client = cluster()
    try:
        run_study(client, _plan(path, out, random=12, seed=1, batch_size=2), backend="cpu")
    finally:
        client.close()
        cl.close()
    cl, client = cluster()
    try:
        first = set(pq.read_table(out / "stats")["algorithm"].to_pylist())
        assert first == {"dijkstra"}, first  # no hierarchy at hand: not worth building for 12
        # the run "stopped" after 2 of its 6 batches; then another study left a cache file
        lines = (out / "journal.jsonl").read_text().splitlines(keepends=True)
        keep = {json.loads(x)["batch"] for x in lines[:2]}
        (out / "journal.jsonl").write_text("".join(lines[:2]))
        for f in (out / "stats").iterdir():
            if int(f.stem.split("-")[1]) not in keep:
                f.unlink()
        load_hierarchy(read_parquet(path))
        assert (tmp_path / (path.name + ".ch.npz")).exists()
        s = run_study(client, _plan(path, out, random=12, seed=1, batch_size=2), backend="cpu", resume=True)
        assert s["complete"] and s["algorithms"] == ["dijkstra"], s["algorithms"]
        # the resumed batches' files name the folder's study (the id of an "auto" plan),
        # not that of a "dijkstra" plan: a later resume solved them again as another
        # study's files, and so on every resume after it
        study_id = json.loads((out / "manifest.json").read_text())["study_id"]
        footers = {pq.read_metadata(f).metadata[b"gpu_sssp.study"].decode() for f in (out / "stats").iterdir()}
        assert footers == {study_id}, (footers, study_id)
        journal = (out / "journal.jsonl").read_text()
        again = run_study(client, _plan(path, out, random=12, seed=1, batch_size=2), backend="cpu", resume=True)
        assert again["complete"] and (out / "journal.jsonl").read_text() == journal
        assert json.loads((out / "manifest.json").read_text())["study_ids"] == [study_id]
    finally:
        client.close()
        cl.close()


def test_a_resume_marks_the_run_that_ended_without_a_word(tmp_path):
    """A run killed outright (SIGKILL, a crash) leaves the manifest ``running`` and its
    run entry with a start only; the resume that finds it says so in that entry
    (``killed``) instead of leaving a run that seems to go on."""
    from gpu_sssp.pipeline.study import Study

    path = grid_parquet(tmp_path, 4, 4)
    first = Study(_plan(path, tmp_path / "out", sources="all", batch_size=4))
    first.start()
    first.lock.release()  # the process "dies": its lock goes, the manifest stays "running"
    study = Study(_plan(path, tmp_path / "out", sources="all", batch_size=4), resume=True)
    study.start()
    runs = json.loads((tmp_path / "out" / "manifest.json").read_text())["runs"]
    assert len(runs) == 2 and runs[0]["status"] == "killed" and "end" in runs[0]
    assert "status" not in runs[1]
    study.close()


def _graph_users(dask_scheduler=None):
    return dict(getattr(dask_scheduler, "_sssp_graph_users", {}))


def test_run_study_on_its_own_keeps_the_plugin_and_leaves_no_count_behind(tmp_path):
    """``run_study`` called directly (the Python API's steps) keeps the graph's plugin, as
    before, but ends its count of the graph's users: a later ``study()`` of the graph
    from the same client still frees it."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.run import run_study, study

    path = grid_parquet(tmp_path, 12, 12)
    fp = read_parquet(path).fingerprint
    cluster, client = _cluster(2)
    try:
        plan = _plan(path, tmp_path / "a", random=20, seed=1, batch_size=4)
        run_study(client, plan, backend="cpu")
        assert set(client.run(_holds, fp).values()) == {(True, True)}
        assert client.run_on_scheduler(_graph_users) == {}
        study(path, random=20, seed=2, batch_size=4, out=tmp_path / "b", client=client)
        assert set(client.run(_holds, fp).values()) == {(False, False)}
    finally:
        client.close()
        cluster.close()


def _graph_study_cluster(tmp_path):
    """The graph-users tests' set-up: a 12 x 12 grid graph's fingerprint, a 20-source
    study plan of it, and a two-worker cluster with its client."""
    from gpu_sssp.pipeline.graph import read_parquet

    path = grid_parquet(tmp_path, 12, 12)
    plan = _plan(path, tmp_path / "a", random=20, seed=1, batch_size=4)
    return (read_parquet(path).fingerprint, plan, *_cluster(2))


def _fake_scheduler(plugins=None):
    """A stand-in scheduler with one client ``c1`` (what graph_users' scheduler-side
    functions touch) and that client, whose ``run_on_scheduler`` runs them on it."""
    import asyncio
    import types

    sched = types.SimpleNamespace(plugins=dict(plugins or {}), clients={"c1": object()}, worker_plugins={},
                                  _ongoing_background_tasks=types.SimpleNamespace(closed=True))
    sched.add_plugin = lambda plugin, name: sched.plugins.__setitem__(name, plugin)

    class FakeClient:
        id = "c1"

        def run_on_scheduler(self, fn):
            return asyncio.run(fn(dask_scheduler=sched))

    return sched, FakeClient()


def _wait_holds(client, fp, want, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        got = set(client.run(_holds, fp).values())
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


@pytest.fixture
def short_grace():
    """A lost client's uses end 0.3 s after it left (``sssp.study.lost-client-grace``;
    read by the client that installs the scheduler's watch)."""
    import dask

    with dask.config.set({"sssp.study.lost-client-grace": 0.3}):
        yield 0.3


def test_a_client_that_leaves_without_ending_its_study_frees_the_graph(tmp_path, short_grace):
    """A client killed mid-study never ends its use of the graph, so the workers held it
    until another study of it ended.  The scheduler now ends a leaving client's uses: the
    graph's plugin is unregistered (the workers' copies go) when no other user is left,
    unless the lost run was to keep it."""
    from distributed import Client

    from gpu_sssp.pipeline.study.run import register_graph, wait_for_workers

    fp, plan, cluster, client = _graph_study_cluster(tmp_path)
    try:
        # a run that keeps the graph (keep-graph, or run_study on its own) and is lost
        kept = Client(cluster.scheduler_address)
        register_graph(kept, plan, "cpu", free_if_lost=False)
        wait_for_workers(kept, fp)
        kept.close()  # no forget_graph: as a killed client
        time.sleep(1.0)  # the grace
        assert client.run_on_scheduler(_graph_users) == {}
        assert set(client.run(_holds, fp).values()) == {(True, True)}

        # two runs that would free it, from two clients: the first lost leaves it to the other
        lost = Client(cluster.scheduler_address)
        other = Client(cluster.scheduler_address)
        register_graph(lost, plan, "cpu", free_if_lost=True)
        register_graph(other, plan, "cpu", free_if_lost=True)
        wait_for_workers(lost, fp)
        lost.close()
        time.sleep(1.0)
        assert set(client.run(_holds, fp).values()) == {(True, True)}
        assert len(client.run_on_scheduler(_graph_users)[fp]) == 1
        other.close()
        assert _wait_holds(client, fp, {(False, False)}) == {(False, False)}
        assert client.run_on_scheduler(_graph_users) == {}
    finally:
        client.close()
        cluster.close()


def _scheduler_intervals(dask_scheduler=None):
    return {addr: bc.interval for addr, bc in dask_scheduler.stream_comms.items()}


def _worker_interval(dask_worker=None):
    return dask_worker.batched_stream.interval


def test_a_lost_clients_prompt_streams_are_put_back(tmp_path, short_grace):
    """A study makes the cluster's Dask streams prompt and puts them back at its end.  A
    client killed mid-study never did: the streams stayed prompt for good, and the dead
    study counted as a user, so later studies never put them back either.  The
    scheduler's watch now ends a lost client's uses of the streams, on the scheduler and
    on the workers, and the intervals from before come back."""
    from distributed import Client

    from gpu_sssp.pipeline.study.run import STREAM_INTERVAL, _prompt_streams, register_graph, wait_for_workers

    fp, plan, cluster, client = _graph_study_cluster(tmp_path)
    try:
        sched_before = client.run_on_scheduler(_scheduler_intervals)
        workers_before = client.run(_worker_interval)
        assert STREAM_INTERVAL not in set(sched_before.values()) | set(workers_before.values())
        lost = Client(cluster.scheduler_address)
        register_graph(lost, plan, "cpu", free_if_lost=True)
        wait_for_workers(lost, fp)
        _prompt_streams(lost)  # never put back: as a killed client
        assert set(client.run(_worker_interval).values()) == {STREAM_INTERVAL}
        assert set(client.run_on_scheduler(_scheduler_intervals).values()) == {STREAM_INTERVAL}
        lost.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and client.run(_worker_interval) != workers_before:
            time.sleep(0.1)
        assert client.run(_worker_interval) == workers_before
        assert client.run_on_scheduler(_scheduler_intervals) == sched_before
    finally:
        client.close()
        cluster.close()


def test_graph_users_of_an_earlier_version_on_the_same_scheduler_still_count(tmp_path, caplog, short_grace):
    """A long-lived scheduler may hold the users of a client of the previous version, as
    ``{user: client id}``: the watch of lost clients read them as pairs (``ValueError``,
    the graph never unregistered, an ERROR traceback on the scheduler per leaving
    client).  They count as users now; and a scheduler that stops while a lost run's
    graph is to be freed logs no error."""
    from distributed import Client

    from gpu_sssp.pipeline.study.run import forget_graph, register_graph, wait_for_workers

    fp, plan, cluster, client = _graph_study_cluster(tmp_path)
    try:
        old = Client(cluster.scheduler_address)

        def old_style_user(dask_scheduler=None, fp=fp, cid=str(old.id)):
            dask_scheduler.__dict__.setdefault("_sssp_graph_users", {}).setdefault(fp, {})["old-run"] = cid

        client.run_on_scheduler(old_style_user)
        reg = register_graph(client, plan, "cpu", free_if_lost=True)
        wait_for_workers(client, fp)
        forget_graph(client, plan, reg["user"])  # the old run still uses it: kept
        assert set(client.run(_holds, fp).values()) == {(True, True)}
        assert client.run_on_scheduler(_graph_users) == {fp: {"old-run": str(old.id)}}
        with caplog.at_level(logging.ERROR, logger="distributed"):
            old.close()  # the watch ends its use
            deadline = time.monotonic() + 10
            while client.run_on_scheduler(_graph_users) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.run_on_scheduler(_graph_users) == {}
            # the scheduler stops under a run that would free its graph if lost
            lost = Client(cluster.scheduler_address)
            register_graph(lost, plan, "cpu", free_if_lost=True)
            client.close()
            cluster.close()
            lost.close()
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "distributed.scheduler"]
        assert not errors, [r.getMessage() for r in errors]
    finally:
        client.close()
        cluster.close()


def _abort_and_reconnect(client, timeout=20.0):
    """Break ``client``'s connection to its scheduler (a network blip); Dask reconnects
    it under the same id.  Returns once it is running again."""
    client.scheduler_comm.comm.abort()
    time.sleep(0.3)
    deadline = time.monotonic() + timeout
    while client.status != "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.status == "running"


def test_a_client_that_reconnects_keeps_its_graph(tmp_path):
    """Dask reconnects a client whose connection broke, under the same id, and its study
    goes on; the scheduler saw it leave and at once ended its uses and unregistered the
    graph's plugins under the running study (whose workers then loaded the graph
    outside any plugin, never to free it).  A client's uses now end only once it has
    stayed away sssp.study.lost-client-grace seconds."""
    import dask

    from gpu_sssp.pipeline.study.run import forget_graph, register_graph, wait_for_workers

    fp, plan, cluster, client = _graph_study_cluster(tmp_path)
    try:
        from distributed import Client

        b = Client(cluster.scheduler_address)
        with dask.config.set({"sssp.study.lost-client-grace": 3.0}):
            reg = register_graph(b, plan, "cpu", free_if_lost=True)
        wait_for_workers(b, fp)
        _abort_and_reconnect(b)
        time.sleep(4.0)  # past the grace
        assert client.run_on_scheduler(_graph_users) == {fp: {reg["user"]: str(b.id)}}
        assert set(client.run(_holds, fp).values()) == {(True, True)}
        forget_graph(b, plan, reg["user"])  # the study's end frees it as ever
        assert _wait_holds(client, fp, {(False, False)}) == {(False, False)}
        b.close()
    finally:
        client.close()
        cluster.close()


def test_the_watch_drops_every_flag_of_a_lost_client():
    """``any(frees.pop(u) for u in lost)`` stopped at the first True: the other lost
    users' flags stayed in the scheduler's table for good."""
    from gpu_sssp.pipeline.study import run

    sched, client = _fake_scheduler()
    for u in ("u1", "u2", "u3"):
        run.graph_users(client, "fp", u, add=True, free_if_lost=True)
    assert sched._sssp_graph_frees == {"u1": True, "u2": True, "u3": True}
    watch = sched.plugins["sssp-graph-users"]
    del sched.clients["c1"]
    watch._lost(sched, "c1")
    assert sched._sssp_graph_users == {} and sched._sssp_graph_frees == {}


def test_an_earlier_versions_watch_is_replaced():
    """The scheduler's watch was installed once, by whichever client came first: on a
    long-lived scheduler an earlier version's watch (freeing a lost client's graph at
    once) stayed for good.  A later version's replaces it; its own stays."""
    from gpu_sssp.pipeline.study import run

    class OldWatch:  # an earlier version's: no version attribute
        pass

    sched, client = _fake_scheduler({"sssp-graph-users": OldWatch()})
    run.graph_users(client, "fp", "u1", add=True)
    watch = sched.plugins["sssp-graph-users"]
    assert not isinstance(watch, OldWatch) and watch.version >= 2
    run.graph_users(client, "fp", "u2", add=True)
    assert sched.plugins["sssp-graph-users"] is watch


def test_a_study_whose_workers_are_all_gone_says_it_waits(tmp_path):
    """A study on a cluster it did not start, whose workers all left, waited for new ones
    printing nothing (its progress line still showed an ETA).  It says once that it waits
    for workers, and ends well when one joins."""
    import logging
    import threading

    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import study

    path = grid_parquet(tmp_path, 12, 12)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                           host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    client = Client(cluster)
    notes: list = []
    moved = threading.Event()

    def away_and_back():
        cluster.scale(0)
        deadline = time.monotonic() + 30
        while not notes and time.monotonic() < deadline:
            time.sleep(0.1)
        cluster.scale(1)

    def on_batch(meta, _study):
        if not moved.is_set():
            moved.set()
            threading.Thread(target=away_and_back, daemon=True).start()

    try:
        summary = study(path, random=60, seed=1, batch_size=2, out=tmp_path / "o", client=client,
                        on_batch=on_batch, on_wait=notes.append)
    finally:
        client.close()
        cluster.close()
    assert summary["complete"] and summary["sources_solved"] == 60
    assert len(notes) == 1 and "no worker left on" in notes[0] and "waits for workers" in notes[0], notes


def test_a_stop_after_the_last_batch_is_recorded_as_interrupted(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM once every batch is in (the timings, the summary): the manifest
    stayed "running" (found by a review with real signals), and the next resume called
    the run killed.  It is recorded as interrupted; a resume then summarises the study."""
    from gpu_sssp.pipeline.study import Study, run_study
    from gpu_sssp.pipeline.study import run as run_mod

    g = rome_parquet(tmp_path)
    cluster, client = _cluster(1)
    try:
        def stopped(*_a, **_k):
            raise KeyboardInterrupt

        monkeypatch.setattr(run_mod, "_worker_startup", stopped)
        plan = _plan(g, tmp_path / "s", ids=[1, 2, 3], batch_size=2, order="given", algorithm="dijkstra")
        with pytest.raises(KeyboardInterrupt):
            run_study(client, plan, backend="cpu")
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["status"] == "interrupted" and m["runs"][-1]["status"] == "interrupted"
        assert m["failure"]["reason"] == "interrupted by the user"
        assert not (tmp_path / "s" / "summary.json").exists()
        monkeypatch.undo()
        plan = _plan(g, tmp_path / "s", ids=[1, 2, 3], batch_size=2, order="given", algorithm="dijkstra")
        summary = run_study(client, plan, resume=True, backend="cpu",
                            study=Study(plan, resume=True))
        assert summary["complete"]
        m = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert m["status"] == "complete" and m["runs"][0]["status"] == "interrupted"
    finally:
        client.close()
        cluster.close()


def test_a_stopped_run_removes_its_dead_writers_temporaries(tmp_path):
    """A run stopped by Ctrl-C left the temporary files of the writers it killed (a
    worker mid-write when its cluster closed) for the next run to remove, which may never
    come.  Once the cluster it started is closed they are removed; the manifest says
    ``interrupted`` and the finished batches stay."""
    from gpu_sssp.pipeline.study.run import study
    from gpu_sssp.pipeline.writers import _temp_for

    path = grid_parquet(tmp_path, 10, 10)
    out = tmp_path / "s"
    dead = _temp_for(out / "stats" / "batch-000003.parquet")

    def on_batch(meta, _study):
        dead.write_bytes(b"half a file")  # as a writer killed mid-write leaves it
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        study(path, random=40, seed=1, batch_size=10, out=out, cpu_workers=1, algorithm="dijkstra",
              on_batch=on_batch)
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "interrupted"
    assert not dead.exists() and not [p for p in (out / "stats").iterdir() if ".tmp-" in p.name]
    assert any((out / "stats").glob("batch-*.parquet"))


def test_a_resume_on_another_graph_names_the_graph_first(tmp_path):
    """A resume given another graph (same options) said first "the source list differs
    with the same options (did the sources file change?)", a question about a file the
    user never gave; the graph is named first, and the sources' line left out."""
    from gpu_sssp.pipeline.study import Study, StudyError

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = grid_parquet(tmp_path / "a", 10, 10)
    b = grid_parquet(tmp_path / "b", 11, 11)  # (other vertices: the same draw gives other sources)
    kw = dict(random=20, seed=1, algorithm="dijkstra", batch_size=10)
    p = _plan(a, tmp_path / "s", **kw)
    s = Study(p)
    s.start({})
    s.close()
    with pytest.raises(StudyError) as err:
        Study(_plan(b, tmp_path / "s", **kw), resume=True)
    msg = str(err.value)
    assert "cannot resume (graph: folder has" in msg and "sources file" not in msg, msg
