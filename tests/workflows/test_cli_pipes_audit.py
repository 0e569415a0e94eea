"""Inputs that are pipes (found by the user audit of solve / verify / generate).

An input is read more than once (its first bytes for the format, then its text): a pipe
(`--sources-file <(printf '1\\n2\\n')`, `sssp solve <(zcat g.gr)`) was found empty on the
second read ("no sources in the file", "empty file" - false), and a named FIFO made the
command wait for ever.  Now one line, exit 2, before anything waits on the pipe."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_sssp.workflows.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def filled_pipe():
    """``/dev/fd/N`` of a pipe holding ``text`` whose write end is closed (what a shell's
    process substitution gives)."""
    fds = []

    def make(text: str) -> str:
        r, w = os.pipe()
        os.write(w, text.encode())
        os.close(w)
        fds.append(r)
        return f"/dev/fd/{r}"

    yield make
    for fd in fds:
        os.close(fd)


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="needs /dev/fd")
@pytest.mark.parametrize("where", ["sources", "graph"])
def test_a_pipe_is_refused_in_one_line(rome99, tmp_path, capsys, filled_pipe, where):
    if where == "sources":
        pipe = filled_pipe("1\n2\n")
        argv = ["solve", str(rome99), "--sources-file", pipe]
    else:
        pipe = filled_pipe("".join(rome99.read_text().splitlines(keepends=True)[:200]))  # (a pipe holds 64 KB)
        argv = ["solve", pipe, "-s", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {pipe}: is a pipe (FIFO) or socket, not a file: an input is read more than once "
                   "(its format, then its text); save it to a file first\n")


def _run_on_fifo(fifo, command, rome99, tmp_path):
    """``sssp COMMAND`` in a process of its own, with the named FIFO ``fifo`` made for its
    ``FIFO`` argument (``GRAPH``: rome99, ``OUT``: ``o.parquet`` in ``tmp_path``); fails the
    test when the command waits on the FIFO."""
    os.mkfifo(fifo)
    argv = [{"GRAPH": str(rome99), "FIFO": str(fifo), "OUT": str(tmp_path / "o.parquet")}.get(a, a)
            for a in command]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        return subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", *argv], capture_output=True,
                              text=True, timeout=60, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sssp {' '.join(command)} waited on the FIFO")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
@pytest.mark.parametrize("command", [["solve", "GRAPH", "--sources-file", "FIFO"], ["solve", "FIFO", "-s", "1"],
                                     ["ingest", "FIFO", "-o", "OUT"], ["verify", "FIFO"]])
def test_a_named_fifo_is_refused_not_waited_on(rome99, tmp_path, command):
    fifo = tmp_path / "fifo"
    cp = _run_on_fifo(fifo, command, rome99, tmp_path)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr == f"error: {fifo}: is a pipe (FIFO) or socket, not a file: an input is read more " \
                        "than once (its format, then its text); save it to a file first\n"
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("where", ["graph", "sources", "ingest"])
def test_a_parquet_file_under_another_name_is_named_as_such(rome99, tmp_path, capsys, where):
    """A Parquet edge list named `g.pq` was read as a text edge list: "g.pq:1: non-numeric
    source id 'PAR1\\x15\\x00...' (expected a decimal integer; 'U V')"."""
    pq_file = tmp_path / "g.pq"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(tmp_path / "g.parquet"), "-q"]) == 0
    (tmp_path / "g.parquet").rename(pq_file)
    argv = {"graph": ["solve", str(pq_file), "-s", "0"],
            "sources": ["solve", str(rome99), "--sources-file", str(pq_file)],
            "ingest": ["ingest", str(pq_file), "-o", str(tmp_path / "o.parquet")]}[where]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {pq_file}: is a Parquet file (it starts with PAR1), which is read as one only under a "
                   "name ending in .parquet: rename it (or link it) to end in .parquet\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
@pytest.mark.parametrize("command", [["solve", "GRAPH", "--sources-file", "FIFO"], ["solve", "FIFO", "-s", "1"]])
def test_a_named_fifo_with_a_parquet_name_is_refused_not_waited_on(rome99, tmp_path, command):
    """The README says inputs are regular files and a FIFO is refused in one line: one
    named ``*.parquet`` (a graph, a sources or targets file) went to pyarrow, which
    waited on it for ever (SIGTERM did not stop it)."""
    fifo = tmp_path / "fifo.parquet"
    cp = _run_on_fifo(fifo, command, rome99, tmp_path)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr == f"error: {fifo}: is a pipe (FIFO) or socket, not a file: a Parquet file is read from " \
                        "its end (its footer) first; save it to a file first\n"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_device_as_a_sources_file_is_named_as_one_not_as_a_graph(rome99, capsys):
    """`solve G --sources-file /dev/zero` said '/dev/zero: is a device, expected a graph
    file' - the file asked for is a sources file."""
    assert main(["solve", str(rome99), "--sources-file", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert "is a device, expected a sources file" in err and "graph file" not in err


def test_ingest_of_a_parquet_graph_says_what_ingest_is_for(rome99, tmp_path, capsys):
    """`sssp ingest g.parquet` told the user to rename it to end in .parquet, as it did."""
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(tmp_path / "g.parquet"), "-q"]) == 0
    capsys.readouterr()
    assert main(["ingest", str(tmp_path / "g.parquet"), "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rename" not in err and "converts text formats" in err
    assert not (tmp_path / "o.parquet").exists()
