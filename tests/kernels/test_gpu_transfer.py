"""The chunked, pinned device-to-host copy (kernels.gpu.transfer.to_host)."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("nbytes", [8, 1 << 20, (1 << 20) * 5 + 24, (1 << 22) + 8])
def test_to_host_matches_get(cp, nbytes):
    from gpu_sssp.kernels.gpu.transfer import to_host

    rng = np.random.default_rng(nbytes)
    host = rng.random(nbytes // 8)
    dev = cp.asarray(host)
    out = np.empty_like(host)
    to_host(dev, out, chunk=1 << 16)  # many chunks, a short last one
    assert (out == host).all()
    if len(host) % 2 == 0:  # a 2-D destination of the same size
        out2 = np.empty((2, len(host) // 2))
        to_host(dev, out2, chunk=1 << 16)
        assert (out2.reshape(-1) == host).all()


def test_to_host_refuses_mismatch(cp):
    from gpu_sssp.kernels.gpu.transfer import to_host

    with pytest.raises(ValueError):
        to_host(cp.zeros(10), np.empty(11))


def test_host_empty_is_a_writable_array():
    from gpu_sssp.kernels.gpu.transfer import host_empty

    a = host_empty((3000, 3000), np.float64)  # 72 MB: the huge-page path
    assert a.shape == (3000, 3000) and a.dtype == np.float64 and a.flags.writeable and a.flags.c_contiguous
    a[:] = 1.5
    assert a.sum() == 1.5 * 9e6
    b = host_empty((10, 3), np.int32)
    assert b.shape == (10, 3) and b.flags.writeable


@pytest.mark.parametrize("shape, dtype", [((0,), np.int32), ((7,), np.int64), ((33, 4096), np.int32),
                                          ((3, 5, 2), np.float64)])
def test_to_device_async_matches_asarray(cp, shape, dtype):
    from gpu_sssp.kernels.gpu.transfer import to_device_async

    host = (np.arange(int(np.prod(shape))) * 7 - 3).astype(dtype).reshape(shape)
    # behind a queued kernel on the same stream: the copy lands after it, in order
    busy = cp.arange(1 << 24, dtype=cp.float64)
    busy = cp.sqrt(busy * busy + 1.0)
    dev, keep = to_device_async(host[::1])
    host_copy = host.copy()
    host[...] = 0  # the caller's array may change at once: the bytes were staged
    got = dev.get()
    del keep
    assert got.shape == shape and got.dtype == dtype
    assert np.array_equal(got, host_copy)
    assert float(busy[1]) == pytest.approx(np.sqrt(2.0))
