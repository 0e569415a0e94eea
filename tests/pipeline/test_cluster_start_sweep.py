"""The attached start check's call of every worker from the scheduler
(``pipeline.cluster._failed_worker_sweep``), driven with a stand-in scheduler: how a
worker's failed call is told apart from a worker that left."""
from __future__ import annotations

import asyncio
import enum

import pytest

from gpu_sssp.pipeline import cluster as C


class _Status(enum.Enum):
    running = "running"
    closing = "closing"


class _WS:
    def __init__(self, name):
        self.name = name
        self.status = _Status.running


class _Scheduler:
    """What the sweep uses of a Dask scheduler: its workers, their events, broadcast."""

    def __init__(self, answers: dict, leaving=()):
        self.answers = answers  # address -> what broadcast gives for it (an exception or a response)
        self.workers = {a: _WS(a.rsplit(":", 1)[-1]) for a in answers}
        self.leaving = set(leaving)  # those that go "closing" while they are called
        self.plugins = {}

    def get_events(self, addr):
        return ()

    async def remove_worker(self, addr, **kw):
        self.workers.pop(addr, None)

    async def broadcast(self, *, msg, workers, on_error):
        (addr,) = workers
        if addr in self.leaving:
            self.workers[addr].status = _Status.closing
        return {addr: self.answers[addr]}


def _sweep(s):
    return asyncio.run(C._failed_worker_sweep()(b"function", b"args", dask_scheduler=s))


def test_a_worker_the_scheduler_cannot_reach_is_an_error_not_gone():
    """A worker registered and running whose address the scheduler cannot connect to (a
    contact address behind NAT, a wrong --contact-address): Dask's call ends with
    "OSError: Timed out trying to connect".  It was taken for a worker that left: the
    start check dropped it without a word and, with no other worker, called it again
    and again without end (``client.run`` before said, in one line, that it cannot run
    the study's code)."""
    unreachable = "tcp://127.0.0.1:9"
    got = _sweep(_Scheduler({unreachable: OSError("Timed out trying to connect to tcp://127.0.0.1:9 after 3 s")}))
    assert got["results"][unreachable] == {"error": "OSError: Timed out trying to connect to tcp://127.0.0.1:9 after 3 s"}
    # C._check_worker_code then refuses it, naming it, as for client.run's answer
    per = {unreachable: Exception(got["results"][unreachable]["error"])}
    with pytest.raises(C.WorkerEnvironmentError, match=r"1 of 1 worker cannot run .*OSError: Timed out"):
        C._check_worker_code(per, {unreachable: {"name": "w"}})


@pytest.mark.parametrize("answer", [
    ConnectionResetError("reset"),  # the worker's connection closed under the call
    TimeoutError("timed out"),
])
def test_a_worker_whose_connection_closed_is_gone(answer):
    """(as ``_check_worker_code`` skips those errors of ``client.run``: a worker that left)"""
    addr = "tcp://127.0.0.1:7"
    got = _sweep(_Scheduler({addr: answer}))
    assert "gone" in got["results"][addr], got


def test_a_comm_error_of_a_worker_that_left_meanwhile_is_gone():
    from distributed.comm.core import CommClosedError

    addr = "tcp://127.0.0.1:8"
    s = _Scheduler({addr: CommClosedError("in <TCP ...>: Stream is closed")})
    got = _sweep(s)
    assert "gone" in got["results"][addr], got
    s = _Scheduler({addr: OSError("Timed out trying to connect")}, leaving={addr})
    got = _sweep(s)
    assert "gone" in got["results"][addr], got
