"""Bad input: one clear InputError naming file, line and expectation; no output left."""
from __future__ import annotations

import gzip
import shutil

import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest, read_sources
from tests.conftest import DATA

# the messages of the pipeline functions the command line calls, in its words (--zero-based)
pytestmark = pytest.mark.usefixtures("cli_words")


def _fails(tmp_path, text, name="bad.gr", mode="w", **kw):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    out = tmp_path / "out" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, **kw)
    # nothing left behind: no output, no temporary file
    assert not out.exists()
    assert not (out.parent.exists() and any(out.parent.iterdir()))
    err = ei.value
    assert str(err).startswith(f"{p}:")
    return err


def test_error_str_format():
    e = InputError("f.gr", 7, "boom")
    assert str(e) == "f.gr:7: boom" and e.path == "f.gr" and e.line == 7 and e.message == "boom"
    assert str(InputError("f.gr", None, "boom")) == "f.gr: boom"
    assert isinstance(e, ValueError)


def test_missing_p_line(tmp_path):
    e = _fails(tmp_path, "c hello\na 1 2 3\n")
    assert e.line == 2 and "missing 'p sp N M'" in e.message


def test_only_comments(tmp_path):
    e = _fails(tmp_path, "c hello\nc world\n")
    assert e.line is None and "missing 'p sp N M'" in e.message


def test_repeated_p_line_in_header(tmp_path):
    e = _fails(tmp_path, "p sp 2 1\nc x\np sp 2 1\na 1 2 3\n")
    assert e.line == 3 and "repeated 'p' line" in e.message and "line 1" in e.message


@pytest.mark.parametrize("chunk", [1 << 20, 64])
def test_p_line_in_the_middle(tmp_path, chunk):
    arcs = "".join(f"a 1 2 {i}\n" for i in range(40))
    e = _fails(tmp_path, "p sp 2 41\n" + arcs + "p sp 2 41\na 1 2 3\n", chunk_bytes=chunk)
    assert e.line == 42 and "repeated 'p' line" in e.message


def test_bad_p_line(tmp_path):
    e = _fails(tmp_path, "p sp 3\na 1 2 3\n")
    assert e.line == 1 and "expected 'p sp N M'" in e.message


def test_truncated_real_file(tmp_path):
    # uncompressed: the header's arc count cannot fit in the file's bytes, refused
    # before any record is read
    src = tmp_path / "USA-road-d.NY.truncated.gr"
    shutil.copy(DATA / "USA-road-d.NY.truncated.gr", src)
    out = tmp_path / "ny.parquet"
    with pytest.raises(InputError) as ei:
        ingest(src, out)
    msg = str(ei.value)
    assert "733846" in msg and "file-size check" in msg and str(src) in msg
    assert ei.value.line == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_truncated_real_file_compressed(tmp_path):
    # compressed: no text size up front, so the count is checked as the records stream
    import gzip

    src = tmp_path / "ny.gr.gz"
    src.write_bytes(gzip.compress((DATA / "USA-road-d.NY.truncated.gr").read_bytes()))
    with pytest.raises(InputError) as ei:
        ingest(src, tmp_path / "ny.parquet")
    msg = str(ei.value)
    assert "733846" in msg and "found 2,050" in msg and str(src) in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_more_arcs_than_header(tmp_path):
    e = _fails(tmp_path, "p sp 2 2\na 1 2 3\na 2 1 3\na 1 1 3\n")
    assert e.line == 4 and "more arcs than announced" in e.message and "expected 2" in e.message


def test_zero_based_ids_rejected(tmp_path):
    shutil.copy(DATA / "clrs-p659-zero-based.gr", tmp_path / "c.gr")
    out = tmp_path / "c.parquet"
    with pytest.raises(InputError) as ei:
        ingest(tmp_path / "c.gr", out)
    assert ei.value.line == 3 and "--zero-based" in ei.value.message and "vertex id 0" in ei.value.message
    assert not out.exists()


@pytest.mark.parametrize("chunk", [1 << 20, 40])
def test_id_too_large_exact_line(tmp_path, chunk):
    text = "c x\np sp 3 4\na 1 2 1\nc in between\n\na 2 3 1\na 3 4 1\na 1 3 1\n"
    e = _fails(tmp_path, text, chunk_bytes=chunk)
    assert e.line == 7 and "vertex id 4 out of range" in e.message and "1..3" in e.message


def test_non_numeric(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1\na 1 x 1\n")
    assert e.line == 3 and "'x'" in e.message and "integer" in e.message


def test_wrong_column_count(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1\na 1 2\n")
    assert e.line == 3 and "expected 4 columns" in e.message and "found 3" in e.message


def test_unexpected_record_kind(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1\nx 1 2 1\n")
    assert e.line == 3 and "expected 'a U V W'" in e.message


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file(tmp_path, content):
    e = _fails(tmp_path, content)
    assert "empty file" in e.message


@pytest.mark.parametrize("name", ["e.mtx", "e.el", "e.graph"])
def test_empty_file_other_formats(tmp_path, name):
    e = _fails(tmp_path, "", name=name)
    assert "empty file" in e.message


def test_weight_overflow_int32(tmp_path):
    e = _fails(tmp_path, "p sp 2 2\na 1 2 5\na 2 1 3000000000\n", weight_type="int32")
    assert e.line == 3 and "overflows int32" in e.message


def test_weight_overflow_int64(tmp_path):
    e = _fails(tmp_path, "p sp 2 2\na 1 2 5\na 2 1 99999999999999999999\n")
    assert e.line == 3 and "64 bits" in e.message


def test_real_weights_as_int_rejected(tmp_path):
    e = _fails(tmp_path, "0 1 0.5\n", name="w.wel", weight_type="int64")
    assert "real-valued" in e.message


@pytest.mark.parametrize("chunk", [None, 64])  # the fast path, and lines split over chunks
def test_real_weight_underflow_refused(tmp_path, chunk):
    """A non-zero real token below float64's range would be read as 0.0 (a zero-weight
    arc that is not in the file): refused at its line, in every text format."""
    kw = {} if chunk is None else {"chunk_bytes": chunk}
    e = _fails(tmp_path, "p sp 3 3\na 1 2 0.0\na 2 3 2.5\na 3 1 1e-400\n", **kw)
    assert e.line == 4 and "'1e-400'" in e.message and "read as 0" in e.message
    e = _fails(tmp_path, "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 -2.5E-999\n2 3 0.0\n",
               name="u.mtx", **kw)
    assert e.line == 3 and "read as 0" in e.message
    e = _fails(tmp_path, "0 1 0.0\n1 2 0.%s1\n" % ("0" * 400), name="u.wel", **kw)
    assert e.line == 2 and "read as 0" in e.message
    # zeros written as zeros, with or without an exponent, and tiny subnormals are weights
    p = tmp_path / "z.gr"
    p.write_text("p sp 3 3\na 1 2 0.0\na 2 3 -0.0e7\na 3 1 5e-324\n")
    meta = ingest(p, tmp_path / "z.parquet", **kw)
    assert meta["arcs"] == 3 and meta["weight_max"] == 5e-324


def test_negative_weights_are_valid(tmp_path):
    p = tmp_path / "n.gr"
    p.write_text("p sp 2 2\na 1 2 -5\na 2 1 3\n")
    meta = ingest(p, tmp_path / "n.parquet")
    assert meta["negative_weights"] == 1 and meta["weight_min"] == -5


def test_mtx_errors(tmp_path):
    e = _fails(tmp_path, "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n", name="a.mtx")
    assert "expected 3 entries" in e.message and "found 2" in e.message
    e = _fails(tmp_path, "%%MatrixMarket matrix array real general\n3 3\n", name="b.mtx")
    assert e.line == 1 and "coordinate" in e.message
    e = _fails(tmp_path, "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 4\n", name="c.mtx")
    assert e.line == 4 and "out of range" in e.message


def test_edgelist_errors(tmp_path):
    e = _fails(tmp_path, "0 1\n1 -2\n", name="a.el")
    assert e.line == 2 and "vertex id -2" in e.message
    e = _fails(tmp_path, "0 1 2 3\n", name="b.el")
    assert e.line == 1 and "2 or 3 columns" in e.message
    e = _fails(tmp_path, "# c\n0 1 2\n1 2\n", name="c.wel")
    assert e.line == 3 and "expected 3 columns" in e.message


def test_metis_errors(tmp_path):
    e = _fails(tmp_path, "3 2\n2\n1 3\n", name="a.graph")
    assert "3 vertices" in e.message and "2 adjacency lines" in e.message
    e = _fails(tmp_path, "3 2\n2\n1 4\n2\n", name="b.graph")
    assert e.line == 3 and "neighbour id 4" in e.message
    e = _fails(tmp_path, "3 5\n2\n1 3\n2\n", name="c.graph")
    assert "10 adjacency entries" in e.message and "found 4" in e.message


def test_pace_errors(tmp_path):
    e = _fails(tmp_path, "p tw 3 2\n1 2\n", name="a.pace")
    assert "expected 2 edges" in e.message and "found 1" in e.message


def test_output_not_clobbered_on_failure(tmp_path):
    out = tmp_path / "g.parquet"
    out.write_bytes(b"keep me")
    p = tmp_path / "bad.gr"
    p.write_text("p sp 2 1\na 1 3 1\n")
    with pytest.raises(InputError):
        ingest(p, out)
    assert out.read_bytes() == b"keep me"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.gr", "g.parquet"]


def test_sources_naming_missing_vertex(tmp_path):
    with pytest.raises(InputError) as ei:
        read_sources(DATA / "Random4-C.9.0.ss", vertices=50)
    assert ei.value.line == 9 and "59" in ei.value.message and "1..50" in ei.value.message
    with pytest.raises(InputError) as ei:
        read_sources(DATA / "clrs-p659-zero-based.ss", vertices=5)
    assert ei.value.line == 2 and "source vertex 0" in ei.value.message
    p = tmp_path / "s.ss"
    p.write_text("p aux sp ss 3\ns 1\ns 2\n")
    with pytest.raises(InputError) as ei:
        read_sources(p)
    assert "expected 3" in ei.value.message and "found 2" in ei.value.message
    p.write_text("1\nfoo\n")
    with pytest.raises(InputError) as ei:
        read_sources(p)
    assert ei.value.line == 2 and "'foo'" in ei.value.message


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as ei:
        ingest(tmp_path / "nope.gr", tmp_path / "o.parquet")
    assert "no such file" in str(ei.value)


@pytest.mark.parametrize("name", ["example_weighted.graph", "gapbs/4.graph", "gapbs/4w.graph"])
def test_metis_named_gr_suggests_format_metis(tmp_path, name):
    text = (DATA / name).read_bytes()
    e = _fails(tmp_path, text, name="m.gr")
    assert e.line == 1 and "METIS graph" in e.message and e.message.endswith("pass --format metis")
    # ... and with the hint followed, it reads
    p = tmp_path / "m.gr"
    assert ingest(p, tmp_path / "ok.parquet", format="metis")["format"] == "metis"


def test_metis_named_gr_gz_suggests_format_metis(tmp_path):
    import gzip

    e = _fails(tmp_path, gzip.compress((DATA / "example_weighted.graph").read_bytes()), name="m.gr.gz")
    assert "pass --format metis" in e.message


def test_edge_list_named_gr_suggests_format_edgelist(tmp_path):
    e = _fails(tmp_path, (DATA / "gapbs/4.wel").read_bytes(), name="w.gr")
    assert e.line == 1 and "pass --format edgelist" in e.message and "METIS" not in e.message


@pytest.mark.parametrize("text", ["hello world\n1 2\n", "3 3\n1 2\nx y\n", "2 1\n2\n1\n1 2\n5\n"])
def test_no_format_hint_for_other_content(tmp_path, text):
    e = _fails(tmp_path, text, name="x.gr")
    assert "--format" not in e.message


# -- numbers are decimal; compressed names must hold compressed data -----------------------
@pytest.mark.parametrize("name,text,line,token", [
    ("h.gr", "p sp 3 2\na 0x1 2 1\na 2 3 1\n", 2, "0x1"),
    ("w.gr", "p sp 3 2\na 1 2 1\na 2 3 0x10\n", 3, "0x10"),
    ("f.gr", "p sp 3 2\na 1 2 1.5\na 2 3 0X1p3\n", 3, "0X1p3"),
    ("h.el", "0 1\n0x1 2\n", 2, "0x1"),
    ("h.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 0x5\n", 3, "0x5"),
    ("h.graph", "3 2\n0x2\n1 3\n2\n", 2, "0x2"),
])
def test_hexadecimal_refused(tmp_path, name, text, line, token):
    e = _fails(tmp_path, text, name=name)
    assert e.line == line and f"'{token}'" in e.message and "hexadecimal is not accepted" in e.message


def test_leading_plus_accepted(tmp_path):
    # like strtol/scanf (and scipy's readers), a leading '+' is kept
    from tests.pipeline._ingest_helpers import ingest_arcs

    (s, d, w), _ = ingest_arcs(_write(tmp_path / "p.gr", "p sp 3 2\na +1 2 1\na 2 3 +5\n"), tmp_path)
    assert s.tolist() == [1, 2] and w.tolist() == [1, 5]


def _write(p, text):
    p.write_text(text)
    return p


@pytest.mark.parametrize("name,content,why", [
    ("plain.gr.gz", b"p sp 2 1\na 1 2 1\n", "not compressed (plain text?): rename it to plain.gr"),
    ("x.gr.bz2", gzip.compress(b"p sp 2 1\na 1 2 1\n"), "holds gzip data: rename it to x.gr.gz"),
    ("e.gr.xz", b"", "the file is empty"),
])
def test_compressed_name_without_compressed_data(tmp_path, name, content, why):
    e = _fails(tmp_path, content, name=name)
    assert e.line is None and e.message.startswith("not ") and why in e.message


def test_metis_edge_with_two_weights_refused(tmp_path):
    # METIS lists an undirected edge at both ends: 1-2 weighs 5 at vertex 1, 6 at vertex 2
    e = _fails(tmp_path, "2 1 1\n2 5\n1 6\n", name="asym.graph")
    assert e.line == 2 and "edge 1-2 has weight 5 at vertex 1 (line 2) but 6 at vertex 2 (line 3)" in e.message
    e = _fails(tmp_path, "3 2\n2\n1 3\n1\n", name="half.graph")
    assert e.line == 4 and "edge 1-3 is listed 0 times at vertex 1 but 1 time at vertex 3" in e.message
    from tests.pipeline._ingest_helpers import ingest_arcs

    (s, d, w), meta = ingest_arcs(_write(tmp_path / "ok.graph", "3 2 1\n2 5\n1 5 3 4\n2 4\n"), tmp_path)
    assert meta["directed"] is False and sorted(w.tolist()) == [4, 4, 5, 5]


@pytest.mark.parametrize("name,text,why", [
    ("big.mtx", "%%MatrixMarket matrix coordinate integer general\n4000000000 4000000000 1\n1 2 5\n", "max-vertices"),
    ("nnz.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 4000000000\n1 2 5\n", "file-size check"),
    ("cx.mtx", "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 2 5\n", "field 'complex'"),
    ("sk.mtx", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 1\n1 2 5\n", "'skew-symmetric'"),
    ("iso.mtx", "%%MatrixMarket matrix coordinate pattern general\n300000000 300000000 1\n1 2\n", "isolated"),
    ("big.graph", "4000000000 1\n2\n1\n", "max-vertices"),
])
def test_recognisable_format_gets_its_own_error_not_a_hint(tmp_path, name, text, why):
    e = _fails(tmp_path, text, name=name)
    assert why in e.message and "--format" not in e.message and "looks like" not in e.message, e.message


# -- a file read as another format than its own (audit 3, A6 and C10) ---------------------
MTX = "%%MatrixMarket matrix coordinate integer general\n3 3 3\n1 2 5\n2 3 -1\n3 1 2\n"
SAMPLES = {  # format -> (file name, text, the line that names the format)
    "mtx": ("g.mtx", MTX, 1),
    "gr": ("g.gr", "c a comment\nc another one\np sp 3 3\na 1 2 5\na 2 3 1\na 3 1 2\n", 3),
    "pace": ("g.pace", "c x\np tw 3 2\n1 2\n2 3\n", 2),
    "ss": ("g.ss", "p aux sp ss 2\ns 1\ns 2\n", 1),
    "co": ("g.co", "p aux sp co 2\nv 1 10 20\nv 2 30 40\n", 1),
}
NAMES = {"mtx": "a MatrixMarket file", "gr": "a DIMACS graph", "pace": "a PACE graph",
         "ss": "a DIMACS source list", "co": "a DIMACS coordinate file", "metis": "a METIS graph",
         "edgelist": "an edge list"}


def test_matrixmarket_forced_as_edge_list_refused(tmp_path):
    # was read with exit 0: the banner as a '%' comment, the size line '3 3 3' as an arc
    e = _fails(tmp_path, MTX, name="ok.mtx", format="edgelist")
    assert e.line == 1 and e.message == (
        "the file is a MatrixMarket file ('%%MatrixMarket matrix coordinate integer general'), "
        "not an edge list: drop --format edgelist, or pass --format mtx")
    # also named like an edge list, and compressed
    e = _fails(tmp_path, gzip.compress(MTX.encode()), name="m.txt.gz", format="edgelist")
    assert e.line == 1 and "is a MatrixMarket file" in e.message
    # a pattern matrix (which failed only at a later line, on a column count)
    text = "%%MatrixMarket matrix coordinate pattern symmetric\n%c\n3 3 2\n2 1\n3 2\n"
    e = _fails(tmp_path, text, name="p.mtx", format="edgelist")
    assert e.line == 1 and "not an edge list" in e.message


def test_suitesparse_tar_forced_as_edge_list_refused(shared_data, tmp_path):
    src = shared_data / "mtx" / "Lederberg.tar.gz"
    out = tmp_path / "L.parquet"
    with pytest.raises(InputError) as ei:
        ingest(src, out, format="edgelist")
    assert ei.value.line == 1 and "is a MatrixMarket file" in ei.value.message
    assert str(ei.value).startswith(f"{src}[Lederberg/Lederberg.mtx]:1: ")
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", sorted(SAMPLES))
@pytest.mark.parametrize("forced", ["edgelist", "gr", "mtx", "metis", "pace", "ss", "co"])
def test_any_format_forced_on_a_file_of_another_names_the_file_s_format(tmp_path, kind, forced):
    name, text, line = SAMPLES[kind]
    p = tmp_path / name
    p.write_text(text)
    if forced == kind:
        assert ingest(p, tmp_path / "ok.parquet", format=forced)["format"] == kind
        return
    e = _fails(tmp_path, text, name=name, format=forced)
    assert e.line == line and e.message.startswith(f"the file is {NAMES[kind]} (")
    assert e.message.endswith(f", not {NAMES[forced]}: drop --format {forced}, or pass --format {kind}")


@pytest.mark.parametrize("name,text", [
    ("half.graph", "3 2\n2\n3\n\n"),                    # fmt 0, lines of other widths
    ("cycle.graph", "4 4\n2 4\n1 3\n2 4\n1 3\n"),       # every line 'U V': read as arcs, exit 0
    ("w.graph", "% c\n3 2 1\n2 5\n1 5 3 7\n2 7\n"),     # fmt 1, 'U V W'-wide header
])
def test_metis_forced_as_edge_list_refused(tmp_path, name, text):
    line = 2 if text.startswith("%") else 1
    e = _fails(tmp_path, text, name=name, format="edgelist")
    assert e.line == line and e.message.startswith("the file looks like a METIS graph (header '")
    assert e.message.endswith("then one adjacency line per vertex), not an edge list: "
                              "drop --format edgelist, or pass --format metis")
    # named like an edge list, with no --format: the same, with the format to pass
    e = _fails(tmp_path, text, name="m.txt")
    # (a file that also reads as an edge list says how to read it as one)
    both = " (--format edgelist reads it as an edge list)" if name == "cycle.graph" else ""
    assert e.message.endswith(f"not an edge list: pass --format metis{both}")
    # and it reads as METIS
    p = tmp_path / name
    assert ingest(p, tmp_path / "ok.parquet", format="metis")["format"] == "metis"


@pytest.mark.parametrize("name", ["gapbs/4.graph", "gapbs/4w.graph", "example_weighted.graph"])
def test_real_metis_forced_as_edge_list_refused(tmp_path, name):
    e = _fails(tmp_path, (DATA / name).read_bytes(), name="g.graph", format="edgelist")
    assert e.line == 1 and "looks like a METIS graph" in e.message


def test_large_metis_forced_as_edge_list_refused(shared_data, tmp_path):
    # more than the 64 KiB looked at: the lines' widths vary, so it is no edge list
    src = shared_data / "metis" / "delaunay_n15.graph"
    assert src.stat().st_size > 1 << 16
    with pytest.raises(InputError) as ei:
        ingest(src, tmp_path / "d.parquet", format="edgelist")
    assert ei.value.line == 1 and "header '32768 98274'" in ei.value.message


@pytest.mark.parametrize("text", [
    "5 3\n1 2\n2 3\n",              # 'N M'-like first arc, 1-based, but not N adjacency lines
    "3 2\n1 2\n2 3\n3 1\n",         # three lines for 3 'vertices', but 6 entries for M = 2
    "0 1 5\n1 2 5\n2 0 5\n",
    "% a comment\n4 2\n1 3\n",
])
def test_edge_lists_that_only_start_like_metis_still_read(tmp_path, text):
    p = tmp_path / "e.el"
    p.write_text(text)
    meta = ingest(p, tmp_path / "ok.parquet", format="edgelist")
    assert meta["format"] == "edgelist" and meta["arcs"] == len([ln for ln in text.splitlines()
                                                                  if not ln.startswith("%")])


@pytest.mark.parametrize("name,problem,note", [
    ("perf.ss.res", "p res", "(a 9th DIMACS challenge solver's results)"),
    ("sample.ss.chk", "p chk", "(a 9th DIMACS challenge checker's output)"),
])
@pytest.mark.parametrize("forced", [None, "ss", "gr", "edgelist"])
def test_dimacs_result_files_get_a_dimacs_message(shared_data, tmp_path, name, problem, note, forced):
    # were read as edge lists: "expected 2 or 3 columns ..., found 5: 'p res sp ss sssp'"
    src = shared_data / "dimacs9" / name
    with pytest.raises(InputError) as ei:
        ingest(src, tmp_path / "o.parquet", format=forced)
    e = ei.value
    assert e.line == 1 and e.message.startswith(f"DIMACS problem line '{problem} sp ss sssp': '{problem}' "
                                                f"files {note} are not read; sssp ingest reads 'p sp N M' graphs")
    assert "'p aux sp ss K' source lists (.ss), 'p aux sp co N' coordinates (.co)" in e.message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text,line,problem", [
    ("c coloring\np edge 3 2\ne 1 2\ne 2 3\n", 2, "p edge"),
    ("p aux sp xy 2\n", 1, "p aux sp xy"),
    ("p max 3 2\n", 1, "p max"),
])
def test_other_dimacs_problems_get_a_dimacs_message(tmp_path, text, line, problem):
    e = _fails(tmp_path, text, name="x.txt")
    assert e.line == line and f"'{problem}' files are not read" in e.message


def test_a_bare_p_line_gets_the_format_s_own_error(tmp_path):
    e = _fails(tmp_path, "p\na 1 2 3\n", name="g.gr")
    assert e.line == 1 and e.message == "expected 'p sp N M', got 'p'"


@pytest.mark.parametrize("name", ["mtx/karate.mtx", "metis/example_weighted.graph"])
def test_zero_based_is_refused_for_formats_numbered_from_one(name, tmp_path):
    """``--zero-based`` on a MatrixMarket or METIS file was dropped without a word (read
    1-based, id_base 1, exit 0); those formats number their vertices from 1."""
    from gpu_sssp.kernels.errors import UsageError
    from tests.conftest import SHARED_DATA

    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip("shared data not present")
    out = tmp_path / "z.parquet"
    with pytest.raises(UsageError, match=r"applies to DIMACS and PACE files; a (MatrixMarket file|METIS graph)'s "
                                         r"vertices are numbered from 1"):
        ingest(path, out, zero_based=True)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert ingest(path, out)["id_base"] == 1
