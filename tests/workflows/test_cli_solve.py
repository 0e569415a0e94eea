"""`sssp solve` end to end on CPU: the distance table it writes."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import scipy.sparse.csgraph as csg

from gpu_sssp.pipeline.graph import load_graph
from gpu_sssp.workflows.cli import main


def test_repeated_sources_are_solved_and_written_once(rome99, tmp_path, capsys):
    """A source given twice (-s 1 -s 1, or in the sources file too) wrote its rows twice:
    a distance table keyed by (source, vertex) with duplicate keys.  Now one row per
    distinct source, in the order of first appearance, and a note."""
    ss = tmp_path / "r.ss"
    ss.write_text("p aux sp ss 3\ns 5\ns 1\ns 5\n")
    out = tmp_path / "d.parquet"
    assert main(["solve", str(rome99), "-s", "3", "-s", "1", "-s", "3", "--sources-file", str(ss),
                 "-o", str(out)]) == 0
    assert "note: 3 repeated sources solved once (3 distinct)" in capsys.readouterr().out
    t = pq.read_table(out)
    keys = list(zip(t.column("source").to_pylist(), t.column("vertex").to_pylist()))
    assert len(keys) == len(set(keys)) == 3 * 3353  # rome99: every vertex reached
    assert list(dict.fromkeys(t.column("source").to_pylist())) == [3, 1, 5]
    meta = t.schema.metadata[b"sssp"].decode()
    assert '"sources": [3, 1, 5]' in meta
    g = load_graph(rome99)
    ref = csg.dijkstra(g.to_scipy(), indices=[0])[0]
    d = t.filter(t.column("source").to_numpy() == 1).sort_by("vertex").column("distance").to_numpy()
    assert np.array_equal(d, ref)
    # no note when every source is distinct
    assert main(["solve", str(rome99), "-s", "1", "-s", "2"]) == 0
    assert "repeated" not in capsys.readouterr().out


def test_all_vertices_without_out_is_refused(rome99, tmp_path, capsys):
    """--all-vertices shapes the file -o writes; without -o it was silently ignored (the
    README gives it as `[-o OUT.parquet [--all-vertices]]`).  Now a usage error, exit 2,
    before the graph is read."""
    assert main(["solve", str(rome99), "-s", "1", "--all-vertices"]) == 2
    err = capsys.readouterr().err
    assert "--all-vertices goes with -o" in err
    assert main(["solve", str(rome99), "-s", "1", "--all-vertices", "-o", str(tmp_path / "d.parquet")]) == 0


def test_out_dash_is_refused_not_a_file_named_dash(rome99, tmp_path, capsys, monkeypatch):
    """`-o -` wrote a Parquet file named "-" in the current folder (a user meant stdout,
    which is not offered).  Now a usage error before the graph is read; ./- still names
    such a file."""
    monkeypatch.chdir(tmp_path)
    assert main(["solve", str(rome99), "-s", "1", "-o", "-"]) == 2
    cap = capsys.readouterr()
    assert "error: --out -: standard output is not offered" in cap.err and len(cap.err.splitlines()) == 1
    assert cap.out == "" and not (tmp_path / "-").exists()
    assert main(["solve", str(rome99), "-s", "1", "-o", "./-"]) == 0
    assert pq.read_table(tmp_path / "-").num_rows == 3353


def test_out_in_a_folder_that_cannot_be_written_is_refused_before_solving(rome99, capsys):
    """-o /proc/x.parquet solved first, then failed naming the temporary file
    ("[Errno 2] Failed to open local file '/proc/.x.parquet.tmp-...'").  Now one line
    naming --out and the folder, before anything is read or solved.  (/proc takes no
    new file, even as root, where a read-only folder would not show it.)"""
    import os
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(dir="/proc")
    except OSError:
        pass
    else:  # pragma: no cover (not Linux)
        os.close(fd)
        os.unlink(probe)
        import pytest

        pytest.skip("/proc takes files here")
    for out in ("/proc/x.parquet", "/proc/new/deep/x.parquet"):
        assert main(["solve", str(rome99), "-s", "1", "-o", out]) == 2
        cap = capsys.readouterr()
        assert cap.out == ""  # nothing solved (no table)
        assert cap.err.startswith(f"error: --out {out}: cannot write a file in /proc (")
        assert len(cap.err.splitlines()) == 1 and ".tmp-" not in cap.err


def test_a_failed_write_names_out_not_its_temporary_file(rome99, tmp_path, capsys, monkeypatch):
    """A write that fails after the check (disk full, the folder removed meanwhile) gave
    pyarrow's message naming the temporary file; now --out's name, one line, status 2."""
    import gpu_sssp.pipeline.writers as writers

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writers, "write_parquet_atomic", full)
    monkeypatch.setattr(writers, "write_parquet_parts_atomic", full)  # (-o writes its table in parts)
    out = tmp_path / "d.parquet"
    assert main(["solve", str(rome99), "-s", "1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --out {out}: could not be written (No space left on device)\n"


def test_method_at_backend_is_taken_as_verify_and_bench_take_it(rome99, tmp_path, capsys):
    """``sssp solve --method phast@cpu`` was refused as an unknown method, while verify and
    bench take ``NAME@cpu``; a backend that contradicts it is one line, exit 2."""
    import pyarrow.parquet as pq
    import scipy.sparse.csgraph as csg

    from gpu_sssp.pipeline.graph import load_graph

    out = tmp_path / "d.parquet"
    assert main(["solve", str(rome99), "-s", "5", "--method", "phast@cpu", "-o", str(out)]) == 0
    assert "phast on cpu" in capsys.readouterr().out
    g = load_graph(rome99)
    ref = csg.dijkstra(g.to_scipy(), indices=int(g.to_index([5])[0]))
    t = pq.read_table(out).to_pydict()
    got = dict(zip(t["vertex"], t["distance"]))
    assert all(got[v + g.id_base] == ref[v] for v in range(g.n) if ref[v] < float("inf"))
    assert main(["solve", str(rome99), "-s", "5", "--method", "phast@cpu", "--backend", "gpu"]) == 2
    assert "name different backends" in capsys.readouterr().err
    assert main(["solve", str(rome99), "-s", "5", "--method", "phast@tpu"]) == 2
    assert "'gpu' or 'cpu'" in capsys.readouterr().err


def test_phast_solve_keeps_its_hierarchy_in_the_cache_file(rome99, monkeypatch, capsys):
    """`sssp solve --method phast` contracted the graph on every run (NY: 4-10 s each)
    and never wrote or read `<graph>.ch.npz`, the cache the README promises for phast
    (only studies and gpu_sssp.matrix used it).  The first run writes it, the next reads it."""
    from gpu_sssp.kernels import hierarchy as hmod

    real, built = hmod.build_hierarchy, []

    def counting(graph):
        built.append(graph.name)
        return real(graph)

    monkeypatch.setattr(hmod, "build_hierarchy", counting)
    for _ in range(2):
        assert main(["solve", str(rome99), "-s", "1", "--method", "phast@cpu"]) == 0
        assert "116,006,476" in capsys.readouterr().out
    assert built == ["rome99"]
    assert list((rome99.parent / ".sssp-cache").glob("*.ch.npz"))


def test_solve_uses_the_hierarchy_cache_beside_the_graph(tmp_path, capsys, monkeypatch):
    """solve with phast takes the hierarchy cached beside the graph file (a study's), or
    builds and caches it there, as gpu_sssp.matrix and studies do; it built one in memory
    on every run (700 NY sources: 8.7 s with the cache file beside the graph).  With the
    cache file there, auto sweeps it whatever the number of sources."""
    from gpu_sssp.kernels import hierarchy as hmod
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    cache = path.with_name(path.name + ".ch.npz")
    assert main(["solve", str(path), "-s", "1", "--method", "phast@cpu"]) == 0
    assert cache.exists()
    capsys.readouterr()

    def no_build(graph):
        raise AssertionError("the hierarchy was built again")

    monkeypatch.setattr(hmod, "build_hierarchy", no_build)
    assert main(["solve", str(path), "-s", "1", "-s", "7", "--backend", "cpu"]) == 0
    assert "phast on cpu" in capsys.readouterr().out


def test_a_missing_sources_file_is_refused_before_the_graph_is_read(rome99, tmp_path, capsys, monkeypatch):
    """``sssp solve G --sources all`` (a study's option: argparse takes it for
    ``--sources-file all``) loaded the graph (FLA: ingested first), then said "all: no
    such sources file".  Refused first now, with the hint; verify too."""
    import pytest

    from gpu_sssp.workflows import cmd_solve, cmd_verify

    monkeypatch.chdir(tmp_path)
    for mod in (cmd_solve, cmd_verify):
        monkeypatch.setattr(mod, "load_graph_from_args", lambda *a, **k: pytest.fail("the graph was read"))
    assert main(["solve", str(rome99), "--sources", "all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: all: no such sources file (") and "--source ID" in err, err
    assert len(err.splitlines()) == 1
    assert main(["verify", str(rome99), "--sources-file", "nope.ss"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: nope.ss: no such sources file", err
