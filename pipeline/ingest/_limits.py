"""Plausibility checks on the sizes an input declares, made before anything is sized by them.

A header is a promise about the rest of the file: ``p sp N M`` says M arc lines follow
and that the graph has N vertices. Downstream, N sizes per-vertex arrays (the CSR's
``indptr``, a study's distance buffers) and M per-arc ones, so a 27-byte file that
claims 300,000,000 vertices would cost gigabytes long after ingestion "succeeded".
Three checks stop that, each named in its error:

* **file size** (uncompressed inputs and tar members, whose text size is known up
  front): every announced record is a line of at least a few bytes (``a U V W`` takes
  8), so a file of S bytes holds at most about S / 8 arcs.
* **isolated vertices**: M records touch at most 2 M vertices, so at least N - 2 M of
  the N declared vertices have no arc at all. More than ``sssp.ingest.max-isolated-vertices``
  of them is refused. This needs no file size, so it holds for compressed inputs too.
* **limits**: ``sssp.ingest.max-vertices`` and ``sssp.ingest.max-arcs``. An edge list
  has no header: its records are counted against ``max-arcs`` as they are read (the
  first record past the limit is named), and its largest id makes the vertex count
  checked against ``max-vertices`` (``EdgeSink``).

Compressed inputs (.gz/.xz/.bz2/.zst) have no text size until they are read, so their
record counts are checked lazily: nothing in ingestion is allocated from a header's
counts, the records are counted as they stream and a count that does not match the
header is an error before the output is committed.

Path lengths are the fourth check (``EdgeSink`` applies it): the solvers refuse a graph
whose bound on shortest-path lengths (``kernels.graph.path_bound_of``: the smaller of
``(n - 1) * max|w|`` and the sum of each vertex's heaviest in-arc weight) reaches 2**53
for integer weights (float64 distances stop being exact) or is not finite for real ones;
ingestion applies the same function to the arcs it writes, so a graph that ingests can be
solved.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from gpu_sssp.kernels.errors import UsageError, opt, python_phrase
from gpu_sssp.kernels.graph import path_bound_ok

from ..errors import InputError, LimitError

EXACT_LIMIT = 2.0**53


def _fmt(v) -> str:
    return f"{int(v):,}"


def _how_to_raise(key: str, option: str | None) -> str:
    """How to raise limit ``key``; ``option`` None: the input takes no limit option (an
    edge list read as it is), only the setting raises it."""
    env = "DASK_SSSP__INGEST__" + key.upper().replace("-", "_")
    if option is None:
        return (f"raise the limit with the setting sssp.ingest.{key} or {env}=N where the edge list is read "
                "(on a cluster's workers too)")
    named = opt(f"{option} N (sssp ingest)", python=python_phrase(f"{option} N"))
    return f"raise the limit with {named}, the setting sssp.ingest.{key} or {env}=N"


@dataclass
class Limits:
    """Declared-size limits for one ingestion (``None``: no limit)."""

    max_vertices: int | None = None
    max_arcs: int | None = None
    max_isolated: int | None = None
    display: str = "<input>"
    text_size: int | None = None  # bytes of text when known before reading
    #: the reader takes the limits as options (ingest's --max-vertices, max_vertices=);
    #: False for an ingested edge list, which only the settings limit
    options: bool = True

    @classmethod
    def from_settings(cls, max_vertices=None, max_arcs=None, max_isolated=None) -> "Limits":
        from ..config import setting

        def get(key, explicit):
            if explicit is not None and (isinstance(explicit, (bool, np.bool_))
                                         or not isinstance(explicit, numbers.Integral)):
                # int() took 1.5 as 1 (the command line takes whole numbers only)
                raise UsageError(f"{key.replace('-', '_')}: expected a whole number, got {explicit!r}")
            v = setting(f"ingest.{key}", explicit, default=None)
            if v is None or (isinstance(v, str) and v.lower() in ("none", "null", "")):
                return None
            try:
                v = int(v)
            except (TypeError, ValueError):
                raise UsageError(f"sssp.ingest.{key}: expected a whole number or null, got {v!r}") from None
            if v < 0:
                raise UsageError(f"sssp.ingest.{key}: expected a number >= 0, got {v}")
            return v

        return cls(get("max-vertices", max_vertices), get("max-arcs", max_arcs),
                   get("max-isolated-vertices", max_isolated))

    def bind(self, display: str, text_size: int | None, options: bool = True) -> "Limits":
        return Limits(self.max_vertices, self.max_arcs, self.max_isolated, display, text_size, options)

    def _raise_with(self, key: str) -> str:
        return _how_to_raise(key, "--" + key if self.options else None)

    # -- header checks -----------------------------------------------------------
    def records(self, count: int, noun: str, min_bytes: int, describe: str, line, header: str):
        """``count`` announced record lines of at least ``min_bytes`` bytes each
        (newline included; the last line may lack it) must fit in the file."""
        if self.text_size is None:
            return
        cap = (self.text_size + 1) // min_bytes
        if count > cap:
            raise InputError(self.display, line,
                             f"header '{header}' announces {_fmt(count)} {noun}, but the file's "
                             f"{_fmt(self.text_size)} bytes hold at most {_fmt(cap)} (file-size check: "
                             f"each {describe} takes at least {min_bytes} bytes); the file is "
                             "truncated or the header is wrong")

    def arcs(self, count: int, noun: str, line, header: str):
        if self.max_arcs is not None and count > self.max_arcs:
            raise LimitError(self.display, line,
                             f"header '{header}' announces {_fmt(count)} {noun}, above the limit "
                             f"sssp.ingest.max-arcs = {_fmt(self.max_arcs)}; "
                             + self._raise_with("max-arcs"))

    def records_read(self, seen: int, count: int, noun: str, batch):
        """Inputs without a header (edge lists): ``count`` more records read after ``seen``,
        counted against ``max-arcs`` as they stream; names the first record past the limit
        (before that batch is written or anything is sized by it)."""
        cap = self.max_arcs
        if cap is None or seen + count <= cap:
            return
        line = batch.line_of(cap - seen) if batch is not None else None
        raise LimitError(self.display, line,
                         f"{noun} number {_fmt(cap + 1)} is above the limit sssp.ingest.max-arcs = "
                         f"{_fmt(cap)} (an edge list has no header: its {noun}s are counted as they are read); "
                         + self._raise_with("max-arcs"))

    def vertices(self, n: int, records: int, noun: str, line, header: str | None, *, what=None):
        """``n`` vertices for ``records`` records (each touches at most two vertices)."""
        what = what or f"header '{header}' declares"
        if self.max_vertices is not None and n > self.max_vertices:
            raise LimitError(self.display, line,
                             f"{what} {_fmt(n)} vertices, above the limit sssp.ingest.max-vertices = "
                             f"{_fmt(self.max_vertices)}; " + self._raise_with("max-vertices"))
        isolated = n - 2 * records
        if self.max_isolated is not None and isolated > self.max_isolated:
            raise LimitError(self.display, line,
                             f"{what} {_fmt(n)} vertices, but its {_fmt(records)} {noun} touch at most "
                             f"{_fmt(2 * records)} of them: at least {_fmt(isolated)} vertices would have no "
                             f"arc, above the limit sssp.ingest.max-isolated-vertices = "
                             f"{_fmt(self.max_isolated)} (isolated-vertex check); "
                             + self._raise_with("max-isolated-vertices"))

    def header(self, n: int, m: int, noun: str, min_bytes: int, describe: str, line, header: str):
        """All checks for a ``N M`` header whose M records are lines."""
        self.vertices(n, m, noun, line, header)
        self.arcs(m, noun, line, header)
        self.records(m, noun, min_bytes, describe, line, header)


def largest_exact_weight(n: int) -> int:
    """The largest integer |w| with ``float(n - 1) * float(w) < 2**53``."""
    if n <= 1:
        return int(np.iinfo(np.int64).max)
    w = int(EXACT_LIMIT // (n - 1))
    while w > 0 and float(n - 1) * float(w) >= EXACT_LIMIT:
        w -= 1
    while float(n - 1) * float(w + 1) < EXACT_LIMIT:
        w += 1
    return w


def bound_message(w, n: int, bound, integer: bool, where: str, distance_bound=None) -> str:
    """Why weight ``w`` (the largest |w|) is refused: the solvers' path-length bound
    (``kernels.graph.path_bound_of``).  ``distance_bound``: real weights, the bound on each
    distance alone (``kernels.graph.distance_bound_of``); when it is finite the refusal is
    the per-source sum's, and the message says so."""
    rule = ("the solvers' bound: the smaller of (n - 1) * max|w| and the sum of each vertex's "
            "heaviest in-arc weight")
    if integer:
        return (f"is too large for exact shortest paths in a graph of {_fmt(n)} vertices{where}: "
                f"a shortest path may reach {int(bound):,} ({rule}), not below 2**53 where float64 "
                "distances stop being exact (rescale the weights, or use real-valued weights "
                f"with {opt('--weight-type float64')})")
    if not integer and distance_bound is not None and path_bound_ok(distance_bound, integer):
        return (f"is too large in a graph of {_fmt(n)} vertices{where}: every shortest path stays "
                f"finite (at most {float(distance_bound):.6g}, {rule}), but the {_fmt(n - 1)} distances "
                "of one source may sum beyond float64's largest value, so the per-source sum "
                "(sum_distance, mean_distance) would overflow to inf (rescale the weights)")
    return (f"is too large for finite shortest paths in a graph of {_fmt(n)} vertices{where}: "
            f"a shortest path may reach {float(bound):.6g} ({rule}), beyond float64's largest "
            "value, so distances would overflow to inf (rescale the weights)")
