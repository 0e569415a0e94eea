"""Planning a study: its options validated and its sources split into batches (no cluster)."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpu_sssp.kernels.memory import fmt_bytes  # noqa: F401  (re-exported)
from gpu_sssp.kernels.errors import comma_items, counted, opt
from gpu_sssp.pipeline.config import setting
from gpu_sssp.pipeline.errors import BatchError, StudyError  # noqa: F401  (re-exported)
from gpu_sssp.pipeline.fsnames import is_parquet_name
from gpu_sssp.pipeline.sources import SourcePlan
from gpu_sssp.pipeline.study import matrix as _matrix
from gpu_sssp.pipeline.writers import batch_name

OUTPUTS = ("stats", "distances", "predecessors")
FORMS = ("long", "wide")
FORMAT_VERSION = 1




def workers_backend(devices) -> str | None:
    """The backend a cluster's workers share: ``"cpu"`` when every device is ``cpu``,
    ``"gpu"`` when none is, ``None`` when there are none or both kinds (decided per task)."""
    devices = list(devices or [])
    if devices and all(d == "cpu" for d in devices):
        return "cpu"
    if devices and all(d != "cpu" for d in devices):
        return "gpu"
    return None


def describe_batches(batches) -> str:
    """The batches' count and sizes in words: ``1 batch of 20``, ``2 batches of 50``,
    ``4 batches of 31-64`` (the smallest and the largest)."""
    sizes = [len(b) for b in batches]
    if not sizes:
        return "no batches"
    lo, hi = min(sizes), max(sizes)
    of = f"{hi:,}" if lo == hi else f"{lo:,}-{hi:,}"
    return f"{counted(len(sizes), 'batch', 'batches')} of {of}"


def distance_bytes(n_sources: int, n_vertices: int, form: str, predecessors: bool) -> int:
    """Uncompressed size of the distance outputs (an upper bound: every vertex reached).

    Long form: 32 bytes a row (source, vertex, distance, predecessor as 8-byte
    columns).  Wide form: 8 bytes per (source, vertex) distance, 8 more with
    predecessors (plus the small ``vertex`` column).

    Parameters
    ----------
    n_sources, n_vertices : int
        Size of the study.
    form : {"long", "wide"}
        Distance layout; anything other than ``"long"`` is costed as wide.
    predecessors : bool
        Whether predecessors are written too (wide form only; the long form's
        estimate always includes the predecessor column).

    Returns
    -------
    int
        Bytes, before compression.
    """
    cells = int(n_sources) * int(n_vertices)
    if form == "long":
        return cells * 32
    return cells * (16 if predecessors else 8) + int(n_vertices) * 8


def distance_limit(max_distance_bytes) -> int:
    """The distance-output limit in bytes: ``max_distance_bytes`` (a number or a size, as
    ``--max-distance-bytes`` takes), else the setting ``sssp.study.max-distance-bytes``.

    Raises
    ------
    UsageError
        A value that is no number of bytes nor a size (also where no output would use
        it: ``study(max_distance_bytes=1.5)`` of statistics alone was taken).
    """
    if max_distance_bytes is None:
        return setting("study.max-distance-bytes")  # checked and converted: bytes
    from gpu_sssp.kernels.memory import parse_bytes

    try:
        return parse_bytes(max_distance_bytes)
    except ValueError:
        from gpu_sssp.kernels.errors import UsageError

        raise UsageError(f"max_distance_bytes: expected a number of bytes or a size (20e9, 300GB), "
                         f"got {max_distance_bytes!r}") from None


def check_output_size(estimate: int, max_distance_bytes, what: str, detail: str, advice: str, *,
                      option: str = opt("--max-distance-bytes {estimate}", python="max_distance_bytes={estimate}"),
                      error=StudyError,
                      at_least: bool = False) -> None:
    """Refuse outputs estimated above ``--max-distance-bytes`` (dask config
    ``sssp.study.max-distance-bytes``): distance vectors and travel-time matrices alike,
    for a study and for ``gpu_sssp.matrix``.  ``what`` names them (``"distance outputs"``),
    ``detail`` the sizes behind the estimate, ``advice`` ends the message (what else to
    choose); ``option`` is how the caller raises the limit (``{estimate}`` filled in) and
    ``error`` the exception raised; ``at_least``: ``estimate`` is a lower bound (outputs
    counted before all their parts are known: a targets file still being read)."""
    limit = distance_limit(max_distance_bytes)
    if estimate > limit:
        how = option.format(estimate=estimate)
        size, cap = fmt_bytes(estimate), fmt_bytes(limit)
        if size == cap:  # "11.2 KB ..., above the limit of 11.2 KB": the bytes themselves
            size, cap = f"{estimate:,} bytes", f"{int(limit):,} bytes"
        raise error(
            f"{what} would take {'at least' if at_least else 'up to'} {size} ({detail}), above the limit of {cap}; "
            f"raise it with {how} (or dask config sssp.study.max-distance-bytes), "
            f"{advice}")


@dataclass
class StudyPlan:
    """Everything a study needs before a cluster is involved.

    Build it with :func:`plan_study`.
    """

    graph: object
    graph_path: str
    sources: SourcePlan
    algorithm: str
    batch_size: int | None  # None until the cluster's workers are known (resolve_batch_size)
    outputs: tuple
    distance_form: str
    out: Path
    distance_estimate: int = 0
    batches: list = field(default_factory=list)
    input_path: str = ""
    # a matrix study (pipeline.study.matrix): its targets, and how its stats are taken
    targets: object = None
    stats_over: str = "vertices"
    matrix_form: str = "wide"
    # the workers the batches were laid out for (pipeline.sources.make_batches): 1 for the
    # plain split, and whenever the layout for the cluster's workers is that split anyway
    batch_workers: int = 1
    # the id of the study this plan solves for, where its algorithm was pinned for a
    # resume (pipeline.study.run._resumed_method: an ``auto`` study goes on with the method
    # of its finished batches): its identity still says ``auto``, so its files, task keys
    # and reports keep the folder's id (a hash of ``phast`` named another study, whose
    # files every later resume solved again)
    study_id_of: str = ""
    # the batch size is dask config's (sssp.study.batch-size), not an argument: it counts
    # for a new study, but a resume keeps the folder's batches, as with no batch size (Study)
    batch_from_setting: bool = False

    @property
    def batch_size_given(self) -> bool:
        """Whether the batch size was given as an argument (``--batch-size``,
        ``batch_size=``): what a resume compares with the folder's instead of taking the
        folder's (:class:`pipeline.study.folder.Study`).  One from dask config is not."""
        return self.batch_size is not None and not self.batch_from_setting

    @property
    def identity(self) -> dict:
        """What must match for a resume: graph, sources, algorithm, batching, outputs."""
        return {
            "format": FORMAT_VERSION,
            "graph_fingerprint": self.graph.fingerprint,
            "sources_digest": self.sources.digest(),
            "sources_count": self.sources.count,
            "algorithm": self.algorithm,
            "batch_size": self.batch_size,
            # only where the layout differs from the plain split (older folders resume)
            **({"batch_workers": self.batch_workers} if self.batch_workers > 1 else {}),
            "outputs": list(self.outputs),
            "distance_form": self.distance_form,
            **_matrix.identity(self),
        }

    @property
    def study_id(self) -> str:
        if self.study_id_of:
            return self.study_id_of
        return hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:16]

    def set_batch_size(self, batch_size: int, workers: int = 1) -> None:
        """Fix the batch size (and so the batches); see :func:`default_batch_size`.
        ``workers``: lay the batches out for that many workers (full batches in a
        multiple of them, the rest spread over up to that many, as
        :func:`pipeline.sources.make_batches`)."""
        batch_size = int(batch_size)
        if batch_size < 1:
            raise StudyError(f"{opt('--batch-size')} must be at least 1, got {batch_size}")
        workers = max(1, int(workers))
        batches = self.sources.batches(batch_size, workers, self.merge_tail)
        if workers > 1 and [len(b) for b in batches] == [len(b) for b in self.sources.batches(batch_size)]:
            workers = 1  # the same batches as the plain split: the identity of old folders
        self.batch_size = batch_size
        self.batch_workers = workers
        self.batches = batches

    @property
    def merge_tail(self) -> bool:
        """Whether the rest's small parts may join the last full batches (up to 1.5 batch
        sizes, :func:`pipeline.sources.make_batches`): for statistics only; a batch of
        distance rows or of a matrix keeps within the batch size (its memory)."""
        return self.targets is None and not ({"distances", "predecessors"} & set(self.outputs))

    @property
    def batch_folders(self) -> tuple:
        """The folders each batch writes a file in, in writing order (:func:`batch_folders`)."""
        return batch_folders(self.outputs, self.distance_form, self.targets is not None)

    def batch_files(self, index: int) -> list[str]:
        """The files batch ``index`` writes, relative to the folder, in writing order
        (statistics last), e.g. ``["distances/batch-000005.parquet",
        "stats/batch-000005.parquet"]``: what a resume checks before it counts a batch
        done (``pipeline.study.folder.Study``)."""
        name = batch_name(index)
        return [f"{d}/{name}" for d in self.batch_folders]

    @property
    def distance_folders(self) -> tuple:
        """The folders of distance rows a study without targets writes (as
        ``pipeline.study.task._write_batch`` lays them out): ``distances/`` with distances
        or predecessors (the long form keeps the predecessors there), and in the wide form
        ``predecessors/`` too."""
        return tuple(d for d in self.batch_folders if d in ("distances", "predecessors"))

    def resolve_batch_size(self, devices) -> int:
        """Set the default batch size from the workers' devices (one entry per worker,
        ``pipeline.cluster.worker_devices``) when none was given (and from whether the
        study will sweep a hierarchy there: :meth:`sweeps_hierarchy`), the batches laid
        out for that many workers; a batch size given by the user keeps the plain split."""
        if self.batch_size is None:
            devices = list(devices)
            size = default_batch_size(self.algorithm, devices, phast=self.sweeps_hierarchy(devices),
                                      sources=self.sources.count)
            if self.targets is not None:  # a batch's matrix within sssp.study.chunk-bytes
                size = min(size, _matrix.batch_cap(self.targets.count))
            self.set_batch_size(size, workers=len(devices))
        return self.batch_size

    def sweeps_hierarchy(self, devices) -> bool:
        """Whether this study sweeps a hierarchy (``phast``) on workers with these devices
        for its statistics (``pipeline.hierarchy.study_uses_phast``, decided before the
        hierarchy exists), which gives it the larger ``PHAST_*_BATCH_SIZE`` batches: not
        with distance rows, on any backend (on GPUs 4,096 sources' rows would not fit the
        device and the chunk beside the labels; on CPU workers a batch's rows are held at
        once: 300 NY sources with predecessors in batches of 150 peaked at 3.4 GB and took 29 s,
        in batches of 64 at 1.7 GB and 18 s)."""
        from gpu_sssp.pipeline.hierarchy import study_uses_phast

        backend = workers_backend(devices) or "auto"
        if {"distances", "predecessors"} & set(self.outputs):
            return False
        try:
            return study_uses_phast(self.graph, self.sources.count, backend, self.algorithm)
        except Exception:  # the solve names what is wrong with the graph
            return False

    def task_key(self, index: int, prefix: str = "sssp") -> str:
        return self.chunk_keys([[index]], prefix)[0]

    def chunk_keys(self, chunks, prefix: str = "sssp") -> list[str]:
        """Task keys of chunks of consecutive batches: ``<prefix>-batch-<first>-<last>-<study
        id>``, e.g. ``phast-batch-000120-000127-3f2a...``.  Dask names a task's prefix and
        group by the key's leading words (``phast-batch``), which is what its dashboard
        shows (progress bars, task stream); the numbers name the batches, the study id (a
        digest of every source, computed once here: per key it made submitting all of NY's
        517 batches take 0.6 s) keeps two studies apart."""
        sid = self.study_id
        return [f"{prefix}-batch-{int(c[0]):06d}-{int(c[-1]):06d}-{sid}" for c in chunks]


_MATRIX_FORMS = opt("--matrix-form wide|long", python="matrix_form='wide' or 'long'")


def refuse_idle_distance_form(distance_form, outputs, matrix: bool) -> None:
    """Refuse a distance form asked for (not the setting's) where no distance file is
    written (the one rule of ``sssp study --distance-form`` and ``study(distance_form=)``,
    which took it without a word)."""
    if distance_form is None or {"distances", "predecessors"} & set(parse_outputs(outputs)):
        return
    if matrix:  # (not a study of statistics only)
        raise StudyError(f"{opt('--distance-form')} goes with {opt('--outputs distances')} or predecessors; a "
                         f"study with targets writes a matrix: its form is "
                         f"{_MATRIX_FORMS}")
    raise StudyError(f"{opt('--distance-form')} goes with {opt('--outputs distances')} or predecessors: a study "
                     "of statistics only writes no distance files")


def batch_folders(outputs, distance_form: str, matrix: bool) -> tuple:
    """The one rule for which files a batch writes: the folders of its files, in writing
    order, ``stats`` last (its statistics file marks the batch written).  A matrix study
    (``matrix``): ``matrix/``; else with distances or predecessors ``distances/`` (the long
    form keeps the predecessors there), in the wide form with predecessors
    ``predecessors/`` too.  Used by ``pipeline.study.task._write_batch`` (which writes
    them), the folder's set-up and its resume checks (``pipeline.study.folder.Study``)."""
    if matrix:
        return (_matrix.MATRIX_DIR, "stats")
    if not {"distances", "predecessors"} & set(outputs):
        return ("stats",)
    if "predecessors" in outputs and distance_form != "long":
        return ("distances", "predecessors", "stats")
    return ("distances", "stats")


def parse_outputs(outputs) -> tuple:
    """``"stats,distances"`` or a sequence -> validated tuple (``stats`` always in)."""
    if outputs is None:
        outputs = ("stats",)
    if isinstance(outputs, str):
        outputs = comma_items(outputs, "--outputs", error=StudyError)
    if not outputs:
        raise StudyError("outputs: no output named; give stats, distances or predecessors (default stats)")
    bad = [o for o in outputs if o not in OUTPUTS]
    if bad:
        raise StudyError(f"unknown output(s) {', '.join(bad)}; choose from {', '.join(OUTPUTS)}")
    return tuple(o for o in OUTPUTS if o in set(outputs) | {"stats"})


def plan_study(graph, graph_path, sources: SourcePlan, *, out, algorithm: str = "auto",
               batch_size: int | None = None, outputs=None, distance_form: str | None = None,
               max_distance_bytes: int | None = None, targets=None, stats_over: str | None = None,
               matrix_form: str | None = None) -> StudyPlan:
    """Validate a study's options and split its sources into batches.

    Parameters
    ----------
    graph : kernels.graph.Graph
        The graph (loaded on the client for planning).
    graph_path : str or os.PathLike
        The input the graph came from.  A Parquet edge list is loaded by the workers
        as it is (it must be readable by every worker under that name); any other
        input is written once to ``<out>/graph.parquet`` for them.
    sources : SourcePlan
    out : path
        Study folder.
    algorithm : str
        ``auto`` or a registered method name.
    batch_size, distance_form, max_distance_bytes : optional
        Default from dask config ``sssp.study.*``.  A batch size of ``None``/``auto``
        is left open until the workers are known (:meth:`StudyPlan.resolve_batch_size`).
        A batch size from the setting ``sssp.study.batch-size`` applies to a new study;
        on a resume the folder's batches are kept (:attr:`StudyPlan.batch_size_given`),
        while a ``batch_size`` given here must lay them out as the folder's do.
    outputs : str or sequence
        Any of ``stats``, ``distances``, ``predecessors`` (``stats`` always written).
    targets : pipeline.targets.TargetPlan, optional
        A matrix study (:mod:`pipeline.study.matrix`): the sources x targets matrix is
        written instead of distances, its size checked against the same limit.
    stats_over, matrix_form : optional
        With ``targets``: ``targets`` (default) or ``all``; ``wide`` (default) or ``long``.
        Refused without ``targets``.

    Raises
    ------
    StudyError
        Unknown algorithm/output/form, a batch size below 1, distance outputs above
        the limit, ``stats_over`` or ``matrix_form`` without ``targets``.
    """
    from gpu_sssp import kernels

    name, at, on = str(algorithm).partition("@")
    if at and name in kernels.available_methods() and on in ("cpu", "gpu"):
        # (solve, verify and bench take NAME@BACKEND; here it was "unknown algorithm")
        raise StudyError(f"{opt('--algorithm ' + str(algorithm))}: a study runs its method on its workers' own "
                         f"backend (GPU workers: the GPU one; {opt('--cpu-workers N')}: the CPU one); give the "
                         f"name alone, {opt('--algorithm ' + name)}, and choose the workers")
    if algorithm != "auto" and algorithm not in kernels.available_methods():
        raise StudyError(f"unknown algorithm {algorithm!r}; available: {', '.join(kernels.available_methods())}")
    # the workers' backend is not known yet: phast's advice is the study's own
    why = kernels.get(algorithm).unsuitable(graph, advice="study") if algorithm != "auto" else None
    if why:
        raise StudyError(why)
    batch_from_setting = batch_size is None
    batch_size = setting("study.batch-size", batch_size)
    if batch_size == "auto":  # resolved from the workers' devices (resolve_batch_size)
        batch_size = None
    outputs = parse_outputs(outputs)
    distance_form = setting("study.distance-form", distance_form)
    if distance_form not in FORMS:
        raise StudyError(f"{opt('--distance-form')} must be 'long' or 'wide', got {distance_form!r}")
    if sources.count == 0:
        raise StudyError("the study has no sources")
    if targets is None:
        _matrix.refuse_without_targets(stats_over, matrix_form)
    estimate = 0
    if targets is not None:
        stats_over, matrix_form, estimate = _matrix.check_plan(
            graph, sources, targets, outputs=outputs, stats_over=stats_over, matrix_form=matrix_form,
            max_distance_bytes=max_distance_bytes)
    elif "distances" in outputs or "predecessors" in outputs:
        estimate = distance_bytes(sources.count, graph.n, distance_form, "predecessors" in outputs)
        check_output_size(estimate, max_distance_bytes, "distance outputs",
                          f"{sources.count:,} sources x {graph.n:,} vertices, {distance_form} form, before compression",
                          "choose fewer sources, or ask only for stats")
    gp = Path(graph_path)
    # a Parquet input is read by the workers as it is; other inputs are written into
    # the study folder by Study.start (after the folder checks)
    plan = StudyPlan(graph=graph, graph_path=os.fspath(gp.resolve()) if is_parquet_name(gp) else "",
                     input_path=os.fspath(gp), sources=sources,
                     algorithm=algorithm, batch_size=None, outputs=outputs,
                     distance_form=distance_form, out=Path(out), distance_estimate=estimate)
    if targets is not None:
        plan.targets, plan.stats_over, plan.matrix_form = targets, stats_over, matrix_form
    if batch_size is not None:
        plan.set_batch_size(batch_size)
        plan.batch_from_setting = batch_from_setting
    return plan


GPU_BATCH_SIZE = 512
CPU_BATCH_SIZE = 64
#: phast studies: a sweep's cost per source falls with the batch (NY, H200: 1.49 / 1.20 /
#: 1.06 / 1.03 us at 1,024 / 2,048 / 4,096 / 8,192 lanes; the kernel splits a batch into
#: sweeps that fit the device, ``kernels.gpu.phast.plan_batches``), and each batch has a
#: fixed cost on the worker's host (its statistics file, 2 ms; its task's round trips).
#: With 4,096-source batches an all-NY study on one H200 spent 11-19% of its kernel time
#: outside kernels, the GPU idle between the tail's one-batch tasks (4.3 ms of sweep each);
#: with 8,192, 5.5% and no idle gaps (``tests/pipeline/turn_trace.py``, 2026-11-22).
PHAST_GPU_BATCH_SIZE = 8192
#: ... but a study of few sources keeps at least two batches per worker (so that no GPU
#: idles while another has the whole study), down to this size
PHAST_GPU_MIN_BATCH_SIZE = 1024
PHAST_CPU_BATCH_SIZE = 256


def default_batch_size(algorithm: str, devices, *, phast: bool = False, sources: int | None = None) -> int:
    """Sources per batch when neither the caller nor the config sets it.

    Decided by what the workers are (``devices``: each worker's device as
    ``pipeline.cluster.describe_cluster`` reports it, ``"cpu"`` for CPU workers), not by
    what the client machine has: a client on a login node attached to GPU workers
    must still give them GPU-sized batches.  GPU workers solve a batch in one kernel
    call, which fills the GPU best with a few hundred sources (BENCHMARKS.md), or
    4,096 for a statistics-only hierarchy sweep (``phast``); CPU workers solve source
    after source, where small batches balance better and a resume loses less.  (Tasks
    solve chunks of several batches at first, :mod:`pipeline.study.schedule`.)

    Parameters
    ----------
    algorithm : str
        ``auto`` or a registered method (its backend decides when named).
    devices : iterable of str
        The workers' devices.
    phast : bool
        The study sweeps a hierarchy (``phast``; :meth:`StudyPlan.sweeps_hierarchy`): one
        sweep serves a whole batch, so batches are larger (``PHAST_*_BATCH_SIZE``; the GPU
        kernel splits a batch further when the device's memory asks for it).
    sources : int, optional
        The study's source count: a GPU ``phast`` study halves its batch (down to
        ``PHAST_GPU_MIN_BATCH_SIZE``) until every worker gets two batches or more.
    """
    from gpu_sssp import kernels

    from gpu_sssp.kernels.registry import backends_of

    if algorithm != "auto" and len(backends_of(algorithm)) == 1:
        gpu = kernels.get(algorithm).backend == "gpu"
    else:  # auto, or a method on both backends (phast): the workers' devices decide
        devices = list(devices)
        gpu = workers_backend(devices) == "gpu"
    if phast and gpu:
        size = PHAST_GPU_BATCH_SIZE
        if sources:
            share = int(sources) // (2 * max(1, len(list(devices))))
            while size > PHAST_GPU_MIN_BATCH_SIZE and size > share:
                size //= 2
        return size
    if phast:
        return PHAST_CPU_BATCH_SIZE
    return GPU_BATCH_SIZE if gpu else CPU_BATCH_SIZE
