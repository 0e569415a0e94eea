"""Tarballs (SuiteSparse .tar.gz and the other compressions): trailing data after the
compressed archive is refused as for a plain compressed file (one line naming the
file), a block that ends the member list without being its end is refused, and what
tar itself ignores (the rest of the last record after the end blocks) is ignored."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from tests.conftest import DATA

from ._ingest_helpers import arcs
from .test_ingest_compressed import COMPRESSORS

CODEC = {"gz": "gzip", "xz": "xz", "bz2": "bzip2", "zst": "zstd"}


def _tar(*members) -> bytes:
    """A plain tar of ``(name, bytes)`` members (record padding as tarfile writes it)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


KARATE = (DATA / "karate.mtx").read_bytes()
#: a SuiteSparse extra member (a 1 x 1 empty matrix), not the archive's graph
GCS = ("karate/karate_gcs.mtx", b"%%MatrixMarket matrix coordinate pattern general\n1 1 0\n")


def _tarball(tmp_path, raw, ext):
    """``karate.tar`` holding ``raw`` (a tar's bytes), compressed as ``ext`` (None: plain)."""
    p = tmp_path / ("karate.tar" + (f".{ext}" if ext else ""))
    p.write_bytes(COMPRESSORS[ext](bytes(raw)) if ext else bytes(raw))
    return p


@pytest.fixture(scope="module")
def plain_arcs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    ingest(DATA / "karate.mtx", d / "k.parquet")
    return arcs(d / "k.parquet")


def _same(a, b):
    return all((x == y).all() for x, y in zip(a, b))


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
@pytest.mark.parametrize("tail", [b"GARBAGE", b"\n", b"\0\0\0"], ids=["garbage", "newline", "3-zeros"])
def test_trailing_data_after_a_compressed_tarball_refused(tmp_path, ext, tail):
    # .tar.gz, .tar.xz and .tar.bz2 ingested the member and dropped what followed the
    # compressed archive without a word (tarfile stops at the archive's end block and
    # LZMAFile/BZ2File end quietly at data that is not a stream); plain .gz/.xz/.bz2
    # files refuse it (test_ingest_truncated)
    if ext == "gz" and tail == b"\0\0\0":
        pytest.skip("gzip allows zero padding after a member (gzip -d does too)")
    p = tmp_path / f"karate.tar.{ext}"
    p.write_bytes(COMPRESSORS[ext](_tar(("karate/karate.mtx", KARATE))) + tail)
    out = tmp_path / "k.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out)
    e = ei.value
    assert e.path == str(p) and e.line is None, e
    assert str(e).startswith(f"{p}: ") and "\n" not in str(e)
    assert "tar archive" in e.message and CODEC[ext] in e.message, e
    assert not out.exists() and sorted(f.name for f in tmp_path.iterdir()) == [p.name]


def test_trailing_garbage_message_names_the_bytes(tmp_path):
    good = COMPRESSORS["xz"](_tar(("karate/karate.mtx", KARATE)))
    p = tmp_path / "karate.tar.xz"
    p.write_bytes(good + b"GARBAGE")
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "k.parquet")
    assert (f"7 bytes after xz stream 1 (from compressed byte {len(good):,}) are not xz data"
            in ei.value.message)


@pytest.mark.parametrize("ext,tail", [("gz", b"\0" * 8), ("xz", b"\0" * 4), ("gz", b""), ("xz", b""),
                                      ("bz2", b""), ("zst", b"")])
def test_padding_and_clean_ends_still_read(tmp_path, ext, tail, plain_arcs):
    p = tmp_path / f"karate.tar.{ext}"
    p.write_bytes(COMPRESSORS[ext](_tar(("karate/karate_extra.mtx", b"x\n"), ("karate/karate.mtx", KARATE))) + tail)
    meta = ingest(p, tmp_path / "k.parquet")
    assert meta["source_member"] == "karate/karate.mtx"
    assert _same(arcs(tmp_path / "k.parquet"), plain_arcs)


@pytest.mark.parametrize("ext", ["xz", "bz2", "gz"])
def test_an_archive_split_over_streams_is_read_whole(tmp_path, ext, plain_arcs):
    # pixz / pbzip2 / pigz -i write one archive as several streams: that is not trailing data
    raw = _tar(("karate/karate.mtx", KARATE))
    cut = len(raw) // 3
    p = tmp_path / f"karate.tar.{ext}"
    p.write_bytes(COMPRESSORS[ext](raw[:cut]) + COMPRESSORS[ext](raw[cut:]))
    ingest(p, tmp_path / "k.parquet")
    assert _same(arcs(tmp_path / "k.parquet"), plain_arcs)


@pytest.mark.parametrize("ext", [None, "gz", "xz"])
def test_old_buffer_bytes_after_the_end_blocks_ignored_as_tar_does(tmp_path, ext, plain_arcs):
    # SuiteSparse's own tarballs (Lederberg.tar.gz) carry old buffer contents between the
    # two end blocks and the end of the last record; tar ignores them, so does ingest
    raw = bytearray(_tar(("karate/karate.mtx", KARATE)))
    end = 512 + len(KARATE) + (-len(KARATE) % 512) + 1024  # header, data blocks, the two end blocks
    assert not raw[end - 1024:].strip(b"\0") and end < len(raw)
    raw[end:] = (b"1988\n" * len(raw))[: len(raw) - end]
    p = _tarball(tmp_path, raw, ext)
    ingest(p, tmp_path / "k.parquet")
    assert _same(arcs(tmp_path / "k.parquet"), plain_arcs)


@pytest.mark.parametrize("ext", [None, "gz", "bz2"])
def test_a_damaged_header_that_ends_the_member_list_refused(tmp_path, ext):
    # tarfile ends its member list quietly at a block that is not a valid header: the
    # files after it were dropped, and here the archive's main matrix with them (the
    # extra member was read as the graph)
    raw = bytearray(_tar(GCS, ("karate/karate.mtx", KARATE)))
    second = 512 + 512  # the first member's header and its one data block
    assert raw[second + 257:second + 262] == b"ustar"
    raw[second + 148:second + 156] = b"9999999\0"  # its checksum
    p = _tarball(tmp_path, raw, ext)
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "k.parquet")
    e = ei.value
    assert e.path == str(p) and "damaged tar archive" in e.message and f"byte {second:,}" in e.message, e
    assert "after 1 files" in e.message


@pytest.mark.parametrize("ext", [None, "gz"])
def test_a_lone_zero_block_before_more_files_refused(tmp_path, ext):
    # tarfile ends the member list at the first zero block, and so does GNU tar 1.34
    # (it warns "A lone zero block" and lists only the files before it): the files
    # after it would be dropped without a word
    one = _tar(GCS)
    end = 512 + 512  # its header and one data block; the end blocks follow
    raw = one[:end] + b"\0" * 512 + _tar(("karate/karate.mtx", KARATE))
    p = _tarball(tmp_path, raw, ext)
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "k.parquet")
    e = ei.value
    assert e.path == str(p) and "lone zero block" in e.message and f"byte {end:,}" in e.message, e
    # the message must not claim that tar reads the files after it: tar stops there too
    assert "tar would read" not in e.message, e
    assert "tar and tarfile both stop before" in e.message and "archive is damaged" in e.message, e


def test_the_real_suitesparse_tarball_still_reads(shared_data, tmp_path):
    meta = ingest(shared_data / "mtx" / "Lederberg.tar.gz", tmp_path / "l.parquet")
    assert meta["arcs"] == 41601 and meta["source_member"] == "Lederberg/Lederberg.mtx"


def test_trailing_garbage_cli_one_line(tmp_path):
    p = tmp_path / "karate.tar.bz2"
    p.write_bytes(COMPRESSORS["bz2"](_tar(("karate/karate.mtx", KARATE))) + b"GARBAGE")
    env = dict(os.environ, COLUMNS="400")
    r = subprocess.run([sys.executable, "-c", "import sys; from gpu_sssp.workflows.cli import main; "
                        "sys.exit(main())", "ingest", str(p), "-o", str(tmp_path / "k.parquet")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert "Traceback" not in err and err.startswith(f"error: {p}: ") and len(err.splitlines()) == 1, err
    assert "bzip2" in err and "trailing garbage" in err
    assert sorted(f.name for f in tmp_path.iterdir()) == [p.name]


@pytest.mark.parametrize("ext", [None, "gz", "xz", "zst"])
def test_a_second_archive_appended_is_refused(tmp_path, ext):
    # cat a.tar b.tar: tar (without -i) and tarfile stop at a's end blocks and drop b's
    # files without a word; the ingest read a's graph and said nothing of the other
    first = _tar(GCS)
    assert len(first) % tarfile.RECORDSIZE == 0
    raw = first + _tar(("karate/karate.mtx", KARATE))
    p = _tarball(tmp_path, raw, ext)
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "k.parquet")
    e = ei.value
    assert e.path == str(p) and e.line is None and "\n" not in str(e), e
    assert f"another tar archive starts at byte {len(first):,}" in e.message and "after this one's end (1 files)" \
        in e.message, e
    assert sorted(f.name for f in tmp_path.iterdir()) == [p.name]


def test_a_header_inside_the_last_record_is_old_buffer_bytes(tmp_path, plain_arcs):
    # a stale header left in the last record's padding (buffer reuse) is not an archive:
    # only a record's first block can start one
    raw = bytearray(_tar(("karate/karate.mtx", KARATE)))
    end = 512 + len(KARATE) + (-len(KARATE) % 512) + 1024
    stale = _tar(("old/old.mtx", b"x\n"))[:512]
    assert len(raw) - end >= 1024
    raw[end + 512:end + 1024] = stale
    p = tmp_path / "karate.tar"
    p.write_bytes(bytes(raw))
    ingest(p, tmp_path / "k.parquet")
    assert _same(arcs(tmp_path / "k.parquet"), plain_arcs)


GR1 = b"p sp 3 2\na 1 2 5\na 2 3 7\n"
GR2 = b"p sp 3 1\na 1 3 1\n"


def test_two_graph_files_none_named_after_the_archive_refused(tmp_path):
    # the shorter name was read without a word (and the other graph dropped)
    p = tmp_path / "roads.tar"
    p.write_bytes(_tar(("ny.gr", GR1), ("bay.gr", GR2)))
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "r.parquet")
    e = ei.value
    assert e.path == str(p) and "holds 2 files and none is named after it (roads): bay.gr, ny.gr" in e.message, e
    assert sorted(f.name for f in tmp_path.iterdir()) == [p.name]


def test_the_member_named_after_the_archive_or_a_lone_one_is_read(tmp_path):
    p = tmp_path / "ny.tar"
    p.write_bytes(_tar(("bay.gr", GR2), ("ny.gr", GR1)))
    assert ingest(p, tmp_path / "a.parquet")["source_member"] == "ny.gr"
    q = tmp_path / "whatever.tar"
    q.write_bytes(_tar(("data/ny.gr", GR1)))
    meta = ingest(q, tmp_path / "b.parquet")
    assert meta["source_member"] == "data/ny.gr" and meta["vertices"] == 3


def test_suitesparse_extras_beside_a_renamed_archive(tmp_path, plain_arcs):
    # a downloaded copy renamed (karate (1).tar): the matrix is still the .mtx whose
    # other .mtx members are its extras (karate_gcs.mtx)
    p = tmp_path / "karate (1).tar"
    p.write_bytes(_tar(GCS, ("karate/karate.mtx", KARATE), ("karate/README", b"x\n")))
    assert ingest(p, tmp_path / "k.parquet")["source_member"] == "karate/karate.mtx"
    assert _same(arcs(tmp_path / "k.parquet"), plain_arcs)
    q = tmp_path / "two (1).tar"
    q.write_bytes(_tar(("a/karate.mtx", KARATE), ("a/other.mtx", KARATE)))
    with pytest.raises(InputError, match=r"holds 2 matrices and none is named after it"):
        ingest(q, tmp_path / "q.parquet")


def test_ingest_table_names_the_member(tmp_path):
    from gpu_sssp.workflows.cmd_ingest import summary_table
    from rich.console import Console

    p = tmp_path / "ny.tar"
    p.write_bytes(_tar(("x/ny.gr", GR1)))
    meta = ingest(p, tmp_path / "a.parquet")
    con = Console(width=200, record=True)
    con.print(summary_table(meta, tmp_path / "a.parquet"))
    text = con.export_text()
    assert "member" in text and "x/ny.gr" in text


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
@pytest.mark.parametrize("ext", [None] + sorted(COMPRESSORS))
def test_a_closed_source_leaves_no_file_open(tmp_path, ext):
    # GzipFile(fileobj=...) (and the xz/bzip2/zstd readers) do not close the file they
    # were given: each opening of a compressed tarball (and each reopen of a backward
    # seek) left a descriptor that only the cyclic garbage collector closed
    import gc

    from gpu_sssp.pipeline.ingest._source import Source

    raw = _tar(("karate/karate.mtx", KARATE))
    p = tmp_path / ("karate.tar" + (f".{ext}" if ext else ""))
    p.write_bytes(COMPRESSORS[ext](raw) if ext else raw)
    g = tmp_path / ("karate.mtx" + (f".{ext}" if ext else ""))
    g.write_bytes(COMPRESSORS[ext](KARATE) if ext else KARATE)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = _open_fds()
        kept = []
        for _ in range(50):
            for f in (p, g):
                s = Source(f)
                assert s.stream.read() == KARATE
                s.close()
                kept.append(s)  # a caller may keep a closed Source (its member, its name)
        assert _open_fds() == before
        if ext == "gz":
            # a member past the reader's 1 MiB buffer: its extraction seeks back, a reopen
            big = bytes(range(256)) * (3 << 12)
            b = tmp_path / "big.tar.gz"
            b.write_bytes(COMPRESSORS["gz"](_tar(("big/big.txt", big))))
            for _ in range(5):
                s = Source(b)
                assert s.stream.read() == big
                s.close()
                kept.append(s)
            assert _open_fds() == before
        del kept, s
    finally:
        if was:
            gc.enable()


def test_reading_a_compressed_tarball_raises_no_resource_warning(tmp_path):
    p = tmp_path / "karate.tar.gz"
    p.write_bytes(COMPRESSORS["gz"](_tar(("karate/karate.mtx", KARATE))))
    q = tmp_path / "karate.tar.xz"
    q.write_bytes(COMPRESSORS["xz"](_tar(("karate/karate.mtx", KARATE))))
    code = ("import gc, sys\n"
            "from gpu_sssp.pipeline.ingest._source import Source\n"
            "from gpu_sssp.pipeline.ingest import ingest\n"
            "for f in sys.argv[1:3]:\n"
            "    for _ in range(3):\n"
            "        s = Source(f); s.stream.read(); s.close()\n"
            "    ingest(f, sys.argv[3])\n"
            "gc.collect()\n")
    r = subprocess.run([sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", code,
                        str(p), str(q), str(tmp_path / "k.parquet")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ResourceWarning" not in r.stderr, r.stderr


def _gr_tar(weight, *, pad=0, ext=None) -> bytes:
    """A tarball of one DIMACS graph ``g.gr`` (3 vertices, arcs 1->2 of ``weight`` and
    2->3), its arcs after ``pad`` bytes of comment lines."""
    comments = b"".join(b"c " + b"x" * 97 + b"\n" for _ in range(pad // 100))
    text = b"p sp 3 2\n" + comments + f"a 1 2 {weight}\na 2 3 1\n".encode()
    raw = _tar(("g.gr", text))
    return COMPRESSORS[ext](raw) if ext else raw


@pytest.fixture
def still_stat(monkeypatch):
    """The input's stat as load_graph sees it does not move (an edit within one
    timestamp tick), as graph._verified's SHA-256 check assumes can happen."""
    import gpu_sssp.pipeline.graph as G

    import gpu_sssp.pipeline.ingest as I

    frozen = {}
    real = G._stat
    monkeypatch.setattr(G, "_stat", lambda path: frozen.setdefault(str(path), real(path)))
    # ingest's own look at the stat before it writes (pipeline.ingest._refuse_changed) too
    states = {}
    real_state = I._input_state
    monkeypatch.setattr(I, "_input_state", lambda path: states.setdefault(str(path), real_state(path)))


@pytest.mark.parametrize("ext", [None, "gz", "xz"])
@pytest.mark.parametrize("pad", [0, 3 << 20], ids=["small", "past-the-buffer"])
def test_an_edit_after_the_read_of_a_tarball_is_not_served_from_the_cache(tmp_path, monkeypatch, still_stat,
                                                                          ext, pad):
    # Source.sha256() hashed the tarball on disk again after the read: an edit that
    # landed before it, its stat as it was, recorded the new content's SHA-256 beside
    # the old content's graph, and every later load verified it and served that graph
    import hashlib

    import gpu_sssp.pipeline.graph as G
    from gpu_sssp.pipeline.ingest import read_meta
    from gpu_sssp.pipeline.ingest._source import Source

    old, new = _gr_tar(5, pad=pad, ext=ext), _gr_tar(7, pad=pad, ext=ext)
    p = tmp_path / "g.tar" if ext is None else tmp_path / f"g.tar.{ext}"
    p.write_bytes(old)
    real_sha = Source.sha256
    edits = []

    def edit_then_hash(self):  # the edit lands after the member was read
        if not edits:
            edits.append(1)
            p.write_bytes(new)
        return real_sha(self)

    monkeypatch.setattr(Source, "sha256", edit_then_hash)
    g1 = G.load_graph(p, cache_dir=tmp_path / "cache")
    assert sorted(int(w) for w in g1.weights) == [1, 5]  # the content it read
    (copy,) = (tmp_path / "cache").glob("*.parquet")
    assert read_meta(copy)["source_sha256"] == hashlib.sha256(old).hexdigest()
    monkeypatch.setattr(Source, "sha256", real_sha)
    g2 = G.load_graph(p, cache_dir=tmp_path / "cache")
    assert sorted(int(w) for w in g2.weights) == [1, 7]


@pytest.mark.parametrize("ext", [None, "gz"])
def test_a_tarball_edited_between_its_headers_and_its_member_is_read_again(tmp_path, monkeypatch, still_stat,
                                                                           ext):
    # the headers are read first (the whole archive), the member again after: an edit
    # in between, in the same timestamp tick, gave a member read at the old offsets
    # of the new bytes (here cut short: its arcs missing), and a failed load
    import hashlib

    import gpu_sssp.pipeline.graph as G
    from gpu_sssp.pipeline.ingest import read_meta
    from gpu_sssp.pipeline.ingest._source import LineCursor

    old = _gr_tar(5, pad=2 << 20, ext=ext)
    new = _gr_tar(7, pad=(2 << 20) + 4000, ext=ext)  # past the member's old end
    p = tmp_path / "g.tar" if ext is None else tmp_path / f"g.tar.{ext}"
    p.write_bytes(old)
    real_init = LineCursor.__init__
    edits = []

    def open_then_edit(self, source, *a, **k):  # the ingest's Source has read the headers
        real_init(self, source, *a, **k)
        if not edits:
            edits.append(1)
            p.write_bytes(new)

    monkeypatch.setattr(LineCursor, "__init__", open_then_edit)
    g = G.load_graph(p, cache_dir=tmp_path / "cache")
    assert sorted(int(w) for w in g.weights) == [1, 7] and edits
    (copy,) = (tmp_path / "cache").glob("*.parquet")
    assert read_meta(copy)["source_sha256"] == hashlib.sha256(new).hexdigest()


@pytest.mark.parametrize("ext", [None, "gz", "zst"])
def test_sha256_of_a_tarball_edited_between_its_reads_raises(tmp_path, ext):
    from gpu_sssp.pipeline.ingest._source import ChangedWhileRead, Source

    old, new = _gr_tar(5, pad=2 << 20, ext=ext), _gr_tar(7, pad=2 << 20, ext=ext)
    p = tmp_path / "g.tar" if ext is None else tmp_path / f"g.tar.{ext}"
    p.write_bytes(old)
    with Source(p) as src:  # its headers read: the whole file
        p.write_bytes(new)  # the same layout, another weight
        assert b"a 1 2 7" in src.stream.read()  # its member, read again from the start
        with pytest.raises(ChangedWhileRead) as ei:
            src.sha256()
    assert ei.value.path == src.display and "changed while it was read" in ei.value.message


@pytest.mark.parametrize("ext", [None, "gz", "bz2"])
def test_sha256_of_a_tarball_is_that_of_its_bytes_read_once_more_at_most(tmp_path, monkeypatch, ext):
    # the hash is taken as the file is read (its headers, then its member), not by a
    # third read of the file
    import hashlib

    import gpu_sssp.pipeline.ingest._source as S

    data = _gr_tar(5, pad=2 << 20, ext=ext)
    p = tmp_path / "g.tar" if ext is None else tmp_path / f"g.tar.{ext}"
    p.write_bytes(data)
    opened = []
    real_fileio = io.FileIO

    def counting(path, *a, **k):
        opened.append(path)
        return real_fileio(path, *a, **k)

    monkeypatch.setattr(S.io, "FileIO", counting)
    monkeypatch.setattr(S, "sha256_file", lambda path: pytest.fail("hashed the file again"))
    with S.Source(p) as src:
        src.stream.read()
        assert src.sha256() == hashlib.sha256(data).hexdigest()
    assert len(opened) <= 2
