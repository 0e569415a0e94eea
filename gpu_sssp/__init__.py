"""gpu-sssp: batched shortest paths on GPUs, distributed with Dask.

The public interface, importable from here::

    import gpu_sssp as sssp

    # sssp.study's local cluster starts worker processes, which import the main
    # script again: in a script, keep the work under this guard
    if __name__ == "__main__":
        g = sssp.load_graph("data/rome99.gr")           # any input file or Parquet edge list
        res = sssp.solve(g, g.to_index([1, 2]), predecessors=True)
        res.distances                                    # (2, n) float64, +inf unreachable
        sssp.available_methods(), sssp.device_count()
        summary = sssp.study("data/rome99.gr", sources="all", out="rome-study")
        m = sssp.matrix(g, [1, 2, 3], "all")             # (3, n) travel-time matrix, file ids

Everything else (``gpu_sssp.kernels``, ``gpu_sssp.pipeline``, ``gpu_sssp.workflows``) is the
implementation: the solvers on one device, ingestion/Dask/files, and the command line.
Names starting with ``_`` are private to their package.
"""
from __future__ import annotations

import os as _os
from typing import TYPE_CHECKING as _TYPE_CHECKING

_SUBPACKAGES = ("kernels", "pipeline", "workflows")


def _checkout_layers(root: str) -> str:
    """The path entry under which a checkout's ``kernels/``, ``pipeline/`` and
    ``workflows/`` are found as ``gpu_sssp.kernels``, ... - those three and nothing else.
    The checkout itself on ``__path__`` made every folder there a subpackage as well:
    ``gpu_sssp.tests``, ``gpu_sssp.gpu_sssp`` (a second copy of this package, with its own
    ``gpu_sssp.gpu_sssp.gpu_sssp``: ``pkgutil.walk_packages`` never ended)."""
    import sys
    from importlib.machinery import PathFinder

    entry = _os.path.join(root, "<gpu_sssp: kernels, pipeline, workflows>")  # names no folder

    class _Layers:
        """Path-entry finder of ``entry``: the three layer folders of ``root``."""

        def find_spec(self, fullname, target=None):
            if fullname.rpartition(".")[2] not in _SUBPACKAGES:
                return None
            return PathFinder.find_spec(fullname, [root])

        def iter_modules(self, prefix=""):  # what pkgutil.iter_modules/walk_packages list
            for name in _SUBPACKAGES:
                if _os.path.isfile(_os.path.join(root, name, "__init__.py")):
                    yield prefix + name, True

        def invalidate_caches(self):
            pass

    def hook(path):
        if path != entry:
            raise ImportError("not gpu_sssp's checkout layers")
        return _Layers()

    hook.entry = entry
    if not any(getattr(h, "entry", None) == entry for h in sys.path_hooks):  # once, if re-imported
        sys.path_hooks.insert(0, hook)
    return entry


# A source checkout keeps kernels/, pipeline/, workflows/ at the repository's top level
# (installed wheels and editable installs map them under gpu_sssp through package-dir);
# running from the checkout itself (PYTHONPATH=<checkout>) finds them the same way.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "kernels")) and _os.path.isfile(
        _os.path.join(_root, "kernels", "__init__.py")):
    __path__.append(_checkout_layers(_root))  # noqa: F821  (the package's own search path)

# The public names are imported on first use (PEP 562), not here: ``import gpu_sssp`` and
# the ``sssp`` command start without NumPy and pyarrow, so Ctrl-C in the first moments of
# ``sssp`` meets ``main``'s handler (one line, status 130) instead of an import traceback.
_LAZY = {
    "DISTANCE_SCHEMA": "gpu_sssp.kernels",
    "MATRIX_LONG_SCHEMA": "gpu_sssp.kernels",
    "MATRIX_SCHEMA": "gpu_sssp.kernels",
    "STATS_SCHEMA": "gpu_sssp.kernels",
    "NegativeCycleError": "gpu_sssp.kernels",
    "Result": "gpu_sssp.kernels",
    "available_methods": "gpu_sssp.kernels",
    "device_count": "gpu_sssp.kernels",
    "solve": "gpu_sssp.kernels",
    "Graph": "gpu_sssp.kernels.graph",
    # the functions themselves (their signatures and docstrings in help()), not wrappers
    "load_graph": "gpu_sssp.pipeline.graph",
    "read_parquet": "gpu_sssp.pipeline.graph",
    "study": "gpu_sssp.pipeline.study.run",
    # the errors to catch (every one an SsspError; see gpu_sssp.kernels.errors)
    "SsspError": "gpu_sssp.kernels.errors",
    "UsageError": "gpu_sssp.kernels.errors",
    "OptionError": "gpu_sssp.kernels.errors",
    "OutputTooLargeError": "gpu_sssp.kernels.errors",
    "GPUUnavailableError": "gpu_sssp.kernels.errors",
    "InputError": "gpu_sssp.pipeline.errors",
    "MissingFileError": "gpu_sssp.pipeline.errors",
    "StudyError": "gpu_sssp.pipeline.errors",
}
if _TYPE_CHECKING:  # pragma: no cover
    from gpu_sssp.kernels import (DISTANCE_SCHEMA, MATRIX_LONG_SCHEMA, MATRIX_SCHEMA,  # noqa: F401
                                  STATS_SCHEMA, NegativeCycleError, Result, available_methods,
                                  device_count, solve)
    from gpu_sssp.kernels.errors import (GPUUnavailableError, OptionError, OutputTooLargeError,  # noqa: F401
                                         SsspError, UsageError)
    from gpu_sssp.kernels.graph import Graph  # noqa: F401
    from gpu_sssp.pipeline.errors import InputError, MissingFileError, StudyError  # noqa: F401
    from gpu_sssp.pipeline.graph import load_graph, read_parquet  # noqa: F401
    from gpu_sssp.pipeline.study.run import study  # noqa: F401


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # found directly from now on
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    # (not the ``annotations`` of ``from __future__``, a name of no use to anyone)
    return sorted((set(globals()) - {"annotations"}) | set(__all__) | set(_SUBPACKAGES))


__version__ = "0.1.0"

__all__ = [
    "Graph",
    "load_graph",
    "read_parquet",
    "solve",
    "study",
    "matrix",
    "available_methods",
    "device_count",
    "Result",
    "NegativeCycleError",
    "DISTANCE_SCHEMA",
    "STATS_SCHEMA",
    "MATRIX_SCHEMA",
    "MATRIX_LONG_SCHEMA",
    "SsspError",
    "UsageError",
    "OptionError",
    "OutputTooLargeError",
    "GPUUnavailableError",
    "InputError",
    "MissingFileError",
    "StudyError",
]


def matrix(graph, sources="all", targets="all", *, method: str = "auto", backend: str = "auto",
           stats_over: str = "targets", as_arrow=False, max_distance_bytes=None, ingest=None, **options):
    """The travel-time matrix from ``sources`` to ``targets`` (file ids, as on the command line).

    Parameters
    ----------
    graph : Graph, str or os.PathLike
        A graph, or an input file / Parquet edge list (loaded with :func:`load_graph`;
        its contraction hierarchy is then cached beside it when ``phast`` is used).
    sources, targets : "all", int, sequence of int, or str / os.PathLike
        File ids (1-based for DIMACS); order and repeats kept: row ``i`` is
        ``sources[i]``, column ``j`` is ``targets[j]``.  A single id is a list of one.
        A path (any string but ``"all"``) is a file of ids read as the command line
        reads it: sources as ``sssp study --sources-file`` (a DIMACS ``.ss`` file or one
        id per line, ``pipeline.sources.read_source_file``), targets as ``--targets
        FILE`` (``pipeline.targets.read_target_file``).
    method, backend : str
        As :func:`solve`.  ``phast`` sweeps only the part of the hierarchy the targets
        need (RPHAST); the other engines gather the target columns (on the GPU, before
        anything is copied to the host).
    stats_over : {"targets", "all"}
        Passed to :func:`solve` (only the matrix is returned here; call
        ``solve(g, g.to_index(s), targets=g.to_index(t))`` for the per-source statistics).
    as_arrow : bool or {"wide", "long"}
        False: a NumPy ``(len(sources), len(targets))`` float64 array (``+inf``
        unreachable).  True or ``"wide"``: an Arrow table in :data:`MATRIX_SCHEMA` (a
        row per source, a list of its distances; the target ids in the schema metadata);
        ``"long"``: :data:`MATRIX_LONG_SCHEMA` (a row per pair).
    max_distance_bytes : int, optional
        Refuse a matrix above this many bytes (``len(sources) x len(targets) x 8``, plus
        8 a source; for ``as_arrow="long"`` 24 bytes a cell, the table's two id columns
        included), as ``sssp study --max-distance-bytes``; default the dask config
        ``sssp.study.max-distance-bytes`` (20 GB).
    ingest : dict, optional
        How a ``graph`` given as a path is read (:func:`load_graph`'s options, e.g.
        ``{"zero_based": True}``, ``{"weights": "random:1:1000:7"}``); refused with a
        ``Graph``, which is already read.
    **options
        The method's own options (e.g. ``lanes`` for ``phast``, ``batch_size`` for
        ``batched``: see the method's function); one it does not take is a ``TypeError``
        (``dijkstra`` takes none); one of :func:`load_graph`'s is refused, named for
        ``ingest=``.

    Raises
    ------
    ValueError
        An unknown id (``gpu_sssp.kernels.errors.UsageError``: the message gives the
        range of ids), an ineligible method (see :func:`solve`).
    MemoryError
        ``gpu_sssp.kernels.errors.OutputTooLargeError`` (also a ``ValueError``): the
        matrix is above ``max_distance_bytes`` or the memory available here; raised
        before anything is solved or allocated, naming the size, the limit and how to
        proceed (fewer sources or targets, a study with targets writing the matrix to
        files batch by batch, or a higher limit).
    """
    import numpy as _np

    if ingest is not None and not isinstance(ingest, dict):
        from gpu_sssp.kernels.errors import OptionError

        raise OptionError(f"ingest must be a dict of load_graph options, got {type(ingest).__name__}")
    if options:
        from gpu_sssp.pipeline.graph import load_option_names

        names = load_option_names()
        reading = {k: v for k, v in options.items() if k in names}
        if reading:  # (it was taken for a method option: "phast takes the options lanes, ...")
            from gpu_sssp.kernels.errors import OptionError

            raise OptionError(f"matrix() takes load_graph's options in ingest=, not as its own: "
                              f"ingest={reading!r}" + ("" if isinstance(graph, (str, _os.PathLike)) else
                                                        " (they apply to a graph given as a path)"))
    if isinstance(graph, (str, _os.PathLike)):
        from gpu_sssp.kernels.errors import SsspError, given_in
        from gpu_sssp.pipeline.graph import load_graph as _load

        try:
            g = _load(graph, **(ingest or {}))
        except SsspError as exc:  # its advice names ingest={'zero_based': True}, as given here
            raise given_in(exc, "ingest")
    else:
        from gpu_sssp.kernels.graph import Graph as _Graph

        if ingest:
            from gpu_sssp.kernels.errors import OptionError

            raise OptionError(f"matrix() got ingest options ({', '.join(sorted(ingest))}) with a "
                              f"{type(graph).__name__}: they apply to a graph given as a path")
        if not isinstance(graph, _Graph):
            from gpu_sssp.kernels.errors import OptionError

            raise OptionError(f"graph must be a gpu_sssp.Graph or a path to an input file or Parquet edge "
                              f"list, got {type(graph).__name__}")
        g = graph

    def ids(x, what):
        from gpu_sssp.kernels.errors import OptionError, UsageError
        from gpu_sssp.pipeline.sources import id_choice

        kind, value = id_choice(x, what, OptionError)  # the rule study(sources=, targets=) takes too
        if kind == "all":
            return _np.arange(g.n, dtype=_np.int64)
        if kind == "file":  # a file of ids, as the command line reads it
            if what == "source":
                from gpu_sssp.pipeline.sources import read_source_file

                got = read_source_file(value, g)
            else:  # the matrix's limit checked as the file is read, before its ids are all held
                from gpu_sssp.kernels.errors import OutputTooLargeError
                from gpu_sssp.pipeline.study.matrix import targets_limit
                from gpu_sssp.pipeline.targets import read_target_file

                got = read_target_file(value, g, on_count=targets_limit(
                    len(src), max_distance_bytes, form, error=OutputTooLargeError,
                    option="matrix(..., max_distance_bytes=N) with N above {estimate}", advice=_MATRIX_ADVICE))
            return g.to_index(got, what=f"{what} in {_os.fspath(value)}")
        if _np.size(value) == 0:
            raise UsageError(f"no {what} ids given")
        # an id beyond 64 bits is refused with the range of ids, not an OverflowError
        return g.to_index(value, what=what)

    # False/None/0 (NumPy's bools too) give the array, True/1 the wide table: decided here
    # once, since 0 and np.False_ compare equal to False but are not the False object
    if isinstance(as_arrow, str) and as_arrow in ("wide", "long"):
        form, table = as_arrow, True
    elif as_arrow is None or (isinstance(as_arrow, (bool, _np.bool_, int, _np.integer))
                              and as_arrow in (0, 1)):
        form, table = "wide", bool(as_arrow)
    else:
        from gpu_sssp.kernels.errors import UsageError

        raise UsageError(f"as_arrow={as_arrow!r}: use False (a NumPy array), True or 'wide', or 'long'")
    src = ids(sources, "source")
    tg = ids(targets, "target")
    _check_matrix_size(g, src, tg, max_distance_bytes, form)
    if method != "auto":
        # refused before a hierarchy is built for it below (phast on a graph that is not
        # road-like would otherwise be contracted here, past the rule solve applies)
        from gpu_sssp.kernels.registry import get, refuse_unsuitable, resolve_backend

        refuse_unsuitable(get(method, resolve_backend(method, backend)), g, options)
    if getattr(g, "path", None):
        from gpu_sssp.kernels.registry import resolve_backend
        from gpu_sssp.pipeline.hierarchy import prepare_study

        prepare_study(g, len(src), resolve_backend(method, backend), method)
    from gpu_sssp.kernels import solve

    res = solve(g, src, method=method, backend=backend, targets=tg, stats_over=stats_over, **options)
    if not table:
        return res.matrix
    return res.matrix_table(g.id_base, form)


_MATRIX_ADVICE = ("or choose fewer sources or targets, or run a study with targets (sssp study --targets, "
                  "gpu_sssp.study(..., targets=...)), which writes the matrix to files batch by batch")


def _check_matrix_size(g, src, tg, max_distance_bytes, form: str = "wide") -> None:
    """Refuse a matrix above ``sssp.study.max-distance-bytes`` (the study's rule,
    ``pipeline.study.plan.check_output_size``, in the form it is handed over: a long
    table is 24 bytes a cell) or above the memory available here (a long table's ids
    included), before a hierarchy is prepared or anything is allocated."""
    from gpu_sssp.kernels.errors import OutputTooLargeError
    from gpu_sssp.kernels.registry import check_output_memory
    from gpu_sssp.pipeline.study.matrix import matrix_bytes
    from gpu_sssp.pipeline.study.plan import check_output_size

    check_output_size(matrix_bytes(len(src), len(tg), form), max_distance_bytes, "the matrix",
                      f"{len(src):,} sources x {len(tg):,} targets, float64"
                      + (", a long table: source, target, distance" if form == "long" else ""),
                      _MATRIX_ADVICE, option="matrix(..., max_distance_bytes={estimate})", error=OutputTooLargeError)
    check_output_memory(g, len(src), targets=tg, pair_ids=form == "long")
