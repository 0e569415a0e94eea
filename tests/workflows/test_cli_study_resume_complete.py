"""`sssp study --resume` of a study with nothing left to solve: its summary, without
starting (or attaching to) a cluster, which took some 2 s for nothing.  Every other resume goes on as
before: a folder whose batches are not all there, an incomplete manifest, a resume that
contradicts the folder."""
from __future__ import annotations

import json

import pytest

from gpu_sssp.pipeline import cluster
from tests.pipeline.test_study_support import grid_parquet
from tests.workflows.test_cli_study import main


class Started(Exception):
    pass


@pytest.fixture
def study(tmp_path, capsys):
    """A complete study of 40 sources in 4 batches; returns its argv (without --resume)."""
    graph = grid_parquet(tmp_path, 10, 10)
    argv = ["study", str(graph), "--random", "40", "--seed", "3", "--batch-size", "10", "--cpu-workers", "1",
            "--no-dashboard", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    capsys.readouterr()
    return argv


@pytest.fixture
def starts(monkeypatch):
    """The clusters started (or attached): each call of start_cluster, which goes on."""
    calls = []
    real = cluster.start_cluster

    def counted(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(cluster, "start_cluster", counted)
    return calls


def _no_cluster(monkeypatch):
    def refuse(**kwargs):
        raise Started(f"a cluster was started: {kwargs}")

    monkeypatch.setattr(cluster, "start_cluster", refuse)


def _manifest(argv) -> dict:
    return json.loads((_out(argv) / "manifest.json").read_text())


def _out(argv):
    from pathlib import Path

    return Path(argv[argv.index("--out") + 1])


def test_resume_of_a_complete_study_starts_no_cluster(study, monkeypatch, capsys):
    before = json.loads((_out(study) / "summary.json").read_text())
    _no_cluster(monkeypatch)
    rc = main([*study, "--resume"])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert "all 4 batches already done; summarising (no cluster started)" in text, text
    assert "in 4 batches of 10, 0 to do" in text and "40 / 40" in text, text
    assert "no cluster: nothing to" in text and "cluster: local-cpu" not in text, text
    assert f"wrote {_out(study)}/stats/ (40 rows), manifest.json, summary.json" in text, text
    after = json.loads((_out(study) / "summary.json").read_text())
    assert after["complete"] and after["sources_solved"] == 40
    for key in ("diameter", "radius", "eccentricity_max", "closeness_max", "relaxations_total"):
        assert after[key] == before[key], key
    assert after["timings"]["workers"] == 0
    m = _manifest(study)
    assert m["status"] == "complete" and m["runs"][-1]["cluster"]["mode"] == "none"
    assert m["cluster"]["mode"] == "local-cpu"  # the study's record: the cluster that solved it
    assert m["runs"][-1]["sources"] == 0 and "end" in m["runs"][-1]


def test_nor_attaches_to_a_scheduler(study, monkeypatch, capsys):
    """--scheduler where nothing listens: nothing to attach to, nothing asked of it."""
    _no_cluster(monkeypatch)
    argv = [a for a in study if a not in ("--cpu-workers", "1")]
    rc = main([*argv, "--resume", "--scheduler", "tcp://127.0.0.1:1"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "no cluster started" in text


def test_a_complete_folder_with_a_batch_file_gone_is_solved_on_a_cluster(study, starts, capsys):
    (_out(study) / "stats" / "batch-000002.parquet").unlink()
    rc = main([*study, "--resume"])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert len(starts) == 1
    assert text.count("cluster: local-cpu, 1 worker on") == 1, text
    assert "1 journaled batch will be solved again" in text and "1 to do" in text, text
    assert "no cluster" not in text and "already done" not in text, text
    assert (_out(study) / "stats" / "batch-000002.parquet").is_file()
    m = _manifest(study)
    assert m["status"] == "complete" and m["runs"][-1]["cluster"]["mode"] == "local-cpu"
    assert all(r.get("status") != "killed" for r in m["runs"]), m["runs"]


@pytest.mark.parametrize("status", ["incomplete", "failed", "running"])
def test_an_unfinished_study_resumes_on_a_cluster(study, starts, capsys, status):
    (_out(study) / "stats" / "batch-000003.parquet").unlink()
    m = _manifest(study)
    m["status"] = status
    (_out(study) / "manifest.json").write_text(json.dumps(m))
    rc = main([*study, "--resume"])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0, text
    assert len(starts) == 1 and "1 to do" in text and "no cluster" not in text, text
    assert _manifest(study)["status"] == "complete"


def test_a_stopped_study_with_nothing_left_is_summarised_without_a_cluster_too(study, monkeypatch, capsys):
    """The folder's batches decide, not its manifest's word: a run interrupted after its
    last batch was journaled has nothing to solve either, and ends ``complete``."""
    m = _manifest(study)
    m["status"] = "interrupted"
    (_out(study) / "manifest.json").write_text(json.dumps(m))
    _no_cluster(monkeypatch)
    assert main([*study, "--resume"]) == 0
    assert "already done; summarising (no cluster started)" in capsys.readouterr().out
    assert _manifest(study)["status"] == "complete"


def test_a_resume_that_contradicts_the_folder_is_refused_as_before(study, monkeypatch, capsys):
    _no_cluster(monkeypatch)
    argv = list(study)
    argv[argv.index("--random") + 1] = "30"
    rc = main([*argv, "--resume"])
    err = capsys.readouterr().err
    assert rc != 0
    assert "holds a different study, cannot resume" in err and "number of sources: folder has 40, asked 30" in err
    assert _manifest(study)["status"] == "complete"


def test_bad_listen_options_are_refused_as_before(study, monkeypatch, capsys):
    _no_cluster(monkeypatch)
    rc = main([*study, "--resume", "--host", "192.0.2.1"])
    assert rc == 2 and "--host 192.0.2.1: not an address of this machine" in capsys.readouterr().err


def test_a_resume_that_finds_no_study_recorded_says_it_starts_as_given(tmp_path, capsys):
    """A matrix study stopped while it started (before its manifest: a Ctrl-C or kill
    in the cluster's start) leaves no study, or only its lock.  A ``--resume`` without
    the target options (which a resume takes from a recorded study) then ran a study
    without targets with no word; it now says that nothing was recorded and that it
    starts the study as given, without targets."""
    graph = grid_parquet(tmp_path, 10, 10)
    out = tmp_path / "o"
    out.mkdir()
    (out / ".lock").write_text("pid 1 on a host that is gone\n")  # what a SIGKILL left
    argv = ["study", str(graph), "--random", "20", "--seed", "3", "--batch-size", "10", "--cpu-workers", "1",
            "--no-dashboard", "--out", str(out), "--resume"]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"note: {out} holds no study yet (a run stopped before recording it): starting the study as given, " \
           "without targets: give --targets (or --random-targets) again for a matrix study" in text, text
    assert main([*argv[:-1], "--resume"]) == 0  # a resume of the study now recorded: no such note
    assert "holds no study yet" not in capsys.readouterr().out


@pytest.mark.parametrize("leftover", [False, True], ids=["no-folder", "lock-only"])
def test_a_resume_with_no_study_recorded_and_no_batch_size_runs_the_study(tmp_path, capsys, leftover):
    """Without --batch-size the batches are laid out only once the workers are known:
    study() took the folder's empty pending list (no batches yet) for a complete study,
    chose no cluster, and run_study then met the new batches with client=None
    (AttributeError twice, the manifest left 'running')."""
    graph = grid_parquet(tmp_path, 6, 6)
    out = tmp_path / "o"
    if leftover:
        out.mkdir()
        (out / ".lock").write_text("pid 1 on a host that is gone\n")
    argv = ["study", str(graph), "--random", "12", "--seed", "3", "--cpu-workers", "1", "--no-dashboard",
            "--out", str(out), "--resume"]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    if leftover:
        assert f"note: {out} holds no study yet (a run stopped before recording it): starting the study as given" \
            in text, text
    else:  # a mistyped --out: not "a run stopped"
        assert f"note: {out} did not exist (a new folder: check --out): starting the study as given" in text, text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["sources_solved"] == 12, summary
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("stop", ["error", "ctrl-c"])
def test_a_report_that_fails_before_a_complete_studys_run_says_it_was_complete_before(study, starts, monkeypatch,
                                                                                      capsys, tmp_path, stop):
    """``--resume --report R`` of a complete study starts a cluster for Dask's report;
    a report that failed as it began (before the study's run) was told "the study ... is
    complete (summary.json), nothing to resume; what failed came after it" (Ctrl-C there:
    "stopped while closing the cluster"): nothing came after the study in this run, it
    was complete before.  Said so; the folder stays as the run that completed it left it."""
    pytest.importorskip("bokeh")
    import errno

    import distributed

    def fails(self):
        if stop == "ctrl-c":
            raise KeyboardInterrupt
        raise OSError(errno.ECONNRESET, "Connection reset by peer")

    monkeypatch.setattr(distributed.performance_report, "__enter__", fails)
    manifest, summary = _manifest(study), (_out(study) / "summary.json").read_text()
    rc = main([*study, "--resume", "--report", str(tmp_path / "rep.html")])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(starts) == 1 and "Traceback" not in err, err  # the report needs a cluster: started
    said = (f"the study in {_out(study)} is complete (summary.json), nothing to resume; it was complete before "
            f"this run, which {'was stopped' if stop == 'ctrl-c' else 'failed'} before it began (summary.json and "
            "manifest.json are those of the run that completed it)")
    if stop == "ctrl-c":
        assert rc == 130 and lines == [f"stopped: {said}"], err
    else:
        assert rc == 2 and len(lines) == 2, err
        assert lines[0] == f"note: {said}", err
        assert lines[1].startswith("error: ") and "Connection reset by peer" in lines[1], err
    assert "came after" not in err and "closing the cluster" not in err and "--resume" not in err, err
    assert _manifest(study) == manifest and (_out(study) / "summary.json").read_text() == summary


def test_a_failure_after_a_resumed_study_completed_says_it_came_after(study, monkeypatch, capsys, tmp_path):
    """The other case, unchanged: a complete study resumed with --report is summarised on
    the cluster (a run that starts and completes it again); what fails after that (the
    cluster's close here) came after the study."""
    pytest.importorskip("bokeh")
    real_close = cluster.ClusterHandle.close

    def close_then_fail(self):
        real_close(self)
        raise OSError("the cluster did not close")

    monkeypatch.setattr(cluster.ClusterHandle, "close", close_then_fail)
    rc = main([*study, "--resume", "--report", str(tmp_path / "rep.html")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 2, lines
    assert lines[0] == (f"note: the study in {_out(study)} is complete (summary.json), nothing to resume; what "
                        "failed came after it"), lines
    assert _manifest(study)["status"] == "complete" and len(_manifest(study)["runs"]) == 2


def test_a_plain_resume_takes_the_studys_algorithm_and_outputs(tmp_path, capsys):
    """`--resume` of a `-m dijkstra --outputs stats,distances` study was refused until both
    were given again, while it took the batch size, order and distance form (found by the
    2026-12-07 audit).  They are the folder's now; given otherwise they are still refused."""
    g = grid_parquet(tmp_path, 6, 6)
    out = tmp_path / "s"
    base = ["study", str(g), "--random", "20", "--seed", "1", "--batch-size", "5", "--cpu-workers", "1",
            "--no-dashboard", "--out", str(out)]
    assert main(base + ["-m", "dijkstra", "--outputs", "stats,distances"]) == 0
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:2]) + "\n")  # two of the four batches left to do
    for sub in ("stats", "distances"):
        for i in (2, 3):
            (out / sub / f"batch-{i:06d}.parquet").unlink()
    capsys.readouterr()
    assert main(base + ["--resume"]) == 0, capsys.readouterr()
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and m["identity"]["algorithm"] == "dijkstra"
    assert m["identity"]["outputs"] == ["stats", "distances"]
    assert sorted(p.name for p in (out / "distances").iterdir()) == [f"batch-{i:06d}.parquet" for i in range(4)]
    capsys.readouterr()
    assert main(base + ["--resume", "-m", "bellman-ford"]) != 0
    assert "different study" in capsys.readouterr().err
