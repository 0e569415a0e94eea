"""The contraction hierarchy of a graph file, cached next to it (``<file>.ch.npz``).

The hierarchy (:mod:`kernels.hierarchy`) takes seconds to build (NY 4.5-10 s, FLA 12-16 s)
and is the same for every batch, so it is built once per graph and weight set and kept
beside the Parquet edge list, like the CSR cache (``<file>.csr.npz``).  The cache file
records the graph's fingerprint, the contraction library and its version, and a SHA-256
digest, dtype and shape of every array; a file whose record does not match the graph or
the installed library (stale), or whose arrays do not match their record, do not form a
consistent hierarchy, do not hold every arc of the graph, or hold an arc lighter than
every walk it can stand for (corrupt, truncated, another graph's, a shortcut weight
changed: ``kernels.hierarchy.check_covers``), is rebuilt and replaced, never used.  Not
checked, as it needs the contraction's own searches: a shortcut missing or too heavy.  Files are
written to a temporary name and renamed, so a reader never sees half a file.

``load_hierarchy(graph)`` also keeps the hierarchy with the graph (``Graph.cached``),
where the ``phast`` solvers look for it: a worker that calls it once per graph (the graph
plugin) never builds or reads it again.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path

import numpy as np

from gpu_sssp.kernels import hierarchy as hmod
from gpu_sssp.kernels.errors import opt, render
from gpu_sssp.kernels.hierarchy import Hierarchy
from gpu_sssp.pipeline import npzfile
from gpu_sssp.pipeline.fsnames import refuse_read_only_folder
from gpu_sssp.pipeline.fsnames import shown as _shown
from gpu_sssp.pipeline.graph import AST_RACE, _discard, cache_temp_for, remove_dead_temps
from gpu_sssp.pipeline.writers import fsync_file, fsync_folder

log = logging.getLogger(__name__)

__all__ = ["load_hierarchy", "place_for_workers", "prepare_study", "study_uses_phast", "cache_path", "read_cache", "write_cache",
           "CACHE_FORMAT", "vouch", "vouched", "user_cache_file", "cached_file", "cache_place"]

#: Version of the cache file's layout; a file of another version is rebuilt.
CACHE_FORMAT = 1


def cache_path(graph, path=None) -> Path | None:
    """Where ``graph``'s hierarchy is cached: ``path`` if given, else ``<graph.path>.ch.npz``
    (``None`` for a graph that was not loaded from a file)."""
    if path is not None:
        return Path(path)
    if not graph.path:
        return None
    p = Path(graph.path)
    return p.with_name(p.name + ".ch.npz")


def user_cache_file(graph) -> Path:
    """The user's cache file for ``graph``'s hierarchy
    (``$XDG_CACHE_HOME/sssp/hierarchies/<fingerprint>.ch.npz``): where it is kept when the
    folder beside the graph cannot hold it (a read-only data folder)."""
    from gpu_sssp.pipeline.graph import user_cache_folder

    return user_cache_folder() / "hierarchies" / f"{graph.fingerprint}.ch.npz"


def _places(graph) -> list[Path]:
    """Where :func:`load_hierarchy` looks for ``graph``'s hierarchy, in order: beside the
    graph file, then the user's cache file (none for a graph not loaded from a file)."""
    mine = cache_path(graph)
    return [] if mine is None else [mine, user_cache_file(graph)]


def cached_file(graph) -> Path | None:
    """The first of the places :func:`load_hierarchy` reads ``graph``'s hierarchy from
    that holds a file (not checked: :func:`read_cache` says whether it is usable)."""
    return next((p for p in _places(graph) if p.is_file()), None)


def cache_place(graph) -> Path | None:
    """Where :func:`load_hierarchy` would write ``graph``'s hierarchy now: beside the graph
    file, or the user's cache file where that folder is read-only or not writable."""
    places = _places(graph)
    if not places:
        return None
    try:
        refuse_read_only_folder(places[0].parent)
    except PermissionError:
        return places[1]
    return places[0] if os.access(places[0].parent, os.W_OK) else places[1]


#: graph fingerprint -> the key (:func:`_arrays_key`) of hierarchy arrays known good for it
#: in this process: built here, read here and found to cover the graph
#: (:func:`kernels.hierarchy.check_covers`), or vouched for by a study's client
#: (:func:`vouch`).  A file whose verified checksums give that key is the same arrays, so
#: its reads skip the covering check (NY: 0.13-0.19 s a read on the development VM; a
#: study's client reads the file up to three times and every worker once more).
_VOUCHED: dict[str, str] = {}


def _arrays_key(arrays: dict) -> str:
    """One digest of a cache record's ``arrays`` entry (each array's dtype, shape, SHA-256)."""
    return hashlib.sha256(json.dumps(arrays, sort_keys=True).encode()).hexdigest()


def vouched(graph) -> str | None:
    """The key of the hierarchy this process holds for good for ``graph`` (None: none yet):
    what a study's client hands its workers (``GraphPlugin(hierarchy_key=...)``)."""
    return _VOUCHED.get(graph.fingerprint)


def vouch(fingerprint: str, key: str | None) -> None:
    """Take a hierarchy of ``key`` for good for the graph ``fingerprint`` (a worker, for
    what the study's client checked or built); its checksums are still verified on read."""
    if key:
        _VOUCHED[str(fingerprint)] = str(key)


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _record(h: Hierarchy, graph) -> dict:
    return {
        "format": CACHE_FORMAT,
        "fingerprint": graph.fingerprint,
        "n": h.n,
        "library": h.library,
        "build_s": h.build_s,
        "weight_bound": h.weight_bound,
        "arrays": {name: [str(getattr(h, name).dtype), list(getattr(h, name).shape), _digest(getattr(h, name))]
                   for name in Hierarchy.ARRAYS},
    }


def write_cache(h: Hierarchy, graph, path) -> None:
    """Write ``h`` to ``path`` atomically (a temporary file renamed over it).

    The temporary file is flushed to disk (``fsync``) before the rename and the folder
    after it, as ``pipeline.writers.atomic_path`` does: after a crash or power loss the
    file is the old one, the new one or missing, never empty or cut short (a reader
    rebuilds a bad file anyway: :func:`read_cache`).

    Raises
    ------
    OSError
        The folder cannot be written (the temporary file is removed).
    """
    path = Path(path)
    refuse_read_only_folder(path.parent)  # (root too: the user's cache instead)
    # the process and a random part: threads of one process may write it at once
    tmp = cache_temp_for(path)
    rec = _record(h, graph)
    try:
        np.savez(tmp, record=json.dumps(rec), **{name: getattr(h, name) for name in Hierarchy.ARRAYS})
        fsync_file(tmp)  # on disk before the rename makes it the cache
        os.replace(tmp, path)
    finally:
        _discard(tmp)  # never raises over the write's own error
    fsync_folder(path.parent)  # the rename too (best effort)
    # h was built here or read and checked here (load_hierarchy, place_for_workers)
    _VOUCHED[graph.fingerprint] = _arrays_key(rec["arrays"])


def read_cache(graph, path) -> tuple[Hierarchy | None, str]:
    """The hierarchy cached in ``path`` for ``graph``, or ``(None, why not)``.

    Never raises for a bad file: a missing, unreadable, stale (other graph fingerprint,
    library version or format) or corrupt (checksum, dtype, shape, consistency) file
    gives ``None`` and the reason.  A read that CPython 3.11's AST race spoiled
    (:data:`AST_RACE`) is tried again, up to three times in all.
    """
    for _ in range(3):
        h, why = _read_cache(graph, path)
        if h is not None or AST_RACE not in why:
            break
    return h, why


def _read_cache(graph, path) -> tuple[Hierarchy | None, str]:
    path = Path(path)
    if not path.exists():
        return None, "no cache file"
    try:
        # every member's header first: nothing is read that the file cannot hold uncompressed
        heads = npzfile.members(path)
        if "record" not in heads or heads["record"][0].kind != "U" or heads["record"][1] != ():
            return None, "no record of the hierarchy in the file"
        with np.load(path, allow_pickle=False) as z:
            rec = json.loads(str(z["record"]))
            if rec.get("format") != CACHE_FORMAT:
                return None, f"cache format {rec.get('format')}, expected {CACHE_FORMAT}"
            if rec.get("fingerprint") != graph.fingerprint:
                return None, f"built for graph {rec.get('fingerprint')}, this graph is {graph.fingerprint}"
            lib = hmod.library_version()
            if rec.get("library") != lib:
                if lib.startswith("ch-router unknown"):  # (no ch-router in this environment)
                    return None, f"built with {rec.get('library')}, and ch-router is not installed here"
                return None, f"built with {rec.get('library')}, installed is {lib}"
            if rec.get("n") != graph.n:
                return None, f"{rec.get('n')} vertices, the graph has {graph.n}"
            if rec.get("weight_bound") != hmod.WEIGHT_BOUND or isinstance(rec.get("weight_bound"), bool):
                return None, f"weight bound {rec.get('weight_bound')!r}, expected {hmod.WEIGHT_BOUND}"
            build_s = rec.get("build_s")
            if isinstance(build_s, bool) or not isinstance(build_s, (int, float)) or not build_s >= 0 \
                    or not math.isfinite(build_s):
                return None, f"build time {build_s!r} is not a number of seconds"
            arrays = {}
            for name in Hierarchy.ARRAYS:
                dtype, shape, digest = rec["arrays"][name]
                if name not in heads:
                    return None, f"array {name} missing"
                hd, hs = heads[name]
                if str(hd) != dtype or list(hs) != shape:  # before the array is read (np.load reads this header)
                    return None, f"array {name}: {hd} {hs}, recorded {dtype} {shape}"
                a = z[name]
                if _digest(a) != digest:
                    return None, f"array {name}: checksum mismatch"
                arrays[name] = a
    except Exception as exc:  # truncated zip, bad CRC, missing member, bad JSON ...
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    h = Hierarchy(n=int(graph.n), weight_bound=hmod.WEIGHT_BOUND, build_s=float(build_s),
                  library=lib, fingerprint=graph.fingerprint, **arrays)
    key = _arrays_key(rec["arrays"])  # the arrays' checksums were verified above
    try:
        hmod.check_hierarchy(h)
        if _VOUCHED.get(graph.fingerprint) != key:
            hmod.check_covers(h, graph)
    except Exception as exc:  # ValueError; anything else it meets is no hierarchy either
        return None, f"inconsistent arrays ({exc})"
    _VOUCHED[graph.fingerprint] = key
    return h, ""


class HierarchyFileError(FileNotFoundError):
    """A hierarchy cache file that is there but cannot be used (damaged, another
    graph's, another library version) where it may not be rebuilt (``build=False``: a
    study's worker).  A ``FileNotFoundError`` for the callers that take either case alike,
    named for what it is in messages (a worker's line said "FileNotFoundError" of a
    file that was there)."""


def load_hierarchy(graph, path=None, *, cache: bool = True, build: bool = True) -> Hierarchy:
    """``graph``'s contraction hierarchy: kept with the graph, else read from the cache
    file, else built (and written to the cache file).

    Parameters
    ----------
    graph : kernels.graph.Graph
    path : str or os.PathLike, optional
        The cache file (default ``<graph.path>.ch.npz``, or where that folder cannot
        hold it - a read-only data folder - the user's cache file
        :func:`user_cache_file`, read from there next time; graphs not loaded from a
        file are not cached on disk unless ``path`` is given).
    cache : bool
        Read and write the cache file.  Failing to write it only logs a warning.
    build : bool
        Build the hierarchy when the cache file is missing or unusable.  A study's
        workers pass False: the client wrote the file before they load it, and a worker
        that cannot use it must say so rather than spend seconds to minutes building
        its own copy (each worker would).

    Returns
    -------
    kernels.hierarchy.Hierarchy

    Raises
    ------
    ValueError
        The graph is not eligible for a hierarchy (:func:`kernels.hierarchy.eligible`).
    FileNotFoundError
        ``build=False`` and the cache file is missing or unusable (the reason named).
    """

    def get():
        cpath = cache_path(graph, path) if cache else None
        # the default place only: the user's cache file when beside the graph holds none
        spare = user_cache_file(graph) if cpath is not None and path is None else None
        if cpath is not None:
            remove_dead_temps(cpath)
            h, why = read_cache(graph, cpath)
            where = cpath
            if h is None and spare is not None and spare.is_file():
                h, _ = read_cache(graph, spare)  # (why stays the one beside the graph)
                where = spare
            if h is not None:
                log.info("loaded the hierarchy of %s from %s (%d levels; built in %.1f s)",
                         graph.name, where, h.levels, h.build_s)
                return h
            if not build:
                # a library this process has not (or in another version) is its Python
                # environment's, not the folder's: the folder hint named the wrong cause
                env = "installed is" in why or "is not installed here" in why
                raise (HierarchyFileError if cpath.exists() else FileNotFoundError)(
                    f"{_shown(cpath)}: the contraction hierarchy of {graph.name} cannot be used here ({why}); "
                    + ("this process's Python environment differs from the one that built it: install gpu-sssp "
                       "with the same dependencies on every node" if env else
                       "the study's client writes it beside the graph file before the workers load it: "
                       "the folder must be shared with the workers under the same path"))
            if cpath.exists():
                log.warning("rebuilding the hierarchy cache %s: %s", cpath, why)
        elif not build:
            raise FileNotFoundError(f"{graph.name}: no hierarchy cache file to load (build=False)")
        h = hmod.build_hierarchy(graph)
        log.info("built the hierarchy of %s in %.1f s (%d levels, %d up / %d down arcs, %s)",
                 graph.name, h.build_s, h.levels, h.m_up, h.m_down, h.library)
        if cpath is not None:
            try:
                write_cache(h, graph, cpath)
            except OSError as exc:
                if spare is None:
                    log.warning("could not write the hierarchy cache %s: %s", cpath, exc)
                else:  # every later study and solve built it again (NY 5-8 s, FLA 12-16 s)
                    try:
                        _write_user_cache(h, graph)
                        log.warning("could not write the hierarchy cache %s (%s): kept in %s instead",
                                    cpath, exc.strerror or exc, spare)
                    except OSError as exc2:
                        log.warning("could not write the hierarchy cache %s (%s) nor %s (%s)",
                                    cpath, exc.strerror or exc, spare, exc2.strerror or exc2)
        return h

    return graph.cached(hmod.CACHE_KEY, get)


def study_uses_phast(graph, n_sources: int, backend: str = "auto", algorithm: str = "auto") -> bool:
    """Whether a study of ``n_sources`` sources will solve with ``phast``: named, or
    ``auto`` where the whole study passes ``kernels.auto``'s rule for the backend the
    workers use (``phast_applies`` on GPUs, ``cpu_phast_applies`` on CPUs; either one
    when the backend is ``auto``, as on an attached cluster of unknown devices), and the
    graph is eligible (a named phast on a graph it refuses is refused by the study's plan
    before this is asked: ``Method.unsuitable``, ``kernels.hierarchy.refusal``)."""
    from gpu_sssp.kernels import auto, hierarchy

    if algorithm not in ("auto", "phast") or hierarchy.eligible(graph) is not None:
        return False
    if algorithm == "phast":
        return True
    cpath = cached_file(graph)  # beside the graph, else the user's cache file
    if cpath is not None and not hierarchy.has_hierarchy(graph):
        # a valid cache file makes the hierarchy free (held from now on): auto then
        # sweeps it whatever the number of sources; a stale one is not rebuilt for this
        h, _why = read_cache(graph, cpath)
        if h is not None:
            graph.cached(hmod.CACHE_KEY, lambda: h)
    gpu = backend in ("gpu", "auto") and auto.phast_applies(graph, n_sources)
    # CPU workers of a study load the kernels as they start (pipeline.warmup: local CPU
    # clusters preload it; README: `dask worker --preload gpu_sssp.pipeline.warmup`)
    cpu = backend in ("cpu", "auto") and auto.cpu_phast_applies(graph, n_sources, warm=backend == "cpu")
    return gpu or cpu


def prepare_study(graph, n_sources: int, backend: str = "auto", algorithm: str = "auto") -> Hierarchy | None:
    """On the client, before the workers load the graph: build the hierarchy and write
    its cache file when the study of ``n_sources`` sources will solve with ``phast``
    (:func:`study_uses_phast`), so that every worker reads it once
    (``GraphPlugin(..., hierarchy=True)``) instead of building it again.

    A cache file beside the graph (an earlier study or ``sssp ingest``'s build) makes the
    hierarchy free: ``auto`` then sweeps it whatever the number of sources.

    The decision is the study's, not a batch's: ``auto`` chooses per call, and a batch
    alone may never pay for a build, so without this a GPU study of all NY sources
    would run ``batched`` batch after batch.

    Returns
    -------
    Hierarchy or None
        ``None`` when the study will not use it, or the graph has no file to cache beside.
    """
    if cache_path(graph) is None or not study_uses_phast(graph, n_sources, backend, algorithm):
        return None
    return load_hierarchy(graph)


def place_for_workers(h: Hierarchy, graph, graph_path) -> Path:
    """The hierarchy cache file beside the Parquet file the workers read (``graph_path``),
    written there from ``h`` when it is not already a valid cache of this graph.

    On an attached cluster the workers read ``<study folder>/graph.parquet`` (the one
    place known to be shared), not the client's ingestion cache beside which
    :func:`load_hierarchy` keeps the hierarchy: without this copy every worker would
    build the hierarchy again.

    Returns
    -------
    pathlib.Path
        The file the workers load (``<graph_path>.ch.npz``).
    """
    target = Path(os.fspath(graph_path) + ".ch.npz")
    mine = cache_path(graph)
    elsewhere = mine is None or Path(mine).resolve() != target.resolve()  # not the graph's own cache
    if elsewhere:
        remove_dead_temps(target)
    # load_hierarchy read or wrote it just now where target is the graph's own cache, or
    # could not write it there (a read-only folder, a folder in its place): checked again
    # (its checksums; the arrays are vouched for)
    got, why = read_cache(graph, target)
    if got is not None:
        return target
    if elsewhere:
        try:
            write_cache(h, graph, target)
            log.info("wrote the hierarchy of %s for the workers to %s", graph.name, target)
            return target
        except OSError as exc:
            why = f"{type(exc).__name__}: {exc}"
    return _place_in_user_cache(h, graph, target, why)


def _write_user_cache(h: Hierarchy, graph) -> Path:
    """``h`` in the user's cache file (:func:`user_cache_file`, its folder made), unless a
    valid cache of ``graph`` is there already; the file.  Raises ``OSError``."""
    spare = user_cache_file(graph)
    spare.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(spare)
    if read_cache(graph, spare)[0] is None:
        write_cache(h, graph, spare)
    return spare


def _place_in_user_cache(h: Hierarchy, graph, target: Path, why: str) -> Path:
    """Where the file beside the graph cannot hold the hierarchy the workers load, the
    user's cache folder (``$XDG_CACHE_HOME/sssp/hierarchies/<fingerprint>.ch.npz``; a
    study's workers on this host read it, as its record names the graph it belongs to);
    a warning says so.  A study's workers used to fail on the missing file, each batch
    with a traceback, with a message about shared folders.

    Raises
    ------
    OSError
        Neither place can be written (one line naming both).
    """
    spare = user_cache_file(graph)
    try:
        _write_user_cache(h, graph)
    except OSError as exc:
        raise OSError(f"{_shown(target)}: cannot hold the contraction hierarchy the workers load ({why}), nor can "
                      f"{_shown(spare)} ({exc.strerror or exc}): make either writable, or choose another "
                      f"{render(opt('--algorithm'))}") from None
    log.warning("%s cannot hold the contraction hierarchy the workers load (%s): they load %s instead",
                target, why, spare)
    return spare
