"""Registry of shortest-path methods: name -> backend, implementation, capabilities.

Implementations are named as ``"module:function"`` and imported only when used, so
listing methods never imports CuPy.  Every implementation has the signature::

    fn(graph, sources, *, predecessors=False, distances=True, count_work=False,
       **options) -> kernels.result.Result

with ``sources`` a 1-D int64 array of internal (0-based) vertex indices, already
validated by :func:`kernels.solve`.
"""
from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field

import numpy as np

from gpu_sssp.kernels import _gpu
from gpu_sssp.kernels.errors import OptionError, UsageError, counted, opt
from gpu_sssp.kernels.graph import holds_bool, refuse_unordered
from gpu_sssp.kernels.memory import check_host_memory, output_bytes
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
    # the implementation takes ``targets=`` and ``stats_over=`` itself (a restricted
    # sweep, or a gather on the device); the others are served by :func:`_solve_targets`
    targets: bool = False
    # hop distances (BFS): every arc must carry the same weight
    equal_weights: bool = False
    # sweeps a contraction hierarchy (phast): kernels.hierarchy.refusal's rule applies
    # (integer weights within its bound, a road-like graph unless forced or held)
    needs_hierarchy: bool = False

    def unsuitable(self, graph, *, force: bool = False, hierarchy=None, advice: str | None = None) -> str | None:
        """Why this method cannot solve ``graph`` (one line), or None when it can.

        The one place this rule is written: ``solve`` raises it, and the study plan,
        the benchmark and ``sssp verify`` use it to refuse or skip a method.  ``force``
        and ``hierarchy`` are the method options that lift ``phast``'s refusal of a
        graph that does not look road-like (:func:`kernels.hierarchy.refusal`); ``advice``
        picks another entry of ``kernels.hierarchy.ADVICE`` than the backend's (``study``)."""
        if graph.has_negative and not self.negative_weights:
            k = int((graph.weights < 0).sum())
            return (f"method {self.name!r} needs non-negative weights; {graph.name} has "
                    f"{counted(k, 'negative arc')} (use "
                    f"{_negative_alternatives(self.backend, advice)} or auto)")
        if self.equal_weights and graph.m and graph.min_weight != graph.max_weight:
            return (f"method {self.name!r} computes hop distances: it needs every arc weight equal; "
                    f"{graph.name} has weights {graph.min_weight}..{graph.max_weight} (use delta, phast or auto)")
        if self.needs_hierarchy:
            from gpu_sssp.kernels import hierarchy as hmod

            return hmod.refusal(graph, hierarchy=hierarchy, force=bool(force), **hmod.ADVICE[advice or self.backend])
        return None

    def load(self):
        mod, fn = self.target.split(":")
        return getattr(importlib.import_module(mod), fn)


_METHODS: dict[str, Method] = {}
# a name registered on both backends (``phast``): every registration by backend; the
# GPU one is the name's primary entry in _METHODS
_VARIANTS: dict[str, dict[str, Method]] = {}


def register(name: str, backend: str, target: str, *, negative_weights: bool = True,
             description: str = "", device_turn: bool = False, targets: bool = False, equal_weights: bool = False,
             needs_hierarchy: bool = False, **options) -> None:
    """Add (or replace) a method in the registry.  A name may be registered once per
    backend; ``get(name)`` then returns the GPU one and ``get(name, "cpu")`` the other.
    ``targets=True``: the implementation takes ``targets=`` and ``stats_over=`` itself;
    ``equal_weights=True``: it computes hop distances (BFS), :meth:`Method.unsuitable`
    refuses a graph whose arcs' weights differ; ``needs_hierarchy=True``: it sweeps a
    contraction hierarchy, :meth:`Method.unsuitable` applies
    :func:`kernels.hierarchy.refusal`."""
    if backend not in ("gpu", "cpu"):
        raise UsageError(f"backend must be 'gpu' or 'cpu', got {backend!r}")
    m = Method(name, backend, target, negative_weights, description, options, device_turn, targets, equal_weights,
               needs_hierarchy)
    variants = _VARIANTS.setdefault(name, {})
    variants[backend] = m
    _METHODS[name] = variants.get("gpu", m)


def get(name: str, backend: str | None = None) -> Method:
    """The method registered as ``name`` (on ``backend`` when it is registered on both)."""
    try:
        m = _METHODS[name]
    except KeyError:
        head, at, tail = str(name).partition("@")
        hint = (f" (a backend is its own argument: method={head!r}, backend={tail!r})"
                if at and (head in _METHODS or head == "auto") and tail in ("gpu", "cpu") else "")
        raise UsageError(
            f"unknown method {name!r}; available: {', '.join(available_methods())}{hint}"
        ) from None
    if backend is not None and m.backend != backend:
        m = _VARIANTS.get(name, {}).get(backend, m)
    return m


def backends_of(name: str) -> list[str]:
    """The backends ``name`` is registered on (``["gpu", "cpu"]`` for ``phast``)."""
    m = get(name)
    other = [b for b in _VARIANTS.get(name, {}) if b != m.backend]
    return [m.backend] + other


def registrations(backend: str | None = None) -> list[Method]:
    """Every registration (one per name and backend: ``phast`` twice, GPU first), in the
    order registered, or only those on ``backend``."""
    if backend not in (None, "gpu", "cpu"):
        raise UsageError(f"backend must be 'gpu', 'cpu' or None, got {backend!r}")
    out = []
    for name, primary in _METHODS.items():
        for m in [primary] + [v for b, v in _VARIANTS.get(name, {}).items() if b != primary.backend]:
            if backend is None or m.backend == backend:
                out.append(m)
    return out


def method_spec(token: str, backend: str = "auto") -> tuple[str, str]:
    """``(name, backend)`` a command line's method token names: ``NAME`` or
    ``NAME@BACKEND`` (``phast@cpu``).  Without ``@``, ``backend`` decides (``auto``: the
    method's own, or for a name on both backends the GPU when a device is visible, as
    :func:`resolve_backend`).

    Raises
    ------
    UsageError
        An unknown name or backend, ``auto``, or a backend the method is not registered on.
    """
    name, at, b = str(token).strip().partition("@")
    if name == "auto" and at and b in ("gpu", "cpu"):  # (was "unknown method 'auto'": it is the default)
        raise UsageError(f"{token!r}: auto picks a method itself and takes no '@{b}'; give "
                         + opt(f"--backend {b}", python=f"backend='{b}'") + " with it instead")
    if name == "auto" or name not in _METHODS:
        raise UsageError(f"unknown method {name!r}; available: "
                         f"{', '.join(m for m in available_methods() if m != 'auto')}")
    if at:
        if b not in ("gpu", "cpu"):
            raise UsageError(f"{token!r}: the backend after '@' must be 'gpu' or 'cpu'")
    else:
        b = resolve_backend(name, backend)
    on = backends_of(name)
    if b not in on:
        raise UsageError(f"method {name!r} runs on the {' or '.join(on)} backend, not {b!r}")
    return name, b


def method_label(name: str, backend: str) -> str:
    """How a table names ``name`` on ``backend``: the name itself on its primary backend
    (the GPU for a name registered on both), ``NAME@BACKEND`` otherwise (``phast@cpu``);
    :func:`method_spec` reads it back."""
    return name if get(name).backend == backend else f"{name}@{backend}"


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


STATS_OVER = ("targets", "all")
#: the generic ``targets=`` path solves at most this many bytes of full distance rows at once
GENERIC_CHUNK_BYTES = 1 << 30


def _vertex_indices(graph, values, what: str) -> np.ndarray:
    """``values`` (``what``: "source" or "target") as a validated 1-D int64 array of
    internal indices, repeats kept.

    Raises
    ------
    TypeError
        Not integers (a bool, even inside a list of ints, is not an index).
    ValueError
        Not 1-D, empty, or an index out of range (its file id named), however large
        (a Python int beyond 64 bits, a uint64 beyond int64: never wrapped).
    """
    if holds_bool(values):
        raise OptionError(f"{what}s must be integers, got a bool (True is not vertex 1)")
    refuse_unordered(values, f"{what}s", OptionError)
    v = np.atleast_1d(np.asarray(values))
    if (v.dtype.kind == "f" and isinstance(values, (list, tuple)) and values
            and all(isinstance(x, (int, np.integer)) for x in values)):
        # ints that no one integer type holds ([0, 2**63]: int64 and uint64) are float64 to
        # NumPy; kept as objects, the range check below names the one out of range
        v = np.asarray(values, dtype=object)
    if v.size == 0:  # before the type: an empty list is float64 to NumPy
        raise UsageError(f"no {what}s given")
    if v.ndim != 1:
        raise UsageError(f"{what}s must be a 1-D list of vertex indices, got shape {v.shape}")

    def out_of_range(i) -> UsageError:
        i = int(i)
        if not graph.n:  # ("ids run 0..-1")
            return UsageError(f"{what} index {i} out of range for {graph.name}, which has no vertices")
        return UsageError(
            f"{what} index {i} out of range for {graph.name} with {counted(graph.n, 'vertex', 'vertices')} "
            f"(file id {i + graph.id_base}; ids run {graph.id_base}..{graph.n - 1 + graph.id_base})"
        )

    if v.dtype.kind == "O" and all(isinstance(x, (int, np.integer)) for x in v):
        # Python ints beyond 64 bits: NumPy keeps them as objects; they name no vertex
        for x in v:
            if not 0 <= int(x) < graph.n:
                raise out_of_range(x)
        v = np.array([int(x) for x in v], dtype=np.int64)  # all in range
    if v.dtype.kind not in "iu":
        raise OptionError(f"{what}s must be integers, got {v.dtype}")
    if v.dtype.kind == "u" and v.dtype.itemsize >= 8:
        far = v >= np.uint64(graph.n)  # before the cast to int64, which would wrap them
        if far.any():
            raise out_of_range(v[np.argmax(far)])
    v = v.astype(np.int64)
    bad = (v < 0) | (v >= graph.n)
    if bad.any():
        raise out_of_range(v[np.argmax(bad)])
    return v


def check_targets(graph, targets) -> np.ndarray:
    """``targets`` as a validated 1-D int64 array of internal indices (repeats kept);
    raises as :func:`_vertex_indices`."""
    return _vertex_indices(graph, targets, "target")


def target_stats(matrix, targets, *, integer: bool, xp=np):
    """``(reached, eccentricity, sum_distance)`` of each row of a ``(B, T)`` matrix over
    its distinct targets (a repeated target counted once)."""
    tg = np.asarray(targets)
    _, first = np.unique(tg, return_index=True)
    if len(first) != len(tg):
        matrix = matrix[:, xp.asarray(np.sort(first))]
    from gpu_sssp.kernels.result import reduce_distances

    return reduce_distances(matrix, integer=integer, xp=xp)


def _negative_alternatives(backend: str, advice: str | None) -> str:
    """The methods that take negative weights, for :meth:`Method.unsuitable`'s line: a
    study's workers may be CPUs (its plan is made before it knows them), where ``hbf``,
    a GPU method, cannot run - it was suggested to CPU studies."""
    if advice == "study":
        return "bellman-ford, hbf on GPU workers,"
    return "hbf, bellman-ford" if backend == "gpu" else "bellman-ford"


def refuse_unsuitable(spec: Method, graph, options: dict) -> None:
    """Raise :meth:`Method.unsuitable`'s reason as a ``UsageError``, with the method
    options that lift a refusal (``force``, ``hierarchy``) taken from ``options``: what
    :func:`solve` checks, and what a caller asks before costly preparation
    (``gpu_sssp.matrix`` before building a hierarchy)."""
    why = spec.unsuitable(graph, force=options.get("force", False), hierarchy=options.get("hierarchy"))
    if why:
        raise UsageError(why)


#: host bytes a CPU engine holds at its peak per (source, vertex) cell of its full rows -
#: ``(always, with predecessors)``, measured as peak RSS on NY (264,346 vertices, 100
#: sources): SciPy's Dijkstra and Johnson return whole float64 rows even for the
#: statistics, copy them to the asked order and reduce them through full-size temporaries
#: (34 bytes a cell, 38 with the trees, where the result's own distances are 8); the
#: CPU PHAST sweep keeps only the rows asked for (10 with distances, 18 with the trees,
#: under 1 for the statistics alone)
CPU_CELL_BYTES = {"dijkstra": (36, 8), "bellman-ford": (36, 8), "phast": (12, 8)}


def check_output_memory(graph, n_sources: int, *, targets=None, predecessors=False, distances=True,
                        pair_ids: bool = False, method: str | None = None, backend: str | None = None,
                        advice: str | None = None) -> None:
    """Refuse, before anything is solved or allocated, a result whose host arrays (the
    ``(B, n)`` or ``(B, T)`` float64 distances, the ``(B, n)`` int64 predecessors) cannot
    fit in the memory available here (:func:`kernels.memory.check_host_memory`).
    ``pair_ids``: the matrix is also handed over as a long Arrow table, which adds the
    source and target id of every cell (two int64 columns; its distances are the
    matrix's own memory).  ``advice``: how the caller can go on, in its own options (a
    study's batch: ``pipeline.study.task``); default: :func:`solve`'s (fewer sources,
    ``distances=False``, a study)."""
    cols = graph.n if targets is None else len(targets)
    need = output_bytes(n_sources, cols, distances=distances, predecessors=predecessors, n=graph.n)
    srcs = counted(int(n_sources), "source")
    parts = ([f"{'a matrix' if targets is not None else 'distances'} of {srcs} x "
              + (counted(cols, "target") if targets is not None else counted(cols, "vertex", "vertices"))
              + " (float64)"] if distances else [])
    if pair_ids:
        need += 2 * int(n_sources) * int(cols) * 8
        parts.append("its long table's source and target ids (int64)")
    if predecessors:
        parts.append(f"predecessors of {srcs} x {counted(graph.n, 'vertex', 'vertices')} (int64)")
    cell = CPU_CELL_BYTES.get(method) if backend == "cpu" else None
    if cell is not None and targets is not None and method == "phast":
        cell = None  # (its sweep gathers the targets' columns: no full rows)
    if cell is not None:
        # what the CPU engine really holds (its full rows and the temporaries of their
        # reduction), not only the result: 200 NY sources passed a check of 846 MB and
        # peaked at 2.1 GB (SIGKILL under a cgroup limit between the two)
        # (the CPU phast sweep makes the float64 rows for the trees too: distances=False
        # with predecessors=True holds them, which 8 bytes a cell left out)
        per = (cell[0] if (distances or predecessors or method != "phast") else 0) + (cell[1] if predecessors else 0)
        rows = int(n_sources)
        if targets is not None:  # solved GENERIC_CHUNK_BYTES of full rows at a time (_gather_cpu)
            rows = min(rows, max(1, GENERIC_CHUNK_BYTES // max(1, 8 * int(graph.n))))
        work = rows * int(graph.n) * per
        if targets is not None:
            work += need
        if work > need:
            need = work
            at = f", {rows:,} sources at a time" if rows < n_sources else ""
            if parts:
                parts = [" and ".join(parts) + f", with the working arrays of {method} on the CPU ({per} bytes a "
                         f"source and vertex in all at its peak{at})"]
            else:
                parts = [f"the working arrays of {method} on the CPU for {srcs} x "
                         f"{counted(graph.n, 'vertex', 'vertices')} ({per} bytes a source and vertex at its peak{at})"]
    if advice is None and targets is not None:
        advice = ("choose fewer sources or targets, or run a study with targets (sssp study --targets, "
                  "gpu_sssp.study(..., targets=...)), which writes the matrix to files batch by batch")
    elif advice is None:
        # name only what would help this call: distances=False where it asked for them,
        # predecessors=False where it asked for the trees
        # (SciPy's engines make the whole rows for the statistics too: distances=False
        # does not help them)
        full_rows = cell is not None and method != "phast"
        drop = [name for name, asked in (("distances=False", distances and not full_rows),
                                         ("predecessors=False", predecessors)) if asked]
        stats = f"pass {' and '.join(drop)} for the per-source statistics only, " if drop else ""
        advice = (f"solve fewer sources at a time, {stats}or "
                  "run a study (sssp study), which writes the distances to files batch by batch")
    check_host_memory(need, f"{graph.name}: " + " and ".join(parts), advice)


def check_flag(value, name: str) -> bool:
    """``value`` of the True/False option ``name`` as a bool: True, False, NumPy's bools,
    or the integers 0 and 1; anything else (``"no"``, which is truthy) is an
    :class:`OptionError` naming the option."""
    if not isinstance(value, (bool, np.bool_)) and not (isinstance(value, (int, np.integer)) and value in (0, 1)):
        raise OptionError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_whole(value, name: str, *, minimum: int | None = None):
    """``value`` of the whole-number option ``name`` (``lanes``, ``batch_size``, ...) as an
    int, ``None`` kept (the method's default): a fractional, text or True/False value is an
    :class:`OptionError` naming the option (``int()`` took 2.5 as 2, "4" as 4 and True
    as 1), one below ``minimum`` a :class:`UsageError`."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise OptionError(f"{name} must be a whole number, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_hierarchy_option(hierarchy) -> None:
    """``phast``'s ``hierarchy=``: None or a :class:`kernels.hierarchy.Hierarchy` (a path or
    anything else failed deep inside with an AttributeError)."""
    from gpu_sssp.kernels.hierarchy import Hierarchy

    if hierarchy is not None and not isinstance(hierarchy, Hierarchy):
        raise OptionError(f"phast: hierarchy= takes a kernels.hierarchy.Hierarchy (e.g. "
                          f"kernels.hierarchy.build_hierarchy(graph)), got {type(hierarchy).__name__}")


def check_option_kinds(method: str, options: dict, defaults: dict) -> None:
    """Each of ``options`` of the kind of its default in ``defaults``: True/False for a
    bool default (:func:`check_flag`), a whole number for an int one, a real number for a
    float one (``None`` keeps the default); options whose default is text or None take
    their own checks."""
    for name, value in options.items():
        d = defaults.get(name)
        if value is None or d is None or isinstance(d, str):
            continue
        if isinstance(d, bool):
            check_flag(value, f"{method}: {name}")
        elif isinstance(d, int):
            check_whole(value, f"{method}: {name}")
        elif isinstance(d, float) and (isinstance(value, (bool, np.bool_))
                                       or not isinstance(value, (int, float, np.integer, np.floating))):
            raise OptionError(f"{method}: {name} must be a number, got {value!r}")


def solve(graph, sources, *, method: str = "auto", backend: str = "auto",
          predecessors: bool = False, distances: bool = True, turn=None, targets=None,
          stats_over: str = "targets", **options) -> Result:
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
    targets : array_like of int, optional
        Internal indices of targets (repeats kept, any order): the result's
        ``distances`` is then the ``(B, T)`` travel-time matrix (``Result.matrix``),
        ``Result.targets`` the targets.  ``phast`` sweeps only the part of the hierarchy
        the targets need (RPHAST); the GPU engines gather the target columns on the
        device before anything is copied to the host; the CPU's ``dijkstra`` and
        ``bellman-ford`` gather them from rows solved ``GENERIC_CHUNK_BYTES`` at a time.
        Not with ``predecessors`` or ``distances=False``.
    stats_over : {"targets", "all"}
        With ``targets``: the per-source statistics over the distinct targets only
        (default; ``Result.stats_over == "targets"``), or over every vertex (``"all"``:
        ``phast`` then makes the full sweep and gathers the targets from it).  Without
        targets the statistics are over every vertex either way; another value is an
        error with or without targets.

    Returns
    -------
    Result
        Internal indices throughout (``sources``, ``targets``, predecessors);
        ``Result.id_base`` is the graph's, so that its tables give file ids.

    Raises
    ------
    ValueError
        Unknown method/backend, sources out of range, a method that does not accept
        the graph (e.g. negative weights), integer weights whose path lengths could
        reach 2**53 (:meth:`kernels.graph.Graph.check_exact`).
    kernels.errors.OutputTooLargeError
        (a ``MemoryError`` and ``ValueError``) The result's distances / matrix /
        predecessors would not fit in the memory available here; raised before
        anything is allocated (:func:`check_output_memory`).
    kernels.result.NegativeCycleError
        A negative cycle is reachable from a source.
    """
    from gpu_sssp.kernels.graph import Graph

    if not isinstance(graph, Graph) and not all(hasattr(graph, a) for a in ("n", "indptr", "indices", "weights")):
        # (a path or None failed deep inside with an AttributeError)
        raise OptionError(f"graph must be a gpu_sssp.Graph, got {type(graph).__name__} "
                          "(gpu_sssp.load_graph(path) reads an input file or a Parquet edge list)")
    for flag, value in (("predecessors", predecessors), ("distances", distances)):
        # predecessors="no" is truthy: it computed the trees (and their memory)
        check_flag(value, flag)
    src = _vertex_indices(graph, sources, "source")
    # checked with or without targets: a misspelt value was ignored without them
    if not isinstance(stats_over, str) or stats_over not in STATS_OVER:
        raise UsageError(f"stats_over must be one of {STATS_OVER}, got {stats_over!r}")
    if targets is not None:
        targets = check_targets(graph, targets)
        if predecessors:
            raise OptionError("predecessors are not returned with targets= (solve without targets for the trees)")
        if not distances:
            raise OptionError("targets= returns the travel-time matrix: distances=False does not go with it")
    check_output_memory(graph, len(src), targets=targets, predecessors=predecessors, distances=distances)
    # one check for every method: integer path lengths must stay exact in float64 (and
    # so within every kernel's distance type) before anything is solved
    graph.check_exact()
    backend = resolve_backend(method, backend)
    chosen = method == "auto" and bool(options)  # (a refused option then says who chose the method)
    if method == "auto":
        if backend == "gpu" and device_count() == 0:
            # (it named the method auto would have chosen: "method 'hbf' needs a CUDA device")
            raise _gpu.GPUUnavailableError("backend='gpu' needs a CUDA device; none is visible here (backend='cpu' "
                                           "or 'auto' runs the CPU methods)")
        method = _choose(graph, len(src), backend)
    spec = get(method, backend)
    if spec.backend != backend:
        raise OptionError(f"method {method!r} runs on the {spec.backend} backend, not {backend!r}")
    refuse_unsuitable(spec, graph, options)
    if spec.backend == "gpu" and device_count() == 0:
        raise _gpu.GPUUnavailableError(f"method {method!r} needs a CUDA device; none is visible here")
    # again, now that the engine is known: what it holds beyond the result (CPU_CELL_BYTES)
    check_output_memory(graph, len(src), targets=targets, predecessors=predecessors, distances=distances,
                        method=spec.name, backend=spec.backend)
    fn = spec.load()
    with _chosen_by_auto(spec) if chosen else contextlib.nullcontext():
        if targets is not None:
            res = _solve_targets(spec, fn, graph, src, targets, stats_over, turn, options)
        elif turn is not None and spec.device_turn:
            res = fn(graph, src, predecessors=predecessors, distances=distances, turn=turn, **options)
        elif turn is not None:
            with turn:
                res = fn(graph, src, predecessors=predecessors, distances=distances, **options)
        else:
            res = fn(graph, src, predecessors=predecessors, distances=distances, **options)
    res.id_base = int(graph.id_base)  # the tables' file ids by default (Result.to_table, ...)
    return res


@contextlib.contextmanager
def _chosen_by_auto(spec: Method):
    """A method option refused by the method ``method="auto"`` chose: said so (the caller
    named no method; "dijkstra takes no options" alone left them guessing which one
    ran, and that the choice depends on the graph and the device)."""
    try:
        yield
    except OptionError as exc:
        said = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        raise OptionError(f"method='auto' chose {spec.name!r} on the {spec.backend} for this graph, and {said} "
                          f"(method options go with a method named: method={spec.name!r} or another; "
                          "gpu_sssp.available_methods() lists them)") from exc


def _solve_targets(spec: Method, fn, graph, src, targets, stats_over, turn, options) -> Result:
    """``solve`` with ``targets``: the method's own path, or full rows gathered (on the
    device for the GPU engines that solve through ``kernels.gpu.common.SourceLoop``)."""
    kw = dict(predecessors=False, distances=True)
    if spec.device_turn and turn is not None:
        kw["turn"] = turn
        turn = None
    hold = turn if turn is not None else contextlib.nullcontext()
    if spec.targets:
        with hold:
            return fn(graph, src, targets=targets, stats_over=stats_over, **kw, **options)
    integer = graph.integer_weights
    if spec.backend == "gpu":
        from gpu_sssp.kernels.gpu.common import gather_targets

        with hold, gather_targets(targets):
            res = fn(graph, src, **kw, **options)
        parts = [res]
    else:  # CPU: rows of at most GENERIC_CHUNK_BYTES, each gathered at once
        res = _gather_cpu(fn, graph, src, targets, stats_over, hold, kw, options)
        res.targets = targets
        res.stats_over = "targets" if stats_over == "targets" else "vertices"
        return res
    res = _concat(parts)
    if res.distances.shape[1] != len(targets) or not res.counters.get("targets_gathered"):
        # an engine that does not gather (none registered today): gather its rows here
        res.distances = np.ascontiguousarray(res.distances[:, targets])
        res.counters["targets_gathered"] = "host"
    res.targets = targets
    if stats_over == "targets":
        res.reached, res.eccentricity, res.sum_distance = target_stats(res.distances, targets, integer=integer)
        res.stats_over = "targets"
    return res


def _gather_cpu(fn, graph, src, targets, stats_over, hold, kw, options) -> Result:
    """The CPU engines' ``targets=``: rows of at most ``GENERIC_CHUNK_BYTES`` solved in
    turn, each chunk's target columns copied into one C-ordered ``(B, T)`` matrix
    allocated once, and, with ``stats_over="targets"``, each chunk's statistics taken
    over the distinct targets from its full rows.  The matrix is the only array of its
    size: a fancy index over the columns (``rows[:, targets]``) comes out F-ordered,
    and making it C-ordered, then concatenating the chunks, each copied it again (a
    matrix study's worker needed three times its batch's matrix, and was killed for
    memory where the study's size check had let the batch through); the statistics of
    the gathered matrix took several temporaries of its size as well."""
    step = max(1, GENERIC_CHUNK_BYTES // max(8 * graph.n, 1))
    mat = np.empty((len(src), len(targets)), dtype=np.float64)
    distinct = None
    if stats_over == "targets":
        _, first = np.unique(targets, return_index=True)
        distinct = targets[np.sort(first)]  # each target once, in the order first asked
    parts = []
    with hold:
        for i in range(0, len(src), step):
            r = fn(graph, src[i:i + step], **kw, **options)
            rows, block = r.distances, mat[i:i + len(r.sources)]
            for j in range(len(block)):  # row by row: C order, no temporary of the matrix's size
                np.take(rows[j], targets, out=block[j])
            if distinct is not None:
                from gpu_sssp.kernels.result import reduce_distances

                r.reached, r.eccentricity, r.sum_distance = reduce_distances(
                    rows[:, distinct], integer=graph.integer_weights)
            r.distances = None  # the chunk's full rows are freed before the next chunk
            parts.append(r)
    res = _concat(parts)
    res.distances = mat
    res.counters["targets_gathered"] = "host"
    return res


def _concat(parts: list) -> Result:
    """One Result of several solved in turn over consecutive slices of the sources."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    counters = dict(first.counters)
    for key in ("kernel_ms", "relaxations", "launches", "host_syncs"):
        if key in counters:
            counters[key] = sum(p.counters.get(key, 0) for p in parts)
    return Result(sources=cat("sources"), distances=None if first.distances is None else cat("distances"),
                  predecessors=None,
                  reached=cat("reached"), eccentricity=cat("eccentricity"), sum_distance=cat("sum_distance"),
                  iterations=cat("iterations"), relaxations=cat("relaxations"), method=first.method,
                  backend=first.backend, device=first.device, counters=counters)


# --------------------------------------------------------------------- built-ins
register("dijkstra", "cpu", "gpu_sssp.kernels.cpu:dijkstra", negative_weights=False,
         description="SciPy Dijkstra (binary heap), the reference")
register("bellman-ford", "cpu", "gpu_sssp.kernels.cpu:bellman_ford",
         description="SciPy Johnson/Bellman-Ford; negative weights, cycle detection")
register("phast", "cpu", "gpu_sssp.kernels.cpu_phast:phast", negative_weights=False, targets=True,
         needs_hierarchy=True,
         description="PHAST sweep over a contraction hierarchy (RoutingKit), many sources per sweep, "
                     "Numba; non-negative integer weights")
