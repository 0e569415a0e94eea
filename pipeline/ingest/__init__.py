"""Streaming ingestion of graph files into the project's Parquet edge list.

Output contract (``sssp ingest INPUT -o OUT.parquet``): columns ``src``, ``dst``,
``weight``; ids are the input file's own ids (1-based for DIMACS, METIS, MatrixMarket and
PACE, 0-based for edge lists), int32 while they fit; integer weights become int64 by
default, real ones float64. The schema metadata key ``b"sssp"`` holds a JSON object
(see :func:`read_meta`) with the vertex count, arc count, id base, weight range,
self-loop and parallel-arc counts, source file name and sha256, format and how the
weights were made.

Text is parsed in line-aligned chunks (``chunk_bytes``) by pyarrow's CSV parser, checked
with vectorised NumPy and written by a background thread, so memory is bounded by the
chunk size (plus 8 bytes per arc to count parallel arcs) and not by the file size.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from gpu_sssp.kernels.errors import UsageError, opt, render

from ..errors import InputError
from ..writers import refuse_input_as_output, refuse_non_parquet_name
from ._formats import (ALIASES, FORMATS, KIND_NAMES, READERS, dimacs_problem_message, file_signature,
                       format_hint, metis_for_edgelist, metis_pair_weights, read_co, read_ss)
from ._limits import Limits
from ._records import RealCoordinateAfterIntegers, RealWeightAfterIntegers, _show, iter_batches
from ._sink import (WEIGHT_TYPES, AtomicParquet, EdgeSink, IdOverflow, WeightPlan,
                    parse_weights_spec, read_meta)
from ._source import ChangedWhileRead, LineCursor, Source, TruncatedInput, peek_text, strip_compression
from ..fsnames import is_parquet_name, stat_state

__all__ = ["ingest", "check_chunk_memory", "read_meta", "parse_weights_spec", "read_sources", "detect_format", "FORMATS", "WEIGHT_TYPES",
           "DEFAULT_CHUNK_BYTES", "InputError", "__version__"]

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 16 << 20
MAX_CHUNK_BYTES = 1 << 30  # three chunks are in flight at once (see _source._ChunkReader)

try:  # the distribution's version, for created_by
    from importlib.metadata import version as _v

    __version__ = _v("gpu-sssp")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"

_EXT = {
    ".gr": "gr", ".ss": "ss", ".co": "co", ".mtx": "mtx", ".mm": "mtx", ".graph": "metis",
    ".metis": "metis", ".el": "edgelist", ".wel": "edgelist", ".txt": "edgelist",
    ".edges": "edgelist", ".tsv": "edgelist", ".snap": "edgelist", ".pace": "pace", ".tw": "pace",
}


def normalise_format(fmt: str) -> str:
    f = ALIASES.get(str(fmt).lower().lstrip("."))
    if f is None:
        raise UsageError(f"{opt('--format ' + repr(str(fmt)))}: unknown format; expected one of {', '.join(FORMATS)}")
    return f


def detect_format(path) -> str:
    """Format of a graph file from its content (headers) and then its extension."""
    return _detect(*peek_text(path))


def _detect(head: bytes, inner: str) -> str:
    for raw in head.split(b"\n")[:2000]:
        s = raw.strip()
        if not s:
            continue
        low = s.lower()
        if low.startswith(b"%%matrixmarket"):
            return "mtx"
        toks = low.split()
        if toks[0] == b"c":
            continue
        if toks[0] == b"p" and len(toks) >= 2:
            if toks[1] == b"sp":
                return "gr"
            if toks[1] == b"tw":
                return "pace"
            if toks[1] == b"aux" and len(toks) >= 4:
                if toks[3] == b"ss":
                    return "ss"
                if toks[3] == b"co":
                    return "co"
        if toks[0] == b"a" and len(toks) == 4:
            return "gr"
        break
    name = strip_compression(inner).lower()
    for ext, f in _EXT.items():
        if name.endswith(ext):
            return f
    return "edgelist"


def check_chunk_bytes(chunk_bytes, option: str = "chunk_bytes", scale: int = 1) -> None:
    """Refuse a text chunk size that is not a whole number from 1 byte to
    :data:`MAX_CHUNK_BYTES` (``scale``: bytes per unit of ``option``, for messages)."""
    top = MAX_CHUNK_BYTES // scale
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, (int, np.integer)):
        raise UsageError(f"{option} {chunk_bytes!r}: expected a whole number from 1 to {top:,}")
    if not 1 <= chunk_bytes * scale <= MAX_CHUNK_BYTES:
        raise UsageError(f"{option} {chunk_bytes}: expected a whole number from 1 to {top:,} "
                         "(text parsed per step; memory is a small multiple of it)")


#: peak memory of ingestion per byte of a chunk of the input (its text, the parsed
#: columns, their sort and the table written): measured 14 (a 155 MB DIMACS file read as
#: one chunk, --chunk-mb 1024: 2.3 GB)
CHUNK_WORK_FACTOR = 16
#: the most text one byte of a gzip stream can stand for (deflate's limit, about 1032:1);
#: xz, bzip2 and zstd have no such useful bound
GZIP_MAX_RATIO = 1032


def check_chunk_memory(path, chunk_bytes: int, *, option: str = "chunk_bytes", scale: int = 1) -> None:
    """Refuse, before the input is read, chunks that take more memory to parse than is
    available here (:data:`CHUNK_WORK_FACTOR` bytes a byte of text): ``--chunk-mb 1024``
    was accepted on any machine and took 2.3 GB for a 155 MB file, about 16 GB for a
    large one (and ``ingest(chunk_bytes=1 << 30)`` from Python had no check at all).  A
    chunk is at most the text the file holds: its size (plain text, a tar),
    :data:`GZIP_MAX_RATIO` times it for gzip (a 52 KB ``.gr.gz`` was refused as if a
    whole 1 GB chunk could come of it); the compression is told by the file's first
    bytes, as ingest tells it (a gzip file named ``.gr`` was bounded by its size).
    The default chunk is never refused here.  ``option``/``scale``: the option's name
    and its unit in bytes, for the message (the CLI's ``--chunk-mb``)."""
    import stat

    from gpu_sssp.kernels.errors import OptionError
    from gpu_sssp.kernels.memory import available_memory, bound_note, fmt_bytes

    from ..fsnames import shown
    from ._source import compression_of

    path = Path(path)
    chunk = int(chunk_bytes)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # (a FIFO's open waits for a writer: ingest refuses it, in its words)
            return
        size = st.st_size
        with open(path, "rb") as fh:
            kind = compression_of(path, fh.read(8))
    except OSError:  # (a missing or unreadable input is ingest's own error, with its name)
        return
    if kind is None:
        chunk = min(chunk, size)
    elif kind == "gz":
        chunk = min(chunk, size * GZIP_MAX_RATIO)
    need = chunk * CHUNK_WORK_FACTOR
    avail = available_memory()
    if avail is None or need <= avail or chunk <= DEFAULT_CHUNK_BYTES:
        return
    why = bound_note(avail)
    fit = max(1, min(avail // CHUNK_WORK_FACTOR, DEFAULT_CHUNK_BYTES) // scale)
    raise OptionError(f"{option} {int(chunk_bytes) // scale}: reading {shown(path)} {fmt_bytes(chunk)} at a time "
                      f"takes about {fmt_bytes(need)} of memory, more than the {fmt_bytes(avail)} available "
                      f"here{why}; give {option} {fit} or less (the default is {DEFAULT_CHUNK_BYTES // scale})")


def warn_reading(display, meta: dict) -> None:
    """Log the warnings for a file read by a guess about its meaning, which changes every
    path: read as directed (a METIS file listing each edge at one end: ``directed_reason``
    in the metadata), or a MatrixMarket matrix that is not square read as a graph of
    max(rows, cols) vertices (``mtx_rows``, ``mtx_cols``).  Never silent, whether the file
    is ingested now or its cached copy (``pipeline.graph.load_graph``) is read."""
    if meta.get("directed_reason"):
        log.warning("%s: %s; shortest paths follow the listed direction only: ingest with %s to read each "
                    "entry as an edge both ways", display, meta["directed_reason"], render(opt("--undirected")))
    rows, cols = meta.get("mtx_rows"), meta.get("mtx_cols")
    if rows is not None and cols is not None and rows != cols:
        # (a 3 x 4 MatrixMarket file was read as a graph of 4 vertices without a word)
        log.warning("%s: a %s x %s matrix, not square: read as a graph of %s vertices, row i and column i being "
                    "the same vertex i", display, f"{rows:,}", f"{cols:,}", f"{max(rows, cols):,}")


def _flag(value, name: str) -> bool:
    """A True/False option (or 0/1; ``None``: not given, False): ``undirected="no"`` is
    truthy and made an undirected graph (``load_graph(path, undirected="no")``: 9,662 arcs
    of rome99's 8,859); the rule of ``solve``'s flags (``kernels.registry.check_flag``)."""
    from gpu_sssp.kernels.registry import check_flag

    return False if value is None else check_flag(value, name)


def ingest(path, out, *, format=None, weights=None, undirected=False, zero_based=False,
           weight_type=None, chunk_bytes=DEFAULT_CHUNK_BYTES, row_group_size=1 << 20,
           max_vertices=None, max_arcs=None, max_isolated_vertices=None, replace: bool = True) -> dict:
    """Convert a graph file (or a DIMACS ``.ss``/``.co`` file) to Parquet.

    Parameters
    ----------
    path : str or Path
        Input file; ``.gz``, ``.xz``, ``.bz2``, ``.zst`` stream-decompressed; a ``.tar.gz``
        (SuiteSparse) is read at its main ``.mtx`` member.
    out : str or Path
        Output Parquet file, written under a temporary name in the same folder and
        renamed only on success.
    format : str, optional
        ``gr``, ``ss``, ``co``, ``mtx``, ``metis``, ``edgelist`` or ``pace``; detected
        from content and extension when omitted. A file whose start names another
        format (:func:`refuse_other_format`) is refused, whether ``format`` is given
        or detected.
    weights : str, optional
        ``"file"`` (default: the file's weights, 1 for unweighted inputs), ``"unit"``,
        ``"random:LO:HI:SEED"`` (integers ``default_rng(SEED).integers(LO, HI + 1)``, one
        draw per input edge in file order, the same weight for both directions of an
        undirected edge) or ``"random-float:LO:HI:SEED"`` (``uniform(LO, HI)``).
    undirected : bool
        Emit both arcs for every edge (METIS, symmetric MatrixMarket and PACE are
        undirected by nature and always do).
    zero_based : bool
        Accept 0-based ids in DIMACS/PACE files (kept as they are; ``id_base`` 0).
    weight_type : {"int32", "int64", "float32", "float64"}, optional
        Stored weight type; default int64 for integer weights, float64 for real ones.
    chunk_bytes : int
        Text parsed per step, 1 byte to 1 GiB (below 4 KiB, 4 KiB is used); peak memory
        is a small multiple of it.
    max_vertices, max_arcs, max_isolated_vertices : int, optional
        Limits on the sizes an input declares (default: the settings
        ``sssp.ingest.max-vertices``, ``sssp.ingest.max-arcs``,
        ``sssp.ingest.max-isolated-vertices``). Declared sizes are also checked against
        the file's size (uncompressed inputs) before anything is read; see
        ``pipeline.ingest._limits``.
    replace : bool
        Replace an existing ``out`` (default).  False: a graph's ``out`` is given its
        name only where no file has it (an ingested copy another process made meanwhile,
        and may hold in use, stays: ``FileExistsError``, the new file dropped).

    Returns
    -------
    dict
        The metadata stored in the file (see module docstring).

    Raises
    ------
    InputError
        Malformed input: names the file, the line where there is one, and what was
        expected; also a header that declares more than the file can hold or than the
        limits allow, and integer weights too large for exact path sums.
        ``ChangedWhileRead`` (an ``InputError``): the file's size, times or inode moved
        while it was read (an edit in place, a copy over it), or a tarball's bytes
        differ between two reads: nothing is written, read it again.
    ValueError
        Bad options.
    UsageError
        ``out`` is the input file (the same file, also through a link):
        ``pipeline.writers.refuse_input_as_output``; ``chunk_bytes`` that is not a
        whole number from 1 to 1 GiB.
    OptionError
        ``chunk_bytes`` whose chunks of this file would take more memory to parse than
        is available (:func:`check_chunk_memory`), before anything is read.
    """
    check_chunk_bytes(chunk_bytes)
    undirected = _flag(undirected, "undirected")
    zero_based = _flag(zero_based, "zero_based")
    path, out = Path(path), Path(out)
    refuse_input_as_output(out, [path])  # before anything is read (sssp ingest relies on it)
    refuse_non_parquet_name(out, "-o")
    check_chunk_memory(path, chunk_bytes)
    parse_weights_spec(weights)  # a bad --weights is one line before anything is read
    limits = Limits.from_settings(max_vertices, max_arcs, max_isolated_vertices)
    fmt = normalise_format(format) if format else detect_format(path)
    if weight_type is not None and weight_type not in WEIGHT_TYPES:
        raise UsageError(f"{opt('--weight-type ' + repr(str(weight_type)))}: expected one of {', '.join(WEIGHT_TYPES)}")
    t0 = time.perf_counter()
    if fmt in ("ss", "co"):
        meta = _ingest_aux(path, out, fmt, chunk_bytes=chunk_bytes, limits=limits, forced=bool(format),
                           zero_based=zero_based, replace=replace)
    else:
        id_type = None
        real_weights = False
        while True:
            try:
                meta = _ingest_edges(path, out, fmt, weights=weights, undirected=undirected,
                                     zero_based=zero_based, weight_type=weight_type,
                                     chunk_bytes=chunk_bytes, row_group_size=row_group_size,
                                     id_type=id_type, limits=limits, forced=bool(format), replace=replace,
                                     real_weights=real_weights)
                break
            except RealWeightAfterIntegers:
                # "1" then "2.5" (DIMACS .gr, edge lists: the first weight decides the
                # column): with a real weight type asked for, every weight is read as a
                # real number (rounded to nearest, as any real token), else one line
                if real_weights or weight_type not in ("float32", "float64"):
                    raise
                log.info("real weights after integer ones: re-reading %s with real weights", path)
                real_weights = True
            except IdOverflow:
                if id_type == "int64":  # pragma: no cover - cannot happen
                    raise
                log.info("ids exceed int32: re-reading %s with int64 ids", path)
                id_type = "int64"
    dt = time.perf_counter() - t0
    log.info("ingested %s (%s): %s in %.2fs", path, fmt,
             {k: meta.get(k) for k in ("vertices", "arcs", "weight_type")}, dt)
    return meta


_PEEK = 1 << 16


def refuse_other_format(path, display, fmt: str, forced: bool) -> None:
    """Refuse to read a file as ``fmt`` when its start is plainly another format, before
    anything is read: a ``%%MatrixMarket`` banner or a DIMACS/PACE ``p`` line of another
    format (also a DIMACS problem not read here, such as ``p res``), and for edge lists a
    METIS graph (:func:`._formats.metis_for_edgelist`), whose header an edge-list read
    would take for an arc. ``forced``: ``fmt`` was asked for (``--format``), so the
    message says to drop it where detection would pick the right format."""
    head, inner = peek_text(path, _PEEK)
    complete = len(head) < _PEEK
    sig = file_signature(head, complete=complete)
    ambiguous = False
    if sig is not None and sig[1] is None:
        raise InputError(display, sig[0], dimacs_problem_message(sig[2]))
    if sig is not None and sig[1] != fmt:
        line, kind, text = sig
        what = f"is {KIND_NAMES[kind]} ({_show(text)})"
    elif sig is None and fmt == "edgelist" and (m := metis_for_edgelist(head, complete=complete)):
        if forced and not m[2] and _detect(head, inner) != "metis":  # it reads both ways, and an
            # edge list was asked for, of a file not named as METIS (.graph): one ('2 2 / 2 1 /
            # 1 2' in a.el was refused with --format edgelist too: no way round)
            log.warning("%s: it also reads as a METIS graph (header %s, then one adjacency line per vertex); read "
                        "as an edge list, as %s asks", display, _show(m[1]), render(opt(f"--format {fmt}")))
            return
        line, kind, ambiguous = m[0], "metis", not m[2]
        what = f"looks like {KIND_NAMES[kind]} (header {_show(m[1])}, then one adjacency line per vertex)"
    else:
        return
    if forced and _detect(head, inner) == kind:
        todo = f"drop {opt(f'--format {fmt}')}, or pass {opt(f'--format {kind}')}"
    else:
        todo = f"pass {opt(f'--format {kind}')}"
    if ambiguous and not forced:  # (it reads as an edge list too)
        todo += f" ({opt('--format edgelist')} reads it as an edge list)"
    raise InputError(display, line, f"the file {what}, not {KIND_NAMES[fmt]}: {todo}")


def _input_state(path):
    """The input's :func:`pipeline.fsnames.stat_state` (through links), or None for what
    is not a regular file (a pipe's times move as it is written)."""
    import os
    import stat

    st = os.stat(path)
    return stat_state(st) if stat.S_ISREG(st.st_mode) else None


def _refuse_changed(path, display, before) -> None:
    """Raise ``ChangedWhileRead`` where the input's state moved since ``before``
    (:func:`_input_state`): an edit in place during the read (even one that kept its size
    and put its mtime back: the ctime moved) made a graph of old and new lines, recorded
    under a SHA-256 of neither, and ``sssp ingest -o`` wrote it without a word."""
    if before is not None and _input_state(path) != before:
        raise ChangedWhileRead(display, None, "the file changed while it was read (its size, times or inode "
                               "moved): read it again once it is no longer being written")


def _ingest_edges(path, out, fmt, *, weights, undirected, zero_based, weight_type, chunk_bytes,
                  row_group_size, id_type, limits, forced=False, replace=True, real_weights=False):
    reader = READERS[fmt]
    before = _input_state(path)
    with Source(path) as src:
        display = src.display
        if id_type is None:  # (not again when re-reading with int64 ids)
            refuse_other_format(path, display, fmt, forced)
        cursor = LineCursor(src, chunk_bytes)
        limits = limits.bind(display, src.text_size)
        if zero_based and fmt in ("mtx", "metis"):
            # (dropped without a word: the ids were read 1-based, id_base 1, exit 0)
            what = "a MatrixMarket file's" if fmt == "mtx" else "a METIS graph's"
            raise UsageError(f"{display}: {opt('--zero-based')} applies to DIMACS and PACE files; {what} vertices "
                             f"are numbered from 1 by its format: leave {opt('--zero-based')} out")
        kwargs = {"zero_based": zero_based, "undirected": undirected, "limits": limits}
        if fmt == "edgelist":
            kwargs["zero_based"] = True
        if real_weights:  # (gr and edge lists: see ingest)
            kwargs["real_weights"] = True
        try:
            hdr, batches = reader(cursor, display, **kwargs)
        except InputError as exc:
            # the header did not parse: if the content is plainly another format (a
            # METIS file named .gr), say which
            if not isinstance(exc, TruncatedInput) and exc.line is not None and exc.line <= 1000:
                hint = format_hint(peek_text(path)[0], fmt)
                if hint:
                    raise InputError(exc.path, exc.line, f"{exc._message}; {hint}") from None
            raise
        wp = WeightPlan(weights, hdr.weighted, hdr.weight_float, weight_type, display)
        if fmt == "metis":
            expand = hdr.extra.pop("expand")
        elif fmt == "pace":
            expand = True
        else:
            expand = undirected or not hdr.directed
        directed = hdr.directed and not undirected
        if id_type is None:
            if hdr.vertices is not None:
                id_type = "int32" if hdr.id_base + hdr.vertices - 1 <= np.iinfo(np.int32).max else "int64"
            else:
                id_type = "int32"
        cursor.id_type = pa.int32() if id_type == "int32" else None
        sink = EdgeSink(out, display, vertices=hdr.vertices, id_base=hdr.id_base, expand=expand,
                        weights=wp, id_type=id_type, row_group_size=row_group_size, limits=limits,
                        header_line=hdr.header_line, replace=replace,
                        # a MatrixMarket 'real' field declares every value real, '123456789' too
                        # (its rounding to the weight type is the type's); elsewhere a token
                        # written as an integer is one, refused where the real type rounds it
                        integer_tokens=fmt != "mtx")
        try:
            for u, v, w, b in batches:
                if (fmt == "metis" and hdr.extra.get("metis_listing") == "both-ends"
                        and wp.kind in ("random", "random-float") and len(u)):
                    # both ends of an edge are listed: give them one draw, in the order
                    # the edge first appears
                    try:
                        w = metis_pair_weights(u, v, lambda k: wp.make(k, None))
                    except ValueError as exc:
                        i = int(exc.args[0])
                        raise InputError(display, b.line_of(i), f"edge {u[i]}-{v[i]} is listed at vertex "
                                         f"{u[i]} but not at {v[i]}: not a symmetric METIS graph") from None
                    saved, wp.kind = wp.kind, "file"
                    try:
                        sink.add(u, v, w, b)
                    finally:
                        wp.kind = saved
                    continue
                sink.add(u, v, w, b)
            vertices = hdr.vertices if hdr.vertices is not None else sink.max_id + 1
            sink.finish_checks(vertices)
            meta = {
                "vertices": int(vertices),
                "directed": bool(directed),
                "source_file": Path(path).name,
                "source_member": src.member,
                "source_sha256": src.sha256(),
                "format": fmt,
                "created_by": f"sssp-ingest {__version__}",
                "undirected_option": bool(undirected),
                "header": hdr.header_text or None,
            }
            meta.update(hdr.extra)
            if fmt == "mtx":
                meta["mtx_entries"] = hdr.expected
            _refuse_changed(path, display, before)  # after the last byte was read and hashed
            meta = sink.commit(meta)
            warn_reading(display, meta)
            return meta
        except BaseException:
            sink.abort()
            raise


def _ingest_aux(path, out, fmt, *, chunk_bytes, limits, forced=False, zero_based=False, replace=True):
    """A DIMACS ``.ss`` or ``.co`` file to Parquet; its ids are 1-based, or 0-based with
    ``zero_based`` (as the graph's: ``--zero-based``), recorded as ``id_base``.  A ``.co``
    file whose first coordinates are integers and a later one real is read again with
    real coordinates."""
    try:
        return _ingest_aux_once(path, out, fmt, chunk_bytes=chunk_bytes, limits=limits, forced=forced,
                                zero_based=zero_based, replace=replace)
    except RealCoordinateAfterIntegers:
        return _ingest_aux_once(path, out, fmt, chunk_bytes=chunk_bytes, limits=limits, forced=forced,
                                zero_based=zero_based, replace=replace, real=True)


def _ingest_aux_once(path, out, fmt, *, chunk_bytes, limits, forced=False, zero_based=False, replace=True,
                     real=False):
    base = 0 if zero_based else 1
    before = _input_state(path)
    with Source(path) as src:
        display = src.display
        refuse_other_format(path, display, fmt, forced)
        cursor = LineCursor(src, chunk_bytes)
        limits = limits.bind(display, src.text_size)
        if fmt == "ss":
            count, hline, htext, spec = read_ss(cursor, display, limits)
        else:
            count, hline, htext, spec = read_co(cursor, display, limits, real=real)
        cols_all = []
        lines_seen = 0
        for b in iter_batches(cursor, spec, display, hline):
            if lines_seen + len(b) > count:
                i = count - lines_seen
                raise InputError(display, b.line_of(i), f"more records than announced: expected {count} "
                                 f"(from '{htext}' at line {hline})")
            lines_seen += len(b)
            ids = b.cols[0]
            if len(ids) and ids.min() < base:
                i = int(np.argmax(ids < base))
                raise InputError(display, b.line_of(i), f"vertex id {ids[i]} is negative" if ids[i] < 0 else
                                 f"vertex id 0: DIMACS ids start at 1 ({opt('--zero-based')} for a 0-based file)")
            cols_all.append(b.cols)
        if lines_seen != count:
            raise InputError(display, cursor.lineno, f"record count does not match the header: expected "
                             f"{count} (from '{htext}' at line {hline}), found {lines_seen}: the records "
                             f"run out at the end of the file (after line {cursor.lineno - 1})")
        if cols_all:
            cols = [np.concatenate([c[j] for c in cols_all]) for j in range(len(spec.fields))]
        else:
            cols = [np.zeros(0, dtype=np.float64 if fl else np.int64) for fl in spec.floats]
        ids = cols[0]
        id_pa = pa.int32() if (len(ids) == 0 or ids.max() <= np.iinfo(np.int32).max) else pa.int64()
        meta = {"source_file": Path(path).name, "source_sha256": src.sha256(), "format": fmt,
                "created_by": f"sssp-ingest {__version__}", "header": htext, "count": int(count),
                "id_base": base}
        if fmt == "ss":
            schema = pa.schema([("source", id_pa)])
            meta["duplicates"] = int(len(ids) - len(np.unique(ids)))
            arrays = [ids]
        else:
            xy = pa.float64() if spec.floats[1] else pa.int64()
            schema = pa.schema([("vertex", id_pa), ("x", xy), ("y", xy)])
            meta["duplicates"] = int(len(ids) - len(np.unique(ids)))
            arrays = cols
        w = AtomicParquet(out, schema, replace=replace)
        try:
            w.write([np.asarray(a).astype(schema.field(i).type.to_pandas_dtype()) for i, a in enumerate(arrays)])
            _refuse_changed(path, display, before)
            w.commit(meta)
        except BaseException:
            w.abort()
            raise
        return meta


def read_sources(path, *, vertices=None, id_base=1) -> np.ndarray:
    """Source ids from a DIMACS ``.ss`` file, a plain one-id-per-line text, or an
    ingested ``.ss`` Parquet file; order and duplicates are kept.

    Parameters
    ----------
    path : str or Path
    vertices : int, optional
        When given, every id must lie in ``id_base .. id_base + vertices - 1``.
    id_base : int
        0 or 1.

    Returns
    -------
    numpy.ndarray of int64

    Raises
    ------
    InputError
        Malformed file or a vertex that does not exist (file and line named).
    """
    from ..sources import _read_id_text, check_id_memory  # the reader of every sources and targets file

    path = Path(path)
    if is_parquet_name(path):
        from ..fsnames import read_metadata, read_table  # any file name

        check_id_memory(read_metadata(path).num_rows, str(path), None, "source")  # before the column is read
        ids = read_table(path, columns=["source"]).column("source").to_numpy().astype(np.int64)
        if vertices is not None:
            _check_sources(ids, None, str(path), vertices, id_base)
        return ids

    def check(col, line_of, display):
        if vertices is not None:
            _check_sources(col, line_of, display, vertices, id_base)

    def counted(count, display, line, _where):  # more ids than memory holds: refused as they are read
        check_id_memory(count, display, line, "source")

    ids, header, display, end = _read_id_text(path, "source", check, counted)
    if header is None and len(ids) == 0:
        raise InputError(display, None, "empty file: expected source ids")
    if header is not None and len(ids) != header[0]:
        count, hline, htext = header
        raise InputError(display, end, f"source count does not match the header: "
                         f"expected {count} (from '{htext}' at line {hline}), found {len(ids)}: "
                         f"the sources run out at the end of the file (after line {end - 1})")
    return ids


def _check_sources(ids, line_of, display, vertices, id_base):
    lo, hi = id_base, id_base + int(vertices) - 1
    bad = (ids < lo) | (ids > hi)
    if bad.any():
        i = int(np.argmax(bad))
        line = line_of(i) if line_of is not None else None
        raise InputError(display, line, f"source vertex {ids[i]} does not exist: the graph has ids {lo}..{hi}")
