"""Source planning: which sources a study solves, in which order, in which batches.

A plan is one of ``all`` vertices, an explicit list of file ids, ``random`` K distinct
vertices drawn with a seed, or a DIMACS ``.ss`` file.  Repeated sources are dropped
(a study solves each source once).  ``order="locality"`` orders the sources along a
k-d tree over landmark distances (:func:`locality_order`), so that a batch holds
sources of one region of the graph: on the GPU their wavefronts travel together and
a batch finishes in fewer iterations.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# the batching order lives with the kernels it serves
from gpu_sssp.kernels.errors import UsageError, counted, opt
from gpu_sssp.kernels.order import locality_order
from gpu_sssp.pipeline.fsnames import is_parquet_name, shown as _fs_shown

log = logging.getLogger(__name__)

ORDERS = ("locality", "given")


def ids_digest(idx) -> str:
    """The digest of an ordered list of internal indices that identifies a study's sources
    or targets (recorded in its manifest and in ``targets.parquet``'s metadata): the first
    16 hex digits of the SHA-256 of their int64 bytes."""
    return hashlib.sha256(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


@dataclass
class SourcePlan:
    """The sources of a study (internal 0-based indices, in solving order).

    Attributes
    ----------
    sources : ndarray of int64
        Distinct internal indices, in the order they are batched.
    how : dict
        How they were chosen (``kind``: all | list | random | file, ``seed``, ``count``,
        ``file``, ``duplicates_dropped``, ``order``).
    """

    sources: np.ndarray
    how: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(len(self.sources))

    def digest(self) -> str:
        """A digest of the ordered source list (identifies the plan on resume)."""
        return ids_digest(self.sources)

    def batches(self, batch_size: int, workers: int = 1, merge: bool = True) -> list[np.ndarray]:
        return make_batches(self.sources, batch_size, workers, merge)


def tail_layout(count: int, batch_size: int, workers: int = 1, merge: bool = True) -> tuple[int, int, int, bool]:
    """``(full, pieces, rest, merged)``: how :func:`make_batches` splits ``count`` sources
    for ``workers`` workers - ``full`` batches of ``batch_size`` (a multiple of
    ``workers``) and the ``rest`` sources in ``pieces`` nearly equal parts (at most
    ``workers``, none below a sixteenth of ``batch_size``).  ``merged``: the parts are at
    most half a batch each and go into the last ``pieces`` full batches, one each
    (otherwise, or without ``merge``, they are batches of their own, after the full ones).
    With one worker: the plain split, the remainder in one batch of its own."""
    count, batch_size, workers = int(count), int(batch_size), max(1, int(workers))
    if batch_size < 1:
        raise UsageError(f"batch size must be at least 1, got {batch_size}")
    if workers == 1:  # the plain split: the remainder is one batch
        full, rest = count // batch_size, count % batch_size
        return full, (1 if rest else 0), rest, False
    full = (count // (batch_size * workers)) * workers
    rest = count - full * batch_size
    least = max(1, batch_size // 16)
    pieces = min(workers, -(-rest // least)) if rest else 0
    merged = bool(merge) and bool(pieces) and full >= pieces and -(-rest // pieces) <= batch_size // 2
    return full, pieces, rest, merged


def batch_bounds(index: int, count: int, batch_size: int, workers: int = 1, merge: bool = True) -> tuple[int, int]:
    """``(start, stop)`` of batch ``index`` of :func:`make_batches` (without the sources)."""
    return _bounds(int(index), int(batch_size), tail_layout(count, batch_size, workers, merge))


def _bounds(index: int, batch_size: int, layout: tuple[int, int, int, bool]) -> tuple[int, int]:
    """:func:`batch_bounds` from a :func:`tail_layout` computed once."""
    full, pieces, rest, merged = layout
    plain = full - pieces if merged else full  # batches of exactly batch_size first
    if 0 <= index < plain:
        return index * batch_size, (index + 1) * batch_size
    j = index - plain
    if not 0 <= j < pieces:
        raise IndexError(f"batch {index} of {plain + pieces}")
    base, extra = divmod(rest, pieces)
    if merged:
        base += batch_size
    start = plain * batch_size + j * base + min(j, extra)
    return start, start + base + (1 if j < extra else 0)


def batch_count(count: int, batch_size: int, workers: int = 1, merge: bool = True) -> int:
    """How many batches :func:`make_batches` makes."""
    full, pieces, _rest, merged = tail_layout(count, batch_size, workers, merge)
    return full if merged else full + pieces


def make_batches(sources: np.ndarray, batch_size: int, workers: int = 1, merge: bool = True) -> list[np.ndarray]:
    """Split ``sources`` into consecutive batches of ``batch_size``, laid out for
    ``workers`` workers.

    With one worker (default) the last batch holds the remainder.  For several, the
    batches of full size come in a multiple of ``workers``, and what is left is split
    into up to ``workers`` nearly equal parts (:func:`tail_layout`), so that every
    worker's share is the same to within a part, instead of one worker solving a last
    batch, or a last round of full batches, while the others wait.  Parts of at most half
    a batch join the last full batches (one each, which then hold up to 1.5
    ``batch_size``): as batches of their own they ended a worker's share with a task
    shorter than the previous batch's file write, which then held the study's end.  All
    NY sources (264,346) in batches of 8,192 on 4 workers: 28 batches of 8,192 and 4 of
    8,742-8,743, where one worker had a 33rd batch of 2,202 (a 4,096-lane sweep of
    4.3 ms on an H200) alone.  Larger parts stay batches of their own (FLA's 1,070,376
    on 4 workers: 128 full batches, then 4 of 5,450).

    Parameters
    ----------
    sources : ndarray
        The sources in solving order.
    batch_size : int
        Sources per batch.
    workers : int
        The workers the batches are for (a study's layout is recorded with its batch
        size, so that a resume re-plans the same batches on any cluster).
    merge : bool
        Let small parts join the last full batches (default).  A study whose batches
        hold distance rows or a matrix (memory per source) keeps every batch within
        ``batch_size`` instead.

    Returns
    -------
    list of ndarray
        Slices (views) of ``sources``, in order; empty when ``sources`` is.

    Raises
    ------
    ValueError
        ``batch_size`` is below 1.
    """
    layout = tail_layout(len(sources), batch_size, workers, merge)
    return [sources[a:b] for a, b in (_bounds(i, int(batch_size), layout)
                                      for i in range(batch_count(len(sources), batch_size, workers, merge)))]


#: comment lines of a sources or targets file (DIMACS ``c``, and ``#`` / ``%``)
_ID_COMMENTS = (b"c", b"#", b"%")


#: peak host memory of reading one id of a sources or targets file (the parsed chunks,
#: their concatenation, the caller's index and repeats checks): measured 32-42 bytes
ID_READ_BYTES = 48


def read_id_file(path, graph, what: str = "source", *, on_count=None) -> np.ndarray:
    """File ids listed in a sources or targets file: the one rule for both
    (``--sources-file``, ``--targets FILE``, and a path given to ``gpu_sssp.matrix``).

    The forms, each with or without the DIMACS header ``p aux sp ss K`` (whose ``K``,
    when given, must be the number of ids):

    - a DIMACS ``.ss`` file, ``s ID`` lines;
    - one vertex id per line;
    - an ingested ``.ss`` Parquet table (``sssp ingest F.ss``, its ``source`` column), or
      a matrix study's ``targets.parquet`` (its ``target`` column in ``column`` order:
      one study's columns given to the next).

    Blank lines and lines starting with ``c``, ``#`` or ``%`` are skipped; the text may
    be compressed (``.gz``, ``.xz``, ``.bz2``, ``.zst``).  A file holds one of the two
    text forms, not both.  Order and repeats are kept.

    Parameters
    ----------
    path : str or os.PathLike
    graph : kernels.graph.Graph
        Its ids (``id_base .. id_base + n - 1``) are the ids a file may name.
    what : {"source", "target"}
        Names the ids in messages.
    on_count : callable, optional
        ``on_count(count, where)`` as the ids are counted, before they are all held: with
        a header's ``K`` or a Parquet file's row count before anything is read, then
        with the running count after each chunk of text (``where``: ``"FILE"`` or
        ``"FILE to line L"``); it raises to refuse the file (a matrix above its limit,
        ``pipeline.study.matrix.targets_limit``) before the ids pile up.

    Returns
    -------
    ndarray of int64
        The ids as the file writes them (file ids, not internal indices).

    Raises
    ------
    InputError
        A missing or empty file, a malformed line, a header whose count differs, an id
        that is not a vertex of ``graph`` (``FILE:LINE: message``, one line; a Parquet
        file's row is named in the message: ``FILE: row 3 of its 'source' column: ...``);
        a Parquet file that is a table of results, or whose ids are of another id base
        than ``graph``'s (recorded, or for an earlier version's ``targets.parquet`` told
        by its digest; one whose digest tells no base is refused too); more ids than
        the memory available here can hold (:data:`ID_READ_BYTES` a id), told from the
        header, the Parquet row count or the ids read so far, before the rest is read
        (a 400 KB gzip file of 200 million lines took 6.7 GB before any check).
    """
    from gpu_sssp.pipeline.errors import InputError

    path = Path(path)
    if not path.exists():
        raise InputError(path, None, f"no such {what}s file")
    if path.is_dir():
        raise InputError(path, None, f"is a folder, not a {what}s file")
    lo, hi = graph.id_base, graph.id_base + graph.n - 1

    def check(ids, line_of, display, row_of=None):
        bad = (ids < lo) | (ids > hi)
        if bad.any():
            i = int(np.argmax(bad))
            # a Parquet file has rows, not lines: its row is named in the message
            where = f"{row_of(i)}: " if row_of is not None else ""
            raise InputError(display, line_of(i), f"{where}{what} {int(ids[i])} is not a vertex of {graph.name} "
                             f"(its ids run {lo}..{hi})")

    def counted(count: int, display, line, where: str) -> None:
        if on_count is not None:  # the caller's limit (the matrix's) first: an option the user chose
            on_count(count, where)
        check_id_memory(count, display, line, what)

    if is_parquet_name(path):  # an ingested .ss file, or a matrix study's targets.parquet
        ids, column, rows = _read_id_table(path, what, graph, counted)
        check(ids, lambda i: None, str(path), lambda i: f"row {int(rows[i]) + 1:,} of its '{column}' column")
        header, display = None, str(path)
    else:
        ids, header, display, _ = _read_id_text(path, what, check, counted)
    if header is not None and len(ids) != header[0]:
        raise InputError(display, None, f"{what} count does not match the header: expected {header[0]:,} "
                         f"(from '{header[2]}' at line {header[1]}), found {len(ids):,}")
    if len(ids) == 0:
        raise InputError(display, None, f"no {what}s in the file (expected one vertex id per line, or DIMACS "
                         "'s ID' lines)")
    return ids


def check_id_memory(count: int, display, line, what: str) -> None:
    """Refuse ``count`` ids of a sources or targets file that the memory available here
    cannot hold while they are read (:data:`ID_READ_BYTES` each): one line naming the
    file and the line reached, before the rest of it is read."""
    from gpu_sssp.kernels.memory import available_memory, bound_note, fmt_bytes
    from gpu_sssp.pipeline.errors import InputError

    need = int(count) * ID_READ_BYTES
    if need <= 64 << 20:  # (a few million ids: never refused, no memory reading)
        return
    avail = available_memory()
    if avail is None or need <= avail:
        return
    raise InputError(display, line, f"{int(count):,} {what} ids or more: reading them takes about {fmt_bytes(need)} "
                     f"of memory, more than the {fmt_bytes(avail)} available here{bound_note(avail)}; give "
                     f"fewer {what}s")


def _results_kind(names) -> str | None:
    """What a Parquet table of the project's results is, from its top-level columns
    ``names`` (``None``: not one).  Its ``source`` column is not a list of sources (a
    long matrix repeats each one per target, benchmark rows per method and run), nor of
    targets: such a table is refused as a sources or targets file, saying what it is."""
    if "source" not in names:
        return None
    if "distance" in names:  # kernels.result: DISTANCE_SCHEMA, MATRIX_SCHEMA, MATRIX_LONG_SCHEMA
        return ("a travel-time matrix in long form (source, target, distance)" if "target" in names
                else "a distance table (source, vertex, distance, predecessor)" if "vertex" in names
                else "a travel-time matrix (source, distance)")
    if "reached" in names:
        if "time_ms" in names and "run" in names:  # pipeline.bench_protocol.ROW_SCHEMA
            return "benchmark rows (`sssp bench` rows.parquet: source, run, time_ms, reached, ...)"
        # kernels.result.STATS_SCHEMA: a study's stats/batch-*.parquet, Result.stats_table()
        return "per-source statistics (a study's stats/ file: source, reached, eccentricity, ...)"
    return None


def _read_id_table(path: Path, what: str, graph, counted=None) -> tuple[np.ndarray, str, np.ndarray]:
    """The ids of a Parquet sources or targets file: the ``source`` column of an ingested
    ``.ss`` file, or the ``target`` column of a matrix study's ``targets.parquet`` (its
    columns, taken in the order of its ``column`` column, which must number them 0..T-1).
    ``(ids, column name, file row of each id)``, the rows 0-based, for messages;
    ``counted(rows, display, None, where)`` is called with the file's row count before
    its column is read (:func:`read_id_file`).  An
    ingested ``.ss`` file (or any id file, a ``targets.parquet`` among them) whose
    recorded ``id_base`` is not ``graph``'s is refused: its ids would name other vertices
    (each one off by one) without a word; a ``targets.parquet`` of an earlier version,
    which recorded no id base, is checked by its digest (:func:`_check_older_targets`).
    A table of results with a ``source`` column (a travel-time matrix, a distance table,
    per-source statistics, benchmark rows: :func:`_results_kind`) is refused too: its
    sources are not a list of ids."""
    import pyarrow as pa

    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.fsnames import read_metadata, read_table

    try:
        md = read_metadata(path)
        names = md.schema.to_arrow_schema().names  # top-level columns (a list column is one)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(path, None, f"not a Parquet file ({exc})") from None
    kind = _results_kind(names)
    if kind is not None:
        raise InputError(path, None, f"{kind}, not a {what}s file: a Parquet {what}s file is an ingested .ss file "
                         "(`sssp ingest F.ss`), with a 'source' column, or a matrix study's targets.parquet "
                         "('column', 'target')")
    try:
        recorded = json.loads((md.metadata or {}).get(b"sssp") or b"{}")
    except ValueError:
        recorded = {}
    if isinstance(recorded, dict) and "id_base" in recorded and ("source" in names or "target" in names):
        # an ingested .ss file, a matrix study's targets.parquet (pipeline.study.matrix),
        # any id file whose 'sssp' metadata records the id base its ids are written in
        ss = recorded.get("format") == "ss"
        base = recorded["id_base"]
        if isinstance(base, bool) or base not in (0, 1):  # damaged metadata: not a traceback
            raise InputError(path, None, f"its 'sssp' metadata says id_base = {json.dumps(base)}: expected 0 or 1 "
                             + ("(ingest the .ss file again)" if ss else "(a damaged file)"))
        if base != int(graph.id_base):
            if ss:
                flag = f"{'with' if graph.id_base == 0 else 'without'} {opt('--zero-based')}"
                older = (f" - earlier versions recorded 1 whatever the ids, {opt('--zero-based')} too"
                         if base == 1 else "")
                fix = f"ingest the .ss file again {flag}{older}"
            else:  # a study's targets.parquet of a graph read with the other id base
                fix = None
            _refuse_other_base(path, graph, what, base, fix)
    if "source" in names:
        name = "source"
    elif "target" in names and "column" in names:  # pipeline.study.matrix.TARGETS_SCHEMA
        name = "target"
    else:
        raise InputError(path, None, f"a Parquet {what}s file is an ingested .ss file (`sssp ingest F.ss`), "
                         "with a 'source' column, or a matrix study's targets.parquet ('column', 'target'); "
                         f"this one has {', '.join(names) or 'no columns'}")
    cols = [name] if name == "source" else ["column", name]
    if counted is not None:  # its row count, before the column is read (a few KB of run-length ids can be 100M)
        counted(int(md.num_rows), str(path), None, str(path))
    table = read_table(path, columns=cols)
    for c in cols:
        col = table.column(c)
        if col.null_count or not pa.types.is_integer(col.type):
            raise InputError(path, None, f"its '{c}' column holds {col.type} values with {col.null_count} "
                             f"missing: expected {'vertex ids' if c == name else 'column numbers'} (integers)")
    ids = table.column(name).to_numpy().astype(np.int64)
    rows = np.arange(len(ids), dtype=np.int64)
    if name == "target":  # the matrix's columns, in their order
        order = table.column("column").to_numpy().astype(np.int64)
        if not np.array_equal(np.sort(order), rows):
            raise InputError(path, None, f"its 'column' column does not number the {len(ids):,} targets "
                             f"0..{len(ids) - 1} once each (a matrix study's targets.parquet does)")
        rows = np.argsort(order, kind="stable")
        ids = ids[rows]
        if isinstance(recorded, dict) and "id_base" not in recorded and "digest" in recorded and len(ids):
            # a matrix study's targets.parquet written before its id base was recorded
            # (its 'sssp' metadata: 'targets', 'digest'): not read unchecked, as it was
            _check_older_targets(path, graph, what, ids, recorded["digest"])
    return ids, name, rows


def _refuse_other_base(path, graph, what: str, base: int, fix: str | None = None):
    """Refuse an id file whose ids are ``base``-based for ``graph`` of the other base:
    every id would name another vertex (each off by one) without a word.

    Raises
    ------
    InputError
        Always (one line: the file, both bases, ``fix`` or what to give instead).
    """
    from gpu_sssp.pipeline.errors import InputError

    fix = fix or f"the file's ids are those of a {base}-based graph; give {graph.name}'s own ids"
    raise InputError(path, None, f"its ids are {base}-based but {graph.name}'s are {graph.id_base}-based: "
                     f"every {what} would be another vertex ({fix})")


def _check_older_targets(path, graph, what: str, ids: np.ndarray, digest) -> None:
    """Check the id base of a matrix study's ``targets.parquet`` of an earlier version,
    which recorded no ``id_base`` but the ``digest`` of its targets as internal indices
    (``pipeline.targets.TargetPlan.digest``: the file ids ``ids``, in column order, less
    the graph's id base).  The base whose indices give that digest is the file's (at most
    one does for targets that are there): one of the other base than ``graph``'s is
    refused, as a file that records it; one whose digest matches neither base (the file
    was changed after its study wrote it, or is damaged) cannot be checked and is refused
    too, rather than read in a base guessed.

    Raises
    ------
    InputError
        One line naming the file, what is wrong and how to go on.
    """
    from gpu_sssp.pipeline.errors import InputError

    def digest_in(base: int) -> str:
        return ids_digest(ids - base)

    found = [b for b in (0, 1) if isinstance(digest, str) and digest_in(b) == digest]
    if found == [int(graph.id_base)]:
        return
    if len(found) == 1:
        _refuse_other_base(path, graph, what, found[0],
                           f"a targets.parquet of an earlier version, which recorded no id base: its digest "
                           f"says its ids are those of a {found[0]}-based graph; give {graph.name}'s own ids")
    raise InputError(path, None, f"a targets.parquet of an earlier version records no id base, and its digest "
                     f"({json.dumps(digest)}) is that of its targets in neither base (the file was changed or "
                     f"damaged after its study wrote it): its ids cannot be checked against {graph.name}'s "
                     f"({graph.id_base}-based); give the {what}s as a text file of {graph.name}'s own ids, "
                     "one per line")


def _read_id_text(path: Path, what: str, check, counted=None):
    """:func:`read_id_file` for a text file (and ``pipeline.ingest.read_sources``):
    ``(ids, header, display, end)``, ``header`` the ``p aux sp ss K`` line as ``(K, line
    number, text)`` (``None`` without one), ``end`` the line after the file's last.  Read
    with the ingest's line reader (compressed files, the fast chunk parser, exact line
    numbers); ``check(ids, line_of, display)`` sees each chunk of ids, and
    ``counted(count, display, line, where)`` the header's count and then the running
    count after each chunk (:func:`read_id_file`)."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.ingest._limits import Limits
    from gpu_sssp.pipeline.ingest._records import RecordSpec, iter_batches
    from gpu_sssp.pipeline.ingest._source import LineCursor, Source

    with Source(path, f"a {what}s file (one id per line or DIMACS .ss)") as src:
        display = src.display
        cursor = LineCursor(src, 1 << 22)
        header = None  # (count, line, text)
        first = None
        while True:  # comments and the optional header, up to the first id line
            line = cursor.readline()
            if line is None:
                break
            lineno = cursor.lineno - 1
            text = line.strip()
            if not text or text.startswith(_ID_COMMENTS):
                continue
            toks = text.split()
            if toks[0] != b"p":
                cursor.unread(line)
                first = toks
                break
            shown = text.decode("utf-8", "replace")
            if header is not None:
                raise InputError(display, lineno, f"repeated 'p' line (the first is at line {header[1]}); "
                                 "expected one 'p aux sp ss K'")
            if (toks[1:4] != [b"aux", b"sp", b"ss"] or len(toks) != 5 or not toks[4].isdigit()
                    or len(toks[4]) > 19):
                raise InputError(display, lineno, f"expected the header 'p aux sp ss K' (K: how many {what}s "
                                 f"follow), got {shown[:60]!r}")
            header = (int(toks[4]), lineno, shown)
            # the file-size check of the graph readers' headers (none for a compressed
            # file): a 27-byte file declaring 3e9 ids was refused only by the memory
            # check, "reading them takes about 144.0 GB", which no limit raised can help
            Limits(display=display, text_size=src.text_size).records(header[0], f"{what}s", 2, "id line", lineno,
                                                                     shown[:60])
            if counted is not None:  # the count it declares, before the ids are read
                counted(header[0], display, lineno, f"{display} (its header, line {lineno})")
        parts = []
        count = 0
        if first is not None:
            name = f"{what} id"
            if first[0] == b"s":
                spec = RecordSpec(b"s", (name,), (False,), comments=_ID_COMMENTS, comment_is_token=False,
                                  header=b"p", describe="'s ID' lines")
            else:
                spec = RecordSpec(None, (name,), (False,), comments=_ID_COMMENTS, comment_is_token=False,
                                  describe="one vertex id per line")
            for batch in iter_batches(cursor, spec, display, header[1] if header else None):
                col = np.asarray(batch.cols[0], dtype=np.int64)
                check(col, batch.line_of, display)
                count += len(col)
                if counted is not None and len(col):
                    last = batch.line_of(len(col) - 1)
                    counted(count, display, last, f"{display} to line {last:,}")
                parts.append(col)
        end = cursor.lineno
    return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), header, display, end


def read_source_file(path, graph) -> np.ndarray:
    """File ids listed in a sources file (``--sources-file``): :func:`read_id_file`,
    the rule that targets files follow too.

    Raises
    ------
    InputError
        A missing, empty or malformed file, or an id that is not a vertex of ``graph``
        (a ``ValueError``).
    """
    return read_id_file(path, graph, "source")


def check_seed(seed, option: str = opt("--seed")) -> int:
    """``seed`` as an int, checked: a seed is a whole number from 0 up (what NumPy's
    ``default_rng`` takes; there is no upper bound).  ``option`` names it in the message
    (``--seed``, ``--target-seed``): the one rule for every seed of a random draw
    (``study --seed`` / ``--target-seed``, ``verify --seed``, ``bench --seed``, and the
    Python functions behind them).

    Raises
    ------
    UsageError
        A negative number, or not a whole number (``True``, ``1.5``, ``"3"``).
    """
    if not _whole_number(seed):
        raise UsageError(f"{option} takes a whole number from 0 up, got {seed!r}")
    seed = int(seed)
    if seed < 0:
        raise UsageError(f"{option} must be 0 or more, got {seed}")
    return seed


def check_draw_count(k, n: int, option: str = opt("--random K")) -> int:
    """``k``, the size of a random draw of distinct vertices among ``n``, as an int: a
    whole number from 1 to ``n`` (int(2.7) would draw 2, int(True) 1, int("5") 5).
    ``option`` names it (``--random K``, ``--random-targets K``): the one rule for both.

    Raises
    ------
    UsageError
    """
    if not _whole_number(k):
        raise UsageError(f"{option} takes a whole number from 1 up, got {k!r}")
    k = int(k)
    if k < 1 or k > n:
        raise UsageError(f"{option} must be between 1 and the {n:,} vertices, got {k}")
    return k


def _whole_number(value) -> bool:
    """An int or NumPy integer, not a bool (nor a float, however whole, nor a string)."""
    import numbers

    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)


def draw_vertices(n: int, k: int, seed: int, option: str = opt("--seed")) -> np.ndarray:
    """``k`` distinct vertices of ``0..n-1`` drawn with ``seed``, sorted (int64): the
    draw of ``--random K --seed S``, ``--random-targets K`` and ``sssp verify --random K``
    (callers check ``1 <= k <= n`` with their own option's words; the seed is checked
    here, :func:`check_seed`, ``option`` naming it)."""
    rng = np.random.default_rng(check_seed(seed, option))
    return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)


def first_occurrences(idx: np.ndarray) -> tuple[np.ndarray, int]:
    """``idx`` without its repeats, each kept where it first appears, and how many
    repeats were dropped."""
    _, first = np.unique(idx, return_index=True)
    dropped = len(idx) - len(first)
    return (idx[np.sort(first)] if dropped else idx), int(dropped)


def id_choice(x, what: str, error=UsageError, *, files: bool = True, name: str | None = None):
    """What a Python caller's sources or targets value ``x`` names, by the one rule of
    ``gpu_sssp.matrix``, ``study(sources=..., targets=...)`` and :func:`plan_sources` /
    ``plan_targets``: ``("all", None)``; ``("file", path)`` for any other ``str``,
    ``bytes`` or ``os.PathLike`` (``files=False``: refused); ``("ids", ids)`` for one
    integer or a sequence (a list of them) or a 0- or 1-D array of them; a
    ``memoryview`` of numbers is such an array (:func:`_memoryview_ids`).

    Raises ``error`` (one line naming ``what``) for anything else: a bool, a float,
    ``None``, a set or a dict (no order: the matrix's rows and columns follow it), a 2-D
    array, an empty name, a memoryview of bytes.  The ids themselves are checked by
    ``Graph.to_index``.  ``name``: the parameter the line names (default ``what`` + "s")."""
    label = name or f"{what}s"
    if files and isinstance(x, str) and x == "all":
        return "all", None
    if isinstance(x, memoryview):
        x = _memoryview_ids(x, label, error, files=files)
    if isinstance(x, (bytes, bytearray)):
        x = os.fsdecode(bytes(x))
    if isinstance(x, (str, os.PathLike)):
        if not files:  # ids=: a file goes as sources_file=
            raise error(f"{label}: expected an id or a sequence of ids, got the name {os.fspath(x)!r} (a file of "
                        f"ids goes as {what}s_file= or {what}s=)")
        if not os.fspath(x).strip():  # Path("") is ".": "is a folder" would name no problem
            raise error(f"{label}: an empty name is neither 'all' nor a file of ids")
        return "file", x
    ids = None
    if isinstance(x, np.ndarray):
        if x.ndim <= 1:
            ids = x.reshape(-1)
    elif isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        ids = [x]  # one id
    elif not isinstance(x, (bool, np.bool_, set, frozenset, dict, float)) and hasattr(x, "__iter__"):
        ids = list(x)
    if ids is None:
        shown = (f"a {x.ndim}-D array of shape {x.shape}" if isinstance(x, np.ndarray) and x.ndim > 1
                 else repr(x))  # (an array's repr is lines of rows)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        why = " (a set or dict has no order: give a list)" if isinstance(x, (set, frozenset, dict)) else ""
        want = "'all', an id, a sequence of ids or a file of ids" if files else "an id or a sequence of ids"
        raise error(f"{label}: expected {want}, got {shown}{why}")
    return "ids", ids


#: the formats of a memoryview of bytes (``bytes``, ``bytearray``, ``mmap``: ``B``;
#: ``view.cast("c")``: ``c``), with or without a byte-order character
_BYTE_FORMATS = ("B", "c")


def _memoryview_ids(view: memoryview, label: str, error, *, files: bool = True) -> np.ndarray:
    """The ids a ``memoryview`` holds, as the NumPy array of its buffer (its format read:
    ``memoryview(np.array([1, 2]))`` and ``memoryview(array.array("q", ...))`` hold ids,
    big-endian and strided views included); :func:`id_choice` then takes the array as
    it takes any (0-D: one id; 2-D: refused).  Iterated as a sequence, a view of bytes
    gave its byte values as ids (``memoryview(b"12")``: vertices 49 and 50) where the
    ``bytes`` themselves are a file name, and a 0-D, 2-D or big-endian view a traceback.

    A view of bytes (format ``B`` or ``c``: what ``bytes``, ``bytearray`` and ``mmap``
    give, and a ``uint8`` array too) is refused: a file name and byte-sized ids are
    the same buffer, and either reading would be wrong, silently, for the other intent.

    Raises
    ------
    error
        One line naming ``label``: a view of bytes, a released view, a format NumPy
        cannot read."""
    try:
        fmt = view.format
    except ValueError:  # released
        raise error(f"{label}: the memoryview given is released (it holds no ids)") from None
    if fmt.lstrip("@=<>!") in _BYTE_FORMATS:
        if not files:  # (ids=: bytes are no file name there either)
            raise error(f"{label}: a memoryview of bytes (format {fmt!r}) is taken for no ids (bytes are names); "
                        "give an integer array for ids (e.g. numpy.frombuffer(view, dtype=numpy.uint8))")
        raise error(f"{label}: a memoryview of bytes (format {fmt!r}) is ambiguous - a file name or byte-sized "
                    "ids?; give bytes(view) for a file name, or an integer array for ids (e.g. "
                    "numpy.frombuffer(view, dtype=numpy.uint8))")
    try:
        return np.asarray(view)
    except (TypeError, ValueError) as exc:
        raise error(f"{label}: a memoryview of format {fmt!r} that cannot be read as numbers ({exc})") from None


def plan_sources(graph, *, sources=None, ids=None, sources_file=None, random: int | None = None,
                 seed: int | None = None, order: str = "locality") -> SourcePlan:
    """Choose a study's sources.

    Parameters
    ----------
    graph : kernels.graph.Graph
    sources : "all", int, sequence of int, or str / os.PathLike, optional
        ``"all"``: every vertex; otherwise as ``gpu_sssp.matrix`` takes them: file ids
        (as ``ids``) or a file of ids (as ``sources_file``).
    ids : int or sequence of int, optional
        Explicit source ids (the input file's ids).
    sources_file : path, optional
        A DIMACS ``.ss`` file (or one id per line).
    random : int, optional
        Draw this many distinct vertices uniformly with ``seed``.
    seed : int, optional
        Seed for ``random`` (default 0).
    order : {"locality", "given"}
        Batch order; ``locality``: :func:`locality_order` (compact batches).

    Returns
    -------
    SourcePlan

    Raises
    ------
    ValueError
        No choice or several choices, an unknown id, an empty file, K out of range.
    """
    every = isinstance(sources, str) and sources == "all"
    chosen = [k for k, v in (("all" if every or sources is None else "sources", sources), ("ids", ids),
                             ("file", sources_file), ("random", random))
              if v is not None and v is not False]
    if len(chosen) > 1:
        raise UsageError(f"choose the sources one way only (got {', '.join(chosen)})")
    if chosen == ["sources"]:
        # as gpu_sssp.matrix takes them (the command line's --sources is 'all' only)
        kind, value = id_choice(sources, "source", UsageError)
        sources = None
        if kind == "file":
            sources_file, chosen = value, ["file"]
        else:
            ids, chosen = value, ["ids"]
    elif ids is not None and ids is not False:
        kind, ids = id_choice(ids, "source", UsageError, files=False, name="ids")
    if order not in ORDERS:
        raise UsageError(f"order must be one of {ORDERS}, got {order!r}")
    how: dict = {}
    if not chosen or chosen == ["all"]:
        idx = np.arange(graph.n, dtype=np.int64)
        how = {"kind": "all"}
    elif chosen == ["ids"]:
        ids = list(ids)  # to_index rejects 1.5 rather than truncating it
        if len(ids) == 0:
            raise UsageError("no source ids given")
        idx = graph.to_index(ids, what="source")
        how = {"kind": "list"}
    elif chosen == ["file"]:
        file_ids = read_source_file(sources_file, graph)
        idx = graph.to_index(file_ids, what=f"source in {_fs_shown(sources_file)}")
        how = {"kind": "file", "file": str(sources_file)}
    else:
        k = check_draw_count(random, graph.n, opt("--random K"))
        seed = 0 if seed is None else check_seed(seed, opt("--seed"))
        idx = draw_vertices(graph.n, k, seed)
        how = {"kind": "random", "seed": seed}
    # drop repeats, keeping the first occurrence
    idx, dropped = first_occurrences(idx)
    if dropped:  # the command line says so as a note (how["duplicates_dropped"])
        log.info("dropping %s", counted(dropped, "repeated source"))
    how["duplicates_dropped"] = dropped
    if order == "locality" and len(idx) > 1:
        idx = idx[locality_order(graph, idx)]
    how["order"] = order
    how["count"] = int(len(idx))
    return SourcePlan(idx.astype(np.int64), how)
