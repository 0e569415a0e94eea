"""The graph the solvers work on: a weighted directed graph in CSR form.

It lives in the bottom layer because every solver reads it; reading it from files
(Parquet edge lists, the CSR cache, ingestion of raw inputs) is ``pipeline.graph``'s.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_sssp.kernels.errors import OptionError, UsageError

_INT_WEIGHTS = ("int32", "int64")
#: integer distances are exact in float64 (every output's type) below this
EXACT_LIMIT = 2**53


#: real (float64) distances hold every path below this
FLOAT_LIMIT = float(np.finfo(np.float64).max)


def distance_bound_of(n: int, max_abs_weight, integer: bool, in_arc_sum=None):
    """A bound on |any simple path length| in a graph of ``n`` vertices.

    The smaller of ``(n - 1) * max|w|`` and ``in_arc_sum()`` (the sum over vertices of
    their largest |in-arc weight|: a simple path enters each vertex at most once),
    the second asked for only when the first is not accepted (:func:`_bound_fits`).
    Exact ``int`` arithmetic for integer weights, float64 for real ones.  The solvers'
    rule is :func:`path_bound_of`, which also bounds the per-source sums."""
    if n < 2:
        return 0 if integer else 0.0
    if integer:
        crude = (int(n) - 1) * int(max_abs_weight)
    else:
        with np.errstate(over="ignore"):
            crude = float(np.float64(n - 1) * np.float64(abs(float(max_abs_weight))))
    if _bound_fits(crude, n, integer) or in_arc_sum is None:
        return crude
    return min(crude, in_arc_sum())


def sum_bound_of(n: int, bound) -> float:
    """A bound on |the float64 sum| of the ``n - 1`` distances of one source (the
    ``sum_distance`` statistic; the source's own distance is 0) each within ``bound``:
    ``(n - 1) * bound``, widened by the worst rounding of ``n - 1`` additions in any order
    (``(n - 1) * 2**-53`` relative), ``inf`` when it overflows float64."""
    k = max(int(n) - 1, 0)
    with np.errstate(over="ignore"):
        return float(np.float64(k) * np.float64(abs(float(bound))) * (1.0 + k * 2.0**-53))


def _bound_fits(bound, n: int, integer: bool) -> bool:
    """Integer weights: distances below 2**53; real ones: distances and their per-source
    sum finite in float64."""
    if integer:
        return bound < EXACT_LIMIT
    return path_bound_ok(bound, integer) and path_bound_ok(sum_bound_of(n, bound), integer)


def path_bound_of(n: int, max_abs_weight, integer: bool, in_arc_sum=None):
    """The solvers' bound on |any simple path length| in a graph of ``n`` vertices.

    :func:`distance_bound_of`: the smaller of ``(n - 1) * max|w|`` and ``in_arc_sum()``
    (the sum over vertices of their largest |in-arc weight|: a simple path enters each
    vertex at most once), the second asked for only when the first fails. Exact ``int``
    arithmetic for integer weights, float64 for real ones; for real weights ``inf`` as
    well when the ``n - 1`` finite distances of one source could sum beyond float64's
    range (:func:`sum_bound_of`: the per-source ``sum_distance`` statistic would overflow
    to inf), so that :func:`path_bound_ok` refuses that graph too. Ingestion applies
    this same function to what it streams (``pipeline.ingest``), so a graph that
    ingests can be solved."""
    bound = distance_bound_of(n, max_abs_weight, integer, in_arc_sum)
    if not integer and path_bound_ok(bound, integer) and not _bound_fits(bound, n, integer):
        return float("inf")
    return bound


def path_bound_ok(bound, integer: bool) -> bool:
    """Whether distances bounded by ``bound`` are exact (integers: below 2**53) or
    finite (real weights: within float64's range; :func:`path_bound_of` makes the bound
    ``inf`` when the distances' per-source sum could overflow)."""
    if integer:
        return bound < EXACT_LIMIT
    return bool(np.isfinite(bound)) and bound <= FLOAT_LIMIT


def path_bound_problem(bound, n: int, integer: bool, distance_bound=None) -> str:
    """What is wrong with a bound :func:`path_bound_ok` refused (one sentence).
    ``distance_bound``: real weights, the bound on each distance alone
    (:func:`distance_bound_of`), which tells a path that overflows from a sum that does."""
    if integer:
        return (f"integer weights too large for exact distances: a shortest path may "
                f"reach {bound} (bound from {n} vertices and their largest in-arc weights), "
                f"not below 2**53 = {EXACT_LIMIT}, where float64 distances stop being exact")
    if distance_bound is not None and path_bound_ok(distance_bound, integer):
        return (f"real weights too large: every shortest distance stays finite (at most "
                f"{distance_bound:.6g}, bound from {n} vertices and their largest in-arc weights), "
                f"but the {n - 1:,} distances of one source may sum to {sum_bound_of(n, distance_bound):.6g}, "
                f"beyond float64's largest value {FLOAT_LIMIT:.6g}, so the per-source sum "
                f"(sum_distance, mean_distance) would overflow to inf")
    return (f"real weights too large: a shortest path may be longer than float64's largest value "
            f"{FLOAT_LIMIT:.6g} (its bound from {n} vertices and their largest in-arc weights overflows), "
            f"so distances (and their per-source sums) would overflow to inf")


class in_arc_maxima:
    """The largest |weight| of each vertex's in-arcs, accumulated over batches of arcs
    (``add``); ``sum_bound()`` is their sum, the tighter half of :func:`path_bound_of`.

    Integer weights are kept as exact uint64 magnitudes (|-2**63| included), real ones
    as float64.  ``loops``: which arcs are self-loops (``tail == head``); such an arc of
    weight ``0 <= w < 2**53`` is left out, since no simple path uses it (a graph whose
    only heavy arc was such a loop was refused); a negative one stays (a negative cycle,
    reported as such), and a heavier one too (a kernel's ``d[u] + w`` stays within
    int64 and never below ``d[u]`` in float64 below it)."""

    def __init__(self, n: int, heads=None, weights=None, integer: bool | None = None, loops=None):
        self.n = int(n)
        self.integer = integer
        self.best = None
        if heads is not None:
            self.add(heads, weights, loops)

    def add(self, heads, weights, loops=None):
        weights = np.asarray(weights)
        if loops is not None:
            loops = np.asarray(loops, dtype=bool)
            if loops.any():
                wf = weights.astype(np.float64)
                keep = ~(loops & (wf >= 0) & (wf < EXACT_LIMIT))
                heads, weights = np.asarray(heads)[keep], weights[keep]
        if self.integer is None:
            self.integer = weights.dtype.kind in "iu"
        if self.best is None:
            self.best = np.zeros(self.n, dtype=np.uint64 if self.integer else np.float64)
        if self.integer:
            w = weights.astype(np.int64)
            absw = np.where(w < 0, np.uint64(0) - w.astype(np.uint64), w.astype(np.uint64))
        else:
            absw = np.abs(weights.astype(np.float64))
        np.maximum.at(self.best, np.asarray(heads), absw)
        return self

    def sum_bound(self):
        if self.best is None:
            return 0 if self.integer else 0.0
        if not self.integer:
            with np.errstate(over="ignore"):
                return float(self.best.sum(dtype=np.float64))
        approx = float(self.best.sum(dtype=np.float64))
        # exact while the uint64 sum cannot wrap; beyond, the float sum is near enough
        return int(self.best.sum(dtype=np.uint64)) if approx < 1.9 * 2.0**63 else int(approx)


_INT64_MAX = int(np.iinfo(np.int64).max)
_INT64_MIN = int(np.iinfo(np.int64).min)


def _whole(v) -> bool:
    """A whole number that is not a bool: an int, or a finite float without a fraction."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    if isinstance(v, (float, np.floating)):
        return bool(np.isfinite(v)) and float(v).is_integer()
    return False


_DECIMAL = re.compile(r"\s*[+-]?[0-9]+(?:_[0-9]+)*\s*", re.ASCII)


def is_decimal(text) -> bool:
    """Whether ``text`` (str or bytes) is a whole number in ASCII decimal digits (grouped
    by single underscores as Python writes them, ``1_000``), with an optional sign and
    surrounding blanks: how ids, counts and seeds given as text are read.  Python's
    ``int`` and ``float`` also take Arabic-Indic or other Unicode digits (``"\u0663"``:
    3) and, for ``float``, ``"1e2"`` and ``"2.0"``."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    return isinstance(text, str) and _DECIMAL.fullmatch(text) is not None


def holds_bool(values) -> bool:
    """Whether ``values`` is a bool or a list / tuple holding one (at any depth): NumPy
    makes ``[True, 2]`` an int64 array, where True would become vertex 1 (the one test of
    :meth:`Graph.to_index` and of ``kernels.solve``'s sources and targets)."""
    if isinstance(values, (bool, np.bool_)):
        return True
    if isinstance(values, (list, tuple)):
        return any(holds_bool(v) for v in values)
    return False


def refuse_unordered(values, what: str, error=UsageError) -> None:
    """Refuse a set or dict given as vertex ids (``what``: "sources", "source ids"): NumPy
    makes it one object ("must be integers, got object"), and the results follow the
    order the ids were given in, which a set has not (the one test of
    :meth:`Graph.to_index` and of ``kernels.solve``'s sources and targets)."""
    if isinstance(values, (set, frozenset, dict)):
        raise error(f"{what} must be a sequence, got a {type(values).__name__} (a set or dict has no order, and "
                    "the results follow the order given: give a list)")
    # bytes-like: NumPy reads a bytearray or a memoryview of bytes as byte-sized numbers
    # (bytearray(b'5') was vertex 53), where sssp.matrix takes bytes as a file name
    byte_view = isinstance(values, memoryview) and values.format.lstrip("@=<>!") in ("B", "c")
    if isinstance(values, (bytes, bytearray)) or byte_view:
        raise error(f"{what} must be integers, got a {type(values).__name__} object (its bytes would be read as "
                    "byte-sized ids); give a list or an integer array (e.g. numpy.frombuffer(data, "
                    "dtype=numpy.uint8))")


def _whole_int(value, what: str, *, minimum: int | None = None) -> int:
    """``value`` as a Python int: an int or NumPy integer (not a bool), or a whole float;
    refused otherwise (``n=2.5`` failed deep inside NumPy, ``id_base=1.5`` was truncated)."""
    if isinstance(value, (bool, np.bool_)) or not _whole(value):
        raise UsageError(f"{what} must be a whole number, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise UsageError(f"{what} must be at least {minimum}, got {value}")
    return value


def _arc_ends(given, what: str) -> np.ndarray:
    """``src`` or ``dst`` of :meth:`Graph.from_edges` as an array of whole numbers.

    Integer arrays pass as they are (the range check follows); floats must be whole and
    finite, since casting would truncate 1.5 to vertex 1 (as :meth:`Graph.to_index`
    refuses them); booleans, strings and other objects are refused.  Python ints that
    NumPy made float64 (beyond int64) are kept exact, so the range error shows them."""
    a = np.asarray(given)
    if a.ndim != 1:  # a scalar or a table failed inside NumPy (len() of unsized object, ...)
        raise UsageError(f"{what} must be a 1-D list of vertex indices, got shape {a.shape}")
    if (not isinstance(given, np.ndarray) and a.dtype.kind == "f" and a.size
            and bool((np.abs(a) >= 2.0**53).any())):
        a = np.asarray(given, dtype=object)  # a float64 there may be a rounded Python int
    kind = a.dtype.kind
    if kind in "iu":
        return a
    if kind == "f":
        ok = np.isfinite(a) & (np.floor(a) == a) if a.size else np.ones(0, dtype=bool)
    elif kind == "O":
        ok = np.fromiter((_whole(v) for v in a.ravel()), dtype=bool, count=a.size)
    elif kind == "b":
        raise UsageError(f"{what} holds booleans: arc ends must be integer vertex indices")
    else:
        raise UsageError(f"{what} holds {a.dtype}: arc ends must be integer vertex indices")
    if not ok.all():
        i = int(np.argmin(ok))
        v = a.ravel()[i]
        v = v.item() if isinstance(v, np.generic) else v
        raise UsageError(f"{what}[{i}] is {v!r}: arc ends must be whole vertex indices "
                         "(a fractional or non-finite index is never truncated to a vertex)")
    return a


class OneWayArcError(UsageError):
    """``from_edges(directed=False)`` met an arc without its reverse: ``tail``, ``head``
    (ids with the graph's ``id_base``) and ``weight`` name it, for a caller that words
    the refusal in its own terms (a Parquet file's metadata: ``pipeline.graph``)."""

    def __init__(self, message: str, tail: int, head: int, weight):
        super().__init__(message)
        self.tail, self.head, self.weight = tail, head, weight


def _refuse_one_way(s, d, w, id_base: int = 0) -> None:
    """``from_edges(directed=False)``: every arc ``u -> v`` (sorted by tail, head, weight)
    must have a reverse ``v -> u`` of equal weight, as many times; else one line naming an
    arc without one (:class:`OneWayArcError`; its ends as ids with ``id_base``: the
    indices were named where the graph's ids start at 1).  (The flag used to be a label
    only: a graph of one-way arcs called undirected, whose benchmark sources were picked
    by weak components as if strong.)"""
    if not len(s):
        return
    rev = np.lexsort((w, s, d))  # the reversed arcs (d, s, w), sorted the same way
    rs, rd, rw = d[rev], s[rev], w[rev]
    same = (rs == s) & (rd == d) & (rw == w)
    if same.all():
        return
    i = int(np.argmin(same))
    if (s[i], d[i], w[i]) < (rs[i], rd[i], rw[i]):
        a, b, x = s[i], d[i], w[i]  # an arc that no reversed arc matches
    else:
        a, b, x = rd[i], rs[i], rw[i]  # the arc whose reverse is missing
    a, b = int(a) + int(id_base), int(b) + int(id_base)
    raise OneWayArcError(f"directed=False says every arc has its reverse, but arc {a} -> {b} (weight "
                         f"{x.item()!r}) has no arc {b} -> {a} of that weight: give both directions (as "
                         "ingest(undirected=True) writes them), or leave directed=True", a, b, x.item())


def _beyond_int64(i: int, value: int, src, dst) -> str:
    return (f"weight of arc {i} ({int(src[i])} -> {int(dst[i])}) is {value}, outside int64 "
            f"({_INT64_MIN} .. {_INT64_MAX}): integer weights that do not fit are refused, never wrapped")


def _refuse_python_ints_beyond_int64(given, as_array: np.ndarray, src, dst) -> None:
    """Weights given as Python ints that NumPy could not hold in int64: it made them
    float64 (rounded: 2**63 + 5 becomes 2**63) or objects.  Refuse them with their
    true value rather than solve with another one."""
    if as_array.dtype.kind == "f" and not (np.abs(as_array) >= 2.0**63).any():
        return  # every float64 below 2**63 came from a float or an int64-sized int
    for i, v in enumerate(np.asarray(given, dtype=object).ravel()):
        if isinstance(v, int) and not isinstance(v, bool) and not _INT64_MIN <= v <= _INT64_MAX:
            raise UsageError(_beyond_int64(i, v, src, dst))


def _kernel_weight_type(weights: np.ndarray) -> np.ndarray:
    """Signed integer or real weights in one of the types every solver takes (int32,
    int64, float32, float64): int8 / int16 widen to int32 and float16 to float32, exactly;
    a real type wider than float64 (longdouble) becomes float64, whose range a finite
    weight must fit (refused otherwise, never made infinite).  Without this a graph of
    int16 weights solved on the CPU but every GPU method refused it with a TypeError."""
    kind, size = weights.dtype.kind, weights.dtype.itemsize
    if kind == "i" and size < 4:
        return weights.astype(np.int32)
    if kind == "f" and size < 4:
        return weights.astype(np.float32)
    if kind == "f" and size > 8:
        with np.errstate(over="ignore"):
            wide = weights.astype(np.float64)
        lost = np.isfinite(weights) & ~np.isfinite(wide)
        if lost.any():
            i = int(np.argmax(lost))
            raise UsageError(f"weight of arc {i} is {weights[i]!r}, beyond float64's range: real weights are "
                             "solved in float64 at most")
        return wide
    return weights


def _read_only(a):
    """``a`` as an ndarray that refuses writes (a read-only view when ``a`` itself is
    writeable: the caller's array stays as it was)."""
    a = np.asarray(a)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _index_dtype(limit: int):
    return np.int32 if limit < np.iinfo(np.int32).max else np.int64


@dataclass
class Graph:
    """A weighted directed graph in CSR form with 0-based internal vertex indices.

    Attributes
    ----------
    n : int
        Number of vertices.
    indptr : ndarray (int32 or int64), shape (n + 1,)
    indices : ndarray (int32 or int64), shape (m,)
        Arc heads, sorted by tail then head.
    weights : ndarray, shape (m,)
        Arc weights in the input's type (int32/int64/float32/float64).
    id_base : int
        Offset between internal indices and the input file's ids.
    directed : bool
        False when every arc has its reverse (ingested as undirected).
    meta : dict
        The ingestion metadata plus what building the CSR found.
    """

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    id_base: int = 0
    directed: bool = True
    name: str = "graph"
    meta: dict[str, Any] = field(default_factory=dict)
    #: content hash of (n, m, id_base, weight type, indptr, indices, weights): two graphs
    #: share a device upload or a worker's copy only when it is equal.  Computed on first
    #: use (a property below) for every Graph however it was built, never given to the
    #: constructor, so ``dataclasses.replace`` with other arrays gets its own; a loader
    #: that already knows it (the CSR cache) assigns it and skips the hashing.
    fingerprint: str = field(default="", init=False)
    path: str | None = None  # the Parquet file it was loaded from, if any
    _reverse: tuple | None = field(default=None, repr=False)
    # host data derived from the arrays (which never change), see cached(); never copied
    # into another Graph
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        # the arrays never change: the fingerprint, the hierarchy and every cached() datum
        # are derived from them once, so an edit in place (g.weights[:] = 1) would leave
        # solvers disagreeing with each other.  Read-only views refuse such an edit (a
        # ValueError from NumPy); a caller who wants other arrays builds another Graph.
        for name in ("indptr", "indices", "weights"):
            setattr(self, name, _read_only(getattr(self, name)))

    def __setstate__(self, state):
        # unpickled arrays come back writeable (a worker's copy): read-only again
        self.__dict__.update(state)
        self.__post_init__()

    # ------------------------------------------------------------------ building
    @classmethod
    def from_edges(cls, src, dst, weights=None, n: int | None = None, *, directed: bool = True,
                   id_base: int = 0, parallel: str = "min", name: str = "graph",
                   meta: dict | None = None) -> "Graph":
        """Build from arrays of internal (0-based) arc ends.

        Parameters
        ----------
        src, dst : array_like of int
            Arc tails and heads, 0-based.  Whole floats (``2.0``) are accepted; a
            fractional or non-finite one (``1.5``, ``nan``) is refused, never truncated.
        weights : array_like, optional
            Arc weights (default: int64 ones).  Unsigned integers become int64; one
            that does not fit (above 2**63 - 1) is refused, never wrapped, and so is a
            Python int beyond int64.  int8 / int16 become int32 and float16 float32
            (exactly); longdouble becomes float64 (a finite weight beyond its range is
            refused): the solvers take int32, int64, float32 and float64.
        n : int, optional
            Number of vertices (default: largest id + 1).
        parallel : {"min", "keep"}
            Parallel arcs: keep only the lightest (default) or keep them all.
        directed : bool
            False: an undirected graph, given as both directions of every edge (each arc
            ``u -> v`` has an arc ``v -> u`` of the same weight, or the graph is refused;
            no arc is added).

        Raises
        ------
        kernels.errors.UsageError
            (a ``ValueError``) Ids out of range or not whole numbers, an integer weight
            beyond int64, a weight that is not finite, mismatched lengths or an unknown
            policy; one line naming the offending index and its value.
        TypeError
            Weights that are not numbers.
        """
        if n is not None:
            n = _whole_int(n, "n (the number of vertices)", minimum=0)
        id_base = _whole_int(id_base, "id_base")
        if id_base < 0:
            # file id -1 would be the -1 that marks "no predecessor" in the tables
            raise UsageError(f"id_base must be >= 0 (ids below 0 would read as the -1 of 'no predecessor'), "
                             f"got {id_base}")
        if not isinstance(directed, (bool, np.bool_)) and not (
                isinstance(directed, (int, np.integer)) and directed in (0, 1)):
            # "no" is truthy: it was kept as it is, and written into the study's summary
            raise UsageError(f"directed must be True or False, got {directed!r}")
        directed = bool(directed)
        src = _arc_ends(src, "src")
        dst = _arc_ends(dst, "dst")
        if weights is None:
            weights = np.ones(len(src), dtype=np.int64)
        given = weights
        weights = np.asarray(weights)
        if weights.ndim != 1:
            raise UsageError(f"weights must be a 1-D list of arc weights, got shape {weights.shape}")
        if not (len(src) == len(dst) == len(weights)):
            raise UsageError(f"src, dst and weights differ in length: {len(src)}, {len(dst)}, {len(weights)}")
        if not isinstance(given, np.ndarray) and weights.dtype.kind in "fO":
            # NumPy turns Python ints beyond int64 into float64 (rounded) or objects
            _refuse_python_ints_beyond_int64(given, weights, src, dst)
        if weights.dtype.kind not in "iuf":
            raise OptionError(f"weights must be integer or float, got {weights.dtype}")
        if weights.dtype.kind == "u":
            if weights.dtype.itemsize >= 8 and len(weights):
                too_big = weights > np.uint64(_INT64_MAX)
                if too_big.any():
                    # a plain cast would wrap 2**64 - 1 to -1: a wrong, negative weight
                    i = int(np.argmax(too_big))
                    raise UsageError(_beyond_int64(i, int(weights[i]), src, dst))
            weights = weights.astype(np.int64)
        weights = _kernel_weight_type(weights)
        if weights.dtype.kind == "f" and len(weights):
            finite = np.isfinite(weights)
            if not finite.all():
                # a NaN compares false with everything: the solvers would never relax
                # the arc and its head would silently become unreachable
                i = int(np.argmin(finite))
                raise UsageError(f"weight of arc {i} ({int(src[i])} -> {int(dst[i])}) is {weights[i]}: "
                                 "arc weights must be finite numbers")
        if n is None:
            # in Python ints: initial=-1 does not fit an unsigned array (OverflowError)
            n = max(int(src.max()) if len(src) else -1, int(dst.max()) if len(dst) else -1) + 1
        if n and id_base + n - 1 > np.iinfo(np.int64).max:
            raise UsageError(f"id_base {id_base} with {n:,} vertices: the largest file id, id_base + n - 1, "
                             "would pass int64 and wrap")
        if len(src):
            lo = min(int(src.min()), int(dst.min()))
            hi = max(int(src.max()), int(dst.max()))
            if lo < 0 or hi >= n:
                raise UsageError(f"vertex index out of range: found {lo}..{hi}, expected 0..{n - 1}")
        # whole floats and exact objects, now known to be in range: the indices they are
        src = src if src.dtype.kind == "i" else src.astype(np.int64)
        dst = dst if dst.dtype.kind == "i" else dst.astype(np.int64)
        if parallel not in ("min", "keep"):
            raise UsageError(f"parallel must be 'min' or 'keep', got {parallel!r}")
        from gpu_sssp.kernels.memory import check_host_memory

        # the per-vertex arrays (counts and indptr at 8 bytes, a solve's at least as much
        # again) before they are made: n = 2**40 was NumPy's "Unable to allocate 8.00 TiB"
        check_host_memory(24 * (int(n) + 1) + 48 * len(src), f"a graph of {int(n):,} vertices and {len(src):,} arcs",
                          "give fewer vertices (n is the number of vertices, the largest index + 1)")
        # one sort orders arcs by (tail, head, weight): CSR rows come out sorted and
        # the lightest of any parallel group first
        order = np.lexsort((weights, dst, src))
        s, d, w = src[order].astype(np.int64), dst[order].astype(np.int64), weights[order]
        dup = np.zeros(len(s), dtype=bool)
        if len(s) > 1:
            dup[1:] = (s[1:] == s[:-1]) & (d[1:] == d[:-1])
        n_parallel = int(dup.sum())
        if parallel == "min" and n_parallel:
            keep = ~dup
            s, d, w = s[keep], d[keep], w[keep]
        counts = np.bincount(s, minlength=n)
        idx_t = _index_dtype(len(s))
        indptr = np.zeros(n + 1, dtype=idx_t)
        np.cumsum(counts, out=indptr[1:])
        if not directed:
            _refuse_one_way(s, d, w, id_base)
        info = dict(meta or {})
        info.update(
            csr_arcs=int(len(s)),
            parallel_arcs_found=n_parallel,
            parallel_policy=parallel,
            self_loops_found=int((s == d).sum()),
        )
        return cls(n=int(n), indptr=indptr, indices=d.astype(_index_dtype(n)), weights=w,
                   id_base=int(id_base), directed=directed, name=name, meta=info)

    # ------------------------------------------------------------------ facts
    @property
    def m(self) -> int:
        return int(len(self.indices))

    @property
    def weight_type(self) -> str:
        return str(self.weights.dtype)

    @property
    def integer_weights(self) -> bool:
        return self.weights.dtype.kind in "iu"

    @functools.cached_property
    def _weight_facts(self) -> dict:
        """min, max, largest and mean |w|, computed once (a Graph's arrays never change).

        The largest |w| of integer weights is a Python int: ``abs(np.int64(-2**63))``
        would overflow back to -2**63."""
        if not self.m:
            return {"min": 0, "max": 0, "absmax": 0, "absmean": 0.0}
        w = self.weights
        lo, hi = w.min(), w.max()
        if self.integer_weights:
            absmax = max(abs(int(lo)), abs(int(hi)))
            absmean = float(np.abs(w.astype(np.float64)).mean()) if lo < 0 else float(w.mean())
        else:
            absmax = max(abs(lo), abs(hi))
            with np.errstate(over="ignore"):
                absmean = float(np.abs(w).mean()) if lo < 0 else float(w.mean())
            if not np.isfinite(absmean) and np.isfinite(absmax) and absmax > 0:
                # the sum overflowed (weights near float64's largest): scale first
                absmean = float((np.abs(w) / absmax).mean()) * float(absmax)
        return {"min": lo, "max": hi, "absmax": absmax, "absmean": absmean}

    @property
    def min_weight(self):
        return self._weight_facts["min"]

    @property
    def max_weight(self):
        return self._weight_facts["max"]

    @property
    def max_abs_weight(self):
        return self._weight_facts["absmax"]

    @property
    def mean_abs_weight(self) -> float:
        return self._weight_facts["absmean"]

    @property
    def has_negative(self) -> bool:
        return bool(self.m and self.min_weight < 0)

    @property
    def unweighted(self) -> bool:
        """Every arc has the same positive weight (BFS gives the distances)."""
        return bool(self.m and self.min_weight == self.max_weight and self.min_weight > 0)

    def out_degree(self) -> np.ndarray:
        return np.diff(self.indptr).astype(np.int64)

    def in_degree(self) -> np.ndarray:
        return np.bincount(self.indices, minlength=self.n).astype(np.int64)

    def tails(self) -> np.ndarray:
        """Tail of every arc, aligned with ``indices``."""
        return np.repeat(np.arange(self.n, dtype=self.indices.dtype), self.out_degree())

    def cached(self, key, build):
        """``build()`` once per graph and ``key``: data derived from the graph's arrays
        (components, landmark distances, degree shares) that several solves or plans
        reuse.  Kept with the graph, so it lives exactly as long as the graph does."""
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]

    def reverse(self):
        """Reverse CSR ``(indptr, indices, weights, arc_id)``: in-arcs of each vertex."""
        if self._reverse is None:
            tails = self.tails()
            order = np.lexsort((tails, self.indices))
            counts = np.bincount(self.indices, minlength=self.n)
            indptr = np.zeros(self.n + 1, dtype=self.indptr.dtype)
            np.cumsum(counts, out=indptr[1:])
            self._reverse = (indptr, tails[order], self.weights[order], order.astype(self.indptr.dtype))
        return self._reverse

    def degree_stats(self) -> dict[str, Any]:
        od = self.out_degree()
        idg = self.in_degree()
        return {
            "vertices": self.n,
            "arcs": self.m,
            "out_degree_min": int(od.min(initial=0)),
            "out_degree_max": int(od.max(initial=0)),
            "out_degree_mean": float(od.mean()) if self.n else 0.0,
            "out_degree_std": float(od.std()) if self.n else 0.0,
            "in_degree_max": int(idg.max(initial=0)),
            "isolated": int(((od == 0) & (idg == 0)).sum()),
            "self_loops": int(self.meta.get("self_loops_found", 0)),
            "parallel_arcs": int(self.meta.get("parallel_arcs_found", 0)),
        }

    def max_path_bound(self) -> float:
        """An upper bound on |any simple path length|: (n - 1) * max |w| (the kernels
        choose their distance type with it)."""
        if not self.m:
            return 0.0
        return float(max(self.n - 1, 0)) * float(self.max_abs_weight)

    def path_bound(self):
        """An upper bound on |any simple path length|: the solvers' rule.

        The smaller of (n - 1) * max |w| and the sum over vertices of their largest
        |in-arc weight| (a simple path enters each vertex at most once); the second,
        tighter one is computed (once) only when the first is too large
        (:func:`path_bound_of`). Every shortest distance lies within it when no negative
        cycle is reachable. An exact ``int`` for integer weights, a ``float`` (possibly
        ``inf``) for real ones: ``inf`` too when the distances of one source could sum
        beyond float64 (:func:`path_bound_of`)."""
        if not self.m or self.n < 2:
            return 0 if self.integer_weights else 0.0
        return self.cached("path-bound", lambda: path_bound_of(
            self.n, self.max_abs_weight, self.integer_weights,
            lambda: in_arc_maxima(self.n, self.indices, self.weights, loops=self.tails() == self.indices).sum_bound()))

    def check_exact(self) -> None:
        """Refuse weights whose path lengths the distances cannot hold.

        Integer weights: the bound (:meth:`path_bound`) must stay below 2**53
        (``EXACT_LIMIT``); beyond it float64 distances (every output's type) are not
        exact, and sums of weights near 2**63 wrap around in the kernels' int64
        distances; below it every kernel's distance type holds every path and every
        candidate ``d[u] + w``. Real weights: the bound must be finite in float64, or a
        distance could overflow to ``inf`` and read as "unreachable"; and so must the sum
        of a source's ``n - 1`` distances within it (the ``sum_distance`` statistic,
        float64: :func:`sum_bound_of`), or that sum would overflow to ``inf``.
        ``kernels.solve`` calls it for every method before solving.

        Raises
        ------
        kernels.errors.UsageError
            (a ``ValueError``) Naming the graph, the bound, the limit and the weight of largest magnitude
            with its arc (file ids).
        """
        bound = self.path_bound()
        if path_bound_ok(bound, self.integer_weights):
            return
        k = int(np.argmax(np.abs(self.weights.astype(np.float64))))
        tail = int(np.searchsorted(self.indptr, k, side="right")) - 1
        arc = (f"e.g. weight {self.weights[k].item()} on arc {tail + self.id_base} -> "
               f"{int(self.indices[k]) + self.id_base} (file ids); scale the weights down")
        distances = None
        if not self.integer_weights:  # a path that overflows, or only the sum of the distances?
            distances = distance_bound_of(self.n, self.max_abs_weight, False,
                                          lambda: in_arc_maxima(self.n, self.indices, self.weights,
                                                                loops=self.tails() == self.indices).sum_bound())
        raise UsageError(f"{self.name}: {path_bound_problem(bound, self.n, self.integer_weights, distances)}; {arc}")

    # ------------------------------------------------------------------ ids
    def to_index(self, ids, *, what: str = "vertex") -> np.ndarray:
        """File ids -> internal indices, with a clear error for ids that do not exist.

        Parameters
        ----------
        ids : int or array_like of int
            The input file's vertex ids (integral floats accepted, and text in ASCII
            decimal digits: :func:`is_decimal`).
        what : str
            What the ids are, for the error message ("source", ...).

        Returns
        -------
        ndarray of int64
            0-based internal indices.

        Raises
        ------
        ValueError
            (``UsageError``) An id that is not an integer (1.5, "x", "1e2", "2.0", True,
            nan) or names no vertex of the graph, however large (an id beyond 64 bits
            included).
        """
        given = ids
        refuse_unordered(given, f"{what} ids")
        ids = np.atleast_1d(np.asarray(ids))
        if ids.dtype.kind == "b" or (not isinstance(given, np.ndarray) and holds_bool(given)):
            # True is not vertex 1 (NumPy makes [True, 2] an int64 array of 1 and 2)
            raise UsageError(f"{what} ids must be integers, got {np.asarray(given, dtype=object).ravel()[:5].tolist()}")
        if ids.dtype.kind == "c":  # complex: the cast to float would drop the imaginary part
            raise UsageError(f"{what} ids must be integers, got {ids[:5].tolist()}")
        if ids.dtype.kind in "USO":
            # text ids are decimal integers in ASCII digits: a float parse took "1e2" as
            # 100, "2.0" as 2 and the Arabic-Indic "\u0663" as 3
            # (the items as given: NumPy makes [1, 2.0, "3"] the strings "1", "2.0", "3")
            items = ids if isinstance(given, np.ndarray) else np.atleast_1d(np.asarray(given, dtype=object))
            flat = items.ravel().tolist()
            odd = [w for w in flat if isinstance(w, (str, bytes)) and not is_decimal(w)]
            if odd:
                raise UsageError(f"{what} ids must be integers (text ids in decimal digits), got {odd[:5]}")
            ids = np.array([int(w) if isinstance(w, (str, bytes)) else w for w in flat],
                           dtype=object).reshape(items.shape)
        if ids.dtype.kind not in "iu":
            # casting straight to int64 would truncate 1.5 (or "1.5") to vertex 1
            try:
                as_float = ids.astype(np.float64)
                ok = np.isfinite(as_float) & (np.floor(as_float) == as_float)
            except (TypeError, ValueError):
                ok = np.zeros(len(ids), dtype=bool)
            if not ok.all():
                raise UsageError(f"{what} ids must be integers, got {ids[:5].tolist()}")
            # an id beyond 64 bits (a Python int kept as an object) would overflow the cast
            far = (as_float < self.id_base) | (as_float > self.id_base + self.n - 1)
            if far.any():
                raise UsageError(f"{what} {ids[np.argmax(far)]} does not exist in {self.name}: {self._id_range()}")
            ids = as_float.astype(np.int64)  # whole and in range: exact ("2.0" and "3" too)
        idx = ids.astype(np.int64) - self.id_base
        bad = (idx < 0) | (idx >= self.n)
        if bad.any():
            first = int(ids[np.argmax(bad)])
            raise UsageError(f"{what} {first} does not exist in {self.name}: {self._id_range()}")
        return idx

    def _id_range(self) -> str:
        """What ids this graph has, for a refusal ("ids run 0..-1" where it has none)."""
        if not self.n:
            return "it has no vertices"
        return f"ids run from {self.id_base} to {self.id_base + self.n - 1}"

    def to_ids(self, idx) -> np.ndarray:
        """Internal indices -> the input file's ids (the inverse of :meth:`to_index`).

        Parameters
        ----------
        idx : int or array_like of int
            0-based internal indices, each in ``0 .. n - 1``.

        Returns
        -------
        ndarray of int64
            ``idx + id_base``, with the shape of ``idx``.

        Raises
        ------
        ValueError
            (``UsageError``) Indices that are not integers (1.5 was rounded to a
            vertex, True taken as 1, "3" as 3), or not of a vertex (``n`` gave the id of
            no vertex, ``2**63 - 1`` wrapped to ``-2**63``).
        """
        a = np.asarray(idx)
        if a.dtype.kind not in "iu" and not (a.dtype.kind == "O" and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in a.ravel())):
            shown = a.ravel()[:5].tolist() if a.ndim else a.item()
            raise UsageError(f"internal indices must be integers, got {shown!r} ({a.dtype})")
        if a.size:
            lo, hi = int(a.min()), int(a.max())
            if lo < 0 or hi >= self.n:
                bad = lo if lo < 0 else hi
                raise UsageError(f"internal index {bad} is not a vertex of {self.name} (its indices run 0..{self.n - 1}, "
                                 f"its ids {self.id_base}..{self.id_base + self.n - 1})")
        return a.astype(np.int64) + self.id_base

    def pattern(self, dtype=np.int8):
        """The arcs as a ``scipy.sparse.csr_array`` of ones (weights dropped): for
        components, reachability and hop distances.  Its index arrays are the graph's
        own, read-only: copy the matrix (``.copy()``) before changing it in place."""
        import scipy.sparse as sp

        return sp.csr_array((np.ones(self.m, dtype=dtype), self.indices, self.indptr),
                            shape=(self.n, self.n))

    def to_scipy(self, *, copy: bool = True):
        """A ``scipy.sparse.csr_array`` of the weights (as float64), explicit zero weights
        kept as arcs.

        ``copy`` (default): the matrix has its own index arrays, so that SciPy's in-place
        operations (``eliminate_zeros``, ``sort_indices``, ``data[...] = ...``) leave the
        graph as it was.  ``copy=False`` shares the graph's read-only index arrays (no
        O(m) copy; the solvers' own use)."""
        import scipy.sparse as sp

        data = self.weights.astype(np.float64)
        indices, indptr = (self.indices.copy(), self.indptr.copy()) if copy else (self.indices, self.indptr)
        return sp.csr_array((data, indices, indptr), shape=(self.n, self.n))

    def _compute_fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update(f"{self.n}:{self.m}:{self.id_base}:{self.weights.dtype}".encode())
        for a in (self.indptr, self.indices, self.weights):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        s = self.degree_stats()
        s.update(
            name=self.name,
            directed=self.directed,
            id_base=self.id_base,
            weight_type=self.weight_type,
            weight_min=self.min_weight.item() if self.m else None,
            weight_max=self.max_weight.item() if self.m else None,
            negative_arcs=int((self.weights < 0).sum()),
            fingerprint=self.fingerprint,
        )
        return s


def _get_fingerprint(self) -> str:
    fp = self.__dict__.get("_fingerprint")
    if not fp:
        fp = self._compute_fingerprint()
        self.__dict__["_fingerprint"] = fp
    return fp


def _set_fingerprint(self, value) -> None:
    self.__dict__["_fingerprint"] = str(value or "")


# after @dataclass has read the field's default: the attribute becomes a property
Graph.fingerprint = property(_get_fingerprint, _set_fingerprint,
                             doc="Content hash of the graph (16 hex digits), computed on first use.")
