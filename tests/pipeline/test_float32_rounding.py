"""``--weight-type float32`` stores each real weight as the float32 nearest to its
decimal text.  Weights were read into float64 and then cast: a decimal just above (or
below) the midpoint of two float32 values that float64 reads as the midpoint itself was
rounded to even, the wrong neighbour (``1.0000000596046447763`` stored as 1.0, not
1 + 2**-23).  Arrow's own float32 parser, which rounds decimals correctly, is the oracle."""
from __future__ import annotations

from decimal import Decimal, getcontext

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest._records import float32_midpoints

getcontext().prec = 80


def _near_midpoints(rng, k):
    """Decimal tokens at, just above and just below float32 midpoints (which float64
    reads as the midpoint), and plain ones."""
    toks = []
    for _ in range(k):
        x = np.float32(rng.uniform(0.01, 1e6))
        up = np.nextafter(x, np.float32(np.inf))
        m = (Decimal(float(x)) + Decimal(float(up))) / 2
        step = (Decimal(float(up)) - Decimal(float(x))) * Decimal(2) ** -40  # far below float64's ulp there
        toks += [format(m + step, "f")[:45], format(m - step, "f")[:45], format(m, "f"), repr(float(x) * 1.1)]
    return toks


def _oracle(tokens):
    return np.asarray(pc.cast(pa.array([t.decode() if isinstance(t, bytes) else t for t in tokens]), pa.float32()))


def _weights(path):
    t = pq.read_table(path)
    assert t.schema.field("weight").type == pa.float32()
    return t.column("weight").to_numpy()


def test_the_midpoint_detector():
    one = 1.0 + 2.0**-24  # halfway between 1 and 1 + 2**-23
    got = float32_midpoints(np.array([one, 1.0, 1.0 + 2.0**-23, 1.0 + 2.0**-25, -one, 3e38 * 10, 0.0]))
    assert got.tolist() == [True, False, False, False, True, False, False]


@pytest.mark.parametrize("layout", ["plain", "comments", "precise"])
def test_gr_weights_are_the_nearest_float32(tmp_path, layout):
    rng = np.random.default_rng(7)
    toks = _near_midpoints(rng, 200)
    toks[0] = "1.0000000596046447763"  # the example above
    lines = [f"a {i % 50 + 1} {(i * 7) % 50 + 1} {t}" for i, t in enumerate(toks)]
    if layout == "comments":  # a comment line among the arcs: the fast path's row != line
        lines.insert(17, "c a comment")
    if layout == "precise":  # a zero with an exponent sends the chunk to the line-by-line path
        lines.append("a 1 2 0e0")
        toks.append("0e0")
    p = tmp_path / "g.gr"
    p.write_text(f"p sp 50 {len(toks)}\n" + "\n".join(lines) + "\n")
    ingest(p, tmp_path / "g.parquet", weight_type="float32")
    w = _weights(tmp_path / "g.parquet")
    want = _oracle(toks)
    assert w[0] == np.float32(1.0 + 2.0**-23)
    bad = np.flatnonzero(w.view(np.uint32) != want.view(np.uint32))
    assert not bad.size, [(toks[i], float(w[i]), float(want[i])) for i in bad[:5]]
    # the float64 reading of the same file is not affected
    ingest(p, tmp_path / "g64.parquet", weight_type="float64")
    w64 = pq.read_table(tmp_path / "g64.parquet").column("weight").to_numpy()
    assert w64.dtype == np.float64 and float32_midpoints(w64).sum() >= 200  # the cases were there


def test_matrix_market_and_edge_list_weights_too(tmp_path):
    rng = np.random.default_rng(11)
    toks = _near_midpoints(rng, 50)
    mtx = tmp_path / "g.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n"
                   f"30 30 {len(toks)}\n" + "".join(f"{i % 30 + 1} {(i * 7) % 30 + 1} {t}\n" for i, t in enumerate(toks)))
    ingest(mtx, tmp_path / "m.parquet", weight_type="float32")
    el = tmp_path / "g.wel"
    el.write_text("".join(f"{i % 30} {(i * 7) % 30} {t}\n" for i, t in enumerate(toks)))
    ingest(el, tmp_path / "e.parquet", weight_type="float32")
    want = _oracle(toks)
    for out in ("m.parquet", "e.parquet"):
        w = _weights(tmp_path / out)
        assert (w.view(np.uint32) == want.view(np.uint32)).all(), out
