"""--weight-type float32/float64: a weight the cast would change beyond rounding a real
number is refused with its file and line (it was stored changed, exit 0)."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest._sink import inexact_integers

from ._ingest_helpers import arcs


def _ingest(tmp_path, text, name="g.gr", **kw):
    p = tmp_path / name
    p.write_text(text)
    out = tmp_path / "out" / "g.parquet"
    return p, out, (lambda: ingest(p, out, **kw))


@pytest.mark.parametrize("wtype,w,stored", [
    ("float32", 16777217, 16777216.0),                  # the audit's example: 2**24 + 1
    ("float32", -16777217, -16777216.0),
    ("float32", 2**40 + 1, float(np.float32(2**40 + 1))),
    ("float64", 2**53 + 1, float(2**53)),               # the same rule for float64
    ("float64", 2**62 + 1, float(2**62)),
])
def test_integer_weight_not_exact_in_the_float_type_refused(tmp_path, wtype, w, stored):
    p, out, run = _ingest(tmp_path, f"p sp 3 2\na 1 2 1\na 2 3 {w}\n", weight_type=wtype)
    with pytest.raises(InputError) as ei:
        run()
    e = ei.value
    assert e.line == 3 and str(e).startswith(f"{p}:3: weight {w} is an integer that {wtype} cannot hold exactly")
    assert f"stored as {stored:.17g}" in e.message and "weight_type='int64'" in e.message
    assert not out.exists() and not any(out.parent.iterdir())


@pytest.mark.parametrize("wtype,ws", [
    ("float32", [16777216, -16777216, 2**25, 3 * 2**40, 2**62, -2**63 + 2**40]),
    ("float64", [2**53, 2**54, 3 * 2**60, -2**62]),
])
def test_integer_weights_exact_in_the_float_type_kept(tmp_path, wtype, ws):
    n = len(ws) + 1
    text = f"p sp {n} {len(ws)}\n" + "".join(f"a {i + 1} {i + 2} {w}\n" for i, w in enumerate(ws))
    _, out, run = _ingest(tmp_path, text, weight_type=wtype)
    run()
    _, _, got = arcs(out)
    assert [int(v) for v in got] == ws  # stored exactly


@pytest.mark.parametrize("tok,stored", [("1e-50", "0"), ("-1e-46", "-0"), ("1e-40", "9.9999461e-41")])
def test_real_weight_underflowing_float32_refused(tmp_path, tok, stored):
    p, out, run = _ingest(tmp_path, f"0 1 0.1\n1 2 {tok}\n2 3 0.5\n", name="g.wel", weight_type="float32")
    with pytest.raises(InputError) as ei:
        run()
    e = ei.value
    assert e.line == 2 and "underflows float32" in e.message and f"stored as {stored} " in e.message
    assert "weight_type='float64'" in e.message


def test_real_weights_round_to_float32_and_zero_stays(tmp_path):
    # rounding a real number to the nearest float32 is what float32 means: accepted
    _, out, run = _ingest(tmp_path, "0 1 0.1\n1 2 0\n2 3 1.17549435e-38\n3 4 -0.0\n", name="g.wel",
                          weight_type="float32")
    run()
    _, _, w = arcs(out)
    assert w.dtype == np.float32 and w.tolist() == [np.float32(0.1), 0.0, np.float32(1.17549435e-38), 0.0]
    # the same weights in float64 are the parsed values
    _, out, run = _ingest(tmp_path, "0 1 1e-50\n", name="h.wel", weight_type="float64")
    run()
    assert arcs(out)[2].tolist() == [1e-50]


def test_random_integer_weights_beyond_the_float_type_refused_up_front(tmp_path):
    _, out, run = _ingest(tmp_path, "p sp 3 2\na 1 2 1\na 2 3 1\n", weights="random:1:20000000:7",
                          weight_type="float32")
    with pytest.raises(UsageError, match=r"2\*\*24 = 16,777,216 .* float32"):
        run()
    _, out, run = _ingest(tmp_path, "p sp 3 2\na 1 2 1\na 2 3 1\n", weights="random:1:16777216:7",
                          weight_type="float32")
    run()


def test_random_float_weights_underflowing_float32_name_the_spec(tmp_path):
    _, out, run = _ingest(tmp_path, "p sp 3 2\na 1 2 1\na 2 3 1\n", weights="random-float:0:1e-39:7",
                          weight_type="float32")
    with pytest.raises(InputError) as ei:
        run()
    assert ei.value.line is None and "weights='random-float:0.0:1e-39:7' drew weight" in ei.value.message
    assert "underflows float32" in ei.value.message


def test_inexact_integers_is_exact_on_all_of_int64():
    rng = np.random.default_rng(5)
    w = np.concatenate([
        rng.integers(-2**63, 2**63 - 1, size=2000, endpoint=True),
        rng.integers(-2**26, 2**26, size=2000),
        rng.integers(-2**55, 2**55, size=2000),
        np.array([0, 1, -1, 2**24, 2**24 + 1, -2**24 - 1, 2**53, 2**53 + 1, 2**63 - 1, -2**63,
                  -2**63 + 1, 2**62, 3 << 60], dtype=np.int64),
    ]).astype(np.int64)
    # shifts keep the odd part: make some large values exact on purpose
    w = np.concatenate([w, (w >> 40) << 40, (w >> 11) << 11])
    for bits, ftype in ((24, np.float32), (53, np.float64)):
        got = inexact_integers(w, bits)
        # reference: round trip through the float type (a value that is not exact in
        # float32 cannot come back unchanged, whatever the rounding path)
        want = np.array([int(float(ftype(int(v)))) != int(v) for v in w])
        assert (got == want).all(), w[got != want][:5]


@pytest.mark.parametrize("name, text, line", [
    ("g.wel", "0 1 1\n1 2 2.5\n2 0 3\n", 2),
    ("g.gr", "p sp 3 3\na 1 2 1\na 2 3 0.5\na 3 1 7\n", 3),
])
def test_real_weights_after_integer_ones(tmp_path, name, text, line):
    """The first weight decides the column's type ("1", then "2.5"): refused with the
    way on (it named no way: --weight-type float64 refused the same file), and read
    with every weight real when a real weight type is asked for (found by a review;
    failed before)."""
    p, out, run = _ingest(tmp_path, text, name=name)
    with pytest.raises(InputError, match=rf":{line}: real weight .* after integer ones.*weight_type='float64'"):
        run()
    assert not out.exists()
    for wtype in ("float64", "float32"):
        meta = ingest(p, out, weight_type=wtype)
        assert meta["weight_type"] == wtype
        _s, _d, w = arcs(out)
        assert sorted(w.tolist()) == sorted([1.0, 2.5, 3.0] if name == "g.wel" else [1.0, 0.5, 7.0])
    with pytest.raises(InputError, match="real weight"):
        ingest(p, out, weight_type="int64")


def test_a_real_weight_in_an_integer_matrixmarket_file_is_one_line(tmp_path):
    """A MatrixMarket file declared 'integer' (its header, not its first weight, decides)
    with a real weight: one line at its line with any weight type; the re-read with real
    weights is for .gr and edge lists only (it crashed: read_mtx() got an unexpected
    keyword argument 'real_weights')."""
    text = "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 1\n2 3 2.5\n"
    for wtype in (None, "float64"):
        p, out, run = _ingest(tmp_path, text, name="g.mtx", weight_type=wtype)
        with pytest.raises(InputError, match=r"g\.mtx:4: non-numeric weight '2\.5' \(expected a decimal integer"):
            run()
        assert not out.exists()
