"""Option values that start with a dash (`--weights -5:-1`), and generate's note."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from gpu_sssp.workflows.cli import main


def test_weights_may_start_with_a_dash(tmp_path, capsys):
    """`--weights -5:-1` ended with "argument --weights: expected one argument" (argparse
    took -5:-1 for an option); only `--weights=-5:-1` worked."""
    out = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "3", "--cols", "3", "--asymmetric", "--weights", "-5:-1",
                 "-o", str(out), "-q"]) == 0
    w = pq.read_table(out).column("weight").to_numpy()
    assert w.min() >= -5 and w.max() <= -1
    assert main(["generate", "random", "-n", "20", "-m", "40", "--weights", "-.5:2", "--weight-type", "float64",
                 "-o", str(out), "-q"]) == 0
    w = pq.read_table(out).column("weight").to_numpy()
    assert w.min() >= -0.5 and w.max() <= 2


@pytest.mark.parametrize("argv, message", [
    (["rmat", "--scale", "3", "-a", "-1e-3"], "error: R-MAT probabilities a, b, c, d = -0.001,"),
    (["rmat", "--scale", "3", "--negative-fraction", "-1e-3"], "error: --negative-fraction -0.001: expected 0 <= F < 1"),
    (["rmat", "--scale", "3", "-b", "-inf"], "argument -b: '-inf': expected a finite number"),
    (["grid", "--rows", "3", "--cols", "3", "--weights", "-1e3:-1e2", "--weight-type", "int32", "--asymmetric",
      "--seed", "-1_0"], "error: --seed -10: a seed must be a whole number >= 0"),
])
def test_negative_values_get_their_own_message(tmp_path, capsys, argv, message):
    """Each said "expected one argument" (the value taken for an option)."""
    try:
        status = main(["generate", *argv, "-o", str(tmp_path / "g.parquet"), "-q"])
    except SystemExit as exc:  # argparse's own refusal
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "expected one argument" not in err


def test_solve_source_like_a_negative_number(tmp_path, capsys):
    out = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(out), "-q"]) == 0
    assert main(["solve", str(out), "-s", "-1_000"]) == 2
    assert "error: source -1000 does not exist" in capsys.readouterr().err


def test_the_undirected_negative_note_is_one_line_and_not_before_a_refusal(tmp_path, capsys):
    """The note wrapped at 80 columns, and came before the refusal of the bounds it
    described."""
    out = tmp_path / "g.parquet"
    argv = ["generate", "grid", "--rows", "3", "--cols", "3", "-o", str(out), "-q"]
    assert main(argv + ["--weights=-5:-1"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("note: an undirected graph with weights down to -5:")
    assert err[0].endswith("with --negative-fraction has negative weights and no negative cycle")
    assert main(argv + ["--weights=-1e-40:1", "--weight-type", "float32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --weights -1e-40:1: ")


@pytest.mark.parametrize("argv, message", [
    (["study", "G", "--random", "3", "--max-distance-bytes", "-1GB"], "not a size: '-1GB'"),
    (["verify", "G", "--random", "-1e3"], "argument --random: invalid int value: '-1e3'"),
    (["bench", "G", "--slow-ms", "-1e3"], "argument --slow-ms: '-1e3': expected a finite number >= 0"),
    (["ingest", "G", "--weights", "-5:5"], "--weights -5:5: expected file, unit"),
])
def test_every_command_reads_a_dashed_value_as_its_options(tmp_path, capsys, argv, message):
    """`cli.build_parser` lets every command's options take a value that starts with a
    minus: each of these said "argument ...: expected one argument" before."""
    g = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(g), "-q"]) == 0
    capsys.readouterr()
    argv = [str(g) if a == "G" else a for a in argv]
    try:
        status = main(argv + (["-o", str(tmp_path / "o.parquet")] if argv[0] == "ingest" else []))
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "expected one argument" not in err


@pytest.mark.parametrize("command", ["ingest", "generate"])
@pytest.mark.parametrize("option", ["--max-vertices", "--max-arcs", "--max-isolated-vertices"])
def test_a_negative_limit_names_its_option(tmp_path, capsys, command, option):
    """It said "sssp.ingest.max-vertices: expected a number >= 0, got -1": the setting,
    not the option given."""
    g = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(g), "-q"]) == 0
    capsys.readouterr()
    argv = (["ingest", str(g), "-o", str(tmp_path / "o.parquet")] if command == "ingest"
            else ["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(tmp_path / "o.parquet")])
    with pytest.raises(SystemExit) as exc:
        main(argv + [option, "-1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: '-1': expected a whole number >= 0" in err and "sssp.ingest" not in err
