"""Atomic writers for study outputs: Parquet batch files, JSON documents, a journal.

Every file appears under its final name complete or not at all: it is written to a
temporary name in the same folder, flushed to disk, then renamed with ``os.replace``
(atomic on POSIX file systems).  A process killed mid-write leaves at most a
temporary ``.NAME.tmp-<12 hex digits>`` beside ``NAME``, which :func:`remove_temporaries`
clears where the caller says (a study: in its own folders only, on start and finish).
A command's single output file (``sssp ingest -o``, ``generate -o``, ``solve -o``) is
written under ``.NAME.<pid>.<8 hex>.tmp`` (:func:`owned_temp_for`), which the next run
to that output removes once its process is gone and it is 10 minutes old
(:func:`remove_abandoned_temporaries`); a failure of the file system there is an
:class:`OutputWriteError` naming the output.
"""
from __future__ import annotations

import contextlib
import errno
import itertools
import json
import logging
import os
import re
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.kernels.errors import UsageError, opt
from gpu_sssp.pipeline.fsnames import arrow_file, shortened, shown

log = logging.getLogger(__name__)

TMP_MARK = ".tmp-"
#: hex digits of a temporary name's random part (:func:`_temp_for`)
_TMP_RANDOM = 12
#: the whole name of a temporary file of :func:`atomic_path`: ``.NAME.tmp-<12 hex>``
#: (group ``name``: the final name it was to be renamed to)
_TMP_NAME = re.compile(r"\.(?P<name>.+)" + re.escape(TMP_MARK) + f"[0-9a-f]{{{_TMP_RANDOM}}}", re.DOTALL)
#: codec of a study's per-batch statistics files: small files on a task's critical path.
#: LZ4 (Parquet's LZ4_RAW) encodes an 8,192-row file faster than snappy and into fewer
#: bytes (1.26 against 1.89 ms on an H200 host's Xeon, 211 against 230 KB; zstd 1.79 ms,
#: 170 KB); read by pyarrow, DuckDB, Polars, Spark 3.3+ and parquet-mr 1.13+
STATS_COMPRESSION = "lz4"
#: the statistics files' only column with Parquet min/max statistics (which file holds a
#: source); those of the other columns cost a quarter of the encode
STATS_STATISTICS = ("source",)


def refuse_input_as_output(out, inputs, *, label: str = "output", named: str | None = None) -> None:
    """Refuse an output file that is one of ``inputs``: the same file by name, through a
    symbolic link or as a hard link (``os.path.samefile``).  Under the input's own name
    the write would replace the input; through a link it is as surely a mistake.  The one
    rule for ``pipeline.ingest.ingest`` and the commands that write a file from an input
    (``sssp solve -o``: ``workflows.common.check_output_file``); ``label`` names the
    output in the message (``--out`` on a command line); ``named``, where given, names
    the output and its path instead (``_named``: in the caller's words).

    Raises
    ------
    UsageError
        ``"<label> OUT: is the input file IN; give another output name"``.
    """
    out = Path(out)
    for path in inputs:
        try:
            same = out.exists() and Path(path).exists() and os.path.samefile(out, path)
        except OSError:  # unreadable: not known to be the same file
            same = False
        if same:
            raise UsageError(f"{named or f'{label} {shown(out)}'}: is the input file {shown(path)}; give another "
                             "output name")


def check_output_dir(out, *, option: str = "--out") -> None:
    """Refuse, before any input is read, an output folder that cannot be made: an
    existing file, a path below a file (``--out ok.gr/sub``: the OS said only "Not a
    directory"), or one where no file can be made (``--out /proc/x``: "[Errno 2] No such
    file or directory: '/proc/x'", naming no option)."""
    if not str(out).strip():
        # Path('') is the current folder: the study was written there ("wrote /stats/")
        raise UsageError(f"{opt(option + ' ' + repr(str(out)))}: an empty name; give a folder name")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{_named(option, out)}: is a file, not a folder; give a folder name")
    if out.is_symlink() and not out.exists():
        # (the OS said "[Errno 17] File exists" when the folder was made)
        raise UsageError(f"{_named(option, out)}: is a link to {shown(os.readlink(out))}, which does not exist; "
                         "make that folder or give another name")
    refuse_file_as_folder(out, option)
    refuse_unwritable_folder(out, _named(option, out))


def refuse_special_file(out, named: str, then: str = "give a file name") -> None:
    """Refuse an output path that exists and is not a regular file (a device, FIFO or
    socket): the finished output is renamed over its name, which would replace it (as
    root, ``-o /dev/null`` replaced /dev/null by a regular file).  ``named``: the option
    and path as the message names them; ``then``: what the message ends with."""
    import stat

    try:
        mode = os.stat(out).st_mode
    except OSError:  # missing (the usual case), or below a file: said elsewhere
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"{named}: not a regular file (a device, FIFO or socket); {then}")


def refuse_non_parquet_name(out, option: str = "-o") -> None:
    """Refuse an output Parquet file (an ingested or generated graph, a source or
    coordinate table) whose name does not end in ``.parquet``: every reader takes a file
    as Parquet only under that name, so ``sssp generate grid ... -o grid.gr`` wrote a
    file that ``sssp study grid.gr`` then refused ("is a Parquet file ... rename it")."""
    from gpu_sssp.pipeline.fsnames import is_parquet_name

    if is_parquet_name(out):
        return
    p = Path(out)
    better = p.with_name(p.name + ".parquet") if p.suffix.lower() in ("", ".ss", ".co") else p.with_suffix(".parquet")
    named = opt(f"{option} {shown(out)}", python=f"out={os.fspath(out)!r}")
    raise UsageError(f"{named}: the output is a Parquet file, which is read back (as a graph, "
                     f"sources or coordinates) only under a name ending in .parquet: give e.g. {shown(better)}")


def _named(option: str, path) -> str:
    """``--out PATH`` (``option`` as the command line spells it), in the caller's words
    (``out='PATH'`` from Python: ``kernels.errors.opt``)."""
    return opt(f"{option} {shown(path)}")


def refuse_file_as_folder(out, option: str) -> None:
    """Refuse an output path below an existing file (``-o ok.gr/x.parquet``): its
    nearest existing parent must be a folder.  Raised as a ``UsageError`` naming the
    option and that parent (the OS's "File exists" / "Not a directory" named neither)."""
    out = Path(out)
    for parent in out.parents:
        try:
            if not parent.exists():
                continue
        except OSError:  # unreadable: the write says why
            return
        if not parent.is_dir():
            raise UsageError(f"{_named(option, out)}: {shown(parent)} is a file, not a folder")
        return


def refuse_unwritable_folder(folder: Path, what: str) -> None:
    """Refuse, before any input is read, an output ``what`` (its option and name) whose
    ``folder`` (or, where it is still to be made, the nearest folder above it that
    exists) cannot take a new file: the write used to fail only after the work was done,
    naming its temporary file (``[Errno 2] Failed to open local file
    '/proc/.x.parquet.tmp-...'``).  A file is made there and removed (``os.access`` says
    yes to root everywhere)."""
    import tempfile

    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".sssp-probe-", dir=folder)
    except OSError as exc:
        raise UsageError(f"{what}: cannot write a file in {shown(folder)} "
                         f"({exc.strerror or type(exc).__name__})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def refuse_bad_report_path(report, option: str, *, inputs=(), folder=None, folder_option: str = "--out") -> None:
    """Refuse, before a study starts, a performance report path (``--report`` /
    ``report=``) that could not be written once the study is done: a folder, a missing
    folder or a file on the way, a folder that takes no file, or no bokeh (Dask draws the
    report with it); and one whose writing would destroy data: one of ``inputs`` (the
    graph, a sources or targets file: the report replaced the graph with HTML), a file
    that is not a regular one, or a path in the study's ``folder`` (its manifest, a
    batch file: the study could not be resumed).  ``option``: the option as the command
    line spells it (``--report``), named in the caller's words (``report=`` from Python)."""
    import importlib.util

    where = Path(report)
    if importlib.util.find_spec("bokeh") is None:
        raise UsageError(f"{opt(option)} needs bokeh (pip install 'bokeh>=3.1'), which Dask uses to draw the report")
    if where.is_dir():
        raise UsageError(f"{_named(option, where)}: is a directory; give an HTML file name "
                         f"(e.g. {shown(where / 'report.html')})")
    if folder is not None:
        inside, home = os.path.realpath(where), os.path.realpath(folder)
        if inside == home or inside.startswith(home.rstrip(os.sep) + os.sep):
            raise UsageError(f"{_named(option, where)}: is in the study folder {_named(folder_option, Path(folder))}, "
                             "whose files are the study's own (its manifest, journal and batches); give a file "
                             "outside it")
    refuse_special_file(where, _named(option, where))
    refuse_input_as_output(where, inputs, named=_named(option, where))
    if not where.parent.is_dir():
        refuse_file_as_folder(where, option)  # a file on the way: said so
        raise UsageError(f"{_named(option, where)}: no folder {shown(where.parent)} to write it in")
    # a folder that takes no file (/proc, read-only): refused now, not after the study
    refuse_unwritable_folder(where.parent, _named(option, where))


def batch_name(index: int) -> str:
    """File name of batch ``index``: ``batch-000123.parquet``."""
    return f"batch-{int(index):06d}.parquet"


_BATCH_NAME = re.compile(r"batch-[0-9]{6,}\.parquet")


def is_batch_name(name: str) -> bool:
    """Whether ``name`` is a batch file's name (:func:`batch_name`)."""
    return _BATCH_NAME.fullmatch(name) is not None


def _temp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}{TMP_MARK}{uuid.uuid4().hex[:_TMP_RANDOM]}")


#: the whole name of a temporary file of :func:`owned_temp_for` (a single output file:
#: ``sssp ingest``/``generate``/``solve -o``, an ingested copy in a cache folder, whose
#: leftovers ``pipeline.graph`` removes too): ``.NAME.<pid>.<8 hex>.tmp``
OWNED_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp", re.DOTALL)


#: bytes of a file name (NAME_MAX of Linux file systems) and those an owned temporary
#: adds to its output's: ".", ".<pid>" (up to 10 digits), ".<8 hex>", ".tmp"
_NAME_MAX = 255
_OWNED_EXTRA = 1 + 11 + 9 + 4


def _owned_base(name: str) -> str:
    """The part of an output's name its temporary repeats: the name itself, or, where
    the temporary's name would pass 255 bytes (an output name of 231 to 255 bytes is
    valid, and was refused as "File name too long" after the work was done), its first
    bytes and a digest of the whole (``~<16 hex>``), the same for every run."""
    return shortened(name, _NAME_MAX - _OWNED_EXTRA)


def owned_temp_for(path) -> Path:
    """The temporary name of a single output file (``sssp ingest -o``, ``generate -o``,
    ``solve -o``, an ingested copy): ``.NAME.<pid>.<8 hex>.tmp`` beside ``NAME`` (a name
    too long for that: its start and a digest, :func:`_owned_base`).  It names the
    process that writes it, so that a later run can tell one left by a killed process
    (:func:`remove_abandoned_temporaries`) from one still being written by another run
    to the same output."""
    path = Path(path)
    return path.with_name(f".{_owned_base(path.name)}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def remove_abandoned_temporaries(path) -> int:
    """Delete the temporary files of the output ``path`` (:func:`owned_temp_for`'s names
    for that very ``NAME``, plain files only) that a killed writer left: the process
    named in it does not run on this machine and the file has not changed for
    ``pipeline.graph.TEMP_GRACE_S`` (10 minutes: on a folder several machines share, the
    pid may be another host's writer), the rule of the cache folders' temporaries.
    Nothing else is touched; never raises.  Returns how many were removed."""
    from gpu_sssp.pipeline.graph import _abandoned

    path = Path(path)
    base = _owned_base(path.name)
    count = 0
    try:
        entries = list(os.scandir(path.parent if str(path.parent) else "."))
    except OSError:
        return 0
    for entry in entries:
        m = OWNED_TEMP.fullmatch(entry.name)
        if m is None or m["name"] != base:
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or not _abandoned(Path(entry.path), int(m["pid"])):
                continue
            os.unlink(entry.path)
        except (OSError, ValueError):
            continue
        log.info("removed %s, left by process %s", entry.path, m["pid"])
        count += 1
    return count


class OutputWriteError(UsageError, OSError):
    """A single output file (``-o``) could not be written: a full disk, a file-size
    limit, its folder removed or made read-only while the command ran.  One line naming
    the output (never the temporary file it was written under) and the system's reason;
    exit status 2.  An ``OSError`` too (``errno`` kept), for callers that catch those."""

    def __init__(self, path, exc: BaseException, label: str | None = None):
        code = getattr(exc, "errno", None)
        reason = os.strerror(code) if code else (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        self.output, self.label = Path(path), label
        what = f"{label} {shown(path)}" if label else shown(path)
        self.message = f"{what}: could not be written ({reason})"
        super().__init__(self.message)
        self.errno = code
        self.strerror = reason

    def __str__(self) -> str:  # (OSError's would be "[Errno N] reason", without the file)
        return self.message

    def __reduce__(self):  # (across processes: its __init__ takes other arguments than its args)
        cause = OSError(self.errno, self.strerror) if self.errno else OSError(self.strerror)
        return (type(self), (self.output, cause, self.label))


def temporary_of(name: str) -> str | None:
    """The final name whose temporary file of :func:`atomic_path` ``name`` is
    (``".batch-000003.parquet.tmp-0123456789ab"`` -> ``"batch-000003.parquet"``), or None
    for a name no writer here makes (``"notes.tmp-1.txt"``, ``".x.tmp-abc"``)."""
    m = _TMP_NAME.fullmatch(name)
    return m.group("name") if m else None


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _ensure_dir(folder: Path) -> None:
    """Create ``folder`` when missing (one ``stat`` where it exists: a study writes
    hundreds of files into a few folders, on a task's critical path)."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def atomic_path(path, *, fsync: bool = True, fsync_folder: bool | None = None, temp_name=None):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    The one mechanism behind every output of the project that is not streamed: the
    caller writes the temporary file, which on a clean exit is flushed (``fsync``),
    renamed over ``path`` with ``os.replace`` and its folder flushed.

    Parameters
    ----------
    path : str or os.PathLike
        Final name; its folder is created when missing.
    fsync : bool
        Flush the file to disk before the rename (survives a power loss, not only a
        killed process; the rename alone already protects against the latter).
    fsync_folder : bool, optional
        Flush the folder after the rename too (default: as ``fsync``).  Without it a
        power loss may forget the rename - the file is then missing, never partial.
        A study's statistics file skips it: a resume redoes a batch whose statistics
        file is missing, and the study flushes the folder once at its end
        (:func:`fsync_folder`).
    temp_name : callable, optional
        ``temp_name(path) -> Path``, the temporary name (default ``.NAME.tmp-<12 hex>``,
        which a study folder's :func:`remove_temporaries` clears; a single output file
        of a command takes :func:`owned_temp_for`'s, which names its process).

    Raises
    ------
    BaseException
        Whatever the caller's block raised: the temporary file is removed first and
        ``path`` is left as it was.
    """
    path = Path(path)
    _ensure_dir(path.parent)
    tmp = (temp_name or _temp_for)(path)
    try:
        yield tmp
        if fsync:
            try:
                fsync_file(tmp)
            except FileNotFoundError:  # the caller wrote nothing: os.replace says so below
                pass
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        named = _write_error(exc, path, tmp)
        if named is not None:
            raise named from exc
        raise
    if fsync if fsync_folder is None else fsync_folder:
        _fsync_dir(path.parent)


def _write_error(exc: BaseException, path: Path, tmp: Path | None = None):
    """``exc`` as an :class:`OutputWriteError` naming ``path`` when it is the system's
    refusal to write ``path`` (or its temporary file ``tmp``): a full disk, a file-size
    limit, ... said only "[Errno 28] No space left on device", naming no file (a study's
    ``summary.json`` and ``journal.jsonl`` in a full folder).  None for anything else: an
    error that already names its file (of another file read in the block), or not an
    ``OSError``."""
    if not isinstance(exc, OSError) or isinstance(exc, OutputWriteError):
        return None
    if exc.filename is not None and os.fspath(exc.filename) not in {str(path), str(tmp)}:
        return None
    if exc.errno is None and exc.filename is None and type(exc) is not OSError:
        return None  # (an OSError subclass of a library, with its own text)
    return OutputWriteError(path, exc)


def fsync_file(path) -> None:
    """Flush a written file's data to disk (``os.fsync``); raises ``OSError`` as it does.
    :func:`atomic_path` flushes its temporary file so; a study's statistics file is
    flushed so after its rename and its report (``pipeline.study.task.solve_chunk``)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder) -> None:
    """Flush a folder's entries to disk (best effort; see :func:`atomic_path`)."""
    _fsync_dir(Path(folder))


def _parquet_options(compression: str, use_dictionary, store_schema: bool = True, write_statistics=True) -> dict:
    """``pq.write_table``'s options: ``use_dictionary`` and ``write_statistics`` True/False
    or the columns to encode (to give min/max statistics)."""
    return {"compression": compression, "store_schema": bool(store_schema),
            "use_dictionary": use_dictionary if isinstance(use_dictionary, bool) else list(use_dictionary),
            "write_statistics": write_statistics if isinstance(write_statistics, bool) else list(write_statistics)}


def write_parquet_atomic(table: pa.Table, path, *, metadata: dict | None = None,
                         compression: str = "zstd", fsync: bool = True, use_dictionary=True,
                         fsync_folder: bool | None = None, store_schema: bool = True,
                         write_statistics=True, temp_name=None) -> int:
    """Write ``table`` to ``path`` atomically; return the file's size in bytes.

    Parameters
    ----------
    table : pyarrow.Table
    path : str or os.PathLike
        Final name; its folder is created when missing.
    metadata : dict, optional
        JSON-serialisable metadata stored under the schema key ``b"sssp"``.
    compression : str
        Parquet codec (``zstd``; a study's small statistics files use ``snappy``, which
        encodes in half the time).
    fsync, fsync_folder : bool
        Flush the file (and its folder) to disk: see :func:`atomic_path`.
    use_dictionary : bool or sequence of str
        Parquet dictionary encoding: every column (default), or only these.
    store_schema : bool
        Store the Arrow schema in the file (default).  Without it the file reads back
        in the Arrow types its Parquet types map to: a dictionary column then comes
        back as its values' type (a study's statistics files, see
        ``kernels.result.STATS_FILE_SCHEMA``).
    write_statistics : bool or sequence of str
        Parquet min/max statistics for every column (default), none, or these.
    temp_name : callable, optional
        The temporary's name (:func:`atomic_path`).
    """
    path = Path(path)
    if metadata is not None:
        meta = dict(table.schema.metadata or {})
        meta[b"sssp"] = json.dumps(metadata, default=str).encode()
        table = table.replace_schema_metadata(meta)
    return write_parquet_parts_atomic([table], path, compression=compression, fsync=fsync,
                                      fsync_folder=fsync_folder, use_dictionary=use_dictionary,
                                      store_schema=store_schema, write_statistics=write_statistics,
                                      temp_name=temp_name)


def write_parquet_parts_atomic(parts, path, *, compression: str = "zstd", fsync: bool = True,
                               fsync_folder: bool | None = None, use_dictionary=True, store_schema: bool = True,
                               row_group_size: int | None = None, write_statistics=True, temp_name=None) -> int:
    """Write the tables of ``parts`` (an iterable; every one in the first one's schema,
    whose metadata the file keeps) to ``path`` atomically, holding only one part at a
    time; return the file's size in bytes.  Each part is one or more row groups of at
    most ``row_group_size`` rows (default pyarrow's, as ``pq.write_table``): the writer
    holds a row group's encoded pages until it is flushed.  Other options: see
    :func:`write_parquet_atomic`, which writes one part; ``temp_name``: see
    :func:`atomic_path`."""
    parts = iter(parts)
    first = next(parts)
    with atomic_path(path, fsync=fsync, fsync_folder=fsync_folder, temp_name=temp_name) as tmp:
        with arrow_file(tmp, "wb") as sink:  # any file name (fsnames)
            with pq.ParquetWriter(sink, first.schema,
                                  **_parquet_options(compression, use_dictionary, store_schema,
                                                     write_statistics)) as w:
                for part in itertools.chain([first], parts):
                    w.write_table(part, row_group_size=row_group_size)
        size = os.stat(tmp).st_size
    return size


def encode_parquet(table: pa.Table, *, compression: str = "zstd", use_dictionary=True,
                   store_schema: bool = True, write_statistics=True,
                   key_value_metadata: dict | None = None) -> pa.Buffer:
    """``table`` encoded in memory as :func:`write_parquet_atomic` would write it (a
    small file: a study's statistics file, written with :func:`write_bytes_atomic`);
    ``write_statistics``: True, False or the columns given min/max statistics;
    ``key_value_metadata``: ``{str: str}`` written into the file's footer (kept without
    the Arrow schema too, unlike the table's schema metadata)."""
    sink = pa.BufferOutputStream()
    opts = _parquet_options(compression, use_dictionary, store_schema, write_statistics)
    if not key_value_metadata:
        pq.write_table(table, sink, **opts)
        return sink.getvalue()
    with pq.ParquetWriter(sink, table.schema, **opts) as w:
        w.write_table(table)
        w.add_key_value_metadata(dict(key_value_metadata))  # pyarrow >= 17
    return sink.getvalue()


def write_bytes_atomic(data, path, *, fsync: bool = True, fsync_folder: bool | None = None) -> int:
    """Write ``data`` (bytes-like: a ``pyarrow.Buffer`` too) to ``path`` atomically
    (:func:`atomic_path`); return its size."""
    view = memoryview(data)
    with atomic_path(path, fsync=fsync, fsync_folder=fsync_folder) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(view)
    return view.nbytes


def write_json_atomic(obj, path) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically.

    The file and its folder are always fsync'd: the JSON documents (manifest,
    summary) are small and rare, so durability costs little.

    Parameters
    ----------
    obj : object
        JSON-serialisable; NumPy scalars and arrays and ``Path`` objects are
        converted.
    path : str or os.PathLike
        Final name; its folder is created when missing.

    Raises
    ------
    TypeError
        ``obj`` holds something that cannot be serialised.  As for any failure, the
        temporary file is removed and ``path`` is left as it was.
    OSError
        The file cannot be written.
    """
    with atomic_path(path) as tmp:
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=2, default=_json_default)
            fh.write("\n")


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def remove_temporaries(folder, finals) -> int:
    """Delete the temporary files that killed writers of :func:`atomic_path` left in
    ``folder``; return how many.

    Only ``folder``'s own entries are looked at, never its subfolders (a folder inside
    may be another's: a study run with its ``--out`` inside this one, a user's own
    files), and only files named as :func:`atomic_path` names a temporary
    (``.NAME.tmp-<12 hex digits>``, :func:`temporary_of`) whose final ``NAME`` is one of
    ``finals``: another program's temporary in the same folder (``sssp solve -o`` writing
    there at the same time) is not ours to remove.

    Parameters
    ----------
    folder : str or os.PathLike
        A folder (a missing one holds nothing).
    finals : collection of str, or callable
        The final names whose temporaries to remove, or a test of a final name
        (``finals(name) -> bool``).
    """
    folder = Path(folder)
    wanted = finals if callable(finals) else frozenset(finals).__contains__
    count = 0
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        final = temporary_of(entry.name)
        if final is None or not wanted(final):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        Path(entry.path).unlink(missing_ok=True)
        count += 1
    return count


class Journal:
    """Append-only record of finished batches (``journal.jsonl``, one JSON per line).

    Each line is written with one ``write`` and ``fsync``; a line cut short by a
    crash is ignored when reading.
    """

    def __init__(self, path):
        self.path = Path(path)

    def append(self, entry: dict) -> None:
        """Append ``entry`` as one JSON line and fsync it (see :meth:`extend`)."""
        self.extend([entry])

    def extend(self, entries: list[dict]) -> None:
        """Append each of ``entries`` as one JSON line, with one ``write`` and one fsync
        for all of them (batches that finish together cost one disk flush).

        Parameters
        ----------
        entries : list of dict
            JSON-serialisable; NumPy scalars and arrays and ``Path`` objects are
            converted.  The journal file is created when missing.

        Raises
        ------
        TypeError
            An entry holds something that cannot be serialised (nothing is written).
        OSError
            The journal cannot be opened or written.
        """
        if not entries:
            return
        line = "".join(json.dumps(e, default=_json_default, separators=(",", ":")) + "\n" for e in entries)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)  # less the umask
        try:
            # a torn previous line (crash mid-write) must not swallow this entry; its last
            # byte is read through the descriptor already open (no second open per append)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line
            data = memoryview(line.encode())
            while data:  # a short write (a file-size limit reached mid-line) is no entry written:
                wrote = os.write(fd, data)  # the next write raises (EFBIG, ENOSPC)
                if not wrote:
                    raise OSError(errno.EIO, os.strerror(errno.EIO), str(self.path))
                data = data[wrote:]
            os.fsync(fd)
        except OSError as exc:
            named = _write_error(exc, self.path)
            if named is not None:
                raise named from exc
            raise
        finally:
            os.close(fd)

    def repair(self) -> int:
        """Cut a last line torn by a crash (the bytes after the last newline: an entry
        whose write was killed half-way, its batch not done) so that the file is valid
        JSON Lines again for anyone who reads it; return the bytes cut.  Called when a
        study resumes, under its folder's lock, before anything is appended."""
        if not self.path.exists():
            return 0
        fd = os.open(self.path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if not size or os.pread(fd, 1, size - 1) == b"\n":
                return 0
            data = os.pread(fd, size, 0)
            keep = data.rfind(b"\n") + 1
            os.ftruncate(fd, keep)
            os.fsync(fd)
        finally:
            os.close(fd)
        log.warning("%s: cut a journal line torn by a crash (%d bytes)", self.path, size - keep)
        return size - keep

    def entries(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        with open(self.path, "rb") as fh:
            for raw in fh:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    entry = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    log.warning("%s: ignoring a truncated journal line", self.path)
                    continue
                if not isinstance(entry, dict):  # valid JSON, but no entry (a damaged file)
                    log.warning("%s: ignoring a journal line that is not an entry: %.40r", self.path, raw)
                    continue
                out.append(entry)
        return out


def wide_distance_table(result, id_base: int, *, field: str = "distances") -> pa.Table:
    """Wide form of a batch: column ``vertex`` then one column per source.

    Column names are the sources' file ids as strings (``"17"``); distances are
    float64 (``+inf`` unreachable), predecessors int64 (file ids, ``-1`` none).

    Parameters
    ----------
    result : kernels.result.Result
        A batch's result holding the array named by ``field``.
    id_base : int
        Offset from internal indices to file ids.
    field : {"distances", "predecessors"}
        Which ``(B, n)`` array of ``result`` to lay out.

    Returns
    -------
    pyarrow.Table
        ``n`` rows; column ``vertex`` (int64 file ids) then one column per distinct
        source.  A source repeated in the batch keeps only its first column, since
        column names must be unique.

    Raises
    ------
    AttributeError
        ``result`` has no such field, or does not hold it (``None``).
    """
    arr = getattr(result, field)
    n = arr.shape[1]
    cols = {"vertex": pa.array(np.arange(n, dtype=np.int64) + id_base)}
    for i, s in enumerate(result.sources):
        key = str(int(s) + id_base)
        if key in cols:  # a repeated source in one batch: keep the first
            continue
        col = arr[i]
        if field == "predecessors":
            col = np.where(col >= 0, col + id_base, -1).astype(np.int64)
        cols[key] = pa.array(np.ascontiguousarray(col))
    return pa.table(cols)
