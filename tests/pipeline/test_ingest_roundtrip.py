"""Property: random edge lists written as .gr / .el / .wel / .mtx round-trip exactly."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_sssp.pipeline.ingest import ingest

from ._ingest_helpers import arcs

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def edge_lists(draw):
    n = draw(st.integers(1, 40))
    m = draw(st.integers(0, 60))
    ids = st.integers(0, n - 1)
    edges = draw(st.lists(st.tuples(ids, ids, st.integers(-10**12, 10**12)), min_size=m, max_size=m))
    return n, edges


def _check(out, n, edges, base, weighted=True):
    s, d, w = arcs(out)
    assert s.tolist() == [u + base for u, _, _ in edges]
    assert d.tolist() == [v + base for _, v, _ in edges]
    if weighted:
        assert w.tolist() == [x for _, _, x in edges]
    else:
        assert (w == 1).all()


@SETTINGS
@given(g=edge_lists(), chunk=st.sampled_from([64, 1 << 20]))
def test_gr_roundtrip(tmp_path, g, chunk):
    n, edges = g
    p = tmp_path / "g.gr"
    lines = ["c random", f"p sp {n} {len(edges)}"] + [f"a {u + 1} {v + 1} {w}" for u, v, w in edges]
    p.write_text("\n".join(lines) + "\n")
    meta = ingest(p, tmp_path / "g.parquet", chunk_bytes=chunk)
    _check(tmp_path / "g.parquet", n, edges, 1)
    assert meta["vertices"] == n and meta["arcs"] == len(edges)
    assert meta["self_loops"] == sum(u == v for u, v, _ in edges)
    assert meta["parallel_arcs"] == len(edges) - len({(u, v) for u, v, _ in edges})
    assert meta["negative_weights"] == sum(w < 0 for _, _, w in edges)


@SETTINGS
@given(g=edge_lists(), weighted=st.booleans(), tabs=st.booleans())
def test_edgelist_roundtrip(tmp_path, g, weighted, tabs):
    n, edges = g
    if not edges:
        return
    sep = "\t" if tabs else " "
    p = tmp_path / ("g.wel" if weighted else "g.el")
    body = [sep.join(map(str, (u, v, w) if weighted else (u, v))) for u, v, w in edges]
    p.write_text("# comment\n" + "\n".join(body) + "\n")
    meta = ingest(p, tmp_path / "g.parquet", chunk_bytes=64)
    _check(tmp_path / "g.parquet", n, edges, 0, weighted)
    assert meta["vertices"] == max(max(u, v) for u, v, _ in edges) + 1


@SETTINGS
@given(g=edge_lists(), real=st.booleans())
def test_mtx_roundtrip(tmp_path, g, real):
    n, edges = g
    p = tmp_path / "g.mtx"
    field = "real" if real else "integer"
    rows = [f"{u + 1} {v + 1} {float(w) / 8 if real else w}" for u, v, w in edges]
    p.write_text(f"%%MatrixMarket matrix coordinate {field} general\n% c\n{n} {n} {len(edges)}\n"
                 + "".join(r + "\n" for r in rows))
    meta = ingest(p, tmp_path / "g.parquet", chunk_bytes=64)
    s, d, w = arcs(tmp_path / "g.parquet")
    assert s.tolist() == [u + 1 for u, _, _ in edges] and d.tolist() == [v + 1 for _, v, _ in edges]
    if real:
        assert np.array_equal(w, np.array([float(x) / 8 for _, _, x in edges], dtype=np.float64))
    else:
        assert w.tolist() == [x for _, _, x in edges]
    assert meta["vertices"] == n
