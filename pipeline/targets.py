"""The targets of a travel-time matrix: every vertex, a file of ids, K random vertices.

Targets keep the order they are given in, repeats included: they are the matrix's
columns, in that order (a study writes them once to ``<out>/targets.parquet``).
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.sources import check_seed, draw_vertices

#: seed of ``--random-targets`` when none is given (not the sources' 0: the same K with
#: both options would otherwise draw the same vertices)
DEFAULT_TARGET_SEED = 1

_INT = re.compile(rb"[+-]?\d+")
_COMMENT = (b"#", b"%", b"c ", b"c\t")


@dataclass
class TargetPlan:
    """The targets (internal 0-based indices, in column order, repeats kept).

    Attributes
    ----------
    targets : ndarray of int64
    how : dict
        ``kind`` (all | file | random | list), ``file``, ``seed``, ``count``, ``distinct``.
    """

    targets: np.ndarray
    how: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(len(self.targets))

    def digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.targets, dtype=np.int64).tobytes()).hexdigest()[:16]


def read_target_file(path, graph) -> np.ndarray:
    """File ids listed in a targets file, in order (repeats kept).

    The format: one vertex id per line (the input file's ids); blank lines and lines
    starting with ``#``, ``%`` or ``c `` are skipped, and so are DIMACS ``p`` lines, so a
    DIMACS ``.ss`` file (``s ID`` lines) serves too.

    Raises
    ------
    InputError
        The file is missing or empty, or a line holds something other than one integer,
        or an id that is not a vertex of ``graph`` (``FILE:LINE: message``, one line).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such targets file" if not path.exists() else "not a file")
    lo, hi = graph.id_base, graph.id_base + graph.n - 1
    ids = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith(_COMMENT) or line == b"c" or line.startswith(b"p ") or line == b"p":
                continue
            tok = line.split()
            if len(tok) == 2 and tok[0] in (b"s", b"t"):
                tok = tok[1:]
            if len(tok) != 1 or not _INT.fullmatch(tok[0]):
                shown = line.decode("utf-8", "replace")[:60]
                raise InputError(path, lineno, f"expected one vertex id (an integer) per line, got {shown!r}")
            v = int(tok[0])
            if not lo <= v <= hi:
                raise InputError(path, lineno, f"target {v} is not a vertex of {graph.name} "
                                 f"(its ids run {lo}..{hi})")
            ids.append(v)
    if not ids:
        raise InputError(path, None, "no targets in the file (expected one vertex id per line)")
    return np.asarray(ids, dtype=np.int64)


def plan_targets(graph, *, targets=None, random: int | None = None, seed: int | None = None) -> TargetPlan | None:
    """Choose the targets of a matrix; ``None`` when none are asked for.

    Parameters
    ----------
    graph : kernels.graph.Graph
    targets : "all", path or sequence of int, optional
        Every vertex (in id order), a targets file (:func:`read_target_file`), or file
        ids given directly.
    random : int, optional
        K distinct vertices drawn uniformly with ``seed`` (default
        ``DEFAULT_TARGET_SEED``), in id order.
    seed : int, optional

    Raises
    ------
    UsageError
        Both ``targets`` and ``random``, ``seed`` without ``random``, K out of range, no
        ids given.
    InputError
        A bad targets file (see :func:`read_target_file`).
    """
    if targets is not None and random is not None:
        raise UsageError("choose the targets one way only (--targets or --random-targets)")
    if seed is not None and random is None:
        raise UsageError("--target-seed goes with --random-targets K")
    if targets is None and random is None:
        return None
    if random is not None:
        k = int(random)
        if k < 1 or k > graph.n:
            raise UsageError(f"--random-targets K must be between 1 and the {graph.n:,} vertices, got {k}")
        seed = DEFAULT_TARGET_SEED if seed is None else check_seed(seed, "--target-seed")
        idx = draw_vertices(graph.n, k, seed, "--target-seed")
        how = {"kind": "random", "seed": seed}
    elif isinstance(targets, str) and targets == "all":
        idx = np.arange(graph.n, dtype=np.int64)
        how = {"kind": "all"}
    elif isinstance(targets, (str, os.PathLike)):
        file_ids = read_target_file(targets, graph)
        idx = file_ids - graph.id_base
        how = {"kind": "file", "file": os.fspath(targets)}
    else:
        targets = list(targets)
        if len(targets) == 0:
            raise UsageError("no target ids given")
        idx = graph.to_index(targets, what="target")
        how = {"kind": "list"}
    idx = np.asarray(idx, dtype=np.int64)
    how.update(count=int(len(idx)), distinct=int(len(np.unique(idx))))
    return TargetPlan(idx, how)
