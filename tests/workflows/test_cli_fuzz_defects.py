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
