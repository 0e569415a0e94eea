"""Odd file and folder names on every command: spaces, a leading '-', unicode, '%',
quotes, a backslash, a newline or tab, Rich markup ("[bold]"), very long names, names
that are only a suffix, uppercase suffixes, bytes that are not UTF-8.  A name must work
(or be refused in one line), be shown on one line (a line break in it escaped), and
never crash the printing (Rich markup, an ASCII locale)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_sssp.pipeline.fsnames import SAFE_NAME_BYTES, safe_name, shown
from gpu_sssp.workflows.cli import main
from tests.conftest import DATA

REPO = Path(__file__).resolve().parents[2]
ROME = DATA / "rome99.gr"


def odd_copy(folder: Path, name, src: Path = ROME) -> Path:
    """``src`` copied into ``folder`` as ``name`` (``str`` or ``bytes``); the test skips
    where the file system refuses the name."""
    folder.mkdir(parents=True, exist_ok=True)
    path = Path(os.fsdecode(os.path.join(os.fsencode(folder), os.fsencode(name))))
    try:
        shutil.copyfile(src, path)
    except (OSError, UnicodeError) as exc:
        pytest.skip(f"this file system refuses the name {name!r} ({exc})")
    return path


def _cache_names(folder: Path) -> list:
    cache = folder / ".sssp-cache"
    return sorted(os.listdir(cache)) if cache.is_dir() else []


ODD = [b"sp ace.gr", b"-g.gr", "\u00e9\u65e5\u672c\U0001f600.gr".encode(), b"pc%s%d.gr", b"q'uo\"te.gr",
       b"back\\slash.gr", b"new\nline.gr", b"ta\tb.gr", b"esc\x1b[31mred.gr", b"g[bold]x.gr", b".gr", b"..gr",
       b"G.GR", b"na\xffme.gr", b"x" * 252 + b".gr"]


# --- showing a name -----------------------------------------------------------------

def test_shown_escapes_a_name_that_does_not_print_and_keeps_the_others():
    assert shown("new\nline.gr") == "'new\\nline.gr'"
    assert shown("ta\tb.gr") == "'ta\\tb.gr'" and shown("cr\rx") == "'cr\\rx'"
    assert shown("esc\x1b[31mred.gr") == "'esc\\x1b[31mred.gr'"
    assert shown("ls\u2028ep.gr") == "'ls\\u2028ep.gr'"  # a line break for str.splitlines
    for plain in ("rome99.gr", "sp ace.gr", "\u00e9\u65e5\u672c\U0001f600.gr", "q'uo\"te", "back\\slash", "g[bold]x"):
        assert shown(plain) == plain
    assert shown(os.fsdecode(b"na\xffme.gr")) == "na\ufffdme.gr"
    # idempotent: a message that names a file already shown shows it once escaped
    for name in ("new\nline.gr", os.fsdecode(b"n\xff\nx")):
        assert shown(shown(name)) == shown(name) and "\n" not in shown(name)


def test_safe_name_is_short_enough_for_the_cache_names():
    long = "x" * 252 + ".gr"
    s = safe_name(long)
    assert len(s.encode()) <= SAFE_NAME_BYTES and s.startswith("x" * 80) and s != safe_name("y" * 252 + ".gr")
    assert s == safe_name(long)  # the same copy is found again
    assert safe_name("rome99.gr") == "rome99.gr"
    # a long name cut inside a character keeps whole characters
    s = safe_name("\u00e9" * 100 + ".gr")
    s.encode("utf-8")
    assert s.startswith("\u00e9" * 40)


# --- every odd name, end to end -----------------------------------------------------

@pytest.mark.parametrize("name", ODD, ids=[repr(n)[2:30] for n in ODD])
def test_solve_on_an_odd_input_name_and_its_cache_found_again(tmp_path, monkeypatch, capsys, name):
    """An odd name solves (given as ``./NAME``, a leading '-' too), and the next run
    finds its ingested copy and CSR cache: nothing is made again."""
    path = odd_copy(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    arg = "./" + path.name
    assert main(["solve", arg, "-s", "1"]) == 0
    assert "3,353" in capsys.readouterr().out
    before = _cache_names(tmp_path)
    assert any(n.endswith(".csr.npz") for n in before), before
    stamps = {n: os.stat(tmp_path / ".sssp-cache" / n).st_mtime_ns for n in before if n.endswith((".parquet", ".npz"))}
    assert main(["solve", arg, "-s", "2"]) == 0
    assert _cache_names(tmp_path) == before
    assert {n: os.stat(tmp_path / ".sssp-cache" / n).st_mtime_ns for n in stamps} == stamps


def test_a_leading_dash_name_after_double_dash(tmp_path, monkeypatch, capsys):
    odd_copy(tmp_path, "-g.gr")
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "-s", "1", "--", "-g.gr"]) == 0
    assert "3,353" in capsys.readouterr().out


def test_a_leading_dash_name_read_as_an_option_gets_a_hint(tmp_path, monkeypatch, capsys):
    """``sssp solve -g.gr -s 1``: argparse reads the file as an unknown option ("the
    following arguments are required: graph"); the error says how to give it."""
    odd_copy(tmp_path, "-g.gr")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["solve", "-g.gr", "-s", "1"])
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "required: graph" in last and "./-g.gr" in last and "-- -g.gr" in last
    with pytest.raises(SystemExit):  # an unknown option that is no file: argparse's own line
        main(["solve", "-s", "1", "-z.gr"])
    assert "./" not in capsys.readouterr().err


def test_load_graph_on_a_255_byte_name(tmp_path):
    import gpu_sssp

    path = odd_copy(tmp_path, "x" * 252 + ".gr")
    g = gpu_sssp.load_graph(path)
    assert g.n == 3353
    assert gpu_sssp.load_graph(path).fingerprint == g.fingerprint


# --- one line, escaped ---------------------------------------------------------------

def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_an_input_error_names_a_file_with_a_newline_escaped_on_one_line(tmp_path, capsys):
    junk = tmp_path / "bad\nname.gr"
    try:
        junk.write_text("junk\n")
    except OSError:
        pytest.skip("this file system refuses a newline in a name")
    assert main(["solve", str(junk), "-s", "1"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "bad\\nname.gr" in line and "bad name.gr" not in line


def test_a_graph_named_with_a_newline_is_shown_escaped(tmp_path, capsys):
    path = odd_copy(tmp_path, "new\nline.gr")
    assert main(["solve", str(path), "-s", "99999"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "'new\\nline'" in line


def test_a_sources_file_named_with_a_newline_is_shown_escaped(tmp_path, capsys):
    graph = odd_copy(tmp_path, "g.gr")
    ids = tmp_path / "ids\n.txt"
    try:
        ids.write_text("1\n99999\n")
    except OSError:
        pytest.skip("this file system refuses a newline in a name")
    assert main(["solve", str(graph), "--sources-file", str(ids)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "ids\\n.txt" in line


def test_an_output_folder_named_with_a_newline_is_refused_on_one_line(tmp_path, capsys):
    graph = odd_copy(tmp_path, "g.gr")
    out = tmp_path / "a\nb.parquet"
    try:
        out.mkdir()
    except OSError:
        pytest.skip("this file system refuses a newline in a name")
    assert main(["solve", str(graph), "-s", "1", "-o", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "a\\nb.parquet" in line and "is a directory" in line


def test_an_output_name_too_long_for_its_temporary_file_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    """A 255-byte name is written (its temporary is shortened:
    test_writers_audit); on a file system with a shorter name limit, a name whose
    temporary cannot fit is refused before the input is read."""
    out = tmp_path / ("L" * 247 + ".parquet")  # 255 bytes
    assert main(["ingest", str(ROME), "-o", str(out), "-q"]) == 0 and out.is_file()
    out.unlink()
    real = os.pathconf
    monkeypatch.setattr(os, "pathconf", lambda p, name: 100 if name == "PC_NAME_MAX" else real(p, name))
    short = tmp_path / ("L" * 90 + ".parquet")  # fits 100 bytes; its temporary does not
    assert main(["ingest", str(ROME), "-o", str(short), "-q"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "-o" in line and "100-byte limit" in line and "temporary" in line
    assert os.listdir(tmp_path) == []
    assert main(["generate", "grid", "--rows", "3", "--cols", "3", "-o", str(short), "-q"]) == 2
    assert "temporary" in _one_line(capsys.readouterr().err)


def test_a_study_folder_named_with_a_newline_is_shown_escaped_in_its_refusal(tmp_path, capsys):
    graph = odd_copy(tmp_path, "g.gr")
    out = tmp_path / "s\nx"
    try:
        out.mkdir()
    except OSError:
        pytest.skip("this file system refuses a newline in a name")
    (out / "junk.txt").write_text("x")
    assert main(["study", str(graph), "--random", "3", "--cpu-workers", "1", "--no-dashboard", "--out", str(out)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "s\\nx" in line and "holds no study" in line


def test_an_output_path_near_path_max_is_refused_before_the_work(tmp_path, capsys):
    deep = tmp_path
    while len(os.fsencode(str(deep))) < 3880:
        deep = deep / ("d" * 100)
    try:
        deep.mkdir(parents=True)
    except OSError:
        pytest.skip("this file system refuses a path this long")
    # a path of 4,080 bytes: legal (PATH_MAX is 4096), its temporary file's is not
    out = deep / ("o" * (4080 - len(os.fsencode(str(deep))) - 1 - len(".parquet")) + ".parquet")
    assert len(os.fsencode(str(out))) == 4080
    assert main(["generate", "grid", "--rows", "3", "--cols", "3", "-o", str(out), "-q"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "limit on a path" in line
    assert os.listdir(deep) == []


# --- Rich markup in names ------------------------------------------------------------

def test_generate_to_a_folder_whose_name_reads_as_rich_markup(tmp_path, capsys):
    out = tmp_path / "x[/bold]y" / "o.parquet"
    assert main(["generate", "grid", "--rows", "3", "--cols", "3", "-o", str(out)]) == 0
    assert out.is_file()
    assert "x[/bold]y/o.parquet" in capsys.readouterr().out


def test_study_names_markup_and_newlines_as_they_are_and_resumes(tmp_path, monkeypatch, capsys):
    """A study of ``g[bold]x.gr`` into a folder ``o[bold]ut\\nx.parquet`` (a folder
    named like a file): the names printed as they are (not read as Rich markup), the
    newline escaped, valid JSON, and a resume finds the study done."""
    import json

    graph = odd_copy(tmp_path, "g[bold]x.gr")
    out = tmp_path / "o[bold]ut\nx.parquet"
    argv = ["study", str(graph), "--random", "20", "--cpu-workers", "1", "--no-dashboard", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "g[bold]x" in text
    wrote = [ln for ln in text.splitlines() if ln.startswith("wrote ")]
    assert len(wrote) == 1 and shown(f"{out}/stats/") in wrote[0], text[-500:]
    for name in ("manifest.json", "summary.json"):
        json.loads((out / name).read_text())
    assert json.loads((out / "summary.json").read_text())["graph"] == "g[bold]x"
    assert main([*argv, "--resume"]) == 0
    assert "already done" in capsys.readouterr().out


# --- a locale whose encoding is not UTF-8 ------------------------------------------

def test_names_beyond_ascii_under_an_ascii_locale(tmp_path):
    """``PYTHONUTF8=0 LC_ALL=C``: Python's file-system and stdout encodings are ASCII.
    An input named in UTF-8 ingests (pyarrow was handed a name with surrogates:
    ``UnicodeEncodeError``), its table prints (stdout could not encode the name), and
    bench writes its summary.md (written in the locale's encoding: UnicodeEncodeError)."""
    name = "\u00e9\u65e5\u672c.gr"
    graph = odd_copy(tmp_path, name)
    long = "\u00e9" * 100 + ".gr"  # its cached copy's name is cut short (safe_name)
    odd_copy(tmp_path, long)
    env = dict(os.environ, PYTHONUTF8="0", LC_ALL="C", LANG="C", PYTHONPATH=str(REPO))
    env.pop("PYTHONIOENCODING", None)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"],
                           env=env, capture_output=True, text=True)
    if probe.stdout.strip().lower() in ("utf-8", "utf8"):
        pytest.skip("this Python keeps UTF-8 under LC_ALL=C")
    for argv in (["solve", name, "-s", "1", "-o", "\u00e9.parquet"], ["solve", long, "-s", "1"], ["ingest", name, "-o", "\u00e9i.parquet", "-q"],
                 ["bench", "--algorithms", "dijkstra", "--sources", "2", "--runs", "1", "--min-component", "1",
                  "--baselines", "scipy", "--no-plots", "--out", "\u00e9b", "--", name]):
        r = subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", *argv], cwd=tmp_path, env=env,
                           capture_output=True)
        assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr[-800:]
    assert (tmp_path / "\u00e9.parquet").is_file() and (tmp_path / "\u00e9i.parquet").is_file()
    assert "\u00e9\u65e5\u672c" in (tmp_path / "\u00e9b" / "summary.md").read_text(encoding="utf-8")
    assert graph.is_file()



def test_a_log_line_naming_a_file_with_a_newline_stays_one_line():
    """The command line's log lines (``WARNING gpu_sssp...: could not write CSR cache
    NAME``) keep a name's line break escaped; a traceback keeps its lines."""
    import logging

    from gpu_sssp.workflows import cli

    fmt = cli._OneLineFormatter("%(levelname)s %(name)s: %(message)s")
    rec = logging.LogRecord("gpu_sssp.pipeline.graph", logging.WARNING, __file__, 1,
                            "could not write CSR cache %s: %s", ("n\nx.parquet.csr.npz", "too long"), None)
    line = fmt.format(rec)
    assert line == "WARNING gpu_sssp.pipeline.graph: could not write CSR cache n\\nx.parquet.csr.npz: too long"
    rec = logging.LogRecord("gpu_sssp", logging.WARNING, __file__, 1, "na%sme", (os.fsdecode(b"\xff"),), None)
    assert fmt.format(rec).endswith("na\ufffdme")
    try:
        raise ValueError("boom")
    except ValueError:
        rec = logging.LogRecord("gpu_sssp", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    text = fmt.format(rec)
    assert text.startswith("ERROR gpu_sssp: failed\nTraceback") and "ValueError: boom" in text


def test_bench_plots_a_graph_whose_name_reads_as_mathtext(tmp_path, capsys):
    """A graph named ``m$^$|x.gr``: matplotlib read its name in the plot titles as
    mathtext and stopped the bench with ParseSyntaxException (exit 1); its '|' split
    the cells of summary.md's tables."""
    pytest.importorskip("matplotlib")
    graph = odd_copy(tmp_path, "m$^$|x.gr")
    out = tmp_path / "b[/bold]ench"
    assert main(["bench", "--algorithms", "dijkstra", "--sources", "2", "--runs", "1", "--min-component", "1",
                 "--baselines", "scipy", "--out", str(out), "--", str(graph)]) == 0
    assert (out / "time_per_graph.png").is_file()
    rows = [ln for ln in (out / "summary.md").read_text().splitlines() if ln.startswith("| m$^$")]
    assert rows and all(ln.startswith("| m$^$\\|x | ") for ln in rows), rows
    capsys.readouterr()


@pytest.mark.parametrize("name, label", [(".gr", ".gr"), ("..gr", "."), ("G.GR", "G"), ("g.gr.XZ", "g"),
                                         ("g.TAR.GZ", "g"), ("NY.gr.xz", "NY"), ("sp ace.gr", "sp ace")])
def test_bench_labels_a_raw_input_by_its_name_in_any_case_never_empty(name, label):
    from gpu_sssp.workflows.cmd_bench import _plain_label

    assert _plain_label(Path(name)) == label


# (not b".gr": a Parquet graph named ".parquet" is not read as Parquet, pipeline.graph
# telling Parquet files by Path.suffix, which is '' for it)
PARQUET_ODD = [n for n in ODD[:-1] if n != b".gr"]


@pytest.mark.parametrize("name", PARQUET_ODD, ids=[repr(n)[2:30] for n in PARQUET_ODD])
def test_a_parquet_graph_with_an_odd_name_finds_its_csr_cache_again(tmp_path, monkeypatch, capsys, name):
    src = odd_copy(tmp_path / "src", "g.gr")
    pq_name = os.fsdecode(os.fsencode(name)[:-3] + b".parquet")
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", str(src), "-o", "./" + pq_name, "-q"]) == 0
    assert main(["solve", "./" + pq_name, "-s", "1"]) == 0
    csr = tmp_path / (pq_name + ".csr.npz")
    assert csr.is_file()
    stamp = csr.stat().st_mtime_ns
    assert main(["solve", "./" + pq_name, "-s", "2"]) == 0
    assert csr.stat().st_mtime_ns == stamp
    capsys.readouterr()


def test_bench_and_study_name_a_missing_graph_or_report_folder_escaped(tmp_path, capsys):
    missing = tmp_path / "no\nne.gr"
    assert main(["bench", "--algorithms", "dijkstra", "--out", str(tmp_path / "b"), "--", str(missing)]) == 2
    assert "no\\nne.gr" in _one_line(capsys.readouterr().err)
    pytest.importorskip("bokeh")
    graph = odd_copy(tmp_path, "g.gr")
    report = tmp_path / "r\nep"
    try:
        report.mkdir()
    except OSError:
        pytest.skip("this file system refuses a newline in a name")
    assert main(["study", str(graph), "--random", "2", "--cpu-workers", "1", "--no-dashboard",
                 "--out", str(tmp_path / "s"), "--report", str(report)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "r\\nep" in line and "is a directory" in line


@pytest.mark.parametrize("name", ["G.Parquet", "g.PARQUET", ".parquet"])
def test_a_parquet_output_named_in_another_case_is_read_back_as_parquet(tmp_path, capsys, name):
    """`ingest -o g.Parquet` (or a file named `.parquet`) wrote Parquet that `solve`
    then read as a text edge list ("is a Parquet file ... only under a name ending in
    .parquet"): one rule for a Parquet name, any case."""
    out = tmp_path / name
    assert main(["ingest", str(ROME), "-o", str(out), "-q"]) == 0
    capsys.readouterr()
    assert main(["solve", str(out), "-s", "1"]) == 0, capsys.readouterr().err
    assert main(["study", str(out), "--random", "3", "--cpu-workers", "1", "--no-dashboard",
                 "--out", str(tmp_path / "s")]) == 0, capsys.readouterr().err


def test_markup_in_output_names_of_solve_ingest_and_verify(tmp_path, capsys):
    """Rich read `[/bold]` in a name as markup: `solve -o` and `ingest -o` wrote the file,
    then crashed (MarkupError, exit 1); verify showed `g[bold]x` as `gx`."""
    d = tmp_path / "x[/bold]y"
    assert main(["ingest", str(ROME), "-o", str(d / "o.parquet")]) == 0
    assert "x[/bold]y" in capsys.readouterr().out.replace("\n", "")  # (the title wraps)
    assert main(["solve", str(d / "o.parquet"), "-s", "1", "-o", str(d / "d.parquet")]) == 0
    assert (d / "d.parquet").is_file()
    g = odd_copy(tmp_path, "g[bold]x.gr")
    capsys.readouterr()
    assert main(["verify", str(g), "--methods", "dijkstra", "--random", "2"]) == 0
    assert "g[bold]x" in capsys.readouterr().out


def test_a_parquet_graph_with_a_long_name_writes_its_caches(tmp_path, caplog):
    """A Parquet graph named 208-233 bytes could never write `<name>.csr.npz` (nor its
    hierarchy): the temporary name passed 255 bytes, so the CSR was rebuilt (with a
    WARNING) on every run."""
    import logging

    from gpu_sssp.pipeline.graph import read_parquet

    name = "g" * 220 + ".parquet"
    out = tmp_path / name
    assert main(["ingest", str(ROME), "-o", str(out), "-q"]) == 0
    with caplog.at_level(logging.WARNING):
        read_parquet(out)
    assert (tmp_path / (name + ".csr.npz")).is_file(), os.listdir(tmp_path)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [p for p in os.listdir(tmp_path) if ".tmp" in p] == []
