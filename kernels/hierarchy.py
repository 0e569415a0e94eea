"""A contraction hierarchy laid out for PHAST sweeps (one per graph and weight set).

The contraction itself is RoutingKit's (the ``ch-router`` wheel, ``import routingkit_ch``);
this module only turns its output into the arrays a level-ordered sweep reads:

- vertices renumbered into *sweep positions*, sorted by level (level 0 = the top of the
  hierarchy), so that every level is a contiguous range of positions;
- the upward arcs (original direction, towards higher rank) in CSR by tail position, for
  the per-source upward searches;
- the downward arcs in CSR by *head* position, so that the downward sweep pulls
  ``d[p] = min(d[p], d[u] + w)`` over the arcs into ``p``.

Levels are defined on both graphs together: ``level(v) = 1 + max level(u)`` over the
hierarchy neighbours ``u`` of ``v`` (upward or downward arcs) with a higher rank, and 0
when there is none.  Every hierarchy arc therefore joins two different levels, and
sweeping the positions ``0 .. n-1`` in order (or level by level, a level's positions in
parallel) is a topological order of the downward DAG.

RoutingKit's binding only exposes the hierarchy through ``save()``; the file format
(``contraction_hierarchy.cpp``, also in ``../shared/PERF-NOTES.md``) is a 24-byte header
(uint64 magic, uint32 node count, forward and backward arc counts, padding), ``rank[n]``,
then for the forward and the backward upward graph ``first_out[n+1]``, ``head[m]``,
``weight[m]`` (uint32), a shortcut bit vector of ``((m + 511) // 512) * 64`` bytes and two
uint32 arrays of ``m`` shortcut arc ids.  Vertex ids in both graphs are ranks; a forward
arc ``x -> y`` (``y > x``) is an original-direction arc up the hierarchy, a backward arc
``x -> y`` stands for the original arc ``y -> x`` (a downward arc into ``x``).

Weights
-------
RoutingKit stores weights as uint32 with ``INF_WEIGHT = 2**31 - 1`` as infinity, so every
hierarchy weight and every path length below ``WEIGHT_BOUND = 2**31 - 2`` is held exactly
(as uint32, and as int32 too), and the sum of two such values never wraps a uint32.  A
shortcut weight is the length of a walk the contraction found; a graph is eligible when
an upper bound of its simple path lengths (:func:`path_length_bound`) is at most
``MAX_PATH_BOUND = 2**30``: half of ``WEIGHT_BOUND``, a margin for shortcuts that a
limited witness search makes longer than a shortest path (they are still walks, whose
sums RoutingKit forms in uint32).  After the build every hierarchy weight is checked to
be below ``INF_WEIGHT`` as well.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import struct
import tempfile
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpu_sssp.kernels.errors import opt

log = logging.getLogger(__name__)

# RoutingKit's calls release the GIL (pybind11's gil_scoped_release) and take it back on
# return, inside a destructor that may not throw.  A thread other than the main one still
# inside such a call when the interpreter starts finalizing (a study's worker told to
# close while its warm-up builds its tiny hierarchy, a program ending while a background
# contraction runs) is ended by Python as it takes the GIL back, by an unwinding that
# crosses that destructor: the whole process aborts with "terminate called without an
# active exception" (exit 134, the line printed to the shared terminal; a rare failure of
# the start-up signal tests).  So the interpreter's exit waits for those calls
# (_wait_for_native_calls, an atexit hook), and a thread that would enter one after it
# never does.  A call abandoned to a Ctrl-C (_stoppable) is not waited for by ``sssp``,
# which ends its process at once instead (workflows.cli.run, native_calls_abandoned).
_NATIVE = threading.Condition()
_in_native: set = set()  # idents of the threads inside a call
_abandoned: set = set()  # idents of the threads their caller stopped waiting for
_exiting = threading.Event()
#: the most seconds the interpreter's exit waits for calls still running
EXIT_WAIT_S = 120.0


@contextlib.contextmanager
def _native_call():
    """Around a RoutingKit call that releases the GIL (see above)."""
    if threading.current_thread() is threading.main_thread():
        yield  # the main thread is the one that finalizes: nothing to wait for
        return
    if _exiting.is_set():  # after the exit hook: never enter native code
        threading.Event().wait()
    me = threading.get_ident()
    with _NATIVE:
        _in_native.add(me)
    try:
        yield
    finally:
        with _NATIVE:
            _in_native.discard(me)
            _NATIVE.notify_all()


def native_calls_abandoned() -> int:
    """How many RoutingKit calls left running by an interrupted caller (a Ctrl-C during
    a contraction) are still running."""
    with _NATIVE:
        return len(_in_native & _abandoned)


def _wait_for_native_calls(limit: float | None = None) -> bool:
    """The interpreter's exit: wait (at most ``limit`` s, :data:`EXIT_WAIT_S`) until no
    thread is inside a RoutingKit call; from now on none enters one.  Whether none is
    left."""
    _exiting.set()
    start = time.monotonic()
    end = start + (EXIT_WAIT_S if limit is None else limit)
    told = False
    with _NATIVE:
        while _in_native:
            now = time.monotonic()
            if now >= end:
                return False
            if not told and now - start > 1:
                log.info("waiting for %d contraction(s) still running before the process ends", len(_in_native))
                told = True
            _NATIVE.wait(min(end - now, 0.5))
    return True


atexit.register(_wait_for_native_calls)

#: RoutingKit's infinity (``routingkit_ch.INF_WEIGHT``); hierarchy weights stay below it.
INF_WEIGHT = 2**31 - 1
#: The largest path length the hierarchy's uint32 weights (and int32 labels) hold exactly.
WEIGHT_BOUND = INF_WEIGHT - 1
#: Eligibility: an upper bound of the graph's simple path lengths at most this.
MAX_PATH_BOUND = 2**30
#: Seconds between progress lines while a large graph is contracted.
PROGRESS_EVERY_S = 10.0
#: Key of the hierarchy in ``Graph.cached`` (shared with ``pipeline.hierarchy``).
CACHE_KEY = "phast-hierarchy"

_MAGIC = 0x436F6E7448696572


@dataclass(frozen=True)
class Hierarchy:
    """A contraction hierarchy in sweep order.

    Attributes
    ----------
    n : int
        Number of vertices.
    order : ndarray of int32, shape (n,)
        Sweep position -> graph vertex (0-based internal index).
    position : ndarray of int32, shape (n,)
        Graph vertex -> sweep position (the inverse of ``order``).
    level_ptr : ndarray of int64, shape (L + 1,)
        Positions ``level_ptr[i] .. level_ptr[i+1]`` form level ``i``; level 0 is the top.
        Within a level, positions follow the graph's vertex order.
    up_indptr : ndarray of int64, shape (n + 1,)
    up_head : ndarray of int32, shape (m_up,)
    up_weight : ndarray of uint32, shape (m_up,)
        Upward arcs (original direction, ``x -> y`` with ``rank(y) > rank(x)``) in CSR by
        tail position; heads are positions of a smaller level, sorted within a row.
    down_indptr : ndarray of int64, shape (n + 1,)
    down_tail : ndarray of int32, shape (m_down,)
    down_weight : ndarray of uint32, shape (m_down,)
        Downward arcs *into* each position (original direction ``u -> p``, ``u`` of a
        smaller level) in CSR by head position; tails sorted within a row.
    weight_bound : int
        ``WEIGHT_BOUND`` (2**31 - 2): path lengths up to it are exact in uint32/int32, and
        two of them add without wrapping a uint32.
    build_s : float
        Seconds the contraction (RoutingKit's build) took.
    library : str
        E.g. ``"ch-router 0.3.1 (RoutingKit)"``.
    fingerprint : str
        The graph's fingerprint when it was built (empty if unknown).
    layout_s : float
        Seconds spent turning RoutingKit's output into this layout.
    """

    n: int
    order: np.ndarray
    position: np.ndarray
    level_ptr: np.ndarray
    up_indptr: np.ndarray
    up_head: np.ndarray
    up_weight: np.ndarray
    down_indptr: np.ndarray
    down_tail: np.ndarray
    down_weight: np.ndarray
    weight_bound: int
    build_s: float
    library: str
    fingerprint: str = ""
    layout_s: float = 0.0
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def levels(self) -> int:
        return int(len(self.level_ptr) - 1)

    @property
    def m_up(self) -> int:
        return int(len(self.up_head))

    @property
    def m_down(self) -> int:
        return int(len(self.down_tail))

    def level_of_position(self) -> np.ndarray:
        """Level of every sweep position (int32, shape (n,))."""
        return np.repeat(np.arange(self.levels, dtype=np.int32), np.diff(self.level_ptr))

    def summary(self) -> dict:
        return {"vertices": self.n, "levels": self.levels, "up_arcs": self.m_up,
                "down_arcs": self.m_down, "build_s": round(self.build_s, 3),
                "layout_s": round(self.layout_s, 3), "library": self.library,
                "weight_bound": self.weight_bound}

    # array names, for writers and readers of the arrays (the cache file)
    ARRAYS = ("order", "position", "level_ptr", "up_indptr", "up_head", "up_weight",
              "down_indptr", "down_tail", "down_weight")


def library_version() -> str:
    """The contraction library and its version, e.g. ``"ch-router 0.3.1 (RoutingKit)"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("ch-router")
    except PackageNotFoundError:  # pragma: no cover - imported from a source tree
        v = "unknown"
    return f"ch-router {v} (RoutingKit)"


def path_length_bound(graph) -> int:
    """An upper bound of the graph's simple path lengths (integer weights >= 0).

    The smaller of ``graph.max_path_bound()`` ((n - 1) x the largest weight) and the sum
    of the ``n - 1`` largest arc weights (a simple path has at most ``n - 1`` arcs).
    Self-loops are left out: no simple path uses one, and the hierarchy drops them (a
    graph whose only heavy arc was a loop was refused).
    """
    if not graph.m or graph.n < 2:
        return 0
    w = graph.weights
    loops = graph.tails() == graph.indices
    if loops.any():
        w = w[~loops]
        if not len(w):
            return 0
    k = min(graph.n - 1, len(w))
    if k < len(w):
        top = np.partition(w, len(w) - k)[len(w) - k:]
    else:
        top = w
    top = top.astype(np.int64)
    # an int64 sum of k weights each below 2**63 can wrap (4,096 arcs of 2**52 sum to 0):
    # exact while the float64 estimate is far from 2**63, else the estimate itself (far
    # beyond MAX_PATH_BOUND either way)
    approx = float(top.sum(dtype=np.float64))
    total = int(top.sum(dtype=np.int64)) if approx < 2.0**62 else int(approx)
    crude = (int(graph.n) - 1) * max(int(w.max()), -int(w.min()))
    return int(min(crude, total))


def eligible(graph) -> str | None:
    """``None`` when a hierarchy applies to ``graph``, else the reason (one line).

    Eligible: the contraction library is installed, and the weights are integer,
    non-negative and their simple path lengths bounded by ``MAX_PATH_BOUND`` (2**30).  Float or negative weights are not eligible (use
    ``dijkstra``/``bellman-ford`` on the CPU, ``batched``/``hbf`` on the GPU).  Computed
    once per graph.
    """
    return graph.cached("hierarchy-eligible", lambda: _eligible(graph))


def library_available() -> bool:
    """Whether the contraction library (``routingkit_ch``, the ``ch-router`` wheel) is
    installed; its wheels exist for Linux x86_64 only."""
    import importlib.util

    return importlib.util.find_spec("routingkit_ch") is not None


def _eligible(graph) -> str | None:
    if not library_available():
        return ("routingkit_ch (the ch-router wheel, Linux x86_64 only) is not installed, so no "
                "contraction hierarchy can be built")
    if not graph.integer_weights:
        return f"{graph.name}: {graph.weight_type} weights (a hierarchy needs integer weights)"
    if graph.has_negative:
        return f"{graph.name}: negative weights (a hierarchy needs weights >= 0)"
    if graph.n >= 2**31 - 1:
        return f"{graph.name}: {graph.n} vertices, beyond the int32 positions of a hierarchy"
    bound = path_length_bound(graph)
    if bound > MAX_PATH_BOUND:
        return (f"{graph.name}: path lengths may reach {bound}, beyond the hierarchy's limit "
                f"{MAX_PATH_BOUND} (RoutingKit's uint32 weights with margin)")
    return None


def get_hierarchy(graph) -> Hierarchy:
    """The graph's hierarchy, built once per graph and kept with it (``Graph.cached``).

    ``pipeline.hierarchy.load_hierarchy`` fills the same slot from the on-disk cache, so
    a worker that loads it first never builds it again.
    """
    return graph.cached(CACHE_KEY, lambda: build_hierarchy(graph))


#: What each backend's ``phast`` suggests instead when it refuses a graph
#: (:func:`refusal`'s ``ineligible`` and ``fallback``).
#: ``study``: a study's plan, which does not know its workers' backend yet and has no
#: ``force`` to offer (``fallback`` None: no force advice).
ADVICE = {"gpu": {"ineligible": "use method='batched' (or 'auto')", "fallback": "batched"},
          "cpu": {"ineligible": "use dijkstra (or bellman-ford) instead", "fallback": "dijkstra"},
          "study": {"ineligible": f"choose another {opt('--algorithm')} (auto picks one that can)", "fallback": None},
          # sssp bench and sssp verify, which skip it (their option is --algorithms /
          # --methods: "use --method dijkstra" named one they do not have)
          "skip": {"ineligible": "left out here (Python's solve(..., method='phast', force=True) builds a hierarchy "
                                 "anyway)", "fallback": None}}


def refusal(graph, *, hierarchy=None, force: bool = False, ineligible: str, fallback: str | None) -> str | None:
    """Why ``phast`` refuses ``graph`` (one line), or ``None`` when it solves it.

    The one rule, for the GPU and the CPU ``phast`` and for every caller that asks
    beforehand (``kernels.registry.Method.unsuitable``: ``solve``, ``sssp solve``,
    ``sssp verify``, ``sssp bench``, a study's plan): a graph that is not :func:`eligible`
    (``"phast: <reason>; <ineligible>"``), or one that does not look road-like
    (:func:`structure`), holds no hierarchy and was given none, without ``force``
    (contracting it may take very long; ``fallback`` names the method to use, or None
    where ``force`` cannot be given: ``ineligible`` then ends that message too).
    """
    why = eligible(graph)
    if why is not None:
        return f"phast: {why}; {ineligible}"
    if hierarchy is None and not force and not has_hierarchy(graph):
        shape = structure(graph)
        if shape is not None and fallback is None:
            return f"phast: {shape}; contracting it may take very long: {ineligible}"
        if shape is not None:
            return (f"phast: {shape}; contracting it may take very long: "
                    + opt(f"use --method {fallback} (or auto); only Python's solve(..., method='phast', "
                          "force=True) builds its hierarchy anyway",
                          python=f"use method='{fallback}' (or 'auto'), or pass force=True to build its "
                          "hierarchy anyway"))
    return None


def check_phast(graph, *, hierarchy=None, force: bool = False, ineligible: str, fallback: str) -> None:
    """Refuse a ``phast`` call the GPU and CPU methods both refuse (:func:`refusal`).

    Raises
    ------
    kernels.errors.UsageError
        (a ``ValueError``) The reason, one line: the command line prints it and exits 2.
    """
    why = refusal(graph, hierarchy=hierarchy, force=force, ineligible=ineligible, fallback=fallback)
    if why is not None:
        from gpu_sssp.kernels.errors import UsageError

        raise UsageError(why)


def has_hierarchy(graph) -> bool:
    """Whether the graph already holds its hierarchy (built or loaded, no work needed)."""
    return CACHE_KEY in graph._derived


def build_hierarchy(graph) -> Hierarchy:
    """Contract ``graph`` with RoutingKit and lay the hierarchy out for sweeps.

    Parameters
    ----------
    graph : kernels.graph.Graph

    Returns
    -------
    Hierarchy

    Raises
    ------
    ValueError
        The graph is not eligible (:func:`eligible` names why), or a hierarchy weight
        reached RoutingKit's infinity.
    ImportError
        ``routingkit_ch`` (the ``ch-router`` wheel) is not installed.
    OSError
        No room in the temporary folder for RoutingKit's hierarchy file (``TMPDIR``).
    """
    why = eligible(graph)
    if why is not None:
        raise ValueError(why)
    import routingkit_ch

    shape = structure(graph)
    if shape is not None:  # named explicitly on such a graph: say why it may take long
        log.warning("contracting a graph that does not look road-like may take very long or "
                    "blow up: %s", shape)
    if int(routingkit_ch.INF_WEIGHT) != INF_WEIGHT:  # pragma: no cover - a changed library
        raise ValueError(f"routingkit_ch.INF_WEIGHT is {routingkit_ch.INF_WEIGHT}, expected {INF_WEIGHT}")
    n = graph.n
    tails = graph.tails().astype(np.uint32)
    heads = graph.indices.astype(np.uint32)
    # parallel arcs and self-loops are handled by RoutingKit (the lightest parallel arc is
    # kept, loops are dropped; checked against SciPy in the tests)
    # eligible() bounds the paths, so every arc but a self-loop (which RoutingKit drops, and
    # a 1-vertex graph may carry at any weight) fits; never wrap a weight into uint32
    loop = heads == tails
    w = np.where(loop, 0, graph.weights)
    if graph.m and int(w.max()) > WEIGHT_BOUND:
        raise ValueError(f"{graph.name}: weight {int(w.max())} beyond the hierarchy's uint32 weights")
    weights = w.astype(np.uint32)
    long = graph.m >= 200_000
    if long:
        log.info("building the contraction hierarchy of %s (%d vertices, %d arcs) with %s; "
                 "about %.0f s (NY's 730,100 arcs: 4.5-13 s)", graph.name, n, graph.m,
                 library_version(), graph.m * 12e-6)
    t0 = time.perf_counter()
    done = threading.Event()
    if long:  # RoutingKit releases the GIL while it contracts: a heartbeat can log
        def heartbeat():
            while not done.wait(PROGRESS_EVERY_S):
                log.info("... still contracting %s (%.0f s)", graph.name, time.perf_counter() - t0)

        threading.Thread(target=heartbeat, name="ch-progress", daemon=True).start()
    def contract():
        with _native_call():
            return routingkit_ch.ContractionHierarchy.build(n, tails, heads, weights)

    try:
        ch = _stoppable(contract, f"contraction of {graph.name}")
    finally:
        done.set()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    fd, tmp = tempfile.mkstemp(prefix="sssp-ch-", suffix=".bin")
    os.close(fd)
    try:
        try:
            with _native_call():
                ch.save(tmp)  # RoutingKit's binding hands its hierarchy over only as a file
        except RuntimeError as exc:  # "std::ostream::write failed ...": no room there
            raise OSError(f"could not write the contraction hierarchy of {graph.name} to a temporary file "
                          f"in {os.path.dirname(tmp)} ({exc}): free space there or point TMPDIR to a "
                          "folder with room") from exc
        with open(tmp, "rb") as fh:
            raw = fh.read()
    finally:
        os.unlink(tmp)
    del ch
    rank, fwd, bwd = parse_routingkit(raw, n)
    h = layout(rank, fwd, bwd, build_s=build_s, library=library_version(),
               fingerprint=graph.fingerprint)
    h = _with_layout_time(h, time.perf_counter() - t1)
    if long:
        log.info("hierarchy of %s: %.1f s contraction, %d levels, %d up / %d down arcs",
                 graph.name, build_s, h.levels, h.m_up, h.m_down)
    return h


def _stoppable(fn, what: str):
    """``fn()``, stoppable by a Ctrl-C when called from the main thread.

    RoutingKit contracts without the GIL and without looking at signals: a Ctrl-C (or a
    SIGTERM the command line turns into one) waited for the whole contraction (BAY 6 s,
    FLA 12-16 s, minutes for a continent).  From the main thread ``fn`` runs in a daemon
    thread, waited for in short steps, so that the interrupt is raised at once; the
    abandoned contraction runs on to its end in the background (its result dropped);
    ``sssp`` then ends its process at once, where another program's exit waits for it
    (:func:`native_calls_abandoned`, :func:`_wait_for_native_calls`).  Other threads call
    ``fn`` directly."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            with _NATIVE:
                box["ended"] = True
                _abandoned.discard(threading.get_ident())

    t = threading.Thread(target=run, name=f"sssp-{what}"[:60], daemon=True)
    try:
        t.start()  # (a Ctrl-C may land in start() itself, the call already running)
        while t.is_alive():
            t.join(0.1)
    except BaseException:  # interrupted: left to run on, not waited for by sssp's exit
        with _NATIVE:  # (not is_alive(): an interrupted join may have marked it stopped)
            if "ended" not in box and t.ident is not None:
                _abandoned.add(t.ident)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def _with_layout_time(h: Hierarchy, s: float) -> Hierarchy:
    from dataclasses import replace

    return replace(h, layout_s=s)


def parse_routingkit(raw: bytes, n: int):
    """Arrays of a RoutingKit contraction hierarchy file.

    Returns
    -------
    rank : ndarray of uint32, shape (n,)
        Vertex -> rank.
    fwd, bwd : tuple (first_out, head, weight)
        The forward and backward upward graphs, vertex ids = ranks.

    Raises
    ------
    ValueError
        A header or length that does not match the format.
    """
    if len(raw) < 24:
        raise ValueError(f"RoutingKit hierarchy: {len(raw)} bytes, shorter than its header")
    magic, nodes, m_f, m_b = struct.unpack_from("<QIII", raw, 0)
    if magic != _MAGIC:
        raise ValueError(f"RoutingKit hierarchy: magic {magic:#x}, expected {_MAGIC:#x}")
    if nodes != n:
        raise ValueError(f"RoutingKit hierarchy: {nodes} vertices, expected {n}")
    expect = 24 + 4 * n
    for m in (m_f, m_b):
        expect += 4 * (n + 1) + 4 * m * 4 + ((m + 511) // 512) * 64
    if len(raw) != expect:
        raise ValueError(f"RoutingKit hierarchy: {len(raw)} bytes, expected {expect}")
    off = 24

    def take(count):
        nonlocal off
        a = np.frombuffer(raw, dtype="<u4", count=count, offset=off)
        off += 4 * count
        return a

    rank = take(n)
    graphs = []
    for m in (m_f, m_b):
        first_out, head, weight = take(n + 1), take(m), take(m)
        off += ((m + 511) // 512) * 64 + 8 * m  # shortcut bits and the two shortcut arc ids
        graphs.append((first_out, head, weight))
    return rank, graphs[0], graphs[1]


def _levels_numba():
    from numba import njit

    @njit(cache=True)
    def levels_by_rank(n, f_first, f_head, b_first, b_head):
        lvl = np.zeros(n, dtype=np.int32)
        for x in range(n - 1, -1, -1):
            best = -1
            for a in range(f_first[x], f_first[x + 1]):
                if lvl[f_head[a]] > best:
                    best = lvl[f_head[a]]
            for a in range(b_first[x], b_first[x + 1]):
                if lvl[b_head[a]] > best:
                    best = lvl[b_head[a]]
            lvl[x] = best + 1
        return lvl

    return levels_by_rank


_LEVELS = None


def layout(rank, fwd, bwd, *, build_s: float, library: str, fingerprint: str = "") -> Hierarchy:
    """A :class:`Hierarchy` from RoutingKit's arrays (see :func:`parse_routingkit`).

    Raises
    ------
    ValueError
        Arrays that are not a hierarchy (rank not a permutation, an arc that does not go
        up in rank, a weight at RoutingKit's infinity).
    """
    global _LEVELS
    n = int(len(rank))
    rank = np.asarray(rank, dtype=np.int64)
    if n and not np.array_equal(np.sort(rank), np.arange(n)):
        raise ValueError("RoutingKit hierarchy: rank is not a permutation")
    for name, (first, head, weight) in (("forward", fwd), ("backward", bwd)):
        if len(first) != n + 1 or first[0] != 0 or first[-1] != len(head) or np.any(np.diff(first.astype(np.int64)) < 0):
            raise ValueError(f"RoutingKit hierarchy: bad {name} first_out")
        tail_rank = np.repeat(np.arange(n, dtype=np.int64), np.diff(first.astype(np.int64)))
        if len(head) and int(head.max()) >= n:  # read out of bounds by the level pass (Numba)
            raise ValueError(f"RoutingKit hierarchy: a {name} arc head {int(head.max())} beyond {n - 1}")
        if len(head) and np.any(head.astype(np.int64) <= tail_rank):
            raise ValueError(f"RoutingKit hierarchy: a {name} arc does not go up in rank")
        if len(weight) and int(weight.max()) >= INF_WEIGHT:
            raise ValueError(f"RoutingKit hierarchy: a {name} weight reached INF_WEIGHT {INF_WEIGHT}")
    if _LEVELS is None:
        _LEVELS = _levels_numba()
    lvl_rank = _LEVELS(n, fwd[0].astype(np.int64), fwd[1].astype(np.int64),
                       bwd[0].astype(np.int64), bwd[1].astype(np.int64))
    level = lvl_rank[rank]  # by vertex
    order = np.lexsort((np.arange(n), level)).astype(np.int32)
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    n_levels = int(level.max()) + 1 if n else 0
    level_ptr = np.zeros(n_levels + 1, dtype=np.int64)
    np.cumsum(np.bincount(level, minlength=n_levels), out=level_ptr[1:])
    vertex_of_rank = np.empty(n, dtype=np.int64)
    vertex_of_rank[rank] = np.arange(n)
    pos_of_rank = position[vertex_of_rank].astype(np.int64)

    def csr(by, other, weight):
        # CSR keyed by ``by`` (positions), rows sorted by ``other``
        o = np.lexsort((other, by))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(by, minlength=n), out=indptr[1:])
        return indptr, other[o].astype(np.int32), np.ascontiguousarray(weight[o], dtype=np.uint32)

    f_tail = pos_of_rank[np.repeat(np.arange(n), np.diff(fwd[0].astype(np.int64)))]
    f_head = pos_of_rank[fwd[1].astype(np.int64)]
    up_indptr, up_head, up_weight = csr(f_tail, f_head, fwd[2])
    # backward arc x -> y (ranks) is the original arc y -> x: a downward arc into x
    b_head = pos_of_rank[np.repeat(np.arange(n), np.diff(bwd[0].astype(np.int64)))]
    b_tail = pos_of_rank[bwd[1].astype(np.int64)]
    down_indptr, down_tail, down_weight = csr(b_head, b_tail, bwd[2])
    return Hierarchy(n=n, order=order, position=position, level_ptr=level_ptr,
                     up_indptr=up_indptr, up_head=up_head, up_weight=up_weight,
                     down_indptr=down_indptr, down_tail=down_tail, down_weight=down_weight,
                     weight_bound=WEIGHT_BOUND, build_s=float(build_s), library=library,
                     fingerprint=fingerprint)


def check_hierarchy(h: Hierarchy) -> None:
    """Raise ``ValueError`` unless ``h``'s arrays are consistent (shapes, dtypes, the
    permutation, levels strictly decreasing along up arcs and increasing along down arcs).
    Cheap (a few passes over the arrays); run on every hierarchy read from a file."""
    n = h.n
    for name in Hierarchy.ARRAYS:
        a = getattr(h, name)
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            raise ValueError(f"hierarchy: {name} is not a 1-D array")
    want = {"order": (np.int32, n), "position": (np.int32, n), "up_indptr": (np.int64, n + 1),
            "down_indptr": (np.int64, n + 1)}
    for name, (dt, ln) in want.items():
        a = getattr(h, name)
        if a.dtype != dt or a.shape != (ln,):
            raise ValueError(f"hierarchy: {name} has dtype {a.dtype} shape {a.shape}, expected {np.dtype(dt)} ({ln},)")
    if h.level_ptr.dtype != np.int64 or h.level_ptr.ndim != 1 or len(h.level_ptr) < 1 or h.level_ptr[0] != 0 \
            or h.level_ptr[-1] != n or np.any(np.diff(h.level_ptr) < 0):
        raise ValueError("hierarchy: bad level_ptr")
    if np.any(np.diff(h.level_ptr) == 0):  # a built one has none: a vertex's level is 1 + a neighbour's
        # the GPU sweep launches kernels per level: a file of 8-byte empty levels was
        # millions of launches a batch
        raise ValueError(f"hierarchy: {int(np.sum(np.diff(h.level_ptr) == 0)):,} empty level(s) in level_ptr")
    for name in ("order", "position"):  # indices into each other: in range first
        a = getattr(h, name)
        if n and (int(a.min()) < 0 or int(a.max()) >= n):
            raise ValueError(f"hierarchy: {name} holds a value outside 0..{n - 1}")
    if n and (not np.array_equal(h.position[h.order], np.arange(n))):
        raise ValueError("hierarchy: position is not the inverse of order")
    lv = h.level_of_position()
    for name, ptr, other, w in (("up", h.up_indptr, h.up_head, h.up_weight),
                                ("down", h.down_indptr, h.down_tail, h.down_weight)):
        m = len(other)
        if ptr[0] != 0 or ptr[-1] != m or np.any(np.diff(ptr) < 0):
            raise ValueError(f"hierarchy: bad {name}_indptr")
        if other.dtype != np.int32 or w.dtype != np.uint32 or len(w) != m:
            raise ValueError(f"hierarchy: bad {name} arc arrays")
        if m:
            if int(other.min()) < 0 or int(other.max()) >= n:
                raise ValueError(f"hierarchy: a {name} arc end out of range")
            if int(w.max()) >= INF_WEIGHT:
                raise ValueError(f"hierarchy: a {name} weight at RoutingKit's infinity")
            row = np.repeat(np.arange(n), np.diff(ptr))
            if np.any(lv[other] >= lv[row]):
                raise ValueError(f"hierarchy: a {name} arc does not come from a smaller level")


def check_covers(h: Hierarchy, graph) -> None:
    """Raise ``ValueError`` unless every arc ``u -> v`` of ``graph`` (self-loops aside) is
    an arc of ``h`` between the same vertices (upward from ``u`` when ``v`` has the smaller
    level, else downward into ``v``) weighing at most the arc's weight.

    Contraction keeps every arc of the graph (the lightest of parallel ones), so a
    hierarchy built for ``graph`` always passes; one whose arrays are consistent
    (:func:`check_hierarchy`) but whose vertices were shuffled, or that was made for
    another graph of as many vertices, does not, and would give wrong distances.  A
    necessary condition, not a proof (shortcuts are not checked); ``O(m log m)``, run on
    every hierarchy read from a file, after :func:`check_hierarchy`; then
    :func:`check_derived` (no hierarchy arc lighter than a walk it stands for).
    """
    n = h.n
    if graph.n != n:
        raise ValueError(f"hierarchy: {n} vertices, the graph has {graph.n}")
    u, v = graph.tails().astype(np.int64), graph.indices.astype(np.int64)
    keep = u != v
    pu, pv = h.position[u[keep]].astype(np.int64), h.position[v[keep]].astype(np.int64)
    w = graph.weights[keep]
    lv = h.level_of_position()
    up = lv[pv] < lv[pu]
    for name, sel, ptr, other, hw, row, end in (
            ("up", up, h.up_indptr, h.up_head, h.up_weight, pu, pv),
            ("down", ~up, h.down_indptr, h.down_tail, h.down_weight, pv, pu)):
        # the layout sorts each row by its other end: row * n + other ascends
        keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr)) * n + other.astype(np.int64)
        if len(keys) > 1 and np.any(keys[1:] < keys[:-1]):
            raise ValueError(f"hierarchy: {name} arcs not sorted within their rows")
        q = row[sel] * n + end[sel]
        if not len(q):
            continue
        i = np.minimum(np.searchsorted(keys, q), max(len(keys) - 1, 0))
        ok = (keys[i] == q) & (hw[i].astype(np.int64) <= w[sel]) if len(keys) else np.zeros(len(q), bool)
        if not ok.all():
            j = int(np.flatnonzero(sel)[np.argmin(ok)])
            a, b = int(u[keep][j]), int(v[keep][j])
            raise ValueError(f"hierarchy: the graph's arc {a} -> {b} (0-based, weight {w[j]}) has no {name} arc "
                             "of at most that weight in it (a hierarchy of another graph, or its vertices shuffled)")
    check_derived(h, graph)


def check_given(h: Hierarchy, graph) -> None:
    """Check a hierarchy given to ``phast`` (``hierarchy=``) that names no graph (no
    fingerprint: made by hand, or by :func:`layout`) against ``graph`` as a cache file
    is (:func:`check_hierarchy`, :func:`check_covers`): another graph's hierarchy of as
    many vertices answered wrong.  ``ValueError`` in ``phast``'s words."""
    try:
        check_hierarchy(h)
        check_covers(h, graph)
    except ValueError as exc:
        raise ValueError(f"phast: the hierarchy given is not one of {graph.name}: {exc}") from None


def _derived_numba():
    # (in a module of its own, at its top level: defined in here, the function that
    # calls ``find`` missed numba's on-disk cache in every new process, 1.7 s of
    # compilation each time a hierarchy was loaded, rome99's included)
    from gpu_sssp.kernels._derived_jit import lightest

    return lightest


_DERIVED = None
#: check_derived's bound on the pairs it looks at (with 256 per hierarchy arc): about a
#: second or two; a road network's hierarchy makes 1.6 pairs per arc (NY: 2.2 million)
MAX_DERIVED_PAIRS = 2**28


def check_derived(h: Hierarchy, graph) -> None:
    """Raise ``ValueError`` unless every arc of ``h`` weighs at least a walk of ``graph``
    between its ends: the graph's lightest arc between them, or an arc into and an arc out
    of a vertex ``x`` of a larger level (lower rank) than both, as contraction makes a
    shortcut when it removes ``x``.

    Contraction only ever sets an arc's weight to one of these (the original arc, or the
    sum of two arcs of the contracted vertex, which are final by then), so a hierarchy
    built for ``graph`` always passes; by induction from the bottom level up, a hierarchy
    that passes has no arc lighter than the real distance between its ends, so ``phast``
    never answers a distance that is too small (a shortcut weight made smaller in a cache
    file gave silently wrong, too small distances).  Not checked: that no shortcut is
    missing or too heavy (distances too large), which needs the witness searches of the
    contraction itself.  Needs :func:`check_hierarchy` first (levels, ends in range, rows
    sorted: :func:`check_covers`); one pass over each vertex's in x out hierarchy arcs
    (the pairs its contraction looked at), with a binary search each.
    """
    global _DERIVED
    n = h.n
    if not n or not (h.m_up or h.m_down):
        return
    pairs = float(np.dot(np.diff(h.down_indptr).astype(np.float64), np.diff(h.up_indptr).astype(np.float64)))
    if pairs > MAX_DERIVED_PAIRS + 256.0 * (h.m_up + h.m_down):
        # a file of a few MB giving one vertex 10^5 arcs in and out was 10^10 steps here
        raise ValueError(f"hierarchy: its vertices' arcs in x arcs out make {pairs:,.0f} pairs, beyond "
                         f"{MAX_DERIVED_PAIRS:,} + 256 a hierarchy arc (NY: 1.6 an arc)")
    if _DERIVED is None:
        _DERIVED = _derived_numba()
    lv = h.level_of_position().astype(np.int64)
    u, v = graph.tails().astype(np.int64), graph.indices.astype(np.int64)
    keep = u != v
    gu, gv = h.position[u[keep]].astype(np.int64), h.position[v[keep]].astype(np.int64)
    gw = graph.weights[keep].astype(np.int64)
    up_best, down_best = _DERIVED(n, lv, h.up_indptr, h.up_head, h.up_weight, h.down_indptr, h.down_tail,
                                  h.down_weight, gu, gv, gw)
    for name, ptr, other, w, best in (("up", h.up_indptr, h.up_head, h.up_weight, up_best),
                                      ("down", h.down_indptr, h.down_tail, h.down_weight, down_best)):
        bad = w.astype(np.int64) < best
        if bad.any():
            k = int(np.argmax(bad))
            row = int(np.searchsorted(ptr, k, side="right") - 1)
            a, b = (row, int(other[k])) if name == "up" else (int(other[k]), row)
            how = "no walk of the graph" if best[k] >= (1 << 62) else f"at least {int(best[k])}"
            raise ValueError(f"hierarchy: its {name} arc {int(h.order[a])} -> {int(h.order[b])} (0-based) weighs "
                             f"{int(w[k])}, below every walk it can stand for ({how}): a shortcut weight "
                             "changed, or a hierarchy of another graph")


#: Structure rule (:func:`structure`): the largest in/out degree a road-like graph has.
MAX_DEGREE = 64
#: ... and the smallest hop depth of its largest component, in units of sqrt(size).
MIN_DEPTH_RATIO = 0.25
#: Graphs this small are contracted quickly whatever their structure.
SMALL_GRAPH = 256


def structure(graph) -> str | None:
    """``None`` when the graph looks like one whose hierarchy stays small (road networks,
    meshes, grids, geometric graphs), else the reason it does not (one line).

    Contraction hierarchies stay small on graphs with small separators and blow up on
    power-law and expander graphs (measured with RoutingKit on the 2-core development
    machine: NY 264k vertices 10 s, delaunay_n15 7 s, rgg_n_2_15 11 s, a 200 x 200 grid
    6 s; RMAT 2^14 with 130k arcs still contracting after 4 minutes; a random graph of
    2,048 vertices and mean degree 4: 27 s, 4.6 x as many hierarchy arcs as arcs).  The
    rule: in/out degree at most ``MAX_DEGREE`` (hubs: RMAT 2^14 has 122) and, from a
    double sweep of breadth-first searches in the largest weak component of ``c``
    vertices, a hop depth of at least ``MIN_DEPTH_RATIO * sqrt(c)`` (planar-like graphs
    have depth ~sqrt(c): NY 1.3 x sqrt(c); expanders ~log c).  Computed once per graph.
    """
    return graph.cached("hierarchy-structure", lambda: _structure(graph))


def scattered(graph) -> bool:
    """Whether no weak component of ``graph`` (of more than ``SMALL_GRAPH`` vertices) has
    more than ``SMALL_GRAPH`` vertices - no arcs at all included: each source then
    reaches at most that many vertices, Dijkstra's whole work, where a hierarchy sweep
    covers every vertex.  ``auto`` takes no ``phast`` there (it chose it on 100M isolated
    vertices: a 2.4 GB hierarchy and 100 s for one source, 16 s with Dijkstra); a
    ``phast`` asked for by name still runs (:func:`structure` leaves such graphs alone)."""
    if graph.n <= SMALL_GRAPH:
        return False
    if not graph.m:
        return True
    import scipy.sparse.csgraph as csg

    comp = graph.cached("weak-components", lambda: csg.connected_components(
        graph.pattern(np.float64), directed=True, connection="weak")[1])
    return int(np.bincount(comp).max()) <= SMALL_GRAPH


def _structure(graph) -> str | None:
    import scipy.sparse.csgraph as csg

    n = graph.n
    if n <= SMALL_GRAPH or not graph.m:
        return None
    deg = int(max(graph.out_degree().max(), graph.in_degree().max()))
    if deg > MAX_DEGREE:
        return f"{graph.name}: a vertex of degree {deg} > {MAX_DEGREE} (hubs make a hierarchy blow up)"
    pattern = graph.pattern(np.float64)
    comp = graph.cached("weak-components",
                        lambda: csg.connected_components(pattern, directed=True, connection="weak")[1])
    sizes = np.bincount(comp)
    big = int(np.argmax(sizes))
    c = int(sizes[big])
    if c <= SMALL_GRAPH:
        return None
    start = int(np.argmax(comp == big))
    depth = 0
    for _ in range(2):  # double sweep: the second search starts at the farthest vertex
        hops = csg.shortest_path(pattern, method="D", directed=False, unweighted=True, indices=start)
        fin = np.isfinite(hops)
        depth = int(hops[fin].max())
        start = int(np.argmax(np.where(fin, hops, -1)))
    if depth < MIN_DEPTH_RATIO * math.sqrt(c):
        return (f"{graph.name}: hop depth {depth} in a component of {c} vertices, below "
                f"{MIN_DEPTH_RATIO} x sqrt({c}) (small-world graphs make a hierarchy blow up)")
    return None
