"""`sssp study` from the command line: bad arguments exit 2 with clear messages; a
study whose client process is killed mid-way resumes to the same tables."""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import grid_parquet, rome_source

REPO = Path(__file__).resolve().parents[2]


def _cli_available() -> bool:
    try:
        from gpu_sssp.workflows.cli import build_parser

        build_parser()
    except Exception:
        return False
    return True


def main(argv=None) -> int:
    """``sssp`` when ``workflows.cli`` builds, else a harness around ``cmd_study`` alone."""
    if _cli_available():
        from gpu_sssp.workflows.cli import main as cli_main

        return cli_main(argv)
    from gpu_sssp.workflows import cmd_study

    parser = argparse.ArgumentParser(prog="sssp")
    sub = parser.add_subparsers(dest="command")
    cmd_study.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, FileNotFoundError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _command() -> list[str]:
    if _cli_available():
        return [sys.executable, "-m", "gpu_sssp.workflows.cli"]
    return [sys.executable, "-m", "tests.workflows.test_cli_study"]


@pytest.fixture
def grid(tmp_path):
    return grid_parquet(tmp_path, 20, 20)


@pytest.mark.parametrize("extra, message", [
    (["--source", "5", "--source", "400"], "source 400 does not exist"),
    (["--source", "99999999999999999999999"], "source 99999999999999999999999 does not exist"),
    (["--source", "-1"], "ids run from 0 to 399"),
    (["--random", "0"], "between 1 and"),
    (["--outputs", "stats,paths"], "unknown output"),
    (["--algorithm", "no-such"], "unknown algorithm"),
    (["--outputs", "distances", "--max-distance-bytes", "1KB"], "--max-distance-bytes 5120000"),
    (["--seed", "3"], "--seed goes with --random"),
    (["--batch-size", "0"], "at least 1"),
    (["--stats-over", "all"], "--stats-over goes with targets (--targets or --random-targets)"),
    (["--matrix-form", "long"], "--matrix-form goes with targets (--targets or --random-targets)"),
    # a stats-only study wrote no distance file in either form, yet kept the form in its
    # identity: a resume with the other --distance-form was refused as a different study
    (["--distance-form", "wide"], "--distance-form goes with --outputs distances or predecessors"),
    (["--outputs", "stats", "--distance-form", "long"], "--distance-form goes with --outputs"),
    # an empty list was taken as stats without a word
    (["--outputs", ""], "--outputs '': no output named"),
    (["--outputs", " , "], "--outputs ' , ': an empty item in the list"),
])
def test_bad_arguments_exit_2(grid, tmp_path, capsys, extra, message):
    rc = main(["study", str(grid), "--out", str(tmp_path / "o"), "--cpu-workers", "1", *extra])
    err = capsys.readouterr()
    assert rc == 2
    assert message in err.err + err.out
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("size", ["1.5", "0.5", "1.0001K"])
def test_max_distance_bytes_not_a_whole_number_of_bytes_is_refused(grid, tmp_path, capsys, size):
    """``--max-distance-bytes 1.5`` (and ``max_distance_bytes=1.5`` from Python) was taken
    as 1 byte (0.5 as 0) without a word: refused in one line naming the option."""
    with pytest.raises(SystemExit) as exc:
        main(["study", str(grid), "--random", "3", "--outputs", "distances", "--out", str(tmp_path / "o"),
              "--cpu-workers", "1", "--max-distance-bytes", size])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--max-distance-bytes" in err and "not a whole number of bytes" in err, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.study.run import study

    value = float(size) if size == "1.5" else size
    with pytest.raises(UsageError, match=f"max_distance_bytes: .*got {re.escape(repr(value))}$"):
        study(grid, random=3, outputs="distances", out=tmp_path / "o", cpu_workers=1, max_distance_bytes=value)
    assert not (tmp_path / "o").exists()


def test_empty_source_file_and_foreign_folder(grid, tmp_path, capsys):
    empty = tmp_path / "empty.ss"
    empty.write_text("")
    assert main(["study", str(grid), "--sources-file", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "empty.ss" in capsys.readouterr().err
    held = tmp_path / "held"
    held.mkdir()
    (held / "manifest.json").write_text(json.dumps({"status": "complete", "identity": {"algorithm": "x"}}))
    assert main(["study", str(grid), "--random", "3", "--out", str(held)]) == 2
    assert "already holds a study" in capsys.readouterr().err
    assert main(["study", str(grid), "--random", "3", "--out", str(held), "--resume"]) == 2
    assert "different study" in capsys.readouterr().err
    missing = tmp_path / "missing.ss"
    assert main(["study", str(grid), "--sources-file", str(missing), "--out", str(tmp_path / "o")]) == 2


def test_attach_to_running_scheduler(grid, tmp_path, capsys):
    """--scheduler attaches, solves, and leaves the cluster it did not start running."""
    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.WARNING) as cluster:
        rc = main(["study", str(grid), "--random", "50", "--seed", "4", "--batch-size", "8",
                   "--scheduler", cluster.scheduler_address, "--out", str(tmp_path / "o")])
        out = capsys.readouterr().out
        assert rc == 0, out
        assert "attached" in out and "sources/s" in out
        with Client(cluster) as c:  # still up
            assert len(c.scheduler_info()["workers"]) == 2
    t = pq.read_table(tmp_path / "o" / "stats")
    assert t.num_rows == 50 and len(set(t.column("source").to_pylist())) == 50


def test_banner_and_wrote_line_describe_what_the_study_does(grid, tmp_path, capsys):
    """The banner gives the real batches (100 sources on 2 workers: 2 of 50, not "of
    64"), and the last line every folder written (distances/ and predecessors/ too)."""
    out = tmp_path / "o"
    rc = main(["study", str(grid), "--random", "100", "--algorithm", "dijkstra", "--outputs", "predecessors",
               "--distance-form", "wide", "--cpu-workers", "2", "--no-dashboard", "--out", str(out)])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert "100 sources (random) in 2 batches of 50, 2 to do" in text, text
    assert (f"wrote {out}/distances/, {out}/predecessors/, {out}/stats/ (100 rows), manifest.json, "
            "summary.json") in text, text
    m = json.loads((out / "manifest.json").read_text())
    assert m["batch_size"] == 64 and m["batches"] == 2
    rc = main(["study", str(grid), "--random", "100", "--algorithm", "dijkstra", "--batch-size", "64",
               "--random-targets", "10", "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "m")])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert "in 2 batches of 36-64, 2 to do" in text, text
    assert f"wrote {tmp_path / 'm'}/matrix/, targets.parquet, {tmp_path / 'm'}/stats/ (100 rows)" in text, text


def test_negative_cycle_exit_3(tmp_path, capsys):
    from tests.pipeline.test_study_support import write_edge_parquet

    g = write_edge_parquet(tmp_path / "neg.parquet", [1, 2, 3, 3], [2, 3, 1, 4], np.array([1, -3, 1, 2]),
                           n=4, id_base=1)
    rc = main(["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "o")])
    cap = capsys.readouterr()
    assert rc == 3
    assert "negative cycle" in cap.err and "--resume" in cap.err


def _deterministic(out: Path):
    t = pq.read_table(out / "stats").sort_by("source")
    return t.select(["source", "reached", "eccentricity", "sum_distance", "mean_distance", "algorithm"])


def test_kill_client_then_resume(tmp_path):
    """SIGKILL the whole `sssp study` process group mid-way; --resume completes it exactly."""
    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    out = tmp_path / "killed"
    args = ["study", str(gr), "--sources", "all", "--batch-size", "16", "--cpu-workers", "2",
            "--no-dashboard", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(_command() + args, cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # a task solves a chunk of batches and writes their files before the client
            # journals them: wait for journaled batches (a resume adopts the complete files
            # of batches not journaled yet, test_study_adopt.py; it is the journal waited on here)
            journal = out / "journal.jsonl"
            if journal.exists() and len(journal.read_text().splitlines()) >= 8:
                break
            if proc.poll() is not None:
                pytest.fail("the study ended before it could be killed:\n" + proc.stdout.read().decode())
            time.sleep(0.02)
        else:
            pytest.fail("no batch files appeared")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the client and the workers it started
        proc.wait(timeout=30)
    total_batches = (3353 + 15) // 16
    done_before = len((out / "journal.jsonl").read_text().splitlines())
    assert 0 < done_before < total_batches
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"

    # resume in a fresh process; then an uninterrupted run for comparison
    r = subprocess.run(_command() + args + ["--resume"], cwd=REPO, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    lines = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines() if x.strip()]
    batches = [e["batch"] for e in lines]
    assert sorted(set(batches)) == list(range(total_batches))
    resumed = _deterministic(out)
    src = resumed.column("source").to_numpy()
    assert (src == np.arange(1, 3354)).all()  # no source missing, none twice

    # the per-source columns do not depend on the batching: a bigger batch keeps this quick
    ref = tmp_path / "ref"
    ref_args = [str(ref) if a == str(out) else ("512" if a == "16" else a) for a in args]
    r = subprocess.run(_command() + ref_args, cwd=REPO, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert resumed.equals(_deterministic(ref))
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and len(m["runs"]) == 2


if __name__ == "__main__":
    sys.exit(main())


@pytest.mark.gpu
def test_gpus_naming_a_missing_device_exit_2(grid, tmp_path, capsys):
    """``--gpus 99`` on a machine with fewer GPUs: one line naming the option and the
    machine's GPUs, not dask-cuda's traceback; nothing written."""
    from gpu_sssp import kernels

    if kernels.device_count() == 0:
        pytest.skip("no CUDA device visible")
    pytest.importorskip("dask_cuda")
    rc = main(["study", str(grid), "--out", str(tmp_path / "o"), "--gpus", "99"])
    err = capsys.readouterr()
    assert rc == 2
    text = err.err + err.out
    n = kernels.device_count()
    shows = f"this machine shows {n} GPU{'' if n == 1 else 's'}, numbered from 0"
    assert "--gpus 99" in text and shows in text and "Traceback" not in text, text
    assert not (tmp_path / "o").exists()


def test_gpus_without_any_gpu_exit_4(grid, tmp_path, capsys):
    """``--gpus 0,1`` where no GPU can be used is a GPU request that cannot be met:
    exit status 4 (as for a GPU method), one line, nothing written."""
    from gpu_sssp import kernels

    if kernels.device_count() > 0:
        pytest.skip("a GPU is visible here")
    rc = main(["study", str(grid), "--out", str(tmp_path / "o"), "--gpus", "0,1"])
    err = capsys.readouterr().err
    assert rc == 4, err
    assert len(err.strip().splitlines()) == 1 and "--gpus" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_report_writes_the_performance_report(grid, tmp_path, capsys):
    """``--report`` used to fail with "No global client found" (the report was entered
    before the study's client existed); it is the HTML report of the study's tasks."""
    pytest.importorskip("bokeh")
    rep = tmp_path / "rep.html"
    rc = main(["study", str(grid), "--random", "20", "--out", str(tmp_path / "o"), "--cpu-workers", "1",
               "--no-dashboard", "--report", str(rep)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    text = rep.read_text()
    assert "Dask Performance Report" in text and "-batch-" in text  # the study's tasks are in it
    assert f"report {rep}" in " ".join(out.out.split())
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("made_first", [False, True])
def test_report_that_fails_after_a_complete_study_says_the_study_is_complete(grid, tmp_path, capsys,
                                                                             monkeypatch, made_first):
    """The report is written when the study has ended: one that fails then (a full disk)
    said "N finished batch(es) are recorded in DIR; fix the cause and add --resume to
    continue" of a complete study, which a resume only summarises again.  It says that the
    study is complete and only the report failed; the status stays non-zero.  Dask opens
    (creates) the file first and then fails in its write, with no file name in the error
    (``made_first``): that is told apart too."""
    pytest.importorskip("bokeh")
    import errno

    import distributed

    def full_disk(self, *exc_info):
        if made_first:
            open(self.filename, "w").close()
            raise OSError(errno.ENOSPC, "No space left on device")
        raise OSError(errno.ENOSPC, "No space left on device", str(self.filename))

    monkeypatch.setattr(distributed.performance_report, "__exit__", full_disk)
    rep, out = tmp_path / "rep.html", tmp_path / "o"
    rc = main(["study", str(grid), "--random", "20", "--out", str(out), "--cpu-workers", "1",
               "--no-dashboard", "--report", str(rep)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert "--resume" not in err and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith(f"note: the study in {out} is complete") and "only its report" in lines[0], err
    assert lines[1].startswith("error: ") and "No space left on device" in lines[1], err


def test_report_in_a_folder_that_is_not_there_exit_2(grid, tmp_path, capsys):
    pytest.importorskip("bokeh")
    for bad, what in ((tmp_path, "is a directory"), (tmp_path / "no" / "rep.html", "no folder")):
        rc = main(["study", str(grid), "--random", "5", "--out", str(tmp_path / "o"), "--cpu-workers", "1",
                   "--report", str(bad)])
        err = capsys.readouterr().err
        assert rc == 2 and what in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("content, what", [("{bad", "not JSON"), ("{}", 'no "address" in it')])
def test_a_bad_scheduler_file_is_one_line_before_the_graph_is_read(tmp_path, capsys, content, what):
    """It was an AssertionError traceback (exit 1), after the graph was read."""
    bad = tmp_path / "sched.json"
    bad.write_text(content)
    rc = main(["study", str(tmp_path / "missing.parquet"), "--random", "3", "--scheduler-file", str(bad),
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: --scheduler-file {bad}: not a Dask scheduler file ({what}"), err
    assert not (tmp_path / "o").exists()


def test_a_host_not_on_this_machine_is_one_line(grid, tmp_path, capsys):
    """It was Dask's "Cannot assign requested address" / "Cluster failed to start"
    traceback (exit 1); 192.0.2.1 is TEST-NET-1 (RFC 5737), no machine's address."""
    for option, value in (("--host", "192.0.2.1"), ("--dashboard-address", "192.0.2.1:0")):
        rc = main(["study", str(grid), "--random", "3", "--cpu-workers", "1", option, value,
                   "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {option} {value}: not an address of "
                                                                "this machine"), err
        assert not (tmp_path / "o").exists()


def test_ctrl_c_while_the_cluster_closes_says_the_study_is_complete(grid, tmp_path, capsys, monkeypatch):
    """Ctrl-C once summary.json and the final manifest are written: the study is said
    complete (no "add --resume"), status 130, the manifest stays complete."""
    from gpu_sssp.pipeline import cluster as cluster_mod

    real_close = cluster_mod.ClusterHandle.close

    def close_then_ctrl_c(self):
        real_close(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster_mod.ClusterHandle, "close", close_then_ctrl_c)
    out = tmp_path / "o"
    rc = main(["study", str(grid), "--random", "20", "--seed", "1", "--cpu-workers", "1", "--no-dashboard",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 130, err
    assert "stopped while closing the cluster" in err and "is complete" in err
    assert "--resume" not in err and "stopped: interrupted" not in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert (out / "summary.json").exists()


def test_gpu_algorithm_on_the_local_cpu_cluster_is_refused_up_front(grid, tmp_path, capsys, monkeypatch):
    """`--algorithm hbf` with no GPU visible started a CPU cluster, made the study folder,
    logged a failed warm-up per worker and only then exited 4, leaving a `failed` study
    that a new run had to --resume or delete.  Now one line, exit 4, before the cluster
    and the folder; --cpu-workers with a GPU method is a usage error (exit 2)."""
    monkeypatch.setenv("SSSP_DISABLE_GPU", "1")
    out = tmp_path / "o"
    assert main(["study", str(grid), "--random", "3", "--algorithm", "hbf", "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert "--algorithm hbf" in err and "needs a CUDA device" in err and "warm-up" not in err
    assert not out.exists()
    assert main(["study", str(grid), "--random", "3", "--algorithm", "batched", "--cpu-workers", "1",
                 "--out", str(out)]) in (2, 4)
    assert "--algorithm batched" in capsys.readouterr().err
    assert not out.exists()


def test_eta_follows_the_rate_shown_when_batches_arrive_in_bursts():
    """A study's batches are reported in bursts (a chunk's batches at once, the workers'
    chunks close together).  Rich's own ETA took its speed from the samples' time span:
    on resuming all of NY (109,568 of 264,346 sources done), two chunks reported 0.1 s
    apart after 16 s showed ETA 0:00:01 (0:00:02 here) with 138,000 sources still to solve."""
    from rich.progress import Progress

    from gpu_sssp.workflows.cmd_study import _EtaColumn, _RateColumn

    now = [0.0]
    progress = Progress(_RateColumn(), _EtaColumn(), get_time=lambda: now[0], auto_refresh=False)
    task_id = progress.add_task("study", total=264346, completed=109568, initial=109568)
    progress.start_task(task_id)
    task = progress.tasks[0]
    assert str(_EtaColumn().render(task)) == "-:--:--"  # nothing solved yet in this run
    now[0] = 16.0
    progress.advance(task_id, 8448)
    progress.update(task_id, first=(16.0, 109568 + 8448))  # as on_batch records the first report
    assert str(_EtaColumn().render(task)) == "-:--:--"  # no rate yet but the start-up's
    now[0] = 16.1
    progress.advance(task_id, 8448)
    # 16,896 sources in 16.1 s: 1,049 sources/s, 137,882 left: 131.4 s, shown rounded up
    assert str(_RateColumn().render(task)) == "1,049.4 sources/s"
    assert str(_EtaColumn().render(task)) == "0:02:12"
    now[0] = 30.0
    progress.update(task_id, completed=264346 - 100)  # 0.03 s left at 4,890 sources/s: not "0:00:00"
    assert str(_EtaColumn().render(task)) == "0:00:01"
    progress.update(task_id, completed=264346)
    assert str(_EtaColumn().render(task)) == "0:00:00"


def test_progress_lines_where_the_output_is_not_a_terminal(grid, tmp_path, capsys, monkeypatch):
    """Rich draws no progress bar where the output is not a terminal (a log file, a batch
    job's output): all NY on CPU workers printed nothing for 97 s and then the full bar.
    There a plain line now and then gives sources done, sources/s and the ETA."""
    from gpu_sssp.workflows import cmd_study

    monkeypatch.setattr(cmd_study, "LOG_PROGRESS_S", 0.0)
    rc = main(["study", str(grid), "--random", "100", "--algorithm", "dijkstra", "--batch-size", "10",
               "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0, out
    import re

    lines = [line for line in out.splitlines() if line.startswith("sources ") and "━" not in line]
    assert len(lines) >= 2, out  # the first report and the last at least (chunks of 10-source batches)
    # one line per count: a chunk's batches come together, and its later ones repeated
    # the first's line (with no ETA, the count being the first report's)
    counts = [int(line.split()[1].split("/")[0]) for line in lines]
    assert counts == sorted(set(counts)), out
    for i, line in enumerate(lines):
        # (no ETA at the first report: its rate is the workers' start-up's)
        eta = r"-:--:--" if i == 0 else r"\d:\d\d:\d\d"
        assert re.fullmatch(r"sources \d+/100 \(\d+%\), [\d,.]+ sources/s, elapsed 0:00:\d\d, "
                            rf"ETA {eta}", line), line
    assert lines[-1].startswith("sources 100/100 (100%), ") and lines[-1].endswith("ETA 0:00:00"), lines[-1]
    # a line counts every batch of the report that prompted it (a chunk's batches come
    # together): all NY's first line said 256 sources where 26 batches had come
    journal = [json.loads(x) for x in (tmp_path / "o" / "journal.jsonl").read_text().splitlines()]
    first = min(m["collected"] for m in journal)
    assert lines[0].startswith(f"sources {sum(m['rows'] for m in journal if m['collected'] == first)}/100 ")


def test_a_study_says_when_it_builds_the_hierarchy_first(tmp_path, capsys):
    """The client builds the hierarchy after the study line, the bar at 0 meanwhile (all
    NY: 7.5 s, unannounced); a note says so, and not when the cache file is there."""
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    argv = ["study", str(path), "--random", "50", "--algorithm", "phast", "--cpu-workers", "1", "--no-dashboard"]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "note: building the contraction hierarchy of rome99 for phast first" in out, out
    assert path.with_name(path.name + ".ch.npz").exists()
    assert main(argv + ["--out", str(tmp_path / "b")]) == 0
    assert "contraction hierarchy" not in capsys.readouterr().out
    # a resume that builds it (the first run stopped before it was saved) says so too:
    # the note was left out of every resume
    for p in (tmp_path / "b" / "stats").glob("*.parquet"):
        p.unlink()  # (pending again)
    path.with_name(path.name + ".ch.npz").unlink()
    assert main(argv + ["--out", str(tmp_path / "b"), "--resume"]) == 0
    assert "note: building the contraction hierarchy" in " ".join(capsys.readouterr().out.split())


def test_a_study_of_a_read_only_folders_graph_builds_the_hierarchy_once(tmp_path, capsys, monkeypatch):
    """A graph in a read-only data folder: the note said "later studies of this graph load
    it from beside the graph file", where nothing could be written, and each later study
    built it again.  The note names the user's cache file, where the next study finds it."""
    from tests.pipeline.test_study_support import rome_parquet

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "data").mkdir()
    path = rome_parquet(tmp_path / "data")
    argv = ["study", str(path), "--random", "50", "--algorithm", "phast", "--cpu-workers", "1", "--no-dashboard"]
    path.parent.chmod(0o555)
    try:
        assert main(argv + ["--out", str(tmp_path / "a")]) == 0
        out = " ".join(capsys.readouterr().out.split())
        spare = tmp_path / "xdg" / "sssp" / "hierarchies"
        assert f"later studies of this graph load it from {spare}" in out.replace("\n", ""), out
        assert len(list(spare.glob("*.ch.npz"))) == 1
        assert main(argv + ["--out", str(tmp_path / "b")]) == 0
        assert "contraction hierarchy" not in capsys.readouterr().out
    finally:
        path.parent.chmod(0o755)


def test_a_resume_says_how_many_written_batches_it_adopts(grid, tmp_path, capsys):
    """A stopped run leaves batch files written but not journaled (a chunk is journaled
    once all of it is written: 99 of all NY's 428 written files after a Ctrl-C at 50 s);
    the resume adopts the complete ones.  It said so only in the manifest, its "to do"
    count short of the batches not journaled with no word why."""
    out = tmp_path / "o"
    argv = ["study", str(grid), "--random", "100", "--algorithm", "dijkstra", "--batch-size", "10",
            "--cpu-workers", "1", "--no-dashboard", "--out", str(out)]
    assert main(argv) == 0
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:6]))  # 4 written batches no longer journaled
    capsys.readouterr()
    assert main(argv + ["--resume"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("note: 4 batches the stopped run wrote but had not journaled are complete: journaled now, "
            "not solved again") in text, text
    assert "in 10 batches of 10, 0 to do" in text, text


def test_repeated_sources_are_a_note_not_a_log_warning(grid, tmp_path, capsys):
    """A source given twice was announced as ``WARNING gpu_sssp.pipeline.sources:
    dropping 1 repeated source(s)`` (a log line, on stderr) where ``sssp solve`` says a
    ``note:``; the study now says it as solve does."""
    rc = main(["study", str(grid), "-s", "1", "-s", "5", "-s", "1", "--cpu-workers", "1", "--no-dashboard",
               "--out", str(tmp_path / "o")])
    got = capsys.readouterr()
    assert rc == 0, got.err
    assert "note: 1 repeated source solved once (2 distinct)" in got.out
    assert "WARNING" not in got.err


def test_negative_cycle_note_does_not_promise_a_resume_that_cannot_work(tmp_path, capsys):
    # the note after a negative cycle said "fix the cause and add --resume to continue":
    # a --resume on the same graph stops at the same cycle, and a graph without the cycle
    # has another fingerprint, whose --resume is refused ("holds a different study")
    from tests.pipeline.test_study_support import write_edge_parquet

    g = write_edge_parquet(tmp_path / "neg.parquet", [1, 2, 3, 3], [2, 3, 1, 4], np.array([1, -3, 1, 2]),
                           n=4, id_base=1)
    args = ["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "o")]
    assert main(args) == 3
    note = [x for x in capsys.readouterr().err.splitlines() if x.startswith("note:")]
    assert len(note) == 1 and "fix the cause and add --resume" not in note[0], note
    assert "negative cycle" in note[0] and "another --out" in note[0], note
    assert main(args + ["--resume"]) == 3  # as the note says: the same cycle again


def test_a_stop_on_an_attached_cluster_says_its_running_tasks_may_write_more(grid, tmp_path, capsys, monkeypatch):
    """An attached cluster outlives the client: a study stopped there has tasks that go on
    and write their batch files after the note was printed; the note says so."""
    import logging

    from distributed import LocalCluster

    from gpu_sssp.pipeline.study.folder import Study

    calls = []
    real = Study.record_many

    def fail_once(self, metas):
        calls.append(len(metas))
        if len(calls) == 1:
            raise OSError("boom")
        return real(self, metas)

    monkeypatch.setattr(Study, "record_many", fail_once)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                           dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    try:
        rc = main(["study", str(grid), "--random", "20", "--batch-size", "4", "--out", str(tmp_path / "o"),
                   "--scheduler", cluster.scheduler_address, "--no-dashboard"])
    finally:
        cluster.close()
    err = capsys.readouterr().err
    assert rc != 0 and "boom" in err, err
    assert "tasks still running on the attached cluster may write more batches" in err, err


def test_the_eta_leaves_out_the_time_to_the_first_batch():
    """The first progress line of a 9 s study said "ETA 0:05:18": its rate was the first
    batch over the workers' start-up (found by the 2026-12-07 audit).  At the first
    report there is no ETA; from STEADY_AFTER_S after it, the rate is the one since."""
    from gpu_sssp.workflows.cmd_study import STEADY_AFTER_S, _progress_line, _steady_rate

    first = (5.0, 16)  # 16 sources after 5 s of start-up
    assert _progress_line(16, 3353, 0, 5.0, first).endswith("ETA -:--:--")
    assert _steady_rate(16, 0, 5.0, first) is None
    t = 5.0 + STEADY_AFTER_S + 1.0  # 3 s later, 1,600 more: 533 sources/s, not 1,616/8
    assert _steady_rate(1616, 0, t, first) == pytest.approx(1600 / (t - 5.0))
    assert _progress_line(1616, 3353, 0, t, first).endswith("ETA 0:00:04")
    assert _steady_rate(32, 0, 5.1, first) == pytest.approx(32 / 5.1)  # a burst 0.1 s on: the rate since the start


def test_no_bar_where_the_output_is_not_a_terminal(grid, tmp_path, capsys):
    """Rich printed the bar once at its stop, in a log file, after the plain lines that
    stand for it (found by the 2026-12-07 audit); the last plain line is the end."""
    rc = main(["study", str(grid), "--random", "100", "--algorithm", "dijkstra", "--batch-size", "10",
               "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [line for line in out.splitlines() if line.startswith("sources ")]
    assert lines and not any("━" in line for line in lines), out
    assert lines[-1].startswith("sources 100/100 (100%), ") and lines[-1].endswith("ETA 0:00:00"), lines
