"""Versions of the software a study ran with (kept in its manifest)."""
from __future__ import annotations

import platform
import sys

import numpy as np
import pyarrow as pa


def versions() -> dict:
    import dask
    import distributed

    v = {"python": platform.python_version(), "numpy": np.__version__, "dask": dask.__version__,
         "distributed": distributed.__version__, "pyarrow": pa.__version__}
    try:
        import scipy

        v["scipy"] = scipy.__version__
    except ImportError:
        pass
    import gpu_sssp

    # the code that runs (a checkout on PYTHONPATH has no installed metadata: "unknown")
    v["gpu-sssp"] = str(getattr(gpu_sssp, "__version__", "unknown"))
    for mod in ("cupy", "dask_cuda"):
        m = sys.modules.get(mod)
        if m is None:
            try:
                from importlib.metadata import version

                v[mod] = version({"cupy": "cupy", "dask_cuda": "dask-cuda"}[mod])
            except Exception:
                continue
        else:
            v[mod] = getattr(m, "__version__", "unknown")
    return v
