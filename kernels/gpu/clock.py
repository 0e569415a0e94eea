"""When a solve's device work ran, on the host's wall clock.

CUDA events time work on the GPU's own clock: :func:`cupy.cuda.get_elapsed_time` gives
milliseconds between two of them.  An *anchor* is an event recorded on an idle stream of
its own and waited for at once, paired with ``time.time()`` read as the wait returns: the
event completed within microseconds of that reading.  An event recorded later then sits
at ``anchor time + elapsed(anchor, event)``.  A study uses these stamps to tell apart,
per GPU, the time its kernels ran, the gaps between them (the host fed the GPU too
slowly) and the time before the first and after the last kernel
(``pipeline.study.timing``).

Anchors are per device and renewed after :data:`RENEW_S` seconds: the two clocks drift
apart by a few parts per million (a few microseconds per second of an anchor's age), and
CUDA gives elapsed times as float32 milliseconds (0.06 us resolution one second from the
anchor, 2 us thirty seconds from it; with 30-second anchors two stamps of one call
differed from the events' own elapsed time by 1.3 us).  A call takes its anchor before it
records its first event and uses that same anchor for all of its events.
"""
from __future__ import annotations

import time

from gpu_sssp.kernels._gpu import cupy as _cupy

#: seconds after which a device's anchor is renewed
RENEW_S = 1.0

_ANCHORS: dict = {}  # device id -> Anchor
_STREAMS: dict = {}  # device id -> the idle stream anchors are recorded on


class Anchor:
    """A completed CUDA event and the epoch seconds at which it completed."""

    __slots__ = ("event", "epoch", "taken")

    def __init__(self, event, epoch: float, taken: float):
        self.event, self.epoch, self.taken = event, epoch, taken

    def epoch_of(self, event) -> float:
        """Epoch seconds of ``event`` (recorded after this anchor, and completed)."""
        return self.epoch + _cupy().cuda.get_elapsed_time(self.event, event) / 1e3


def anchor() -> Anchor:
    """This device's anchor, renewed when older than :data:`RENEW_S`.

    Recording it waits only for the anchor's own stream, which carries nothing else:
    the kernels queued on the device by this or another thread do not delay it."""
    cp = _cupy()
    dev = cp.cuda.Device().id
    a = _ANCHORS.get(dev)
    if a is not None and time.perf_counter() - a.taken < RENEW_S:
        return a
    stream = _STREAMS.get(dev)
    if stream is None:
        stream = _STREAMS[dev] = cp.cuda.Stream(non_blocking=True)
    ev = cp.cuda.Event()
    ev.record(stream)
    ev.synchronize()
    a = Anchor(ev, time.time(), time.perf_counter())
    _ANCHORS[dev] = a
    return a


def span(a: Anchor, first, last) -> dict:
    """``{"gpu_start", "gpu_end"}``: epoch seconds of two completed events of one call
    (its first and its last), for the call's ``counters``."""
    return {"gpu_start": a.epoch_of(first), "gpu_end": a.epoch_of(last)}
