"""Source planning: which sources a study solves, in which order, in which batches.

A plan is one of ``all`` vertices, an explicit list of file ids, ``random`` K distinct
vertices drawn with a seed, or a DIMACS ``.ss`` file.  Repeated sources are dropped
(a study solves each source once).  ``order="locality"`` sorts the sources by their
position in a breadth-first order of the (undirected view of the) graph from a seed
vertex, so that a batch holds sources close to each other: on the GPU close sources
share their wavefronts and a batch finishes in fewer iterations.
"""
from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ORDERS = ("locality", "given")


@dataclass
class SourcePlan:
    """The sources of a study (internal 0-based indices, in solving order).

    Attributes
    ----------
    sources : ndarray of int64
        Distinct internal indices, in the order they are batched.
    how : dict
        How they were chosen (``kind``: all | list | random | file, ``seed``, ``count``,
        ``file``, ``duplicates_dropped``, ``order``).
    """

    sources: np.ndarray
    how: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(len(self.sources))

    def digest(self) -> str:
        """A digest of the ordered source list (identifies the plan on resume)."""
        return hashlib.sha256(np.ascontiguousarray(self.sources, dtype=np.int64).tobytes()).hexdigest()[:16]

    def batches(self, batch_size: int) -> list[np.ndarray]:
        return make_batches(self.sources, batch_size)


def make_batches(sources: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Split ``sources`` into consecutive batches of at most ``batch_size``.

    Parameters
    ----------
    sources : ndarray
        The sources in solving order.
    batch_size : int
        Largest batch; the last batch holds the remainder.

    Returns
    -------
    list of ndarray
        Slices (views) of ``sources``, in order; empty when ``sources`` is.

    Raises
    ------
    ValueError
        ``batch_size`` is below 1.
    """
    batch_size = int(batch_size)
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    return [sources[i:i + batch_size] for i in range(0, len(sources), batch_size)]


def read_source_file(path, graph) -> np.ndarray:
    """File ids listed in a DIMACS ``.ss`` file (``s ID`` lines) or one id per line.

    Uses ``pipeline.ingest.read_sources`` when it is available.

    Parameters
    ----------
    path : str or os.PathLike
        The sources file.
    graph : pipeline.graph.Graph
        Gives the vertex count and id base that ``read_sources`` checks ids against.

    Returns
    -------
    ndarray of int64
        The listed ids as the file writes them (file ids, not internal indices), in
        file order with repeats kept.

    Raises
    ------
    ValueError
        The file lists no source, or a line is malformed (or, through
        ``read_sources``, names a vertex that does not exist).
    FileNotFoundError
        ``path`` does not exist.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such sources file")
    try:
        from pipeline.ingest import read_sources
    except ImportError:
        read_sources = None
    if read_sources is not None:
        ids = np.asarray(read_sources(path, vertices=graph.n, id_base=graph.id_base), dtype=np.int64)
    else:
        ids = _parse_ss(path)
    if len(ids) == 0:
        raise ValueError(f"{path}: no sources in file (expected 's ID' lines or one id per line)")
    return ids


def _parse_ss(path: Path) -> np.ndarray:
    out = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            tok = line.split()
            if not tok or tok[0] in ("c", "p", "#") or tok[0].startswith(("#", "%")):
                continue
            if tok[0] == "s" and len(tok) == 2:
                tok = tok[1:]
            if len(tok) != 1 or not re.fullmatch(r"-?\d+", tok[0]):
                raise ValueError(f"{path}:{lineno}: expected 's ID' or an integer id, got {line.strip()[:60]!r}")
            out.append(int(tok[0]))
    return np.asarray(out, dtype=np.int64)


def bfs_rank(graph, seed: int = 0) -> np.ndarray:
    """Rank of every vertex in a BFS order of the undirected view from ``seed``.

    Vertices of other components follow, each component in BFS order from its
    lowest vertex (reverse Cuthill-McKee would also do; plain BFS keeps it simple).
    With more than 64 weakly connected components only the seed's component is
    traversed; the other vertices follow by component label, then index, which
    keeps the cost at one BFS however many components there are.

    Parameters
    ----------
    graph : pipeline.graph.Graph
    seed : int
        Internal index of the vertex ranked 0.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``rank[v]`` is the position of vertex ``v``; a permutation of ``0 .. n - 1``.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = graph.n
    pattern = sp.csr_array((np.ones(graph.m, dtype=np.int8), graph.indices, graph.indptr), shape=(n, n))
    rank = np.full(n, -1, dtype=np.int64)
    ncomp, labels = connected_components(pattern, directed=True, connection="weak")
    # the seed's component first, then the others from their lowest vertex
    starts = np.full(ncomp, n, dtype=np.int64)
    np.minimum.at(starts, labels, np.arange(n, dtype=np.int64))
    order_comps = [labels[seed]] + [c for c in range(ncomp) if c != labels[seed]]
    pos = 0
    few = ncomp <= 64
    for c in order_comps:
        if not few:
            break
        start = seed if c == labels[seed] else int(starts[c])
        order = breadth_first_order(pattern, start, directed=False, return_predecessors=False)
        rank[order] = np.arange(pos, pos + len(order))
        pos += len(order)
    if not few:
        # many components: BFS of the seed's component, then the rest by component and id
        order = breadth_first_order(pattern, seed, directed=False, return_predecessors=False)
        rank[order] = np.arange(len(order))
        rest = np.flatnonzero(rank < 0)
        rest = rest[np.lexsort((rest, labels[rest]))]
        rank[rest] = np.arange(len(order), n)
    return rank


def plan_sources(graph, *, sources=None, ids=None, sources_file=None, random: int | None = None,
                 seed: int | None = None, order: str = "locality") -> SourcePlan:
    """Choose a study's sources.

    Parameters
    ----------
    graph : pipeline.graph.Graph
    sources : {"all"}, optional
        Every vertex.
    ids : sequence of int, optional
        Explicit source ids (the input file's ids).
    sources_file : path, optional
        A DIMACS ``.ss`` file (or one id per line).
    random : int, optional
        Draw this many distinct vertices uniformly with ``seed``.
    seed : int, optional
        Seed for ``random`` (default 0).
    order : {"locality", "given"}
        Batch order; ``locality`` sorts the sources by BFS order from the first source.

    Returns
    -------
    SourcePlan

    Raises
    ------
    ValueError
        No choice or several choices, an unknown id, an empty file, K out of range.
    """
    chosen = [k for k, v in (("all", sources), ("ids", ids), ("file", sources_file), ("random", random))
              if v is not None and v is not False]
    if len(chosen) > 1:
        raise ValueError(f"choose the sources one way only (got {', '.join(chosen)})")
    if sources not in (None, "all"):
        raise ValueError(f"--sources takes 'all', got {sources!r} (use --source ID or --sources-file F.ss)")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    how: dict = {}
    if not chosen or chosen == ["all"]:
        idx = np.arange(graph.n, dtype=np.int64)
        how = {"kind": "all"}
    elif chosen == ["ids"]:
        file_ids = np.asarray(list(ids))  # to_index rejects 1.5 rather than truncating it
        if len(file_ids) == 0:
            raise ValueError("no source ids given")
        idx = graph.to_index(file_ids, what="source")
        how = {"kind": "list"}
    elif chosen == ["file"]:
        file_ids = read_source_file(sources_file, graph)
        idx = graph.to_index(file_ids, what=f"source in {sources_file}")
        how = {"kind": "file", "file": str(sources_file)}
    else:
        k = int(random)
        if k < 1 or k > graph.n:
            raise ValueError(f"--random K must be between 1 and the {graph.n:,} vertices, got {k}")
        seed = 0 if seed is None else int(seed)
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(graph.n, size=k, replace=False)).astype(np.int64)
        how = {"kind": "random", "seed": seed}
    # drop repeats, keeping the first occurrence
    _, first = np.unique(idx, return_index=True)
    dropped = len(idx) - len(first)
    if dropped:
        log.warning("dropping %d repeated source(s)", dropped)
        idx = idx[np.sort(first)]
    how["duplicates_dropped"] = int(dropped)
    if order == "locality" and len(idx) > 1:
        rank = bfs_rank(graph, int(idx[0]) if how["kind"] != "all" else 0)
        idx = idx[np.argsort(rank[idx], kind="stable")]
    how["order"] = order
    how["count"] = int(len(idx))
    return SourcePlan(idx.astype(np.int64), how)
