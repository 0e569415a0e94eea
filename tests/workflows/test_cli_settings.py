"""`sssp` and the ``sssp.*`` settings: a bad one (environment variable, dask config
file) ends any command at its start with one line naming the setting and status 2,
before a study folder or a cluster exists; a dask config file that is not valid YAML is
named with its line; an unknown key is a warning."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gpu_sssp.workflows.cli import main
from tests.pipeline.test_config import env  # noqa: F401 (a fixture: DASK_* variables read again)
from tests.pipeline.test_study_support import TWO_WORKER_STUDY, grid_parquet, two_worker_folder

REPO = Path(__file__).resolve().parents[2]




def _sssp(args, cwd, **variables):
    environ = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   **variables)
    return subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name, text, flags", [
    ("DASK_SSSP__STUDY__BATCH_SIZE", "abc", ["--cpu-workers", "1"]),
    ("DASK_SSSP__STUDY__BATCH_SIZE", "0", ["--cpu-workers", "1"]),
    ("DASK_SSSP__STUDY__BATCH_SIZE", "7.5", ["--cpu-workers", "1"]),
    ("DASK_SSSP__STUDY__MAX_DISTANCE_BYTES", "lots", ["--cpu-workers", "1", "--outputs", "distances"]),
    ("DASK_SSSP__STUDY__SCHEDULE", "bogus", ["--cpu-workers", "1"]),
    ("DASK_SSSP__STUDY__RETRIES", "abc", ["--cpu-workers", "1"]),
    ("DASK_SSSP__STUDY__FSYNC", "maybe", ["--cpu-workers", "1"]),
    ("DASK_SSSP__CLUSTER__CPU_WORKERS", "zero", []),
    ("DASK_SSSP__CLUSTER__HOST", "999.1.1.1", ["--cpu-workers", "1"]),
])
def test_a_bad_setting_is_one_line_exit_2_and_no_folder(tmp_path, capsys, env, name, text, flags):
    g = grid_parquet(tmp_path, 3, 3)
    out = tmp_path / "study"
    env(**{name: text})
    rc = main(["study", str(g), "--no-dashboard", "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: setting sssp.") and f"environment variable {name}" in lines[0], err
    assert f"got {text!r}" in lines[0]
    assert "--batch-size" not in lines[0] and "--cpu-workers" not in lines[0]  # options not given
    assert not out.exists()


#: a well-formed host name that never resolves (RFC 6761 reserves .invalid)
NO_HOST = "no-such-host.invalid"


@pytest.mark.parametrize("variables, flags, starts", [
    ({}, ["--host", NO_HOST], f"error: --host {NO_HOST}: host name '{NO_HOST}' does not resolve"),
    ({}, ["--dashboard-address", f"{NO_HOST}:0"],
     f"error: --dashboard-address {NO_HOST}:0: host name '{NO_HOST}' does not resolve"),
    ({"DASK_SSSP__CLUSTER__HOST": NO_HOST}, [],
     f"error: setting sssp.cluster.host: '{NO_HOST}' (from the environment variable DASK_SSSP__CLUSTER__HOST): "
     f"host name '{NO_HOST}' does not resolve"),
    ({"DASK_SSSP__CLUSTER__DASHBOARD_ADDRESS": f"{NO_HOST}:8787"}, [],
     f"error: setting sssp.cluster.dashboard-address: '{NO_HOST}:8787' (from the environment variable "
     f"DASK_SSSP__CLUSTER__DASHBOARD_ADDRESS): host name '{NO_HOST}' does not resolve"),
])
def test_a_host_that_does_not_resolve_is_one_line_exit_2_and_no_folder(tmp_path, capsys, env, variables, flags,
                                                                        starts):
    """A well-formed host name this machine cannot resolve (option, or setting) is
    refused before the graph is read and before the study folder or the cluster
    exists; it used to end in Dask's traceback 'Cluster failed to start: [Errno -2]
    Name or service not known', the folder made and removed again."""
    g = grid_parquet(tmp_path, 3, 3)
    out = tmp_path / "study"
    env(**variables)
    rc = main(["study", str(g), "--cpu-workers", "1", "--out", str(out), *flags])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(starts), err
    assert not out.exists()


def test_a_bad_setting_stops_other_commands_too(tmp_path, capsys, env):
    env(DASK_SSSP__INGEST__MAX_VERTICES="many")
    rc = main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(tmp_path / "g.parquet"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: setting sssp.ingest.max-vertices: expected"), err
    assert not (tmp_path / "g.parquet").exists()


def test_resume_keeps_the_folders_batches_over_a_configured_batch_size(tmp_path, capsys, env):
    """On --resume a batch size from dask config (DASK_SSSP__STUDY__BATCH_SIZE) yields to
    the folder's batches, as an absent --batch-size does: a folder laid out for 2 workers
    (64, 64, 31, 31) resumes with them on 1 worker.  It used to count as given, and the
    resume was refused ('batch_workers: folder has 2, asked 1') with a hint that named
    only --batch-size, which was not on the command line.  --batch-size itself is still
    compared with the folder's (its own is its layout), and the refusal of another says
    to leave it out."""
    g = grid_parquet(tmp_path, 30, 30)
    out = tmp_path / "s"
    assert two_worker_folder(g, out) == [64, 64, 31, 31]
    argv = ["study", str(g), "--random", str(TWO_WORKER_STUDY["random"]), "--seed", str(TWO_WORKER_STUDY["seed"]),
            "--algorithm", "dijkstra", "--outputs", "distances", "--cpu-workers", "1", "--no-dashboard",
            "--out", str(out), "--resume"]
    env(DASK_SSSP__STUDY__BATCH_SIZE="64")
    rc = main(argv + ["--batch-size", "48"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "--batch-size: folder has 64, asked 48" in err, err
    assert "resume without --batch-size" in err and "batch_workers" not in err, err
    rc = main(argv)
    cap = capsys.readouterr()
    text = " ".join(cap.out.split())
    assert rc == 0, cap.err
    assert "190 sources (random) in 4 batches of 31-64, 4 to do" in text, text
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and m["identity"]["batch_workers"] == 2 and m["batches"] == 4
    assert pq.read_table(out / "stats").num_rows == 190


def test_a_config_file_that_is_not_yaml_is_named_with_its_line(tmp_path):
    cfg = tmp_path / "dask"
    cfg.mkdir()
    (cfg / "sssp.yaml").write_text("sssp:\n  study:\n    batch-size: [1\n")
    g = grid_parquet(tmp_path, 3, 3)
    p = _sssp(["study", str(g), "--cpu-workers", "1", "--out", "study"], tmp_path, DASK_CONFIG=str(cfg))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"error: dask config file {cfg / 'sssp.yaml'}:4:1: not valid YAML"), p.stderr
    assert "line 3, column 17" in lines[0]  # where the unclosed [ began
    assert not (tmp_path / "study").exists()


def test_a_bad_value_in_a_config_file_names_the_file(tmp_path):
    cfg = tmp_path / "dask"
    cfg.mkdir()
    (cfg / "sssp.yaml").write_text("sssp:\n  study:\n    keep-graph: maybe\n")
    p = _sssp(["generate", "grid", "--rows", "2", "--cols", "2", "-o", "g.parquet", "-q"], tmp_path,
              DASK_CONFIG=str(cfg))
    assert p.returncode == 2
    assert p.stderr == (f"error: setting sssp.study.keep-graph: expected true or false (yes/no, on/off, 1/0), "
                        f"got 'maybe' (from the dask config file {cfg / 'sssp.yaml'})\n")


def test_an_unknown_key_is_a_warning_naming_the_closest(tmp_path):
    p = _sssp(["generate", "grid", "--rows", "2", "--cols", "2", "-o", "g.parquet", "-q"], tmp_path,
              DASK_SSSP__STUDY__BATCHSIZE="5")
    assert p.returncode == 0, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "unknown setting sssp.study.batchsize (from the environment variable DASK_SSSP__STUDY__BATCHSIZE)" \
        in lines[0] and "did you mean sssp.study.batch-size?" in lines[0], p.stderr
    assert (tmp_path / "g.parquet").exists()
