"""Who is told of a refusal of a worker that joined an attached cluster mid-study
(``pipeline.cluster.hold_late_workers``): the clients of the studies that refused it."""
from __future__ import annotations

import pytest

from tests.pipeline.test_cluster_late_workers import _late_worker, _status, _until
from tests.pipeline.test_cluster_processes import ProcessCluster

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _flush_events(client, topic: str) -> None:
    """Every event the scheduler sent ``client`` before now has arrived: one more, on a
    topic of its own, is sent and waited for (a client's stream keeps their order)."""
    got = []
    client.subscribe_topic(topic, got.append)
    client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.log_event(topic, {"flush": True}))
    _until(lambda: got, 30, "the flush event did not arrive")
    client.unsubscribe_topic(topic)


@pytest.mark.slow
def test_a_refusal_by_one_study_is_told_to_that_study_only(tmp_path, monkeypatch):
    """Two studies run (two clients); a worker joins, study A refuses it (A's graph
    plugin never reached it), study B (whose plugin it has) does not.  The refusal's
    line went to both clients: B printed "worker late ... is refused ... no batch goes
    to it" about a worker that did serve it once A ended.  Now only A is told."""
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    from gpu_sssp.pipeline import cluster as C

    monkeypatch.setattr(C, "LATE_PLUGIN_MISSING_S", 2.0)  # built into the gate sent to the scheduler

    cluster = ProcessCluster(tmp_path / "cluster", n=1)
    try:
        with Client(scheduler_file=str(cluster.file), timeout=60) as ca, \
                Client(scheduler_file=str(cluster.file), timeout=60) as cb:
            cb.register_plugin(WorkerPlugin(), name="sssp-graph-b")  # B's graph plugin, loaded everywhere
            told_a, told_b = [], []
            b = C.hold_late_workers(cb, "study-b", plugin="sssp-graph-b",
                                    vetted=list(cb.scheduler_info()["workers"]), on_refused=told_b.append)
            a = C.hold_late_workers(ca, "study-a", plugin="sssp-graph-a-absent",
                                    vetted=list(ca.scheduler_info()["workers"]), on_refused=told_a.append)
            _late_worker(cluster, "late", None)
            _until(lambda: told_a, 60, "the late worker was not refused by study A")
            _flush_events(cb, "sssp-test-flush-b")
            assert len(told_a) == 1 and "worker late (tcp://127.0.0.1:" in told_a[0], told_a
            assert told_b == [], told_b
            a.close()
            _until(lambda: _status(cb, "late") == "running", 30, "the late worker stayed paused for study B")
            b.close()
            assert told_b == []
    finally:
        cluster.close()
