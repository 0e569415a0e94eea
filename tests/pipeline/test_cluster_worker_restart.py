"""A local worker's death during a study (killed, out of memory): its nanny's "Restarting
worker (status=Status.running)" came as Dask's time-stamped log line between the study's
progress lines; ``pipeline.cluster.worker_restarts_said`` says it in the study's words."""
from __future__ import annotations

import logging


def test_a_restart_is_said_once_in_the_studys_words_and_dasks_line_dropped():
    from gpu_sssp.pipeline.cluster import worker_restarts_said

    nanny = logging.getLogger("distributed.nanny")
    seen = []

    class _Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = _Keep(logging.DEBUG)
    nanny.addHandler(handler)
    level = nanny.level
    nanny.setLevel(logging.INFO)
    said = []
    try:
        with worker_restarts_said(said.append):
            nanny.warning("Restarting worker (status=%s)", "Status.running")
            nanny.warning("Worker process %d was killed by signal %d", 1234, 9)  # others pass
            nanny.info("Closing Nanny at 'tcp://127.0.0.1:1'")
        nanny.warning("Restarting worker (status=%s)", "Status.running")  # after the study: Dask's own
    finally:
        nanny.removeHandler(handler)
        nanny.setLevel(level)
    assert said == ["a worker process ended while the study ran (killed, or out of memory); its nanny starts a "
                    "new one, and the batches it held are solved again (finished batches are kept)"]
    assert seen == ["Worker process 1234 was killed by signal 9", "Closing Nanny at 'tcp://127.0.0.1:1'",
                    "Restarting worker (status=Status.running)"]


def test_a_say_that_fails_never_stops_the_nanny():
    from gpu_sssp.pipeline.cluster import worker_restarts_said

    def broken(line):
        raise BrokenPipeError("stdout closed")

    with worker_restarts_said(broken):
        logging.getLogger("distributed.nanny").warning("Restarting worker (status=Status.running)")
