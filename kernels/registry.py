"""Registry of shortest-path methods: name -> backend, implementation, capabilities.

Implementations are named as ``"module:function"`` and imported only when used, so
listing methods never imports CuPy.  Every implementation has the signature::

    fn(graph, sources, *, predecessors=False, distances=True, count_work=False,
       **options) -> kernels.result.Result

with ``sources`` a 1-D int64 array of internal (0-based) vertex indices, already
validated by :func:`kernels.solve`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np

from gpu_sssp.kernels import _gpu
from gpu_sssp.kernels.errors import OptionError, UsageError
from gpu_sssp.kernels.result import Result


@dataclass(frozen=True)
class Method:
    name: str
    backend: str  # "gpu" or "cpu"
    target: str  # "module:function"
    negative_weights: bool = True
    description: str = ""
    options: dict = field(default_factory=dict)
    # the implementation takes ``turn`` (see :func:`solve`) and holds it only while it
    # enqueues device work
    device_turn: bool = False

    def unsuitable(self, graph) -> str | None:
        """Why this method cannot solve ``graph`` (one line), or None when it can.

        The one place this rule is written: ``solve`` raises it, and the study plan,
        the benchmark and ``sssp verify`` use it to refuse or skip a method."""
        if graph.has_negative and not self.negative_weights:
            return (f"method {self.name!r} needs non-negative weights; {graph.name} has "
                    f"{int((graph.weights < 0).sum())} negative arcs (use hbf, bellman-ford or auto)")
        return None

    def load(self):
        mod, fn = self.target.split(":")
        return getattr(importlib.import_module(mod), fn)


_METHODS: dict[str, Method] = {}
# a name registered on both backends (``phast``): every registration by backend; the
# GPU one is the name's primary entry in _METHODS
_VARIANTS: dict[str, dict[str, Method]] = {}


def register(name: str, backend: str, target: str, *, negative_weights: bool = True,
             description: str = "", device_turn: bool = False, **options) -> None:
    """Add (or replace) a method in the registry.  A name may be registered once per
    backend; ``get(name)`` then returns the GPU one and ``get(name, "cpu")`` the other."""
    if backend not in ("gpu", "cpu"):
        raise UsageError(f"backend must be 'gpu' or 'cpu', got {backend!r}")
    m = Method(name, backend, target, negative_weights, description, options, device_turn)
    variants = _VARIANTS.setdefault(name, {})
    variants[backend] = m
    _METHODS[name] = variants.get("gpu", m)


def get(name: str, backend: str | None = None) -> Method:
    """The method registered as ``name`` (on ``backend`` when it is registered on both)."""
    try:
        m = _METHODS[name]
    except KeyError:
        raise UsageError(
            f"unknown method {name!r}; available: {', '.join(available_methods())}"
        ) from None
    if backend is not None and m.backend != backend:
        m = _VARIANTS.get(name, {}).get(backend, m)
    return m


def backends_of(name: str) -> list[str]:
    """The backends ``name`` is registered on (``["gpu", "cpu"]`` for ``phast``)."""
    m = get(name)
    other = [b for b in _VARIANTS.get(name, {}) if b != m.backend]
    return [m.backend] + other


def available_methods(backend: str | None = None) -> list[str]:
    """Every registered method (whether or not a GPU is present), plus ``auto``."""
    if backend not in (None, "gpu", "cpu"):
        raise UsageError(f"backend must be 'gpu', 'cpu' or None, got {backend!r}")
    names = [m.name for m in _METHODS.values()
             if backend is None or m.backend == backend or backend in _VARIANTS.get(m.name, {})]
    return names + ["auto"]


def device_count() -> int:
    return _gpu.device_count()


def _choose(graph, n_sources: int, backend: str) -> str:
    from gpu_sssp.kernels import auto

    return auto.choose(graph, n_sources, backend)


def resolve_backend(method: str, backend: str = "auto") -> str:
    """The backend ("gpu" or "cpu") :func:`solve` runs ``method`` on for ``backend``:
    ``auto`` takes the named method's own (the GPU when a device is visible, for a name
    registered on both, like ``phast``), and for ``method="auto"`` the GPU when a device
    is visible."""
    if backend not in ("auto", "gpu", "cpu"):
        raise UsageError(f"backend must be 'auto', 'gpu' or 'cpu', got {backend!r}")
    if backend != "auto":
        return backend
    if method != "auto":
        on = backends_of(method)
        if len(on) > 1:  # registered on both: the GPU when a device is visible
            return "gpu" if device_count() > 0 else "cpu"
        return on[0]
    return "gpu" if device_count() > 0 else "cpu"


def solve(graph, sources, *, method: str = "auto", backend: str = "auto",
          predecessors: bool = False, distances: bool = True, turn=None, **options) -> Result:
    """Shortest paths from each of ``sources`` (internal 0-based indices).

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : int or array_like of int
        Internal vertex indices (use ``graph.to_index`` to convert file ids).
    method : str
        A name from :func:`available_methods`, or ``"auto"``.
    backend : {"auto", "gpu", "cpu"}
        ``auto`` uses the GPU when a device is visible and the method runs there.
    predecessors : bool
        Also return the shortest-path tree.
    distances : bool
        Return the (B, n) distance array; False keeps only per-source statistics.
    turn : lock, optional
        Serialises the device work of concurrent calls on one GPU (an object with
        ``acquire``/``release``, e.g. ``threading.Lock``).  A method that supports it
        (``batched``) holds it only while it enqueues its launches, so the next call's
        work queues right behind on the same stream while this one fetches its results
        and builds its answer; its CUDA-event kernel time still covers its own work only.
        Other methods hold it for the whole call.

    Returns
    -------
    Result

    Raises
    ------
    ValueError
        Unknown method/backend, sources out of range, a method that does not accept
        the graph (e.g. negative weights), integer weights whose path lengths could
        reach 2**53 (:meth:`kernels.graph.Graph.check_exact`).
    kernels.result.NegativeCycleError
        A negative cycle is reachable from a source.
    """
    src = np.atleast_1d(np.asarray(sources))
    if src.ndim != 1:
        raise UsageError(f"sources must be a 1-D list of vertex indices, got shape {src.shape}")
    if src.dtype.kind not in "iu":
        raise OptionError(f"sources must be integers, got {src.dtype}")
    src = src.astype(np.int64)
    if len(src) == 0:
        raise UsageError("no sources given")
    bad = (src < 0) | (src >= graph.n)
    if bad.any():
        v = int(src[np.argmax(bad)])
        raise UsageError(
            f"source index {v} out of range for {graph.name} with {graph.n} vertices "
            f"(file id {v + graph.id_base}; ids run {graph.id_base}..{graph.n - 1 + graph.id_base})"
        )
    # one check for every method: integer path lengths must stay exact in float64 (and
    # so within every kernel's distance type) before anything is solved
    graph.check_exact()
    backend = resolve_backend(method, backend)
    if method == "auto":
        method = _choose(graph, len(src), backend)
    spec = get(method, backend)
    if spec.backend != backend:
        raise OptionError(f"method {method!r} runs on the {spec.backend} backend, not {backend!r}")
    why = spec.unsuitable(graph)
    if why:
        raise UsageError(why)
    if spec.backend == "gpu" and device_count() == 0:
        raise _gpu.GPUUnavailableError(f"method {method!r} needs a CUDA device; none is visible here")
    fn = spec.load()
    if turn is not None and spec.device_turn:
        return fn(graph, src, predecessors=predecessors, distances=distances, turn=turn, **options)
    if turn is not None:
        with turn:
            return fn(graph, src, predecessors=predecessors, distances=distances, **options)
    return fn(graph, src, predecessors=predecessors, distances=distances, **options)


# --------------------------------------------------------------------- built-ins
register("dijkstra", "cpu", "gpu_sssp.kernels.cpu:dijkstra", negative_weights=False,
         description="SciPy Dijkstra (binary heap), the reference")
register("bellman-ford", "cpu", "gpu_sssp.kernels.cpu:bellman_ford",
         description="SciPy Johnson/Bellman-Ford; negative weights, cycle detection")
register("phast", "cpu", "gpu_sssp.kernels.cpu_phast:phast", negative_weights=False,
         description="PHAST sweep over a contraction hierarchy (RoutingKit), many sources per sweep, "
                     "Numba; non-negative integer weights")
