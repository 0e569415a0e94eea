"""A usage error is one line, as every other error (README: "Errors are one line whatever
the terminal"): argparse printed its usage block (several wrapped lines) before
``sssp ingest: error: argument --chunk-mb: invalid int value: 'abc'``, and named ``sssp``,
not the subcommand, for an unknown option.  And the lines ``sssp study`` prints where it
stops: an ``--out`` where no file can be made, a Ctrl-C after the last batch."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main


def _graph(tmp_path):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    return g


@pytest.mark.parametrize("argv, words", [
    (["ingest", "G", "--chunk-mb", "abc"], "sssp ingest: argument --chunk-mb: invalid int value: 'abc'"),
    (["ingest", "G", "--max-vertices", "-1"], "sssp ingest: argument --max-vertices: '-1'"),
    (["study", "G", "--max-distance-bytes", "-1"], "sssp study: argument --max-distance-bytes"),
    (["bench", "G", "--slow-ms", "-1"], "sssp bench: argument --slow-ms"),
    (["generate", "grid", "--rows", "2", "--cols", "2", "-o", "X", "--weights", "5:1"],
     "sssp generate grid: argument --weights: '5:1': HI < LO"),
    (["solve", "G", "-s", "1", "--bogus"], "sssp solve: unrecognized arguments: --bogus"),
    (["generate", "grid", "--rows", "2", "--cols", "2", "-o", "X", "--zz"],
     "sssp generate grid: unrecognized arguments: --zz"),
    (["solve"], "sssp solve: the following arguments are required: graph"),
    ([], "sssp: the following arguments are required: COMMAND"),
])
def test_a_usage_error_is_one_line_naming_the_command(tmp_path, capsys, argv, words):
    g = _graph(tmp_path)
    argv = [str(g) if a == "G" else str(tmp_path / "out.gr") if a == "X" else a for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and "usage:" not in err, err
    assert words in err, err
    command = words.split(":")[0]
    assert err.rstrip().endswith(f"({command} -h shows the usage)"), err
    assert not (tmp_path / "out.gr").exists()


def test_a_study_folder_where_no_file_can_be_made_names_the_option(tmp_path, capsys):
    """``sssp study G --out /proc/x`` ended with "error: [Errno 2] No such file or directory:
    '/proc/x'", naming no option (``solve -o`` named it)."""
    import os

    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    g = _graph(tmp_path)
    code = main(["study", str(g), "-s", "1", "--cpu-workers", "1", "--no-dashboard", "--out", "/proc/x"])
    err = capsys.readouterr().err
    assert code == 2 and err == "error: --out /proc/x: cannot write a file in /proc (No such file or directory)\n", err


def test_ctrl_c_after_the_last_batch_says_only_the_summary_is_left(tmp_path, capsys, monkeypatch):
    """Ctrl-C after the last batch was journaled, before the summary: the note said "N
    finished batch(es) are recorded ...; add --resume to continue", as if work were left."""
    from gpu_sssp.pipeline.study.folder import Study

    def interrupted(self, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(Study, "finish", interrupted)
    g = _graph(tmp_path)
    argv = ["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "st")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert f"note: every batch of the study (1) is recorded in {tmp_path / 'st'}; add --resume to write its " \
           "summary (nothing is solved again)" in err, err
    monkeypatch.undo()
    assert main(argv + ["--resume"]) == 0
    assert "already done; summarising (no cluster started)" in capsys.readouterr().out


def test_bench_stopped_on_a_negative_cycle_says_so_in_its_files(tmp_path, capsys):
    """``sssp bench`` that stops on a negative cycle (exit 3) left a summary saying "No rows:
    nothing was measured yet" and "written while the run was still going", without a word
    of the cycle."""
    import pyarrow.parquet as pq

    g = tmp_path / "negcyc.gr"
    g.write_text("p sp 4 4\na 1 2 1\na 2 3 -5\na 3 2 1\na 3 4 1\n")
    out = tmp_path / "b"
    assert main(["bench", str(g), "--algorithms", "cpu", "--sources", "2", "--out", str(out), "--no-plots"]) == 3
    text = (out / "summary.md").read_text()
    assert "No rows: the run stopped before a method was measured (the notes say why)." in text, text
    assert "- the run stopped: negative cycle reachable from source" in text, text
    assert "still going" not in text and "measured yet" not in text, text
    assert "min-component lowered to 2" in text  # the notes told on the way are kept
    meta = pq.read_schema(out / "rows.parquet").metadata
    assert b"the run stopped: negative cycle" in b"".join(meta.values()), meta


@pytest.mark.parametrize("signal_exc, said", [(KeyboardInterrupt(), "interrupted (Ctrl-C)"),
                                              ("terminated", "terminated by SIGTERM")])
def test_bench_interrupted_says_so_in_its_files(tmp_path, monkeypatch, signal_exc, said):
    """A bench stopped by Ctrl-C (or SIGTERM) on its second graph left a summary "written
    while the run was still going: if it was cut short, ...": the files now say it was
    interrupted, and keep the first graph's rows."""
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline import bench_protocol
    from gpu_sssp.workflows.cli import Terminated

    exc = Terminated() if signal_exc == "terminated" else signal_exc
    real = bench_protocol.run_benchmark
    calls = []

    def second_interrupted(graphs, *a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise exc
        return real(graphs, *a, **kw)

    monkeypatch.setattr(bench_protocol, "run_benchmark", second_interrupted)
    a, b = tmp_path / "a.gr", tmp_path / "b.gr"
    a.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    b.write_text("p sp 3 2\na 1 2 2\na 2 3 2\n")
    out = tmp_path / "o"
    rc = main(["bench", str(a), str(b), "--algorithms", "dijkstra", "--sources", "2", "--out", str(out),
               "--no-plots"])
    assert rc == (130 if signal_exc != "terminated" else 143)
    text = (out / "summary.md").read_text()
    assert f"- the run stopped: {said} (the rows here are what it measured before)" in text, text
    assert "still going" not in text, text
    rows = pq.read_table(out / "rows.parquet")
    assert set(rows.column("graph").to_pylist()) == {"a"}, rows.column("graph").to_pylist()
