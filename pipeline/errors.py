"""Domain exceptions shared by the pipeline.

``InputError`` is what every reader raises for a malformed input file: it names the
file, the line (when there is one) and what was expected, so that the command line
can print it as one line and exit with status 2.  It is a
:class:`kernels.errors.SsspError` (the product's one error hierarchy) and a ``ValueError``.
"""

from __future__ import annotations

import os

from gpu_sssp.kernels.errors import SsspError, UsageError

__all__ = ["InputError", "MissingFileError", "LimitError", "StudyError", "BatchError", "SettingError"]


class InputError(SsspError, ValueError):
    """A malformed or inconsistent input file.

    Parameters
    ----------
    path : str or os.PathLike
        The offending file (shown by its name as given, escaped where it holds a
        character that does not print: ``pipeline.fsnames.shown``).
    line : int or None
        1-based line number in the (decompressed) text, or ``None`` when the problem
        is not tied to one line (an empty file, a count checked at the end, ...).
    message : str
        What was found and what was expected.

    Notes
    -----
    ``str(err)`` is ``"FILE:LINE: message"`` (``"FILE: message"`` without a line).
    """

    exit_code = 2

    def __init__(self, path, line: int | None, message: str):
        self.path = os.fspath(path) if path is not None else "<input>"
        self.line = None if line is None else int(line)
        self._message = str(message)  # with its option marks (kernels.errors.opt)
        super().__init__(self.text())  # args rendered when read (SsspError.args)

    @property
    def message(self) -> str:
        """What was found and what was expected, in the caller's words."""
        return self._render(self._message)

    def __str__(self) -> str:
        from gpu_sssp.pipeline.fsnames import shown

        # the name on one line, printable (a newline in it is shown escaped)
        if self.line is None:
            return f"{shown(self.path)}: {self._message}"
        return f"{shown(self.path)}:{self.line}: {self._message}"

    def __reduce__(self):
        extra = {k: v for k, v in self.__dict__.items() if k not in ("path", "line", "_message")}
        return (type(self), (self.path, self.line, self._message)) + ((extra,) if extra else ())


class MissingFileError(InputError, FileNotFoundError):
    """An input file that is not there (``load_graph("nosuch.gr")``): an
    :class:`InputError` (so an ``SsspError``, as every error for what a user gave; it was a
    bare ``FileNotFoundError``) and still a ``FileNotFoundError`` (``errno`` ENOENT,
    ``filename``) for code that catches that."""

    def __init__(self, path, line: int | None = None, message: str = "no such file"):
        import errno

        super().__init__(path, line, message)
        self.errno, self.strerror, self.filename = errno.ENOENT, os.strerror(errno.ENOENT), self.path


class LimitError(InputError):
    """An input above a size limit of ``sssp.ingest.*`` (max-vertices, max-arcs,
    max-isolated-vertices): the file may be sound, the setting refuses it.  An
    ingested copy refused so is not a damaged one (``pipeline.graph`` keeps it)."""


class StudyError(SsspError, ValueError):
    """A study cannot start or resume as asked (bad options, a folder in the way, a
    folder held by another run)."""

    exit_code = 2


class BatchError(SsspError, RuntimeError):
    """A batch failed on a worker and stopped the study; the message names the batch
    and the cause."""

    exit_code = 1


class SettingError(UsageError):
    """A bad ``sssp.*`` setting (dask config: a YAML file, a ``DASK_SSSP__...``
    environment variable, ``dask.config.set``) or a dask config file that cannot be
    read.  The message names the key, where its value came from when that can be told,
    the value and what is expected (:mod:`pipeline.config`); exit status 2."""

    exit_code = 2
