"""Workers that join an attached cluster while a study runs (separate processes, as
``tests/pipeline/test_cluster_processes.py``: ``dask scheduler``, ``dask worker`` and
``sssp study --scheduler-file`` each in a process of its own).

The start check (``pipeline.cluster.describe_cluster``) sees only the workers present
when the study starts.  A worker that joined later got batches at once: one of another
gpu-sssp version solved them, one that could not read the graph failed the study, and one
where gpu_sssp does not import (it cannot unpickle the study's graph plugin) stayed
"closing" with the tasks it was given: the study hung.  Now such a worker is refused (one
``note:`` line naming it and why), no batch goes to it, and the study goes on with the
good workers; a good worker that joins later takes batches once its graph is loaded.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.pipeline.test_cluster_processes import REPO, ProcessCluster, _dask, _env
from tests.pipeline.test_study_support import rome_source

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _other_version(root: Path, version: str = "0.2.0") -> Path:
    """A folder for PYTHONPATH: this checkout's code under another gpu-sssp version."""
    root.mkdir(parents=True)
    for d in ("gpu_sssp", "kernels", "pipeline", "workflows"):
        os.symlink(REPO / d, root / d)
    meta = root / f"gpu_sssp-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gpu-sssp\nVersion: {version}\n")
    return root


def _no_gpu_sssp(root: Path) -> Path:
    """A folder for PYTHONPATH whose gpu_sssp lacks ``pipeline`` (another environment)."""
    bad = root / "gpu_sssp"
    (bad / "pipeline").mkdir(parents=True)
    (bad / "__init__.py").write_text("")
    (bad / "pipeline" / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named gpu_sssp.pipeline", name="gpu_sssp.pipeline")\n')
    return root


def _graph_unreadable(root: Path) -> Path:
    """A folder for PYTHONPATH with a preload module that makes the graph file unreadable
    on that worker (as on a node where the shared file system is not mounted)."""
    root.mkdir(parents=True)
    (root / "no_graph_here.py").write_text(
        "import gpu_sssp.pipeline.graph as g\n"
        "def _refuse(path, *a, **k):\n"
        "    raise PermissionError(13, 'Permission denied', str(path))\n"
        "g.read_parquet = _refuse\n")
    return root


class Study:
    """``sssp study`` of every rome99 source (dijkstra, batches of 8, one task each) on
    ``cluster``, its output in a file read as it comes."""

    def __init__(self, tmp_path: Path, cluster: ProcessCluster):
        self.home = tmp_path / "client"
        self.home.mkdir()
        self.out = tmp_path / "study"
        self.log = tmp_path / "client.txt"
        cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()), "--sources", "all",
               "--algorithm", "dijkstra", "--batch-size", "8", "--scheduler-file", str(cluster.file),
               "--out", str(self.out)]
        env = dict(_env(self.home), DASK_SSSP__STUDY__SCHEDULE="batch")
        self.proc = subprocess.Popen(cmd, cwd=self.home, env=env, stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def journal(self) -> list[dict]:
        j = self.out / "journal.jsonl"
        return [json.loads(x) for x in j.read_text().splitlines()] if j.exists() else []

    def until(self, what, timeout: float, why: str):
        deadline = time.monotonic() + timeout
        while not what():
            assert self.proc.poll() is None or what(), f"the study ended before {why}:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {why} in {timeout} s:\n{self.text()}"
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            pytest.fail(f"the study hung ({timeout} s after the late worker joined); journaled "
                        f"{len(self.journal())} of 420 batches:\n{self.text()[-3000:]}")


def _late_worker(cluster: ProcessCluster, name: str, pythonpath: Path | None, *extra: str) -> None:
    home = cluster.root / name
    env = _env(home)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath) + os.pathsep + env["PYTHONPATH"]  # found first
    cluster._start(_dask("worker", "--scheduler-file", str(cluster.file), "--nthreads", "1", "--name", name,
                         "--host", "127.0.0.1", "--no-dashboard", *extra), home, env)


def _notes(text: str, name: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(f"note: worker {name} (tcp://127.0.0.1:")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["no-gpu-sssp", "graph-unreadable"])
def test_a_late_worker_that_cannot_load_the_graph_plugin_is_refused_not_a_hang(tmp_path, kind):
    """Joined mid-study: where gpu_sssp does not import, Dask kept the worker "closing"
    with the two tasks it was handed (the study hung until stopped); where the graph
    file cannot be read, its tasks failed the study.  Now one line names it and why, and
    the study completes on the other worker."""
    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        study = Study(tmp_path, cluster)
        study.until(lambda: study.journal(), 60, "first batch")
        if kind == "no-gpu-sssp":
            _late_worker(cluster, "late", _no_gpu_sssp(tmp_path / "other-env"))
        else:
            _late_worker(cluster, "late", _graph_unreadable(tmp_path / "pre"), "--preload", "no_graph_here")
        assert study.wait(45) == 0, study.text()[-3000:] + cluster.log()
        text = study.text()
        (line,) = _notes(text, "late")
        assert "refused" in line and "the study goes on with the other workers" in line, line
        if kind == "no-gpu-sssp":
            assert "it failed to start (ModuleNotFoundError" in line and "removed from the scheduler" in line, line
        else:
            assert "PermissionError" in line and str(study.out / "graph.parquet") in line, line
        assert Counter(e["worker"] for e in study.journal()) == {"node0": 420}
        s = json.loads((study.out / "summary.json").read_text())
        assert s["sources_solved"] == 3353 and s["complete"]
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_late_worker_of_another_version_solves_nothing_and_good_ones_are_taken(tmp_path):
    """A worker of another gpu-sssp version that joins mid-study solved batches (137 of
    420 here) with its own code.  Now it is refused with one line, and kept out; once
    the good worker is gone the study says that it waits for workers (the refused one
    does not count); a good worker that joins then is checked and takes the rest."""
    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        study = Study(tmp_path, cluster)
        study.until(lambda: study.journal(), 60, "first batch")
        _late_worker(cluster, "late-version", _other_version(tmp_path / "other-env"))
        study.until(lambda: _notes(study.text(), "late-version"), 30, "refusal")
        (line,) = _notes(study.text(), "late-version")
        assert "refused: gpu-sssp 0.2.0 there, the study's 0.1.0" in line, line
        if len(study.journal()) > 380:
            pytest.skip("the study was nearly done when the late worker was refused (a slow machine)")
        os.killpg(cluster.procs[1].pid, signal.SIGKILL)  # node0, the only good worker, goes
        study.until(lambda: "note: no worker left on" in study.text(), 30, "'no worker left' note")
        assert study.proc.poll() is None
        _late_worker(cluster, "late-good", None)
        assert study.wait(60) == 0, study.text()[-3000:] + cluster.log()
        by = Counter(e["worker"] for e in study.journal())
        assert set(by) == {"node0", "late-good"} and sum(by.values()) == 420, by
        assert not _notes(study.text(), "late-good")
        s = json.loads((study.out / "summary.json").read_text())
        assert s["sources_solved"] == 3353 and s["complete"]
        # the manifest names every worker that solved batches (it named node0 only)
        m = json.loads((study.out / "manifest.json").read_text())
        for described in (m["cluster"], m["runs"][-1]["cluster"]):
            listed = {w["name"]: w for w in described["worker_list"]}
            assert set(listed) == {"node0", "late-good"}, described
            late = listed["late-good"]
            assert late["joined"] == "during the run" and late["address"].startswith("tcp://127.0.0.1:"), late
            assert late["device"] == "cpu" and late["pid"] > 0 and late["nthreads"] == 1, late
            assert "joined" not in listed["node0"] and described["workers"] == 2
            assert described["joined_during_run"] == 1
    finally:
        cluster.close()


def test_the_graph_plugin_refuses_another_gpu_sssp_version(tmp_path, monkeypatch):
    """Where no scheduler holds the late workers, a worker of another version does not
    load the study's graph: its tasks raise instead of solving with other code."""
    from gpu_sssp.pipeline import cluster as C
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.plugins import GraphPlugin, WorkerVersionError, _GRAPHS
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    fp = read_parquet(path).fingerprint
    monkeypatch.setattr(C, "_gpu_sssp_version", lambda: "0.2.0")
    p = GraphPlugin(str(path), fp, "cpu", version="0.1.0")
    p.setup()
    with pytest.raises(WorkerVersionError, match=r"gpu-sssp 0\.2\.0 on this worker, the study's client has 0\.1\.0"):
        p.wait(30)
    for want in ("0.2.0", "unknown", None):  # the same, or not known on one side: loaded
        _GRAPHS.pop(fp, None)
        q = GraphPlugin(str(path), fp, "cpu", version=want)
        q.setup()
        assert q.wait(30) is not None
    _GRAPHS.pop(fp, None)


def _status(client, name):
    """The scheduler's status of the worker named ``name`` (None: no such worker)."""
    return client.run_on_scheduler(lambda dask_scheduler: {str(w.name): w.status.name
                                                            for w in dask_scheduler.workers.values()}.get(name))


def _until(cond, seconds: float, failure: str) -> None:
    """Wait until ``cond()`` is true, failing with ``failure`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, failure
        time.sleep(0.1)


@pytest.mark.slow
def test_a_worker_refused_by_one_study_serves_another_once_that_one_ends(tmp_path, monkeypatch):
    """Two studies on one cluster (two clients): a worker refused by study A (A's graph
    plugin never reached it: A's graph is not readable there) stayed paused until every
    study had ended - also for study B, which began after the refusal and whose start
    check accepted the worker: B got no batch to it even after A ended (with B's other
    workers gone, B waited for ever with a healthy worker paused).  Now, once the studies
    that refused it have ended, it is checked again for those still running."""
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    from gpu_sssp.pipeline import cluster as C

    monkeypatch.setattr(C, "LATE_PLUGIN_MISSING_S", 2.0)  # built into the gate sent to the scheduler

    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        with Client(scheduler_file=str(cluster.file), timeout=60) as ca, \
                Client(scheduler_file=str(cluster.file), timeout=60) as cb:
            a = C.hold_late_workers(ca, "study-a", plugin="sssp-graph-a-absent",
                                    vetted=list(ca.scheduler_info()["workers"]), on_refused=lambda line: None)
            _late_worker(cluster, "late", None)
            _until(lambda: a.refused, 60, "the late worker was not refused by study A")
            assert _status(ca, "late") == "paused"
            cb.register_plugin(WorkerPlugin(), name="sssp-graph-b")  # study B's graph plugin, loaded everywhere
            b = C.hold_late_workers(cb, "study-b", plugin="sssp-graph-b",
                                    vetted=list(cb.scheduler_info()["workers"]), on_refused=lambda line: None)
            a.close()  # A ends; B, whose start check took the late worker, goes on
            _until(lambda: _status(cb, "late") == "running", 30, "the late worker stayed paused for study B")
            b.close()
            assert _status(cb, "late") == "running" and _status(cb, "node0") == "running"
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_worker_refused_by_one_of_two_running_studies_serves_the_other_once_that_one_ends(tmp_path, monkeypatch):
    """As above, but study B already ran when the worker joined and A refused it (A's
    graph plugin never reached it; B's was loaded there): the refusal was recorded as
    by A and B both, so once A ended it stayed paused for B until B ended too."""
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    from gpu_sssp.pipeline import cluster as C

    monkeypatch.setattr(C, "LATE_PLUGIN_MISSING_S", 2.0)

    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        with Client(scheduler_file=str(cluster.file), timeout=60) as ca, \
                Client(scheduler_file=str(cluster.file), timeout=60) as cb:
            cb.register_plugin(WorkerPlugin(), name="sssp-graph-b")  # B's graph plugin, loaded everywhere
            b = C.hold_late_workers(cb, "study-b", plugin="sssp-graph-b",
                                    vetted=list(cb.scheduler_info()["workers"]), on_refused=lambda line: None)
            a = C.hold_late_workers(ca, "study-a", plugin="sssp-graph-a-absent",
                                    vetted=list(ca.scheduler_info()["workers"]), on_refused=lambda line: None)
            _late_worker(cluster, "late", None)
            _until(lambda: a.refused, 60, "the late worker was not refused by study A")
            assert _status(ca, "late") == "paused"
            a.close()  # A ends; B goes on
            _until(lambda: _status(cb, "late") == "running", 30, "the late worker stayed paused for study B")
            b.close()
    finally:
        cluster.close()
