"""Found by the 2026-12-07 (night) hostile-input audit:

- one long line before the records (a comment, a header) took time quadratic in its
  length (a 60 MB comment line: a minute; a 100 KB .gz holding one 100 MB line: two);
- a record line longer than a chunk grew its buffer without bound (a 100 KB .gz took
  2 GB and Arrow aborted under ``ulimit -v``);
- an integer weight was rounded without a word where the weights are read as reals
  (a real weight elsewhere in the file, or --weight-type float32/float64);
- a file that reads both as a METIS graph and as an edge list was refused with
  ``--format edgelist`` too; ``.lzma`` data was read as text; a text file with
  ``ustar`` at byte 257 was taken for a tar archive; parallel arcs were miscounted for
  headers of more than 2**31 vertices past 3e9 vertices.
"""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import _source
from tests.pipeline._ingest_helpers import ingest_arcs


@pytest.mark.parametrize("where", ["comment", "between"])
def test_a_long_comment_line_is_read_whole(tmp_path, where):
    """The line reader's buffer (kept with an offset, grown geometrically) hands out the
    same lines: a 3 MB comment before or after the header, the arcs after it."""
    long = b"c " + b"x" * (3 << 20) + b"\n"
    body = b"p sp 3 2\n" + (long if where == "between" else b"") + b"a 1 2 3\na 2 3 4\n"
    src = tmp_path / "g.gr"
    src.write_bytes((long if where == "comment" else b"") + body)
    (s, d, w), meta = ingest_arcs(src, tmp_path)
    assert (s.tolist(), d.tolist(), w.tolist()) == ([1, 2], [2, 3], [3, 4])


def test_many_short_header_lines_and_unread(tmp_path):
    """Comment lines by the thousand, then the header and the first record put back."""
    src = tmp_path / "g.gr"
    src.write_bytes(b"c hi\n" * 50_000 + b"p sp 3 2\na 1 2 3\na 2 3 4\n")
    (s, d, w), meta = ingest_arcs(src, tmp_path)
    assert (s.tolist(), d.tolist(), w.tolist()) == ([1, 2], [2, 3], [3, 4])


def test_a_line_past_the_line_readers_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_source, "MAX_LINE", 1 << 18)
    src = tmp_path / "g.gr.gz"
    with gzip.open(src, "wb") as f:
        f.write(b"c " + b"x" * (1 << 20) + b"\np sp 2 1\na 1 2 3\n")
    with pytest.raises(InputError, match=r"g\.gr\.gz:1: line longer than 262,144 bytes \(no line break\)"):
        ingest_arcs(src, tmp_path)


def test_a_record_line_past_the_chunk_readers_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_source, "MAX_RECORD_LINE", 1 << 18)
    src = tmp_path / "g.gr.gz"
    with gzip.open(src, "wb") as f:
        f.write(b"p sp 3 2\na 1 2 3\na 1 2 " + b"1" * (1 << 21) + b"\n")
    with pytest.raises(InputError, match=r"g\.gr\.gz:3: line longer than [\d,]+ bytes \(no line break\): not a "
                                         r"record line"):
        ingest_arcs(src, tmp_path, chunk_bytes=1 << 16)


@pytest.mark.parametrize("text, weight_type, line, word", [
    (b"p sp 3 3\na 1 2 3\na 2 3 16777217\na 3 1 2.5\n", "float32", 3, "float32"),
    (b"p sp 3 3\na 1 2 3.0\na 2 3 9007199254740993\na 3 1 2\n", None, 3, "float64"),
    (b"p sp 3 3\na 1 2 3\na 2 3 9007199254740993\na 3 1 2.5\n", "float64", 3, "float64"),
    (b"p sp 3 3\na 1 2 3\na 2 3 -9007199254740993\na 3 1 2.5\n", "float64", 3, "float64"),
    (b"0 1 0.5\n1 2 16777217\n", "float32", 2, "float32"),
])
def test_an_integer_weight_is_refused_not_rounded_in_a_real_column(tmp_path, text, weight_type, line, word):
    src = tmp_path / ("g.el" if text[0:1] == b"0" else "g.gr")
    src.write_bytes(text)
    kw = {"weight_type": weight_type} if weight_type else {}
    with pytest.raises(InputError, match=rf"{src.name}:{line}: weight -?\d+ is an integer that {word} cannot hold "
                                         r"exactly: it would be stored as -?\d+ .*to accept the rounding"):
        ingest_arcs(src, tmp_path, **kw)


@pytest.mark.parametrize("text, weight_type, want", [
    # written as reals: rounded as reals are
    (b"p sp 3 2\na 1 2 16777217.0\na 2 3 2.5\n", "float32", [16777216.0, 2.5]),
    (b"p sp 3 2\na 1 2 9007199254740993.0\na 2 3 2.5\n", "float64", [9007199254740992.0, 2.5]),
    # integers the type holds exactly (2**53, 2**24 + 2)
    (b"p sp 3 2\na 1 2 9007199254740992\na 2 3 2.5\n", "float64", [9007199254740992.0, 2.5]),
    (b"p sp 3 2\na 1 2 16777218\na 2 3 2.5\n", "float32", [16777218.0, 2.5]),
])
def test_reals_and_exact_integers_in_a_real_column_are_kept(tmp_path, text, weight_type, want):
    src = tmp_path / "g.gr"
    src.write_bytes(text)
    (s, d, w), _ = ingest_arcs(src, tmp_path, weight_type=weight_type)
    assert w.tolist() == want


def test_a_matrixmarket_real_field_declares_its_values_real(tmp_path):
    """'123456789012345678' in a real matrix is a real number: rounded to float64, as
    the field says (not refused as an integer)."""
    src = tmp_path / "m.mtx"
    src.write_bytes(b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 123456789012345678\n2 3 2.5\n")
    (s, d, w), _ = ingest_arcs(src, tmp_path)
    assert w.tolist() == [float(123456789012345678), 2.5]


def test_a_file_that_reads_both_ways_is_an_edge_list_when_asked(tmp_path, caplog):
    src = tmp_path / "a.el"
    src.write_bytes(b"2 2\n2 1\n1 2\n")
    with pytest.raises(InputError, match=r"looks like a METIS graph .*: pass format='metis' \(format='edgelist' "
                                         r"reads it as an edge list\)"):  # (a Python caller's words)
        ingest_arcs(src, tmp_path)
    with caplog.at_level("WARNING", logger="gpu_sssp"):
        (s, d, w), meta = ingest_arcs(src, tmp_path, format="edgelist")
    assert sorted(zip(s.tolist(), d.tolist())) == [(1, 2), (2, 1), (2, 2)]
    assert "it also reads as a METIS graph" in caplog.text


def test_legacy_lzma_is_refused_in_one_line(tmp_path):
    import lzma

    src = tmp_path / "g.gr.lzma"
    src.write_bytes(lzma.compress(b"p sp 2 1\na 1 2 3\n", format=lzma.FORMAT_ALONE))
    with pytest.raises(InputError, match=r"g\.gr\.lzma: legacy LZMA data \(\.lzma\) is not read"):
        ingest_arcs(src, tmp_path)


def test_ustar_in_a_comment_is_no_tar_archive(tmp_path):
    src = tmp_path / "g.gr"
    comment = b"c " + b"y" * 255 + b"ustar and more\n"
    assert comment[257:262] == b"ustar"
    src.write_bytes(comment + b"p sp 2 1\na 1 2 3\n")
    (s, d, w), _ = ingest_arcs(src, tmp_path)
    assert (s.tolist(), d.tolist(), w.tolist()) == ([1], [2], [3])


def test_parallel_arcs_are_not_miscounted_past_2_to_31_ids(tmp_path):
    src = tmp_path / "g.gr"
    src.write_bytes(b"p sp 4294967306 2\na 1 4294967301 1\na 1 5 1\n")
    _, meta = ingest_arcs(src, tmp_path, max_vertices=1 << 40, max_isolated_vertices=1 << 40)
    assert meta["parallel_arcs"] in (0, None), meta["parallel_arcs"]


def test_a_symmetric_matrix_that_is_not_square_is_refused(tmp_path):
    """A symmetric matrix is square by definition; a 3 x 4 one was read (as 4 vertices)."""
    src = tmp_path / "m.mtx"
    src.write_bytes(b"%%MatrixMarket matrix coordinate integer symmetric\n3 4 1\n2 1 5\n")
    with pytest.raises(InputError, match=r"m\.mtx:2: a symmetric matrix must be square, got 3 x 4"):
        ingest_arcs(src, tmp_path)


def test_a_coordinate_file_with_a_real_after_integers_is_read_as_reals(tmp_path):
    """It was refused as "non-numeric x '1.5' (expected a decimal integer)": the first
    line had made the columns integers."""
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline.ingest import ingest

    src = tmp_path / "c.co"
    src.write_bytes(b"p aux sp co 3\nv 1 1 2\nv 2 1.5 3\nv 3 4 -2.25\n")
    ingest(src, tmp_path / "c.co.parquet")
    t = pq.read_table(tmp_path / "c.co.parquet")
    assert t.to_pylist() == [{"vertex": 1, "x": 1.0, "y": 2.0}, {"vertex": 2, "x": 1.5, "y": 3.0},
                             {"vertex": 3, "x": 4.0, "y": -2.25}]
    assert str(t.schema.field("x").type) == "double"
