"""gpu-sssp: batched shortest paths on GPUs, distributed with Dask.

The public interface, importable from here::

    import gpu_sssp as sssp

    g = sssp.load_graph("data/rome99.gr")              # any input file or Parquet edge list
    res = sssp.solve(g, g.to_index([1, 2]), predecessors=True)
    res.distances                                       # (2, n) float64, +inf unreachable
    sssp.available_methods(), sssp.device_count()
    summary = sssp.study("data/rome99.gr", sources="all", out="rome-study")

Everything else (``gpu_sssp.kernels``, ``gpu_sssp.pipeline``, ``gpu_sssp.workflows``) is the
implementation: the solvers on one device, ingestion/Dask/files, and the command line.
Names starting with ``_`` are private to their package.
"""
from __future__ import annotations

import os as _os

# A source checkout keeps kernels/, pipeline/, workflows/ at the repository's top level
# (installed wheels and editable installs map them under gpu_sssp through package-dir);
# running from the checkout itself (PYTHONPATH=<checkout>) finds them the same way.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "kernels")) and _os.path.isfile(
        _os.path.join(_root, "kernels", "__init__.py")):
    __path__.append(_root)  # noqa: F821  (the package's own search path)

from gpu_sssp.kernels import (  # noqa: E402
    DISTANCE_SCHEMA,
    STATS_SCHEMA,
    NegativeCycleError,
    Result,
    available_methods,
    device_count,
    solve,
)
from gpu_sssp.kernels.graph import Graph  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Graph",
    "load_graph",
    "read_parquet",
    "solve",
    "study",
    "available_methods",
    "device_count",
    "Result",
    "NegativeCycleError",
    "DISTANCE_SCHEMA",
    "STATS_SCHEMA",
]


def load_graph(path, **ingest_options) -> Graph:
    """A graph from a Parquet edge list or any input file (see ``pipeline.graph.load_graph``)."""
    from gpu_sssp.pipeline.graph import load_graph as _load

    return _load(path, **ingest_options)


def read_parquet(path, **options) -> Graph:
    """A graph from a Parquet edge list written by ``sssp ingest`` (CSR cached beside it)."""
    from gpu_sssp.pipeline.graph import read_parquet as _read

    return _read(path, **options)


def study(graph, **options) -> dict:
    """Run a study (many sources in batches on a Dask cluster) and return its summary.

    See :func:`gpu_sssp.pipeline.study.run.study` for the options.
    """
    from gpu_sssp.pipeline.study.run import study as _study

    return _study(graph, **options)
