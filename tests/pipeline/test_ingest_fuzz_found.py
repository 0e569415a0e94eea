"""Inputs found by tests/fuzz_ingest.py: each is one InputError naming the file and the
line, never a traceback; nothing left behind."""
from __future__ import annotations

import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest


def _fails(tmp_path, name, data, **kw):
    p = tmp_path / name
    p.write_bytes(data)
    out = tmp_path / "out" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, **kw)
    assert not out.exists() and not (out.parent.exists() and any(out.parent.iterdir()))
    e = ei.value
    assert str(e).startswith(f"{p}:{e.line}: ") and "\n" not in str(e)
    return e


@pytest.mark.parametrize("banner", [
    b"%%MatrixMarket matrix coordin\xe9ate pattern symmetric",
    b"%%MatrixMarket matrix coordinate int\xffeger general",
    b"%%MatrixMarket matrix coordinate real gen\xc3\x28eral",
])
def test_mtx_banner_not_utf8(tmp_path, banner):
    # a non-UTF-8 byte in the banner's layout/field/symmetry was a UnicodeDecodeError traceback
    e = _fails(tmp_path, "g.mtx", banner + b"\n2 2 1\n1 2 3\n")
    assert e.line == 1 and "MatrixMarket" in e.message


def test_sources_header_after_first_record(tmp_path):
    # a sources file with no header before its ids and a 'p' line among them was
    # "repeated 'p' line" although no 'p' line came before
    from gpu_sssp.pipeline.ingest import read_sources

    p = tmp_path / "s.ss"
    p.write_bytes(b"c sources\ns 1\np aux sp ss 1\n")
    with pytest.raises(InputError) as ei:
        read_sources(p, vertices=5)
    e = ei.value
    assert e.line == 3 and "repeated" not in e.message and "after the first record" in e.message


def test_metis_counts_name_a_line(tmp_path):
    # the METIS count checks at the end of the file had no line number (the DIMACS ones
    # name the line after the last, where the records run out)
    e = _fails(tmp_path, "short.graph", b"% c\n3 2\n2\n1 3\n")
    assert e.line == 5 and "3 vertices" in e.message and "after line 4" in e.message
    e = _fails(tmp_path, "entries.graph", b"3 5\n2\n1 3\n2\n")
    assert e.line == 1 and "5 edges" in e.message and "found 4" in e.message


@pytest.mark.parametrize("text,line", [
    (b"2 1 10\nx 2\n7 1\n", 2),          # fmt 10: one vertex weight per line
    (b"2 1 11 2\n1 0x3 2 5\n7 1 1 5\n", 2),  # fmt 11, NCON 2
    (b"2 1 100\n\n1\n", None),           # gapbs fmt 100 has no vertex values: not refused
])
def test_metis_vertex_values_are_numbers(tmp_path, text, line):
    # the vertex sizes/weights before the neighbours were skipped unread: 'x' was accepted
    if line is None:
        (tmp_path / "ok.graph").write_bytes(text)
        assert ingest(tmp_path / "ok.graph", tmp_path / "ok.parquet")["arcs"] == 1
        return
    e = _fails(tmp_path, "v.graph", text)
    assert e.line == line and "vertex size/weight" in e.message


@pytest.mark.parametrize("w", [b"9223372036854775808", b"-9223372036854775809", b"9999999999999999999"])
def test_metis_weight_beyond_int64(tmp_path, w):
    # a 19-digit METIS edge weight past int64 was an OverflowError traceback (np.array)
    e = _fails(tmp_path, "w.graph", b"% c\n2 1 1\n2 " + w + b"\n1 " + w + b"\n")
    assert e.line == 3 and "does not fit in 64 bits" in e.message


@pytest.mark.parametrize("name,text", [
    ("g.gr", b"p sp 9223372036854775807 1\na 1 2 3\n"),
    ("m.mtx", b"%%MatrixMarket matrix coordinate integer general\n9223372036854775807 1 1\n1 1 5\n"),
])
def test_huge_vertex_count_with_limits_raised(tmp_path, name, text):
    # with the limits raised, the path-bound check allocated n values for the in-arc
    # sums: a ValueError traceback ('array is too big') for n near 2**63, 8 n bytes below
    p = tmp_path / name
    p.write_bytes(text)
    big = 2 ** 63 - 1
    try:
        meta = ingest(p, tmp_path / "o.parquet", max_vertices=big, max_isolated_vertices=big)
    except InputError as e:  # refused cleanly is fine too
        assert "\n" not in str(e)
    else:
        assert meta["vertices"] == big and meta["arcs"] == 1


@pytest.mark.parametrize("name,text", [
    ("w.wel", b"0 1 5\n1 0 6" + b"1" * 300_000 + b"\xff\n"),       # integer weights
    ("r.wel", b"0 1 5.5\n1 0 6" + b"1" * 300_000 + b"x\n"),        # real weights
])
def test_long_bad_number_is_refused_fast(tmp_path, name, text):
    # the decimal-real pattern backtracked quadratically on a long token that fails it:
    # 300,000 digits and a stray byte took minutes (a hang found by tests/fuzz_ingest.py)
    import time

    t0 = time.perf_counter()
    e = _fails(tmp_path, name, text)
    assert e.line == 2 and time.perf_counter() - t0 < 10


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_not_read_for_ever(tmp_path, device):
    """``sssp ingest /dev/zero`` read for ever (found by tests/fuzz_cli.py): a character
    or block device is refused before anything is read."""
    import os

    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.ingest import ingest

    with pytest.raises(InputError, match="is a device"):
        ingest(device, tmp_path / "x.parquet", format="edgelist")
    assert not (tmp_path / "x.parquet").exists()
