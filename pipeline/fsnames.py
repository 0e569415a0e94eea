"""File names that are not valid UTF-8, and pyarrow.

Linux allows any bytes in a file name but ``/`` and NUL; Python carries a name that
is not valid UTF-8 as a ``str`` with lone surrogates (``os.fsdecode(b"na\\xffme.gr")``
is ``"na\\udcffme.gr"``).  pyarrow encodes a path it is given as strict UTF-8 and
raises ``UnicodeEncodeError`` on such a name, so every place that hands pyarrow a
user's path goes through :func:`arrow_file` (or :func:`open_parquet`): the name
itself where pyarrow can take it (pyarrow's own I/O, unchanged), the file opened by
Python otherwise.  :func:`shown` turns any name into text that prints everywhere.
"""
from __future__ import annotations

import contextlib
import hashlib
import os

__all__ = ["is_utf8", "shown", "safe_name", "refuse_pipe", "arrow_file", "open_parquet", "read_table", "read_metadata"]


def is_utf8(path) -> bool:
    """Whether ``path``'s bytes on the file system are valid UTF-8 (what pyarrow needs)."""
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeError:
        return False
    return True


def shown(text) -> str:
    """``text`` (a path or a message holding one) as printable text: bytes that are not
    UTF-8 become U+FFFD, so printing it never raises ``UnicodeEncodeError``."""
    s = os.fspath(text) if isinstance(text, os.PathLike) else text
    if isinstance(s, bytes):
        return s.decode("utf-8", "replace")
    s = str(s)
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # surrogates that stand for no byte
        return s.encode("utf-8", "replace").decode("utf-8")


def safe_name(name) -> str:
    """A file name derived from ``name`` that is valid UTF-8: ``name`` itself when it is,
    else ``input-`` and the first 8 hex digits of the SHA-256 of its bytes."""
    if is_utf8(name):
        return os.fsdecode(name)
    return "input-" + hashlib.sha256(os.fsencode(name)).hexdigest()[:8]


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
    if is_utf8(p):
        yield os.fsdecode(p)
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
def open_parquet(path):
    """Yield a ``pyarrow.parquet.ParquetFile`` on ``path`` whatever its name; the file is
    closed when the block ends."""
    import pyarrow.parquet as pq

    with arrow_file(path) as src, pq.ParquetFile(src) as pf:
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
