"""A study whose workers cannot load the graph (or its hierarchy) in their graph plugin
(``pipeline.plugins.GraphPlugin``) while the client could: one line, not every batch's
remote traceback.

Every batch's task re-raised the plugin's error on its worker, which Dask logged with
its traceback and retried twice (11 KB on stderr for 2 batches of rome99, 42 KB for all
its sources), before the command's ``error:`` line, which named no worker.  Now the
client asks the workers why they are not ready before any batch goes out: where every
worker failed, one ``error:`` line names them, the file and the reason (exit status 1,
the manifest ``failed``, a ``--resume`` continues once fixed); where some loaded it,
one ``note:`` names the others, which get no batch, and the study goes on.  Worker
tracebacks only with ``sssp -v``.

The workers (spawned processes of a local CPU cluster) are made to fail by a
``sitecustomize`` module found first on their ``PYTHONPATH`` and switched on by
``SSSP_TEST_WORKER_FAIL`` in worker processes only (the client loads the graph as ever):
``parquet`` (the file unreadable there), ``hierarchy`` (the client's hierarchy file
damaged as the worker reads it), ``memory`` (a ``MemoryError`` as the graph loads), each
with ``-one`` for the first worker process only.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pipeline.test_study_support import rome_parquet

REPO = Path(__file__).resolve().parents[2]

HOOK = '''
import os, sys
_mode = os.environ.get("SSSP_TEST_WORKER_FAIL")
if _mode and "--multiprocessing-fork" in sys.argv:  # a Dask worker process (spawned)
    import gpu_sssp.pipeline.graph as _g
    import gpu_sssp.pipeline.hierarchy as _h
    _fail = True
    if _mode.endswith("-one"):  # the first worker process only
        try:
            os.close(os.open(os.environ["SSSP_TEST_MARK"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            _fail = False
        _mode = _mode[:-4]
    if _fail and _mode == "parquet-while":  # while the file SSSP_TEST_BROKEN exists (then fixed)
        _read = _g.read_parquet
        def _refuse_while(path, *a, **k):
            if os.path.exists(os.environ["SSSP_TEST_BROKEN"]):
                raise PermissionError(13, "Permission denied", str(path))
            return _read(path, *a, **k)
        _g.read_parquet = _refuse_while
    elif _fail and _mode == "parquet":
        def _refuse(path, *a, **k):
            raise PermissionError(13, "Permission denied", str(path))
        _g.read_parquet = _refuse
    elif _fail and _mode == "memory":
        def _oom(path, *a, **k):
            raise MemoryError("Unable to allocate 3.06 GiB for an array with shape (410000000,) and data type float64")
        _g.read_parquet = _oom
    elif _fail and _mode == "hierarchy":
        _orig = _h.read_cache
        def _damaged(graph, cpath, *a, **k):
            with open(cpath, "r+b") as f:  # the file changed under the study: truncated
                f.truncate(1000)
            return _orig(graph, cpath, *a, **k)
        _h.read_cache = _damaged
'''


@pytest.fixture
def graph(tmp_path) -> Path:
    return rome_parquet(tmp_path)


def _env(tmp_path: Path, mode: str | None, **extra) -> dict:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hook), str(REPO), os.environ.get("PYTHONPATH", "")]),
               SSSP_TEST_MARK=str(tmp_path / "mark"), COLUMNS="200", **extra)
    env.pop("SSSP_TEST_WORKER_FAIL", None)
    if mode:
        env["SSSP_TEST_WORKER_FAIL"] = mode
    return env


def _study(tmp_path: Path, graph: Path, mode: str | None, *extra, out: str = "out", verbose: bool = False,
           env_extra: dict | None = None):
    cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", *(["-v"] if verbose else []), "study", str(graph),
           "--random", "50", "--cpu-workers", "2", "--no-dashboard", "--out", str(tmp_path / out), *extra]
    return subprocess.run(cmd, cwd=tmp_path, env=_env(tmp_path, mode, **(env_extra or {})), capture_output=True,
                          text=True, timeout=240)


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _one_error(r) -> str:
    """The run's stderr: one ``note:`` (what is recorded, --resume) and one ``error:``
    line, nothing else; returns the error line."""
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert "Traceback" not in r.stderr and "Compute Failed" not in r.stderr, r.stderr[-3000:]
    assert len(lines) == 2, r.stderr[-3000:]
    assert lines[0].startswith("note: 0 finished batches are recorded in") and "--resume" in lines[0], lines
    assert lines[1].startswith("error: "), lines
    return lines[1]


def test_workers_that_cannot_read_the_graph_end_in_one_line_and_the_study_resumes(tmp_path, graph):
    r = _study(tmp_path, graph, "parquet")
    assert r.returncode == 1, r.stderr[-3000:]
    line = _one_error(r)
    assert line.startswith(f"error: 2 of 2 workers cannot load the study's graph {graph}: "), line
    assert "0 (tcp://127.0.0.1:" in line and "1 (tcp://127.0.0.1:" in line, line
    assert f"PermissionError: [Errno 13] Permission denied: '{graph}'" in line, line
    m = _manifest(tmp_path / "out")
    assert m["status"] == "failed" and m["failure"]["error"] == "WorkerGraphError", m["failure"]
    assert "cannot load the study's graph" in m["failure"]["reason"]
    # fixed (the workers read it again): the folder's study resumes and completes
    r2 = _study(tmp_path, graph, None, "--resume")
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert _manifest(tmp_path / "out")["status"] == "complete"


def test_a_damaged_hierarchy_file_names_the_file(tmp_path, graph):
    r = _study(tmp_path, graph, "hierarchy", "--algorithm", "phast")
    assert r.returncode == 1, r.stderr[-3000:]
    line = _one_error(r)
    hfile = f"{graph}.ch.npz"
    assert f"cannot load the study's graph {graph} and its hierarchy {hfile}: " in line, line
    assert "BadZipFile" in line and "0 (tcp://" in line and "1 (tcp://" in line, line
    assert "FileNotFoundError" not in line and "HierarchyFileError" in line, line  # the file is there


def test_a_worker_out_of_memory_for_the_graph(tmp_path, graph):
    r = _study(tmp_path, graph, "memory")
    assert r.returncode == 1, r.stderr[-3000:]
    line = _one_error(r)
    assert "out of memory for the graph (MemoryError: Unable to allocate 3.06 GiB" in line, line


def test_worker_tracebacks_only_with_verbose(tmp_path, graph):
    r = _study(tmp_path, graph, "parquet", verbose=True)
    assert r.returncode == 1, r.stderr[-3000:]
    assert r.stderr.count("Traceback (most recent call last)") == 2, r.stderr[-3000:]  # one per worker
    assert "PermissionError: [Errno 13]" in r.stderr and "Compute Failed" not in r.stderr
    assert r.stderr.splitlines()[-1].startswith("error: 2 of 2 workers cannot load")


def test_one_worker_of_two_failing_leaves_the_study_to_the_other(tmp_path, graph):
    """The demanding user's expectation: as for a worker that joins and cannot load the
    graph (README), the study goes on with the workers that can, and one note names the
    one that cannot and why."""
    r = _study(tmp_path, graph, "parquet-one")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "Compute Failed" not in r.stderr, r.stderr[-3000:]
    notes = [x for x in r.stdout.splitlines() if x.startswith("note: 1 of 2 workers cannot load")]
    assert len(notes) == 1, r.stdout[-3000:]
    assert "PermissionError" in notes[0] and "goes on with the other 1 worker" in notes[0], notes
    m = _manifest(tmp_path / "out")
    assert m["status"] == "complete"
    done = [json.loads(x) for x in (tmp_path / "out" / "journal.jsonl").read_text().splitlines()]
    failed_worker = re.search(r"graph \S+: (\S+) \(tcp://", notes[0]).group(1)  # "...graph G: NAME (ADDR): ..."
    assert failed_worker in ("0", "1"), notes[0]
    assert done and all(str(e.get("worker")) != failed_worker for e in done), (failed_worker, done)


def test_a_worker_failing_after_the_ready_wait_stops_the_study_in_one_line(tmp_path, graph):
    """Without the wait for the workers (``sssp.study.ready-wait: 0``), or a worker that
    fails later (a restart), its tasks return the plugin's error: no retries, no
    traceback, one line naming that worker."""
    r = _study(tmp_path, graph, "parquet", env_extra={"DASK_SSSP__STUDY__READY_WAIT": "0"})
    assert r.returncode == 1, r.stderr[-3000:]
    line = _one_error(r)
    assert "cannot load the study's graph" in line and "PermissionError" in line, line
    # the tasks' line, not the start check's ("2 of 2 workers ..."), which the ready
    # wait gives: the setting must have been taken
    assert re.search(r"(^|\s)(1 worker|2 workers) cannot load", line) and " of 2 workers" not in line, line


def test_worker_tracebacks_with_verbose_also_without_the_ready_wait(tmp_path, graph):
    """With ``sssp.study.ready-wait: 0`` the load failure comes back in a task's result,
    not from the start check: its worker's traceback was lost, also with ``sssp -v``.
    It travels with the error now and is logged as the start check logs it; without
    ``-v`` the run still ends in its one line."""
    r = _study(tmp_path, graph, "parquet", verbose=True, env_extra={"DASK_SSSP__STUDY__READY_WAIT": "0"})
    assert r.returncode == 1, r.stderr[-3000:]
    assert "graph plugin of worker" in r.stderr and "Traceback (most recent call last)" in r.stderr, r.stderr[-3000:]
    assert "PermissionError: [Errno 13]" in r.stderr and "Compute Failed" not in r.stderr
    assert re.search(r"(^|\s)(1 worker|2 workers) cannot load", r.stderr.splitlines()[-1]), r.stderr[-3000:]


def test_the_worker_graph_error_keeps_its_tracebacks_when_pickled():
    from gpu_sssp.pipeline.plugins import WorkerGraphError

    err = WorkerGraphError([("w0", "PermissionError: no")], "/g.parquet", tracebacks={"w0": "Traceback ...\nboom"})
    got = pickle.loads(pickle.dumps(err))
    assert got.tracebacks == {"w0": "Traceback ...\nboom"} and str(got) == str(err)
    assert "Traceback" not in str(got)  # the line itself stays one line


def test_python_study_raises_one_error_naming_the_workers(tmp_path, graph, monkeypatch):
    """``gpu_sssp.study`` raises :class:`WorkerGraphError` (an ``SsspError``), the
    workers and their reasons in ``failures``."""
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import SsspError
    from gpu_sssp.pipeline.plugins import WorkerGraphError

    for k, v in _env(tmp_path, "parquet").items():
        if k in ("PYTHONPATH", "SSSP_TEST_WORKER_FAIL", "SSSP_TEST_MARK"):
            monkeypatch.setenv(k, v)  # the spawned workers' environment
    with pytest.raises(WorkerGraphError) as got:
        sssp.study(str(graph), random=20, cpu_workers=2, out=str(tmp_path / "py"))
    assert isinstance(got.value, SsspError) and got.value.exit_code == 1
    assert len(got.value.failures) == 2 and all("PermissionError" in r for _w, r in got.value.failures)
    assert _manifest(tmp_path / "py")["status"] == "failed"


def test_a_plugin_of_another_gpu_sssp_version_fails_as_one_error(monkeypatch):
    """A worker whose gpu-sssp differs from the client's (one that restarted in another
    environment; the start check refuses those present at the start): its plugin's
    error names the version, and travels as a task result (it pickles)."""
    import gpu_sssp.pipeline.cluster as cluster
    from gpu_sssp.pipeline.plugins import GraphPlugin, WorkerGraphError, WorkerVersionError

    monkeypatch.setattr(cluster, "_gpu_sssp_version", lambda: "0.1.0")
    p = GraphPlugin("/nowhere/g.parquet", "f" * 16, "cpu", version="9.9.9")
    p.setup(worker=None)
    with pytest.raises(WorkerVersionError):
        p.wait(30)
    got = p.failure_error()  # what the worker's tasks raise (worker_graph) and return
    err = pickle.loads(pickle.dumps(got))
    assert isinstance(err, WorkerGraphError) and err.exit_code == 1
    assert "gpu-sssp 0.1.0 on this worker, the study's client has 9.9.9" in str(err), str(err)
    assert "/nowhere/g.parquet" in str(err) and err.failures == got.failures and str(err) == str(got)


def test_on_an_attached_cluster_the_worker_set_aside_is_put_back_at_the_end(tmp_path, graph, monkeypatch):
    """A cluster the study did not start (``client=``): the worker whose plugin failed
    is paused on the scheduler for the study only (the note says so), and running again
    after it, for other work."""
    from distributed import Client, LocalCluster

    import gpu_sssp as sssp

    for k, v in _env(tmp_path, "parquet-one").items():
        if k in ("PYTHONPATH", "SSSP_TEST_WORKER_FAIL", "SSSP_TEST_MARK"):
            monkeypatch.setenv(k, v)  # the spawned workers' environment
    notes = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        summary = sssp.study(str(graph), random=20, client=client, out=str(tmp_path / "att"), on_wait=notes.append)
        assert summary["complete"], summary
        (line,) = [n for n in notes if "cannot load the study's graph" in n]
        assert line.startswith("1 of 2 workers") and "goes on with the other 1 worker" in line, notes
        status = {a: str(w.get("status")) for a, w in client.scheduler_info()["workers"].items()}
        assert sorted(status.values()) == ["running", "running"], status


def test_a_worker_named_0_is_named_in_the_start_checks_line(monkeypatch):
    """The start check's line (workers of another gpu-sssp, refused before the folder is
    made) named a local cluster's worker ``1 (tcp://...)`` but its worker 0 by its
    address alone: the name 0 was taken for none."""
    import gpu_sssp.pipeline.cluster as cluster

    monkeypatch.setattr(cluster, "_gpu_sssp_version", lambda: "0.1.0")
    workers = {"tcp://127.0.0.1:1": {"name": 0}, "tcp://127.0.0.1:2": {"name": 1}}
    per = {a: {"gpu_sssp": "0.2.0"} for a in workers}
    with pytest.raises(cluster.WorkerEnvironmentError) as got:
        cluster._check_worker_code(per, workers)
    assert "0 (tcp://127.0.0.1:1): gpu-sssp 0.2.0, the client 0.1.0" in str(got.value), str(got.value)
    assert "1 (tcp://127.0.0.1:2)" in str(got.value)


def test_a_worker_two_studies_set_aside_stays_paused_until_both_end():
    """Two studies of one graph on an attached cluster that share a worker which cannot
    load it: each sets it aside (pauses it on the scheduler).  The second found it
    paused already and recorded nothing, so the first study's end put it back to work
    under the second, whose tasks then reached it and stopped that study.  Each holds
    it now; it runs again once neither does.  (A real scheduler, in this process.)"""
    import time

    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import _pause_workers

    def status(client, addr):
        return str(client.scheduler_info()["workers"][addr]["status"])

    def wait_for(client, addr, want):
        deadline = time.monotonic() + 10
        while status(client, addr) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return status(client, addr)

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        (w,) = client.scheduler_info()["workers"]
        a = client.run_on_scheduler(_pause_workers(), addresses=[w], token="A")
        b = client.run_on_scheduler(_pause_workers(), addresses=[w], token="B")
        assert a == [w] and b == [w]  # B holds it too
        assert wait_for(client, w, "paused") == "paused"
        assert client.run_on_scheduler(_pause_workers(), addresses=a, token="A", undo=True) == []
        time.sleep(0.3)
        assert status(client, w) == "paused"  # B still runs: not put back under it
        assert client.run_on_scheduler(_pause_workers(), addresses=b, token="B", undo=True) == [w]
        assert wait_for(client, w, "running") == "running"
        # a token that holds nothing puts nothing back
        assert client.run_on_scheduler(_pause_workers(), addresses=[w], token="C", undo=True) == []


def test_a_kept_graph_plugin_that_failed_loads_again_for_the_resume(tmp_path, graph, monkeypatch):
    """"Fix it, then --resume": on an attached cluster that keeps the graph's plugin
    (``keep_graph``, or another study of the graph still running) the resume's
    registration was skipped (the scheduler holds the plugin: idempotent), so the
    workers kept the first load's error and the resume failed as the study had, until
    they were restarted.  The workers whose kept plugin failed load it again."""
    from distributed import Client, LocalCluster

    import gpu_sssp as sssp
    from gpu_sssp.pipeline.plugins import WorkerGraphError

    broken = tmp_path / "broken"
    broken.write_text("x")
    env = _env(tmp_path, "parquet-while", SSSP_TEST_BROKEN=str(broken))
    for k in ("PYTHONPATH", "SSSP_TEST_WORKER_FAIL", "SSSP_TEST_MARK", "SSSP_TEST_BROKEN"):
        monkeypatch.setenv(k, env[k])  # the spawned workers' environment
    out = str(tmp_path / "kept")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        with pytest.raises(WorkerGraphError, match=r"2 of 2 workers cannot load"):
            sssp.study(str(graph), random=20, client=client, out=out, keep_graph=True)
        broken.unlink()  # fixed
        summary = sssp.study(str(graph), random=20, client=client, out=out, resume=True, keep_graph=True)
        assert summary["complete"], summary
