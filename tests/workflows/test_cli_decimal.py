"""Numbers given as text are ASCII decimal digits (``1_000`` as Python writes it).
Python's ``int`` and ``float``, which the command line used, also read Unicode digits
such as the Arabic-Indic ``"\u0663"`` as 3: ``sssp solve -s \u0663`` solved vertex 3 and
``--weights random:1:\u0669:1`` drew weights up to 9."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main

ROME = "data/rome99.gr"


@pytest.mark.parametrize("argv", [
    ["solve", ROME, "-s", "\u0663"],
    ["study", ROME, "--random", "\u0663"],
    ["verify", ROME, "--random", "\u0662"],
    ["generate", "grid", "--rows", "\u0663", "--cols", "3", "-o", "g.parquet"],
    ["generate", "grid", "--rows", "3", "--cols", "3", "--weights", "1:\u0669", "-o", "g.parquet"],
    ["ingest", ROME, "--max-vertices", "\u0663\u0663", "-o", "r.parquet"],
    ["ingest", ROME, "--weights", "random:1:\u0669:1", "-o", "r.parquet"],
    ["ingest", ROME, "--weights", "random:1:9:\u0663", "-o", "r.parquet"],
    ["ingest", ROME, "--weights", "random-float:1:\u0669.5:1", "-o", "r.parquet"],
    ["ingest", ROME, "--weights", "random:1:1__0:1", "-o", "r.parquet"],
    ["generate", "random", "-n", "9", "-m", "9", "--negative-fraction", "\u0660.5", "-o", "g.parquet"],
])
def test_non_ascii_or_underscored_numbers_refused(argv, tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "data").mkdir()
    shutil.copy(repo / ROME, tmp_path / ROME)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)  # a product error returns its status, argparse's exits
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # argparse's usage may come first
    assert "error:" in last and any(a in last for a in argv if not a.isascii() or "__" in a), last
    assert not (tmp_path / "g.parquet").exists() and not (tmp_path / "r.parquet").exists()


def test_ascii_numbers_still_taken(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "data").mkdir()
    shutil.copy(repo / ROME, tmp_path / ROME)
    monkeypatch.chdir(tmp_path)
    assert main(["solve", ROME, "-s", " 3 ", "-s", "+7", "-s", "1_0"]) in (0, None)
    out = capsys.readouterr().out
    assert "3 sources in " in out


def test_gpus_and_settings_refuse_unicode_digits():
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.cluster import parse_gpus
    from gpu_sssp.pipeline.config import _whole

    for text in ("\u0663", "\u00b2", "0,\u0661"):
        with pytest.raises(UsageError, match="not a device number"):
            parse_gpus(text)
    assert parse_gpus("0, 1") == "0,1"
    with pytest.raises(ValueError):
        _whole("\u0663")
    assert _whole("1e3") == 1000 and _whole(" 12 ") == 12
