"""Two users' studies on one shared cluster take turns (``run.chunk_priorities``)."""
from __future__ import annotations

import json
import logging
import threading
import time

from tests.pipeline.test_study_support import rome_parquet


def test_a_small_study_started_during_a_big_one_does_not_wait_for_its_end(tmp_path):
    """Dask ran a cluster's queued tasks first come, first served: a 400-source study
    that a second user started during an all-sources study (2 workers x 3 threads, so
    both studies' tasks wait in the scheduler's queue) waited for every task of it, and
    counted that wait as its workers' idle time.  Each run's tasks now carry priorities
    by the work its study has had, so the small study's batches go to the first free
    threads: it ends long before the big one, and the big one still completes, every
    batch once."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import study

    path = rome_parquet(tmp_path)
    cluster = LocalCluster(n_workers=2, threads_per_worker=3, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    a, b = Client(cluster), Client(cluster)
    big_out, small_out = tmp_path / "big", tmp_path / "small"
    done = {}
    try:
        def big():
            done["big"] = study(path, sources="all", algorithm="dijkstra", batch_size=8, out=big_out, client=a)
            done["big_at"] = time.monotonic()

        t = threading.Thread(target=big)
        t.start()
        journal = big_out / "journal.jsonl"
        deadline = time.monotonic() + 120
        while not (journal.exists() and journal.stat().st_size):  # the big study is under way
            assert time.monotonic() < deadline and t.is_alive()
            time.sleep(0.01)
        small = study(path, random=400, seed=1, algorithm="dijkstra", batch_size=8, out=small_out, client=b)
        small_at = time.monotonic()
        big_batches_then = len(journal.read_text().splitlines())
        t.join(300)
        assert small["complete"] and done["big"]["complete"]
        assert small_at < done["big_at"]
        # of 420 (160-170 here); it was all 420: the small one waited for the big one's end
        assert big_batches_then < 420 - 100, big_batches_then
        batches = [json.loads(x)["batch"] for x in journal.read_text().splitlines()]
        assert sorted(batches) == list(range(420))
    finally:
        a.close()
        b.close()
        cluster.close()


def test_a_long_study_started_late_takes_turns_with_the_one_nearly_done(tmp_path):
    """A run joins level with the runs already on the cluster (``_virtual_start``): an
    all-sources study half done, then a 3,000-source study started, take turns from
    then on, so the first ends first (with turns counted from each run's own start, the
    late one went alone until it had had as much, and ended first)."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import study

    path = rome_parquet(tmp_path)
    cluster = LocalCluster(n_workers=2, threads_per_worker=3, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    a, b = Client(cluster), Client(cluster)
    first_out, late_out = tmp_path / "first", tmp_path / "late"
    ended = {}
    try:
        def first():
            ended["first_summary"] = study(path, sources="all", algorithm="dijkstra", batch_size=8, out=first_out,
                                           client=a)
            ended["first"] = time.monotonic()

        t = threading.Thread(target=first)
        t.start()
        journal = first_out / "journal.jsonl"
        deadline = time.monotonic() + 120
        while not (journal.exists() and len(journal.read_text().splitlines()) >= 210):  # half of 420
            assert time.monotonic() < deadline and t.is_alive()
            time.sleep(0.01)
        late = study(path, random=3000, seed=1, algorithm="dijkstra", batch_size=8, out=late_out, client=b)
        ended["late"] = time.monotonic()
        t.join(300)
        assert late["complete"] and ended["first_summary"]["complete"]
        assert ended["first"] < ended["late"], ended
    finally:
        a.close()
        b.close()
        cluster.close()
