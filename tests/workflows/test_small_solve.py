"""`sssp solve -o`: a row of more vertices than a part is written in vertex ranges."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_sssp.kernels.result import Result
from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("sources, all_vertices", [(["-s", "5"], False), (["-s", "5"], True),
                                                   (["-s", "5", "-s", "3000"], False)])
def test_one_source_of_more_vertices_than_a_part_is_written_in_parts(rome99, tmp_path, capsys, monkeypatch,
                                                                      sources, all_vertices):
    """A source's row was one part whatever its size (``max(1, PART_CELLS // n)`` rows):
    one source of a graph of billions of vertices built its whole long table at once
    (about 40 bytes a vertex).  Now a row is cut into vertex ranges of PART_CELLS, and
    the file is the one written in one piece."""
    import gpu_sssp.workflows.cmd_solve as cs

    argv = ["solve", str(rome99), *sources, "--predecessors"] + (["--all-vertices"] if all_vertices else [])
    whole = tmp_path / "whole.parquet"
    assert main(argv + ["-o", str(whole)]) == 0  # 3,353 vertices: one part
    capsys.readouterr()
    monkeypatch.setattr(cs, "PART_CELLS", 1000)  # four parts a row
    seen = []
    to_table = Result.to_table

    def spy(self, *a, **k):
        t = to_table(self, *a, **k)
        seen.append((k.get("rows"), k.get("vertices"), t.num_rows))
        return t

    monkeypatch.setattr(Result, "to_table", spy)
    parted = tmp_path / "parted.parquet"
    assert main(argv + ["-o", str(parted)]) == 0
    rows = len(sources) // 2
    assert len(seen) == 4 * rows
    assert all(v is not None and v.stop - v.start == 1000 and n <= 1000 for _r, v, n in seen)
    assert [(r.start, v.start) for r, v, _n in seen] == [(i, v) for i in range(rows) for v in (0, 1000, 2000, 3000)]
    a, b = pq.read_table(whole), pq.read_table(parted)
    assert a.num_rows == sum(n for *_, n in seen)
    assert b.equals(a) and b.schema.metadata == a.schema.metadata
    assert f"wrote {a.num_rows:,} rows to" in capsys.readouterr().out


def test_part_slices_cover_the_array_in_order():
    from gpu_sssp.workflows.cmd_solve import part_slices

    assert list(part_slices(5, 10, 25)) == [(slice(0, 2), None), (slice(2, 4), None), (slice(4, 6), None)]
    assert list(part_slices(2, 10, 4)) == [(slice(i, i + 1), slice(v, v + 4)) for i in (0, 1) for v in (0, 4, 8)]
    assert list(part_slices(1, 3, 0)) == [(slice(0, 1), slice(v, v + 1)) for v in (0, 1, 2)]


def test_to_table_vertices_are_a_slice_of_a_row():
    dist = np.array([[0.0, 1.0, np.inf, 4.0], [2.0, 0.0, 5.0, np.inf]])
    pred = np.array([[-1, 0, -1, 1], [1, -1, 1, -1]])
    z = np.zeros(2, dtype=np.int64)
    res = Result(sources=np.array([0, 1]), distances=dist, predecessors=pred, reached=z, eccentricity=z,
                 sum_distance=z, iterations=z, relaxations=z, method="x", backend="cpu", device="cpu", id_base=1)
    for reachable_only in (True, False):
        whole = res.to_table(reachable_only=reachable_only)
        parts = [res.to_table(reachable_only=reachable_only, rows=slice(r, r + 1), vertices=slice(v, v + 3))
                 for r in (0, 1) for v in (0, 3)]
        assert pa.concat_tables(parts).equals(whole)
    assert res.to_table(vertices=slice(3, 4)).column("vertex").to_pylist() == [4]
    with pytest.raises(TypeError, match="vertices must be a slice"):
        res.to_table(vertices=[0, 1])
    with pytest.raises(ValueError, match="step 1"):
        res.to_table(vertices=slice(0, 4, 2))


@pytest.mark.parametrize("argv, option", [
    (["-s", "1", "-o", ""], "--out ''"),
    (["-s", "1", "-o", " "], "--out ' '"),
    (["-s", "1", "--all-vertices", "-o", ""], "--out ''"),
    (["-s", "1", "--sources-file", ""], "--sources-file ''"),
    (["--sources-file", ""], "--sources-file ''"),
])
def test_an_empty_file_name_is_refused_not_ignored(tmp_path, capsys, monkeypatch, argv, option):
    """-o '' solved and wrote nothing, --sources-file '' was dropped (the --source ids
    alone solved, or "no sources: give --source ID"), both without a word; with
    --all-vertices, -o '' said "--all-vertices goes with -o/--out"."""
    monkeypatch.chdir(tmp_path)  # (-o ' ' wrote a file named ' ' in the current folder)
    graph = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(graph), "-q"]) == 0
    capsys.readouterr()
    assert main(["solve", str(graph), *argv]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.parquet"]
    cap = capsys.readouterr()
    assert cap.err.strip() == f"error: {option}: an empty name; give a file name" and " ms (" not in cap.out


def test_large_and_small_mean_distances_are_shown_whole(tmp_path, capsys):
    """The mean column wrote two decimals whatever the size: 7.1e38 was 41 digits, cut
    to '710,670,687,683,443,24…' in the table; a mean of 1e-5 was '0.00'."""
    from gpu_sssp.workflows.cmd_solve import _mean

    assert _mean(7.106706876834432e38) == "7.10671e+38" and _mean(1e-5) == "1e-05"
    assert _mean(12345.678) == "12,345.68" and _mean(0.0) == "0.00" and _mean(float("nan")) == "nan"
    graph = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "--weights", "1e30:1e30",
                 "--weight-type", "float64", "-o", str(graph), "-q"]) == 0
    capsys.readouterr()
    assert main(["solve", str(graph), "-s", "0"]) == 0
    out = capsys.readouterr().out
    assert "1.33333e+30" in out and "…" not in out


def test_out_is_not_the_sources_file(tmp_path, capsys):
    """`solve G --sources-file S -o S` read S, then replaced it by the distance table."""
    graph = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(graph), "-q"]) == 0
    src = tmp_path / "mysrc.txt"
    src.write_text("1\n2\n")
    (tmp_path / "link.txt").symlink_to(src)
    capsys.readouterr()
    for out in (src, tmp_path / "link.txt"):
        assert main(["solve", str(graph), "--sources-file", str(src), "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"error: --out {out}: is the input file {src}; give another output name"
    assert src.read_text() == "1\n2\n"
