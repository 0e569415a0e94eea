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
