"""`sssp verify` defects found by the user audit of solve / verify / generate."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("extra, got", [
    (["--random", "3", "-s", "1"], "got --random and --source"),
    (["--seed", "4", "-s", "1"], "got --seed and --source"),
    (["--random", "3", "--seed", "4", "--sources-file", "SS"], "got --random and --seed and --sources-file"),
])
def test_random_with_named_sources_is_refused_not_ignored(rome99, tmp_path, capsys, monkeypatch, extra, got):
    """`verify G --random 3 -s 1` checked source 1 alone and said nothing of the draw it
    dropped (the README gives them as alternatives; `sssp study` refuses both).  Now a
    usage error before the graph is read."""
    import gpu_sssp.workflows.cmd_verify as cv

    ss = tmp_path / "s.ss"
    ss.write_text("1\n2\n")
    extra = [str(ss) if a == "SS" else a for a in extra]

    def no_read(*a, **k):
        raise AssertionError("the graph was read")

    monkeypatch.setattr(cv, "load_graph_from_args", no_read)
    assert main(["verify", str(rome99), "--methods", "dijkstra", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: choose the sources one way only") and got in err
    assert len(err.splitlines()) == 1


def test_the_defaults_still_draw_eight_sources_with_seed_0(rome99, capsys):
    assert main(["verify", str(rome99), "--methods", "dijkstra"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "8 distinct random sources (seed 0;" in out
    assert main(["verify", str(rome99), "--methods", "dijkstra", "-s", "1", "-s", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "random" not in out and "1 source)" in out


def test_a_verify_that_checked_nothing_is_not_a_success(tmp_path, capsys):
    """`verify NEG --methods dijkstra` skipped dijkstra (negative weights), printed its
    table and exited 0 - 'verified' where nothing was checked.  Now one line, exit 2; a
    run where one method of several is skipped still passes."""
    g = tmp_path / "neg.gr"
    g.write_text("p sp 3 2\na 1 2 -1\na 2 3 1\n")
    assert main(["verify", str(g), "--methods", "dijkstra", "-s", "1"]) == 2
    got = capsys.readouterr()
    err = got.err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "nothing was checked: every method asked for was skipped" in errors[0], err
    # the skip's reason, in the singular for one arc ("1 negative arcs")
    out = "".join(ch for ch in got.out if ch.isalnum() or ch in " '(")
    assert "has 1 negative arc (use" in " ".join(out.split()), got.out
    assert main(["verify", str(g), "--methods", "dijkstra,bellman-ford", "-s", "1"]) == 0


def test_a_skip_reason_is_in_the_command_lines_words_without_marks(shared_data, capsys):
    """`verify Lederberg --methods all`: phast's skip reason held the invisible marks of
    its option phrases (U+2063, U+2064) and both wordings, the command line's and
    Python's, glued together (found by the 2026-12-07 audit)."""
    g = shared_data / "mtx" / "Lederberg.tar.gz"  # a vertex of degree 1098: phast is not eligible
    if not g.exists():
        pytest.skip(f"{g} is not here")
    assert main(["verify", str(g), "--methods", "dijkstra,phast", "-s", "1"]) == 0
    out = capsys.readouterr().out
    assert "\u2063" not in out and "\u2064" not in out
    flat = " ".join(out.split())
    assert "skipped" in flat and "left out here" in flat.replace("│ ", "").replace(" │", "")
    assert "--method" not in flat and "method='dijkstra'" not in flat  # (verify's option is --methods)
