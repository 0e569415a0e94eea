"""File names that are not valid UTF-8, and pyarrow.

Linux allows any bytes in a file name but ``/`` and NUL; Python carries a name that
is not valid UTF-8 as a ``str`` with lone surrogates (``os.fsdecode(b"na\\xffme.gr")``
is ``"na\\udcffme.gr"``).  pyarrow encodes a path it is given as strict UTF-8 and
raises ``UnicodeEncodeError`` on such a name, so every place that hands pyarrow a
user's path goes through :func:`arrow_file` (or :func:`open_parquet`): the name
itself where pyarrow can take it (pyarrow's own I/O, unchanged), the file opened by
Python otherwise.  :func:`shown` turns any name into text that prints everywhere, on
one line; :func:`printable` does the same for a message.
"""
from __future__ import annotations

import contextlib
import hashlib
import os

__all__ = ["is_utf8", "shown", "printable", "shortened", "safe_name", "refuse_pipe", "arrow_file", "open_parquet", "read_table", "read_metadata"]


def is_utf8(path) -> bool:
    """Whether pyarrow can take ``path`` as it is: the UTF-8 encoding of its ``str``
    (what pyarrow opens) is the name's bytes on the file system.  Not so for a name
    whose bytes are not UTF-8, nor, where Python's file-system encoding is not UTF-8
    (``PYTHONUTF8=0 LC_ALL=C``: ASCII, a Latin-1 locale), for any name beyond ASCII:
    pyarrow raised ``UnicodeEncodeError`` on its surrogates, or opened another name."""
    p = os.fspath(path)
    try:
        if isinstance(p, bytes):
            p.decode("utf-8")
            return True
        return p.encode("utf-8") == os.fsencode(p)
    except UnicodeError:
        return False


#: the longest name :func:`safe_name` gives, in bytes: a cached copy's name adds its
#: keys (``.XXXXXXXX`` three times, ``.parquet``), its companions theirs (``.csr.npz``,
#: ``.ch.npz``, ``.used``) and a writer its temporary name's (``.NAME.PID.XXXXXXXX.tmp``):
#: with a 255-byte input name the copy could not be made ("File name too long")
SAFE_NAME_BYTES = 120


def printable(text) -> str:
    """``text`` (a message) as text that prints everywhere: bytes that are not UTF-8 (a
    name's lone surrogates) become U+FFFD, so printing it never raises
    ``UnicodeEncodeError``.  Line breaks are kept (``workflows.common.one_line`` folds
    them); a name in a message is shown by :func:`shown`."""
    s = os.fspath(text) if isinstance(text, os.PathLike) else text
    if isinstance(s, bytes):
        return s.decode("utf-8", "replace")
    s = str(s)
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # surrogates that stand for no byte
        return s.encode("utf-8", "replace").decode("utf-8")


def is_parquet_name(path) -> bool:
    """Whether ``path``'s name says Parquet: it ends in ``.parquet``, any case
    (``g.Parquet`` too, and a file named ``.parquet``, whose ``Path.suffix`` is empty)."""
    return os.fsdecode(os.path.basename(os.fspath(path))).lower().endswith(".parquet")


def shown(text) -> str:
    """``text`` (a file or folder name) as printable text on one line: bytes that are not
    UTF-8 become U+FFFD (printing it never raises ``UnicodeEncodeError``), and a name
    with a character that does not print (a newline, a tab, a carriage return, an escape
    sequence, U+2028) is shown quoted with Python's escapes (``'new\\nline.gr'``): it
    was printed raw, which broke an error's one line in two (or folded the newline into
    a space: another file's name) and let a name's escape sequences drive the terminal.
    Idempotent: what it returns is shown as it is."""
    s = printable(text)
    if s.isprintable():
        return s
    return repr(s)


def shortened(name, room: int) -> str:
    """``name`` where it takes at most ``room`` bytes, else its first bytes and ``~`` and
    16 hex digits of the SHA-256 of the whole, in ``room`` bytes, the same for every run:
    the part of a file's name that its temporary's name repeats (``pipeline.writers.
    owned_temp_for``, ``pipeline.graph.cache_temp_for``), so that a name of up to 255
    bytes is written.  A UTF-8 name keeps whole characters (as :func:`safe_name`): cut
    inside one, the temporary's name was not UTF-8, which a file system that takes only
    UTF-8 names (macOS, ZFS ``utf8only``) refuses."""
    raw = os.fsencode(name)
    if len(raw) <= room:
        return name
    head = raw[:room - 17]
    try:
        raw.decode("utf-8")
    except UnicodeError:
        pass  # not UTF-8 anyway: its bytes as they come
    else:
        head = head.decode("utf-8", "ignore").encode("utf-8")  # (drops a character cut at the end)
    return os.fsdecode(head + b"~" + hashlib.sha256(raw).hexdigest()[:16].encode("ascii"))


def safe_name(name) -> str:
    """A file name derived from ``name`` that is valid UTF-8 and short enough to take
    suffixes: ``name`` itself when it is both (at most :data:`SAFE_NAME_BYTES` bytes),
    else ``input-`` and the first 8 hex digits of the SHA-256 of its bytes (a long UTF-8
    name keeps its first 80 bytes before them: ``LONG-NAME...-input-XXXXXXXX``)."""
    raw = os.fsencode(name)
    try:
        text = raw.decode("utf-8")
    except UnicodeError:
        text = None
    if text is not None and len(raw) <= SAFE_NAME_BYTES:
        return os.fsdecode(name)
    tag = "input-" + hashlib.sha256(raw).hexdigest()[:8]
    if text is None:
        return tag
    head = raw[:80].decode("utf-8", "ignore").encode("utf-8")  # whole characters only
    # (as the file system's name: under an ASCII file-system encoding a str of these
    # characters could not be encoded back)
    return os.fsdecode(head + b"...-" + tag.encode("ascii"))


def refuse_read_only_folder(folder) -> None:
    """Raise ``PermissionError`` where ``folder`` exists and its mode lets no one write
    (``chmod a-w``, a data folder such as ``0555``): caches are not written there even by
    root, whom permissions do not stop (``.sssp-cache/``, CSR and hierarchy caches were
    written into a shared read-only data folder); the callers fall back to the user's
    cache folder as for any user who cannot write there."""
    import errno
    import stat

    try:
        mode = os.stat(folder).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode) and not mode & 0o222:
        raise PermissionError(errno.EACCES, f"read-only folder (mode {stat.S_IMODE(mode):04o})", os.fspath(folder))


def stat_state(st: os.stat_result) -> tuple:
    """What says a file changed, from its stat: size, mtime, ctime (an edit that put the
    old mtime back still moves it), inode and device (a file replaced by another).  The
    ingested copies' key (``pipeline.graph``) and ingest's own look before it writes."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def refuse_pipe(path, why: str, display=None) -> None:
    """Refuse an input that is a pipe, FIFO or socket (``<(zcat g.gr)``, a ``mkfifo``):
    it cannot be read as ``why`` says (a named FIFO was waited on for ever).

    Raises
    ------
    pipeline.errors.InputError
        One line naming ``display`` (default ``path``)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing or unreadable: the caller's own open says so
        return
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        from .errors import InputError

        raise InputError(display if display is not None else path, None,
                         f"is a pipe (FIFO) or socket, not a file: {why}; save it to a file first")


@contextlib.contextmanager
def arrow_file(path, mode: str = "rb"):
    """Yield what to hand pyarrow for ``path``: the name (a ``str``) when pyarrow can
    encode it, else a name it can, ``/proc/self/fd/N`` for the file opened here in
    ``mode`` (``"rb"`` or ``"wb"``; closed on exit).  pyarrow opens that name itself and
    does its own I/O in C++, as for any other file: no Python file object whose reads
    and release need the GIL on Arrow's threads (which can abort an exiting
    interpreter, see ``pipeline.ingest._records.arrow_copy``).  Where ``/proc`` is not
    mounted, the file object itself is handed over."""
    p = os.fspath(path)
    if mode == "rb":
        refuse_pipe(p, "a Parquet file is read from its end (its footer) first")
    try:
        # the name's own bytes as pyarrow will encode them again, whatever Python's
        # file-system encoding (os.fsdecode gives surrogates for them under an ASCII one)
        name = os.fsencode(p).decode("utf-8")
    except UnicodeError:
        name = None
    if name is not None:
        yield name
        return
    if mode not in ("rb", "wb"):
        raise ValueError(f"mode {mode!r}: 'rb' or 'wb'")
    flags = os.O_RDONLY if mode == "rb" else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(p, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        alias = f"/proc/self/fd/{fd}"
        if os.path.exists(alias):
            yield alias
        else:
            with os.fdopen(fd, mode, closefd=False) as f:
                yield f
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_parquet(path, **kwargs):
    """Yield a ``pyarrow.parquet.ParquetFile`` on ``path`` whatever its name (``kwargs``:
    the reader's options, e.g. ``page_checksum_verification``); the file is closed when
    the block ends."""
    import pyarrow.parquet as pq

    with arrow_file(path) as src, pq.ParquetFile(src, **kwargs) as pf:
        yield pf


def read_table(path, **kwargs):
    """``pyarrow.parquet.read_table`` on ``path`` whatever its name."""
    import pyarrow.parquet as pq

    with arrow_file(path) as src:
        return pq.read_table(src, **kwargs)


def read_metadata(path):
    """``pyarrow.parquet.read_metadata`` on ``path`` whatever its name."""
    import pyarrow.parquet as pq

    with arrow_file(path) as src:
        return pq.read_metadata(src)
