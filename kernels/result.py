"""The one result schema shared by every solver, backend and writer.

Distances are float64 with ``+inf`` for unreachable vertices (exact for integer
weights while path lengths stay below 2**53, which ``Graph.check_exact`` verifies);
predecessors are int64 with ``-1`` for none.  Vertex numbers inside a ``Result`` are
the graph's internal 0-based indices; ``to_table``, ``stats_table`` and
``matrix_table`` convert them to the input file's own ids with the graph's ``id_base``
(``Result.id_base``, set by ``kernels.solve``, unless one is passed).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from gpu_sssp.kernels.errors import OptionError, SsspError, SumOverflowError, UsageError

UNREACHABLE = np.inf
NO_PREDECESSOR = -1

#: Long-form distance table: one row per (source, reached vertex).
DISTANCE_SCHEMA = pa.schema(
    [
        ("source", pa.int64()),
        ("vertex", pa.int64()),
        ("distance", pa.float64()),
        ("predecessor", pa.int64()),
    ]
)

#: Per-source statistics: one row per solved source.
STATS_SCHEMA = pa.schema(
    [
        ("source", pa.int64()),
        ("reached", pa.int64()),
        ("eccentricity", pa.float64()),
        ("sum_distance", pa.float64()),
        ("mean_distance", pa.float64()),
        ("iterations", pa.int64()),
        ("relaxations", pa.int64()),
        ("kernel_ms", pa.float64()),
        ("device", pa.string()),
        ("worker", pa.string()),
        ("algorithm", pa.string()),
        ("mteps", pa.float64()),
    ]
)
#: the statistics' columns of one value per file (Parquet dictionary-encodes these only:
#: encoding the numeric columns too made a 4,096-row file 1.7x slower to write)
STATS_DICTIONARY_COLUMNS = ("device", "worker", "algorithm")
#: :data:`STATS_SCHEMA` as a statistics file's table holds it (``Result.stats_table(for_file=True)``)
STATS_FILE_SCHEMA = pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()))
                               if f.name in STATS_DICTIONARY_COLUMNS else f for f in STATS_SCHEMA])


#: Travel-time matrix, wide form: one row per source, its distances to every target in
#: the order the targets were asked (repeats kept), ``+inf`` where unreachable.  The
#: targets' file ids are in the schema metadata (key ``sssp``, field ``targets``) and,
#: in a study, in ``targets.parquet``.
MATRIX_SCHEMA = pa.schema(
    [
        ("source", pa.int64()),
        ("distance", pa.list_(pa.float64())),
    ]
)

#: Travel-time matrix, long form: one row per (source, target) pair, unreachable ones
#: included (``+inf``), rows by source then target in the asked order.
MATRIX_LONG_SCHEMA = pa.schema(
    [
        ("source", pa.int64()),
        ("target", pa.int64()),
        ("distance", pa.float64()),
    ]
)

MATRIX_FORMS = ("wide", "long")


def matrix_table(sources, targets, matrix, id_base: int = 0, form: str = "wide") -> pa.Table:
    """A ``(len(sources), len(targets))`` distance matrix as an Arrow table.

    Parameters
    ----------
    sources, targets : array_like of int
        Internal 0-based indices (rows and columns of ``matrix``).
    matrix : ndarray of float64
        ``+inf`` where unreachable.
    id_base : int
        Added to every vertex index (the input file's id base).
    form : {"wide", "long"}
        :data:`MATRIX_SCHEMA` (one row per source, a list column of ``len(targets)``
        distances) or :data:`MATRIX_LONG_SCHEMA` (one row per pair).

    Returns
    -------
    pyarrow.Table
        File ids; the target ids are also in the metadata (``b"sssp"`` JSON, ``targets``).
    """
    import json

    src = np.asarray(sources, dtype=np.int64) + id_base
    tg = np.asarray(targets, dtype=np.int64) + id_base
    mat = np.ascontiguousarray(matrix, dtype=np.float64)
    b, t = mat.shape
    if b != len(src) or t != len(tg):
        raise ValueError(f"matrix of shape {mat.shape} for {len(src)} sources x {len(tg)} targets")
    if form == "wide":
        # list offsets are int32: rows are cut into chunks of fewer than 2**31 values
        step = max(1, (2**31 - 1) // max(t, 1))
        chunks = []
        for r0 in range(0, b, step):
            r1 = min(b, r0 + step)
            offsets = pa.array(np.arange(r1 - r0 + 1, dtype=np.int32) * np.int32(t))
            chunks.append(pa.ListArray.from_arrays(offsets, pa.array(mat[r0:r1].reshape(-1))))
        lists = pa.chunked_array(chunks, type=pa.list_(pa.float64()))
        table = pa.Table.from_arrays([pa.array(src), lists], schema=MATRIX_SCHEMA)
    elif form == "long":
        table = pa.Table.from_pydict({"source": np.repeat(src, t), "target": np.tile(tg, b),
                                      "distance": mat.reshape(-1)}, schema=MATRIX_LONG_SCHEMA)
    else:
        raise UsageError(f"form must be one of {MATRIX_FORMS}, got {form!r}")
    meta = {b"sssp": json.dumps({"targets": tg.tolist(), "form": form}).encode()}
    return table.replace_schema_metadata(meta)


class NegativeCycleError(SsspError, ValueError):
    """A negative-weight cycle is reachable from a source (``sssp`` exits with 3).

    Attributes
    ----------
    vertex : int
        Internal index of a vertex on the cycle.
    source : int or None
        Internal index of the source from which it is reachable.
    """

    exit_code = 3

    def __init__(self, vertex: int, source: int | None = None, id_base: int = 0, cycle=None):
        self.vertex = int(vertex)
        self.source = None if source is None else int(source)
        self.id_base = id_base
        self.cycle = None if cycle is None else [int(c) for c in cycle]
        where = f" reachable from source {self.source + id_base}" if self.source is not None else ""
        msg = f"negative cycle{where}: vertex {self.vertex + id_base} lies on it"
        if self.cycle:
            msg += " (cycle: " + " -> ".join(str(c + id_base) for c in self.cycle[:12])
            msg += " ...)" if len(self.cycle) > 12 else ")"
        super().__init__(msg)

    def __reduce__(self):  # picklable across Dask workers
        return (type(self), (self.vertex, self.source, self.id_base, self.cycle))


@dataclass
class Result:
    """Shortest paths from a batch of sources.

    Parameters
    ----------
    sources : ndarray of int64, shape (B,)
        Internal 0-based source indices, in the order asked (repeats kept).
    distances : ndarray of float64, shape (B, n), or None
        ``+inf`` where unreachable.  ``None`` when only statistics were asked for.
    predecessors : ndarray of int64, shape (B, n), or None
        ``-1`` for the source itself and unreachable vertices.
    reached, eccentricity, sum_distance : ndarray, shape (B,)
        Per-source reductions: vertices reached (source included), largest finite
        distance, sum of finite distances.  ``sum_distance`` is exact (int64
        arithmetic) for integer weights.
    iterations, relaxations : ndarray of int64, shape (B,)
        Per-source iteration and relax-operation counts (0 where not counted).
    method, backend, device : str
    counters : dict
        Whole-call counters: ``iterations``, ``launches``, ``host_syncs``,
        ``relaxations``, ``kernel_ms``, ``mteps`` and method specific ones.
    targets : ndarray of int64, shape (T,), or None
        Set when solved with ``targets=`` (:func:`kernels.registry.solve`): then
        ``distances`` is the ``(B, T)`` travel-time matrix, column ``j`` the distances to
        ``targets[j]`` (internal indices, in the order asked, repeats kept).
    stats_over : {"vertices", "targets"}
        What ``reached`` / ``eccentricity`` / ``sum_distance`` are taken over: every
        vertex (the default, and ``stats_over="all"`` with targets), or only the distinct
        targets (``stats_over="targets"``: a restricted sweep never sees the others).
    id_base : int
        The solved graph's id base (``Graph.id_base``: 1 for a 1-based input file),
        set by :func:`kernels.registry.solve`; default 0.  The arrays above keep
        internal 0-based indices whatever it is (``sources`` included); only the
        tables (:meth:`to_table`, :meth:`stats_table`, :meth:`matrix_table`) add it,
        to give file ids.
    """

    sources: np.ndarray
    distances: np.ndarray | None
    predecessors: np.ndarray | None
    reached: np.ndarray
    eccentricity: np.ndarray
    sum_distance: np.ndarray
    iterations: np.ndarray
    relaxations: np.ndarray
    method: str
    backend: str
    device: str = "cpu"
    counters: dict[str, Any] = field(default_factory=dict)
    targets: np.ndarray | None = None
    stats_over: str = "vertices"
    id_base: int = 0

    def __post_init__(self):
        # an integer sum (int64 on the CPU, uint64 atomics on a GPU) of distances each
        # below 2**53 can pass 2**63 on a big graph and wrap: refuse, never report it
        s = self.sum_distance
        if s is None or np.asarray(s).dtype.kind not in "iu" or not len(s):
            return
        top = sum_ceiling(self.reached, self.eccentricity)
        if (top >= 2.0 ** 63).any():
            i = int(np.argmax(top >= 2.0 ** 63))
            raise SumOverflowError(
                f"the sum of distances from source index {int(self.sources[i])} can pass 2**63 "
                f"({int(self.reached[i]):,} vertices reached, eccentricity {self.eccentricity[i]:.0f}): "
                "its integer sum may have wrapped, so no statistics are reported (scale the weights down)")

    @property
    def matrix(self) -> np.ndarray:
        """The ``(B, T)`` travel-time matrix of a result solved with ``targets=``."""
        if self.targets is None or self.distances is None:
            raise OptionError("this result holds no matrix; solve with targets=")
        return self.distances

    def _base(self, id_base) -> int:
        if id_base is None:
            return int(self.id_base)
        if isinstance(id_base, (bool, np.bool_)) or not isinstance(id_base, (int, np.integer)):
            # int() took 1.5 as 1 and True as 1: ids shifted without a word
            raise UsageError(f"id_base must be a whole number, got {id_base!r}")
        if id_base < 0:  # (as Graph refuses it: file id -1 is the -1 of "no predecessor")
            raise UsageError(f"id_base must be >= 0 (ids below 0 would read as the -1 of 'no predecessor'), "
                             f"got {id_base}")
        return int(id_base)

    def matrix_table(self, id_base: int | None = None, form: str = "wide") -> pa.Table:
        """The matrix as Arrow (:data:`MATRIX_SCHEMA` or :data:`MATRIX_LONG_SCHEMA`, file ids:
        internal indices plus ``id_base``, by default the result's own :attr:`id_base`)."""
        return matrix_table(self.sources, self.targets, self.matrix, self._base(id_base), form)

    @property
    def batch_size(self) -> int:
        return int(len(self.sources))

    def mean_distance(self) -> np.ndarray:
        """Mean distance to the reached vertices other than the source (nan if none);
        with ``stats_over="targets"``, to the reached targets other than the source."""
        others = self.reached - 1
        if self.stats_over == "targets" and self.targets is not None:
            others = self.reached - np.isin(self.sources, self.targets).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(others > 0, self.sum_distance / np.maximum(others, 1), np.nan)

    def stats_table(self, id_base: int | None = None, *, worker: str = "", kernel_ms=None, mteps=None,
                    for_file: bool = False) -> pa.Table:
        """Per-source statistics as an Arrow table in :data:`STATS_SCHEMA`, sources as
        file ids: internal indices plus ``id_base``, by default the result's own
        :attr:`id_base` (the solved graph's, set by ``kernels.solve``).

        ``for_file``: the columns of one value (:data:`STATS_DICTIONARY_COLUMNS`) are
        dictionary arrays of that one value, so that a Parquet writer stores them without
        hashing every row (0.22 ms per column at 8,192 rows, a third of a statistics
        file's encode); written without the Arrow schema (``store_schema=False``) the
        file reads back in :data:`STATS_SCHEMA`, plain strings."""
        id_base = self._base(id_base)
        b = self.batch_size
        first = pa.array(np.zeros(b, dtype=np.int32)) if for_file else None  # the one value's index, every row

        def one_value(v: str):
            if for_file:
                return pa.DictionaryArray.from_arrays(first, pa.array([v], pa.string()))
            return pa.repeat(pa.scalar(v, pa.string()), b)

        if kernel_ms is None:
            kernel_ms = np.full(b, float(self.counters.get("kernel_ms", 0.0)) / max(b, 1))
        if mteps is None:
            mteps = np.full(b, float(self.counters.get("mteps", 0.0)))
        cols = {
            "source": self.sources.astype(np.int64) + id_base,
            "reached": self.reached.astype(np.int64),
            "eccentricity": self.eccentricity.astype(np.float64),
            "sum_distance": self.sum_distance.astype(np.float64),
            "mean_distance": self.mean_distance().astype(np.float64),
            "iterations": self.iterations.astype(np.int64),
            "relaxations": self.relaxations.astype(np.int64),
            "kernel_ms": np.asarray(kernel_ms, dtype=np.float64),
            "device": one_value(str(self.device)),
            "worker": one_value(str(worker)),
            "algorithm": one_value(str(self.method)),
            "mteps": np.asarray(mteps, dtype=np.float64),
        }
        return pa.Table.from_pydict(cols, schema=STATS_FILE_SCHEMA if for_file else STATS_SCHEMA)

    def to_table(self, id_base: int | None = None, *, reachable_only: bool = True,
                 rows: slice | None = None, vertices: slice | None = None) -> pa.Table:
        """Long-form distances in :data:`DISTANCE_SCHEMA` (file ids: internal indices plus
        ``id_base``, by default the result's own :attr:`id_base`, the solved graph's).

        ``rows``: a slice of the result's sources (rows), to build the table a part at a
        time: the long form takes about 40 bytes a cell while it is built, five times
        the distances themselves (``sssp solve -o`` writes it so, one part at a time).
        ``vertices``: a slice of consecutive vertices (internal indices, step 1), to cut
        a row of a graph of billions of vertices into parts too; the tables of the
        consecutive ranges of a row, in order, are that row's table."""
        id_base = self._base(id_base)
        if not isinstance(reachable_only, (bool, np.bool_)):  # "no" is truthy
            raise OptionError(f"reachable_only must be True or False, got {reachable_only!r}")
        if self.distances is None:
            raise OptionError("this result holds statistics only; solve with distances=True")
        if self.targets is not None:
            raise OptionError("this result holds a travel-time matrix: use matrix_table()")
        if rows is not None and not isinstance(rows, slice):
            raise OptionError(f"rows must be a slice of the result's sources, got {type(rows).__name__}")
        if vertices is not None and not isinstance(vertices, slice):
            raise OptionError(f"vertices must be a slice of the graph's vertices, got {type(vertices).__name__}")
        first, last, step = (slice(None) if vertices is None else vertices).indices(self.distances.shape[1])
        if step != 1:
            raise ValueError(f"vertices must be a slice of consecutive vertices (step 1), got step {step}")
        part = slice(None) if rows is None else rows
        distances = self.distances[part, first:last]
        predecessors = None if self.predecessors is None else self.predecessors[part, first:last]
        sources = np.asarray(self.sources)[part]
        b, n = distances.shape
        if reachable_only:
            rows, cols = np.nonzero(np.isfinite(distances))
        else:
            rows, cols = np.divmod(np.arange(b * n, dtype=np.int64), n)
        dist = distances[rows, cols]
        if predecessors is not None:
            pred = predecessors[rows, cols]
            pred = np.where(pred >= 0, pred + id_base, -1)
        else:
            pred = np.full(len(rows), NO_PREDECESSOR, dtype=np.int64)
        return pa.Table.from_pydict(
            {
                "source": sources[rows].astype(np.int64) + id_base,
                "vertex": cols.astype(np.int64) + (id_base + first),
                "distance": dist.astype(np.float64),
                "predecessor": pred.astype(np.int64),
            },
            schema=DISTANCE_SCHEMA,
        )


def sum_ceiling(reached, eccentricity, xp=np):
    """The most each source's sum of distances can be: (reached - 1) x its eccentricity
    (float64; 0 where nothing but the source is reached)."""
    return (xp.asarray(reached).astype(xp.float64) - 1) * xp.nan_to_num(xp.asarray(eccentricity).astype(xp.float64))


def reduce_distances(dist, *, integer: bool, xp=np):
    """Per-source reductions of a (B, n) distance array (``inf`` = unreachable).

    Works with NumPy or CuPy arrays (``xp``).  Returns ``(reached, eccentricity,
    sum_distance)``; ``sum_distance`` is summed in int64 when ``integer`` so it is
    exact for integer weights (where a source's sum could pass 2**62 it comes as float64,
    from two exact 32-bit half sums: never wrapped, the exact sum correctly rounded while
    the high half's sum stays below 2**53 - sums below about 2**85 - and within one unit in
    the last place beyond).
    """
    finite = xp.isfinite(dist)
    reached = finite.sum(axis=1).astype(xp.int64)
    masked = xp.where(finite, dist, -xp.inf)
    ecc = masked.max(axis=1) if dist.shape[1] else xp.zeros(dist.shape[0])
    ecc = xp.where(reached > 0, ecc, xp.nan)
    if integer:
        d = xp.where(finite, dist, 0).astype(xp.int64)
        s = d.sum(axis=1)
        # each distance is below 2**53, but thousands of them can pass 2**63 and wrap:
        # there the sum is taken in two 32-bit halves (each sum exact in int64) and given
        # as float64, the type the statistics files hold it in (rounded above 2**53,
        # never wrapped).  The ceiling takes the largest |distance|, not the
        # eccentricity: with negative weights the distances below 0 can sum past -2**63
        # while the largest one is 0
        magnitude = xp.abs(d).max(axis=1) if d.shape[1] else xp.zeros(d.shape[0], dtype=xp.int64)
        if bool((sum_ceiling(reached, magnitude, xp) >= 2.0 ** 62).any()):
            hi = (d >> 32).sum(axis=1)
            lo = (d & 0xFFFFFFFF).sum(axis=1)
            # carry the low sum's bits above 32 into the high one (both still exact
            # int64): the low part is then below 2**32, exact in float64, and so is the
            # high one while below 2**53 (sums below about 2**85); the one addition then
            # rounds the exact sum once (converting a low sum past 2**53 rounded it twice)
            hi = hi + (lo >> 32)
            lo = lo & 0xFFFFFFFF
            s = hi.astype(xp.float64) * 4294967296.0 + lo.astype(xp.float64)
    else:
        s = xp.where(finite, dist, 0.0).sum(axis=1)
    return reached, ecc.astype(xp.float64), s
