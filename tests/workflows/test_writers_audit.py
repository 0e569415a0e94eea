"""The single-file outputs (`sssp ingest -o`, `generate -o`, `solve -o`) under failure:
a file-size limit (standing in for a full disk: `ulimit -f`, EFBIG, which Python turns
into an error by ignoring SIGXFSZ), the output's folder removed while it is written,
and the temporaries a killed run leaves.  The random kills are in the manual harness
``tests/workflows/writers_kill_harness.py``."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp.workflows.cli import main

REPO = Path(__file__).resolve().parents[2]
LIMIT = 64 * 1024  # bytes: `ulimit -f 64`


def _limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def sssp_limited(args, cwd) -> subprocess.CompletedProcess:
    """``sssp ARGS`` in a process whose files may not pass 64 KiB (``ulimit -f 64``)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, preexec_fn=_limited, timeout=300)


def _edge_list(path: Path, lines: int = 40_000) -> Path:
    rng = np.random.default_rng(3)
    np.savetxt(path, np.c_[rng.integers(0, 20_000, lines), rng.integers(0, 20_000, lines),
                           rng.integers(1, 1000, lines)], fmt="%d")
    return path


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _write_args(command: str, out: Path, graph: Path) -> list[str]:
    """The command line of ``command`` writing one output ``out`` (``graph``: its input)."""
    if command == "ingest":
        return ["ingest", str(graph), "-o", str(out), "-q"]
    if command == "generate":
        return ["generate", "grid", "--rows", "5", "--cols", "5", "-o", str(out), "-q"]
    return ["solve", str(graph), "-s", "1", "-o", str(out)]


def _only_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", ["ingest", "generate"])
def test_a_file_size_limit_is_one_line_naming_the_output_and_keeps_the_old_file(tmp_path, command):
    """Under `ulimit -f 64` ingest/generate ended with pyarrow's words alone, "error:
    [Errno 27] Error writing bytes to file. Detail: [errno 27] File too large", naming
    no file; now the output and the reason, status 2, the earlier file intact, no
    temporary left."""
    out = tmp_path / "g.parquet"
    out.write_bytes(b"the old output")
    if command == "ingest":
        args = ["ingest", _edge_list(tmp_path / "e.wel"), "-o", out.name, "-q"]
    else:
        args = ["generate", "grid", "--rows", "100", "--cols", "100", "-o", out.name, "-q"]
    r = sssp_limited(args, tmp_path)
    assert r.returncode == 2, r.stderr
    assert _only_line(r.stderr) == "error: g.parquet: could not be written (File too large)"
    assert out.read_bytes() == b"the old output"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_solve_under_a_file_size_limit_removes_the_folders_it_made(rome99, tmp_path):
    """`solve -o new/sub/d.parquet` whose write failed left `new/sub/` behind (ingest and
    generate remove the folders they made for -o); now it goes too."""
    graph = tmp_path / "rome.parquet"
    assert main(["ingest", str(rome99), "-o", str(graph), "-q"]) == 0
    assert main(["solve", str(graph), "-s", "1"]) == 0  # its CSR cache, made without the limit
    sources = sum((["-s", str(i)] for i in range(1, 41)), [])
    r = sssp_limited(["solve", graph.name, *sources, "--all-vertices", "-o", "new/sub/d.parquet"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "error: --out new/sub/d.parquet: could not be written (File too large)"
    assert not (tmp_path / "new").exists()


def test_the_folder_removed_while_ingest_writes_names_the_output(tmp_path, capsys, monkeypatch):
    """The output's folder removed during the run: the rename failed with "[Errno 2] No
    such file or directory: 'd1/.b.parquet.20302.ccc7f26d.tmp'", the temporary's name;
    now the output's."""
    import gpu_sssp.pipeline.ingest._sink as sink

    def gone(src, dst):
        raise FileNotFoundError(2, "No such file or directory", str(src))

    monkeypatch.setattr(sink.os, "replace", gone)
    out = tmp_path / "d1" / "b.parquet"
    assert main(["ingest", str(_edge_list(tmp_path / "e.wel", 100)), "-o", str(out), "-q"]) == 2
    line = _only_line(capsys.readouterr().err)
    assert line == f"error: {out}: could not be written (No such file or directory)"
    assert ".tmp" not in line


def _temporaries(folder: Path, name: str):
    """A killed writer's temporary of ``name`` (dead pid, 11 minutes old), a fresh one of
    a dead pid, an old one of a live process, another output's, and a study-style one
    (no pid: never known to be abandoned)."""
    dead, old = _dead_pid(), time.time() - 660
    made = {
        "abandoned": folder / f".{name}.{dead}.0123abcd.tmp",
        "fresh": folder / f".{name}.{dead}.4567abcd.tmp",
        "live": folder / f".{name}.{os.getpid()}.89abcdef.tmp",
        "other": folder / f".other.parquet.{dead}.0123abcd.tmp",
        "study": folder / f".{name}.tmp-0123456789ab",
    }
    for key, path in made.items():
        path.write_bytes(b"PAR1 partial")
        if key != "fresh":
            os.utime(path, (old, old))
    return made


@pytest.mark.parametrize("command", ["ingest", "generate", "solve"])
def test_a_killed_runs_temporary_goes_at_the_next_run_and_nothing_else(rome99, tmp_path, command):
    """A run killed while it wrote left `.OUT.<pid>.<hex>.tmp` beside the output, and
    every later run left it there (solve's had no pid in its name at all); now the next
    run of the same output removes a temporary of that output whose process is gone and
    which is 10 minutes old, the rule of the cache folders, and nothing else."""
    folder = tmp_path / "out"
    folder.mkdir()
    made = _temporaries(folder, "g.parquet")
    out = folder / "g.parquet"
    assert main(_write_args(command, out, _edge_list(tmp_path / "e.wel", 100) if command == "ingest" else rome99)) == 0
    assert pq.read_table(out).num_rows > 0
    assert not made["abandoned"].exists()
    assert all(made[k].exists() for k in ("fresh", "live", "other", "study"))
    assert sorted(p.name for p in folder.iterdir()) == sorted([out.name] + [made[k].name for k in
                                                                              ("fresh", "live", "other", "study")])


def test_solve_writes_under_a_temporary_that_names_its_process(rome99, tmp_path, monkeypatch):
    """solve -o's temporary is `.NAME.<pid>.<8 hex>.tmp` (as ingest's and generate's), so
    that a later run can tell a killed run's from one being written."""
    import gpu_sssp.pipeline.writers as writers

    seen = []
    real = writers.atomic_path

    def spy(path, **kw):
        cm = real(path, **kw)

        class Wrap:
            def __enter__(self):
                tmp = cm.__enter__()
                seen.append(Path(tmp).name)
                return tmp

            def __exit__(self, *exc):
                return cm.__exit__(*exc)

        return Wrap()

    monkeypatch.setattr(writers, "atomic_path", spy)
    assert main(["solve", str(rome99), "-s", "1", "-o", str(tmp_path / "d.parquet")]) == 0
    assert len(seen) == 1 and seen[0].startswith(f".d.parquet.{os.getpid()}.") and seen[0].endswith(".tmp")


@pytest.mark.parametrize("command", ["ingest", "generate", "solve"])
def test_an_output_name_near_the_file_name_limit_is_written(rome99, tmp_path, command):
    """A valid output name of 231 to 255 bytes was refused after the work ("could not
    be written (File name too long)", or, from ingest/generate, Arrow's words about
    the temporary file): its temporary's name, the output's plus 25 bytes, was past
    255.  Such a temporary keeps the name's start and a digest; a killed run's is
    still found by the next run.  With a two-byte character cut at the end too."""
    for name in ("a" * 240 + ".parquet", "é" * 123 + ".parquet"):
        assert len(os.fsencode(name)) <= 255
        out = tmp_path / name
        dead, old = _dead_pid(), time.time() - 660
        from gpu_sssp.pipeline.writers import owned_temp_for

        left = owned_temp_for(out)
        left = left.with_name(left.name.replace(f".{os.getpid()}.", f".{dead}."))
        left.write_bytes(b"PAR1 partial")
        os.utime(left, (old, old))
        assert main(_write_args(command, out, rome99)) == 0
        assert pq.read_table(out).num_rows > 0
        assert not left.exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_write_parquet_atomic_takes_the_temporary_name_of_a_single_output(tmp_path):
    """``write_parquet_atomic(..., temp_name=owned_temp_for)``: the name a command's
    other outputs (bench's rows) can take so that a killed run's temporary is found
    again (it had no such option)."""
    import pyarrow as pa

    from gpu_sssp.pipeline.writers import owned_temp_for, write_parquet_atomic

    used = []

    def name(path):
        used.append(owned_temp_for(path))
        return used[-1]

    out = tmp_path / "rows.parquet"
    write_parquet_atomic(pa.table({"x": [1, 2]}), out, metadata={"k": 1}, temp_name=name)
    assert len(used) == 1 and used[0].name.startswith(f".rows.parquet.{os.getpid()}.") and not used[0].exists()
    assert pq.read_table(out)["x"].to_pylist() == [1, 2]


def test_output_write_error_is_one_line_an_oserror_and_survives_pickling():
    """What callers rely on: an ``OSError`` with its errno (the cache code catches
    those), a usage error (exit status 2), the output named, and it crosses processes
    (a Dask worker's error is pickled; its __init__ takes other arguments than its
    args, which failed to unpickle without ``__reduce__``)."""
    import errno
    import pickle

    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.writers import OutputWriteError

    exc = OutputWriteError("out/g.parquet", OSError(errno.ENOSPC, "Error writing bytes to file"), "-o")
    back = pickle.loads(pickle.dumps(exc))
    for e in (exc, back):
        assert isinstance(e, OSError) and isinstance(e, UsageError) and e.exit_code == 2
        assert e.errno == errno.ENOSPC
        assert str(e) == "-o out/g.parquet: could not be written (No space left on device)"


def test_bench_outputs_name_the_file_that_could_not_be_written(tmp_path, monkeypatch):
    """`sssp bench` on a full disk said "[Errno 28] No space left on device" alone;
    its rows, summary and plots now go through the single-output rule: one line naming
    the file."""
    import errno

    from gpu_sssp.pipeline import bench_report, writers

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writers, "write_parquet_parts_atomic", full)
    from gpu_sssp.pipeline.bench_protocol import ROW_SCHEMA

    with pytest.raises(writers.OutputWriteError) as e:
        bench_report.write_rows(ROW_SCHEMA.empty_table(), tmp_path / bench_report.ROWS_FILE, {})
    assert str(e.value).count("\n") == 0 and "rows.parquet" in str(e.value) and "No space left" in str(e.value)


def test_a_killed_benchs_temporaries_go_at_the_next_report(tmp_path):
    from gpu_sssp.pipeline import bench_report
    from gpu_sssp.pipeline.bench_protocol import ROW_SCHEMA

    dead = _dead_pid()
    old = time.time() - 3600
    left = [tmp_path / f".{bench_report.ROWS_FILE}.{dead}.0123abcd.tmp",
            tmp_path / f".{bench_report.SUMMARY_FILE}.{dead}.89abcdef.tmp"]
    fresh = tmp_path / f".{bench_report.ROWS_FILE}.{dead}.deadbeef.tmp"  # untouched for less than 10 min
    other = tmp_path / ".notes.txt.tmp"
    for f in left + [fresh, other]:
        f.write_bytes(b"x")
    for f in left + [other]:
        os.utime(f, (old, old))
    bench_report.write_rows(ROW_SCHEMA.empty_table(), tmp_path / bench_report.ROWS_FILE, {})
    bench_report.write_report(ROW_SCHEMA.empty_table(), {}, tmp_path, plots=False)
    assert not any(f.exists() for f in left)
    assert fresh.exists() and other.exists()
    assert pq.read_table(tmp_path / bench_report.ROWS_FILE).num_rows == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert not any(n.endswith(".tmp") and f".{os.getpid()}." in n for n in names)


@pytest.mark.parametrize("command", ["ingest", "solve"])
def test_a_temporary_naming_a_pid_past_the_c_int_is_cleared_not_a_traceback(rome99, tmp_path, command):
    """A leftover temporary whose pid field is past 2**31 - 1 (the name's digits are
    any run of digits): ``os.kill`` raised OverflowError, which the clean-up ("never
    raises") let through, ending ingest in a traceback and solve after its solve.  No
    process has such a pid: the file is abandoned as any dead writer's."""
    folder = tmp_path / "out"
    folder.mkdir()
    big, old = 2**31, time.time() - 660
    if command == "ingest":
        junk = folder / f".g.parquet.{big}.0123abcd.tmp"
        argv = ["ingest", str(rome99), "-o", str(folder / "g.parquet"), "-q"]
    else:
        g = folder / "g.parquet"
        assert main(["ingest", str(rome99), "-o", str(g), "-q"]) == 0
        junk = folder / f"g.parquet.csr.npz.tmp{big}-01234567.npz"
        argv = ["solve", str(g), "-s", "1"]
    junk.write_bytes(b"x")
    os.utime(junk, (old, old))
    assert main(argv) == 0
    assert not junk.exists()
