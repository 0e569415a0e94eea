"""Host memory: what this process could still get, and the one check every solver makes
before it allocates a large host array (a result's distances, predecessors, a matrix).

A ``(B, n)`` float64 output that does not fit is refused with one line naming its size,
the memory available and how to proceed, instead of a NumPy allocation failure or, for
an allocation that only fails when touched, the OOM killer.  No psutil: ``/proc/meminfo``
(``MemAvailable`` + ``SwapFree``) or ``os.sysconf``.
"""
from __future__ import annotations

import os
import re

from gpu_sssp.kernels.errors import OutputTooLargeError

__all__ = ["available_memory", "fmt_bytes", "parse_bytes", "output_bytes", "check_host_memory"]

#: arrays below this many bytes are not checked (not worth reading /proc/meminfo)
SMALL_BYTES = 1 << 26


def available_memory() -> int | None:
    """Bytes of memory this process could still get (MemAvailable + SwapFree), or None
    where unknown."""
    try:
        info = {}
        with open("/proc/meminfo") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
        if "MemAvailable" in info:
            return info["MemAvailable"] + info.get("SwapFree", 0)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def fmt_bytes(b: float) -> str:
    """``1.5 GB`` (powers of 1000, as ``--max-distance-bytes`` reads them)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(b) < 1000 or unit == "PB":
            return f"{b:,.1f} {unit}" if unit != "B" else f"{int(b)} B"
        b /= 1000.0
    return f"{b} B"


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)([iI]?)[bB]?\s*$")


def parse_bytes(text) -> int:
    """``"20e9"``, ``"300GB"``, ``"1.5T"``, ``"64GiB"`` -> bytes (powers of 1000, of 1024
    with ``i``), as ``sssp study --max-distance-bytes`` and the byte-size settings
    (``pipeline.config``) read them; ``ValueError`` for anything else, a size that is not
    a whole number of bytes among them (``1.5``, ``1.0001K``: taken as 1 and 1000 until
    now), and ``OverflowError`` past float's range (``1e400``)."""
    from fractions import Fraction

    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 20e9, 300GB, 1.5TB)")
    unit, binary = m.group(2).upper(), bool(m.group(3))
    mantissa, _, exp = m.group(1).lower().partition("e")
    exp = int(exp or 0)
    # the exponent is bounded before the exact arithmetic, which grows with it (Fraction of
    # "1e-20000000" took 20 s): no size is near 1e300 bytes, and no whole one below 1e-300
    if abs(exp) > 300:
        if float(mantissa) == 0.0:  # zero whatever its exponent ("0e400" as "0e-400")
            return 0
        if exp > 0:
            raise OverflowError(f"not a size: {text!r} (beyond float's range)")
        raise ValueError(f"not a whole number of bytes: {text!r}")
    power = " KMGTP".index(unit) if unit else 0
    value = Fraction(m.group(1)) * (1024 if binary else 1000) ** power  # exact: 1.1K is 1100
    if value > 10 ** 300:
        raise OverflowError(f"not a size: {text!r} (beyond float's range)")
    if value.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {text!r} ({float(value):,.6g} bytes)")
    return int(value)


def output_bytes(n_sources: int, n_columns: int, *, distances: bool = True, predecessors: bool = False,
                 n: int | None = None) -> int:
    """Bytes of a result's host arrays: ``(B, columns)`` float64 distances (columns: the
    vertices, or the targets of a matrix) and ``(B, n)`` int64 predecessors."""
    b = int(n_sources)
    total = b * int(n_columns) * 8 if distances else 0
    if predecessors:
        total += b * int(n_columns if n is None else n) * 8
    return total


def check_host_memory(nbytes: int, what: str, advice: str = "solve fewer sources at a time") -> None:
    """Refuse, before anything is allocated, ``nbytes`` of host arrays (``what`` names
    them: ``"the distances of 10,000 sources x 3,000,000 vertices (float64)"``) that do
    not fit in the memory available here.

    Raises
    ------
    OutputTooLargeError
        One line: the size, the memory available, and ``advice`` (how to proceed).
    """
    nbytes = int(nbytes)
    if nbytes < SMALL_BYTES:
        return
    avail = available_memory()
    if avail is not None and nbytes > avail:
        raise OutputTooLargeError(
            f"{what} would take {fmt_bytes(nbytes)}, more than the {fmt_bytes(avail)} of memory "
            f"available here; {advice}")
