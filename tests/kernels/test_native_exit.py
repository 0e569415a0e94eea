"""RoutingKit's calls release the GIL and take it back inside a destructor that may not
throw: a thread still inside one when the interpreter finalizes aborted the process
("terminate called without an active exception", exit 134; a study's worker told to
close while its warm-up built its tiny hierarchy, the rare failure of the start-up
signal tests).  The interpreter's exit waits for those calls; ``sssp`` interrupted
during a contraction ends at once instead."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from gpu_sssp.kernels import hierarchy

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          timeout=timeout)


@pytest.mark.skipif(not hierarchy.library_available(), reason="RoutingKit (ch-router) is not installed")
def test_exit_while_a_daemon_thread_contracts_does_not_abort():
    """A daemon thread contracts grids over and over; the main thread exits, and its
    finalization takes a while (a slow finalizer), so that a contraction ends inside
    it.  That aborted every time before."""
    r = _python("""
        import sys, threading, time
        import numpy as np
        from gpu_sssp.kernels.graph import Graph
        from gpu_sssp.kernels.hierarchy import build_hierarchy
        s = 50
        v = np.arange(s * s).reshape(s, s)
        a = np.concatenate([v[:, :-1].ravel(), v[:, 1:].ravel(), v[:-1, :].ravel(), v[1:, :].ravel()])
        b = np.concatenate([v[:, 1:].ravel(), v[:, :-1].ravel(), v[1:, :].ravel(), v[:-1, :].ravel()])
        g = Graph.from_edges(a, b, np.arange(len(a)) % 7 + 1, s * s, name="grid")
        built = []
        def loop():
            while True:
                build_hierarchy(g)
                built.append(1)
        threading.Thread(target=loop, daemon=True).start()
        end = time.monotonic() + 60
        while len(built) < 2 and time.monotonic() < end:  # (the first one loads Numba's kernels)
            time.sleep(0.01)
        class Slow:
            def __del__(self):
                time.sleep(1.0)  # the GIL is free: a contraction that ends now takes it back
        sys.modules["zz_slow_finalizer"] = Slow()
        print("exiting")
        sys.exit(0)
    """)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "terminate called" not in err, err
    assert r.stdout.decode().strip() == "exiting"


def _call_in_native(release: threading.Event, entered: threading.Event):
    def fn():
        with hierarchy._native_call():
            entered.set()
            release.wait(30)
        return "done"
    return fn


def test_a_call_abandoned_to_ctrl_c_is_counted_until_it_ends():
    release, entered = threading.Event(), threading.Event()
    main = threading.main_thread().ident

    def ctrl_c():
        entered.wait(10)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        hierarchy._stoppable(_call_in_native(release, entered), "test")
    assert hierarchy.native_calls_abandoned() == 1
    release.set()
    deadline = time.monotonic() + 10
    while hierarchy.native_calls_abandoned() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hierarchy.native_calls_abandoned() == 0
    assert hierarchy._stoppable(lambda: 7, "test") == 7  # and a call that ends is never counted
    assert hierarchy.native_calls_abandoned() == 0


def test_the_exit_hook_waits_for_calls_and_then_lets_none_start():
    release, entered = threading.Event(), threading.Event()
    t = threading.Thread(target=_call_in_native(release, entered), daemon=True)
    t.start()
    assert entered.wait(10)
    try:
        assert hierarchy._wait_for_native_calls(limit=0.3) is False  # still inside: bounded
        threading.Timer(0.2, release.set).start()
        assert hierarchy._wait_for_native_calls(limit=10) is True
        late = threading.Event()

        def too_late():
            with hierarchy._native_call():
                late.set()

        threading.Thread(target=too_late, daemon=True).start()
        assert not late.wait(0.3)  # parked: no native call starts after the exit hook
    finally:
        release.set()
        hierarchy._exiting.clear()  # (this test process goes on)


def test_sssp_interrupted_during_a_contraction_ends_at_once():
    """``sssp`` (``workflows.cli.run``) whose command was stopped while a contraction it
    abandoned still runs: the process ends with the command's status at once, its
    output flushed, instead of waiting for the contraction at the exit."""
    r = _python("""
        import signal, sys, threading, time
        from gpu_sssp.kernels import hierarchy
        from gpu_sssp.workflows import cli
        def command(argv=None):
            def contraction():
                with hierarchy._native_call():
                    time.sleep(60)
            main = threading.main_thread().ident
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            try:
                hierarchy._stoppable(contraction, "contraction of test")
            except KeyboardInterrupt:
                sys.stdout.write("stopped: interrupted")  # no newline: flushed by run()
                return 130
        cli.main = command
        cli.run()
    """, timeout=50)
    assert r.returncode == 130, r.stderr.decode()
    assert r.stdout.decode() == "stopped: interrupted"
