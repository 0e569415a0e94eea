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


def test_a_read_only_graph_folder_builds_its_hierarchy_once(rome_parquet, tmp_path, monkeypatch, caplog):
    """A Parquet graph in a read-only folder (``chmod a-w``, a shared data folder): the
    hierarchy could not be written beside it, so every study (and every ``sssp solve``
    sweeping it) built it again - NY 5-8 s, FLA 12-16 s each time - while the study's note
    said "later studies of this graph load it from beside the graph file".  The client
    now keeps it in the user's cache folder and reads it from there next time."""
    from gpu_sssp.kernels import hierarchy as hmod
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    g = read_parquet(rome_parquet)  # (its CSR cache beside it first, while the folder is writable)
    rome_parquet.parent.chmod(0o555)
    try:
        assert ph.cache_place(g) == ph.user_cache_file(g)  # where the study's note says it goes
        h = ph.load_hierarchy(g)
        spare = tmp_path / "xdg" / "sssp" / "hierarchies" / f"{g.fingerprint}.ch.npz"
        assert spare.is_file() and not ph.cache_path(g).exists()
        assert str(spare) in caplog.text
        # another process, a later study: read, not built
        ph._VOUCHED.clear()
        again = read_parquet(rome_parquet)
        assert ph.cached_file(again) == spare
        monkeypatch.setattr(hmod, "build_hierarchy", lambda *a, **k: pytest.fail("built again"))
        got = ph.load_hierarchy(again)
        assert np.array_equal(got.up_weight, h.up_weight)
        assert ph.place_for_workers(got, again, rome_parquet) == spare  # the workers load that file
        # and a study of it counts the hierarchy as free (phast whatever the source count)
        third = read_parquet(rome_parquet)
        assert ph.study_uses_phast(third, 1, "cpu") and hmod.has_hierarchy(third)
    finally:
        rome_parquet.parent.chmod(0o755)


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


# ------------------------------------------------------------- the ingested copies' pages
def _gr(path, n=40, m=160, seed=3):
    rng = np.random.default_rng(seed)
    lines = [f"p sp {n} {m}"] + [f"a {rng.integers(1, n + 1)} {rng.integers(1, n + 1)} {rng.integers(1, 10**9)}"
                                 for _ in range(m)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _silent_flips(path):
    """Offsets in the weight column whose flipped bit pyarrow reads without a word when
    the pages' checksums are not verified (another weight)."""
    raw = path.read_bytes()
    col = pq.ParquetFile(path).metadata.row_group(0).column(2)
    want = pq.read_table(path).column("weight").to_numpy()
    start = col.data_page_offset
    out = []
    for off in range(start, start + col.total_compressed_size):
        b = bytearray(raw)
        b[off] ^= 0x10
        try:
            got = pq.read_table(pa.BufferReader(bytes(b))).column("weight").to_numpy()
        except Exception:  # noqa: BLE001 - pyarrow's own refusal: not silent
            continue
        if not np.array_equal(got, want):
            out.append(off)
    return out


def test_a_bit_flipped_in_an_ingested_copy_is_read_again_not_used(tmp_path, caplog):
    """A flipped bit in a data page of an ingested copy in ``.sssp-cache`` (a Parquet file
    gpu-sssp wrote) changed an arc's weight, silently (most flips in LZ4 pages decode to
    other bytes): the copies are now written with page checksums, verified on every read,
    and a copy that fails them is ingested again."""
    import gpu_sssp

    gr = _gr(tmp_path / "g.gr")
    good = gpu_sssp.load_graph(gr)
    copy = Path(good.path)
    weights = good.weights.copy()
    del good
    flips = _silent_flips(copy)
    assert flips  # what the checksums are for
    raw = bytearray(copy.read_bytes())
    raw[flips[len(flips) // 2]] ^= 0x10
    for p in copy.parent.glob(copy.name + ".*"):  # its CSR cache: rebuilt from the copy
        if p.name.endswith(".csr.npz"):
            p.unlink()
    copy.write_bytes(bytes(raw))
    g = gpu_sssp.load_graph(gr)
    assert np.array_equal(g.weights, weights)
    assert "is unreadable" in caplog.text and "checksum" in caplog.text.lower()


def test_no_flipped_bit_in_an_edge_list_page_is_read_silently(tmp_path):
    """read_parquet on a damaged edge list written by sssp ingest: one line naming the
    file, or the same arcs (a flip in a statistic nothing reads), never other arcs."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.ingest import ingest

    out = tmp_path / "g.parquet"
    ingest(_gr(tmp_path / "g.gr"), out)
    want = read_parquet(out, cache=False)
    raw = out.read_bytes()
    col = pq.ParquetFile(out).metadata.row_group(0)
    start = min(col.column(i).data_page_offset for i in range(3))
    for off in range(start, len(raw) - 8, 3):
        b = bytearray(raw)
        b[off] ^= 0x04
        bad = tmp_path / "bad.parquet"
        bad.write_bytes(bytes(b))
        try:
            g = read_parquet(bad, cache=False)
        except InputError as exc:
            assert "\n" not in str(exc) and "bad.parquet" in str(exc)
            continue
        same = (g.n == want.n and np.array_equal(g.indptr, want.indptr) and np.array_equal(g.indices, want.indices)
                and np.array_equal(g.weights, want.weights))
        assert same, f"a bit flipped at byte {off} gave another graph, silently"


# ------------------------------------------------------------- the CSR cache's metadata
@pytest.mark.parametrize("parallel", ["min", "keep"])
def test_the_csr_cache_metadata_is_the_files_and_its_arrays(tmp_path, monkeypatch, caplog, parallel):
    """The cache's ``meta`` was taken as written: a list gave an AttributeError traceback
    in every solver, and its ``parallel_policy`` steers the CPU solvers.  It is now made
    again from the Parquet metadata and the arrays, and a cache that records another is
    rebuilt; a sound cache is still used as it is (parallel arcs, self-loops)."""
    from gpu_sssp.pipeline import graph as pg

    p = _edge_list(tmp_path / "g.parquet", [1, 1, 1, 2, 3, 3], [2, 2, 3, 2, 1, 1], [5, 3, 9, 1, 4, 4], 3)
    good = read_parquet(p, parallel=parallel)
    cpath = next(tmp_path.glob("*.csr.npz"))
    real = pg._read_arcs
    monkeypatch.setattr(pg, "_read_arcs", lambda *a: (_ for _ in ()).throw(AssertionError("read again")))
    again = read_parquet(p, parallel=parallel)  # from the cache
    assert again.meta == good.meta and again.meta["parallel_policy"] == parallel
    monkeypatch.setattr(pg, "_read_arcs", real)
    for forged in ([1, 2], dict(good.meta, parallel_policy="keep" if parallel == "min" else "min"),
                   dict(good.meta, self_loops_found=0)):
        with np.load(cpath, allow_pickle=False) as z:
            kept = {k: z[k] for k in z.files}
        np.savez(cpath, **dict(kept, meta=json.dumps(forged)))
        g = read_parquet(p, parallel=parallel)
        assert g.meta == good.meta
    assert caplog.text.count("ignoring unreadable CSR cache") == 3


def test_npz_member_with_negative_sizes_is_refused_from_its_header(tmp_path):
    """A header shape (-2, -5) declares 10 items, as many as the member holds: it passed
    the header check (the product of the sizes) and failed only when read."""
    import io
    import zipfile

    from gpu_sssp.pipeline import npzfile

    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(10, dtype=np.int64))
    raw = buf.getvalue()
    hl = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + hl].decode().replace("(10,)", "(-2, -5)").rstrip()
    header = header + " " * (hl - len(header) - 1) + "\n"
    path = tmp_path / "neg.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", raw[:10] + header.encode() + raw[10 + hl:])
    with pytest.raises(ValueError, match=r"member 'x.npy' declares a negative size \(-2, -5\)"):
        npzfile.members(path)


def test_a_stale_csr_cache_is_rebuilt_with_a_line_saying_why(tmp_path, caplog):
    """A cache of an earlier state of the Parquet file was rebuilt without a word (as
    expected, but nothing said so, even with -v)."""
    import logging

    p = _edge_list(tmp_path / "g.parquet", [1, 2], [2, 3], [5, 7], 3)
    read_parquet(p)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with caplog.at_level(logging.INFO, logger="gpu_sssp.pipeline.graph"):
        read_parquet(p)
    assert "rebuilding the CSR cache" in caplog.text and "mtime_ns" in caplog.text


def test_a_folder_in_place_of_an_ingested_copy(tmp_path):
    """An empty folder where a copy in .sssp-cache goes stopped every load after the whole
    input was read again, with the rename's error ("Is a directory: '.x.tmp' -> 'x'"): it
    is now removed as a bad copy is; one holding files stays, and the load stops first
    with one line naming it."""
    import gpu_sssp

    gr = _gr(tmp_path / "g.gr")
    copy = Path(gpu_sssp.load_graph(gr).path)
    for p in copy.parent.glob(copy.name + "*"):
        p.unlink()
    copy.mkdir()
    g = gpu_sssp.load_graph(gr)
    assert copy.is_file() and g.n == 40
    del g
    for p in copy.parent.glob(copy.name + "*"):
        p.unlink()
    copy.mkdir()
    (copy / "keep").write_text("x")
    with pytest.raises(OSError, match="is a folder where the ingested copy of .*g.gr goes: remove it") as e:
        gpu_sssp.load_graph(gr)
    assert (copy / "keep").exists() and "\n" not in str(e.value)
