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

__all__ = ["SsspError", "UsageError", "OptionError", "OutputTooLargeError", "UnsettledError", "GPUUnavailableError",
           "exit_code"]


class SsspError(Exception):
    """Base of every error the product reports to its user as one line.

    Attributes
    ----------
    exit_code : int
        Exit status of ``sssp`` when this error ends a command.
    """

    exit_code = 1


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
