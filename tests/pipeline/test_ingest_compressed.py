"""Compressed inputs stream to exactly the same edge list as the plain file."""
from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile

import pytest
import zstandard

from tests.conftest import DATA

from ._ingest_helpers import ingest_arcs

COMPRESSORS = {
    "gz": gzip.compress,
    "xz": lzma.compress,
    "bz2": bz2.compress,
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
@pytest.mark.parametrize("name", ["rome99.gr", "karate.mtx", "example_weighted.graph", "gapbs/4.wel"])
def test_compressed_equals_plain(tmp_path, ext, name):
    src = DATA / name
    (s0, d0, w0), m0 = ingest_arcs(src, tmp_path, "plain.parquet")
    z = tmp_path / f"{src.name}.{ext}"
    z.write_bytes(COMPRESSORS[ext](src.read_bytes()))
    (s1, d1, w1), m1 = ingest_arcs(z, tmp_path, "z.parquet", chunk_bytes=8192)
    assert (s0 == s1).all() and (d0 == d1).all() and (w0 == w1).all()
    strip = lambda m: {k: v for k, v in m.items() if k not in ("source_file", "source_sha256")}
    assert strip(m0) == strip(m1)
    import hashlib

    assert m1["source_sha256"] == hashlib.sha256(z.read_bytes()).hexdigest()


def test_tarball_main_member(tmp_path):
    t = tmp_path / "karate.tar.gz"
    with tarfile.open(t, "w:gz") as tar:
        tar.add(DATA / "USAir97.mtx", arcname="karate/karate_extra.mtx")
        tar.add(DATA / "karate.mtx", arcname="karate/karate.mtx")
    (s, d, w), m = ingest_arcs(t, tmp_path)
    assert m["source_member"] == "karate/karate.mtx" and m["vertices"] == 34 and m["arcs"] == 156
