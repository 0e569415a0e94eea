"""Matrix studies: a study with targets writes the sources x targets travel-time matrix.

``sssp study GRAPH --sources ... --targets all|FILE`` (or ``--random-targets K``) solves
its batches as any study does (resume, atomic files, the cluster) and writes, per batch,
``matrix/batch-NNNNNN.parquet`` in ``kernels.result.MATRIX_SCHEMA`` (wide: a row per
source with a list of its distances to the targets, in the order of
``targets.parquet``) or ``MATRIX_LONG_SCHEMA`` (long: a row per pair), ``+inf`` where a
target is unreachable, file ids throughout.  ``stats/`` is still written: over the
distinct targets (``--stats-over targets``, the default: ``phast`` then sweeps only what
the targets need) or over every vertex (``--stats-over all``: the full sweep).

Only this module knows about matrices; plan, folder, task and run call it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from gpu_sssp.kernels.errors import opt
from gpu_sssp.pipeline.config import setting
from gpu_sssp.pipeline.errors import StudyError
from gpu_sssp.pipeline.fsnames import shown

MATRIX_DIR = "matrix"
TARGETS_FILE = "targets.parquet"
STATS_OVER = ("targets", "all")
MATRIX_FORMS = ("wide", "long")
#: ``targets.parquet``: the matrix's columns in order (file ids, repeats kept)
TARGETS_SCHEMA = pa.schema([("column", pa.int64()), ("target", pa.int64())])


def matrix_bytes(n_sources: int, n_targets: int, form: str) -> int:
    """Uncompressed size of a matrix study's outputs: wide 8 bytes a cell (+8 a source),
    long 24 bytes a cell (source, target, distance)."""
    cells = int(n_sources) * int(n_targets)
    return cells * 24 if form == "long" else cells * 8 + int(n_sources) * 8


def batch_cap(n_targets: int) -> int:
    """The most sources a default batch of a matrix study holds: its ``(batch, T)``
    float64 matrix within ``sssp.study.chunk-bytes`` (2 GB; at least one source).  A
    worker holds a batch's matrix whole (solved, then written: the writer needs about as
    much again), so without this cap a long targets file (millions of columns) made
    batches that no worker could hold, and the workers were restarted for memory over
    and over (100 sources x 20,000,000 targets: 10 GB batches of 64 sources).  A batch
    size given by the user (``--batch-size``) is kept as it is."""
    limit = float(setting("study.chunk-bytes", None, default=2e9))
    return max(1, int(limit // (8 * max(1, int(n_targets)))))


def targets_limit(n_sources: int, max_distance_bytes, matrix_form=None, *, error=StudyError,
                  option: str = opt("--max-distance-bytes N", python="max_distance_bytes=N") + " with N above {estimate}",
                  advice: str = "or choose fewer sources or targets"):
    """``on_count(count, where)`` for a targets file (``pipeline.targets.plan_targets``):
    refuses, as the file is read, a matrix of ``n_sources`` x the targets counted so far
    above the distance-output limit (:func:`check_plan`'s rule and words), so that a
    targets file too long for the limit is refused before its ids are all held: a 400 KB
    gzip file of 200 million ids took 6.7 GB of memory before the check of the whole
    matrix refused it.  ``matrix_form``: None is the setting's (a form that is no form is
    refused later, by :func:`check_plan`; counted as wide here)."""
    from gpu_sssp.pipeline.study.plan import check_output_size

    form = setting("study.matrix-form", matrix_form, default="wide")
    form = form if isinstance(form, str) and form in MATRIX_FORMS else "wide"

    def on_count(count: int, where: str) -> None:
        check_output_size(matrix_bytes(n_sources, count, form), max_distance_bytes, "the matrix",
                          f"{n_sources:,} sources x at least {count:,} targets, those of {where}"
                          # (a count so far, not a header's: the rest of the file adds to it)
                          f"{' (read no further: the whole file may take more)' if ' to line ' in where else ''}, "
                          f"{form} form, before compression", advice, option=option, error=error, at_least=True)

    return on_count


def check_plan(graph, sources, targets, *, outputs, stats_over, matrix_form, max_distance_bytes):
    """Validate a matrix study's options; return ``(stats_over, matrix_form, estimate)``.

    Raises
    ------
    StudyError
        Distances or predecessors asked as well (the matrix replaces them), an unknown
        ``stats_over`` or form, or a matrix above the distance-output limit.
    """
    from gpu_sssp.pipeline.study.plan import check_output_size

    extra = [o for o in outputs if o in ("distances", "predecessors")]
    if extra:
        raise StudyError(f"{opt('--outputs ' + ','.join(extra))} does not go with targets: a study with targets "
                         f"writes the sources x targets matrix (matrix/) and the stats; drop {opt('--targets')} for "
                         "full distance vectors")
    # a str, not just a value that compares equal: np.array(["all"]) "is in" the tuple
    # (NumPy's == gives [True]) and reached the manifest, a JSON traceback
    stats_over = setting("study.stats-over", stats_over, default="targets")
    if not isinstance(stats_over, str) or stats_over not in STATS_OVER:
        raise StudyError(f"{opt('--stats-over')} must be 'targets' or 'all', got {stats_over!r}")
    matrix_form = setting("study.matrix-form", matrix_form, default="wide")
    if not isinstance(matrix_form, str) or matrix_form not in MATRIX_FORMS:
        raise StudyError(f"{opt('--matrix-form')} must be 'wide' or 'long', got {matrix_form!r}")
    stats_over, matrix_form = str(stats_over), str(matrix_form)  # (a NumPy str_ as a plain one)
    estimate = matrix_bytes(sources.count, targets.count, matrix_form)
    check_output_size(estimate, max_distance_bytes, "the matrix",
                      f"{sources.count:,} sources x {targets.count:,} targets, {matrix_form} form, before compression",
                      "or choose fewer sources or targets")
    return stats_over, matrix_form, estimate


def refuse_without_targets(stats_over, matrix_form) -> None:
    """Refuse ``stats_over`` / ``matrix_form`` given for a study without targets (they
    would be ignored), as ``--target-seed`` without ``--random-targets`` is.

    Raises
    ------
    StudyError
        Either is given (not None).
    """
    given = [opt(o) for o, v in (("--stats-over", stats_over), ("--matrix-form", matrix_form)) if v is not None]
    if given:
        raise StudyError(f"{' and '.join(given)} {'goes' if len(given) == 1 else 'go'} with targets "
                         f"({opt('--targets')} or {opt('--random-targets')}): a study without targets writes no "
                         "matrix, its statistics are over every vertex")


def identity(plan) -> dict:
    """What a matrix study adds to the study identity (empty without targets, so studies
    without targets keep their identity and resume as before)."""
    t = getattr(plan, "targets", None)
    if t is None:
        return {}
    return {"targets_digest": t.digest(), "targets_count": t.count, "stats_over": plan.stats_over,
            "matrix_form": plan.matrix_form}


def resumed_targets(out, kept: dict, graph):
    """The targets of the matrix study in ``out``, for a resume given none: its
    ``targets.parquet`` (file ids, turned into indices with the folder's ``id_base``),
    checked against the study's digest.  ``kept``: what
    ``pipeline.study.folder.resumed_settings`` found of them (``digest``, ``how``,
    ``id_base``).  Returns a ``pipeline.targets.TargetPlan``.

    Raises
    ------
    StudyError
        The file is missing or unreadable, or its targets are not the study's (one line:
        the file, what is wrong, and that the targets may be given again).
    """
    import pyarrow as pa

    from gpu_sssp.pipeline.fsnames import read_table
    from gpu_sssp.pipeline.targets import TargetPlan

    path = Path(out) / TARGETS_FILE
    again = f"give the targets again ({opt('--targets')} or {opt('--random-targets')}) to resume"
    try:
        ids = read_table(path, columns=["target"]).column("target").to_numpy().astype(np.int64)
    except FileNotFoundError:
        raise StudyError(f"{shown(path)}: missing, so the study's targets cannot be taken from the folder; {again}") from None
    except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
        why = " ".join(str(exc).split())[:200]
        raise StudyError(f"{shown(path)}: unreadable ({why}); {again}") from None
    base = kept.get("id_base")
    tp = TargetPlan(ids - (graph.id_base if base is None else int(base)), dict(kept.get("how") or {}))
    if tp.digest() != kept.get("digest"):
        raise StudyError(f"{shown(path)}: not the study's targets (digest {tp.digest()}, the study's "
                         f"{kept.get('digest')}); {again}")
    return tp


def start_folder(plan, out: Path) -> None:
    """Create ``matrix/`` and write ``targets.parquet`` (the matrix's columns, file ids;
    its ``sssp`` metadata: ``targets``, ``digest`` and the graph's ``id_base``)."""
    t = getattr(plan, "targets", None)
    if t is None:
        return
    from gpu_sssp.pipeline.writers import write_parquet_atomic

    (out / MATRIX_DIR).mkdir(exist_ok=True)
    ids = t.targets.astype(np.int64) + plan.graph.id_base
    table = pa.Table.from_pydict({"column": np.arange(len(ids), dtype=np.int64), "target": ids},
                                 schema=TARGETS_SCHEMA)
    # the id base recorded: the file given as another study's --targets is read in it
    # (pipeline.sources.read_id_file refuses it for a graph of the other base)
    write_parquet_atomic(table, out / TARGETS_FILE, metadata={"targets": t.how, "digest": t.digest(),
                                                              "id_base": int(plan.graph.id_base)})


def task_options(plan) -> dict:
    """The keyword arguments a batch task needs for the matrix (none without targets)."""
    t = getattr(plan, "targets", None)
    if t is None:
        return {}
    return {"targets_file": str((plan.out / TARGETS_FILE).resolve()), "targets_digest": t.digest(),
            "stats_over": plan.stats_over, "matrix_form": plan.matrix_form}


_LOADED: dict = {}


def load_targets(path: str, digest: str, id_base: int) -> np.ndarray:
    """The targets (internal indices) from a study's ``targets.parquet``, read once per
    worker process and checked against the plan's digest."""
    from gpu_sssp.pipeline.sources import ids_digest

    key = (path, digest)
    got = _LOADED.get(key)
    if got is None:
        from gpu_sssp.pipeline.fsnames import read_table  # any file name

        ids = read_table(path, columns=["target"]).column("target").to_numpy().astype(np.int64)
        got = ids - id_base
        mine = ids_digest(got)
        if mine != digest:
            raise StudyError(f"{shown(path)}: the targets differ from the study's (digest {mine}, expected {digest})")
        if len(_LOADED) >= 4:
            _LOADED.clear()
        _LOADED[key] = got
    return got


#: Distance bytes per row group of a matrix file.  The file is written a row group at a
#: time from the matrix's rows: one table and one row group per batch made the Parquet
#: writer hold about as much again as the matrix (a 516 MB NY batch, wide: 405 MB more; in
#: 64 MB groups: 93 MB), and the long form's table two id columns of the matrix's size.
MATRIX_GROUP_BYTES = 64 << 20


def write_batch(res, graph, out: Path, name: str, form: str, fsync: bool, *, study: str = "") -> int:
    """Write a batch's matrix (``matrix/<name>``); return its size in bytes.

    Row groups of about :data:`MATRIX_GROUP_BYTES` of distances, each built from its rows
    of the matrix when written; the distances are not dictionary-encoded (hashing every
    float cost half the write's time - 3.9 s against 2.0 s for a 256 x 264,346 NY batch -
    for a file of the same size).  ``study``: the study's id, kept in the file's footer."""
    import json

    from gpu_sssp.kernels.result import matrix_table
    from gpu_sssp.pipeline.writers import write_parquet_parts_atomic

    # the columns are named once, in targets.parquet (not in every batch's metadata)
    meta = {b"sssp": json.dumps({"form": form, "targets": TARGETS_FILE}).encode()}
    if study:  # the study that wrote it (pipeline.study.task.STUDY_KEY)
        from gpu_sssp.pipeline.study.task import STUDY_KEY

        meta[STUDY_KEY.encode()] = study.encode()
    base = graph.id_base
    sources, targets, mat = res.sources, res.targets, res.matrix
    # sources per row group: 8 bytes a distance (wide), 24 a pair with its two ids (long)
    per = max(1, MATRIX_GROUP_BYTES // ((8 if form == "wide" else 24) * max(1, len(targets))))
    parts = (matrix_table(sources[a:a + per], targets, mat[a:a + per], base, form).replace_schema_metadata(meta)
             for a in range(0, max(1, len(sources)), per))
    # wide: a row per source, no repeats to encode; long: source and target repeat
    dictionary = False if form == "wide" else ["source", "target"]
    rows = per if form == "wide" else per * len(targets)  # a part's rows: one row group each
    return write_parquet_parts_atomic(parts, out / MATRIX_DIR / name, fsync=fsync, use_dictionary=dictionary,
                                      row_group_size=max(1, rows))
