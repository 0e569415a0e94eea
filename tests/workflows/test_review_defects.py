"""Defects a new-user review found (2026-12-02).

``--report`` could destroy data: it was checked for a folder, a missing folder and
bokeh only, so the report's HTML replaced the input graph (``--report g.parquet``), the
study's manifest (``--report OUT/manifest.json`` on a resume: the next resume found an
unreadable manifest) or went into its batch folder (every later resume refused).  Each is
refused before the graph is read, and nothing is written."""
from __future__ import annotations

import pytest

from gpu_sssp.workflows.cli import main

pytest.importorskip("bokeh")


def _graph(tmp_path):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    return g


def test_the_report_is_not_an_input(tmp_path, capsys):
    g = _graph(tmp_path)
    before = g.read_bytes()
    srcs = tmp_path / "s.txt"
    srcs.write_text("1\n2\n")
    out = tmp_path / "st"
    for argv, what in ((["--report", str(g)], "is the input file"),
                       (["--sources-file", str(srcs), "--report", str(srcs)], "is the input file"),
                       (["--report", "/dev/null"], "not a regular file"),
                       (["--report", str(out)], "is in the study folder")):  # the folder, not made yet
        code = main(["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(out)] + argv)
        err = capsys.readouterr().err
        assert code == 2 and what in err and err.count("\n") == 1, err
        assert not out.exists()
    assert g.read_bytes() == before and srcs.read_text() == "1\n2\n"


@pytest.mark.parametrize("inside", ["manifest.json", "stats/rep.html", ""])
def test_the_report_is_not_in_the_study_folder(tmp_path, capsys, inside):
    g = _graph(tmp_path)
    out = tmp_path / "st"
    argv = ["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    manifest = (out / "manifest.json").read_bytes()
    report = out / inside if inside else out
    code = main(argv + ["--resume", "--report", str(report)])
    err = capsys.readouterr().err
    if inside:
        assert code == 2 and "is in the study folder" in err and "--out" in err, err
    else:
        assert code == 2 and "is a directory" in err, err
    assert (out / "manifest.json").read_bytes() == manifest
    assert not (out / "stats" / "rep.html").exists()
    assert main(argv + ["--resume"]) == 0  # the folder is still a study


def test_python_names_report_and_out(tmp_path):
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import UsageError

    g = _graph(tmp_path)
    with pytest.raises(UsageError, match=r"^report='.*': is in the study folder out='.*'"):
        sssp.study(g, out=tmp_path / "st", report=tmp_path / "st" / "r.html", cpu_workers=1)
    with pytest.raises(UsageError, match=r"^report='.*': is the input file"):
        sssp.study(g, out=tmp_path / "st", report=g, cpu_workers=1)
    assert not (tmp_path / "st").exists()


def test_empty_out_and_host_are_refused(tmp_path, capsys, monkeypatch):
    """``--out ''`` wrote the study into the current folder ("wrote /stats/"), and
    ``--host ''`` was taken for 127.0.0.1; both are refused in one line, as ``-o ''``."""
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import UsageError

    g = _graph(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", ""]) == 2
    assert "error: --out '': an empty name" in capsys.readouterr().err
    assert main(["study", str(g), "--cpu-workers", "1", "--host", "", "--out", "st"]) == 2
    assert "error: --host '': an empty address" in capsys.readouterr().err
    with pytest.raises(UsageError, match=r"^out='': an empty name"):
        sssp.study(g, out="", cpu_workers=1)
    with pytest.raises(UsageError, match=r"^host='': an empty address"):
        sssp.study(g, out="st", host="", cpu_workers=1)
    assert list(work.iterdir()) == []


def test_a_study_told_name_at_backend_says_how_to_choose_it(tmp_path, capsys):
    """``sssp study -m phast@cpu`` said "unknown algorithm 'phast@cpu'", a name that
    solve, verify and bench take; a study's backend is its workers'."""
    g = _graph(tmp_path)
    assert main(["study", str(g), "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "st"),
                 "--algorithm", "dijkstra@cpu"]) == 2
    err = capsys.readouterr().err
    assert "unknown" not in err and "give the name alone, --algorithm dijkstra" in err, err


def test_generate_refusals_in_each_callers_words(tmp_path, capsys):
    """``sssp generate`` named its Python keywords on the command line
    ("negative_fraction 1.5", "scale must be ...", "undirected=False")."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline import generate

    out = str(tmp_path / "g.parquet")
    for argv, want in ((["rmat", "--scale", "4", "--negative-fraction", "1.5"], "--negative-fraction 1.5: expected"),
                       (["rmat", "--scale", "70"], "--scale must be in 0..40 and --edge-factor >= 0, got 70"),
                       (["grid", "--rows", "3", "--cols", "3", "--negative-fraction", "0.1"],
                        "(no --undirected; for grid, --asymmetric)")):
        assert main(["generate", *argv, "-o", out]) == 2
        err = capsys.readouterr().err
        assert want in err and "_" not in err.split("error:")[1].split("(")[0], err
    with pytest.raises(UsageError, match=r"^negative_fraction=1.5: expected"):
        generate.rmat(4, negative_fraction=1.5)
    with pytest.raises(UsageError, match=r"undirected=False\)$"):
        generate.grid(3, 3, negative_fraction=0.1)


def test_python_errors_are_the_products(tmp_path):
    """A method's unknown option, a Result asked for what it does not hold and a bad
    callback were bare TypeErrors (or, for the callback, a failure after the cluster had
    started and batches were written); they are SsspErrors, still TypeErrors."""
    import numpy as np

    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import OptionError, SsspError

    g = sssp.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([5, 5]), n=3)
    for method in ("dijkstra", "bellman-ford", "phast"):
        with pytest.raises(OptionError):
            sssp.solve(g, [0], method=method, backend="cpu", foo=1)
    r = sssp.solve(g, [0], backend="cpu")
    with pytest.raises(OptionError, match="no matrix"):
        r.matrix_table()
    rt = sssp.solve(g, [0], backend="cpu", targets=[1, 2])
    with pytest.raises(OptionError, match="matrix_table"):
        rt.to_table()
    with pytest.raises(SsspError, match="form must be one of"):
        rt.matrix_table(form="x")
    with pytest.raises(OptionError, match="^on_batch must be a callable, got int"):
        sssp.study(_graph(tmp_path), out=tmp_path / "st", on_batch=5, cpu_workers=1)
    assert not (tmp_path / "st").exists()


def test_load_graphs_bad_format_and_weight_type_are_the_products(tmp_path):
    import gpu_sssp as sssp
    from gpu_sssp.kernels.errors import UsageError

    g = _graph(tmp_path)
    with pytest.raises(UsageError, match=r"^weight_type='int8': expected one of int32"):
        sssp.load_graph(g, weight_type="int8")
    with pytest.raises(UsageError, match=r"^format='xyz': unknown format"):
        sssp.load_graph(g, format="xyz")


def test_graph_id_bases_that_would_mislead_are_refused():
    """A correctness review: ``Graph.from_edges(id_base=-1)`` made file id -1 (vertex 0)
    the -1 that marks "no predecessor"; ``id_base=2**63-2`` wrapped the last id to
    -2**63 in every table."""
    import numpy as np

    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.kernels.graph import Graph

    for base, why in ((-1, "id_base must be >= 0"), (2**63 - 2, "would pass int64")):
        with pytest.raises(UsageError, match=why):
            Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([3, 4]), 3, id_base=base)
        with pytest.raises(UsageError, match=why):  # n taken from the ids
            Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([3, 4]), id_base=base)
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([3, 4]), 3, id_base=2**63 - 3)
    assert g.to_ids([2]).tolist() == [2**63 - 1]  # the largest that fits
