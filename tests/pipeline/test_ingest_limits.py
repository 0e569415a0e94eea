"""Declared sizes checked before anything is sized by them; weights too large for
exact path sums refused at ingest with the input's name and line."""
from __future__ import annotations

import bz2
import gzip

import dask.config
import numpy as np
import pytest

from gpu_sssp.kernels.graph import Graph
from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.graph import read_parquet
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest._limits import largest_exact_weight


def _fails(tmp_path, text, name, **kw):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, **kw)
    assert not out.exists()
    assert not (out.parent.exists() and any(out.parent.iterdir()))
    assert str(ei.value).startswith(f"{p}")
    return ei.value


# -- the isolated-vertex check (no file size needed) --------------------------------
@pytest.mark.parametrize("name,text,line", [
    ("big.gr", "p sp 300000000 1\na 1 2 1\n", 1),
    ("big.tw", "c pace\np tw 300000000 1\n1 2\n", 2),
    ("big.mtx", "%%MatrixMarket matrix coordinate integer general\n% c\n300000000 3 1\n1 2 5\n", 3),
    ("big.graph", "300000000 1\n2\n1\n", 1),
])
def test_header_with_far_more_vertices_than_records(tmp_path, name, text, line):
    e = _fails(tmp_path, text, name)
    assert e.line == line
    assert "300,000,000 vertices" in e.message and "isolated-vertex check" in e.message
    assert "max_isolated_vertices=N" in e.message and "sssp.ingest.max-isolated-vertices" in e.message


@pytest.mark.parametrize("comp", [gzip.compress, bz2.compress])
def test_isolated_check_holds_for_compressed_inputs(tmp_path, comp):
    e = _fails(tmp_path, comp(b"p sp 300000000 1\na 1 2 1\n"), "big.gr." + ("gz" if comp is gzip.compress else "bz2"))
    assert e.line == 1 and "isolated-vertex check" in e.message


def test_isolated_limit_can_be_raised(tmp_path):
    p = tmp_path / "iso.gr"
    p.write_text("p sp 1000 1\na 1 2 1\n")
    with pytest.raises(InputError, match="isolated-vertex check"):
        ingest(p, tmp_path / "a.parquet", max_isolated_vertices=10)
    meta = ingest(p, tmp_path / "b.parquet", max_isolated_vertices=998)
    assert meta["vertices"] == 1000
    with dask.config.set({"sssp.ingest.max-isolated-vertices": 10}):
        with pytest.raises(InputError, match="max-isolated-vertices = 10"):
            ingest(p, tmp_path / "c.parquet")


# -- max-vertices --------------------------------------------------------------------
@pytest.mark.parametrize("n", [2**31, 1099511627776])
def test_vertex_limit(tmp_path, n):
    e = _fails(tmp_path, f"p sp {n} 1\na 1 2 1\n", "huge.gr")
    assert e.line == 1 and f"{n:,} vertices" in e.message
    assert "sssp.ingest.max-vertices = 2,147,483,647" in e.message and "max_vertices=N" in e.message


def test_vertex_limit_from_settings_and_argument(tmp_path):
    p = tmp_path / "g.gr"
    p.write_text("p sp 4 3\na 1 2 1\na 2 3 1\na 3 4 1\n")
    with dask.config.set({"sssp.ingest.max-vertices": 3}):
        with pytest.raises(InputError, match="max-vertices = 3"):
            ingest(p, tmp_path / "a.parquet")
        assert ingest(p, tmp_path / "b.parquet", max_vertices=4)["vertices"] == 4


def test_edge_list_ids_make_the_vertex_count(tmp_path):
    # no header: the largest id is the claim, checked on the line that makes it
    e = _fails(tmp_path, "0 1 5\n1 1099511627776 3\n", "e.el")
    assert e.line == 2 and "vertex id 1099511627776" in e.message and "max-vertices" in e.message
    e = _fails(tmp_path, "# c\n0 1 5\n1 300000000 3\n2 3 1\n", "f.el")
    assert e.line == 3 and "largest vertex id 300000000" in e.message and "isolated-vertex check" in e.message


def test_arc_limit(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1\na 2 3 1\n", "g.gr", max_arcs=1)
    assert e.line == 1 and "sssp.ingest.max-arcs = 1" in e.message and "max_arcs=N" in e.message


# audit 3, C4: --max-arcs was applied only to sizes a header announces, so an edge list
# (no header) of any length passed it
def test_arc_limit_counts_the_records_of_an_edge_list(tmp_path):
    e = _fails(tmp_path, "0 1\n1 2\n2 3\n", "t.el", max_arcs=1)
    assert e.line == 2 and "arc number 2 is above the limit sssp.ingest.max-arcs = 1" in e.message
    assert "max_arcs=N" in e.message and "counted as they are read" in e.message
    e = _fails(tmp_path, "# c\n0 1 5\n\n1 2 5\n2 3 5\n", "w.el", max_arcs=0)
    assert e.line == 2 and "arc number 1 " in e.message
    # --undirected: the records are edges (as a header's M is for METIS and PACE)
    e = _fails(tmp_path, "0 1\n1 2\n2 3\n", "u.el", max_arcs=2, undirected=True)
    assert e.line == 3 and "edge number 3 is above" in e.message
    # at the limit: read
    p = tmp_path / "t.el"
    assert ingest(p, tmp_path / "ok.parquet", max_arcs=3)["arcs"] == 3


def test_arc_limit_on_a_long_edge_list_stops_at_the_line(tmp_path):
    """Across many chunks, compressed too, from the setting: the line of the first arc
    past the limit, before anything past it is written."""
    text = "# header comment\n" + "".join(f"{i} {i + 1} 1\n" for i in range(20000))
    e = _fails(tmp_path, text, "long.el", max_arcs=12345, chunk_bytes=4096)
    assert e.line == 12347 and "arc number 12,346 " in e.message
    e = _fails(tmp_path, gzip.compress(text.encode()), "long.el.gz", chunk_bytes=4096, max_arcs=19999)
    assert e.line == 20001 and "arc number 20,000 " in e.message
    with dask.config.set({"sssp.ingest.max-arcs": 100}):
        e = _fails(tmp_path, text, "long2.el")
        assert e.line == 102 and "max-arcs = 100" in e.message


# -- the file-size check ---------------------------------------------------------------
@pytest.mark.parametrize("name,text,line,noun", [
    ("a.gr", "p sp 5 1000\na 1 2 1\n", 1, "arcs"),
    ("a.tw", "p tw 5 1000\n1 2\n", 1, "edges"),
    ("a.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 1000\n1 2\n", 2, "entries"),
    ("a.graph", "1000 1\n2\n1\n", 1, "vertex lines"),
    ("b.graph", "3 1000\n2\n1\n\n", 1, "edges"),
    ("a.ss", "p aux sp ss 1000\ns 1\n", 1, "sources"),
    ("a.co", "p aux sp co 1000\nv 1 2 3\n", 1, "coordinates"),
])
def test_header_announcing_more_records_than_the_file_holds(tmp_path, name, text, line, noun):
    e = _fails(tmp_path, text, name, max_isolated_vertices=10**9)
    assert e.line == line and f"1,000 {noun}" in e.message and "file-size check" in e.message
    assert f"file's {len(text)} bytes" in e.message


def test_file_size_check_is_exact_at_the_boundary(tmp_path):
    # 3 arc lines of 8 bytes, the last without its newline: exactly what the header says
    body = "a 1 2 1\na 2 3 1\na 3 1 1"
    p = tmp_path / "g.gr"
    p.write_text("p sp 3 3\n" + body)
    assert ingest(p, tmp_path / "g.parquet")["arcs"] == 3


def test_compressed_counts_checked_as_the_records_stream(tmp_path):
    e = _fails(tmp_path, gzip.compress(b"p sp 5 1000\na 1 2 1\n"), "a.gr.gz")
    assert "expected 1,000 arcs" in e.message and "found 1" in e.message


# -- integer weights and exact path sums -------------------------------------------------
def test_weight_too_large_for_exact_paths(tmp_path):
    e = _fails(tmp_path, "p sp 5 3\na 1 2 1\nc x\na 2 3 9223372036854775807\na 3 4 1\n", "w.gr")
    assert e.line == 4 and "9223372036854775807" in e.message and "2**53" in e.message
    assert "5 vertices" in e.message and "header at line 1" in e.message


@pytest.mark.parametrize("sign", [1, -1])
def test_weight_bound_matches_the_solvers(tmp_path, sign):
    # ingest applies the solvers' rule (kernels.graph.path_bound_of): the smaller of
    # (n - 1) * max|w| and the sum of each vertex's heaviest in-arc must stay below 2**53
    n = 5
    w = largest_exact_weight(n)
    p = tmp_path / "ok.gr"
    p.write_text(f"p sp {n} 2\na 1 2 {sign * (w + 1)}\na 2 3 1\n")  # crude bound fails, in-arc sum holds
    ingest(p, tmp_path / "ok.parquet")
    g = read_parquet(tmp_path / "ok.parquet", cache=False)
    assert g.max_path_bound() >= 2.0**53
    g.check_exact()  # the solvers accept it too
    big = 2**53 // 2
    e = _fails(tmp_path, f"p sp {n} 3\na 1 2 {sign * big}\nc x\na 2 3 {big}\na 3 4 1\n", "bad.gr")
    assert e.line == 2 and f"may reach {2 * big + 1:,}" in e.message and "in-arc" in e.message
    bad = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([sign * big, big, 1]), n)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        bad.check_exact()  # and the solvers refuse it as well


def test_long_chain_with_one_heavy_arc_ingests(tmp_path):
    # 2,000 vertices and one arc of 2**50: (n - 1) * max|w| is ~2**61, but no path is
    # longer than 2**50 + 1998 (it used to be refused by ingest, not by the solvers)
    n = 2000
    lines = [f"p sp {n} {n - 1}"] + [f"a {i} {i + 1} {2**50 if i == 7 else 1}" for i in range(1, n)]
    p = tmp_path / "chain.gr"
    p.write_text("\n".join(lines) + "\n")
    meta = ingest(p, tmp_path / "chain.parquet")
    assert meta["weight_max"] == 2**50
    g = read_parquet(tmp_path / "chain.parquet", cache=False)
    g.check_exact()
    assert g.path_bound() == 2**50 + n - 2


def test_real_weights_whose_paths_overflow_refused(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1e308\na 2 3 1e308\n", "f.gr")
    assert e.line == 2 and "weight 1e+308" in e.message and "overflow to inf" in e.message
    p = tmp_path / "ok.gr"
    p.write_text("p sp 3 2\na 1 2 5e307\na 2 3 1\n")  # crude bound fails (its sum overflows), in-arc sum holds
    ingest(p, tmp_path / "ok.parquet")


@pytest.mark.parametrize("arcs", ["a 1 2 1e308\na 1 3 1e308\n", "a 1 2 1e308\na 2 3 1\n"])
def test_real_weights_whose_distances_sum_beyond_float64_refused(tmp_path, arcs):
    # every distance finite, a source's sum of them not (the solvers' rule,
    # kernels.graph.path_bound_of): ingest refuses what the solvers would
    e = _fails(tmp_path, "p sp 3 2\n" + arcs, "sum.gr")
    assert e.line == 2 and "weight 1e+308" in e.message and "overflow to inf" in e.message
    if "a 2 3 1\n" in arcs:
        # the bound on each path is finite (1e308 + 1): the refusal is the sum's, and the
        # message says so, not "a shortest path may reach inf" (the other graph's bound on
        # a path, 2e308 from both arcs, does overflow)
        assert "every shortest path stays finite" in e.message and "per-source sum" in e.message, e.message
        assert "may reach inf" not in e.message


def test_real_weights_whose_paths_overflow_say_so(tmp_path):
    e = _fails(tmp_path, "p sp 3 2\na 1 2 1e308\na 2 3 1e308\n", "f.gr")
    assert "too large for finite shortest paths" in e.message and "stays finite" not in e.message, e.message


def test_weight_bound_in_edge_lists_uses_the_final_vertex_count(tmp_path):
    big = 2**52
    p = tmp_path / "ok.wel"
    p.write_text(f"0 1 {big}\n1 2 {big - 1}\n")  # the longest path is 2**53 - 1
    ingest(p, tmp_path / "ok.parquet")
    e = _fails(tmp_path, f"0 1 {big}\n1 2 {big}\n3 4 1\n", "bad.wel")
    assert e.line == 1 and "5 vertices" in e.message and "largest vertex id is 4" in e.message


def test_random_weights_checked_too(tmp_path):
    p = tmp_path / "g.gr"
    p.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    with pytest.raises(InputError, match="2\\*\\*53") as ei:
        ingest(p, tmp_path / "g.parquet", weights=f"random:{2**62}:{2**62 + 5}:1")
    # the weight was drawn, not read: the spec is named, not a line of the file
    assert ei.value.line is None
    assert ei.value.message.startswith(f"weights='random:{2**62}:{2**62 + 5}:1' drew weight 46116")


def test_real_weights_and_one_vertex_are_not_limited(tmp_path):
    p = tmp_path / "f.gr"
    p.write_text("p sp 3 2\na 1 2 1e300\na 2 3 1.5\n")
    assert ingest(p, tmp_path / "f.parquet")["weight_type"] == "float64"
    p = tmp_path / "one.gr"
    p.write_text("p sp 1 1\na 1 1 9223372036854775807\n")
    assert ingest(p, tmp_path / "one.parquet")["arcs"] == 1
