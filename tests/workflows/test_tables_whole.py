"""A table printed to a pipe or a log is printed whole: rich laid it out in 80 columns
and cut the numbers that did not fit (``sssp solve``'s mean distance
'1,851,851,835,18…' for 1,851,851,835,184.50)."""
from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from gpu_sssp.workflows.cli import main
from gpu_sssp.workflows.common import print_table


def test_solve_prints_long_numbers_whole_on_a_pipe(tmp_path, capsys):
    g = tmp_path / "big.gr"
    g.write_text("p sp 3 2\na 1 2 1234567890123\na 2 3 1234567890123\n")
    assert main(["solve", str(g), "-s", "1"]) == 0
    out = capsys.readouterr().out
    for number in ("2,469,135,780,246", "3,703,703,670,369", "1,851,851,835,184.50"):
        assert number in out, out
    assert "…" not in out


def test_print_table_on_a_pipe_and_on_a_narrow_terminal():
    t = Table()
    for col in "abc":
        t.add_column(col, overflow="fold")
    t.add_row("1" * 40, "2" * 40, "3" * 40)
    pipe = io.StringIO()
    print_table(Console(file=pipe, width=80), t)
    text = pipe.getvalue()
    assert "1" * 40 in text and "3" * 40 in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) > 120  # its own width, not 80
    term = io.StringIO()
    print_table(Console(file=term, width=60, force_terminal=True, color_system=None), t)
    shown = term.getvalue()
    assert max(len(line) for line in shown.splitlines()) <= 60  # laid out for the terminal
    assert "…" not in shown and shown.count("1") >= 40  # folded, not cut
