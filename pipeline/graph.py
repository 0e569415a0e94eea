"""Graphs from files: a Parquet edge list turned into the solvers' CSR ``Graph``.

The CSR is built once and cached next to the Parquet file (``<file>.csr.npz``); the
cache records the Parquet file's size, modification time and metadata digest and is
rebuilt when any of them changes.  Raw inputs (DIMACS, MatrixMarket, ...) are ingested
once into ``.sssp-cache/`` by :func:`load_graph`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from gpu_sssp.kernels.graph import Graph

log = logging.getLogger(__name__)

__all__ = ["Graph", "read_parquet", "load_graph"]

CACHE_VERSION = 3


def read_parquet(path, *, cache: bool = True, parallel: str = "min") -> Graph:
    """Load a Parquet edge list written by ``sssp ingest`` / ``sssp generate``.

    The CSR is cached in ``<path>.csr.npz`` and reused while the Parquet file is
    unchanged.

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet edge list (columns ``src``, ``dst``, ``weight`` in file ids,
        ``sssp`` schema metadata).
    cache : bool
        Read and write the CSR cache.  An unreadable or stale cache is rebuilt;
        failing to write it only logs a warning, so a read-only folder still
        loads.
    parallel : {"min", "keep"}
        Parallel arcs policy (see :meth:`Graph.from_edges`); each policy has its own
        cache file, so switching does not evict the other.

    Returns
    -------
    Graph
        Named after the file's stem, with ``path`` set to the file's absolute
        path.

    Raises
    ------
    ValueError
        The file is not an edge list of this project (missing columns/metadata),
        or its arcs do not fit the recorded vertex count.
    OSError
        The file cannot be opened (``FileNotFoundError`` when it does not exist).
    """
    path = Path(path)
    pf = pq.ParquetFile(path)
    raw = (pf.schema_arrow.metadata or {}).get(b"sssp")
    if raw is None:
        raise ValueError(f"{path}: not an sssp edge list (no 'sssp' metadata; run `sssp ingest` first)")
    meta = json.loads(raw)
    names = set(pf.schema_arrow.names)
    missing = {"src", "dst", "weight"} - names
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
    st = path.stat()
    key = {
        "version": CACHE_VERSION,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "meta": hashlib.sha256(raw).hexdigest(),
        "parallel": parallel,
    }
    cpath = path.with_name(path.name + (".csr.npz" if parallel == "min" else f".{parallel}.csr.npz"))
    if cache and cpath.exists():
        try:
            with np.load(cpath, allow_pickle=False) as z:
                if json.loads(str(z["key"])) == key:
                    g = Graph(n=int(z["n"]), indptr=z["indptr"], indices=z["indices"],
                            weights=z["weights"], id_base=int(meta.get("id_base", 0)),
                            directed=bool(meta.get("directed", True)), name=path.stem,
                            meta=json.loads(str(z["meta"])))
                    g.fingerprint = str(z["fingerprint"])
                    g.path = str(path.resolve())
                    log.debug("loaded CSR cache %s", cpath)
                    return g
        except Exception as exc:  # a corrupt cache is rebuilt, never trusted
            log.warning("ignoring unreadable CSR cache %s: %s", cpath, exc)
    table = pf.read(columns=["src", "dst", "weight"])
    base = int(meta.get("id_base", 0))
    n = int(meta["vertices"])
    src = table.column("src").to_numpy().astype(np.int64) - base
    dst = table.column("dst").to_numpy().astype(np.int64) - base
    w = table.column("weight").to_numpy()
    g = Graph.from_edges(src, dst, w, n, directed=bool(meta.get("directed", True)), id_base=base,
                       parallel=parallel, name=path.stem, meta=meta)
    g.path = str(path.resolve())
    if cache:
        tmp = cpath.with_name(cpath.name + f".tmp{os.getpid()}.npz")
        try:
            np.savez(tmp, n=g.n, indptr=g.indptr, indices=g.indices, weights=g.weights,
                     key=json.dumps(key), meta=json.dumps(g.meta), fingerprint=g.fingerprint)
            os.replace(tmp, cpath)
        except OSError as exc:
            log.warning("could not write CSR cache %s: %s", cpath, exc)
            tmp.unlink(missing_ok=True)
    return g


def load_graph(path, *, cache_dir=None, **ingest_options) -> Graph:
    """Load a graph from a Parquet edge list or any input file.

    Non-Parquet inputs are ingested once into ``<cache_dir or input dir>/.sssp-cache``
    keyed by the input's size, mtime and options, then loaded from there.

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet edge list (``.parquet``, loaded as it is) or any input
        :func:`pipeline.ingest.ingest` reads.
    cache_dir : str or os.PathLike, optional
        Folder for ingested copies.  When it (or the default next to the input)
        cannot be written, ``$XDG_CACHE_HOME/sssp`` (default ``~/.cache/sssp``) is
        used instead, so read-only input folders still work.
    **ingest_options
        Passed to :func:`pipeline.ingest.ingest`; they are part of the cache key,
        so different options never share an ingested copy.

    Returns
    -------
    Graph
        For non-Parquet inputs, named after the input file without its
        compression suffix and extension.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The input is malformed (``pipeline.errors.InputError`` from ingestion) or the
        Parquet file is not an edge list of this project.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".parquet":
        return read_parquet(path)
    from gpu_sssp.pipeline import ingest as _ingest

    st = path.stat()
    key = hashlib.sha256(
        json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns, sorted(ingest_options.items())],
                   default=str).encode()
    ).hexdigest()[:16]
    base = Path(cache_dir) if cache_dir else path.resolve().parent / ".sssp-cache"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / ".probe"
        probe.touch()
        probe.unlink()
    except OSError:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sssp"
        base.mkdir(parents=True, exist_ok=True)
    out = base / f"{path.name}.{key}.parquet"
    if not out.exists():
        _ingest.ingest(path, out, **ingest_options)
    g = read_parquet(out)
    name = path.name
    for ext in (".gz", ".xz", ".bz2", ".zst"):
        name = name.removesuffix(ext)
    g.name = Path(name).stem
    return g
