"""The study's task schedule (guided self-scheduling of chunks of batches) and the
per-worker timing figures, without a cluster."""
from __future__ import annotations

import pytest

from gpu_sssp.pipeline.study.schedule import (ChunkSchedule, chunk_size, contiguous_runs, plan_chunks, simulate,
                                              slots_for)
from gpu_sssp.pipeline.study.timing import cluster_timings, union_length


def test_chunk_size_rule():
    assert chunk_size(0, 4) == 0
    assert chunk_size(1, 4) == 1
    assert chunk_size(100, 4) == 13  # ceil(100 / 8)
    assert chunk_size(100, 4, cap=5) == 5
    assert chunk_size(3, 100) == 1  # never below one batch
    assert chunk_size(7, 1, factor=1) == 7


def test_contiguous_runs():
    assert contiguous_runs([0, 1, 2, 5, 6, 9]) == [[0, 1, 2], [5, 6], [9]]
    assert contiguous_runs([]) == []


@pytest.mark.parametrize("n, slots", [(1, 4), (7, 3), (517, 12), (2091, 12), (32, 12), (1000, 1)])
def test_chunks_cover_every_batch_once_in_order_and_shrink(n, slots):
    chunks = plan_chunks(list(range(n)), slots)
    flat = [i for c in chunks for i in c]
    assert flat == list(range(n))  # every batch once, in plan order (locality kept)
    sizes = [len(c) for c in chunks]
    assert all(a >= b for a, b in zip(sizes, sizes[1:]))  # never grows
    assert sizes[-1] == 1  # the tail is single batches
    assert all(c == list(range(c[0], c[-1] + 1)) for c in chunks)  # consecutive
    # the first chunk is at most half an even share of the work
    assert sizes[0] <= -(-n // (2 * slots))
    # the last `slots` chunks are small: no worker is left with a big one at the end
    assert max(sizes[-min(slots, len(sizes)):]) <= max(1, -(-n // (2 * slots)) // 4 + 1)


def test_resume_gaps_are_not_bridged():
    """A resume hands out only the batches its journal lacks; a chunk never spans a gap
    (its key names its first and last batch), and finished batches never come back."""
    pending = [3, 4, 5, 6, 7, 8, 20, 21, 40]
    chunks = plan_chunks(pending, 1)
    assert [i for c in chunks for i in c] == pending
    for c in chunks:
        assert c == list(range(c[0], c[-1] + 1))
    assert not any(set(c) & {0, 1, 2, 9, 10} for c in chunks)


def test_cap_bounds_every_chunk():
    chunks = plan_chunks(list(range(500)), 2, cap=3)
    assert max(len(c) for c in chunks) == 3


def test_schedule_hands_out_by_what_is_left():
    s = ChunkSchedule(range(64), slots=4)
    first = s.take(4)
    assert [len(c) for c in first] == [8, 7, 7, 6]  # ceil(64/8), ceil(56/8), ceil(49/8), ceil(42/8)
    assert s.remaining == 64 - 28 and bool(s)
    rest = s.take(1000)
    assert not s and s.next_chunk() == [] and sum(map(len, rest)) == 36


def test_slots_from_the_workers():
    assert slots_for(None) == 2
    assert slots_for([{"nthreads": 2}] * 4) == 12  # 4 GPU workers with 2 threads: 3 each
    assert slots_for([{"nthreads": 1}, {}]) == 4


def test_guided_chunks_balance_the_tail_better_than_fixed_big_tasks():
    """Simulated: 4 workers, 128 batches of uneven cost (a locality-ordered study: some
    regions cost more).  Guided chunks end within about one batch of each other; handing
    out 4 equal big chunks (one per worker) leaves workers idle while one still works."""
    costs = [1.0 + (i % 16 == 0) * 6.0 + (i >= 96) * 2.0 for i in range(128)]
    guided = simulate(costs, workers=4, slots_per_worker=3)
    fixed = simulate(costs, workers=4, slots_per_worker=1, chunks=[list(range(k, k + 32)) for k in range(0, 128, 32)])
    ideal = sum(costs) / 4
    assert guided["tail"] <= max(costs) + 1e-9
    assert guided["makespan"] <= ideal + max(costs)
    assert fixed["tail"] > guided["tail"]
    assert guided["tasks"] < 128  # far fewer tasks than batches
    # latency between a task's end and the next chunk's arrival is hidden by the slots
    late = simulate(costs, workers=4, slots_per_worker=3, latency=0.5)
    assert late["makespan"] <= guided["makespan"] + 1.0


def test_union_length():
    assert union_length([]) == 0
    assert union_length([(0, 1), (0.5, 2), (3, 4)]) == pytest.approx(3.0)


def test_cluster_timings_busy_tail_idle():
    t0 = 1000.0
    tasks = [
        {"worker": "a", "started": t0 + 0.1, "ended": t0 + 1.0, "kernel_ms": 800, "rows": 10},
        {"worker": "a", "started": t0 + 0.9, "ended": t0 + 2.0, "kernel_ms": 900, "rows": 10},  # overlaps
        {"worker": "b", "started": t0 + 0.3, "ended": t0 + 1.0, "kernel_ms": 600, "rows": 5},
        {"worker": "b", "started": t0 + 1.5, "ended": t0 + 2.5, "kernel_ms": 900, "rows": 5},  # 0.5 s gap
    ]
    startup = {"a": {"ready_at": t0 + 0.2, "graph_load_s": 0.1, "setup_s": 0.2}, "b": {"ready_at": t0 + 0.25}}
    ct = cluster_timings(tasks, startup, started_at=t0, collected_at=t0 + 2.6)
    a, b = ct["workers"]["a"], ct["workers"]["b"]
    assert a["busy_s"] == pytest.approx(1.8)  # 0.2 (ready; the task waited) .. 2.0
    assert a["first_task_s"] == pytest.approx(0.2) and a["ready_s"] == pytest.approx(0.2)
    assert b["busy_s"] == pytest.approx(1.7)
    assert b["idle_s"] == pytest.approx(0.55)  # 0.25 -> 0.3 dispatch, 1.0 -> 1.5 gap
    assert b["dispatch_s"] == pytest.approx(0.05)
    assert ct["tail_s"] == pytest.approx(0.5)
    assert ct["drain_s"] == pytest.approx(0.1)
    assert ct["first_batch_s"] == pytest.approx(1.0)
    assert ct["scheduler_overhead_s"] == pytest.approx(0.55)
    assert a["kernel_s"] == pytest.approx(1.7) and a["sources"] == 20 and a["graph_load_s"] == 0.1
    # a worker whose graph was loaded by an earlier study: no start-up figures
    ct2 = cluster_timings(tasks[:2], {}, started_at=t0, collected_at=t0 + 2.0)
    assert ct2["workers"]["a"]["ready_s"] is None and ct2["workers"]["a"]["busy_s"] == pytest.approx(1.9)


def test_cluster_timings_gpu_side():
    """Tasks carrying their device work's span: per GPU, lead + busy + gaps + drain is
    the solve wall (from the first task anywhere to the last batch collected)."""
    t0 = 1000.0
    tasks = [
        {"worker": "a", "started": t0 + 0.10, "ended": t0 + 0.6, "kernel_ms": 400, "rows": 4,
         "gpu_start": t0 + 0.12, "gpu_end": t0 + 0.50},
        {"worker": "a", "started": t0 + 0.11, "ended": t0 + 1.0, "kernel_ms": 300, "rows": 4,
         "gpu_start": t0 + 0.50, "gpu_end": t0 + 0.80},  # queued right behind: no gap
        {"worker": "a", "started": t0 + 0.7, "ended": t0 + 1.2, "kernel_ms": 100, "rows": 4,
         "gpu_start": t0 + 0.95, "gpu_end": t0 + 1.05},  # the GPU ran dry 0.80 .. 0.95
        {"worker": "b", "started": t0 + 0.2, "ended": t0 + 1.1, "kernel_ms": 800, "rows": 8,
         "gpu_start": t0 + 0.25, "gpu_end": t0 + 1.0},
        {"worker": "c", "started": t0 + 0.3, "ended": t0 + 0.9, "kernel_ms": 500, "rows": 5},  # a CPU task
    ]
    ct = cluster_timings(tasks, {}, started_at=t0, collected_at=t0 + 1.3)
    a, b, c = (ct["workers"][w] for w in "abc")
    assert a["gpu_busy_s"] == pytest.approx(0.78)
    assert a["gpu_lead_s"] == pytest.approx(0.02) and a["gpu_gaps_s"] == pytest.approx(0.15)
    assert a["gpu_drain_s"] == pytest.approx(0.25)
    solve_wall = 1.3 - 0.1
    for w in (a, b):
        assert w["gpu_lead_s"] + w["gpu_busy_s"] + w["gpu_gaps_s"] + w["gpu_drain_s"] == pytest.approx(solve_wall)
    assert b["gpu_lead_s"] == pytest.approx(0.15) and b["gpu_gaps_s"] == pytest.approx(0.0)
    assert "gpu_busy_s" not in c
    assert ct["gpu_gaps_s_sum"] == pytest.approx(0.15) and ct["gpu_drain_s_sum"] == pytest.approx(0.55)
    assert "gpu_busy_s_sum" not in cluster_timings(tasks[4:], {}, started_at=t0, collected_at=t0 + 1.0)


def test_prompt_client_stream_sets_and_restores_the_interval():
    from types import SimpleNamespace

    from gpu_sssp.pipeline.study.run import CLIENT_SEND_INTERVAL, _prompt_client_stream

    comm = SimpleNamespace(interval=0.01)
    client = SimpleNamespace(scheduler_comm=comm)
    restore = _prompt_client_stream(client)
    assert comm.interval == CLIENT_SEND_INTERVAL
    restore()
    assert comm.interval == 0.01
    # a client that reconnected meanwhile keeps its new stream as it is
    restore = _prompt_client_stream(client)
    client.scheduler_comm = SimpleNamespace(interval=0.01)
    restore()
    assert comm.interval == CLIENT_SEND_INTERVAL and client.scheduler_comm.interval == 0.01
    # no such stream (another client class), or already quicker: left alone
    _prompt_client_stream(SimpleNamespace())()
    quick = SimpleNamespace(scheduler_comm=SimpleNamespace(interval=0.0005))
    _prompt_client_stream(quick)()
    assert quick.scheduler_comm.interval == 0.0005


def test_a_study_makes_every_stream_prompt_and_puts_them_back(tmp_path):
    """The real BatchedSends the run loop speeds up and puts back: the client's to the
    scheduler, the scheduler's to the client and to each worker, each worker's to the
    scheduler."""
    import gpu_sssp
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.run import STREAM_INTERVAL
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None) as cl, \
            Client(cl) as client:
        sched = cl.scheduler
        workers = list(cl.workers.values())

        def intervals():
            return (client.scheduler_comm.interval, sched.client_comms[client.id].interval,
                    tuple(sorted(bc.interval for bc in sched.stream_comms.values())),
                    tuple(sorted(w.batched_stream.interval for w in workers)))

        before = intervals()
        assert before[0] > 0.001 and before[1] > 0.001  # Dask's 10 and 2 ms: what the run changes
        assert min(before[2]) > 0.001 and min(before[3]) > 0.001
        seen = []
        s = gpu_sssp.study(path, random=64, seed=1, out=str(tmp_path / "s"), client=client, algorithm="dijkstra",
                           on_batch=lambda meta, study: seen.append(intervals()))
        assert s["complete"] and seen
        quick = (STREAM_INTERVAL, STREAM_INTERVAL, (STREAM_INTERVAL,) * 2, (STREAM_INTERVAL,) * 2)
        assert set(seen) == {quick}  # quick while the batches came back
        assert intervals() == before


def test_worker_devices_counts_every_worker():
    """The default batch size is decided per worker: two H200 workers are two entries
    (``describe_cluster``'s ``devices`` names the kind once; passing that made a 16,384-source
    study on 2 GPUs get 8,192-source batches, one per GPU and none to spare)."""
    from gpu_sssp.pipeline.study.plan import default_batch_size
    from gpu_sssp.pipeline.cluster import worker_devices

    info = {"devices": ["NVIDIA H200"], "workers": 2,
            "worker_list": [{"device": "NVIDIA H200"}, {"device": "NVIDIA H200"}]}
    assert worker_devices(info) == ["NVIDIA H200", "NVIDIA H200"]
    assert default_batch_size("auto", worker_devices(info), phast=True, sources=16_384) == 4096
    assert worker_devices({"devices": ["cpu"]}) == ["cpu"]


def test_study_chunks_single_batches_when_dask_would_not_queue_them():
    """Dask queues a group of tasks on its scheduler (and so balances them as threads
    free) only when it has more than twice the cluster's threads: fewer chunks than that
    are single batches, all of one size, which Dask spreads by count."""
    from gpu_sssp.pipeline.study.run import study_chunks

    four_gpus = [{"nthreads": 3}] * 4  # 12 threads: queued above 24 tasks
    few = study_chunks(range(8), "guided", four_gpus)
    assert few == [[i] for i in range(8)]
    many = study_chunks(range(200), "guided", four_gpus)
    assert len(many) > 24 and sum(len(c) for c in many) == 200
    assert len(many[0]) > 1 and len(many[-1]) == 1  # big first, single batches at the end
    assert [i for c in many for i in c] == list(range(200))
    assert study_chunks(range(200), "batch", four_gpus) == [[i] for i in range(200)]
    assert max(len(c) for c in study_chunks(range(200), "guided", [{"nthreads": 1}], cap=3)) == 3


class _FakeFuture:
    def __init__(self, status="pending", result=None, exc=None):
        self.status, self._result, self._exc = status, result, exc

    def result(self):
        if self._exc is not None:
            raise self._exc
        return self._result


def test_task_reports_are_grouped_and_a_missing_report_is_fetched():
    from types import SimpleNamespace

    from gpu_sssp.pipeline.study.run import _Reports

    client = SimpleNamespace(subscribe_topic=lambda topic, handler: None, unsubscribe_topic=lambda topic: None)
    r = _Reports(client, "t")
    futures = {"a": (_FakeFuture(), [0]), "b": (_FakeFuture(), [1]), "c": (_FakeFuture(), [2])}
    # the scheduler sets a dict event's "worker" to the sender's address: the result is wrapped
    r._handler((0.0, {"result": {"task": "a", "worker": "node0"}, "worker": "tcp://x:1"}))
    r._handler((0.0, {"result": {"task": "a", "worker": "node0"}}))  # a task run twice
    r._handler((0.0, {"other": 1}))  # not a report
    gen = r.groups(futures)
    first = next(gen)
    assert first == [("a", {"task": "a", "worker": "node0"})]
    futures.pop("a")
    # b ended without a report: its result is fetched; c is still running
    futures["b"][0].status, futures["b"][0]._result = "finished", {"task": "b"}
    assert next(gen) == [("b", {"task": "b"})]
    futures.pop("b")
    futures["c"][0].status, futures["c"][0]._exc = "error", ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        next(gen)
    r.close()


@pytest.mark.parametrize("count, size, workers", [(264_346, 8192, 4), (264_346, 8192, 2), (1_070_376, 8192, 4),
                                                   (16_384, 2048, 4), (40_000, 4096, 4), (5, 8192, 4),
                                                   (100, 7, 3), (0, 8, 4), (264_346, 8192, 1)])
def test_batches_laid_out_for_the_workers(count, size, workers):
    """Full batches come in a multiple of the workers and the rest in up to one part per
    worker, so that no worker solves a last batch (or a last round of full batches)
    alone; parts of at most half a batch join the last full batches; every source once,
    in order; one worker: the plain split."""
    import numpy as np

    from gpu_sssp.pipeline.sources import batch_bounds, batch_count, make_batches, tail_layout

    src = np.arange(count) * 3
    got = make_batches(src, size, workers)
    assert np.array_equal(np.concatenate(got) if got else src[:0], src)
    assert len(got) == batch_count(count, size, workers)
    sizes = [len(b) for b in got]
    plain = [len(b) for b in make_batches(src, size)]
    full, pieces, rest, merged = tail_layout(count, size, workers)
    if workers == 1:
        assert sizes == plain and not merged
    else:
        assert full % workers == 0 and pieces <= workers
        tail = sizes[full - pieces:] if merged else sizes[full:]
        assert sizes[:len(sizes) - len(tail)] == [size] * (len(sizes) - len(tail))
        if pieces:
            assert len(tail) == pieces and max(tail) - min(tail) <= 1
            assert sum(tail) == rest + (size * pieces if merged else 0)
            assert max(tail) <= (size + size // 2 if merged else size)
            assert merged == (min(tail) > size)
    for i in range(len(got)):
        a, b = batch_bounds(i, count, size, workers)
        assert np.array_equal(src[a:b], got[i])
    with pytest.raises(IndexError):
        batch_bounds(len(got), count, size, workers)
    # all NY sources on 4 GPUs: 28 batches of 8,192 and 4 of 8,742-8,743 (was: one
    # GPU's 33rd batch of 2,202); FLA's on 4 GPUs: 128 full batches and 4 of 5,450
    if (count, size, workers) == (264_346, 8192, 4):
        assert sizes[28:] == [8743, 8743, 8742, 8742] and len(sizes) == 32 and plain[-1] == 2202
    if (count, size, workers) == (1_070_376, 8192, 4):
        assert sizes[128:] == [5450] * 4 and not merged


def test_a_study_laid_out_for_its_workers_resumes_with_that_layout(tmp_path):
    """A default batch size is laid out for the cluster's workers and recorded: a resume
    on another cluster re-plans the same batches; a layout equal to the plain split
    leaves the study's identity as before (older folders resume)."""
    import numpy as np

    from gpu_sssp.pipeline.sources import SourcePlan
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.study.plan import StudyPlan
    from tests.pipeline.test_study_support import grid_parquet
    from gpu_sssp.pipeline.graph import read_parquet

    path = grid_parquet(tmp_path, 30, 30)
    g = read_parquet(path)

    def plan(out):
        return StudyPlan(graph=g, graph_path=str(path), sources=SourcePlan(np.arange(900)), algorithm="dijkstra",
                         batch_size=None, outputs=("stats",), distance_form="wide", out=tmp_path / out)

    p = plan("s")
    p.resolve_batch_size(["cpu"] * 4)  # 64-source batches: 12 full, the last 132 in 4
    assert p.batch_workers == 4 and [len(b) for b in p.batches][-5:] == [64, 33, 33, 33, 33]
    assert p.identity["batch_workers"] == 4
    first = Study(p)
    first.start({})  # writes the manifest
    first.close()
    again = plan("s")
    st = Study(again, resume=True)  # on one worker now: the folder's layout
    st.close()
    assert again.batch_workers == 4 and [len(b) for b in again.batches] == [len(b) for b in p.batches]
    one = plan("one")
    one.resolve_batch_size(["cpu"])
    assert one.batch_workers == 1 and "batch_workers" not in one.identity
    even = StudyPlan(graph=g, graph_path=str(path), sources=SourcePlan(np.arange(512)), algorithm="dijkstra",
                     batch_size=None, outputs=("stats",), distance_form="wide", out=tmp_path / "even")
    even.resolve_batch_size(["cpu"] * 4)  # 8 full batches: the plain split
    assert even.batch_workers == 1 and "batch_workers" not in even.identity
    # 800 sources: 12 full batches, the 32 left in parts of 8 that join the last 4 for
    # statistics only; a study with distance rows keeps every batch within 64 (memory)
    for outputs, tail in ((("stats",), [72] * 4), (("stats", "distances"), [64] * 4 + [8] * 4)):
        p8 = StudyPlan(graph=g, graph_path=str(path), sources=SourcePlan(np.arange(800)), algorithm="dijkstra",
                       batch_size=None, outputs=outputs, distance_form="wide", out=tmp_path / "p8")
        p8.resolve_batch_size(["cpu"] * 4)
        assert [len(b) for b in p8.batches][-len(tail):] == tail and p8.batch_workers == 4


def test_board_counts_a_report_before_its_task_ends():
    """The dashboard counts a task's batches from its report (a Dask event) as it passes
    the scheduler, before the task's completion; the completion then adds nothing."""
    from gpu_sssp.pipeline.dashboard import REPORTS, StudyBoard

    b = StudyBoard()
    b.add_study({"study_id": "abc123", "sources_total": 264_346, "batch_size": 8192, "batch_workers": 4,
                 "sources_before": 0})
    b.log_event(REPORTS + "abc123-x", {"result": {"task": "phast-batch-000027-000028-abc123", "worker": "gpu-0",
                                                  "task_ms": 3.0}, "worker": "tcp://1"})
    b.log_event("other-topic", {"result": {"task": "phast-batch-000031-000031-abc123"}})
    st = b.status()["studies"][0]
    assert st["sources_done"] == 8192 + 8743 and st["workers"]["gpu-0"]["tasks"] == 1
    b.transition("phast-batch-000027-000028-abc123", "processing", "memory", worker="tcp://1")
    b.transition("phast-batch-000031-000031-abc123", "processing", "memory", worker="tcp://1")
    st = b.status()["studies"][0]
    assert st["sources_done"] == 8192 + 8743 + 8742 and st["tasks_done"] == 2


def test_cpu_workers_get_chunks_of_a_few_batches():
    """All NY on two CPU workers began with guided chunks of 129 batches (24-35 s each):
    the progress bar stood still that long and a Ctrl-C lost the whole chunk.  CPU
    batches take 0.1-3 s, so a few per task cost nothing in Dask's overhead."""
    from gpu_sssp.pipeline.study.run import CPU_CHUNK_BATCHES, study_chunks

    two_cpu = [{"nthreads": 1, "device": "cpu"}] * 2
    chunks = study_chunks(range(1033), "guided", two_cpu)
    assert max(len(c) for c in chunks) == CPU_CHUNK_BATCHES and [i for c in chunks for i in c] == list(range(1033))
    assert max(len(c) for c in study_chunks(range(1033), "guided", two_cpu, cap=2)) == 2
    two_gpu = [{"nthreads": 3, "device": "NVIDIA H200"}] * 2
    assert max(len(c) for c in study_chunks(range(1033), "guided", two_gpu)) > 50  # GPUs keep big chunks
