"""The start check of a study attached to a long-lived cluster (separate processes, as
``tests/pipeline/test_cluster_late_workers.py``), where workers joined, failed or left
between studies.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.pipeline.test_cluster_late_workers import _late_worker, _no_gpu_sssp, _status, _until
from tests.pipeline.test_cluster_processes import ProcessCluster, _env
from tests.pipeline.test_study_support import rome_source

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _study(tmp_path: Path, cluster: ProcessCluster, name: str, timeout: float, *extra: str,
           sources=("--random", "40")) -> tuple[int, str, Path]:
    """``sssp study`` of 40 random rome99 sources (or ``sources``; dijkstra, batches of 8)
    attached to ``cluster``, the graph's plugin kept on the scheduler at its end; (exit
    status, output, folder).  A study still running after ``timeout`` s is killed: a
    failure."""
    home = tmp_path / name
    home.mkdir(parents=True)
    out = tmp_path / f"{name}-out"
    cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()), *sources,
           "--algorithm", "dijkstra", "--batch-size", "8", "--scheduler-file", str(cluster.file),
           "--out", str(out), *extra]
    p = subprocess.Popen(cmd, cwd=home, env=dict(_env(home), DASK_SSSP__STUDY__KEEP_GRAPH="True"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        text, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        text, _ = p.communicate()
        pytest.fail(f"study {name} hung ({timeout} s):\n{text.decode(errors='replace')[-3000:]}\n{cluster.log()}")
    return p.returncode, text.decode(errors="replace"), out


def _journal_workers(out: Path) -> Counter:
    import json

    j = out / "journal.jsonl"
    return Counter(json.loads(x)["worker"] for x in j.read_text().splitlines()) if j.exists() else Counter()


def _drop_the_gate(client) -> None:
    """Take the late workers' gate off the scheduler, as on one whose studies so far
    were of an earlier gpu-sssp (without it)."""
    from gpu_sssp.pipeline.cluster import LATE_GATE

    def on_scheduler(dask_scheduler=None):
        gate = dask_scheduler.plugins.pop(LATE_GATE, None)
        if gate is not None:
            gate.uninstall(dask_scheduler)

    client.run_on_scheduler(on_scheduler)


def _failed_to_start(cluster: ProcessCluster, name: str) -> bool:
    log = cluster.root / name / "log.txt"
    return log.exists() and "Reason: failure-to-start" in log.read_text(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("gate", ["kept", "absent"])
def test_a_worker_that_failed_to_start_between_studies_is_named_and_dropped_not_a_hang(tmp_path, gate):
    """A worker where gpu_sssp does not import joins while no study runs, on a
    scheduler that kept an earlier study's graph plugin: it cannot unpickle the plugin
    and Dask kept it "closing" for good.  The next study's start check (a call on every
    worker) waited for it without end.  Now the scheduler's late workers' gate, left by
    the earlier study, removes it at once (``kept``); where there is none (``absent``) it
    stays "closing" and the next study's start check removes it.  Either way the next
    study names it in one line and runs on the good worker."""
    from distributed import Client

    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        rc, text, _ = _study(tmp_path, cluster, "first", 120)
        assert rc == 0, text[-3000:]
        with Client(scheduler_file=str(cluster.file), timeout=60) as c:
            if gate == "absent":
                _drop_the_gate(c)
            _late_worker(cluster, "bad", _no_gpu_sssp(tmp_path / "other-env"))
            _until(lambda: _failed_to_start(cluster, "bad"), 60, "the bad worker did not fail to start")
            if gate == "kept":
                _until(lambda: _status(c, "bad") is None, 60, "the scheduler kept the bad worker")
            else:
                _until(lambda: _status(c, "bad") == "closing", 60, "the bad worker is not closing")
        rc, text, out = _study(tmp_path, cluster, "second", 120)
        assert rc == 0, text[-3000:] + cluster.log()
        lines = [ln for ln in text.splitlines() if "bad (tcp://127.0.0.1:" in ln]
        assert len(lines) == 1, text[-3000:]
        (line,) = lines
        assert line.startswith("note: worker bad (tcp://127.0.0.1:"), line
        assert "failed to start (ModuleNotFoundError" in line and "removed from the scheduler" in line, line
        assert _journal_workers(out) == {"node0": 5}
        with Client(scheduler_file=str(cluster.file), timeout=60) as c:
            assert _status(c, "bad") is None and _status(c, "node0") == "running"
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_second_run_of_the_same_study_into_another_folder_is_refused_while_the_first_runs(tmp_path):
    """Two runs of one study (the same graph, sources and settings: one study id) into
    two folders on one cluster at once: their task keys (``...-<study id>``) were the
    same, so the second run's futures were the first run's tasks, which wrote into the
    first folder; the second recorded every batch, found none of their files and ended
    with "error: <its folder>/stats/batch-000000.parquet" (exit 2).  Now it is refused at
    once in one line naming the running study's folder, and the first completes."""
    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    first = None
    try:
        home = tmp_path / "first"
        home.mkdir()
        out_a = tmp_path / "first-out"
        # every source (420 batches): still under way when the second run starts
        cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()), "--sources", "all",
               "--algorithm", "dijkstra", "--batch-size", "8", "--scheduler-file", str(cluster.file),
               "--out", str(out_a)]
        first = subprocess.Popen(cmd, cwd=home, env=_env(home), stdout=open(tmp_path / "first.txt", "wb"),
                                 stderr=subprocess.STDOUT, start_new_session=True)
        _until(lambda: _journal_workers(out_a) or first.poll() is not None, 120, "no first batch")
        assert first.poll() is None, (tmp_path / "first.txt").read_text()
        os.killpg(first.pid, signal.SIGSTOP)  # the first run stays under way (its client connected)
        rc, text, out_b = _study(tmp_path, cluster, "second", 120, sources=("--sources", "all"))
        os.killpg(first.pid, signal.SIGCONT)
        errors = [ln for ln in text.splitlines() if ln.startswith("error:")]
        assert rc == 2 and len(errors) == 1 and "are recorded in" not in text and "is recorded in" not in text, text[-3000:]
        assert "is already running on this cluster" in errors[0] and str(out_a) in errors[0], errors[0]
        assert not _journal_workers(out_b)
        # refused before its folder was started: the same command later is a new study
        # (it was left marked failed, and asked for --resume)
        assert not (out_b / "manifest.json").exists(), (out_b / "manifest.json").read_text()
        assert first.wait(300) == 0, (tmp_path / "first.txt").read_text()[-3000:]
        assert sum(_journal_workers(out_a).values()) == 420
    finally:
        if first is not None and first.poll() is None:
            os.killpg(first.pid, signal.SIGCONT)
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        cluster.close()


@pytest.mark.slow
def test_a_worker_that_fails_to_start_while_a_study_waits_for_workers_is_named_not_waited_for(tmp_path):
    """A study that waits for a first worker (none left on the cluster), on a scheduler
    that kept an earlier study's graph plugin: the first to join is one where gpu_sssp
    does not import.  It is registered for a moment, then fails to start (it cannot
    unpickle the plugin) and answers nothing, ever: the start check, called on it as it
    joined, waited without end, also once a good worker had joined.  Now it is named in
    one line and removed, and the study runs on the good worker."""
    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    second = None
    try:
        rc, text, _ = _study(tmp_path, cluster, "first", 120)
        assert rc == 0, text[-3000:]
        os.killpg(cluster.procs[1].pid, signal.SIGKILL)  # node0: no worker left
        cluster.procs[1].wait()
        from distributed import Client

        with Client(scheduler_file=str(cluster.file), timeout=60) as c:
            _until(lambda: not c.scheduler_info()["workers"], 60, "node0 stayed on the scheduler")
        home = tmp_path / "second"
        home.mkdir()
        out = tmp_path / "second-out"
        log = tmp_path / "second.txt"
        cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()), "--random", "40",
               "--algorithm", "dijkstra", "--batch-size", "8", "--scheduler-file", str(cluster.file),
               "--out", str(out)]
        second = subprocess.Popen(cmd, cwd=home, env=_env(home), stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                  start_new_session=True)
        _until(lambda: "note: no worker has joined" in log.read_text() or second.poll() is not None, 120,
               "the study did not wait for a worker")
        assert second.poll() is None, log.read_text()
        _late_worker(cluster, "bad", _no_gpu_sssp(tmp_path / "other-env"))
        _until(lambda: "failed to start" in log.read_text() or second.poll() is not None, 60,
               "the bad worker was not named while the study waited for workers")
        _late_worker(cluster, "good", None)
        try:
            assert second.wait(120) == 0, log.read_text()[-3000:] + cluster.log()
        except subprocess.TimeoutExpired:
            pytest.fail("the study hung:\n" + log.read_text()[-3000:] + cluster.log())
        text = log.read_text()
        lines = [ln for ln in text.splitlines() if "bad (tcp://127.0.0.1:" in ln]
        assert len(lines) == 1 and lines[0].startswith("note: worker bad (tcp://127.0.0.1:"), text[-3000:]
        assert "failed to start (ModuleNotFoundError" in lines[0] and "removed from the scheduler" in lines[0]
        assert _journal_workers(out) == {"good": 5}
    finally:
        if second is not None and second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()
        cluster.close()


@pytest.mark.slow
def test_a_scheduler_lost_while_a_study_waits_for_workers_is_one_line(tmp_path):
    """The scheduler stops while a study attached to it waits for a first worker: 30 s
    later (Dask's reconnection) the study ended with Dask's "Failed to reconnect" ERROR
    and a traceback (``KeyError: 'workers'``, from the wait's look at the scheduler's
    workers).  Now one ``error:`` line says so, at once, and no folder is left."""
    cluster = ProcessCluster(tmp_path / "cluster", n=0)
    try:
        home = tmp_path / "client"
        home.mkdir()
        out = tmp_path / "study"
        log = tmp_path / "client.txt"
        cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()), "--random", "5",
               "--scheduler-file", str(cluster.file), "--out", str(out)]
        p = subprocess.Popen(cmd, cwd=home, env=_env(home), stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            _until(lambda: "note: no worker has joined" in log.read_text() or p.poll() is not None, 120,
                   "the study did not wait for a worker")
            assert p.poll() is None, log.read_text()
            os.killpg(cluster.procs[0].pid, signal.SIGKILL)  # the scheduler
            try:
                rc = p.wait(120)
            except subprocess.TimeoutExpired:
                pytest.fail("the study hung:\n" + log.read_text()[-3000:])
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        text = log.read_text()
        assert rc == 1 and "Traceback" not in text and "ERROR" not in text, text[-3000:]
        (line,) = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("note: no worker has joined")]
        assert line.startswith("error: lost the connection to the scheduler tcp://127.0.0.1:"), line
        assert "while the study waited for workers" in line, line
        assert not out.exists()
    finally:
        cluster.close()


@pytest.mark.slow
def test_a_worker_refused_by_a_running_study_does_not_refuse_the_next_study(tmp_path):
    """Study A runs; a worker of another gpu-sssp version joins and A refuses it (kept
    paused).  Study B, started then, met it in its start check and refused to start
    at all ("1 of 2 workers cannot run this study's code"), while A went on with the
    good worker.  Now B names it in one line and runs on the good worker, as A does."""
    from tests.pipeline.test_cluster_late_workers import Study, _notes, _other_version

    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        (tmp_path / "a").mkdir()
        a = Study(tmp_path / "a", cluster)
        a.until(lambda: a.journal(), 60, "first batch")
        _late_worker(cluster, "late-version", _other_version(tmp_path / "other-env"))
        a.until(lambda: _notes(a.text(), "late-version"), 60, "refusal")
        if a.proc.poll() is not None:
            pytest.skip("study A ended before study B could start (a slow machine)")
        rc, text, out = _study(tmp_path, cluster, "b", 120)
        assert rc == 0, text[-3000:]
        (line,) = _notes(text, "late-version")
        assert "is kept paused: a study under way on the cluster refused it (gpu-sssp 0.2.0 there" in line, line
        assert _journal_workers(out) == {"node0": 5}
        assert a.wait(300) == 0, a.text()[-3000:]
    finally:
        cluster.close()
