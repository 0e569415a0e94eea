"""The product's errors: one hierarchy, rooted in the bottom layer.

Every error a user can cause (a bad option, a malformed input file, a negative cycle,
a GPU asked for where none is, a study folder in the wrong state) is an
:class:`SsspError`.  The command line catches ``SsspError`` once, prints its message as
one line and exits with its :attr:`~SsspError.exit_code`; any other exception is a bug
and keeps its traceback.

The classes also derive from the built-in exception a Python caller would expect
(``ValueError`` for bad values, ``TypeError`` for a wrong combination,
``RuntimeError`` for a missing device), so ``except ValueError`` keeps working.

Exit codes: 2 usage or input, 3 negative cycle, 4 no usable GPU, 1 a study stopped by
a failed batch.

``pipeline.errors.InputError`` (malformed files), ``pipeline``'s ``StudyError`` and
:class:`kernels.result.NegativeCycleError` derive from here; ``kernels`` never imports
the layers above it.
"""
from __future__ import annotations

import contextlib
import os
import re

__all__ = ["SsspError", "UsageError", "OptionError", "OutputTooLargeError", "UnsettledError", "GPUUnavailableError",
           "exit_code", "comma_items", "opt", "render", "raw", "speaking", "given_in"]

# -- option names: the command line's or Python's -------------------------------------
#
# A message names the option that would help (``--zero-based``, ``--batch-size``);
# the caller is a command line (``sssp ingest``) or Python (``load_graph(...)``), and
# each should read its own spelling.  A message is written once, with the command line's
# phrase marked by :func:`opt`; it is rendered when it is shown (``str(exc)``), in the
# words of whoever shows it: the command line (``sssp``, :func:`speaking` ``"cli"``) or
# Python (the default).  An error raised on a Dask worker keeps its marks across the
# pickle and is rendered by the study's client, which is the one speaking to the user.
# ``str(exc)``, ``repr(exc)``, ``exc.args`` and the attributes that show text are
# rendered; text meant for another message keeps the marks (:func:`raw`), and a log
# line or a warning is rendered when it is made (:func:`render`).

_MARK = "\u2063"
_ALT = "\u2064"  # between a phrase and its Python words, where they are given
_MARKED = re.compile(_MARK + "([^" + _MARK + "]*)" + _MARK)
#: the environment variable that says who reads this process's messages; set by the
#: command line for its run, so that the workers of a cluster it starts render theirs
#: (a log line, a warning) in its words too
AUDIENCE_ENV = "SSSP_MESSAGES_FOR"
#: command-line options whose Python keyword is not the option's name with ``_``
_PYTHON = {"--resume": "resume=True", "--zero-based": "zero_based=True", "--undirected": "undirected=True",
           "--no-dashboard": "dashboard=False", "--predecessors": "predecessors=True",
           "--chunk-mb": "chunk_bytes="}


#: the upper-case placeholders of the messages' phrases, left bare (``random=K``)
_PLACEHOLDERS = {"K", "N", "FILE", "F", "S", "SEED", "HOST:PORT", "M", "ID"}
#: options whose values are text even when they look like numbers (``out='2024'``)
_TEXT_OPTIONS = {"--out", "--report", "--scheduler", "--scheduler-file", "--sources-file", "--targets",
                 "--weights", "--format", "--weight-type", "--host", "--dashboard-address", "--gpus",
                 "--algorithm", "--method", "--outputs", "--order", "--distance-form", "--stats-over",
                 "--matrix-form"}


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``n`` with ``word`` in the number it needs: ``1 source``, ``2 sources``, ``0
    sources``, ``12,000 batches`` (thousands separated).  ``plural`` where it is not
    ``word + "s"`` (``counted(n, "batch", "batches")``)."""
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def comma_items(text: str, option: str, *, error: type | None = None) -> list[str]:
    """The items of the comma list ``text`` given to ``option`` (``"a, b"`` -> ``["a",
    "b"]``, spaces around an item dropped).  An empty item between items (``"a,,b"``,
    ``"a,"``, ``",a"``) is refused with one line (``error``, default :class:`UsageError`):
    it was skipped without a word, and a list that lost an item to a typo ran without it.
    A text with no item and no comma (``""``, ``"  "``) gives ``[]``: the caller says
    what that means; commas with no item (``","``) are refused like ``"hbf,"`` (``--ablation
    ','`` ran with no ablation, ``'hbf,'`` was refused)."""
    items = [t.strip() for t in str(text).split(",")]
    if not any(items) and len(items) == 1:
        return []
    if not all(items):
        raise (error or UsageError)(f"{opt(option)} {text!r}: an empty item in the list (two commas "
                                    "together, or one at an end); give the items with one comma between them")
    return items


def opt(phrase: str, python: str | None = None) -> str:
    """The command-line option ``phrase`` (``"--batch-size"``, ``"--weight-type float64"``,
    ``"--random K"``), marked to be rendered in the caller's words: as it is on the
    command line, as the Python keyword (``batch_size=``, ``weight_type='float64'``,
    ``random=K``: :func:`python_phrase`) for a Python caller, or as ``python`` where
    given (``opt("--max-arcs N (sssp ingest)", python="max_arcs=N")``)."""
    if python is not None:
        return f"{_MARK}{phrase}{_ALT}{python}{_MARK}"
    return f"{_MARK}{phrase}{_MARK}"


def python_phrase(phrase: str) -> str:
    """A command-line option phrase in Python's words: ``--zero-based`` -> ``zero_based=True``,
    ``--gpus`` -> ``gpus=``, ``--format metis`` -> ``format='metis'``, ``--random K`` ->
    ``random=K`` (an upper-case placeholder stays bare), ``--seed 3`` -> ``seed=3``.
    A phrase that is not an option (``sssp ingest``) is left as it is."""
    name, _, value = phrase.partition(" ")
    if not name.startswith("--"):
        return phrase
    key = _PYTHON.get(name) if not value else None
    if key is not None:
        return key
    key = name[2:].replace("-", "_") + "="
    if not value:
        return key
    if value in _PLACEHOLDERS or (len(value) > 1 and value[0] == value[-1] and value[0] in "'\""):
        return key + value  # random=K, scheduler_file=FILE; 'a b' (a repr already)
    if name not in _TEXT_OPTIONS and re.fullmatch(r"-?\d+(\.\d+)?", value):
        return key + value  # seed=3, cpu_workers=9
    return key + repr(value)  # out='2024', weights='RANDOM:1:2:3


def _audience() -> str:
    return "cli" if os.environ.get(AUDIENCE_ENV) == "cli" else "python"


def render(text: str, audience: str | None = None, within: str | None = None) -> str:
    """``text`` with its :func:`opt` phrases in ``audience``'s words (``"cli"`` or
    ``"python"``; default: this process's, :func:`speaking`).  ``within``: the Python
    caller gave these options in a dict of that keyword (``gpu_sssp.matrix``'s
    ``ingest=``): ``zero_based=True`` is shown as ``ingest={'zero_based': True}``."""
    if _MARK not in text:
        return text
    cli = (audience or _audience()) == "cli"

    def words(m):
        phrase, _, python = m.group(1).partition(_ALT)
        if cli:
            return phrase
        python = python or python_phrase(phrase)
        keyword = re.fullmatch(r"([A-Za-z_]\w*)=(.*)", python) if within else None
        if keyword is None:
            return python
        return f"{within}={{{keyword.group(1)!r}: {keyword.group(2) or '...'}}}"

    return _MARKED.sub(words, text)


def given_in(exc: BaseException, keyword: str) -> BaseException:
    """Mark ``exc`` (an error of a call whose options the Python caller gave in the dict
    ``keyword=``, e.g. ``gpu_sssp.matrix(path, ingest={...})`` loading its graph) so that
    it names them as given there (:func:`render`'s ``within``); returns ``exc``."""
    if isinstance(exc, SsspError):
        exc._given_in = keyword
    return exc


def raw(exc: BaseException) -> str:
    """The text of ``exc`` with its option marks kept, to be embedded in another message
    that is rendered later (on the study's client, not on the worker that caught it)."""
    if isinstance(exc, SsspError):
        return exc.text()
    return str(exc)


@contextlib.contextmanager
def speaking(audience: str):
    """Render messages for ``audience`` (``"cli"`` or ``"python"``) within the block, in
    this process and in the processes it starts (a local cluster's workers)."""
    if audience not in ("cli", "python"):
        raise ValueError(f"audience must be 'cli' or 'python', got {audience!r}")
    before = os.environ.get(AUDIENCE_ENV)
    os.environ[AUDIENCE_ENV] = audience
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(AUDIENCE_ENV, None)
        else:
            os.environ[AUDIENCE_ENV] = before


class SsspError(Exception):
    """Base of every error the product reports to its user as one line.

    Attributes
    ----------
    exit_code : int
        Exit status of ``sssp`` when this error ends a command.
    """

    exit_code = 1

    def __init_subclass__(cls, **kwargs):
        # a subclass that builds its own text (``InputError``: "FILE:LINE: message")
        # keeps it in ``text()``; ``str()`` renders it, as for every other error
        super().__init_subclass__(**kwargs)
        if "__str__" in cls.__dict__:
            cls.text = cls.__dict__["__str__"]
            cls.__str__ = SsspError.__str__

    def text(self) -> str:
        """The message with its :func:`opt` marks (see :func:`raw`)."""
        return Exception.__str__(self)

    # ``exc.args`` as shown (``warnings.warn(exc.args[0])``); the exception's own slot,
    # which pickling uses, keeps the marks for the client that renders them
    @property
    def args(self):
        return tuple(self._render(a) if isinstance(a, str) else a for a in BaseException.args.__get__(self))

    @args.setter
    def args(self, value):
        BaseException.args.__set__(self, value)

    def __reduce__(self):
        # the raw args (as BaseException's own reduce): tblib, which Dask installs for a
        # worker's errors, takes ``obj.args`` (rendered, on the worker) where a class has
        # the built-in reduce
        state = self.__dict__ or None
        return (type(self), BaseException.args.__get__(self)) + ((state,) if state else ())

    def _render(self, text: str) -> str:
        """``text`` (this error's, with its marks) in the words of whoever shows it."""
        return render(text, within=self.__dict__.get("_given_in"))

    def __str__(self) -> str:
        return self._render(self.text())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class UsageError(SsspError, ValueError):
    """A bad value given by the user: an option, a source id, a size, a file name."""

    exit_code = 2


class OptionError(SsspError, TypeError):
    """Options that do not go together (e.g. ``--weights`` with a Parquet input)."""

    exit_code = 2


class OutputTooLargeError(UsageError, MemoryError):
    """An output asked for that cannot fit: a result or travel-time matrix larger than
    the memory available (``kernels.memory.check_host_memory``) or than a size limit
    (``sssp.study.max-distance-bytes`` for ``gpu_sssp.matrix``).  Raised before anything
    is allocated; a ``MemoryError`` as well, so ``except MemoryError`` keeps working."""

    exit_code = 2


class SumOverflowError(UsageError, OverflowError):
    """A source's integer sum of distances could pass 2**63 and wrap (``Result``): the
    graph's weights are too large for exact per-source sums."""

    exit_code = 2


class UnsettledError(UsageError, ArithmeticError):
    """Real weights with negative arcs whose shortest distances float64 arithmetic does
    not settle: Bellman-Ford rounds keep lowering them around a cycle whose weight,
    summed exactly, is not negative (zero or nearly, within the rounding of the
    distances it is reached at), so neither distances nor a negative cycle can be given.
    Integer weights (scaled) are solved exactly."""

    exit_code = 2


class GPUUnavailableError(SsspError, RuntimeError):
    """A GPU method was asked for where no usable CUDA device or CuPy exists."""

    exit_code = 4


def exit_code(exc: BaseException) -> int | None:
    """The exit status for ``exc`` if it is a product error, else ``None`` (a bug)."""
    return exc.exit_code if isinstance(exc, SsspError) else None
