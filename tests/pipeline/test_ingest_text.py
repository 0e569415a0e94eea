"""Text-level input errors: numbers too long for 64 bits, line endings, record counts.
Each is one InputError naming the file and the right line; nothing left behind."""
from __future__ import annotations

import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest, read_sources
from gpu_sssp.workflows.cli import main

from ._ingest_helpers import arcs

D = "9" * 5000  # more digits than int() converts (4,300): it was a ValueError traceback


def _fails(tmp_path, name, text, **kw):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    out = tmp_path / "out" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, **kw)
    assert not out.exists() and not (out.parent.exists() and any(out.parent.iterdir()))
    e = ei.value
    assert str(e).startswith(f"{p}:{e.line}: ") and "\n" not in str(e) and len(str(e)) < 400
    return e


# -- B1: integers longer than 64 bits (and than int()'s 4,300-digit limit) -----------------
LONG = [
    ("w.gr", f"p sp 3 2\na 1 2 5\na 2 3 {D}\n", 3),              # a weight (record parser)
    ("w1.gr", f"p sp 3 2\na 1 2 {D}\na 2 3 5\n", 2),             # the first weight (type sniffing)
    ("id.gr", f"p sp 3 2\na 1 2 5\na {D} 3 5\n", 3),
    ("p.gr", f"c x\np sp {D} 2\na 1 2 5\na 2 3 5\n", 2),         # the header
    ("m.gr", f"p sp 3 {D}\na 1 2 5\n", 1),
    ("e.wel", f"0 1 5\n# c\n1 {D} 5\n", 3),
    ("e1.wel", f"0 1 {D}\n1 2 5\n", 1),
    ("s.mtx", f"%%MatrixMarket matrix coordinate integer general\n% c\n3 3 {D}\n1 2 5\n", 3),
    ("v.mtx", f"%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 3 {D}\n", 4),
    ("h.graph", f"3 {D}\n2\n1 3\n2\n", 1),
    ("n.graph", f"% c\n3 2\n2\n1 {D}\n2\n", 4),
    ("p.pace", f"p tw 3 1\n{D} 2\n", 2),
    ("s.ss", f"p aux sp ss 2\ns 1\ns {D}\n", 3),
]


@pytest.mark.parametrize("name,text,line", LONG, ids=[c[0] for c in LONG])
def test_integer_too_long_for_64_bits(tmp_path, name, text, line):
    e = _fails(tmp_path, name, text)
    assert e.line == line and "99999999999999999999... (5,000 digits) does not fit in 64 bits" in e.message


@pytest.mark.parametrize("tok", ["99999999999999999999", "-9223372036854775809", "+10000000000000000000"])
def test_integer_just_beyond_64_bits(tmp_path, tok):
    e = _fails(tmp_path, "w.gr", f"p sp 3 2\na 1 2 5\na 2 3 {tok}\n")
    assert e.line == 3 and e.message in (f"weight {tok} does not fit in 64 bits",
                                         f"weight {int(tok)} does not fit in 64 bits")
    if not tok.startswith("-"):
        e = _fails(tmp_path, "p.gr", f"p sp 3 {tok}\na 1 2 5\n")
        assert e.line == 1 and e.message == f"integer {tok} does not fit in 64 bits"


def test_leading_zeros_are_not_digits(tmp_path):
    z = "0" * 30
    p = tmp_path / "z.gr"
    p.write_text(f"p sp {z}3 {z}2\na {z}1 2 {z}5\nc x\na 2 {z}3 -{z}7\n")
    ingest(p, tmp_path / "z.parquet")
    s, d, w = arcs(tmp_path / "z.parquet")
    assert s.tolist() == [1, 2] and d.tolist() == [2, 3] and w.tolist() == [5, -7]


def test_sources_file_with_a_long_integer(tmp_path):
    p = tmp_path / "d7.txt"
    p.write_text(f"1\n{D}\n")
    with pytest.raises(InputError) as ei:
        read_sources(p, vertices=3)
    assert ei.value.line == 2 and "(5,000 digits) does not fit in 64 bits" in ei.value.message


def test_long_integer_cli_is_one_line(tmp_path, capsys):
    p = tmp_path / "d1.gr"
    p.write_text(f"p sp 3 2\na 1 2 5\na 2 3 {D}\n")
    assert main(["ingest", "-q", str(p), "-o", str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(f"error: {p}:3: weight 9999") and len(err) < 300


@pytest.mark.parametrize("spec,why", [
    (f"random:1:{D}:7", "HI 99999999999999999999... (5,000 digits) does not fit in 64 bits"),
    (f"random:-{D}:1:7", "LO -9999999999999999999... (5,000 digits) does not fit in 64 bits"),
    (f"random:1:10:{D}", "SEED has 5,000 characters"),
])
def test_weights_spec_with_a_long_integer(spec, why):
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.ingest import parse_weights_spec

    with pytest.raises(UsageError) as ei:
        parse_weights_spec(spec)
    assert why in str(ei.value) and len(str(ei.value)) < 400
    assert parse_weights_spec("random:-000000000000000000000001:5:1") == ("random", (-1, 5), 1)


# -- C1: line endings: LF or CRLF; a lone CR is refused at its line ----------------------
# (pyarrow's parser took a lone CR for a line break and the precise parser for a blank,
# so a file with one was read on the fast path and its errors named the wrong line)
def _arcs_text(n, ending="\n"):
    return f"p sp {n + 1} {n}{ending}" + "".join(f"a {i} {i + 1} {i % 7}{ending}" for i in range(1, n + 1))


@pytest.mark.parametrize("name,text,line", [
    ("cr.gr", "p sp 3 3\na 1 2 5\ra 2 3 1\na 3 1 2 x\n", 2),   # the audit's file
    ("cr2.gr", "p sp 3 3\na 1 2 5\ra 2 3 1\na 3 1 2\n", 2),      # (it ingested)
    ("mac.gr", "p sp 3 3\ra 1 2 5\ra 2 3 1\ra 3 1 2\r", 1),      # classic Mac OS text
    ("c.gr", "c a\rcomment\np sp 3 1\na 1 2 5\n", 1),
    ("crcrlf.gr", "p sp 3 1\na 1 2 5\r\r\n", 2),
    ("e.wel", "0 1 5\n1 2 7\r2 3 1\n", 2),
    ("m.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\r2 3 1\n", 3),
    ("g.graph", "3 2\n2\n1\r3\n2\n", 3),
    ("s.ss", "p aux sp ss 2\ns 1\rs 2\n", 2),
])
@pytest.mark.parametrize("chunk", [4096, 16 << 20])
def test_lone_cr_refused_at_its_line(tmp_path, name, text, line, chunk):
    e = _fails(tmp_path, name, text, chunk_bytes=chunk)
    assert e.line == line and "carriage return (CR) inside the line" in e.message, e


@pytest.mark.parametrize("chunk", [4096, 1 << 20, 16 << 20])
def test_lone_cr_deep_in_a_large_file(tmp_path, chunk):
    # the vectorised check (chunks of 64 KiB and more) and the line count agree
    n = 120000
    text = _arcs_text(n, "\r\n")
    at = 100000  # arc line at + 1: its CRLF becomes a lone CR
    lines = text.split("\r\n")
    lines[at] = lines[at] + "\r" + lines[at + 1]
    del lines[at + 1]
    e = _fails(tmp_path, "big.gr", "\r\n".join(lines), chunk_bytes=chunk)
    assert e.line == at + 1


def test_crlf_reads_as_lf(tmp_path):
    n = 50000
    for ending, name in (("\n", "lf.gr"), ("\r\n", "crlf.gr")):
        (tmp_path / name).write_text(_arcs_text(n, ending), newline="")
        ingest(tmp_path / name, tmp_path / f"{name}.parquet", chunk_bytes=1 << 16)
    a, b = arcs(tmp_path / "lf.gr.parquet"), arcs(tmp_path / "crlf.gr.parquet")
    assert all((x == y).all() for x, y in zip(a, b)) and len(a[0]) == n
    # a CRLF file's errors name the right line too
    lines = _arcs_text(n, "\r\n").split("\r\n")
    lines[40000] = lines[40000].replace("a ", "a x", 1)
    e = _fails(tmp_path, "bad.gr", "\r\n".join(lines), chunk_bytes=1 << 16)
    assert e.line == 40001


# -- C2: fewer records than the header announces: the line where they run out -------------
@pytest.mark.parametrize("name,text,line,what", [
    ("fewer.gr", "p sp 3 4\na 1 2 5\na 2 3 1\na 3 1 2\n", 5, "number of arcs does not match the header"),
    ("fewer2.gr", "c x\np sp 3 4\na 1 2 5\na 2 3 1\na 3 1 2\nc end\n\n", 8, "number of arcs"),
    ("fewer3.gr", "p sp 3 4\na 1 2 5\na 2 3 1\na 3 1 2", 5, "number of arcs"),  # no final newline
    ("fewer.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 5\n2 3 1\n", 5,
     "number of entries does not match the header"),
    ("fewer.pace", "p tw 3 3\n1 2\n2 3\n", 4, "number of edges does not match the header"),
    ("fewer.ss", "p aux sp ss 3\ns 1\ns 2\n", 4, "record count does not match the header"),
])
def test_fewer_records_than_announced_name_the_end(tmp_path, name, text, line, what):
    e = _fails(tmp_path, name, text)
    assert e.line == line and what in e.message, e
    assert f"run out at the end of the file (after line {line - 1})" in e.message


def test_fewer_records_compressed(tmp_path):
    import gzip

    text = "p sp 3 4\na 1 2 5\na 2 3 1\na 3 1 2\n"
    e = _fails(tmp_path, "fewer.gr.gz", gzip.compress(text.encode()))
    assert e.line == 5 and "expected 4 arcs" in e.message and "found 3" in e.message


def test_fewer_sources_than_announced(tmp_path):
    p = tmp_path / "s.ss"
    p.write_text("p aux sp ss 3\ns 1\ns 2\nc end\n")
    with pytest.raises(InputError) as ei:
        read_sources(p, vertices=3)
    assert ei.value.line == 5 and "source count does not match the header" in ei.value.message


def test_a_matrix_that_is_not_square_is_read_with_a_warning(tmp_path, caplog):
    """A 3 x 4 MatrixMarket file was read as a 4-vertex graph without a word (found by
    the 2026-12-07 audit): a warning says so, on ingest and on every later read of the
    cached copy; a square one gets none."""
    import logging

    import gpu_sssp

    f = tmp_path / "rect.mtx"
    f.write_text("%%MatrixMarket matrix coordinate integer general\n3 4 2\n1 2 3\n2 4 4\n")
    for _ in range(2):  # ingested, then read from the cache
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="gpu_sssp"):
            g = gpu_sssp.load_graph(f)
        assert g.n == 4
        said = [r.getMessage() for r in caplog.records if "not square" in r.getMessage()]
        assert len(said) == 1 and "a 3 x 4 matrix, not square: read as a graph of 4 vertices" in said[0], said
    sq = tmp_path / "sq.mtx"
    sq.write_text("%%MatrixMarket matrix coordinate integer general\n4 4 2\n1 2 3\n2 4 4\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gpu_sssp"):
        gpu_sssp.load_graph(sq)
    assert not [r for r in caplog.records if "not square" in r.getMessage()]
