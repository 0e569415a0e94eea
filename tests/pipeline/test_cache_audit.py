"""The CSR cache (``<file>.csr.npz``) as hostile input: a file whose arrays were rewritten
under the key and fingerprint of the Parquet file is rebuilt, never trusted."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.pipeline.graph import read_parquet


def _edge_list(path, src, dst, w, n):
    t = pa.table({"src": pa.array(src, pa.int32()), "dst": pa.array(dst, pa.int32()),
                  "weight": pa.array(w, pa.int64())})
    meta = {"vertices": n, "arcs": len(src), "directed": True, "id_base": 1, "weight_type": "int64"}
    pq.write_table(t.replace_schema_metadata({b"sssp": json.dumps(meta).encode()}), path)
    return path


def test_a_csr_cache_rewritten_with_other_weights_is_rebuilt_not_trusted(tmp_path, caplog):
    """The zip's CRCs catch a flipped byte, but not a cache saved again (np.savez) with
    other arrays and the file's own key, meta and fingerprint: its weights were used and the
    recorded fingerprint vouched for them (the hierarchy cache and a study's workers trust
    it).  The fingerprint is now the arrays' own, compared with the record."""
    p = _edge_list(tmp_path / "g.parquet", [1, 2, 1], [2, 3, 3], [5, 7, 100], 3)
    good = read_parquet(p)
    cpath = p.with_name(p.name + ".csr.npz")
    with np.load(cpath, allow_pickle=False) as z:
        kept = {k: z[k] for k in z.files}
    forged = dict(kept, weights=np.ones_like(kept["weights"]))
    np.savez(cpath, **forged)
    g = read_parquet(p)
    assert g.weights.tolist() == good.weights.tolist()  # from the Parquet file, not the cache
    assert g.fingerprint == good.fingerprint
    assert "ignoring unreadable CSR cache" in caplog.text and "fingerprint" in caplog.text
    with np.load(cpath, allow_pickle=False) as z:  # and rewritten
        assert z["weights"].tolist() == good.weights.tolist()


# ------------------------------------------------- the hierarchy file a study's workers load
pytest = __import__("pytest")


@pytest.fixture()
def rome_parquet(tmp_path):
    pytest.importorskip("routingkit_ch")
    from gpu_sssp.pipeline.ingest import ingest
    from tests.conftest import DATA

    out = tmp_path / "rome99.parquet"
    ingest(DATA / "rome99.gr", out)
    return out


@pytest.mark.parametrize("own", [True, False], ids=["graph's own cache", "another graph file"])
def test_a_hierarchy_file_that_cannot_be_written_is_placed_where_the_workers_can_load_it(
        rome_parquet, tmp_path, monkeypatch, caplog, own):
    """A folder in the place of ``<graph>.ch.npz`` (as a read-only folder): the client
    warned and solved, but the study's workers, which never build a hierarchy, failed on
    the file every batch (a traceback each, 42 KB for Rome), then the study stopped with
    a message about folders shared with the workers; for a graph file other than the
    client's own (an attached cluster's ``graph.parquet``) the write's OSError stopped it.
    Now the workers load it from the user's cache folder, and a warning says so."""
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if own:
        graph_path = rome_parquet
    else:
        graph_path = tmp_path / "other" / "graph.parquet"
        graph_path.parent.mkdir()
        graph_path.write_bytes(rome_parquet.read_bytes())
    Path(os.fspath(graph_path) + ".ch.npz").mkdir()
    g = read_parquet(rome_parquet)
    h = ph.load_hierarchy(g)
    placed = ph.place_for_workers(h, g, graph_path)
    assert placed == tmp_path / "xdg" / "sssp" / "hierarchies" / f"{g.fingerprint}.ch.npz"
    assert "they load" in caplog.text
    ph._VOUCHED.clear()  # a worker: another process
    w = read_parquet(graph_path)
    got = ph.load_hierarchy(w, placed, build=False)
    assert got.n == g.n and np.array_equal(got.up_weight, h.up_weight)


def test_no_place_for_the_workers_hierarchy_is_one_line(rome_parquet, tmp_path, monkeypatch):
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    (tmp_path / "xdg").write_text("a file, not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    rome_parquet.with_name(rome_parquet.name + ".ch.npz").mkdir()
    g = read_parquet(rome_parquet)
    h = ph.load_hierarchy(g)
    with pytest.raises(OSError, match=r"cannot hold the contraction hierarchy the workers load .* nor can") as e:
        ph.place_for_workers(h, g, rome_parquet)
    assert "\n" not in str(e.value)
