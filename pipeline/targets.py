"""The targets of a travel-time matrix: every vertex, a file of ids, K random vertices.

Targets keep the order they are given in, repeats included: they are the matrix's
columns, in that order (a study writes them once to ``<out>/targets.parquet``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from gpu_sssp.kernels.errors import UsageError, opt
from gpu_sssp.pipeline.sources import check_draw_count, check_seed, draw_vertices, id_choice, ids_digest, read_id_file

#: seed of ``--random-targets`` when none is given (not the sources' 0: the same K with
#: both options would otherwise draw the same vertices)
DEFAULT_TARGET_SEED = 1


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
        return ids_digest(self.targets)


def read_target_file(path, graph, *, on_count=None) -> np.ndarray:
    """File ids listed in a targets file, in order (repeats kept): read by the rule of
    sources files, :func:`pipeline.sources.read_id_file` (one vertex id per line, or a
    DIMACS ``.ss`` file of ``s ID`` lines, each with or without ``p aux sp ss K``;
    ``c``/``#``/``%`` comments and blank lines skipped).

    Raises
    ------
    InputError
        The file is missing or empty, a line is malformed, or an id is not a vertex of
        ``graph`` (``FILE:LINE: message``, one line); more ids than memory holds.

    ``on_count(count, where)``: sees the count as the ids are read, and refuses a matrix
    above its limit before they are all held (:func:`pipeline.sources.read_id_file`).
    """
    return read_id_file(path, graph, "target", on_count=on_count)


def plan_targets(graph, *, targets=None, random: int | None = None, seed: int | None = None,
                 on_count=None) -> TargetPlan | None:
    """Choose the targets of a matrix; ``None`` when none are asked for.

    Parameters
    ----------
    graph : kernels.graph.Graph
    targets : "all", path, int or sequence of int, optional
        Every vertex (in id order), a targets file (:func:`read_target_file`), or file
        ids given directly (one int is one id, as in ``gpu_sssp.matrix``).
    random : int, optional
        K distinct vertices drawn uniformly with ``seed`` (default
        ``DEFAULT_TARGET_SEED``), in id order.
    seed : int, optional
    on_count : callable, optional
        For a targets file: :func:`read_target_file`'s (the matrix's limit, checked as
        the file is read: ``pipeline.study.matrix.targets_limit``).

    Raises
    ------
    UsageError
        Both ``targets`` and ``random``, ``seed`` without ``random``, K not a whole number
        or out of range, no ids given.
    InputError
        A bad targets file (see :func:`read_target_file`).
    """
    if targets is not None and random is not None:
        raise UsageError(f"choose the targets one way only ({opt('--targets')} or {opt('--random-targets')})")
    if seed is not None and random is None:
        raise UsageError(f"{opt('--target-seed')} goes with {opt('--random-targets K')}")
    if targets is None and random is None:
        return None
    if random is not None:
        k = check_draw_count(random, graph.n, opt("--random-targets K"))
        seed = DEFAULT_TARGET_SEED if seed is None else check_seed(seed, opt("--target-seed"))
        idx = draw_vertices(graph.n, k, seed, opt("--target-seed"))
        how = {"kind": "random", "seed": seed}
    else:
        kind, value = id_choice(targets, "target", UsageError)
        if kind == "all":
            idx = np.arange(graph.n, dtype=np.int64)
            how = {"kind": "all"}
        elif kind == "file":
            file_ids = read_target_file(value, graph, on_count=on_count)
            idx = file_ids - graph.id_base
            how = {"kind": "file", "file": os.fspath(value)}
        else:
            if len(value) == 0:
                raise UsageError("no target ids given")
            idx = graph.to_index(value, what="target")
            how = {"kind": "list"}
    idx = np.asarray(idx, dtype=np.int64)
    how.update(count=int(len(idx)), distinct=int(len(np.unique(idx))))
    return TargetPlan(idx, how)
