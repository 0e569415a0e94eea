"""Test graph builders for the kernel tests (real files, generators, special cases).

Real files are read with ``pipeline.ingest`` when it is importable and works, otherwise
with the small local parsers here (DIMACS .gr, PACE ``p tw`` with seeded weights,
METIS, MatrixMarket incl. the SuiteSparse ``.tar.gz``).  Generators use
``pipeline.generate`` when present, otherwise tiny local RMAT / grid builders.
"""
from __future__ import annotations

import io
import lzma
import os
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from gpu_sssp.pipeline.graph import Graph, read_parquet

_CACHE: dict = {}


def data_dir() -> Path:
    for cand in (os.environ.get("SSSP_SHARED_DATA"), Path(__file__).resolve().parents[2] / "shared" / "data",
                 Path(__file__).resolve().parents[3] / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def fresh_seed() -> int:
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return seed


# ---------------------------------------------------------------------- real files
def load(rel: str, *, weights=None, parallel="min", weight_type=None) -> Graph:
    """A real graph from the shared data folder (cached per process)."""
    key = (rel, weights, parallel, weight_type)
    if key in _CACHE:
        return _CACHE[key]
    path = data_dir() / rel
    if not path.exists():
        import pytest

        pytest.skip(f"{path} is not present")
    from gpu_sssp.pipeline.ingest import ingest

    # the product's own ingestion: a failure there must fail the GPU tests too
    tmp = Path(tempfile.mkdtemp(prefix="kgraphs-"))
    out = tmp / (path.name.replace(".", "_") + ".parquet")
    ingest(path, out, weights=weights, weight_type=weight_type)
    g = read_parquet(out, cache=False, parallel=parallel)
    _CACHE[key] = g
    return g


def _open_text(path: Path) -> str:
    if path.name.endswith(".xz"):
        return lzma.open(path, "rt").read()
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path) as tf:
            members = [m for m in tf.getmembers() if m.name.endswith(".mtx")]
            members.sort(key=lambda m: -m.size)
            return tf.extractfile(members[0]).read().decode()
    return path.read_text()


def _seeded(m, weights):
    if weights and weights.startswith("random:"):
        _, lo, hi, seed = weights.split(":")
        return np.random.default_rng(int(seed)).integers(int(lo), int(hi) + 1, size=m)
    return None


def _local(path: Path, weights, parallel, weight_type) -> Graph:
    text = _open_text(path)
    name = path.name.split(".")[0]
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip() and not ln.startswith(("c", "%"))), "")
    if first.startswith("p tw"):
        n = int(first.split()[2])
        body = [ln for ln in lines if ln and ln[0].isdigit()]
        uv = np.loadtxt(io.StringIO("\n".join(body)), dtype=np.int64).reshape(-1, 2) - 1
        w = _seeded(len(uv), weights)
        w = np.ones(len(uv), np.int64) if w is None else w
        src = np.concatenate([uv[:, 0], uv[:, 1]])
        dst = np.concatenate([uv[:, 1], uv[:, 0]])
        ww = np.concatenate([w, w])
        directed, base = False, 1
    elif first.startswith("p sp"):
        n = int(first.split()[2])
        arcs = np.array([ln.split()[1:4] for ln in lines if ln.startswith("a ")], dtype=np.int64)
        src, dst, ww = arcs[:, 0] - 1, arcs[:, 1] - 1, arcs[:, 2]
        directed, base = True, 1
    elif path.suffix == ".mtx" or path.name.endswith(".tar.gz"):
        header = lines[0].lower()
        rows = [ln for ln in lines[1:] if ln.strip() and not ln.startswith("%")]
        n = int(rows[0].split()[0])
        vals = np.loadtxt(io.StringIO("\n".join(rows[1:])), dtype=np.float64, ndmin=2)
        src, dst = vals[:, 0].astype(np.int64) - 1, vals[:, 1].astype(np.int64) - 1
        if "pattern" in header or vals.shape[1] < 3:
            ww = np.ones(len(src), np.int64)
        elif "real" in header:
            ww = vals[:, 2]
        else:
            ww = vals[:, 2].astype(np.int64)
        if "symmetric" in header:
            off = src != dst
            src, dst, ww = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]]), np.concatenate([ww, ww[off]])
        directed, base = "symmetric" not in header, 1
    else:  # METIS (unweighted adjacency lists)
        rows = [ln for ln in lines if not ln.startswith("%")]
        n = int(rows[0].split()[0])
        src, dst = [], []
        for i, ln in enumerate(rows[1:n + 1]):
            nb = [int(t) - 1 for t in ln.split()]
            src += [i] * len(nb)
            dst += nb
        src, dst = np.array(src, np.int64), np.array(dst, np.int64)
        ww = np.ones(len(src), np.int64)
        w = _seeded(len(src), weights)
        if w is not None:  # same weight both directions: key the draw on the pair
            lo, hi = np.minimum(src, dst), np.maximum(src, dst)
            _, inv = np.unique(lo * n + hi, return_inverse=True)
            ww = w[inv]
        directed, base = False, 1
    if weight_type:
        ww = ww.astype(weight_type)
    return Graph.from_edges(src, dst, ww, n, directed=directed, id_base=base, parallel=parallel, name=name)


# ---------------------------------------------------------------------- generators
def rmat(scale, edge_factor=8, *, seed=0, dtype=np.int64, lo=1, hi=100) -> Graph:
    from gpu_sssp.pipeline import generate

    src, dst, w, n = generate.rmat(scale, edge_factor, seed=seed, weights=(lo, hi),
                                   weight_type=np.dtype(dtype).name)
    return Graph.from_edges(src, dst, np.asarray(w).astype(dtype), n, name=f"rmat{scale}")


def grid(rows, cols, *, seed=0, dtype=np.int64, lo=1, hi=100) -> Graph:
    from gpu_sssp.pipeline import generate

    src, dst, w, n = generate.grid(rows, cols, seed=seed, weights=(lo, hi),
                                   weight_type=np.dtype(dtype).name)
    return Graph.from_edges(src, dst, np.asarray(w).astype(dtype), n, directed=False, name=f"grid{rows}x{cols}")


def fan(seed, fan=20_000, dtype=np.int64) -> Graph:
    """Vertex 0 with ``fan`` out-arcs, then random arcs among the others: a hub whose arcs
    overflow a block's shared-memory stages (hbf's enqueue stage of 2048 entries,
    locality's resident arcs), weights U[1, 999]."""
    rng = np.random.default_rng(seed)
    n = fan + 1
    src = np.concatenate([np.zeros(fan, np.int64), rng.integers(1, n, size=3 * fan)])
    dst = np.concatenate([np.arange(1, n), rng.integers(1, n, size=3 * fan)])
    w = rng.integers(1, 1000, size=len(src)).astype(dtype)
    return Graph.from_edges(src, dst, w, n, name=f"fan{fan}")


def random_graph(n, m, *, seed=0, dtype=np.int64, lo=1, hi=100, parallel="min") -> Graph:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    if np.dtype(dtype).kind == "f":
        w = rng.uniform(lo, hi, size=m)
    else:
        w = rng.integers(lo, hi + 1, size=m)
    return Graph.from_edges(src, dst, w.astype(dtype), n, parallel=parallel, name=f"random{n}")


def with_dtype(g: Graph, dtype) -> Graph:
    return Graph.from_edges(g.tails(), g.indices, g.weights.astype(dtype), g.n, directed=g.directed,
                            id_base=g.id_base, parallel="keep", name=f"{g.name}-{np.dtype(dtype).name}")


def with_potentials(g: Graph, *, seed=0, spread=None) -> Graph:
    """Negative weights without negative cycles: w' = w + p(u) - p(v) (cycle sums kept)."""
    rng = np.random.default_rng(seed)
    spread = spread or int(3 * max(1, np.abs(g.weights).max()))
    p = rng.integers(0, spread, size=g.n)
    t = g.tails()
    w = g.weights.astype(np.int64) + p[t] - p[g.indices]
    out = Graph.from_edges(t, g.indices, w.astype(g.weights.dtype if g.weights.dtype.kind != "f" else np.float64),
                           g.n, parallel="keep", name=f"{g.name}-neg")
    assert out.has_negative
    return out


def negative_cycle_graph(dtype=np.int64):
    """0 -> 1 -> 2 -> 3 -> 1 with the cycle 1-2-3 of weight -2, 3 -> 4 (a sink), 5 -> 0 and
    an isolated vertex 6: sources 0, 1, 5 reach the cycle, 4 and 6 do not."""
    src = [0, 1, 2, 3, 3, 5]
    dst = [1, 2, 3, 1, 4, 0]
    w = [4, 1, -5, 2, 7, 1]
    return Graph.from_edges(np.array(src), np.array(dst), np.array(w, dtype=dtype), 7, name="negcycle"), {1, 2, 3}
