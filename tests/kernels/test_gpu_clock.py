"""Device work on the host's wall clock (kernels.gpu.clock): the stamps that let a study
tell kernel time, gaps between kernels and time around them apart, per GPU."""
from __future__ import annotations

import time

import numpy as np
import pytest

from gpu_sssp import kernels
from tests.kernels.test_gpu_phast import rome99

pytestmark = pytest.mark.gpu


def _busy(cp, ms: float):
    """Enqueue about ``ms`` of device work (a spin kernel)."""
    spin = cp.RawKernel(r'''
    extern "C" __global__ void spin(long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
    }''', "spin")
    rate = cp.cuda.Device().attributes["ClockRate"]  # kHz
    spin((1,), (1,), (np.int64(ms * rate),))


@pytest.mark.parametrize("renew", [False, True])
def test_event_stamps_lie_inside_the_host_window(cp, monkeypatch, renew):
    from gpu_sssp.kernels.gpu import clock

    if renew:
        monkeypatch.setattr(clock, "RENEW_S", 0.0)  # a new anchor every call
    a = clock.anchor()
    before = time.time()
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ev0.record()
    _busy(cp, 30)
    ev1.record()
    ev1.synchronize()
    after = time.time()
    s = clock.span(a, ev0, ev1)
    assert before - 1e-3 <= s["gpu_start"] <= s["gpu_end"] <= after + 1e-3
    assert s["gpu_end"] - s["gpu_start"] == pytest.approx(cp.cuda.get_elapsed_time(ev0, ev1) / 1e3, abs=1e-6)
    assert s["gpu_end"] - s["gpu_start"] >= 0.02  # the spin's ~30 ms (clock rates vary)


def test_anchor_is_not_held_up_by_queued_work(cp, monkeypatch):
    """An anchor taken while another call's kernels are queued must not wait for them
    (it is taken while a solve holds the GPU turn)."""
    from gpu_sssp.kernels.gpu import clock

    monkeypatch.setattr(clock, "RENEW_S", 0.0)
    clock.anchor()  # its stream and event exist
    _busy(cp, 300)
    queued = cp.cuda.Event()
    queued.record()
    clock.anchor()
    assert not queued.done  # the anchor came back while the spin still ran
    cp.cuda.Device().synchronize()


@pytest.mark.parametrize("method", ["phast", "batched"])
def test_solves_report_when_the_device_ran_them(cp, method):
    g = rome99()
    src = np.arange(0, g.n, 7)
    kernels.solve(g, src[:4], method=method, distances=False)  # loaded and compiled
    before = time.time()
    res = kernels.solve(g, src, method=method, distances=False)
    after = time.time()
    c = res.counters
    assert before - 1e-3 <= c["gpu_start"] < c["gpu_end"] <= after + 1e-3
    assert c["gpu_end"] - c["gpu_start"] >= c["kernel_ms"] / 1e3 - 1e-5
