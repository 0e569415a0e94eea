"""Real weights with negative arcs on the CPU (found by a review, session 23; each failed
before): SciPy's Johnson never returned on a 5-arc graph (Ctrl-C could not stop it),
raised its own NegativeCycleError (a traceback) where the only cycle weighs 0, and a
cycle of exact weight +2**-55 that rounding kept going round was named a negative cycle
(exit 3).  Each case runs in a child process with a time limit, so that a hang fails the
test instead of stalling the run."""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

CHILD = r"""
import json, sys
import gpu_sssp as sssp
from gpu_sssp.kernels.errors import SsspError
arcs = json.loads(sys.argv[1]); source = int(sys.argv[2])
g = sssp.Graph.from_edges([a[0] for a in arcs], [a[1] for a in arcs], [float(a[2]) for a in arcs])
out = {}
for method in ("bellman-ford", "auto"):
    try:
        r = sssp.solve(g, [source], method=method, backend="cpu", predecessors=True)
        out[method] = {"dist": [float(x) for x in r.distances[0]], "pred": [int(x) for x in r.predecessors[0]]}
    except SsspError as exc:
        out[method] = {"error": type(exc).__name__, "message": str(exc)}
print(json.dumps(out))
"""


def _run(arcs, source):
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(arcs), str(source)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _exact(arcs, n, source):
    """Bellman-Ford in Fractions of the float64 weights (no negative cycle assumed)."""
    d = [None] * n
    d[source] = Fraction(0)
    for _ in range(n):
        for u, v, w in arcs:
            if d[u] is not None and (d[v] is None or d[u] + Fraction(float(w)) < d[v]):
                d[v] = d[u] + Fraction(float(w))
    return d


def _check(arcs, source, got):
    n = 1 + max(max(a[0], a[1]) for a in arcs)
    want = _exact(arcs, n, source)
    for v in range(n):
        if want[v] is None:
            assert got["dist"][v] == float("inf")
        else:
            assert got["dist"][v] == pytest.approx(float(want[v]), rel=1e-12, abs=1e-12)
    for v, p in enumerate(got["pred"]):  # the chains end at the source
        seen = 0
        while p >= 0:
            p = got["pred"][p]
            seen += 1
            assert seen <= n


def test_a_cycle_scipy_johnson_never_left_is_solved():
    arcs = [[0, 1, 2.0], [1, 2, -10.0], [2, 3, 0.1], [3, 4, 0.2], [4, 2, -0.3]]  # cycle: +2**-55
    out = _run(arcs, 0)
    for method in ("bellman-ford", "auto"):
        _check(arcs, 0, out[method])
        assert out[method]["dist"] == [0.0, 2.0, -8.0, -7.9, -7.7]


def test_a_zero_cycle_is_solved_not_a_scipy_traceback():
    arcs = [[9, 3, -0.19999999999999996], [3, 2, 1002.0], [2, 11, -999.0], [11, 4, -0.7], [4, 12, 0.3],
            [12, 5, 0.39999999999999997], [5, 4, -0.7]]
    out = _run(arcs, 9)
    for method in ("bellman-ford", "auto"):
        _check(arcs, 9, out[method])


def test_a_loop_of_rounding_is_not_called_a_negative_cycle():
    arcs = [[0, 1, 10.0], [1, 2, 0.1], [2, 3, 0.2], [3, 1, -0.3]]  # the cycle weighs +2**-55
    out = _run(arcs, 0)
    for method in ("bellman-ford", "auto"):
        got = out[method]
        if "error" not in got:  # an answer is fine, if it is the exact one
            _check(arcs, 0, got)
            continue
        assert got["error"] == "UnsettledError", got
        assert "cycle 2 -> 3 -> 1" in got["message"] and "2.7755575615628914e-17" in got["message"]


def test_a_real_negative_cycle_is_still_named():
    arcs = [[0, 1, 1.0], [1, 2, 0.5], [2, 3, -0.25], [3, 1, -0.5]]  # -0.25 exactly
    out = _run(arcs, 0)
    for method in ("bellman-ford", "auto"):
        assert out[method]["error"] == "NegativeCycleError", out[method]
