"""Synthetic graph generators written straight to the Parquet edge list.

Families of the H-BF paper's tables: R-MAT (GTGraph's defaults a, b, c, d = 0.45, 0.15,
0.15, 0.25), road-like 2-D grids and Erdos-Renyi G(n, m). All are vectorised NumPy,
seeded (``numpy.random.default_rng(seed)``) and deterministic for a seed. Ids are 0-based.

``negative_fraction`` makes graphs with negative weights but no negative cycle by
potentials: ``w'(u, v) = w(u, v) + p(u) - p(v)`` with ``w >= 0``; every cycle keeps its
(non-negative) total, and the scale of ``p`` is chosen so that about the requested
fraction of arcs becomes negative.  Only for directed graphs: the potentials give the
two arcs of an edge different weights, and an undirected edge of negative weight would
be a negative cycle (there and back), so ``negative_fraction`` with ``undirected`` is
refused.

Bad arguments are one line (``UsageError``): integer weight types need whole-number
bounds (``--weights 0.2:0.9`` would draw only zeros), seeds are whole numbers >= 0.
float32 weights are never subnormal: a nonzero bound below float32's smallest normal
number in magnitude is refused, and a draw below it (a range around 0) is rounded to 0
or to that number (:func:`_float32_normal`).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from gpu_sssp.kernels.errors import UsageError, opt
from gpu_sssp.kernels import memory

from .ingest._sink import EdgeSink, WeightPlan, WEIGHT_TYPES

__all__ = ["rmat", "grid", "random_graph", "apply_potentials", "write", "generate", "planned_size",
           "check_size"]

log = logging.getLogger(__name__)

_CHUNK = 1 << 22

#: the largest n whose vertex pairs fit one int64 key u * n + v (n * n <= 2**63)
_KEY_LIMIT = 3_037_000_499


#: float32's smallest normal number: nonzero weights below it in magnitude are subnormal
#: (fewer significant bits; 0 on a GPU that flushes subnormals to zero)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _float32_normal(x) -> np.ndarray:
    """Real weights ``x`` (float64) as float32 with no subnormal value: each one rounded
    to the nearest float32, and one whose magnitude is below float32's smallest normal
    number (1.1754944e-38) to the nearer of 0 and that number (with its sign).  A
    subnormal float32 weight keeps fewer significant bits than the type promises, and a
    GPU kernel compiled to flush subnormals to zero (FTZ) reads it as 0: the solvers'
    distances would differ from the exact ones by the weight itself.  Ingestion refuses
    such weights in a file (``ingest._sink``); drawn weights are rounded so, which keeps
    them within the bounds (a nonzero bound is at least that number in magnitude,
    :func:`_weight_bounds`, so the band is reached only by a range around 0)."""
    x = np.asarray(x, dtype=np.float64)
    w = x.astype(np.float32)
    small = np.abs(x) < _FLOAT32_TINY
    if small.any():
        up = small & (np.abs(x) >= _FLOAT32_TINY / 2)
        w[small] = 0.0
        w[up] = np.copysign(np.float32(_FLOAT32_TINY), x[up]).astype(np.float32)
    return w


def _weights(rng, m, lo, hi, weight_type):
    if weight_type == "float32":
        return _float32_normal(rng.uniform(lo, hi, size=m))
    if weight_type.startswith("float"):
        return rng.uniform(lo, hi, size=m).astype(WEIGHT_TYPES[weight_type])
    # endpoint=True: the same draws as [lo, hi + 1), without hi + 1 overflowing at 2**63 - 1
    return rng.integers(int(lo), int(hi), size=m, dtype=np.int64,
                        endpoint=True).astype(WEIGHT_TYPES[weight_type], copy=False)


def _rng(seed):
    """``numpy.random.default_rng(seed)``, a seed it refuses (negative, not a whole
    number) one line."""
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise UsageError(f"--seed {seed!r}: expected a whole number >= 0")
        if seed < 0:
            raise UsageError(f"--seed {seed}: a seed must be a whole number >= 0 (NumPy's generators "
                             "take no negative seed)")
    return np.random.default_rng(seed)


def _weight_bounds(weights, weight_type):
    """``(lo, hi)`` of ``weights`` checked against ``weight_type``: numbers, finite,
    ``LO <= HI``, within the type; whole numbers (returned as ints) for integer types,
    where a fractional bound would be rounded to draws outside ``[LO, HI]`` (0.2:0.9
    gave all zeros, 1.5:3.5 drew 1).  Real types keep the bounds as given."""
    if weight_type not in WEIGHT_TYPES:
        raise UsageError(f"weight type {weight_type!r}: expected one of {', '.join(WEIGHT_TYPES)}")
    try:
        lo, hi = weights
    except (TypeError, ValueError):
        raise UsageError(f"weights {weights!r}: expected (LO, HI)") from None
    spec = f"--weights {lo}:{hi}"
    for v in (lo, hi):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise UsageError(f"{spec}: the bounds must be numbers, got {v!r}")
        if not np.isfinite(float(v)):
            raise UsageError(f"{spec}: the bounds must be finite numbers")
    if hi < lo:
        raise UsageError(f"{spec}: HI < LO")
    if weight_type.startswith("int"):
        frac = [v for v in (lo, hi) if not float(v).is_integer()]
        if frac:
            raise UsageError(f"{spec}: {weight_type} weights are whole numbers, and {frac[0]} is not one; "
                             "give whole-number bounds, or draw real weights with --weight-type float64")
        lo, hi = int(lo), int(hi)
        info = np.iinfo(WEIGHT_TYPES[weight_type])
        if lo < info.min or hi > info.max:
            raise UsageError(f"{spec} do not fit {weight_type}")
    else:
        top = float(np.finfo(WEIGHT_TYPES[weight_type]).max)
        if abs(float(lo)) > top or abs(float(hi)) > top:
            raise UsageError(f"{spec} do not fit {weight_type} (largest {top:.6g})")
        if not np.isfinite(float(hi) - float(lo)):
            raise UsageError(f"{spec}: the range HI - LO overflows float64")
        # -0.0 is 0.0 (the label and the metadata said uniform:-0.0:1)
        lo, hi = (0.0 if isinstance(v, (float, np.floating)) and v == 0 else v for v in (lo, hi))
        small = [v for v in (lo, hi) if v != 0 and abs(float(v)) < _FLOAT32_TINY]
        if weight_type == "float32" and small:
            raise UsageError(f"{spec}: {small[0]} is below float32's smallest normal number ({_FLOAT32_TINY:.9g}) "
                             "in magnitude: float32 would store it as 0 or as a subnormal, with fewer significant "
                             "bits (a GPU flushing subnormals to zero reads 0); give bounds of 0 or at least "
                             f"{_FLOAT32_TINY:.9g} in magnitude, or --weight-type float64")
    return lo, hi


def _check_weight_args(weights, weight_type, negative_fraction, undirected):
    """The checked ``(lo, hi)`` (:func:`_weight_bounds`), with the negative fraction:
    in ``[0, 1)``, only over non-negative base weights, and never on an undirected
    graph (its two arcs of one edge have one weight, so a negative edge is a negative
    cycle, there and back; potentials would give the two directions different
    weights and the graph would no longer be undirected)."""
    lo, hi = _weight_bounds(weights, weight_type)
    if not 0.0 <= negative_fraction < 1.0:
        raise UsageError(f"{opt('--negative-fraction ' + str(negative_fraction))}: expected 0 <= F < 1")
    if negative_fraction > 0 and lo < 0:
        raise UsageError(f"{opt('--negative-fraction')} needs non-negative base weights (LO >= 0), "
                         "otherwise a negative cycle could appear")
    if negative_fraction > 0 and undirected:
        raise UsageError(f"{opt('--negative-fraction ' + str(negative_fraction))} with an undirected graph: an "
                         "undirected edge of negative weight is a negative cycle (the edge there and back), so an "
                         "undirected graph cannot have negative weights without negative cycles; generate a "
                         "directed one ("
                         + opt("no --undirected; for grid, --asymmetric", python="undirected=False") + ")")
    return lo, hi


def rmat(scale: int, edge_factor: int = 16, *, a=0.45, b=0.15, c=0.15, d=None, seed=0,
         weights=(1, 100), weight_type="int64", undirected=False, negative_fraction=0.0):
    """R-MAT graph with ``2**scale`` vertices and ``edge_factor * 2**scale`` edges.

    Parameters
    ----------
    scale, edge_factor : int
    a, b, c, d : float
        Quadrant probabilities (GTGraph defaults); ``d`` defaults to ``1 - a - b - c``.
    seed : int
    weights : (lo, hi)
        Uniform integer weights in ``[lo, hi]`` (real for float weight types).  For
        integer types the bounds must be whole numbers (``2.0`` is, ``0.5`` is refused:
        rounding would draw weights outside the range).
    weight_type : str
    undirected : bool
        Emit both arcs of every edge, with the same weight.
    negative_fraction : float
        About this fraction of arcs gets a negative weight, without negative cycles.
        Refused with ``undirected``: a negative undirected edge is a negative cycle.

    Returns
    -------
    src, dst, w : numpy.ndarray
    n : int
        Number of vertices.
    """
    if d is None:
        d = 1.0 - a - b - c
    probs = np.array([a, b, c, d], dtype=np.float64)
    if (probs < 0).any() or abs(probs.sum() - 1.0) > 1e-9:
        raise UsageError(f"R-MAT probabilities a, b, c, d = {a}, {b}, {c}, {d} must be >= 0 and sum to 1")
    if not (0 <= scale <= 40) or edge_factor < 0:
        raise UsageError(f"{opt('--scale')} must be in 0..40 and {opt('--edge-factor')} >= 0, got "
                         f"{scale} and {edge_factor}")
    weights = _check_weight_args(weights, weight_type, negative_fraction, undirected)
    rng = _rng(seed)
    n = 1 << scale
    m = int(edge_factor) * n
    idt = np.int32 if n <= 2**31 else np.int64
    src = np.zeros(m, dtype=idt)
    dst = np.zeros(m, dtype=idt)
    ab, abc = a + b, a + b + c
    for lo in range(0, m, _CHUNK):
        hi = min(m, lo + _CHUNK)
        s = src[lo:hi]
        t = dst[lo:hi]
        for level in range(scale):
            r = rng.random(hi - lo)
            # quadrant: a (0,0), b (0,1), c (1,0), d (1,1)
            s |= (r >= ab).astype(idt) << idt(level)
            t |= (((r >= a) & (r < ab)) | (r >= abc)).astype(idt) << idt(level)
    return _weighted(src, dst, n, rng, weights, weight_type, undirected, negative_fraction)


def grid(rows: int, cols: int, *, seed=0, weights=(1, 100), weight_type="int64", negative_fraction=0.0,
         undirected=True):
    """2-D ``rows x cols`` 4-neighbour grid, both directions of every edge with the same
    weight (road-like). Vertex ``r * cols + c``. ``undirected=False`` draws the two
    directions' weights independently; ``negative_fraction`` needs it (a directed grid:
    an undirected edge of negative weight would be a negative cycle)."""
    if rows < 1 or cols < 1:
        raise UsageError(f"{opt('--rows')} and {opt('--cols')} must be >= 1, got {rows} and {cols}")
    weights = _check_weight_args(weights, weight_type, negative_fraction, undirected)
    rng = _rng(seed)
    n = rows * cols
    idt = np.int32 if n <= 2**31 else np.int64
    ids = np.arange(n, dtype=idt).reshape(rows, cols)
    hu, hv = ids[:, :-1].ravel(), ids[:, 1:].ravel()
    vu, vv = ids[:-1, :].ravel(), ids[1:, :].ravel()
    u = np.concatenate([hu, vu])
    v = np.concatenate([hv, vv])
    if undirected:
        w = _weights(rng, len(u), weights[0], weights[1], weight_type)
        src, dst, w = _both(u, v, w)
    else:
        src = np.empty(2 * len(u), dtype=idt)
        dst = np.empty(2 * len(u), dtype=idt)
        src[0::2], src[1::2] = u, v
        dst[0::2], dst[1::2] = v, u
        w = _weights(rng, len(src), weights[0], weights[1], weight_type)
    if negative_fraction > 0:
        w = apply_potentials(src, dst, w, n, negative_fraction, rng=rng)
    return src, dst, w, n


def gnm_max_edges(n: int, undirected: bool) -> int:
    """The most distinct arcs ``u != v`` (unordered pairs when ``undirected``) that
    G(n, m) can draw on ``n`` vertices (the one bound of ``random_graph`` and
    ``check_size``)."""
    return n * (n - 1) // (2 if undirected else 1)


def random_graph(n: int, m: int, *, seed=0, weights=(1, 100), weight_type="int64", undirected=False,
                 negative_fraction=0.0):
    """Erdos-Renyi G(n, m): ``m`` distinct edges chosen uniformly, no self-loops.

    Directed: ``m`` distinct arcs ``u != v``. Undirected: ``m`` distinct unordered pairs,
    each emitted in both directions with one weight (``2 m`` arcs); not with
    ``negative_fraction`` (a negative undirected edge is a negative cycle).
    """
    if n < 1 or m < 0:
        raise UsageError(f"{opt('-n', python='n=')} must be >= 1 and {opt('-m', python='m=')} >= 0, got {n} and {m}")
    cap = gnm_max_edges(n, undirected)
    if m > cap:
        raise UsageError(f"G(n={n}, m={m}): at most {cap} distinct {'edges' if undirected else 'arcs'}")
    if n - 1 > np.iinfo(np.int64).max:
        raise UsageError(f"G(n={n}, m={m}): ids run up to 2**63 - 1 (int64)")
    weights = _check_weight_args(weights, weight_type, negative_fraction, undirected)
    rng = _rng(seed)
    # a pair is one int64 key u * n + v while n * n fits; beyond (n > 3,037,000,499) the
    # key wrapped and wrote negative ids: pairs are then kept as two columns
    keyed = n <= _KEY_LIMIT
    idt = np.int32 if n <= 2**31 else np.int64
    if m > cap // 2:
        # dense: m of all the pairs, drawn without repeats.  Drawing pairs until m distinct
        # ones are found took a pass per few new pairs near the bound (n=300, m=n(n-1):
        # still running after 60 s); here the pairs are at most twice m
        idx = rng.choice(cap, size=m, replace=False).astype(np.int64)
        if undirected:
            iu, iv = np.triu_indices(n, 1)
            src, dst = iu[idx].astype(idt), iv[idx].astype(idt)
        else:
            u, r = np.divmod(idx, n - 1)
            src, dst = u.astype(idt), (r + (r >= u)).astype(idt)
        return _weighted(src, dst, n, rng, weights, weight_type, undirected, negative_fraction)
    pairs = np.zeros(0, dtype=np.int64) if keyed else np.zeros((0, 2), dtype=np.int64)
    while len(pairs) < m:
        k = int((m - len(pairs)) * 1.1) + 16
        u = rng.integers(0, n, size=k, dtype=np.int64)
        v = rng.integers(0, n, size=k, dtype=np.int64)
        ok = u != v
        u, v = u[ok], v[ok]
        if undirected:
            u, v = np.minimum(u, v), np.maximum(u, v)
        new = u * n + v if keyed else np.stack([u, v], axis=1)
        # keep first occurrences in draw order, drop pairs seen before
        allk = np.concatenate([pairs, new])
        _, first = np.unique(allk, return_index=True, axis=None if keyed else 0)
        pairs = allk[np.sort(first)]  # first occurrences, in draw order
    pairs = pairs[:m]
    src = (pairs // n if keyed else pairs[:, 0]).astype(idt)
    dst = (pairs % n if keyed else pairs[:, 1]).astype(idt)
    return _weighted(src, dst, n, rng, weights, weight_type, undirected, negative_fraction)


def _weighted(src, dst, n, rng, weights, weight_type, undirected, negative_fraction):
    """Draw one weight per edge, emit both directions when undirected, then make the
    asked fraction of arcs negative by potentials; returns ``(src, dst, w, n)``."""
    w = _weights(rng, len(src), weights[0], weights[1], weight_type)
    if undirected:
        src, dst, w = _both(src, dst, w)
    if negative_fraction > 0:
        w = apply_potentials(src, dst, w, n, negative_fraction, rng=rng)
    return src, dst, w, n


def _both(u, v, w):
    """Both arcs of every edge, side by side; a self-loop (R-MAT draws them) once: its
    two directions are the same arc, and writing it twice made a duplicate."""
    m = len(u)
    src = np.empty(2 * m, dtype=u.dtype)
    dst = np.empty(2 * m, dtype=u.dtype)
    src[0::2], src[1::2] = u, v
    dst[0::2], dst[1::2] = v, u
    w = np.repeat(w, 2)
    loops = np.flatnonzero(u == v)
    if len(loops):
        keep = np.ones(2 * m, dtype=bool)
        keep[2 * loops + 1] = False
        src, dst, w = src[keep], dst[keep], w[keep]
    return src, dst, w


def apply_potentials(src, dst, w, n, fraction, *, rng):
    """Reweight ``w`` (all >= 0) by vertex potentials so that about ``fraction`` of the arcs
    become negative; cycle totals do not change, so no negative cycle appears.

    The potentials are ``p = round(s * U[0, 1))`` per vertex with the scale ``s`` found by
    bisection on (a sample of) the arcs.  A fraction that no scale reaches (of two
    opposite arcs one at most is negative) is refused (``UsageError``).
    """
    if len(w) == 0:
        return w
    if (w < 0).any():
        raise UsageError("potentials need non-negative base weights")
    base = rng.random(n)
    is_int = w.dtype.kind in "iu"
    samp = np.arange(len(w)) if len(w) <= 1 << 20 else rng.integers(0, len(w), size=1 << 20)
    ws, us, vs = w[samp].astype(np.float64), src[samp], dst[samp]

    def pot(s, idx=None):
        p = base * s if idx is None else base[idx] * s
        return np.floor(p) if is_int else p

    def frac(s):
        return float(np.mean(ws + pot(s, us) - pot(s, vs) < 0))

    lo, hi = 0.0, max(float(w.max()), 1.0)
    while frac(hi) < fraction and hi < 1e15:
        hi *= 2
    reach = frac(hi)
    if reach < fraction:
        # (F = 0.6 on a graph whose arcs come in opposite pairs: the scale ran to its 1e15
        # cap, and a float graph of weights near +-1.7e15 with 50% negative was written with
        # exit 0; integer weights were refused as drawn too large by --weights)
        raise UsageError(f"{opt(f'--negative-fraction {fraction:g}', python=f'negative_fraction={fraction!r}')}: "
                         f"vertex potentials make at most about {reach:.2f} of this graph's arcs negative (they "
                         "keep every cycle's total, so of two opposite arcs one at most); give a smaller fraction")
    for _ in range(50):
        mid = (lo + hi) / 2
        if frac(mid) < fraction:
            lo = mid
        else:
            hi = mid
    p = pot(hi)
    out = w.astype(np.float64) + p[src] - p[dst]
    if is_int:
        info = np.iinfo(w.dtype)
        if out.min() < info.min or out.max() > info.max:
            raise UsageError("reweighted values overflow the weight type; use int64")
        return np.rint(out).astype(w.dtype)
    return _float32_normal(out) if w.dtype == np.float32 else out.astype(w.dtype)


def write(out, src, dst, w, n, *, directed=True, kind="generated", params=None, weights_label=None,
          row_group_size=1 << 20, display=None, drawn=None) -> dict:
    """Write generated arrays as the Parquet edge list (id base 0) with metadata.

    The weights are held to the solvers' rule on path lengths, as ingestion holds a
    file's (``kernels.graph.path_bound_of``): a graph whose shortest paths could pass
    2**53 (integer weights) or float64's range was written and then refused by every
    solve.  ``display`` names the graph and ``drawn`` the option that drew the weights
    in that refusal.

    Returns
    -------
    dict
        The stored metadata.

    Raises
    ------
    pipeline.errors.InputError
        Weights too large for exact (finite) shortest paths; nothing is written.
    """
    from .ingest import __version__

    wt = {np.dtype(v).name: k for k, v in WEIGHT_TYPES.items()}[np.dtype(w.dtype).name]
    wp = WeightPlan("file", True, wt.startswith("float"), wt, str(out))
    if weights_label:
        wp.label_override = weights_label
    id_type = "int32" if n - 1 <= np.iinfo(np.int32).max else "int64"
    sink = EdgeSink(out, display or str(out), vertices=int(n), id_base=0, expand=False, weights=wp,
                    id_type=id_type, row_group_size=row_group_size,
                    drawn=drawn or f"the generated weights ({weights_label or wt})")
    try:
        for lo in range(0, len(src), _CHUNK):
            hi = min(len(src), lo + _CHUNK)
            sink.add(src[lo:hi], dst[lo:hi], w[lo:hi], None)
        sink.finish_checks(int(n))  # the solvers' bound on path lengths (the in-arc sum at commit)
        meta = {
            "vertices": int(n),
            "directed": bool(directed),
            "source_file": None,
            "source_sha256": None,
            "format": kind,
            "generator": dict(params or {}),
            "created_by": f"sssp-generate {__version__}",
        }
        return sink.commit(meta)
    except BaseException:
        sink.abort()
        raise


def planned_size(family: str, **kw) -> tuple[int, int, str] | None:
    """``(vertices, arcs, description)`` of the graph ``family`` with parameters ``kw``
    would have, computed before anything is generated (Python integers: no overflow);
    for ``rmat --undirected`` the arcs are the most there can be (a self-loop drawn is
    one arc, not two); ``None`` when the parameters are out of their domain (the generator refuses them)."""
    if family == "rmat":
        scale, ef = int(kw.get("scale", -1)), int(kw.get("edge_factor", 16))
        if not 0 <= scale <= 40 or ef < 0:  # (rmat's own refusal; 1 << 100000 was formatted)
            return None
        n = 1 << scale
        return (n, ef * n * (2 if kw.get("undirected") else 1),
                f"rmat --scale {scale} --edge-factor {ef}" + (" --undirected" if kw.get("undirected") else ""))
    if family == "grid":
        rows, cols = int(kw.get("rows", 0)), int(kw.get("cols", 0))
        if rows < 1 or cols < 1:
            return None
        # both directions of every grid edge, asymmetric weights or not
        return rows * cols, 2 * (rows * (cols - 1) + (rows - 1) * cols), f"grid --rows {rows} --cols {cols}"
    if family in ("random", "er", "gnm"):
        n, m = int(kw.get("n", 0)), int(kw.get("m", -1))
        if n < 1 or m < 0:
            return None
        return (n, m * (2 if kw.get("undirected") else 1),
                f"random -n {n} -m {m}" + (" --undirected" if kw.get("undirected") else ""))
    return None


#: bytes an arc takes at least while a graph is generated: its two ids and its weight
#: (generation needs more: 24-70 bytes an arc measured, by family)
def _arc_bytes(n: int, weight_type: str) -> int:
    return 2 * (4 if n <= 2**31 else 8) + np.dtype(WEIGHT_TYPES.get(weight_type, np.int64)).itemsize


def _work_factor(family: str, kw: dict) -> int:
    """Peak memory of a generation over its arcs' ids and weights (:func:`_arc_bytes`),
    measured as peak RSS (2**24 arcs, int32 ids, int64 weights: ids and weights 16 bytes
    an arc): R-MAT and grids 26 bytes an arc (their draws, the table written), G(n, m)
    78 directed, 53 undirected (int64 pair keys drawn 1.1 times over, deduplicated by a
    sort), potentials (``negative_fraction``) 52 on a grid.  Checking the ids and
    weights alone passed graphs that then ran out of memory."""
    random = family in ("random", "er", "gnm")
    factor = (4 if kw.get("undirected") else 6) if random else 2
    if kw.get("negative_fraction"):
        factor += 2
    return factor


def _count(v: int) -> str:
    """``v`` with thousands separators, or its order of magnitude where it has more
    digits than a message can hold (Python refuses to write integers of more than 4,300
    digits, and a product of two such options has more)."""
    v = int(v)
    if v.bit_length() <= 300:
        return f"{v:,}"
    return f"about 10**{int(v.bit_length() * 0.30103)}"


def _gigabytes(nbytes: int) -> str:
    """``nbytes`` in GB with one decimal, rounded down, in integer arithmetic (an
    integer too large for a float was an ``OverflowError`` traceback, and one past 2**53
    was written with a float's digits: "25,599,999,999,999,996.0 GB")."""
    nbytes = int(nbytes)
    if nbytes.bit_length() <= 1000:
        tenths = nbytes // 10**8
        return f"{tenths // 10:,}.{tenths % 10}"
    return _count(nbytes // 10**9)


def check_size(family: str, *, max_vertices=None, max_arcs=None, max_isolated_vertices=None, **kw) -> None:
    """Refuse, before anything is allocated, a graph above the limits ingestion applies
    to an input (``sssp.ingest.max-vertices``, ``sssp.ingest.max-arcs``,
    ``sssp.ingest.max-isolated-vertices``; an explicit ``max_vertices`` / ``max_arcs`` /
    ``max_isolated_vertices`` wins, as for ``sssp ingest``), or one whose arrays alone
    (two ids and a weight per arc) cannot fit in the memory available here.  The
    isolated-vertex limit is the one loading the written file applies (``vertices - 2 x
    arcs``): a graph above it was written and then refused by every command that read it.

    Raises
    ------
    UsageError
        One line naming the graph, the limit and how to raise it.
    """
    from .ingest._limits import Limits

    size = planned_size(family, **kw)
    if size is None:
        return
    n, arcs, what = size
    limits = Limits.from_settings(max_vertices, max_arcs, max_isolated_vertices)

    def how(key: str, option: str) -> str:
        env = "DASK_SSSP__INGEST__" + key.upper().replace("-", "_")
        return f"raise it with {option} N, the setting sssp.ingest.{key} or {env}=N"

    if limits.max_vertices is not None and n > limits.max_vertices:
        raise UsageError(f"generate {what}: {_count(n)} vertices, above the limit sssp.ingest.max-vertices = "
                         f"{_count(limits.max_vertices)}; {how('max-vertices', '--max-vertices')}")
    if n - 1 > np.iinfo(np.int64).max:
        raise UsageError(f"generate {what}: {_count(n)} vertices; ids run up to 2**63 - 1 (int64), "
                         "generate a smaller graph")
    if limits.max_isolated is not None and n - 2 * arcs > limits.max_isolated:
        raise UsageError(f"generate {what}: {_count(n)} vertices, but its {_count(arcs)} arcs touch at most "
                         f"{_count(2 * arcs)} of them: at least {_count(n - 2 * arcs)} vertices would have no arc, "
                         f"above the limit sssp.ingest.max-isolated-vertices = {_count(limits.max_isolated)} "
                         "(loading the file would refuse it); "
                         f"{how('max-isolated-vertices', '--max-isolated-vertices')}")
    if family in ("random", "er", "gnm"):  # (random_graph's own refusal, before the memory's)
        undirected = bool(kw.get("undirected"))
        cap = gnm_max_edges(n, undirected)
        m = arcs // (2 if undirected else 1)
        if m > cap:
            raise UsageError(f"generate {what}: G(n, m) has at most {_count(cap)} distinct "
                             f"{'edges' if undirected else 'arcs'} on {_count(n)} vertices, not {_count(m)}")
    if limits.max_arcs is not None and arcs > limits.max_arcs:
        raise UsageError(f"generate {what}: {_count(arcs)} arcs, above the limit sssp.ingest.max-arcs = "
                         f"{_count(limits.max_arcs)}; {how('max-arcs', '--max-arcs')}")
    arrays = arcs * _arc_bytes(n, str(kw.get("weight_type", "int64")))
    need = arrays * _work_factor(family, kw)
    avail = memory.available_memory()
    if avail is not None and need > avail:
        why = memory.bound_note(avail)
        raise UsageError(f"generate {what}: {_count(n)} vertices and {_count(arcs)} arcs need at least "
                         f"{_gigabytes(need)} GB of memory to generate (their ids and weights are "
                         f"{_gigabytes(arrays)} GB), more than the {avail / 1e9:,.1f} GB available here{why}; "
                         "generate a smaller graph")


def generate(family: str, out, *, max_vertices=None, max_arcs=None, max_isolated_vertices=None, **kw) -> dict:
    """Generate ``family`` (``rmat``, ``grid``, ``random``) and write it; returns metadata.

    The size is checked first (:func:`check_size`: the ingestion limits
    ``sssp.ingest.max-vertices`` / ``max-arcs`` / ``max-isolated-vertices``, or
    ``max_vertices`` / ``max_arcs`` / ``max_isolated_vertices`` given here, and the
    memory available), before anything is allocated.  The weights drawn are held to
    the solvers' rule on path lengths as ingestion holds a file's (nothing is written
    that the solvers would refuse).
    """
    from gpu_sssp.pipeline.writers import refuse_non_parquet_name

    refuse_non_parquet_name(out, "-o")
    t0 = time.perf_counter()
    check_size(family, max_vertices=max_vertices, max_arcs=max_arcs,
               max_isolated_vertices=max_isolated_vertices, **kw)
    if family == "rmat":
        src, dst, w, n = rmat(**kw)
        directed = not kw.get("undirected", False)
    elif family == "grid":
        src, dst, w, n = grid(**kw)
        directed = False if kw.get("undirected", True) else True
    elif family in ("random", "er", "gnm"):
        family = "random"
        src, dst, w, n = random_graph(**kw)
        directed = not kw.get("undirected", False)
    else:
        raise UsageError(f"unknown generator {family!r}: expected rmat, grid or random")
    params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
    params["family"] = family
    if family == "rmat" and params.get("d") is None:  # the d drawn with (null in the metadata)
        import inspect

        quad = {k: params.get(k, v.default) for k, v in inspect.signature(rmat).parameters.items() if k in "abc"}
        params.update(quad, d=1.0 - quad["a"] - quad["b"] - quad["c"])
    # the bounds drawn from (whole numbers for integer types), as the generator checked them
    lo, hi = _weight_bounds(kw.get("weights", (1, 100)), kw.get("weight_type", "int64"))
    if "weights" in params:
        params["weights"] = [lo, hi]
    label = f"uniform:{lo}:{hi}:{kw.get('seed', 0)}"
    if kw.get("negative_fraction", 0):
        label += f"+potentials:{kw['negative_fraction']}"
    drawn = f"--weights {lo}:{hi} (seed {kw.get('seed', 0)}" + (
        f", --negative-fraction {kw['negative_fraction']})" if kw.get("negative_fraction", 0) else ")")
    what = planned_size(family, **kw)
    meta = write(out, src, dst, w, n, directed=directed, kind=f"generated:{family}", params=params,
                 weights_label=label, display=f"generate {what[2] if what else family}", drawn=drawn)
    log.info("generated %s: %d vertices, %d arcs in %.2fs", family, n, len(src), time.perf_counter() - t0)
    return meta
