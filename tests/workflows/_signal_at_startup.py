"""A Dask nanny preload for tests (``distributed.nanny.preload``): the process whose
local cluster is starting signals itself from the nanny's start-up, as a Ctrl-C in the
middle of ``LocalCluster(...)`` would, at a known point rather than after a guessed
delay.  ``SSSP_TEST_SIGNAL`` names the signal (default SIGINT), ``SSSP_TEST_SIGNALS``
how many nannies send one (default 1; the nannies start one after another)."""
from __future__ import annotations

import os
import signal

_COUNT = "_SSSP_TEST_SIGNALS_SENT"  # the module is re-imported per nanny: count in the environment


def dask_setup(nanny) -> None:
    sent = int(os.environ.get(_COUNT, "0"))
    if sent >= int(os.environ.get("SSSP_TEST_SIGNALS", "1")):
        return
    os.environ[_COUNT] = str(sent + 1)
    os.kill(os.getpid(), getattr(signal, os.environ.get("SSSP_TEST_SIGNAL", "SIGINT")))
