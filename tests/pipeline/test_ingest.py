"""Ingestion of every format, on the shipped samples (data/) and the real files in
../shared/data (skipped when absent)."""
from __future__ import annotations

import hashlib
import json
import logging
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp.pipeline.ingest import detect_format, ingest, read_sources
from tests.conftest import DATA

from ._ingest_helpers import arcset, ingest_arcs

CONTRACT_KEYS = {"vertices", "arcs", "directed", "id_base", "weight_type", "weight_min", "weight_max",
                 "negative_weights", "self_loops", "parallel_arcs", "source_file", "source_sha256",
                 "format", "weights", "created_by"}
GAPBS = DATA / "gapbs"


def test_rome99(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "rome99.gr", tmp_path)
    assert CONTRACT_KEYS <= set(meta)
    assert meta["vertices"] == 3353 and meta["arcs"] == 8870 == len(s)
    assert (meta["weight_min"], meta["weight_max"]) == (1, 12711)
    assert meta["parallel_arcs"] == 11 and meta["self_loops"] == 0 and meta["negative_weights"] == 0
    assert meta["directed"] is True and meta["id_base"] == 1 and meta["format"] == "gr"
    assert meta["weights"] == "file" and meta["created_by"].startswith("sssp-ingest ")
    assert meta["source_sha256"] == hashlib.sha256((DATA / "rome99.gr").read_bytes()).hexdigest()
    schema = pq.read_schema(tmp_path / "out.parquet")
    assert [str(t) for t in schema.types] == ["int32", "int32", "int64"]
    assert schema.names == ["src", "dst", "weight"]
    assert json.loads(schema.metadata[b"sssp"]) == meta
    assert s.min() >= 1 and d.max() <= 3353
    # first arc of the file, ids kept 1-based
    first = next(ln for ln in (DATA / "rome99.gr").read_text().splitlines() if ln.startswith("a "))
    assert [int(x) for x in first.split()[1:]] == [s[0], d[0], w[0]]


def test_small_chunks_same_result(tmp_path):
    (s1, d1, w1), m1 = ingest_arcs(DATA / "rome99.gr", tmp_path, "a.parquet")
    (s2, d2, w2), m2 = ingest_arcs(DATA / "rome99.gr", tmp_path, "b.parquet", chunk_bytes=5000,
                                   row_group_size=1000)
    assert (s1 == s2).all() and (d1 == d2).all() and (w1 == w2).all() and m1 == m2
    assert pq.ParquetFile(tmp_path / "b.parquet").num_row_groups > 5


def _gapbs_out(name):
    text = (GAPBS / f"graph-{name}.out").read_text()
    n, m = map(int, re.search(r"has (\d+) nodes and (\d+) directed edges", text).groups())
    return n, m


def _distinct_nonloop(s, d):
    return sorted({(a, b) for a, b in zip(s.tolist(), d.tolist()) if a != b})


@pytest.mark.parametrize("name,shift", [("4.gr", 1), ("4.el", 0), ("4.wel", 0), ("4.mtx", 1), ("4w.mtx", 1),
                                        ("4.graph", 1), ("4w.graph", 1)])
def test_gapbs_counts_match_out(tmp_path, name, shift):
    (s, d, w), meta = ingest_arcs(GAPBS / name, tmp_path)
    n, m = _gapbs_out(name)
    assert meta["vertices"] == n
    assert len(_distinct_nonloop(s - shift, d - shift)) == m
    assert meta["id_base"] == shift


def test_gapbs_formats_agree(tmp_path):
    (gs, gd, gw), gm = ingest_arcs(GAPBS / "4.gr", tmp_path, "gr.parquet")
    (ws, wd, ww), wm = ingest_arcs(GAPBS / "4.wel", tmp_path, "wel.parquet")
    (es, ed, ew), em = ingest_arcs(GAPBS / "4.el", tmp_path, "el.parquet")
    (ms, md, mw), mm = ingest_arcs(GAPBS / "4.mtx", tmp_path, "mtx.parquet")
    (xs, xd, xw), xm = ingest_arcs(GAPBS / "4.graph", tmp_path, "graph.parquet")
    # .gr and .wel: the same weighted arcs in the same order, 1-based vs 0-based
    assert (gs - 1 == ws).all() and (gd - 1 == wd).all() and (gw == ww).all()
    assert (es == ws).all() and (ed == wd).all() and (ew == 1).all()
    assert gm["self_loops"] == wm["self_loops"] == em["self_loops"] == 36
    assert gm["parallel_arcs"] == em["parallel_arcs"] == 198
    # every format holds the same 53 distinct non-loop arcs
    ref = _distinct_nonloop(gs, gd)
    assert len(ref) == 53
    assert _distinct_nonloop(ms, md) == ref
    assert _distinct_nonloop(xs, xd) == ref
    assert xm["directed"] is True and xm["arcs"] == 53 and mm["arcs"] == 256


def test_random4c_and_sources(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "Random4-C.9.0.gr", tmp_path)
    assert meta["vertices"] == 64 and meta["arcs"] == 256
    ids = read_sources(DATA / "Random4-C.9.0.ss", vertices=64)
    assert ids.tolist() == [59, 9, 58, 7, 32, 47, 1, 3, 59, 24]
    out = tmp_path / "ss.parquet"
    m = ingest(DATA / "Random4-C.9.0.ss", out)
    assert m["format"] == "ss" and m["count"] == 10 and m["duplicates"] == 1
    assert pq.read_table(out).column("source").to_pylist() == ids.tolist()
    assert read_sources(out, vertices=64).tolist() == ids.tolist()


def test_plain_source_list(tmp_path):
    p = tmp_path / "src.txt"
    p.write_text("# sources\n3\n1\n\n3\n")
    assert read_sources(p, vertices=3).tolist() == [3, 1, 3]


def test_zero_based_option(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "clrs-p659-zero-based.gr", tmp_path, zero_based=True)
    assert meta["id_base"] == 0 and meta["vertices"] == 5 and meta["arcs"] == 10
    assert s.min() == 0 and max(s.max(), d.max()) == 4
    assert read_sources(DATA / "clrs-p659-zero-based.ss", vertices=5, id_base=0).tolist() == [0]


def test_zero_based_sources_file_records_its_base(tmp_path):
    """``ingest F.ss --zero-based`` records ``id_base`` 0 (it recorded 1 whatever the ids
    were); without it an id 0 is refused as the graphs' ids are (it was taken); and an
    ingested .ss file of another base than the graph's is refused where it is read as a
    sources file, not read with every id naming another vertex."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.graph import load_graph
    from gpu_sssp.pipeline.sources import read_id_file

    zero = tmp_path / "zero.ss.parquet"
    m = ingest(DATA / "clrs-p659-zero-based.ss", zero, zero_based=True)
    assert m["id_base"] == 0 and json.loads(pq.read_schema(zero).metadata[b"sssp"])["id_base"] == 0
    assert pq.read_table(zero).column("source").to_pylist() == [0]
    with pytest.raises(InputError, match=r"clrs-p659-zero-based\.ss:2: vertex id 0: DIMACS ids start at 1"):
        ingest(DATA / "clrs-p659-zero-based.ss", tmp_path / "one.ss.parquet")
    one = tmp_path / "r4.ss.parquet"
    assert ingest(DATA / "Random4-C.9.0.ss", one)["id_base"] == 1
    g0 = load_graph(DATA / "clrs-p659-zero-based.gr", zero_based=True, cache_dir=tmp_path)
    assert read_id_file(zero, g0).tolist() == [0]
    with pytest.raises(InputError, match="its ids are 1-based but .*'s are 0-based"):
        read_id_file(one, g0)
    # a 1-based graph of 64 vertices: every id of zero.ss would be in range, one off
    one_based = tmp_path / "z64.ss"
    one_based.write_text("p aux sp ss 2\ns 0\ns 5\n")
    z64 = tmp_path / "z64.ss.parquet"
    ingest(one_based, z64, zero_based=True)
    g1 = load_graph(DATA / "Random4-C.9.0.gr", cache_dir=tmp_path)
    with pytest.raises(InputError, match="its ids are 0-based but .*'s are 1-based.*with.?out zero_based=True"):
        read_id_file(z64, g1)
    assert read_id_file(one, g1).tolist()[0] == 59


def _symmetric(s, d, w=None):
    fwd = arcset(s, d, w)
    bwd = arcset(d, s, w)
    return fwd == bwd


def test_karate_symmetric(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "karate.mtx", tmp_path)
    assert meta["vertices"] == 34 and meta["arcs"] == 156 and meta["directed"] is False
    assert meta["weight_type"] == "int64" and (w == 1).all()
    assert _symmetric(s, d)


def test_usair_real_weights(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "USAir97.mtx", tmp_path)
    assert meta["vertices"] == 332 and meta["arcs"] == 4252 and meta["weight_type"] == "float64"
    assert w.dtype == np.float64 and 0 < w.min() < w.max() < 1
    assert _symmetric(s, d, w)


def test_metis_weighted(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "example_weighted.graph", tmp_path)
    assert meta["vertices"] == 132 and meta["arcs"] == 656 and meta["directed"] is False
    assert meta["metis_fmt"] == "011"
    assert _symmetric(s, d, w)


def test_metis_vertex_weights_and_sizes(tmp_path):
    # fmt 10 (one vertex weight), fmt 110 with ncon 2 (size + two weights)
    g = tmp_path / "a.graph"
    g.write_text("% triangle\n3 3 10\n5 2 3\n6 1 3\n7 1 2\n")
    (s, d, w), meta = ingest_arcs(g, tmp_path)
    assert arcset(s, d) == [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
    g2 = tmp_path / "b.graph"
    g2.write_text("3 2 111 2\n1 5 5 2 7\n1 6 6 1 7 3 9\n1 7 7 2 9\n")
    (s, d, w), meta = ingest_arcs(g2, tmp_path, "b.parquet")
    assert arcset(s, d, w) == [(1, 2, 7), (2, 1, 7), (2, 3, 9), (3, 2, 9)]


def test_metis_random_weights_same_both_directions(tmp_path):
    (s, d, w), meta = ingest_arcs(DATA / "example_weighted.graph", tmp_path, weights="random:1:50:3")
    assert meta["weights"] == "random:1:50:3" and 1 <= w.min() and w.max() <= 50
    assert _symmetric(s, d, w)


# audit 3, A7: a METIS file listing each edge at one end only (M entries) was read as
# directed arcs with no notice; standard METIS lists each edge at both ends (2M)
ONE_END = [
    ("half.graph", "3 2\n2\n3\n\n", [(1, 2, 1), (2, 3, 1)]),             # fmt 0
    ("halfw.graph", "3 2 1\n2 5\n3 7\n\n", [(1, 2, 5), (2, 3, 7)]),      # fmt 1
    ("back.graph", "% c\n3 2\n\n1\n2\n", [(2, 1, 1), (3, 2, 1)]),       # listed at the larger end
]


@pytest.mark.parametrize("name,text,arcs", ONE_END)
def test_metis_listing_each_edge_at_one_end_is_directed_and_says_so(tmp_path, caplog, name, text, arcs):
    p = tmp_path / name
    p.write_text(text)
    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.ingest"):
        (s, d, w), meta = ingest_arcs(p, tmp_path)
    assert arcset(s, d, w) == arcs
    assert meta["directed"] is True and meta["metis_listing"] == "one-end"
    hline = 2 if text.startswith("%") else 1
    header = text.splitlines()[hline - 1]
    assert meta["header"] == header
    assert meta["directed_reason"] == (
        f"METIS header '{header}' (line {hline}) announces 2 edges and the file lists 2 adjacency entries, "
        "so each edge is listed at one end only (METIS lists every edge at both ends, 4 entries): read as "
        "one directed arc per entry (gapbs's directed variant)")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"{p}: {meta['directed_reason']}; shortest paths follow the listed direction only: "
                      "ingest with undirected=True to read each entry as an edge both ways"]


@pytest.mark.parametrize("weights", [None, "random:1:1000:5"])
@pytest.mark.parametrize("name,text,arcs", ONE_END)
def test_metis_listing_each_edge_at_one_end_undirected_mirrors(tmp_path, caplog, name, text, arcs, weights):
    p = tmp_path / name
    p.write_text(text)
    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.ingest"):
        (s, d, w), meta = ingest_arcs(p, tmp_path, undirected=True, weights=weights)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert meta["directed"] is False and meta["metis_listing"] == "one-end" and "directed_reason" not in meta
    assert meta["arcs"] == 4 and _symmetric(s, d, w)
    if weights is None:
        assert arcset(s, d, w) == sorted(arcs + [(v, u, x) for u, v, x in arcs])


def test_metis_listing_each_edge_at_both_ends_is_not_flagged(tmp_path, caplog):
    p = tmp_path / "full.graph"
    p.write_text("3 2\n2\n1 3\n2\n")
    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.ingest"):
        (s, d, w), meta = ingest_arcs(p, tmp_path)
    assert not caplog.records
    assert meta["directed"] is False and meta["metis_listing"] == "both-ends" and "directed_reason" not in meta
    assert meta["header"] == "3 2" and meta["arcs"] == 4


@pytest.mark.parametrize("name,header", [("4w.graph", "14 53 1"), ("4.graph", "14 53 100")])
def test_gapbs_metis_is_directed_with_the_reason(tmp_path, caplog, name, header):
    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.ingest"):
        _, meta = ingest_arcs(GAPBS / name, tmp_path)
    assert meta["directed"] is True and meta["arcs"] == 53 and meta["metis_listing"] == "one-end"
    assert meta["directed_reason"].startswith(f"METIS header '{header}' (line 1) announces 53 edges")
    assert len(caplog.records) == 1 and "gapbs's directed variant" in caplog.records[0].getMessage()


def test_edgelist_variants(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("# Directed graph (each unordered pair of nodes is saved once)\n# FromNodeId\tToNodeId\n"
                 "0\t1\n1\t2\n2\t0\n\n5\t2\n")
    (s, d, w), meta = ingest_arcs(p, tmp_path)
    assert meta["format"] == "edgelist" and meta["id_base"] == 0 and meta["vertices"] == 6
    assert s.tolist() == [0, 1, 2, 5] and d.tolist() == [1, 2, 0, 2] and (w == 1).all()
    q = tmp_path / "g.wel"
    q.write_text("0 1 0.5\n1 2 -2.25\n")
    (s, d, w), meta = ingest_arcs(q, tmp_path, "w.parquet")
    assert meta["weight_type"] == "float64" and w.tolist() == [0.5, -2.25] and meta["negative_weights"] == 1


def test_undirected_option_and_self_loops(tmp_path):
    p = tmp_path / "u.gr"
    p.write_text("p sp 3 3\na 1 2 5\na 2 2 1\na 3 1 -4\n")
    (s, d, w), meta = ingest_arcs(p, tmp_path, undirected=True)
    assert list(zip(s.tolist(), d.tolist(), w.tolist())) == [(1, 2, 5), (2, 1, 5), (2, 2, 1), (3, 1, -4), (1, 3, -4)]
    assert meta["directed"] is False and meta["self_loops"] == 1 and meta["negative_weights"] == 2
    assert meta["weight_min"] == -4 and meta["arcs"] == 5


def test_comments_and_blank_lines_inside(tmp_path):
    p = tmp_path / "c.gr"
    p.write_text("c head\np sp 3 3\na 1 2 5\nc a comment with four tokens\nc 1 2 3\n\na 2 3 1\n  a 3 1 2  \n")
    (s, d, w), meta = ingest_arcs(p, tmp_path)
    assert s.tolist() == [1, 2, 3] and w.tolist() == [5, 1, 2]


def test_weight_types(tmp_path):
    for wt, dt in [("int32", np.int32), ("int64", np.int64), ("float32", np.float32), ("float64", np.float64)]:
        (s, d, w), meta = ingest_arcs(DATA / "rome99.gr", tmp_path, f"{wt}.parquet", weight_type=wt)
        assert w.dtype == dt and meta["weight_type"] == wt and w.max() == 12711


def test_random_weights_recipe(tmp_path):
    (s, d, w), meta = ingest_arcs(GAPBS / "4.el", tmp_path, weights="random:1:1000:7", undirected=True)
    draws = np.random.default_rng(7).integers(1, 1001, size=256)
    loops = s == d
    # one draw per input line, the same weight for both directions
    expect = []
    el = np.loadtxt(GAPBS / "4.el", dtype=np.int64)
    for (a, b), x in zip(el.tolist(), draws.tolist()):
        expect += [(a, b, x)] if a == b else [(a, b, x), (b, a, x)]
    assert list(zip(s.tolist(), d.tolist(), w.tolist())) == expect
    assert meta["weights"] == "random:1:1000:7" and meta["self_loops"] == int(loops.sum())
    (s, d, w), meta = ingest_arcs(GAPBS / "4.el", tmp_path, "f.parquet", weights="random-float:0.5:2:1")
    assert meta["weight_type"] == "float64" and 0.5 <= w.min() and w.max() < 2


def test_detect_format(tmp_path):
    assert detect_format(DATA / "rome99.gr") == "gr"
    assert detect_format(DATA / "karate.mtx") == "mtx"
    assert detect_format(DATA / "example_weighted.graph") == "metis"
    assert detect_format(GAPBS / "4.el") == "edgelist"
    assert detect_format(DATA / "Random4-C.9.0.ss") == "ss"
    p = tmp_path / "noext"
    p.write_text("c x\np tw 3 2\n1 2\n2 3\n")
    assert detect_format(p) == "pace"


def test_pace_small(tmp_path):
    p = tmp_path / "t.gr"
    p.write_text("c pace\np tw 4 3\n1 2\n2 3\nc mid comment\n3 4\n")
    (s, d, w), meta = ingest_arcs(p, tmp_path)
    assert meta["format"] == "pace" and meta["directed"] is False and meta["arcs"] == 6
    assert s.tolist() == [1, 2, 2, 3, 3, 4] and d.tolist() == [2, 1, 3, 2, 4, 3]


def test_co_file(tmp_path):
    p = tmp_path / "x.co"
    p.write_text("c coords\np aux sp co 2\nv 1 -73530767 41085396\nv 2 -73530538 41086098\n")
    out = tmp_path / "co.parquet"
    meta = ingest(p, out)
    t = pq.read_table(out)
    assert t.column_names == ["vertex", "x", "y"] and t.column("x").to_pylist() == [-73530767, -73530538]
    assert meta["count"] == 2


# -- the real files beside the checkout ---------------------------------------------
def test_real_ny_topology_seeded_weights(shared_data, tmp_path):
    (s, d, w), meta = ingest_arcs(shared_data / "road-topology" / "NY.gr.xz", tmp_path, weights="random:1:1000:7")
    assert meta["vertices"] == 264346 and meta["arcs"] == 730100 and meta["directed"] is False
    draws = np.random.default_rng(7).integers(1, 1001, size=365050)
    assert (w[0::2] == draws).all() and (w[1::2] == draws).all()
    assert (s[0::2] == d[1::2]).all() and meta["self_loops"] == 0 and meta["parallel_arcs"] == 0


@pytest.mark.parametrize("name,n,m", [("BAY.gr.xz", 321270, 397415), ("COL.gr.xz", 435666, 521200)])
def test_real_road_topologies(shared_data, tmp_path, name, n, m):
    (s, d, w), meta = ingest_arcs(shared_data / "road-topology" / name, tmp_path)
    assert (meta["vertices"], meta["arcs"]) == (n, 2 * m) and meta["weights"] == "unit"


@pytest.mark.parametrize("name,n,edges", [("delaunay_n15.graph", 32768, 98274), ("rgg_n_2_15_s0.graph", 32768, 160240)])
def test_real_metis(shared_data, tmp_path, name, n, edges):
    (s, d, w), meta = ingest_arcs(shared_data / "metis" / name, tmp_path)
    assert meta["vertices"] == n and meta["arcs"] == 2 * edges and meta["directed"] is False
    assert _symmetric(s, d)


def test_real_lederberg_tarball(shared_data, tmp_path):
    (s, d, w), meta = ingest_arcs(shared_data / "mtx" / "Lederberg.tar.gz", tmp_path)
    assert meta["vertices"] == 8843 and meta["arcs"] == 41601 and meta["directed"] is True
    assert meta["source_member"] == "Lederberg/Lederberg.mtx" and meta["weight_type"] == "int64"


@pytest.mark.parametrize("name", ["delaunay_n10.mtx", "chesapeake.mtx", "karate.mtx", "USAir97.mtx"])
def test_real_mtx(shared_data, tmp_path, name):
    (s, d, w), meta = ingest_arcs(shared_data / "mtx" / name, tmp_path)
    assert meta["directed"] is False and _symmetric(s, d)


def test_real_dimacs9(shared_data, tmp_path):
    (s, d, w), meta = ingest_arcs(shared_data / "dimacs9" / "rome99.gr", tmp_path)
    assert meta["vertices"] == 3353 and meta["arcs"] == 8870
    out = tmp_path / "co.parquet"
    m = ingest(shared_data / "dimacs9" / "USA-road-d.NY.first100k.co", out)
    assert m["count"] == 100000 and pq.read_metadata(out).num_rows == 100000
    assert read_sources(shared_data / "dimacs9" / "Random4-C.9.0.ss", vertices=64).tolist()[0] == 59


@pytest.mark.parametrize("name", ["4.gr", "4.el", "4.wel", "4.mtx", "4.graph", "4w.graph", "4w.mtx"])
def test_real_gapbs_same_as_shipped(shared_data, tmp_path, name):
    (s1, d1, w1), m1 = ingest_arcs(shared_data / "gapbs" / name, tmp_path, "a.parquet")
    (s2, d2, w2), m2 = ingest_arcs(GAPBS / name, tmp_path, "b.parquet")
    assert (s1 == s2).all() and (d1 == d2).all() and (w1 == w2).all()
    assert m1["source_sha256"] == m2["source_sha256"]


def test_graph_loader_reads_ingested(tmp_path):
    graph = pytest.importorskip("gpu_sssp.pipeline.graph")
    out = tmp_path / "rome.parquet"
    ingest(DATA / "rome99.gr", out)
    g = graph.read_parquet(out, cache=False)
    assert g.n == 3353


def test_metis_one_end_warning_also_when_the_cached_copy_is_read(tmp_path, caplog):
    """``load_graph`` on the raw METIS file: the first call ingests (and warns); the second
    reads the cached copy and must warn again - the user of solve/study never saw an ingest."""
    from gpu_sssp.pipeline.graph import load_graph

    p = tmp_path / "half.graph"
    p.write_text("3 2\n2\n3\n\n")
    for attempt in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline"):
            g = load_graph(p)
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and "each edge is listed at one end only" in warned[0], (attempt, warned)
        assert g.meta["directed_reason"]
    assert any(x.suffix == ".parquet" for x in (tmp_path / ".sssp-cache").iterdir())
