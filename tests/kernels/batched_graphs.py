"""Graph builders for the batched-kernel tests and timing script (real files + generators).

Real files go through :func:`pipeline.ingest.ingest` into a per-process cache folder and
come back as :class:`kernels.graph.Graph`.  ``road(name)`` is a PACE road topology with
the project's seeded weights (``default_rng(7).integers(1, 1001)`` per edge line, the same
weight both directions).
"""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import numpy as np

from gpu_sssp.pipeline.graph import Graph, read_parquet
from gpu_sssp.pipeline.ingest import ingest

_CACHE = Path(os.environ.get("SSSP_TEST_CACHE", tempfile.gettempdir())) / f"sssp-batched-{os.getpid()}"


def shared_data() -> Path:
    from tests.conftest import SHARED_DATA

    return SHARED_DATA


@functools.lru_cache(maxsize=None)
def load(rel: str, weights: str | None = None, undirected: bool = False) -> Graph:
    """Ingest ``shared/data/<rel>`` once per process and return its Graph."""
    _CACHE.mkdir(parents=True, exist_ok=True)
    src = shared_data() / rel
    if not src.exists():  # a fresh clone without ../shared/data: skipped, as graphs.load does
        import pytest

        pytest.skip(f"{src} is not present")
    out = _CACHE / (rel.replace("/", "_") + f".{weights or 'file'}.{int(undirected)}.parquet")
    if not out.exists():
        ingest(src, out, weights=weights, undirected=undirected)
    return read_parquet(out, cache=False)


def road(name: str = "NY") -> Graph:
    return load(f"road-topology/{name}.gr.xz", weights="random:1:1000:7")


def random_graph(n: int, m: int, seed: int, *, lo: int = 1, hi: int = 100,
                 isolated: int = 0, floats: bool = False) -> Graph:
    """Directed G(n, m) with integer (or float) weights; the last ``isolated`` vertices
    have no arcs."""
    rng = np.random.default_rng(seed)
    k = n - isolated
    src = rng.integers(0, k, m)
    dst = rng.integers(0, k, m)
    if floats:
        w = rng.uniform(lo, hi, m)
    else:
        w = rng.integers(lo, hi + 1, m).astype(np.int64)
    return Graph.from_edges(src, dst, w, n, name=f"random-{n}-{m}-{seed}")


def reweighted(g: Graph, seed: int, spread: int = 50) -> Graph:
    """Same shortest-path trees, some arcs negative: w' = w + p(u) - p(v) (no negative
    cycle when w >= 0)."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, spread, g.n).astype(np.int64)
    t = g.tails().astype(np.int64)
    h = g.indices.astype(np.int64)
    w = g.weights.astype(np.int64) + p[t] - p[h]
    return Graph.from_edges(t, h, w, g.n, name=g.name + "-reweighted"), p


def with_negative_cycle(g: Graph, seed: int):
    """Add a 3-cycle of total weight -3 on random vertices; returns (graph, cycle)."""
    rng = np.random.default_rng(seed)
    a, b, c = (int(x) for x in rng.choice(g.n, 3, replace=False))
    t = np.concatenate([g.tails().astype(np.int64), [a, b, c]])
    h = np.concatenate([g.indices.astype(np.int64), [b, c, a]])
    w = np.concatenate([g.weights.astype(np.int64), [-1, -1, -1]])
    return Graph.from_edges(t, h, w, g.n, name=g.name + "-negcycle"), [a, b, c]
