"""A Dask nanny preload for tests (``distributed.nanny.preload``): the process whose
local cluster is starting signals itself from the nanny's start-up, as a Ctrl-C in the
middle of ``LocalCluster(...)`` would, at a known point rather than after a guessed
delay.  ``SSSP_TEST_SIGNAL`` names the signal (default SIGINT), ``SSSP_TEST_SIGNALS``
how many nannies send one (default 1; the nannies start one after another).

``SSSP_TEST_SIGNAL_AT_SPAWN=1`` (with ``SSSP_TEST_SIGNALS=0``) sends both Ctrl-Cs from
inside the creation of the first worker process, right after the process is spawned
and before Dask's thread sends it its start-up data: the first, then (once the main
thread has taken it) the second, the moment where a client that ends leaves the new
process reading an empty pipe.  The thread then waits for the client's main thread to
end (at most 5 s: a client that waits for the creation gets it); when it has ended,
the thread stays where it is, as the interpreter's exit would stop it.  Both go to the
main thread itself (``pthread_kill``): a signal taken by another thread waits for the
main thread's next wake-up and two of them would merge into one."""
from __future__ import annotations

import os
import signal
import threading
import time

_COUNT = "_SSSP_TEST_SIGNALS_SENT"  # the module is re-imported per nanny: count in the environment


def _signal() -> int:
    return getattr(signal, os.environ.get("SSSP_TEST_SIGNAL", "SIGINT"))


def _until_taken(limit: float = 10) -> None:
    """Until the handler that holds signals back while the cluster starts
    (``pipeline.cluster._signals_held``) has taken one: its list of held signals (the
    one list in its closure) is not empty."""
    handler = signal.getsignal(_signal())
    cells = [c.cell_contents for c in getattr(handler, "__closure__", None) or ()]
    held = [c for c in cells if isinstance(c, list)]
    if len(held) != 1:
        raise RuntimeError(f"not the start-up's handler: {handler!r}")
    end = time.monotonic() + limit
    while not held[0] and time.monotonic() < end:
        time.sleep(0.01)


def _signal_at_spawn() -> None:
    import multiprocessing.util as mp_util

    real = mp_util.spawnv_passfds
    if getattr(real, "_sssp_test", False):
        return
    fired = []

    def spawnv_passfds(*args, **kwargs):
        pid = real(*args, **kwargs)
        if not fired and "spawn_main" in " ".join(map(str, args[1])):  # a worker, not the resource tracker
            fired.append(pid)
            main = threading.main_thread()
            signal.pthread_kill(main.ident, _signal())
            _until_taken()
            signal.pthread_kill(main.ident, _signal())
            end = time.monotonic() + 5
            while main.is_alive() and time.monotonic() < end:
                time.sleep(0.01)
            if not main.is_alive():
                threading.Event().wait()  # the exit stops this daemon thread here
        return pid

    spawnv_passfds._sssp_test = True
    mp_util.spawnv_passfds = spawnv_passfds


def dask_setup(nanny) -> None:
    if os.environ.get("SSSP_TEST_SIGNAL_AT_SPAWN") == "1":
        _signal_at_spawn()
    sent = int(os.environ.get(_COUNT, "0"))
    if sent >= int(os.environ.get("SSSP_TEST_SIGNALS", "1")):
        return
    os.environ[_COUNT] = str(sent + 1)
    os.kill(os.getpid(), _signal())
