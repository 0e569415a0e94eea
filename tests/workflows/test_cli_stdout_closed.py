"""A command whose standard output's reader has gone (``sssp solve ... -o F | head``,
``| true``) does its work and ends with its own status.  Rich's handling of the broken
pipe ended it at its first line, status 1 and no word: ``solve -o F`` never wrote ``F``
and a study stopped after its cluster line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]


def _closed_stdout(args, cwd):
    """``sssp ARGS`` with standard output a pipe whose read end is already closed."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", *args], cwd=cwd, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(w)


def test_solve_writes_its_file_with_no_reader(rome99, tmp_path):
    out = tmp_path / "d.parquet"
    got = _closed_stdout(["solve", str(rome99), "-s", "1", "-o", str(out)], tmp_path)
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert pq.read_table(out).num_rows == 3353


def test_a_study_runs_to_its_end_with_no_reader(rome99, tmp_path):
    out = tmp_path / "s"
    got = _closed_stdout(["study", str(rome99), "--random", "100", "--cpu-workers", "1", "--out", str(out),
                          "--no-dashboard"], tmp_path)
    assert got.returncode == 0 and got.stderr == "", got.stderr
    assert pq.read_table(out / "stats").num_rows == 100 and (out / "summary.json").is_file()


def test_an_error_still_reaches_stderr(tmp_path):
    got = _closed_stdout(["solve", str(tmp_path / "missing.gr"), "-s", "1"], tmp_path)
    assert got.returncode == 2 and got.stderr.startswith("error: ") and "missing.gr" in got.stderr


def test_bench_saves_its_rows_when_its_stderr_reader_has_gone(rome99, tmp_path):
    """``sssp bench ... 2>&1 | head -3``: bench's notes and progress bar go to standard
    error, whose closed pipe ended the run (status 1, no word) with 0 rows saved and a
    summary saying "nothing was measured yet"."""
    r, w = os.pipe()
    os.close(r)
    out = tmp_path / "b"
    try:
        got = subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", "bench", str(rome99), "--algorithms",
                              "cpu", "--sources", "4", "--out", str(out)], cwd=tmp_path, stdout=w, stderr=w,
                             timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(w)
    assert got.returncode == 0
    assert pq.read_table(out / "rows.parquet").num_rows > 0
    assert "nothing was measured yet" not in (out / "summary.md").read_text()
