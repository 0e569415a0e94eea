"""Empty output/sources names and output names that end with '/' (common.refuse_empty_names,
common.check_output_file), for every command that writes one file or reads a sources file."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main


@pytest.fixture()
def graph(tmp_path, capsys):
    g = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "3", "--cols", "3", "-o", str(g), "-q"]) == 0
    capsys.readouterr()
    return g


@pytest.mark.parametrize("argv, message", [
    # checked a random draw of 8 sources, the sources file ignored
    (["verify", "G", "--sources-file", ""], "error: --sources-file '': an empty name; give a file name"),
    # said "-o .: is a directory"
    (["generate", "grid", "--rows", "2", "--cols", "2", "-o", ""], "error: -o '': an empty name"),
    (["ingest", "G", "-o", " "], "error: -o ' ': an empty name"),
])
def test_an_empty_name_is_refused(graph, capsys, argv, message):
    assert main([str(graph) if a == "G" else a for a in argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["generate", "ingest", "solve"])
def test_an_output_name_ending_with_a_slash_is_not_written_as_a_file(graph, tmp_path, capsys, command):
    """`-o results/` wrote a file named `results` (Path() drops the slash)."""
    target = tmp_path / "results"
    argv = {"generate": ["generate", "grid", "--rows", "2", "--cols", "2"],
            "ingest": ["ingest", str(graph)],
            "solve": ["solve", str(graph), "-s", "0"]}[command]
    assert main(argv + ["-o", f"{target}/"]) == 2
    assert "names a folder (it ends with '/'); give a file name" in capsys.readouterr().err
    assert not target.exists()


@pytest.mark.parametrize("suffix", [".csr.npz", ".ch.npz", ".min.csr.npz"])
def test_solve_does_not_write_over_the_graphs_cache_files(graph, capsys, suffix):
    """`solve g.parquet -o g.parquet.csr.npz` wrote its table there; the next solve found
    no valid CSR cache and rebuilt it over the output, silently."""
    out = graph.with_name(graph.name + suffix)
    assert main(["solve", str(graph), "-s", "0", "-o", str(out)]) == 2
    assert "is where g.parquet's cache files go" in capsys.readouterr().err


def test_names_that_are_no_parquet_graphs_cache_are_written(graph, tmp_path, capsys):
    """The cache-name rule refused harmless names: `-o s.txt.dist.npz` beside a sources
    file s.txt ("is where s.txt's cache files go"), and `-o rome99.gr.csr.npz` beside a
    raw input, whose caches go under .sssp-cache/."""
    src = tmp_path / "s.txt"
    src.write_text("0\n")
    raw = tmp_path / "g.gr"
    raw.write_text("p sp 2 1\na 1 2 5\n")
    # (a name ending in .npz is refused for its suffix since 2026-12-07: the table is
    # Parquet; the refusal must be that one, never the cache-name rule's)
    for argv, out in ((["--sources-file", str(src)], "s.txt.dist.npz"), (["-s", "1"], "g.gr.csr.npz")):
        g = graph if "--sources-file" in argv else raw
        capsys.readouterr()
        assert main(["solve", str(g), *argv, "-o", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert "written as Parquet" in err and "cache files" not in err, err
    assert main(["solve", str(graph), "--sources-file", str(src), "-o", str(tmp_path / "s.txt.dist")]) == 0
    assert main(["solve", str(raw), "-s", "1", "-o", str(tmp_path / "g.gr.csr")]) == 0
    assert (tmp_path / "g.gr.csr").is_file() and (tmp_path / "s.txt.dist").is_file()


@pytest.mark.parametrize("command", ["generate", "ingest", "solve"])
@pytest.mark.parametrize("out", [".", "/"])
def test_an_output_that_names_a_folder_without_a_name_is_one_line(graph, tmp_path, capsys, monkeypatch,
                                                                     command, out):
    """``-o .`` and ``-o /``: the output name's length check (run first, since a name
    past the limit made Path.is_dir raise) asked for the temporary of a path with no
    name and ended in Path.with_name's ValueError traceback (exit 1); it is the
    folder refusal again (exit 2)."""
    monkeypatch.chdir(tmp_path)
    argv = {"generate": ["generate", "grid", "--rows", "2", "--cols", "2"],
            "ingest": ["ingest", str(graph)],
            "solve": ["solve", str(graph), "-s", "0"]}[command]
    assert main(argv + ["-o", out]) == 2
    err = capsys.readouterr().err
    option = "--out" if command == "solve" else "-o"  # (solve's -o is --out)
    assert f"error: {option} {out}: is a directory; give a file name" in err and "Traceback" not in err, err
