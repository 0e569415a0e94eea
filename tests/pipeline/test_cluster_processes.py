"""A study on a cluster of separate processes, as on real nodes: ``dask scheduler
--scheduler-file F``, ``dask worker --scheduler-file F`` (each in a folder and a HOME of
its own) and ``sssp study ... --scheduler-file F`` in a third process.

Checks what must hold when the client runs apart from the workers: the workers read
the graph from the study folder (``<out>/graph.parquet``, the one place they share with
the client), load the contraction hierarchy the client wrote beside it (never building
one: ``load_hierarchy(build=False)`` on the workers raises instead), and the batches,
outputs and summary are those of a local run; the task keys name the method and the
batches; start-up and per-worker figures are in the summary.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import rome_source

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _env(home: Path) -> dict:
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONUNBUFFERED="1",
               SSSP_DISABLE_GPU="1")
    # numba caches compiled code beside the sources (or in NUMBA_CACHE_DIR): keep it out
    env.setdefault("NUMBA_CACHE_DIR", str(home / ".numba"))
    return env


def _dask(*args) -> list[str]:
    return [sys.executable, "-m", "dask", *args]


class ProcessCluster:
    """``dask scheduler`` + ``n`` ``dask worker`` processes on localhost (stopped by pid)."""

    def __init__(self, root: Path, n: int = 2, nthreads: int = 1):
        self.root = root
        self.file = root / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        try:
            self._begin(n, nthreads)
        except BaseException:  # a start that fails leaves no scheduler or worker behind
            self.close()
            raise

    def _begin(self, n: int, nthreads: int):
        root = self.root
        self._start(_dask("scheduler", "--scheduler-file", str(self.file), "--host", "127.0.0.1", "--port", "0",
                          "--dashboard-address", "127.0.0.1:0"), root / "scheduler")
        deadline = time.monotonic() + 60
        while not self.file.exists():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                raise RuntimeError("the scheduler did not start:\n" + self.log())
            time.sleep(0.1)
        for i in range(n):
            self._start(_dask("worker", "--scheduler-file", str(self.file), "--nthreads", str(nthreads),
                              "--name", f"node{i}", "--host", "127.0.0.1", "--no-dashboard"),
                        root / f"worker{i}")
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=60) as c:
            if n:
                c.wait_for_workers(n, timeout=90)
            self.dashboard = c.dashboard_link

    def _start(self, cmd, home: Path, env: dict | None = None):
        home.mkdir(parents=True, exist_ok=True)
        log = home / "log.txt"
        self.logs.append(log)
        self.procs.append(subprocess.Popen(cmd, cwd=home, env=env or _env(home), stdout=open(log, "wb"),
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def log(self) -> str:
        return "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in self.logs if p.exists())

    def close(self):
        for p in reversed(self.procs):  # workers first, then the scheduler
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


@pytest.fixture
def process_cluster(tmp_path):
    c = ProcessCluster(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.close()


def test_study_on_separate_scheduler_and_worker_processes(tmp_path, process_cluster):
    client_home = tmp_path / "client"
    gr = client_home / "input" / "rome99.gr"
    gr.parent.mkdir(parents=True)
    gr.write_bytes(rome_source().read_bytes())
    out = tmp_path / "shared" / "study"
    cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(gr), "--sources", "all",
           "--algorithm", "phast", "--batch-size", "32", "--scheduler-file", str(process_cluster.file),
           "--out", str(out)]
    r = subprocess.run(cmd, cwd=client_home, env=_env(client_home), capture_output=True, timeout=300)
    assert r.returncode == 0, r.stdout.decode()[-3000:] + r.stderr.decode()[-3000:] + process_cluster.log()

    m = json.loads((out / "manifest.json").read_text())
    s = json.loads((out / "summary.json").read_text())
    assert m["status"] == "complete" and s["sources_solved"] == 3353
    # the workers read the graph and the hierarchy from the study folder, not from the
    # client's ingestion cache (beside the input, in the client's folder)
    assert m["graph"]["path"] == str((out / "graph.parquet").resolve())
    hfile = out / "graph.parquet.ch.npz"
    assert hfile.exists()
    assert list((gr.parent / ".sssp-cache").glob("*.ch.npz"))  # the client's own copy
    tm = s["timings"]
    assert tm["startup"]["hierarchy_file"] == str(hfile.resolve())
    workers = tm["cluster"]["workers"]
    assert sorted(workers) == ["node0", "node1"]  # both solved batches
    for w in workers.values():
        assert w["hierarchy_load_s"] >= 0 and w["graph_load_s"] >= 0 and w["busy_s"] > 0
        assert w["warm_method"] == "phast"
    for key in ("cluster_start_s", "workers_ready_s", "first_batch_s", "ready_wait_s"):
        assert tm["startup"][key] is not None and tm["startup"][key] >= 0
    # the first batches went out once both workers had loaded the graph (run_study's
    # readiness barrier, sssp.study.ready-wait): no task started before the last was ready
    ready = [w["ready_s"] for w in workers.values() if w.get("ready_s") is not None]
    assert ready and min(w["first_task_s"] for w in workers.values()) >= max(ready) - 0.005
    assert tm["cluster"]["tail_s"] >= 0 and tm["cluster"]["scheduler_overhead_s"] >= 0
    assert tm["task_prefix"] == "phast" and s["algorithms"] == ["phast"]
    journal = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    assert sorted(e["batch"] for e in journal) == list(range(105))
    assert all(e["task"].startswith("phast-batch-") and e["task"].endswith(s["study_id"]) for e in journal)
    assert tm["schedule"]["tasks"] < 105  # chunks of batches, not one task per batch

    # the statistics are exact (SciPy on the client)
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.graph import read_parquet

    g = read_parquet(out / "graph.parquet")
    stats = pq.read_table(out / "stats").sort_by("source")
    ids = stats.column("source").to_numpy()[::97]
    ref = kernels.solve(g, g.to_index(ids), method="dijkstra", backend="cpu", distances=False)
    sub = {int(a): (int(b), float(c)) for a, b, c in zip(stats.column("source").to_numpy(),
                                                       stats.column("reached").to_numpy(),
                                                       stats.column("sum_distance").to_numpy())}
    for k, v in enumerate(ids):
        assert sub[int(v)] == (int(ref.reached[k]), float(ref.sum_distance[k]))

    # the workers never built a hierarchy: remove the file and resume a new study of
    # the same graph with another batch size: the client writes it again first
    hfile.unlink()
    out2 = tmp_path / "shared" / "study2"
    cmd2 = [a if a != str(out) else str(out2) for a in cmd]
    cmd2[cmd2.index("32")] = "64"
    r = subprocess.run(cmd2, cwd=client_home, env=_env(client_home), capture_output=True, timeout=300)
    assert r.returncode == 0, r.stdout.decode()[-3000:] + r.stderr.decode()[-3000:] + process_cluster.log()
    assert (out2 / "graph.parquet.ch.npz").exists()


def test_a_worker_never_builds_the_hierarchy(tmp_path):
    """``load_hierarchy(build=False)`` (what the workers call) names the missing file."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.hierarchy import load_hierarchy
    from tests.pipeline.test_study_support import rome_parquet

    g = read_parquet(rome_parquet(tmp_path))
    with pytest.raises(FileNotFoundError, match="must be shared with the workers"):
        load_hierarchy(g, tmp_path / "nowhere.ch.npz", build=False)


def test_a_cached_hierarchy_is_swept_for_any_number_of_sources(tmp_path):
    """With a valid cache file beside the graph (an earlier study built it), ``auto``
    sweeps the hierarchy even for a few sources; without one, a few sources never pay
    for a build; a stale file is not rebuilt by the decision."""
    from gpu_sssp.kernels import hierarchy as H
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.hierarchy import cache_path, load_hierarchy, prepare_study
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    g = read_parquet(path)
    assert prepare_study(g, 10, "cpu") is None and not H.has_hierarchy(g)
    load_hierarchy(read_parquet(path))  # builds and writes the cache file
    assert cache_path(g).exists()
    g2 = read_parquet(path)
    assert prepare_study(g2, 10, "cpu") is not None and H.has_hierarchy(g2)
    cache_path(g).write_bytes(b"stale")
    g3 = read_parquet(path)
    assert prepare_study(g3, 10, "cpu") is None and cache_path(g).read_bytes() == b"stale"


@pytest.mark.gpu
def test_gpu_study_reports_start_up_and_warms_the_kernels_in_setup(tmp_path):
    """On a GPU worker the graph plugin compiles the sweep kernels while the hierarchy
    loads and warms the method up, so the batches pay none of it; the summary reports
    each step; the statistics are exact."""
    pytest.importorskip("dask_cuda")
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.run import study
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    s = study(path, sources="all", algorithm="phast", gpus="0", out=tmp_path / "o", dashboard=False)
    assert s["complete"] and s["algorithms"] == ["phast"] and s["devices"] != ["cpu"]
    tm = s["timings"]
    (w,) = tm["cluster"]["workers"].values()
    assert w["warm_method"] == "phast" and w["compile_s"] >= 0 and w["hierarchy_load_s"] >= 0
    assert w["upload_s"] >= 0 and w["busy_s"] > 0
    assert tm["startup"]["hierarchy_file"].endswith(".ch.npz") and tm["startup"]["first_batch_s"] > 0
    g = read_parquet(path)
    stats = pq.read_table(tmp_path / "o" / "stats").sort_by("source")
    ids = stats.column("source").to_numpy()[::131]
    ref = kernels.solve(g, g.to_index(ids), method="dijkstra", backend="cpu", distances=False)
    got = dict(zip(stats.column("source").to_numpy(), stats.column("sum_distance").to_numpy()))
    assert [got[v] for v in ids] == [float(x) for x in ref.sum_distance]


def test_a_scheduler_lost_mid_study_ends_with_one_line_and_resume_continues(tmp_path):
    """The shared scheduler stops (or is restarted) while a study runs: Dask cancels the
    tasks with "scheduler-connection-lost"; the command ended with two tracebacks (the
    client's reconnection, then FutureCancelledError), and only after Dask's 30 s of
    reconnection.  Now: one ``error:`` line at once saying what happened and what to do,
    status 1, the manifest ``failed``; and once a scheduler is back, ``--resume``
    completes the study."""
    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        client_home = tmp_path / "client"
        gr = client_home / "rome99.gr"
        gr.parent.mkdir(parents=True)
        gr.write_bytes(rome_source().read_bytes())
        out = tmp_path / "study"
        cmd = [sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(gr), "--sources", "all",
               "--algorithm", "dijkstra", "--batch-size", "8", "--scheduler-file", str(cluster.file),
               "--out", str(out)]
        env = dict(_env(client_home), DASK_SSSP__STUDY__SCHEDULE="batch")
        p = subprocess.Popen(cmd, cwd=client_home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        journal = out / "journal.jsonl"
        deadline = time.monotonic() + 120
        while not (journal.exists() and journal.stat().st_size) and p.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(cluster.procs[0].pid, signal.SIGKILL)  # the scheduler goes
        killed = time.monotonic()
        text = p.communicate(timeout=120)[0].decode()
        assert p.returncode == 1, text
        # not after Dask's 30 s of reconnection: the clean-up asked the lost scheduler
        # (the dashboard's board, the streams, the graph's count) and waited each time
        assert time.monotonic() - killed < 15, text
        assert "Traceback" not in text and "ERROR" not in text, text  # Dask's reconnection, called off
        assert text.strip().splitlines()[-1].startswith("error: lost the connection to the scheduler"), text
        m = json.loads((out / "manifest.json").read_text())
        assert m["status"] == "failed" and m["failure"]["error"] == "SchedulerLostError"
    finally:
        cluster.close()
    cluster = ProcessCluster(tmp_path / "cluster2", n=1)  # a scheduler back (a new file)
    try:
        cmd[cmd.index("--scheduler-file") + 1] = str(cluster.file)
        r = subprocess.run(cmd + ["--resume"], cwd=client_home, env=_env(client_home), capture_output=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout.decode()[-3000:] + r.stderr.decode()[-3000:]
        assert json.loads((out / "summary.json").read_text())["sources_solved"] == 3353
    finally:
        cluster.close()


def test_a_worker_that_cannot_import_gpu_sssp_is_one_line_naming_it(tmp_path):
    """A worker started in another environment (here a ``PYTHONPATH`` whose ``gpu_sssp``
    lacks ``pipeline``): the study ended with Dask's traceback of the first call on the
    workers (``ModuleNotFoundError`` from the scheduler's broadcast).  Now one ``error:``
    line names the worker and what to do, status 1, and no study folder is left."""
    cluster = ProcessCluster(tmp_path / "cluster", n=0)
    try:
        bad = tmp_path / "other-env" / "gpu_sssp"
        (bad / "pipeline").mkdir(parents=True)
        (bad / "__init__.py").write_text("")
        (bad / "pipeline" / "__init__.py").write_text(
            'raise ModuleNotFoundError("No module named gpu_sssp.pipeline", name="gpu_sssp.pipeline")\n')
        home = tmp_path / "cluster" / "worker-other"
        env = dict(_env(home), PYTHONPATH=str(bad.parent))
        cluster._start(_dask("worker", "--scheduler-file", str(cluster.file), "--nthreads", "1",
                             "--name", "other-env", "--host", "127.0.0.1", "--no-dashboard"), home, env)
        from distributed import Client

        with Client(scheduler_file=str(cluster.file), timeout=60) as c:
            c.wait_for_workers(1, timeout=90)
        client_home = tmp_path / "client"
        client_home.mkdir()
        out = tmp_path / "study"
        r = subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome_source()),
                            "--random", "5", "--seed", "1", "--scheduler-file", str(cluster.file),
                            "--out", str(out)],
                           cwd=client_home, env=_env(client_home), capture_output=True, timeout=300)
        err = r.stderr.decode()
        assert r.returncode == 1, r.stdout.decode()[-3000:] + err[-3000:] + cluster.log()
        assert "Traceback" not in err, err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: 1 of 1 worker cannot run"), err
        assert "other-env (tcp://127.0.0.1:" in lines[0] and "No module named gpu_sssp.pipeline" in lines[0], err
        assert not out.exists()
    finally:
        cluster.close()
