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


def _version_line(capsys):
    assert _status(["--version"]) == 0
    return capsys.readouterr().out.strip()


def test_version_of_a_checkout_without_installed_metadata(monkeypatch, capsys):
    """`PYTHONPATH=<checkout> sssp --version` said "sssp unknown" where gpu-sssp was not
    installed (the version came from the installed metadata only), and another copy's
    version where one was installed."""
    import importlib.metadata as md
    import os

    import gpu_sssp

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    root = os.path.dirname(os.path.dirname(os.path.abspath(gpu_sssp.__file__)))
    line = _version_line(capsys)
    assert line.startswith(f"sssp {gpu_sssp.__version__}") and "unknown" not in line
    if os.path.isfile(os.path.join(root, "pyproject.toml")):  # the tests run from a checkout
        assert line == f"sssp {gpu_sssp.__version__} (source checkout {root})"


def test_version_of_an_installed_copy_and_a_percent_in_the_path(tmp_path, monkeypatch, capsys):
    import gpu_sssp

    site = tmp_path / "site%s 100%"
    (site / "gpu_sssp" / "kernels").mkdir(parents=True)
    (site / "gpu_sssp" / "kernels" / "__init__.py").write_text("")
    monkeypatch.setattr(gpu_sssp, "__file__", str(site / "gpu_sssp" / "__init__.py"))
    assert _version_line(capsys) == f"sssp {gpu_sssp.__version__}"  # a wheel's layout
    (site / "pyproject.toml").write_text("")
    assert _version_line(capsys) == f"sssp {gpu_sssp.__version__} (source checkout {site})"
