"""Small command-line and packaging defects: values like `-nan` after an option, the
version of a checkout, the sdist's README files, the start-up message of an unguarded
script."""
from __future__ import annotations

import argparse

import pytest

from gpu_sssp.workflows.cli import build_parser, main
from gpu_sssp.workflows.common import NEGATIVE_VALUE


def _status(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own refusal
        return exc.code


@pytest.mark.parametrize("argv, message", [
    (["-n", "10", "-m", "-nan"], "argument -m/--edges: invalid int value: '-nan'"),
    (["-n", "10", "-m", "-NaN"], "argument -m/--edges: invalid int value: '-NaN'"),
    (["-n", "-nan", "-m", "5"], "argument -n/--vertices: invalid int value: '-nan'"),
    (["-n", "10", "-m", "5", "--negative-fraction", "-nan"], "argument --negative-fraction: '-nan': expected a finite number"),
    (["-n", "10", "-m", "5", "--weights", "-nan:5"], "argument --weights: '-nan:5': the bounds must be finite numbers"),
    (["-n", "10", "-m", "5", "--max-arcs", "-nan"], "argument --max-arcs: '-nan': expected a whole number >= 0"),
    (["-n", "10", "-m", "5", "--seed", "-nan"], "argument --seed: invalid int value: '-nan'"),
    (["-n", "10", "-m", "-Infinity"], "argument -m/--edges: invalid int value: '-Infinity'"),
])
def test_nan_after_an_option_reaches_that_option(tmp_path, capsys, argv, message):
    """`generate random` has `-n`: argparse read `-nan` as `-n an` (an option with its value
    in one token) before its negative-number test, so `-m -nan` said "argument -m/--edges:
    expected one argument" and `--negative-fraction -nan` the same of its option."""
    assert _status(["generate", "random", *argv, "-o", str(tmp_path / "g.parquet"), "-q"]) == 2
    err = capsys.readouterr().err
    assert message in err and "expected one argument" not in err
    assert not (tmp_path / "g.parquet").exists()


def test_no_option_looks_like_a_negative_value():
    """What lets `take_negative_values` read every such token as a value: no option of
    any command is itself one (an option named whole would still win)."""
    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sp in set(action.choices.values()):
                    yield from walk(sp)

    parsers = list(walk(build_parser()))
    assert len(parsers) > 5
    for parser in parsers:
        for opt in parser._option_string_actions:
            assert not NEGATIVE_VALUE.match(opt), (parser.prog, opt)
