"""`sssp solve` defects found by the user audit of solve / verify / generate."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_sssp.kernels.result import DISTANCE_SCHEMA, Result
from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("all_vertices", [False, True])
def test_out_builds_the_long_table_a_part_at_a_time(rome99, tmp_path, capsys, monkeypatch, all_vertices):
    """`-o` built the whole long table at once: about 40 bytes a cell beside the 8 of the
    distances that solve checks against the memory (303 NY sources under a 4 GB address
    space were solved, then "error: Unable to allocate 1.19 GiB").  Now it is built and
    written a bounded number of cells at a time, and the file is the table it was."""
    import gpu_sssp.workflows.cmd_solve as cs

    monkeypatch.setattr(cs, "PART_CELLS", 2 * 3353)  # two rome99 sources a part
    seen = []
    to_table = Result.to_table

    def spy(self, *a, **k):
        t = to_table(self, *a, **k)
        seen.append(t.num_rows)
        return t

    monkeypatch.setattr(Result, "to_table", spy)
    ss = tmp_path / "s.txt"
    ss.write_text("\n".join(str(i) for i in (5, 1, 3000, 77, 12)) + "\n")
    out = tmp_path / "d.parquet"
    argv = ["solve", str(rome99), "--sources-file", str(ss), "--predecessors", "-o", str(out)]
    assert main(argv + (["--all-vertices"] if all_vertices else [])) == 0
    assert f"wrote {5 * 3353:,} rows to" in capsys.readouterr().out
    assert seen == [2 * 3353, 2 * 3353, 3353]
    t = pq.read_table(out)
    assert t.schema.equals(DISTANCE_SCHEMA, check_metadata=False)
    meta = json.loads(t.schema.metadata[b"sssp"])
    assert meta["sources"] == [5, 1, 3000, 77, 12] and meta["id_base"] == 1 and meta["method"] == "dijkstra"
    assert list(dict.fromkeys(t.column("source").to_pylist())) == [5, 1, 3000, 77, 12]
    # the same rows as the whole table
    from gpu_sssp import kernels
    from gpu_sssp.pipeline.graph import load_graph

    g = load_graph(rome99)
    res = kernels.solve(g, g.to_index([5, 1, 3000, 77, 12]), method="dijkstra", predecessors=True)
    whole = to_table(res, reachable_only=not all_vertices)
    assert t.replace_schema_metadata(None).equals(whole.replace_schema_metadata(None))


def test_to_table_rows_is_a_slice_of_the_whole_table():
    dist = np.array([[0.0, 1.0, np.inf], [2.0, 0.0, 5.0], [np.inf, np.inf, 0.0]])
    pred = np.array([[-1, 0, -1], [1, -1, 1], [-1, -1, -1]])
    z = np.zeros(3, dtype=np.int64)
    res = Result(sources=np.array([0, 1, 2]), distances=dist, predecessors=pred, reached=z, eccentricity=z,
                 sum_distance=z, iterations=z, relaxations=z, method="x", backend="cpu", device="cpu",
                 id_base=1)
    whole = res.to_table()
    parts = [res.to_table(rows=slice(0, 2)), res.to_table(rows=slice(2, 4))]
    assert pa.concat_tables(parts).equals(whole)
    assert parts[1].column("source").to_pylist() == [3] and parts[1].column("vertex").to_pylist() == [3]
    with pytest.raises(TypeError, match="rows must be a slice"):
        res.to_table(rows=[0, 1])


@pytest.mark.parametrize("argv, message", [
    (["--backend", "gpu"], "error: --backend gpu needs a CUDA device; none is visible here"),
    (["-m", "hbf"], "error: method 'hbf' needs a CUDA device; none is visible here"),
    (["-m", "phast@gpu"], "error: method 'phast' needs a CUDA device; none is visible here"),
])
def test_no_gpu_is_exit_4_before_the_input_is_read(rome99, capsys, monkeypatch, argv, message):
    """`solve G -s 1 --backend gpu` without a GPU ingested G first, then refused naming a
    method never asked for ("method 'hbf' needs a CUDA device", or 'phast' once a
    hierarchy was cached); a GPU method named was refused after the ingest too."""
    from gpu_sssp import kernels
    import gpu_sssp.workflows.cmd_solve as cs

    monkeypatch.setattr(kernels, "device_count", lambda: 0)

    def no_read(*a, **k):
        raise AssertionError("the graph was read")

    monkeypatch.setattr(cs, "load_graph_from_args", no_read)
    assert main(["solve", str(rome99), "-s", "1", *argv]) == 4
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.splitlines()) == 1
    assert not (rome99.parent / ".sssp-cache").exists()


def test_out_in_a_cache_folder_is_refused(rome99, tmp_path, capsys, monkeypatch):
    """`solve G -o .sssp-cache/<G's ingested copy>.parquet` wrote a distance table over
    the copy: the next run ingested G again and the copy's hierarchy was lost (found by
    the 2026-12-07 audit).  Outputs in `.sssp-cache/` or in the user's cache folder are
    refused before anything is solved; the copy is left as it was."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert main(["solve", str(rome99), "-s", "1"]) == 0
    copy = next((rome99.parent / ".sssp-cache").glob("*.parquet"))
    before = copy.read_bytes()
    capsys.readouterr()
    for out in (copy, rome99.parent / ".sssp-cache" / "mine.parquet", tmp_path / "xdg" / "sssp" / "csr" / "d.parquet"):
        assert main(["solve", str(rome99), "-s", "1", "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert "is in a cache folder of sssp" in err and len(err.splitlines()) == 1, err
    assert copy.read_bytes() == before
    assert main(["solve", str(rome99), "-s", "1", "-o", str(tmp_path / "d.parquet")]) == 0


@pytest.mark.parametrize("name", ["d.csv", "d.JSON", "d.npy", "d.txt"])
def test_out_named_as_another_format_is_refused(rome99, tmp_path, capsys, name):
    """`solve -o d.csv` wrote a Parquet file under a .csv name without a word (found by
    the 2026-12-07 audit); a name with no suffix or another one is still taken."""
    assert main(["solve", str(rome99), "-s", "1", "-o", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert "the table is written as Parquet" in err and "d.parquet" in err and len(err.splitlines()) == 1
    assert not (tmp_path / name).exists()
    assert main(["solve", str(rome99), "-s", "1", "-o", str(tmp_path / "plain")]) == 0
    assert pq.read_table(tmp_path / "plain").num_rows == 3353
