"""Defects found by tests/fuzz_cli.py: each command ends with a documented exit status
and one line on stderr, never a traceback, and leaves nothing behind when refused."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("command", ["solve", "study", "bench", "verify"])
def test_unknown_format_is_a_usage_error(rome99, tmp_path, command, capsys):
    """`--format x` on a command that takes a raw input used to end in a ValueError
    traceback (exit 1) from the ingest layer; `sssp ingest --format x` was already a
    usage error."""
    argv = {"solve": ["solve", str(rome99), "-s", "1"],
            "study": ["study", str(rome99), "--random", "1", "--out", str(tmp_path / "s")],
            "bench": ["bench", str(rome99), "--out", str(tmp_path / "b")],
            "verify": ["verify", str(rome99)]}[command]
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--format", "x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--format" in err and "invalid choice" in err
    assert not (tmp_path / "s").exists() and not (tmp_path / "b").exists()


def test_input_formats_are_ingests():
    from gpu_sssp.pipeline.ingest._formats import FORMATS
    from gpu_sssp.workflows.common import INPUT_FORMATS

    assert tuple(INPUT_FORMATS) == tuple(FORMATS)


@pytest.mark.parametrize("size", ["1e400", "1e309GB"])
def test_max_distance_bytes_past_float_range_is_a_usage_error(rome99, tmp_path, size, capsys):
    """`--max-distance-bytes 1e400` used to end in an OverflowError traceback (float
    infinity to int) from the option's type, which argparse does not catch."""
    with pytest.raises(SystemExit) as exc:
        main(["study", str(rome99), "--random", "1", "--out", str(tmp_path / "s"), "--max-distance-bytes", size])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--max-distance-bytes" in err and "not a size" in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("content", [b"", b"s 0\n", b"PAR1garbagePAR1"])
def test_bench_from_rows_not_rows_is_one_line(tmp_path, content, capsys):
    """`sssp bench --from-rows FILE` with a file that is not a Parquet file of bench rows
    used to end in a traceback (pyarrow's ArrowInvalid, exit 1); now one line naming the
    file, exit 2, and no --out folder."""
    rows = tmp_path / "rows.parquet"
    rows.write_bytes(content)
    out = tmp_path / "b"
    rc = main(["bench", "--from-rows", str(rows), "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(rows) in lines[0], err
    assert not out.exists()


def test_bench_from_rows_a_table_that_is_not_rows(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), rows)
    rc = main(["bench", "--from-rows", str(rows), "--out", str(tmp_path / "b"), "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "b").exists()


def test_failed_ingest_leaves_no_output_folder(tmp_path, capsys):
    """`sssp ingest bad.gr -o new/sub/out.parquet` with an error past the header used to
    leave the folders `new/sub` it had made for the output (the Parquet sink makes them
    when it opens): a refused command leaves nothing behind."""
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 2\na 1 2 1\na x 3 1\n")
    rc = main(["ingest", str(bad), "-o", str(tmp_path / "new" / "sub" / "out.parquet")])
    err = capsys.readouterr().err
    assert rc == 2 and "bad.gr:3" in err, err
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()  # a folder that was there stays
    rc = main(["ingest", str(bad), "-o", str(tmp_path / "old" / "out.parquet")])
    assert rc == 2 and (tmp_path / "old").is_dir() and not list((tmp_path / "old").iterdir())


def test_sigterm_while_the_subcommands_load_is_one_line(tmp_path):
    """SIGTERM while `main` imports the subcommands (half a second of NumPy, rich, ...
    before any command runs) used to kill the process by the signal, silently: no line,
    where Ctrl-C at the same point gives "stopped: interrupted".  Now "stopped: terminated
    by SIGTERM" and status 143.  (Before `main` is entered Python's default still applies.)"""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    code = ("import os, signal, sys\n"
            "from gpu_sssp.workflows import cli\n"
            "real = cli.build_parser\n"
            "def build():\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return real()\n"
            "cli.build_parser = build\n"
            "sys.exit(cli.main(['verify', '--list']))\n")
    env = dict(os.environ, PYTHONPATH=str(repo))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.splitlines() == ["stopped: terminated by SIGTERM"], err


@pytest.mark.parametrize("methods", [",", " , ,"])
def test_verify_with_no_method_named_is_refused(rome99, methods, capsys):
    """`sssp verify GRAPH --methods ,` used to check nothing and exit 0 (an empty
    table): a check that checks nothing must not pass."""
    rc = main(["verify", str(rome99), "--methods", methods])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.strip().startswith("error: --methods") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("option, value", [("-a", "nan"), ("-b", "nan"), ("-d", "nan"), ("-c", "inf"),
                                           ("--negative-fraction", "nan")])
def test_generate_refuses_non_finite_numbers(tmp_path, option, value, capsys):
    """`sssp generate rmat --scale 4 -a nan` used to write a graph (every arc a self-loop
    0 -> 0, and NaN in the Parquet metadata, which is not JSON): NaN passed the
    probability checks, whose comparisons are false for it."""
    out = tmp_path / "g.parquet"
    with pytest.raises(SystemExit) as exc:
        main(["generate", "rmat", "--scale", "4", option, value, "-o", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and option in err and "finite" in err
    assert not out.exists()


@pytest.mark.parametrize("option", ["--slow-ms", "--graph-time-limit"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_bench_time_guards_take_a_finite_number(rome99, tmp_path, option, value, capsys):
    """`sssp bench --slow-ms nan` / `--graph-time-limit nan` were taken and silently never
    applied (every comparison with NaN is false), -1 likewise taken; a guard is a finite
    number >= 0."""
    out = tmp_path / "b"
    with pytest.raises(SystemExit) as exc:
        main(["bench", str(rome99), "--algorithms", "dijkstra", "--baselines", "scipy", "--sources", "1",
              "--min-component", "1", "--no-plots", "--out", str(out), option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert option in err and "finite number >= 0" in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("address", ["", "nonsense::", "inproc://x", "tcp://:8786", "tcp://host", "tcp://h:x"])
def test_study_malformed_scheduler_address_is_one_line(rome99, tmp_path, address, capsys):
    """`sssp study G --scheduler nonsense::` (or '', inproc://x) used to end in a
    ValueError traceback from Dask's address parsing (exit 1), after the graph was read;
    now one line naming --scheduler, exit 2, before the graph is read."""
    out = tmp_path / "s"
    rc = main(["study", str(rome99), "--random", "1", "--out", str(out), "--scheduler", address])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --scheduler"), err
    assert not out.exists()
    assert not (rome99.parent / ".sssp-cache").exists()  # the graph was not read


@pytest.mark.parametrize("command", ["solve", "ingest", "generate"])
def test_output_that_is_not_a_regular_file_is_refused(rome99, tmp_path, command, capsys):
    """`-o /dev/null` (or a FIFO) was taken: the output is written to a temporary file and
    renamed over it, which replaced the device node by a regular file when run as root
    (`sssp solve G -s 1 -o /dev/null` broke /dev/null).  The test uses a FIFO, which the
    rename replaced the same way."""
    import os
    import stat

    fifo = tmp_path / "out.parquet"
    os.mkfifo(fifo)
    argv = {"solve": ["solve", str(rome99), "-s", "1", "-o", str(fifo)],
            "ingest": ["ingest", str(rome99), "-o", str(fifo)],
            "generate": ["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(fifo)]}[command]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "not a regular file" in lines[0], err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("graphs", [["bad.gr"], ["bad.gr", "rome99"]])
def test_bench_bad_first_graph_leaves_no_out_folder(rome99, tmp_path, graphs, capsys):
    """`sssp bench bad.gr --out new` wrote its partial rows.parquet / summary.md into
    `new` before the first graph was read, so a refused first input left the folder
    behind (only the graphs after the first were read ahead).  Found by
    tests/fuzz_cli.py (seed 9105: a sources file given as the first GRAPH)."""
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 2\na 1 2 1\na x 3 1\n")
    out = tmp_path / "new" / "b"
    argv = ["bench", *[str(rome99) if g == "rome99" else str(bad) for g in graphs],
            "--algorithms", "dijkstra", "--baselines", "scipy", "--no-plots", "--out", str(out)]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error: ") and str(bad) in lines[-1] and "Traceback" not in err, err
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs Linux /proc")
def test_study_report_where_no_file_can_be_made(rome99, tmp_path, capsys):
    """`sssp study ... --report /proc/x.html` (a folder that exists but takes no file)
    ran the whole study and failed only when Dask wrote the report, with the OS's bare
    words ("[Errno 2] No such file or directory: '/proc/x.html'"), a note to --resume a
    finished study, and its folder left behind.  Found by tests/fuzz_cli.py (seed 9105).
    Now refused before the cluster, naming --report."""
    pytest.importorskip("bokeh")
    out = tmp_path / "s"
    rc = main(["study", str(rome99), "--random", "2", "--seed", "1", "--cpu-workers", "1", "--no-dashboard",
               "--out", str(out), "--report", "/proc/x.html"])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --report /proc/x.html") and "Traceback" not in err, err
    assert not out.exists()
