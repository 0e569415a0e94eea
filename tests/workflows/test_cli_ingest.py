"""`sssp ingest` and `sssp generate` from the command line."""
from __future__ import annotations

import argparse

import pytest

from gpu_sssp.pipeline.ingest import read_meta
from tests.conftest import DATA
from gpu_sssp.workflows import cmd_generate, cmd_ingest


def _run(argv):
    """Our two subcommands on a bare parser (independent of the other subcommands)."""
    p = argparse.ArgumentParser(prog="sssp")
    sub = p.add_subparsers(dest="command", required=True)
    cmd_ingest.add_parser(sub)
    cmd_generate.add_parser(sub)
    args = p.parse_args([str(a) for a in argv])
    from gpu_sssp.kernels.errors import speaking

    with speaking("cli"):  # (as main: the messages in the command line's words)
        return args.func(args)


def test_ingest_prints_summary(tmp_path, capsys):
    out = tmp_path / "rome.parquet"
    assert _run(["ingest", DATA / "rome99.gr", "-o", out]) == 0
    text = capsys.readouterr().out
    assert "3,353" in text and "8,870" in text and "parallel arcs" in text
    assert read_meta(out)["arcs"] == 8870


def test_ingest_options(tmp_path):
    out = tmp_path / "el.parquet"
    assert _run(["ingest", DATA / "gapbs" / "4.el", "-o", out, "--undirected", "--weights", "random:1:9:3",
                 "--weight-type", "int32", "-q"]) == 0
    meta = read_meta(out)
    assert meta["directed"] is False and meta["weight_type"] == "int32" and meta["weights"] == "random:1:9:3"
    out = tmp_path / "z.parquet"
    assert _run(["ingest", DATA / "clrs-p659-zero-based.gr", "-o", out, "--zero-based", "-q"]) == 0
    assert read_meta(out)["id_base"] == 0


def test_ingest_bad_input_exit_2(tmp_path, capsys):
    out = tmp_path / "ny.parquet"
    assert _run(["ingest", DATA / "USA-road-d.NY.truncated.gr", "-o", out]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "733846" in err and "file-size check" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_ingest_default_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _run(["ingest", DATA / "karate.mtx", "-q"]) == 0
    assert read_meta(tmp_path / "karate.parquet")["vertices"] == 34


@pytest.mark.parametrize("argv", [
    ["rmat", "--scale", "6", "--edge-factor", "4"],
    ["grid", "--rows", "4", "--cols", "5", "--negative-fraction", "0.2", "--asymmetric"],
    ["random", "-n", "30", "-m", "100", "--undirected", "--weights", "1:5"],
])
def test_generate(tmp_path, capsys, argv):
    out = tmp_path / "g.parquet"
    assert _run(["generate", *argv, "-o", out, "--seed", "3"]) == 0
    meta = read_meta(out)
    assert meta["format"] == f"generated:{argv[0]}" and meta["id_base"] == 0
    assert "vertices" in capsys.readouterr().out


def test_full_cli(tmp_path):
    from gpu_sssp.workflows.cli import build_parser, main

    build_parser()  # every subcommand registers; a broken one fails here, not skips

    out = tmp_path / "r.parquet"
    assert main(["ingest", str(DATA / "rome99.gr"), "-o", str(out), "-q"]) == 0
    assert main(["ingest", str(DATA / "USA-road-d.NY.truncated.gr"), "-o", str(tmp_path / "x.parquet")]) == 2


# -- hostile headers: refused in a fresh process, fast and small --------------------------
_PEAK = """\
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(p.stderr)
sys.stdout.write(p.stdout)
print("PEAK_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(p.returncode)
"""


def _cli_peak(tmp_path, *argv):
    """Run `sssp ARGV` in a child of a fresh wrapper process: (exit status, stderr, peak RSS
    in MB of that child alone)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, COLUMNS="300")
    cmd = [sys.executable, "-c", _PEAK, sys.executable, "-c",
           "import sys; from gpu_sssp.workflows.cli import main; sys.exit(main())", *map(str, argv)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    peak = int(p.stdout.rsplit("PEAK_KB", 1)[1].split()[0]) / 1024
    return p.returncode, " ".join(p.stderr.split()), peak


@pytest.mark.parametrize("command", ["ingest", "solve"])
@pytest.mark.parametrize("header,check", [
    ("p sp 300000000 1", "isolated-vertex check"),
    ("p sp 2147483648 1", "sssp.ingest.max-vertices"),
    ("p sp 1099511627776 1", "sssp.ingest.max-vertices"),
])
def test_hostile_header_refused_in_little_memory(tmp_path, command, header, check):
    g = tmp_path / "big.gr"
    g.write_text(header + "\na 1 2 1\n")
    argv = ["ingest", g, "-o", tmp_path / "big.parquet"] if command == "ingest" else ["solve", g, "-s", "1"]
    rc, err, peak = _cli_peak(tmp_path, *argv)
    assert rc == 2, err
    assert f"{g}:1:" in err and check in err and "Traceback" not in err
    n = int(header.split()[2])
    assert f"{n:,} vertices" in err
    # the header would need gigabytes (8 bytes per vertex at least); the refusal needs
    # the interpreter and its imports
    assert peak < 300, peak
    # no partial output: no Parquet file, no temporary, no cache folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.gr"]


@pytest.mark.parametrize("name,text,line", [
    ("big.mtx", "%%MatrixMarket matrix coordinate pattern general\n300000000 300000000 1\n1 2\n", 2),
    ("big.graph", "300000000 1\n2\n1\n", 1),
    ("big.tw", "p tw 300000000 1\n1 2\n", 1),
    ("big.el", "0 1\n1 299999999\n", 2),
])
def test_hostile_sizes_other_formats(tmp_path, name, text, line):
    g = tmp_path / name
    g.write_text(text)
    rc, err, peak = _cli_peak(tmp_path, "ingest", g, "-o", tmp_path / "big.parquet")
    assert rc == 2, err
    assert f"{g}:{line}:" in err and "isolated-vertex check" in err and "300,000,000 vertices" in err
    assert peak < 300, peak
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


# -- outputs that cannot be written: refused before the input is read ------------------
@pytest.mark.parametrize("argv", [
    ["ingest", "{input}", "-o", "{input}"],
    ["ingest", "{link}", "-o", "{input}"],
    ["solve", "{input}", "-s", "1", "-o", "{input}"],
])
def test_output_that_is_the_input_is_one_line_exit_2(tmp_path, capsys, argv):
    from gpu_sssp.workflows.cli import main

    g = tmp_path / "rome.gr"
    g.write_bytes((DATA / "rome99.gr").read_bytes())
    (tmp_path / "link.gr").symlink_to(g)
    before = g.read_bytes()
    rc = main([a.format(input=g, link=tmp_path / "link.gr") for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "is the input file" in err and str(g) in err
    assert g.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.gr", "rome.gr"]


@pytest.mark.parametrize("how", ["same name", "symlink", "hard link"])
def test_ingest_refuses_its_input_as_output_one_rule_for_api_and_cli(tmp_path, capsys, how):
    """``pipeline.ingest.ingest`` refuses an output that is its input file (by name, a
    symbolic link to it or a hard link of it) before reading it, and ``sssp ingest``
    prints exactly that message: one rule (``pipeline.writers.refuse_input_as_output``).
    There were two: the command line's (os.path.samefile, '-o OUT: is the input file
    ...') and ingest()'s own ('output OUT is the input file', by resolved name: a hard
    link passed it)."""
    import os

    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.ingest import ingest
    from gpu_sssp.workflows.cli import main

    g = tmp_path / "rome.gr"
    g.write_bytes((DATA / "rome99.gr").read_bytes())
    out = g if how == "same name" else tmp_path / "out.gr"
    if how == "symlink":
        out.symlink_to(g)
    elif how == "hard link":
        os.link(g, out)
    before, names = g.read_bytes(), sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(UsageError) as api:
        ingest(g, out)
    assert str(api.value) == f"output {out}: is the input file {g}; give another output name"
    rc = main(["ingest", str(g), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"error: {api.value}\n", err
    assert g.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == names


@pytest.mark.parametrize("argv", [
    ["ingest", "{missing}", "-o", "{dir}"],  # said before the input is looked at
    ["ingest", str(DATA / "rome99.gr"), "-o", "{dir}"],
    ["generate", "grid", "--rows", "3", "--cols", "3", "-o", "{dir}"],
    ["solve", str(DATA / "karate.mtx"), "-s", "1", "-o", "{dir}"],
])
def test_output_that_is_a_directory_is_one_line_exit_2(tmp_path, capsys, argv):
    from gpu_sssp.workflows.cli import main

    d = tmp_path / "adir"
    d.mkdir()
    rc = main([a.format(dir=d, missing=tmp_path / "missing.gr") for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and f"{d}: is a directory" in err
    assert ".tmp" not in err  # no temporary name
    assert list(d.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["grid", "--rows", "100000", "--cols", "100000"],
     "generate grid --rows 100000 --cols 100000: 10,000,000,000 vertices, above the limit "
     "sssp.ingest.max-vertices = 2,147,483,647; raise it with --max-vertices N"),
    (["rmat", "--scale", "40"], "1,099,511,627,776 vertices, above the limit sssp.ingest.max-vertices"),
    (["grid", "--rows", "4", "--cols", "4", "--max-vertices", "15"], "sssp.ingest.max-vertices = 15;"),
    (["random", "-n", "10", "-m", "5", "--undirected", "--max-arcs", "9"],
     "generate random -n 10 -m 5 --undirected: 10 arcs, above the limit sssp.ingest.max-arcs = 9; "
     "raise it with --max-arcs N"),
])
def test_generate_too_large_is_refused_in_little_memory(tmp_path, argv, message):
    """The size is checked before anything is allocated (grid 100000 x 100000 asked
    NumPy for 74.5 GiB, rmat --scale 40 for 128 TiB)."""
    rc, err, peak = _cli_peak(tmp_path, "generate", *argv, "-o", tmp_path / "g.parquet")
    assert rc == 2, err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert peak < 300, peak
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, value, message", [
    ("--max-arcs", "1", "t.el:2: arc number 2 is above the limit sssp.ingest.max-arcs = 1"),   # audit 3, C4
    ("--max-vertices", "3", "t.el:3: vertex id 3 makes 4 vertices, above the limit sssp.ingest.max-vertices = 3"),
])
def test_limits_apply_to_edge_lists(tmp_path, capsys, monkeypatch, option, value, message):
    from gpu_sssp.workflows.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.el").write_text("0 1\n1 2\n2 3\n")
    assert main(["ingest", "t.el", "-o", "t.parquet", option, value]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "t.parquet").exists()
    assert main(["ingest", "t.el", "-o", "t.parquet", option, "4", "-q"]) == 0


@pytest.mark.parametrize("name, text, argv, message", [
    # audit 3, A6: exit 0 with the size line read as an arc
    ("ok.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 5\n2 3 -1\n3 1 2\n",
     ["--format", "edgelist"], "ok.mtx:1: the file is a MatrixMarket file ("),
    ("half.graph", "3 2\n2\n3\n\n", ["--format", "edgelist"], "half.graph:1: the file looks like a METIS graph"),
    ("ok.gr", "p sp 3 1\na 1 2 5\n", ["--format", "metis"], "ok.gr:1: the file is a DIMACS graph ('p sp 3 1'), "
     "not a METIS graph: drop --format metis, or pass --format gr"),
    # audit 3, C10: an edge-list column error
    ("perf.ss.res", "p res sp ss sssp\nf a.gr a.ss\n", [], "perf.ss.res:1: DIMACS problem line 'p res sp ss sssp'"),
])
def test_file_of_another_format_is_one_line_exit_2(tmp_path, capsys, monkeypatch, name, text, argv, message):
    from gpu_sssp.workflows.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    assert main(["ingest", name, "-o", "x.parquet", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_metis_listing_each_edge_at_one_end_is_flagged(tmp_path, capsys, caplog):
    # audit 3, A7: read as directed with no notice
    g = tmp_path / "half.graph"
    g.write_text("3 2\n2\n3\n\n")
    with caplog.at_level("WARNING", logger="gpu_sssp.pipeline.ingest"):
        assert _run(["ingest", g, "-o", tmp_path / "h.parquet"]) == 0
    assert "yes (METIS edges listed at one end only; see the warning)" in capsys.readouterr().out
    assert len(caplog.records) == 1 and "--undirected" in caplog.records[0].getMessage()
    meta = read_meta(tmp_path / "h.parquet")
    assert meta["directed"] is True and "one end only" in meta["directed_reason"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="gpu_sssp.pipeline.ingest"):
        assert _run(["ingest", g, "-o", tmp_path / "u.parquet", "--undirected", "-q"]) == 0
    assert not caplog.records
    meta = read_meta(tmp_path / "u.parquet")
    assert meta["directed"] is False and meta["arcs"] == 4 and meta["metis_listing"] == "one-end"


@pytest.mark.parametrize("family", [["ingest", DATA / "rome99.gr"], ["generate", "grid", "--rows", "3", "--cols", "3"]])
def test_dot_slash_dash_names_a_file_called_dash(family, tmp_path, monkeypatch):
    """The README: "`-o -` ... standard output is not offered: `./-` names a file called
    `-`".  `sssp ingest -o ./-` was refused as `-o -` (the name went through Path, which
    drops the `./`, before the check); `-o -` stays refused, and `./-` is a file's name:
    refused here as one that does not end in .parquet (a Parquet file is read back only
    under such a name), not as standard output; `./-.parquet` writes the file."""
    from gpu_sssp.kernels.errors import UsageError

    monkeypatch.chdir(tmp_path)
    # (the hint names a Parquet name: it said "./- for a file named '-'", refused next)
    with pytest.raises(UsageError, match=r"-o -: standard output is not offered .*; give a name ending in \.parquet "
                                         r"\(e\.g\. \S+\.parquet\)$"):
        _run([*family, "-o", "-", "-q"])
    with pytest.raises(UsageError, match="only under a name ending in .parquet: give e.g. -.parquet"):
        _run([*family, "-o", "./-", "-q"])
    assert not (tmp_path / "-").exists()
    assert _run([*family, "-o", "./-.parquet", "-q"]) == 0
    assert read_meta(tmp_path / "-.parquet")["arcs"] > 0


def test_a_dimacs_sets_files_do_not_share_a_default_output(tmp_path, monkeypatch, capsys):
    """``sssp ingest X.gr`` then ``sssp ingest X.ss`` both wrote ``X.parquet``: the graph's
    edge list was replaced with a table of sources, without a word.  And ``-o ""`` was
    taken for the default name, where the README says it is refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "X.gr").write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    (tmp_path / "X.ss").write_text("p aux sp ss 1\ns 1\n")
    (tmp_path / "X.co").write_text("p aux sp co 3\nv 1 0 0\nv 2 1 1\nv 3 2 2\n")
    for name in ("X.gr", "X.ss", "X.co"):
        assert _run(["ingest", tmp_path / name, "-q"]) == 0
    assert read_meta(tmp_path / "X.parquet")["vertices"] == 3  # still the graph
    assert read_meta(tmp_path / "X.ss.parquet")["format"] == "ss"
    assert read_meta(tmp_path / "X.co.parquet")["format"] == "co"
    capsys.readouterr()
    from gpu_sssp.workflows.cli import main

    assert main(["ingest", str(tmp_path / "X.gr"), "-o", ""]) == 2
    assert "error: -o '': an empty name" in capsys.readouterr().err
