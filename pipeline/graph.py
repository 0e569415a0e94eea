"""Graphs from files: a Parquet edge list turned into the solvers' CSR ``Graph``.

The CSR is built once and cached next to the Parquet file (``<file>.csr.npz``); the
cache records the Parquet file's size, modification and change times, inode and metadata
digest and is rebuilt when any of them changes; its arrays are checked before use.  Raw
inputs (DIMACS, MatrixMarket, ...) are ingested once into ``.sssp-cache/`` by
:func:`load_graph`.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import hashlib
import json
import logging
import os
import re
import stat
import threading
import time
import uuid
import weakref
from pathlib import Path

import numpy as np

from gpu_sssp.kernels.graph import Graph, OneWayArcError
from gpu_sssp.pipeline import npzfile
from gpu_sssp.pipeline.errors import InputError, LimitError, MissingFileError
from gpu_sssp.pipeline.fsnames import (is_parquet_name, open_parquet, refuse_read_only_folder, safe_name, shortened,
                                       shown, stat_state)
from gpu_sssp.pipeline.writers import OWNED_TEMP

# CPython 3.11 (seen on 3.11.7; cf. CPython gh-106905) keeps the AST constructor's recursion
# depth in interpreter-wide state: ast.literal_eval, which np.load uses to parse each .npy header,
# can raise this SystemError while another thread builds an AST (seen on a study's CPU
# worker loading its CSR cache while the warm-up thread ran).  The file is fine: the CSR
# and hierarchy caches are read again (pipeline.hierarchy.read_cache).
AST_RACE = "AST constructor recursion depth mismatch"

log = logging.getLogger(__name__)

__all__ = ["Graph", "read_parquet", "load_graph"]

# 4: caches of version 3 may hold uint64 weights wrapped to negative int64; never trusted
CACHE_VERSION = 4


def read_parquet(path, *, cache: bool = True, parallel: str = "min", cache_dir=None) -> Graph:
    """Load a Parquet edge list written by ``sssp ingest`` / ``sssp generate``.

    The CSR is cached in ``<path>.csr.npz`` (or ``cache_dir``; where the file's folder
    cannot be written, the user's cache folder) and reused while the Parquet file is
    unchanged (its size, mtime, ctime, inode and metadata).

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
    cache_dir : str or os.PathLike, optional
        Folder for the CSR cache instead of the file's own (``_csr_cache_places``);
        ``$XDG_CACHE_HOME/sssp/csr`` where neither can be written.  A study's workers
        read the file with their own default places.

    Returns
    -------
    Graph
        Named after the file's stem, with ``path`` set to the file's absolute
        path.

    Raises
    ------
    pipeline.errors.InputError
        (a ``ValueError``) One line naming the file and the problem: not a Parquet
        file, no or malformed ``sssp`` metadata, missing or mistyped columns, a vertex
        count above ``sssp.ingest.max-vertices`` or with more isolated vertices than
        ``sssp.ingest.max-isolated-vertices`` (checked before anything is sized by
        it), null or out-of-range ids, NaN or infinite weights, unsigned (uint64)
        weights above 2**63 - 1 (the row named, with its true value).
    OSError
        The file cannot be opened (``FileNotFoundError`` when it does not exist).
    """
    path = Path(path)
    with _open_parquet_checked(path) as pf:
        return _read_parquet(path, pf, cache, parallel, cache_dir)


def check_parquet(path) -> None:
    """The checks :func:`read_parquet` makes of a Parquet edge list before it reads any
    arc (footer, ``sssp`` metadata, columns and their types, the vertex count's limits),
    without reading the arcs: a bench checks every GRAPH this way before it times the first.

    Raises
    ------
    pipeline.errors.InputError, OSError
        As :func:`read_parquet`.
    """
    path = Path(path)
    with _open_parquet_checked(path) as pf:
        _open_edge_list(path, pf)


def _read_parquet(path: Path, pf, cache: bool, parallel: str, cache_dir=None) -> Graph:
    raw, meta, n, base = _open_edge_list(path, pf)
    st = path.stat()
    # as load_graph keys its copies: an edit that keeps the size and puts the old mtime
    # back still changes the ctime, and a file renamed over it has another inode
    key = {
        "version": CACHE_VERSION,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "ino": st.st_ino,
        "meta": hashlib.sha256(raw).hexdigest(),
        "parallel": parallel,
    }
    places = _csr_cache_places(path, parallel, cache_dir) if cache else []
    for i, cpath in enumerate(places):
        remove_dead_temps(cpath)
        g = _csr_from_cache(cpath, key, path, pf, meta, n, base, parallel)
        if g is not None:
            if i and cache_dir is not None:
                # found in the user's cache: a copy in the cache_dir the caller named (it
                # was read from there ever after, and the caller's folder held nothing)
                try:
                    _write_csr_cache(g, key, places[0])
                except OSError as exc:
                    log.info("could not copy the CSR cache of %s to %s: %s", path, places[0], exc.strerror or exc)
            return g
    src, dst, w = _read_arcs(path, pf, n, base)
    try:
        g = Graph.from_edges(src, dst, w, n, directed=bool(meta.get("directed", True)), id_base=base,
                             parallel=parallel, name=shown(path.stem), meta=meta)
    except OneWayArcError as exc:  # the file's metadata, not a keyword the caller gave
        raise InputError(path, None, f"its sssp metadata says undirected (\"directed\": false), but arc "
                         f"{exc.tail} -> {exc.head} (weight {exc.weight!r}) has no arc {exc.head} -> {exc.tail} of "
                         "that weight: write both directions (sssp ingest --undirected does) or mark it "
                         "directed") from None
    g.path = str(path.resolve())
    why = None
    for cpath in places:  # the first place that can hold it (a read-only folder: the user's cache)
        try:
            _write_csr_cache(g, key, cpath)
        except OSError as exc:
            why = why or f"{cpath}: {exc.strerror or exc}"  # (the first place's reason)
            continue
        if why is not None:
            log.info("wrote the CSR cache of %s to %s (%s)", path, cpath, why)
        break
    else:
        if why is not None:
            log.warning("could not write CSR cache of %s (%s): it is built again on each load", path, why)
    return g


def _csr_cache_places(path: Path, parallel: str, cache_dir=None) -> list[Path]:
    """Where the CSR cache of the Parquet edge list ``path`` is looked for and written,
    in order: ``cache_dir`` where given (``load_graph(g.parquet, cache_dir=...)``), else
    beside the file (``<file>.csr.npz``) and then the user's cache folder
    (``$XDG_CACHE_HOME/sssp/csr/``), which holds the cache of a file in a read-only
    folder (it was rebuilt from the Parquet file on every load).  A cache away from its
    file is named by the file and a digest of its full path; whichever is read, its key
    (the file's size, times, inode, metadata) and arrays are checked."""
    suffix = ".csr.npz" if parallel == "min" else f".{parallel}.csr.npz"
    beside = path.with_name(path.name + suffix)
    digest = hashlib.sha256(os.fsencode(path.resolve())).hexdigest()[:16]
    away = f"{safe_name(path.name)}.{digest}{suffix}"
    spare = user_cache_folder() / "csr" / away
    if cache_dir is not None:
        return [Path(cache_dir) / away, spare]
    return [beside, spare]


def _write_csr_cache(g: Graph, key: dict, cpath: Path) -> None:
    # the process and a random part: threads of one process may write it at once
    refuse_read_only_folder(cpath.parent)
    cpath.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_temp_for(cpath)
    try:
        np.savez(tmp, n=g.n, indptr=g.indptr, indices=g.indices, weights=g.weights,
                 key=json.dumps(key), meta=json.dumps(g.meta), fingerprint=g.fingerprint)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # on disk before the rename makes it the cache
        finally:
            os.close(fd)
        os.replace(tmp, cpath)
    except OSError:
        _discard(tmp)
        raise


def _csr_from_cache(cpath: Path, key: dict, path: Path, pf, meta: dict, n: int, base: int, parallel: str):
    """The graph from the CSR cache ``cpath``, or ``None`` where there is none, it is
    stale or it cannot be trusted (then it is rebuilt)."""
    for attempt in range(3) if cpath.exists() else ():
        try:
            # every member's header first: nothing is read that the file cannot hold
            heads = npzfile.members(cpath)
            if heads.get("key", (np.dtype(object), ()))[0].kind != "U":
                raise ValueError("no key in the file")
            with np.load(cpath, allow_pickle=False) as z:
                old = json.loads(str(z["key"]))
                if old != key:  # stale: expected after the Parquet file was written again
                    moved = sorted(k for k in key if not isinstance(old, dict) or old.get(k) != key[k])
                    log.info("rebuilding the CSR cache %s: the Parquet file's %s changed since it was written",
                             cpath, ", ".join(moved) or "record")
                else:
                    _check_csr_heads(heads, n, int(pf.metadata.num_rows))
                    indptr, indices, weights = _csr_cache_arrays(z, n)
                    # what Graph.from_edges adds to the file's metadata, from the arrays: the
                    # file's record steered the solvers (parallel_policy) and was any JSON
                    gmeta = _csr_meta(meta, parallel, int(pf.metadata.num_rows), indptr, indices)
                    if json.loads(str(z["meta"])) != gmeta:
                        raise ValueError("its recorded metadata is not the Parquet file's and its arrays'")
                    g = Graph(n=n, indptr=indptr, indices=indices,
                            weights=weights, id_base=base,
                            directed=bool(meta.get("directed", True)), name=shown(path.stem),
                            meta=gmeta)
                    # the arrays' own digest, never the one the file states: a cache whose
                    # arrays were rewritten (a tool re-saving it, another graph's arrays under
                    # this key) would carry the old fingerprint, which the hierarchy cache
                    # and a study's workers trust (one SHA-256 pass, as the first build)
                    if g.fingerprint != str(z["fingerprint"]):
                        raise ValueError(f"its arrays' fingerprint is {g.fingerprint}, the file records "
                                         f"{str(z['fingerprint'])}")
                    g.path = str(path.resolve())
                    log.debug("loaded CSR cache %s", cpath)
                    return g
            break
        except Exception as exc:  # a corrupt cache is rebuilt, never trusted
            if isinstance(exc, SystemError) and AST_RACE in str(exc) and attempt < 2:
                continue  # CPython 3.11's AST race (AST_RACE above): read again
            log.warning("ignoring unreadable CSR cache %s: %s", cpath, exc)
            break
    return None


#: The weight types of a CSR (kernels.graph: the types every solver takes).
_CSR_WEIGHTS = ("int32", "int64", "float32", "float64")


def _check_csr_heads(heads: dict, n: int, rows: int) -> None:
    """Check the CSR cache's member headers (:func:`npzfile.members`) against the Parquet
    file's ``n`` vertices and ``rows`` arcs, before any array is read.

    Raises ``ValueError`` (one line) for a file this reader did not write."""
    missing = {"n", "indptr", "indices", "weights", "key", "meta", "fingerprint"} - set(heads)
    if missing:
        raise ValueError(f"no {', '.join(sorted(missing))} in the file")
    for name in ("key", "meta", "fingerprint"):
        if heads[name][0].kind != "U" or heads[name][1] != ():
            raise ValueError(f"{name} is {heads[name][0]} {heads[name][1]}, expected text")
    if heads["n"][0].kind not in "iu" or heads["n"][1] != ():
        raise ValueError(f"n is {heads['n'][0]} {heads['n'][1]}, expected an integer")
    (pd, ps), (xd, xs), (wd, ws) = heads["indptr"], heads["indices"], heads["weights"]
    if pd.kind != "i" or ps != (n + 1,):
        raise ValueError(f"indptr is {pd} {ps}, expected integers ({n + 1},) for {n:,} vertices")
    if xd.kind != "i" or len(xs) != 1 or xs[0] > rows or ws != xs:
        raise ValueError(f"indices {xd} {xs} and weights {wd} {ws}: expected at most {rows:,} arcs, one weight each")
    if str(wd) not in _CSR_WEIGHTS:
        raise ValueError(f"weights are {wd}, expected one of {', '.join(_CSR_WEIGHTS)}")


def _csr_meta(meta: dict, parallel: str, rows: int, indptr, indices) -> dict:
    """The metadata :meth:`Graph.from_edges` gives a CSR of the ``rows`` arcs of a Parquet
    file whose ``sssp`` metadata is ``meta``, from the CSR's arrays."""
    m = len(indices)
    tails = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    same = (tails[1:] == tails[:-1]) & (indices[1:] == indices[:-1]) if m > 1 else np.zeros(0, dtype=bool)
    info = dict(meta)
    info.update(csr_arcs=int(m),
                parallel_arcs_found=int(rows - m) if parallel == "min" else int(same.sum()),
                parallel_policy=parallel,
                self_loops_found=int((tails == indices).sum()))
    return info


def _csr_cache_arrays(z, n: int):
    """``(indptr, indices, weights)`` of an open CSR cache whose headers passed
    :func:`_check_csr_heads`, checked to form a CSR of ``n`` vertices: ``n`` as recorded,
    ``indptr`` from 0 to the arc count without decreasing, heads in ``0 .. n-1``, finite
    real weights.  An arc head out of range crashed the solvers (a segmentation fault).

    Raises ``ValueError`` (one line)."""
    if int(z["n"]) != n:
        raise ValueError(f"n is {int(z['n'])}, the file has {n:,} vertices")
    indptr, indices, weights = z["indptr"], z["indices"], z["weights"]
    m = len(indices)
    if indptr[0] != 0 or indptr[-1] != m or (n and np.any(indptr[1:] < indptr[:-1])):
        raise ValueError("indptr does not run from 0 to the arc count")
    if m and (int(indices.min()) < 0 or int(indices.max()) >= n):
        raise ValueError(f"an arc head out of range 0..{n - 1}")
    if weights.dtype.kind == "f" and m and not np.isfinite(weights).all():
        raise ValueError("a weight is not finite")
    return indptr, indices, weights


def _not_parquet(path: Path, exc: Exception) -> InputError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(path, None, f"not a readable Parquet file ({first}); expected a Parquet edge list "
                      "written by sssp ingest or sssp generate")


@contextlib.contextmanager
def _open_parquet_checked(path: Path):
    """:func:`fsnames.open_parquet` (any file name), a file that is not Parquet an
    ``InputError``; ``FileNotFoundError`` as it is."""
    import pyarrow as pa

    stack = contextlib.ExitStack()
    try:
        # every page's CRC compared where the writer stored one (sssp ingest and sssp
        # generate do): a flipped bit in a page gave other arcs or weights, silently
        pf = stack.enter_context(open_parquet(path, page_checksum_verification=True))
    except FileNotFoundError:
        if not os.path.lexists(path):
            raise MissingFileError(path) from None
        raise
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(path, exc) from None
    with stack:
        yield pf


def _open_edge_list(path: Path, pf):
    """Check everything an open Parquet edge list's footer says (metadata, columns,
    declared sizes) before anything is read or sized by it.

    Returns ``(raw metadata, metadata, n, id_base)``."""
    import pyarrow as pa

    from gpu_sssp.pipeline.ingest._limits import Limits

    def bad(message):
        return InputError(path, None, message)

    try:
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(path, exc) from None
    raw = (schema.metadata or {}).get(b"sssp")
    if raw is None:
        raise bad("not an sssp edge list (no 'sssp' metadata; run `sssp ingest` first)")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise bad("its 'sssp' metadata is not valid JSON; the file is damaged (ingest the input again)") from None
    if not isinstance(meta, dict):
        raise bad(f"its 'sssp' metadata is {type(meta).__name__}, expected a JSON object")
    if meta.get("format") in _AUX_KINDS and "vertices" not in meta:  # sssp ingest x.ss / x.co
        raise bad(_aux_refusal(meta["format"]))
    if "vertices" not in meta and not {"src", "dst"} <= set(schema.names):
        # another of the project's tables (a distance or statistics file), not "no 'vertices'"
        raise bad(f"not an sssp edge list: its columns are {', '.join(schema.names)} (an edge list has src, "
                  "dst, weight: sssp ingest and sssp generate write one)")

    def whole(key, default=None, allowed=None):
        v = meta.get(key, default)
        if v is None and default is None:
            raise bad(f"its 'sssp' metadata has no {key!r}: expected a whole number")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (allowed and v not in allowed):
            want = " or ".join(map(str, allowed)) if allowed else "a whole number >= 0"
            raise bad(f"its 'sssp' metadata says {key} = {json.dumps(v)}: expected {want}")
        return v

    n = whole("vertices")
    base = whole("id_base", 0, (0, 1))
    if not isinstance(meta.get("directed", True), bool):
        raise bad(f"its 'sssp' metadata says directed = {json.dumps(meta.get('directed'))}: expected true or false")
    names = set(schema.names)
    missing = {"src", "dst", "weight"} - names
    if missing:
        raise bad(f"missing column(s) {', '.join(sorted(missing))}: an sssp edge list has src, dst and weight")
    for col, kinds in (("src", "iu"), ("dst", "iu"), ("weight", "iuf")):
        t = schema.field(col).type
        try:
            kind = np.dtype(t.to_pandas_dtype()).kind
        except (NotImplementedError, TypeError):
            kind = "O"
        if kind not in kinds:
            want = "integers" if kinds == "iu" else "integers or reals"
            raise bad(f"column {col} holds {t}, expected {want}")
    rows = int(pf.metadata.num_rows)
    # the limits of ingestion, against what the file holds: n sizes per-vertex arrays
    limits = Limits.from_settings().bind(str(path), None, options=False)
    what = "its 'sssp' metadata declares"
    limits.vertices(n, rows, "arcs", None, None, what=what)
    limits.arcs(rows, "arcs", None, f"{rows:,} rows")
    return raw, meta, n, base


def _read_arcs(path: Path, pf, n: int, base: int):
    """The arcs as 0-based ``(src, dst, weight)``, each row checked: no nulls, ids in
    ``base .. base + n - 1`` (unsigned ids compared before any cast), finite weights,
    unsigned weights within int64 (the solvers' integer type: a cast would wrap them)."""

    import pyarrow as pa

    try:
        table = pf.read(columns=["src", "dst", "weight"])
    except (pa.ArrowException, OSError) as exc:  # a page's CRC, a damaged page
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(path, None, f"its arcs cannot be read ({first}); the file is damaged (ingest or "
                         "generate it again)") from None
    out = []
    for col in ("src", "dst", "weight"):
        c = table.column(col)
        if c.null_count:
            valid = np.asarray(c.is_valid().to_numpy(zero_copy_only=False))
            i = int(np.argmin(valid))
            raise InputError(path, None, f"row {i} (0-based): {col} is null; every arc needs src, dst and weight")
        out.append(c.to_numpy())
    ids = []
    for col, raw in zip(("src", "dst"), out[:2]):
        if raw.dtype.kind == "u":  # compared before the cast: uint64 ids may not fit int64
            bad = (raw < base) | (raw > base + n - 1) if n else np.ones(len(raw), dtype=bool)
        else:
            bad = (raw < base) | (raw.astype(np.int64) - base >= n)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(path, None, f"row {i} (0-based): {col} vertex id {int(raw[i])} out of range: "
                             f"expected {base}..{base + n - 1} (its 'sssp' metadata declares {n:,} vertices)")
        ids.append(raw.astype(np.int64) - base)
    w = out[2]
    if w.dtype.kind == "u" and w.dtype.itemsize >= 8 and len(w):
        too_big = w > np.uint64(np.iinfo(np.int64).max)
        if too_big.any():  # the int64 weights the solvers take would wrap it (2**64 - 1 to -1)
            i = int(np.argmax(too_big))
            raise InputError(path, None, f"row {i} (0-based): weight {int(w[i])} of arc {int(ids[0][i]) + base} -> "
                             f"{int(ids[1][i]) + base} does not fit int64 (at most 2**63 - 1 = "
                             f"{np.iinfo(np.int64).max}); integer weights are never wrapped")
    if w.dtype.kind == "f" and len(w):
        finite = np.isfinite(w)
        if not finite.all():
            i = int(np.argmin(finite))
            raise InputError(path, None, f"row {i} (0-based): weight {w[i]} of arc {int(ids[0][i]) + base} -> "
                             f"{int(ids[1][i]) + base} is not a finite number")
    return ids[0], ids[1], w


CACHE_VARIANTS = 4  # ingested copies kept per input (one per option set, least recently used goes)


def load_graph(path, *, cache_dir=None, **ingest_options) -> Graph:
    """Load a graph from a Parquet edge list or any input file.

    Non-Parquet inputs are ingested once into ``<cache_dir or input dir>/.sssp-cache``
    and loaded from there.  Each ingested copy is named
    ``<input name>.<path key>.<options key>.<input state key>.parquet`` (an input name
    that is not valid UTF-8 is replaced by ``input-<8 hex digits of its SHA-256>``,
    :func:`fsnames.safe_name`): a copy whose
    input has changed since (another size, mtime, ctime or inode) is deleted with its
    CSR caches the next time the input is loaded; a copy made within
    :data:`SETTLE_NS` of the input's last change, which an edit in the same timestamp
    tick would not change, is served only while the input's SHA-256 is the one it
    recorded (``source_sha256``), hashed on each use until the input has been still
    that long; an input that changes while it is ingested (its stat moves, or a
    tarball's bytes differ between the read of its headers and that of its member:
    ``ChangedWhileRead``) is read again; and at most
    :data:`CACHE_VARIANTS` option variants of one input are kept (least recently used
    first out).  A copy in use is never evicted: the returned Graph holds a shared
    ``flock`` on its copy until it is collected (a study's client keeps its Graph for the
    whole study, so its workers' copy and the hierarchy beside it stay); a stale copy or
    a variant too many that is held is kept, and counted as used now, until a later
    load finds it free.  The copy is written under a
    temporary name, flushed and renamed, so an interrupted ingestion never leaves a file
    that a later run trusts; a copy that cannot be read is ingested again.  A failed
    ingestion leaves no empty cache folder behind.

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet edge list (``.parquet``, loaded as it is) or any input
        :func:`pipeline.ingest.ingest` reads.
    cache_dir : str or os.PathLike, optional
        Folder for ingested copies (for a Parquet edge list, for its CSR cache:
        :func:`read_parquet`).  When it (or the default next to the input)
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
    if isinstance(path, bytes):  # a name that need not be UTF-8, as the system gives it
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        from gpu_sssp.kernels.errors import UsageError

        raise UsageError(f"load_graph: the graph must be a file name (str, bytes or os.PathLike), "
                         f"got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise MissingFileError(path)
    from gpu_sssp.pipeline import ingest as _ingest

    _check_ingest_options(path, ingest_options, _ingest.ingest)
    if is_parquet_name(path):
        return read_parquet(path, cache_dir=cache_dir)
    _ingest.parse_weights_spec(ingest_options.get("weights"))  # one line, before any cache folder

    for _attempt in range(READS_WHILE_CHANGING):
        g = _load_copy(path, cache_dir, ingest_options)
        if g is not None:
            break
    else:
        raise InputError(shown(path), None, f"the file changed while it was read, {READS_WHILE_CHANGING} times "
                         "in a row: load it once it is no longer being written")
    g.name = shown(Path(_ingest.strip_compression(path.name)).stem)  # printable (fsnames)
    return g


#: what a DIMACS ``.ss`` / ``.co`` file (or its ingested Parquet table) is, for the
#: refusal of one given as a graph
_AUX_KINDS = {"ss": "a DIMACS source list ('s ID' lines, a 'source' column once ingested)",
              "co": "a DIMACS coordinate table ('v ID X Y' lines, 'vertex', 'x', 'y' columns once ingested)"}
_AUX_USE = {"ss": "give it as the sources (sssp study/solve --sources-file, sources_file=) and the graph's "
                  ".gr file as GRAPH",
            "co": "give the graph's .gr file as GRAPH"}


def _aux_refusal(kind: str) -> str:
    return f"{_AUX_KINDS[kind]}, not a graph: {_AUX_USE[kind]}"


def _refuse_aux_input(path: Path, fmt, _ingest) -> None:
    """A ``.ss`` or ``.co`` file given as a graph is refused before it is ingested: it
    used to be ingested into the cache as its table, then refused naming the cached copy
    ("its 'sssp' metadata has no 'vertices'"), and ingested again on the next run."""
    try:
        kind = _ingest.normalise_format(fmt) if fmt else _ingest.detect_format(path)
    except (OSError, ValueError):  # unreadable or unknown: ingest() says so, in its words
        return
    if kind in _AUX_KINDS:
        raise InputError(shown(path), None, _aux_refusal(kind))


def ingest_option_names(ingest=None) -> list[str]:
    """The keywords of ``ingest`` (default ``pipeline.ingest.ingest``) that
    :func:`load_graph` passes on; ``replace``, how the cached copy is published, is
    load_graph's own business (``_load_copy``)."""
    import inspect

    if ingest is None:
        from gpu_sssp.pipeline.ingest import ingest
    return [name for name, p in inspect.signature(ingest).parameters.items()
            if p.kind is p.KEYWORD_ONLY and name != "replace"]


def load_option_names() -> list[str]:
    """The options :func:`load_graph` takes: ``cache_dir`` and ``ingest``'s keywords."""
    return ["cache_dir", *ingest_option_names()]


def refuse_unknown_options(caller: str, options: dict, own) -> None:
    """Refuse an option given to ``caller`` (``study``) that neither it (``own``: its
    keyword names) nor :func:`load_graph` (where its graph options go) takes, named as the
    caller's: ``study(g.parquet, batchsize=5)`` said "load_graph: unknown option
    'batchsize'; it takes cache_dir and the ingest options ...", pointing away from
    ``batch_size=``."""
    import difflib

    from gpu_sssp.kernels.errors import OptionError

    takes = load_option_names()
    for name in options:
        if name not in takes:
            close = difflib.get_close_matches(name, [*own, *takes], n=1)
            hint = f" (did you mean {close[0]}=?)" if close else ""
            raise OptionError(f"{caller}() got an unknown option {name!r}{hint}; beside its own, it takes "
                              f"load_graph's options {', '.join(takes)}")


def _check_ingest_options(path: Path, options: dict, ingest) -> None:
    """Refuse what :func:`load_graph` would otherwise drop without a word: an option
    ``ingest`` does not take (named, with those it takes, instead of ``ingest()``'s own
    TypeError), and, for a Parquet edge list, which is loaded as it is, any option that
    is not at its default (``sssp solve g.parquet --weights unit`` is refused the same
    way: the graph would keep the file's weights)."""
    from gpu_sssp.kernels.errors import OptionError

    takes = ingest_option_names(ingest)
    for name in options:
        if name not in takes:
            raise OptionError(f"load_graph: unknown option {name!r}; it takes cache_dir and the ingest options "
                              f"{', '.join(takes)}")
    if is_parquet_name(path):
        given = sorted(name for name, value in options.items() if value is not None and value is not False)
        if given:
            raise OptionError(f"{shown(path)}: {', '.join(f'{n}=' for n in given)} apply to raw inputs, not to an "
                              "ingested Parquet file, which is loaded as it is (ingest the raw input with them)")


#: nanoseconds: an input whose last change (ctime) is this close to the time its copy
#: was read is not known by its stat alone: a filesystem's timestamps move in ticks (a few
#: ms on Linux, 1-2 s on some others, and a file server's clock may be a little off
#: ours), so a later edit of the same size in the same tick leaves size, mtime, ctime and
#: inode as they were.  Such a copy is served only after the input's SHA-256 is found to
#: be the one it recorded (:func:`_verified`).
SETTLE_NS = 5 * 10**9

#: how many times load_graph ingests an input that changes while it is read
READS_WHILE_CHANGING = 3


def _stat(path: Path) -> os.stat_result:
    """The input's state (through links), as load_graph keys its copies."""
    return path.stat()


def _now_ns() -> int:
    return time.time_ns()


def _same_state(a: os.stat_result, b: os.stat_result) -> bool:
    return stat_state(a) == stat_state(b)


def _settled(st: os.stat_result, read_from_ns: int) -> bool:
    """Whether the input's stat ``st`` proves that any later change shows in it: its last
    change lies :data:`SETTLE_NS` before ``read_from_ns`` (when its content was read)."""
    return st.st_ctime_ns < read_from_ns - SETTLE_NS


def _mark_settled(entry: Path) -> None:
    """Say that ``entry``'s input, in the state its name keys, is the content it was made
    from, and that any change of it changes that state (:func:`_settled`)."""
    try:
        entry.with_name(entry.name + ".settled").touch()
    except OSError:
        pass


def _verified(path: Path, entry: Path, st: os.stat_result) -> bool:
    """Whether the ingested copy ``entry`` may be served for the input ``path`` in the
    state ``st`` (its name's key matched it already): settled (:func:`_mark_settled`),
    or the input's SHA-256 is the ``source_sha256`` the copy recorded, and the input did
    not change while it was hashed.  A copy made within :data:`SETTLE_NS` of the input's
    last change is hashed so on each use until it settles; any other copy never is."""
    if entry.with_name(entry.name + ".settled").exists():
        return True
    from gpu_sssp.pipeline.ingest import read_meta
    from gpu_sssp.pipeline.ingest._source import sha256_file

    recorded = read_meta(entry).get("source_sha256")
    t0 = _now_ns()
    if not recorded or sha256_file(path) != recorded or not _same_state(_stat(path), st):
        return False
    if _settled(st, t0):
        _mark_settled(entry)
    return True


def _load_copy(path: Path, cache_dir, ingest_options) -> Graph | None:
    """One try of load_graph for an input file: its graph, or ``None`` when the input
    changed (or a link to it was pointed elsewhere) while it was ingested."""
    from gpu_sssp.pipeline import ingest as _ingest

    st = _stat(path)
    resolved = path.resolve()
    # the path's bytes read as UTF-8: the same key under any locale (str() under an ASCII
    # locale, PYTHONUTF8=0 LC_ALL=C, made another key for a name beyond ASCII: ingested again)
    ikey = _short_hash([os.fsencode(resolved).decode("utf-8", "surrogateescape")])
    okey = _short_hash(sorted(ingest_options.items()))
    # the state of the input: an edit that keeps the size and puts the old mtime back
    # (touch -r, rsync -t, a tool that restores times) still changes the ctime, which
    # no user call can set; a file replaced by another has another inode; an edit in
    # the same timestamp tick as the last is caught by the SHA-256 (_verified)
    skey = _short_hash([st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    base, created = _cache_folder(resolved, cache_dir)
    name = safe_name(path.name)  # pyarrow cannot take a name that is not UTF-8
    prefix = f"{name}.{ikey}."
    out = base / f"{prefix}{okey}.{skey}.parquet"
    try:
        _evict_stale(base, name, prefix, skey, legacy=cache_dir is None)
        g = None
        if out.exists():
            try:
                if not out.is_file():  # a FIFO would block the read for ever
                    raise OSError("not a regular file")
                if not _verified(path, out, st):
                    log.info("ingesting %s again: its content is not what its cached copy %s was made "
                             "from (an edit that left its size and times as they were)", path, out)
                    _remove_for_new(out, "made from another content of its input")
                else:
                    _mark_used(out)
                    held = _take_lease(out)  # before the read: no eviction removes it from here on
                    g = _read_leased(out, held)
                    _ingest.warn_reading(shown(path), g.meta)  # as its ingest did
            except FileNotFoundError:
                # removed since (another process's eviction, which held it then): made again
                log.debug("cached copy %s went while it was opened: ingesting %s again", out, path)
                g = None
            except LimitError as exc:
                # the copy is sound: a size limit of this process's settings refuses the
                # graph (its input would be refused alike); the copy stays, the input is named
                raise LimitError(shown(path), None, exc._message) from None
            except (OSError, ValueError, KeyError) as exc:  # pyarrow's errors are ValueErrors
                log.warning("ingesting %s again: its cached copy %s is unreadable (%s)", path, out, exc)
                _remove_for_new(out, "unreadable")
        if g is None:
            # here, where it is about to be ingested, not on every load: finding a
            # tarball's format reads the whole archive (a cached copy was read in ms)
            _refuse_aux_input(path, ingest_options.get("format"), _ingest)
            if out.is_dir() and not out.is_symlink():  # the rename would fail after the whole read
                raise OSError(errno.EISDIR, f"{shown(out)} is a folder where the ingested copy of {shown(path)} "
                              "goes: remove it")
            t0 = _now_ns()
            try:
                # never over a copy another process made meanwhile: it may hold it in use
                # (a rename over it left that process's lease on a file no name reached,
                # and the copy at the name open to any eviction)
                _ingest.ingest(path, out, replace=False, **ingest_options)
                changed = False
            except _ingest.ChangedWhileRead:  # it moved while read (or a tarball's bytes differed)
                changed = True
            except FileExistsError:  # another process made it first: the next try takes it
                log.debug("the copy %s of %s was made by another process meanwhile", out, path)
                return None
            if changed or not _same_state(_stat(path), st) or path.resolve() != resolved:
                # what was read may be neither the old content nor the new one, and the
                # copy's name keys the state before: never kept (unless another process
                # took it in use meanwhile, when its own checks judge it)
                log.warning("%s changed while it was read: reading it again", path)
                if not changed:
                    _remove_unused(out, "made while its input changed")
                if created:
                    _drop_if_empty(base)
                return None
            if _settled(st, t0):
                _mark_settled(out)
            _mark_used(out)
            try:
                held = _take_lease(out)
            except FileNotFoundError:  # removed at once by another process: made again
                log.warning("the cached copy %s of %s went as it was made: reading it again", out, path)
                return None
            g = _read_leased(out, held)
        _evict_variants(base, prefix, skey, keep=out)
    except BaseException:
        if created:
            _drop_if_empty(base)
        raise
    return g


def _short_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, default=str).encode()).hexdigest()[:8]


def user_cache_folder() -> Path:
    """``$XDG_CACHE_HOME/sssp`` (default ``~/.cache/sssp``; the XDG base directory spec:
    an empty or relative ``XDG_CACHE_HOME`` is ignored), not created here."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "sssp"


def _cache_folder(resolved: Path, cache_dir) -> tuple[Path, bool]:
    """The cache folder (created when missing) and whether this call created it."""
    first = Path(cache_dir) if cache_dir else resolved.parent / ".sssp-cache"
    user = user_cache_folder()
    tried = []
    for base in (first, user):
        existed = base.is_dir()
        try:
            refuse_read_only_folder(base if existed else base.parent)
            base.mkdir(parents=True, exist_ok=True)
            probe = base / f".probe{os.getpid()}"
            probe.touch()
            probe.unlink()
            return base, not existed
        except OSError as exc:
            if not existed:
                _drop_if_empty(base)
            tried.append(f"{shown(base)} ({exc.strerror or exc})")
    raise OSError(f"{shown(resolved)}: no folder to keep its ingested copy in: cannot write "
                  f"{' nor '.join(tried)}; set XDG_CACHE_HOME to a writable folder")


def _mark_used(entry: Path) -> None:
    """Mark an ingested copy as used now (:func:`_evict_variants`) through its marker
    ``<copy>.used``: never through the copy's own times, whose change (the ctime) would
    make its CSR cache stale."""
    marker = entry.with_name(entry.name + ".used")
    try:
        marker.touch()  # an existing marker gets the time now
    except OSError:
        pass


def _last_used(entry: Path) -> int:
    """When an ingested copy was last used (ns): its marker's mtime, else its own."""
    try:
        return entry.with_name(entry.name + ".used").stat().st_mtime_ns
    except OSError:
        return entry.stat().st_mtime_ns


def _drop_if_empty(base: Path) -> None:
    """Remove a cache folder that holds nothing (a failed first ingestion)."""
    try:
        base.rmdir()  # only succeeds on an empty folder
    except OSError:
        pass


def _remove_entry(entry: Path) -> None:
    """An ingested copy and everything derived from it (``<copy>.csr.npz``, ...), the
    copy last: a loader that finds it still there waits for the eviction's lock and then
    sees it gone (:func:`_take_lease`), never a copy without its derived files removed
    later under it.  Whether anyone uses it is not asked (:func:`_remove_unused`)."""
    try:
        found = [f for f in entry.parent.iterdir() if f.name.startswith(entry.name + ".")]
    except OSError:
        found = []
    for f in [*found, entry]:
        try:
            if f.is_dir() and not f.is_symlink():
                f.rmdir()  # an empty folder in a cache file's place; one with files stays
            else:
                f.unlink()
            log.debug("removed cache file %s", f)
        except OSError:
            pass


# ------------------------------------------------------------------ use leases
#
# A process that loaded an ingested copy holds a shared flock on the copy itself (opened
# read-only: a read-only cache works, and no lock file is ever created or removed) for
# as long as the Graph it returned lives; an eviction takes the exclusive lock, without
# waiting, before it removes a copy and its derived files, and leaves a copy it cannot
# lock for a later eviction.  A study's client process keeps its Graph (the plan's) for
# the whole study, so the copy that its workers load, and the hierarchy beside it, stay.
# flock locks belong to an open file description: two opens in one process conflict, so a
# process's own Graphs protect their copies from its own evictions too.  One descriptor
# per copy and process, however many Graphs share it; closed on exec (O_CLOEXEC) and in a
# forked child (whose parent holds the lock still).


class _Held:
    """One process's shared lock on one copy: its descriptor and how many Graphs use it."""

    __slots__ = ("key", "fd", "count")

    def __init__(self, key, fd):
        self.key, self.fd, self.count = key, fd, 1


_leases: dict = {}  # (st_dev, st_ino) -> _Held
#: seconds a load waits for an exclusive lock on its copy to go (an eviction)
LEASE_WAIT_S = 10.0
# reentrant: a Graph collected while the table is changed releases its lease in that thread
_leases_lock = threading.RLock()

#: errnos of a file system that has no flock (some NFS and FUSE mounts): no lease is
#: taken and evictions go on as before
#: (EBADF: NFS's emulation refused an exclusive lock on a copy it could open read-only only)
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL, errno.EBADF}


#: file systems whose flock is not the kernel's own per-file-description lock: NFS's
#: client emulates it with POSIX locks, which any close() of the file by the process drops
#: (pyarrow's read of the copy would end the lease at once); no leases there
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "ceph", "9p", "afs", "glusterfs")
_fs_kind: dict = {}  # st_dev -> whether leases hold there


def _leases_hold(fd: int) -> bool:
    """Whether the file open as ``fd`` lies on a file system where a lease holds (not a
    network one, :data:`_NETWORK_FS`, nor FUSE), from ``/proc/self/mountinfo`` (once per
    device; where it cannot be read, assumed so)."""
    dev = os.fstat(fd).st_dev
    if dev not in _fs_kind:
        kind = None
        try:
            want = f"{os.major(dev)}:{os.minor(dev)}"
            with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    left, _, right = line.partition(" - ")
                    if left.split()[2:3] == [want]:
                        kind = right.split()[0] if right.split() else None
        except OSError:
            pass
        _fs_kind[dev] = not (kind and (kind in _NETWORK_FS or kind.startswith("fuse")))
    return _fs_kind[dev]


def _open_copy(entry: Path, write: bool = False) -> int:
    """A descriptor of the regular file ``entry`` (never blocks on a FIFO), read-only, or
    ``write``: read-write where it may be, for an exclusive lock, which NFS's emulation
    of flock grants only on a descriptor open for writing (EBADF otherwise).  Opening
    it so writes nothing: its times, which key its CSR cache, stay."""
    flags = os.O_CLOEXEC | os.O_NONBLOCK
    fd = -1
    if write:
        try:
            fd = os.open(entry, os.O_RDWR | flags)
        except FileNotFoundError:
            raise
        except OSError:  # a read-only file or mount: locked read-only
            pass
    if fd < 0:
        fd = os.open(entry, os.O_RDONLY | flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(entry))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _same_file(fd: int, entry: Path) -> bool:
    """Whether ``entry`` still names the file open as ``fd`` (not removed nor replaced)."""
    a = os.fstat(fd)
    try:
        b = os.stat(entry)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _take_lease(entry: Path):
    """Hold the ingested copy ``entry`` in use: a shared flock on it, taken once per
    process (later calls count).  Returns the :class:`_Held` to give to :func:`_read_leased`,
    or ``None`` when the file system has no flock (logged at debug: the copy loads
    unprotected, as before leases).

    Raises
    ------
    FileNotFoundError
        ``entry`` is gone, or was removed while the lock was awaited (an eviction held
        it exclusively): the caller ingests it again.
    OSError
        It cannot be opened.
    """
    fd = _open_copy(entry)
    try:
        if not _leases_hold(fd):
            log.debug("no use lease on %s: a network file system (its flock is not one)", entry)
            return None
        # an exclusive holder is an eviction removing the copy (a few ms): asked again
        # until it is gone, never waited on blindly (a child forked during an eviction
        # holds its lock as long as it lives); past LEASE_WAIT_S the copy loads unleased
        deadline = time.monotonic() + LEASE_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not _same_file(fd, entry):
                    raise FileNotFoundError(errno.ENOENT, "removed while it was opened", str(entry)) from None
                if time.monotonic() > deadline:
                    log.debug("no use lease on %s: held exclusively for %.0f s", entry, LEASE_WAIT_S)
                    return None
                time.sleep(0.01)
            except OSError as exc:  # never a reason not to load
                log.debug("no use lease on %s: %s (the file system has no flock)", entry, exc)
                return None  # the descriptor closed below
        if not _same_file(fd, entry):
            raise FileNotFoundError(errno.ENOENT, "removed while it was opened", str(entry))
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        with _leases_lock:
            held = _leases.get(key)
            if held is not None and held.fd >= 0:
                held.count += 1
            else:
                held = _leases[key] = _Held(key, fd)
                fd = -1  # kept: the table's now
    finally:
        if fd >= 0:
            os.close(fd)  # this process held it already through another descriptor
    return held


def _close_lease(held: _Held) -> None:
    """Close ``held``'s descriptor (and with it the lock); its Graphs' releases are
    no-ops after."""
    fd, held.fd = held.fd, -1
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def _release(held: _Held) -> None:
    """One Graph of ``held``'s copy is gone; the last one closes the descriptor."""
    with _leases_lock:
        held.count -= 1
        if held.count > 0 or held.fd < 0:
            return
        if _leases.get(held.key) is held:
            del _leases[held.key]
        _close_lease(held)


def _read_leased(entry: Path, held) -> Graph:
    """:func:`read_parquet` of the copy ``entry``, the Graph holding the lease ``held``
    (:func:`_take_lease`; ``None``: none) until it is collected; a failed read gives the
    lease back."""
    try:
        g = read_parquet(entry)
        if held is not None:
            weakref.finalize(g, _release, held)
    except BaseException:
        if held is not None:
            _release(held)
        raise
    return g


def _forget_leases_in_child() -> None:
    """A forked child closes its copies of the lease descriptors (the parent's stay, and
    with them the locks); its Graphs' leases are no-ops then."""
    global _leases_lock
    _leases_lock = threading.RLock()  # another thread may have held it at the fork
    for held in list(_leases.values()):
        _close_lease(held)
    _leases.clear()


os.register_at_fork(after_in_child=_forget_leases_in_child)


def _remove_for_new(entry: Path, why: str) -> None:
    """Remove the copy ``entry`` so that the input is ingested again under its name
    (:func:`_load_copy`), unless another process holds it in use (:func:`_remove_unused`):
    then this process stops, naming the copy, rather than delete a copy under a running
    study (which may read it well: a damage this process saw may be its own).  This
    process's own Graphs of the copy give up their lease first: the copy is to be
    replaced for this process's sake."""
    try:
        st = os.stat(entry)
    except OSError:
        st = None
    if st is not None:
        with _leases_lock:
            held = _leases.pop((st.st_dev, st.st_ino), None)
            if held is not None:
                _close_lease(held)
    if not _remove_unused(entry, why):
        raise OSError(errno.EBUSY, f"the cached copy {shown(entry)} is {why} here but in use by another "
                      "process (a study or solve running): run again once it has ended, or remove the copy",
                      str(entry))


def _remove_unused(entry: Path, why: str) -> bool:
    """Remove the ingested copy ``entry`` and its derived files (:func:`_remove_entry`)
    unless a process holds it in use (:func:`_take_lease`); then it is kept, said at
    info, for a later eviction.  Returns whether it went.  Where the file system has no
    flock, it is removed as before leases."""
    try:
        fd = _open_copy(entry, write=True)
    except FileNotFoundError:
        _remove_entry(entry)  # derived files whose copy went: no one can hold them
        return True
    except OSError:  # not a regular file, or unreadable: no one loads it
        _remove_entry(entry)
        return True
    try:
        try:
            if not _leases_hold(fd):  # no one holds a lease there: removed as before leases
                raise OSError(errno.ENOLCK, "a network file system")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("keeping cached copy %s for now (%s): it is in use by a process that loaded it "
                     "(a study or solve running); a later load removes it", entry, why)
            return False
        except OSError as exc:
            if exc.errno not in _NO_FLOCK:  # not known to be free: kept
                log.info("keeping cached copy %s for now (%s): it cannot be locked (%s)", entry, why, exc)
                return False
            log.debug("removing %s without its lock: %s (the file system has no flock)", entry, exc)
        else:
            if not _same_file(fd, entry):  # replaced meanwhile: another copy now, not this one
                return False
        log.info("removing cached copy %s (%s)", entry, why)
        _remove_entry(entry)
        return True
    finally:
        os.close(fd)  # the exclusive lock with it


#: seconds a temporary file of a process that does not run here is left alone: on a
#: folder that several machines share (a cluster's), the pid may be another host's
#: writer at work; a file untouched this long is abandoned whoever wrote it
TEMP_GRACE_S = 600.0


def _abandoned(path: Path, pid: int) -> bool:
    """Whether the temporary file ``path`` of process ``pid`` is left over: no such
    process runs on this machine and the file has not changed for :data:`TEMP_GRACE_S`."""
    if _pid_alive(pid):
        return False
    try:
        return time.time() - path.stat().st_mtime > TEMP_GRACE_S
    except OSError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (a pid past the C int, as a name may hold: none)
        return False
    except (PermissionError, OSError):
        return True
    return True


_LEGACY = re.compile(r"\.[0-9a-f]{16}\.parquet$")  # before cache version 4: <name>.<key16>.parquet
_CSR_TEMP = re.compile(r"\.tmp(?P<pid>\d+)(?:-[0-9a-f]{8})?\.npz$")  # read_parquet's temp names


def _discard(tmp: Path) -> None:
    """Remove a temporary file that may not exist; never raises (a read-only mount
    refuses even a file that is not there with EROFS)."""
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def _cache_temp_base(name: str) -> str:
    """The part of a cache file's name its temporary repeats: the name, or, where the
    temporary's name would pass 255 bytes (a graph named 208-233 bytes had caches it
    could never write), its first bytes and a digest of the whole (``~<16 hex>``)."""
    return shortened(name, 255 - len(".tmp4194304-01234567.npz"))


def cache_temp_for(cache_file) -> Path:
    """The temporary name a cache file (CSR, hierarchy) is written under before its
    rename: ``<name>.tmp<pid>-<8 hex>.npz`` beside it (the process and a random part:
    threads of one process may write it at once; :func:`remove_dead_temps` removes one
    whose process is gone)."""
    cache_file = Path(cache_file)
    return cache_file.with_name(f"{_cache_temp_base(cache_file.name)}.tmp{os.getpid()}-{uuid.uuid4().hex[:8]}.npz")


def remove_dead_temps(cache_file) -> None:
    """Delete the temporary files of ``cache_file`` (``<name>.tmp<pid>[-<8 hex>].npz``,
    the CSR and hierarchy caches' writers) left by processes that no longer run
    (:func:`_abandoned`): a process killed while it wrote one leaves it behind.  Never
    raises."""
    cache_file = Path(cache_file)
    base = _cache_temp_base(cache_file.name)
    try:
        found = list(cache_file.parent.glob(glob.escape(base) + ".tmp*.npz"))
    except OSError:
        return
    for f in found:
        m = _CSR_TEMP.search(f.name)
        if m and f.name[:m.start()] == base and _abandoned(f, int(m["pid"])):
            try:
                f.unlink()
                log.debug("removed %s, left by process %s", f, m["pid"])
            except OSError:
                pass


def _evict_stale(base: Path, name: str, prefix: str, skey: str, *, legacy: bool) -> None:
    """Delete copies of this input made from an older state of it, their derived
    files, and temporary files left by processes that no longer run."""
    try:
        files = list(base.iterdir())
    except OSError:
        return
    for f in files:
        fn = f.name
        if fn.startswith(prefix) and fn.endswith(".parquet") and not fn.endswith(f".{skey}.parquet"):
            _remove_unused(f, "stale: its input has changed")
        elif legacy and fn.startswith(name + ".") and _LEGACY.search(fn) and fn.count(".") == name.count(".") + 2:
            # the default folder sits beside the input: a name match is this input
            _remove_entry(f)
        else:
            m = OWNED_TEMP.fullmatch(fn) or (_CSR_TEMP.search(fn) if fn.startswith(prefix) else None)
            if m and (fn.startswith("." + prefix) or fn.startswith(prefix)) and _abandoned(f, int(m["pid"])):
                try:
                    f.unlink()
                except OSError:
                    pass


def _evict_variants(base: Path, prefix: str, skey: str, keep: Path) -> None:
    """Keep at most CACHE_VARIANTS option variants of this input, least recently used
    out first.  A copy in use (:func:`_remove_unused`) counts as used now: the next
    least recently used goes in its place, and while more than CACHE_VARIANTS are in use
    at once, all of them stay."""
    entries = []
    for f in base.iterdir():
        if f.name.startswith(prefix) and f.name.endswith(f".{skey}.parquet") and f != keep:
            try:
                entries.append((_last_used(f), f))
            except OSError:
                pass
    entries.sort()  # least recently used first
    excess = len(entries) - (CACHE_VARIANTS - 1)
    for _, f in entries:
        if excess <= 0:
            break
        if _remove_unused(f, f"more than {CACHE_VARIANTS} option variants"):
            excess -= 1
