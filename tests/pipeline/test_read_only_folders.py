"""A folder whose mode lets no one write (``chmod a-w``: a shared data folder, 0555) gets
no cache files, even from root, whom permissions do not stop: ``.sssp-cache/`` (the
ingested copy), ``<graph>.parquet.csr.npz`` and ``<graph>.ch.npz`` were written into
``../shared/data/dimacs9`` by every root run.  They go to the user's cache folder, as for
any user who cannot write there."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gpu_sssp
from gpu_sssp.pipeline.fsnames import refuse_read_only_folder


@pytest.fixture()
def locked(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "g.gr").write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    gpu_sssp.load_graph(str(data / "g.gr"))  # (a Parquet copy to lock in too)
    src = next((data / ".sssp-cache").glob("*.parquet"))
    os.replace(src, data / "g.parquet")
    for f in (data / ".sssp-cache").iterdir():
        f.unlink()
    (data / ".sssp-cache").rmdir()
    before = sorted(os.listdir(data))
    data.chmod(0o555)
    yield data, before
    data.chmod(0o755)


def test_no_cache_is_written_into_a_folder_no_one_may_write(locked, tmp_path):
    data, before = locked
    g = gpu_sssp.load_graph(str(data / "g.gr"))
    p = gpu_sssp.load_graph(str(data / "g.parquet"))
    assert sorted(os.listdir(data)) == before  # nothing new, root or not
    home = tmp_path / "cache-home" / "sssp"
    assert list(home.rglob("*.parquet")) and list((home / "csr").glob("g.parquet.*.csr.npz"))
    res = gpu_sssp.solve(p, [0], method="dijkstra")  # (vertex 1: 0-based indices)
    assert np.array_equal(res.distances[0], [0, 5, 10]) and g.n == p.n == 3
    res = gpu_sssp.solve(p, [0], method="phast", backend="cpu", force=True)  # a hierarchy, not cached there
    assert np.array_equal(res.distances[0], [0, 5, 10])
    assert sorted(os.listdir(data)) == before


def test_the_check_itself(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    refuse_read_only_folder(d)  # writable: nothing
    refuse_read_only_folder(tmp_path / "missing")  # missing: nothing (the writer says)
    d.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match="read-only folder"):
            refuse_read_only_folder(d)
    finally:
        d.chmod(0o755)
