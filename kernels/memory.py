"""Host memory: what this process could still get, and the one check every solver makes
before it allocates a large host array (a result's distances, predecessors, a matrix).

A ``(B, n)`` float64 output that does not fit is refused with one line naming its size,
the memory available and how to proceed, instead of a NumPy allocation failure or, for
an allocation that only fails when touched, the OOM killer.  No psutil: ``/proc/meminfo``
(``MemAvailable`` + ``SwapFree``) or ``os.sysconf``, bounded by the memory cgroup's limit
(v1 or v2) and the address-space limit (``ulimit -v``) where they are lower.
"""
from __future__ import annotations

import os
import re
import threading

from gpu_sssp.kernels.errors import OutputTooLargeError

__all__ = ["available_memory", "bound_note", "memory_headroom", "fmt_bytes", "parse_bytes", "output_bytes", "check_host_memory"]

#: arrays below this many bytes are not checked (not worth reading /proc/meminfo)
SMALL_BYTES = 1 << 26


#: where this process's cgroups and mounts are read (tests point them at a made-up tree)
_SELF_CGROUP = "/proc/self/cgroup"
_SELF_MOUNTINFO = "/proc/self/mountinfo"
_SELF_STATUS = "/proc/self/status"

#: a cgroup v1 "no limit" is a page-rounded 2**63-1; anything this large is none
_NO_LIMIT = 1 << 60


def _read_int(path) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _NO_LIMIT else value


def _inactive_file(path, key: str) -> int:
    """The page cache a cgroup's usage counts but the kernel reclaims before it kills
    (``inactive_file`` in ``memory.stat``; v1 ``total_inactive_file``)."""
    try:
        with open(path) as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_headroom() -> tuple[int, str] | None:
    """``(bytes, description)`` the tightest memory cgroup this process is in (v2
    ``memory.max``, v1 ``memory.limit_in_bytes``, at its own level or any above it)
    still lets it take, or None where no cgroup limits its memory.  The OOM killer
    ends a process past it with SIGKILL: no MemoryError, no line, a half-done run;
    ``/proc/meminfo`` shows the whole machine's memory, not this limit."""
    try:
        with open(_SELF_CGROUP) as fh:
            groups = [line.rstrip("\n").split(":", 2) for line in fh]
        with open(_SELF_MOUNTINFO) as fh:
            mounts = [line.split() for line in fh]
    except OSError:
        return None
    best = None
    for fields in mounts:
        try:
            sep = fields.index("-")
        except ValueError:
            continue
        if len(fields) < sep + 4:
            continue
        root, point, fstype, options = fields[3], fields[4], fields[sep + 1], fields[sep + 3]
        if fstype == "cgroup2":
            v2 = True
            path = next((g[2] for g in groups if len(g) == 3 and g[0] == "0" and g[1] == ""), None)
        elif fstype == "cgroup" and "memory" in options.split(","):
            v2 = False
            path = next((g[2] for g in groups if len(g) == 3 and "memory" in g[1].split(",")), None)
        else:
            continue
        if path is None:
            continue
        if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
            path = path[len(root.rstrip("/")):]
        point = point.replace("\\040", " ")
        rel = path.strip("/")
        # this process's group and every group above it within the mount: a parent's
        # limit holds for its children too
        while True:
            folder = os.path.join(point, rel) if rel else point
            if v2:
                limit = _read_int(os.path.join(folder, "memory.max"))
                used = _read_int(os.path.join(folder, "memory.current"))
                cache = _inactive_file(os.path.join(folder, "memory.stat"), "inactive_file")
            else:
                limit = _read_int(os.path.join(folder, "memory.limit_in_bytes"))
                used = _read_int(os.path.join(folder, "memory.usage_in_bytes"))
                cache = _inactive_file(os.path.join(folder, "memory.stat"), "total_inactive_file")
            if limit is not None:
                room = max(0, limit - max(0, (used or 0) - cache))
                if best is None or room < best[0]:
                    best = (room, f"the memory cgroup {'/' + rel}'s limit of {fmt_bytes(limit)}")
            if not rel:
                break
            rel = os.path.dirname(rel)
    return best


def _rlimit_headroom() -> tuple[int, str] | None:
    """``(bytes, description)`` the address-space limit (``ulimit -v``, RLIMIT_AS)
    or the data limit (RLIMIT_DATA) still leaves this process, or None without one:
    past it an allocation fails (MemoryError), whatever the machine has free."""
    try:
        import resource
    except ImportError:  # (not on Windows)
        return None
    sizes = {}
    try:
        with open(_SELF_STATUS) as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("VmSize", "VmData"):
                    sizes[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    best = None
    for name, key, label in (("RLIMIT_AS", "VmSize", "address-space limit (ulimit -v)"),
                             ("RLIMIT_DATA", "VmData", "data-size limit (ulimit -d)")):
        if not hasattr(resource, name) or key not in sizes:
            continue
        try:
            soft = resource.getrlimit(getattr(resource, name))[0]
        except (OSError, ValueError):
            continue
        if soft == resource.RLIM_INFINITY or soft < 0 or soft >= _NO_LIMIT:
            continue
        room = max(0, soft - sizes[key])
        if best is None or room < best[0]:
            best = (room, f"the {label} of {fmt_bytes(soft)}")
    return best


def memory_headroom() -> tuple[int, str] | None:
    """``(bytes, description)``: what this process could still get and what bounds it -
    the machine's free memory (``MemAvailable`` + ``SwapFree``), the memory cgroup it
    runs in (a container's, a batch job's, ``systemd-run -p MemoryMax=``), the
    address-space limit (``ulimit -v``), whichever is least; None where unknown."""
    found = []
    for limit in (_machine_headroom, _cgroup_headroom, _rlimit_headroom):
        try:
            got = limit()
        except Exception:  # (an odd /proc or cgroup tree never stops a run)
            got = None
        if got is not None:
            found.append(got)
    best = min(found, key=lambda item: item[0]) if found else None
    _last.reading = best
    return best


#: this thread's last :func:`memory_headroom` reading, for :func:`bound_note`: a second
#: reading differs from the first under a cgroup (its usage moves with every page), so
#: the refusal's bound was left out when the two were compared
_last = threading.local()


def _machine_headroom() -> tuple[int, str] | None:
    """The machine's free memory (``MemAvailable`` + ``SwapFree``, or ``os.sysconf``)."""
    try:
        info = {}
        with open("/proc/meminfo") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
        if "MemAvailable" in info:
            return info["MemAvailable"] + info.get("SwapFree", 0), "the machine's available memory"
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "the machine's available memory"
    except (AttributeError, ValueError, OSError):
        return None


def available_memory() -> int | None:
    """Bytes of memory this process could still get, or None where unknown: the least
    of the machine's (MemAvailable + SwapFree), its memory cgroup's limit less what the
    cgroup uses, and its address-space limit less what it has mapped
    (:func:`memory_headroom`)."""
    got = memory_headroom()
    return None if got is None else got[0]


def bound_note(avail: int) -> str:
    """For a refusal's line, once :func:`available_memory` gave ``avail``: `` (BOUND)``
    where that is not the machine's own free memory but a memory cgroup's or ``ulimit
    -v``'s (what a user has to raise, or run outside), else ``""``."""
    got, bound = getattr(_last, "reading", None) or (None, "")
    if got != avail:  # not this thread's last reading (available_memory given another way): read again
        got, bound = memory_headroom() or (None, "")
    return f" ({bound})" if got == avail and not bound.startswith("the machine") else ""


def fmt_bytes(b: float) -> str:
    """``1.5 GB`` (powers of 1000, as ``--max-distance-bytes`` reads them)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(round(b, 1)) < 1000 or unit == "PB":  # (999,999,488 B is 1.0 GB, not "1,000.0 MB")
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
        why = bound_note(avail)
        raise OutputTooLargeError(
            f"{what} would take {fmt_bytes(nbytes)}, more than the {fmt_bytes(avail)} of memory "
            f"available here{why}; {advice}")
