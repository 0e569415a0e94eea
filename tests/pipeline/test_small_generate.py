"""`sssp generate`: float32 weights are never subnormal."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline import generate as G
from gpu_sssp.workflows.cli import main

TINY = float(np.finfo(np.float32).tiny)


def _subnormal(w) -> int:
    w = np.asarray(w)
    return int(((w != 0) & (np.abs(w) < np.finfo(w.dtype).tiny)).sum())


@pytest.mark.parametrize("bounds", ["1e-45:1e-39", "0:1e-39", "-1e-40:1", "-1:-1e-39"])
def test_float32_bounds_below_the_normal_range_are_refused(tmp_path, capsys, bounds):
    """--weights 1e-45:1e-39 --weight-type float32 wrote 3,480 arcs, every weight
    subnormal (fewer significant bits; 0 on a GPU that flushes subnormals to zero)."""
    out = tmp_path / "g.parquet"
    argv = ["generate", "grid", "--rows", "30", "--cols", "30", f"--weights={bounds}", "--weight-type", "float32",
            "-o", str(out), "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: --weights {bounds}: ")
    assert "below float32's smallest normal number (1.17549435e-38)" in err and "--weight-type float64" in err
    assert not out.exists()
    # float64 holds them as normal numbers
    assert main([a if a != "float32" else "float64" for a in argv]) == 0


def test_float32_draws_around_zero_are_not_subnormal(tmp_path, capsys):
    """Bounds of ±1e-37 (normal both) drew 400 subnormal weights of 3,480."""
    out = tmp_path / "g.parquet"
    assert main(["generate", "grid", "--rows", "30", "--cols", "30", "--asymmetric", "--weights=-1e-37:1e-37",
                 "--weight-type", "float32", "-o", str(out), "-q"]) == 0
    w = pq.read_table(out).column("weight").to_numpy()
    assert w.dtype == np.float32 and len(w) == 3480
    assert _subnormal(w) == 0 and w.min() >= -1e-37 and w.max() <= 1e-37
    assert ((w == 0) | (np.abs(w) == np.float32(TINY))).sum() > 0  # the band's draws, rounded
    # the same draws elsewhere: a range clear of the band is drawn as before
    s, d, w1, n = G.grid(4, 4, seed=3, weights=(0.5, 2.0), weight_type="float32", undirected=False)
    rng = np.random.default_rng(3)
    assert np.array_equal(w1, rng.uniform(0.5, 2.0, size=len(w1)).astype(np.float32))


def test_float32_normal_rounds_the_band_to_the_nearer_end():
    x = np.array([0.0, 1e-45, -1e-45, TINY * 0.4, TINY * 0.6, -TINY * 0.6, TINY, -2.0, 1e-38, -1e-40])
    w = G._float32_normal(x)
    assert w.dtype == np.float32 and _subnormal(w) == 0
    assert w.tolist() == [0.0, 0.0, 0.0, 0.0, np.float32(TINY), -np.float32(TINY), np.float32(TINY), -2.0,
                          np.float32(TINY), 0.0]


def test_potentials_on_float32_leave_no_subnormal_weight():
    """apply_potentials cast its float64 sums w + p(u) - p(v) to float32: a sum below
    the normal range became a subnormal weight.  Potentials 0 and w + 1e-40 (the
    bisection ends at the scale 2**-50) make the arc 0 -> 1 weigh -1e-40."""

    class Bases:  # the potentials' draw, chosen
        def random(self, n):
            return np.array([0.0, (TINY + 1e-40) * 2.0 ** 50])

    src, dst = np.array([0, 1]), np.array([1, 0])
    w = np.array([TINY, TINY], dtype=np.float32)
    out = G.apply_potentials(src, dst, w, 2, 0.4, rng=Bases())
    assert out.dtype == np.float32 and _subnormal(out) == 0
    assert out.tolist() == [0.0, np.float32(2 * TINY + 1e-40)]  # -1e-40 is nearer 0 than -TINY


def test_the_python_api_refuses_too():
    with pytest.raises(UsageError, match=r"^--weights 0:1e-40: 1e-40 is below float32's smallest normal"):
        G.grid(3, 3, weights=(0, 1e-40), weight_type="float32")
    G.grid(3, 3, weights=(0, TINY), weight_type="float32")  # the smallest normal number is a bound


# -- hostile values ------------------------------------------------------------------------
def _run(tmp_path, capsys, *argv):
    out = tmp_path / "g.parquet"
    try:
        status = main(["generate", *argv, "-o", str(out), "-q"])
    except SystemExit as exc:  # argparse's own refusal
        status = exc.code
    return status, capsys.readouterr().err.strip().splitlines()[-1:], out


@pytest.mark.parametrize("bounds", ["nan:1", "1:inf", "1:1e400", "-inf:0"])
def test_bounds_that_are_not_finite_are_named_as_written(tmp_path, capsys, bounds):
    """nan:1 and inf:1 said "expected LO:HI, e.g. 1:100" (they are LO:HI); 1:1e400 was
    refused as "--weights 1:inf"."""
    status, err, out = _run(tmp_path, capsys, "grid", "--rows", "3", "--cols", "3", f"--weights={bounds}",
                            "--weight-type", "float64")
    assert status == 2 and not out.exists()
    assert err[0].endswith(f"argument --weights: '{bounds}': the bounds must be finite numbers (LO:HI, e.g. 1:100) "
                           "(sssp generate grid -h shows the usage)")


def test_negative_zero_bound_is_zero(tmp_path, capsys):
    """--weights=-0.0:1 was recorded as uniform:-0.0:1 (label and generator metadata)."""
    from gpu_sssp.pipeline.ingest import read_meta

    status, _, out = _run(tmp_path, capsys, "grid", "--rows", "3", "--cols", "3", "--weights=-0.0:1",
                          "--weight-type", "float64")
    assert status == 0
    meta = read_meta(out)
    assert meta["weights"] == "uniform:0.0:1:0" and meta["generator"]["weights"] == [0.0, 1]
    assert str(G.generate("grid", tmp_path / "h.parquet", rows=2, cols=2, weights=(-0.0, 1.0),
                          weight_type="float32")["weights"]).startswith("uniform:0.0:1.0:")


@pytest.mark.parametrize("argv, message", [
    (["random", "-n", "5", "-m", "10" * 13], "G(n, m) has at most 20 distinct arcs on 5 vertices, not "),
    (["random", "-n", "5", "-m", "11", "--undirected"], "G(n, m) has at most 10 distinct edges on 5 vertices, not 11"),
])
def test_more_edges_than_g_n_m_holds_says_so_first(tmp_path, capsys, argv, message):
    """-n 5 -m 10**26 was refused for the memory its arcs would take (1.6e18 GB), not
    for asking more arcs than 5 vertices have."""
    status, err, out = _run(tmp_path, capsys, *argv)
    assert status == 2 and message in err[0] and "memory" not in err[0]


def test_gigabytes_are_written_exactly():
    """25.6e15 GB was written "25,599,999,999,999,996.0" (a float's digits)."""
    assert G._gigabytes(25_600_000_000_000_000 * 10**9) == "25,600,000,000,000,000.0"
    assert G._gigabytes(1_234_567_890) == "1.2" and G._gigabytes(0) == "0.0"
