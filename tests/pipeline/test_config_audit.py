"""Settings from dask config that reach a local cluster: refused with the key and its
source, never as an option the user did not give."""
from __future__ import annotations

import pytest

from gpu_sssp.pipeline.cluster import start_cluster
from gpu_sssp.pipeline.errors import SettingError


def _one_core(monkeypatch):
    """One core, so that a refusal that regressed would start 5 workers, not a million;
    and no GPU, so that a GPU host with dask-cuda takes the CPU cluster's path too (the
    setting sizes a CPU cluster: a LocalCUDACluster was started there and left open)."""
    import os

    from gpu_sssp import kernels

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setattr(kernels, "device_count", lambda: 0)


def test_too_many_cpu_workers_from_the_environment_names_the_setting(monkeypatch):
    """``DASK_SSSP__CLUSTER__CPU_WORKERS=100`` on 2 cores was refused as
    ``error: --cpu-workers 100: more than 4 workers per core``: an option never given."""
    import dask.config

    _one_core(monkeypatch)
    monkeypatch.setenv("DASK_SSSP__CLUSTER__CPU_WORKERS", "5")
    with dask.config.set({"sssp.cluster.cpu-workers": 5}):
        with pytest.raises(SettingError, match=r"^setting sssp\.cluster\.cpu-workers: '5' \(from the "
                           r"environment variable DASK_SSSP__CLUSTER__CPU_WORKERS\): more than 4 workers per core"):
            start_cluster()


def test_too_many_cpu_workers_as_an_argument_still_names_the_option(monkeypatch):
    from gpu_sssp.kernels.errors import UsageError

    _one_core(monkeypatch)
    with pytest.raises(UsageError, match=r"^cpu_workers=5: more than 4 workers per core"):
        start_cluster(cpu_workers=5)


def test_a_bad_cpu_workers_setting_is_refused_on_a_gpu_host_too(monkeypatch):
    """On a GPU host with dask-cuda the setting sizes nothing, and a bad value in it was
    never checked there: a GPU cluster was started as if it were not set, and the
    refusal came only the day the study ran on CPUs.  It is refused before any cluster
    starts, on either path."""
    import os

    import dask.config

    from gpu_sssp import kernels
    from gpu_sssp.pipeline import cluster

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    monkeypatch.setattr(kernels, "device_count", lambda: 1)  # a GPU host ...
    monkeypatch.setattr(cluster, "_dask_cuda_available", lambda: True)  # ... with dask-cuda

    def no_cluster(*a, **k):  # (a refusal that regressed would start one)
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(cluster, "_start_local", no_cluster)
    with dask.config.set({"sssp.cluster.cpu-workers": 5}):
        with pytest.raises(SettingError, match=r"^setting sssp\.cluster\.cpu-workers: .*more than 4 workers per core"):
            start_cluster()
