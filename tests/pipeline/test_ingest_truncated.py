"""Truncated or corrupt compressed inputs: one InputError naming the file, how far the
text got (line, bytes) and what went wrong; no output left behind."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading

import pytest
import zstandard

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest._source import zstd_incomplete
from tests.conftest import DATA

from .test_ingest_compressed import COMPRESSORS

CODEC = {"gz": "gzip", "xz": "xz", "bz2": "bzip2", "zst": "zstd"}


def _reader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("sssp-ingest-read") and t.is_alive()]


def _truncated(tmp_path, ext, keep, name="rome99.gr"):
    blob = COMPRESSORS[ext]((DATA / name).read_bytes())
    p = tmp_path / f"{name}.{ext}"
    p.write_bytes(blob[: keep(len(blob))])
    return p


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
@pytest.mark.parametrize("keep", [lambda n: n // 2, lambda n: n - 4, lambda n: 12],
                         ids=["half", "last-bytes", "header-only"])
@pytest.mark.parametrize("chunk", [4096, 16 << 20])
def test_truncated_input_one_error(tmp_path, ext, keep, chunk):
    p = _truncated(tmp_path, ext, keep)
    out = tmp_path / "out" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, chunk_bytes=chunk)
    e = ei.value
    assert str(e).startswith(f"{p}:{e.line}: ")
    assert CODEC[ext] in e.message and "complete lines" in e.message and "bytes of text" in e.message
    # the line is where the readable text stops: every line before it was read whole
    text = (DATA / "rome99.gr").read_bytes()
    # (the line after the last when all the text is readable and only the trailer is cut)
    assert 1 <= e.line <= text.count(b"\n") + 1
    assert f"{e.line - 1:,} complete lines" in e.message
    # no partial output, no temporary, no reader thread left running
    assert not out.exists() and not (out.parent.exists() and any(out.parent.iterdir()))
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted([p.name] + (["out"] if out.parent.exists() else []))
    assert not _reader_threads()


def test_line_is_where_the_text_stops(tmp_path):
    # a graph large enough that the readable part spans many lines and chunks
    text = b"p sp 300001 299999\n" + b"".join(b"a %d %d %d\n" % (i, i + 1, i % 7) for i in range(1, 300000))
    blob = gzip.compress(text)
    p = tmp_path / "g.gr.gz"
    p.write_bytes(blob[: len(blob) * 3 // 4])
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "g.parquet", chunk_bytes=1 << 16)
    e = ei.value
    got = int(e.message.split(" complete lines")[0].rsplit(" ", 1)[1].replace(",", ""))
    nbytes = int(e.message.split(" bytes of text")[0].rsplit("(", 1)[1].replace(",", ""))
    assert got == e.line - 1 and got == text.count(b"\n", 0, nbytes)
    # most of what could be decompressed was read (within the 1 MiB of one failing read)
    assert nbytes > len(text) // 2
    assert "ends early" in e.message and f"of {len(blob) * 3 // 4:,}" in e.message


def test_corrupt_gzip(tmp_path):
    blob = bytearray(gzip.compress((DATA / "rome99.gr").read_bytes()))
    blob[len(blob) // 2: len(blob) // 2 + 64] = b"\xff" * 64
    p = tmp_path / "c.gr.gz"
    p.write_bytes(bytes(blob))
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "c.parquet")
    assert "gzip data" in ei.value.message and ei.value.line is not None
    assert not (tmp_path / "c.parquet").exists()


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
def test_truncated_input_cli(tmp_path, ext):
    p = _truncated(tmp_path, ext, lambda n: n // 2)
    env = dict(os.environ, COLUMNS="400")
    r = subprocess.run([sys.executable, "-c", "import sys; from gpu_sssp.workflows.cli import main; "
                        "sys.exit(main())", "ingest", str(p), "-o", str(tmp_path / "g.parquet")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert "Traceback" not in err and err.startswith(f"error: {p}:")
    assert CODEC[ext] in err and "complete lines" in err
    assert sorted(f.name for f in tmp_path.iterdir()) == [p.name]


def test_zstd_frames_walk():
    c = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    data = b"a 1 2 3\n" * 50000
    one = c.compress(data)
    skip = (0x184D2A53).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"hello"
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        def check(blob):
            f = os.path.join(d, "x.zst")
            with open(f, "wb") as fh:
                fh.write(blob)
            return zstd_incomplete(f)

        assert check(one) is None
        assert check(one + skip + zstandard.ZstdCompressor().compress(b"x" * 300000)) is None
        assert check(b"") is None
        assert "frame 1" in check(one[:-1])            # inside the checksum
        assert "frame 2" in check(one + one[:7])       # inside the next frame's header
        assert "skippable frame 2" in check(one + skip[:-1])
        assert "no zstd frame" in check(one + b"junk")


def test_zstd_multi_frame_file_reads_whole(tmp_path):
    text = (DATA / "rome99.gr").read_bytes()
    half = text.index(b"\n", len(text) // 2) + 1
    p = tmp_path / "r.gr.zst"
    c = zstandard.ZstdCompressor()
    p.write_bytes(c.compress(text[:half]) + c.compress(text[half:]))
    assert ingest(p, tmp_path / "r.parquet")["arcs"] == 8870


_OPENERS = {"gz": gzip.open, "xz": __import__("lzma").open, "bz2": __import__("bz2").open,
            "zst": lambda p: zstandard.ZstdDecompressor().stream_reader(open(p, "rb"))}


@pytest.mark.parametrize("ext", ["gz", "xz", "bz2", "zst"])
def test_truncated_reports_where_the_readable_text_ends(tmp_path, ext):
    # ~2 MB of text (several bz2/zstd blocks), cut at 70 %: the error's line must be
    # the one after the last complete readable line, not an earlier read's boundary
    m = 100000
    text = b"p sp %d %d\n" % (m + 1, m) + b"".join(
        b"a %d %d %d\n" % (i, (i * 7919) % m + 1, (i * 104729) % 9973) for i in range(1, m + 1))
    blob = COMPRESSORS[ext](text)
    p = tmp_path / f"big.gr.{ext}"
    p.write_bytes(blob[: int(len(blob) * 0.7)])
    # a lower bound on the readable text: what small reads get before the error
    got = bytearray()
    f = _OPENERS[ext](p)
    try:
        while True:
            b = f.read(1024)
            if not b:
                break
            got += b
    except Exception:
        pass
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "o.parquet")
    e = ei.value
    lines = e.line - 1
    assert lines >= got.count(b"\n") > 1000, (lines, got.count(b"\n"))
    assert text.startswith(bytes(got)) and e.text_bytes >= len(got)
    assert text[: e.text_bytes].count(b"\n") == lines
    assert f"{lines:,} complete lines ({e.text_bytes:,} bytes of text)" in e.message
