"""Tarballs written with records larger than tar's default 10 KiB (``tar -b 40``: 20 KiB,
``tar -b 64``: 32 KiB) are read, the rest of their last record ignored as tar ignores it,
while a second archive appended with ``cat`` is still refused."""
from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile

import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from tests.conftest import DATA

from ._ingest_helpers import arcs

GR = DATA / "rome99.gr"
#: GNU tar's blocking factors: its default (10 KiB records), then 20 and 32 KiB records
FACTORS = [20, 40, 64]


@pytest.fixture(scope="module")
def plain_arcs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    ingest(GR, d / "r.parquet")
    return arcs(d / "r.parquet")


def _same(a, b):
    return all((x == y).all() for x, y in zip(a, b))


def _members(notes: int):
    """rome99.gr then ``notes`` small files (a header and one data block each)."""
    yield "rome99.gr", GR.read_bytes()
    for i in range(notes):
        yield f"notes/note{i:03d}.txt", b"n" * 300


def _stream(members) -> tuple[bytes, int]:
    """A tar's blocks up to and with its two end blocks: (bytes, their length)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1170151741
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        tar.getmembers()
        end = tar.offset + 2 * tarfile.BLOCKSIZE
    return raw[:end], end


def _reusing_writer(body: bytes, record: int) -> bytes:
    """``body`` (a tar's blocks and end blocks) in records of ``record`` bytes as a writer
    that reuses one record buffer writes them: the last record keeps the previous record's
    bytes after the end blocks (as SuiteSparse's Lederberg.tar.gz, in 10 KiB records:
    every byte after its end blocks equals the byte 10,240 before it)."""
    out = bytearray()
    buf = bytearray(record)
    for i in range(0, len(body), record):
        chunk = body[i:i + record]
        buf[:len(chunk)] = chunk
        out += buf
    return bytes(out)


def _stale_header_archive(factor: int) -> tuple[bytes, int]:
    """A valid archive in records of ``factor`` blocks whose last record holds, after its
    end blocks, an old header at a 10 KiB boundary (from the previous record); and that
    boundary."""
    record = factor * tarfile.BLOCKSIZE
    for notes in range(200):
        body, end = _stream(_members(notes))
        raw = _reusing_writer(body, record)
        last = len(raw) - record
        for at in range(-(-end // tarfile.RECORDSIZE) * tarfile.RECORDSIZE, len(raw), tarfile.RECORDSIZE):
            if last > 0 and raw[at + 257:at + 262] == b"ustar":
                return raw, at
    raise AssertionError("no layout puts an old header at a 10 KiB boundary")


def _gnu_tar(tmp_path, factor, gz=False, name="rome99.tar"):
    """``tar -b FACTOR -cf`` (GNU tar) of rome99.gr and a note, as ``name``."""
    if shutil.which("tar") is None:
        pytest.skip("no tar command")
    src = tmp_path / f"src{factor}"
    (src / "notes").mkdir(parents=True, exist_ok=True)
    shutil.copy(GR, src / "rome99.gr")
    (src / "notes" / "a.txt").write_text("a note\n" * 3000)
    p = tmp_path / f"b{factor}" / (name + (".gz" if gz else ""))
    p.parent.mkdir(exist_ok=True)
    subprocess.run(["tar", "-b", str(factor), "-c" + ("z" if gz else "") + "f", str(p), "-C", str(src),
                    "notes", "rome99.gr"], check=True, capture_output=True)
    return p


@pytest.mark.parametrize("gz", [False, True], ids=["tar", "tar.gz"])
@pytest.mark.parametrize("factor", FACTORS)
def test_gnu_tar_archives_in_large_records_read(tmp_path, factor, gz, plain_arcs):
    p = _gnu_tar(tmp_path, factor, gz)
    raw = gzip.decompress(p.read_bytes()) if gz else p.read_bytes()
    assert len(raw) % (factor * tarfile.BLOCKSIZE) == 0  # records of that size
    meta = ingest(p, tmp_path / "r.parquet")
    assert meta["source_member"] == "rome99.gr"
    assert _same(arcs(tmp_path / "r.parquet"), plain_arcs)


@pytest.mark.parametrize("gz", [False, True], ids=["tar", "tar.gz"])
@pytest.mark.parametrize("factor", [40, 64])
def test_an_old_header_at_a_10k_boundary_of_a_large_last_record_is_not_an_archive(tmp_path, factor, gz,
                                                                                 plain_arcs):
    # a writer that reuses its record buffer (as the one of SuiteSparse's tarballs does)
    # with records larger than 10 KiB leaves the previous record's bytes after the end
    # blocks, a header among them at a 10 KiB boundary: the archive was refused as "another
    # tar archive" though tar and tarfile read it without a word
    raw, at = _stale_header_archive(factor)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        assert tar.getnames()[0] == "rome99.gr"
    p = tmp_path / ("rome99.tar" + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(raw) if gz else raw)
    meta = ingest(p, tmp_path / "r.parquet")
    assert meta["source_member"] == "rome99.gr"
    assert _same(arcs(tmp_path / "r.parquet"), plain_arcs)


def _refused_as_appended(p, tmp_path, at: int):
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "r.parquet")
    e = ei.value
    assert e.path == str(p) and f"another tar archive starts at byte {at:,}" in e.message, e
    assert not (tmp_path / "r.parquet").exists()


@pytest.mark.parametrize("gz", [False, True], ids=["tar", "tar.gz"])
@pytest.mark.parametrize("factor", [20, 40])
def test_gnu_tar_archives_in_large_records_joined_with_cat_refused(tmp_path, factor, gz):
    # (the second archive is looked for at 10 KiB boundaries: where one of a blocking
    # factor that is not a multiple of 20, -b 64, ends only by chance)
    first = _gnu_tar(tmp_path, factor)
    second = _gnu_tar(tmp_path, factor, name="other.tar")
    raw = first.read_bytes() + second.read_bytes()
    assert len(first.read_bytes()) % tarfile.RECORDSIZE == 0
    p = tmp_path / ("rome99.tar" + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(raw) if gz else raw)
    _refused_as_appended(p, tmp_path, len(first.read_bytes()))


@pytest.mark.parametrize("factor", [40, 64])
def test_an_archive_with_old_bytes_in_its_last_record_joined_with_cat_refused(tmp_path, factor):
    # the old header in the first archive's padding is not taken for another archive, the
    # archive after it is (whether the old header's members run into it or not)
    first, _ = _stale_header_archive(factor)
    second = _stream([("other.gr", b"p sp 2 1\na 1 2 3\n")])[0] + b"\0" * tarfile.RECORDSIZE
    p = tmp_path / "rome99.tar"
    p.write_bytes(first + second)
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "r.parquet")
    assert "another tar archive starts at byte" in ei.value.message, ei.value


class _Records(io.RawIOBase):
    """``count`` records, each a tar header of a member of ``size`` bytes then filler,
    made as they are read (no copy of the whole tail in memory)."""

    def __init__(self, count: int, size: int):
        ti = tarfile.TarInfo("old.gr")
        ti.size = size
        self.record = ti.tobuf(format=tarfile.GNU_FORMAT)[:tarfile.BLOCKSIZE]
        self.record += b"\1" * (tarfile.RECORDSIZE - len(self.record))
        self.left, self.at = count * tarfile.RECORDSIZE, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        out = bytearray()
        while len(out) < n:
            off = self.at % tarfile.RECORDSIZE
            piece = self.record[off:off + n - len(out)]
            out += piece
            self.at += len(piece)
        b[:n] = out
        self.left -= n
        return n


def test_many_records_starting_with_headers_of_huge_members_read_in_linear_time():
    # a tail of records each starting with a header whose member runs past the input's
    # end (old or crafted bytes): one chain followed per record; finding the next place
    # to look with min() over all of them was quadratic (32,000 records: 10 s, 1 GiB of
    # such a tail - a few MB gzipped - minutes); it is looked up in a heap now
    import time

    from gpu_sssp.pipeline.ingest._source import _appended_archive

    t0 = time.perf_counter()
    assert _appended_archive(io.BufferedReader(_Records(2_000, 10**12)), 0) is None
    small = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert _appended_archive(io.BufferedReader(_Records(32_000, 10**12)), 0) is None
    large = time.perf_counter() - t0
    # 16 times the records: 16 times the time when linear, 256 when quadratic
    assert large < max(60 * small, 1.5), (small, large)
