"""How a study's batches are handed to the workers: guided self-scheduling of chunks.

A study's *batches* (``--batch-size`` sources each) are fixed by the plan: they are what
the journal records, what a resume skips and what the files are named after.  A *task*
solves a *chunk*: a run of consecutive pending batches, in one solver call, and writes
each batch's files as before.  Chunks shrink as the study proceeds (guided
self-scheduling, Polychronopoulos & Kuck 1987, with the "factoring" divisor of two):

    chunk = max(1, min(cap, ceil(remaining batches / (2 x slots))))

where ``slots`` is the number of tasks the client keeps in flight (one more than each
worker's threads, summed over the workers).  Big chunks first cut the per-task costs
(Dask's round trips, the solver's set-up, a kernel too short to fill a GPU); single
batches at the end keep the tail short: when one worker finishes its last task, every
other worker is at most one (small) chunk from its end.

The run hands every chunk to Dask at once (``pipeline.study.run.study_chunks``): Dask
queues a group of more tasks than twice the cluster's threads on its scheduler and gives a
worker the next one when one of its threads frees; fewer chunks than that become single
batches.  (:class:`ChunkSchedule` sizes each chunk from what is left when it is taken, as
when the client submitted chunk by chunk; :func:`plan_chunks` is the order a run submits.)
Nothing here depends on the cluster for correctness: which batch is in which chunk
changes neither the files nor the journal.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def chunk_size(remaining: int, slots: int, *, cap: int | None = None, factor: int = 2) -> int:
    """Batches in the next chunk when ``remaining`` batches are left (at least 1)."""
    if remaining <= 0:
        return 0
    size = math.ceil(remaining / max(1, factor * max(1, slots)))
    if cap is not None:
        size = min(size, max(1, int(cap)))
    return max(1, min(size, remaining))


def contiguous_runs(indices: Iterable[int]) -> list[list[int]]:
    """``[0, 1, 2, 5, 6, 9]`` -> ``[[0, 1, 2], [5, 6], [9]]`` (order kept)."""
    runs: list[list[int]] = []
    for i in indices:
        i = int(i)
        if runs and runs[-1][-1] + 1 == i:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


class ChunkSchedule:
    """The pending batches of a study, handed out as chunks of shrinking size.

    Parameters
    ----------
    pending : sequence of int
        Batch indices still to solve, in the order to solve them (a resume passes the
        batches its journal does not hold; gaps are allowed).
    slots : int
        Tasks kept in flight (see the module docstring).
    cap : int, optional
        Most batches in one chunk (e.g. to bound a chunk's distance outputs in memory).
    factor : int
        Divisor of guided self-scheduling (2: each chunk is at most half of an even
        share of what is left).

    Notes
    -----
    A chunk never spans a gap in ``pending`` (its batches are consecutive indices), so
    a task key ``<first>-<last>`` names every batch of its chunk.
    """

    def __init__(self, pending: Sequence[int], slots: int, *, cap: int | None = None, factor: int = 2):
        self._runs = contiguous_runs(pending)
        self.slots = max(1, int(slots))
        self.cap = cap
        self.factor = factor
        self.remaining = sum(len(r) for r in self._runs)
        self.total = self.remaining
        self.chunks_given = 0

    def __bool__(self) -> bool:
        return self.remaining > 0

    def next_chunk(self) -> list[int]:
        """The next chunk's batch indices (empty when nothing is left)."""
        while self._runs and not self._runs[0]:
            self._runs.pop(0)
        if not self._runs:
            return []
        k = chunk_size(self.remaining, self.slots, cap=self.cap, factor=self.factor)
        run = self._runs[0]
        chunk, self._runs[0] = run[:k], run[k:]
        if not self._runs[0]:
            self._runs.pop(0)
        self.remaining -= len(chunk)
        self.chunks_given += 1
        return chunk

    def take(self, n: int) -> list[list[int]]:
        """Up to ``n`` chunks."""
        out = []
        for _ in range(max(0, int(n))):
            c = self.next_chunk()
            if not c:
                break
            out.append(c)
        return out


def plan_chunks(pending: Sequence[int], slots: int, *, cap: int | None = None, factor: int = 2) -> list[list[int]]:
    """Every chunk :class:`ChunkSchedule` hands out, in order (what a run would submit
    when tasks finish in submission order; for tests and for sizing a run)."""
    s = ChunkSchedule(pending, slots, cap=cap, factor=factor)
    return s.take(len(pending))


def slots_for(workers: Sequence[dict] | None, *, per_worker_extra: int = 1) -> int:
    """The cluster's slots, what guided chunk sizes are divided by: each worker's threads
    plus ``per_worker_extra`` (Dask hands a worker a little more than its threads - a
    ``worker-saturation`` of 1.1 - so that its next task is already there when one ends),
    summed over the workers."""
    if not workers:
        return 2
    return sum(max(1, int(w.get("nthreads", 1))) + per_worker_extra for w in workers)


def simulate(costs: Sequence[float], workers: int, slots_per_worker: int, chunks: Sequence[Sequence[int]] | None = None,
             *, slots: int | None = None, cap: int | None = None, latency: float = 0.0) -> dict:
    """Simulate a study: ``workers`` identical workers, each running one task at a time,
    tasks taken in submission order by the first idle worker; a finished task frees its
    slot and the next chunk is submitted, reaching a worker ``latency`` later.

    Parameters
    ----------
    costs : sequence of float
        Each batch's solve time.
    chunks : optional
        Fixed chunks (e.g. one per batch); default: :class:`ChunkSchedule`.

    Returns
    -------
    dict
        ``makespan``, ``finish`` (per worker), ``tail`` (last minus first worker finish),
        ``tasks``.
    """
    import heapq

    n = len(costs)
    slots = slots if slots is not None else workers * slots_per_worker
    if chunks is not None:
        queue = [list(c) for c in chunks]
        sched = None
    else:
        sched = ChunkSchedule(range(n), slots, cap=cap)
        queue = sched.take(slots)
    ready = [(0.0, i) for i in range(len(queue))]  # (time the task reaches a worker, order)
    heapq.heapify(ready)
    free = [(0.0, w) for w in range(workers)]
    heapq.heapify(free)
    finish = [0.0] * workers
    tasks = 0
    order = len(queue)
    while ready:
        t_ready, i = heapq.heappop(ready)
        t_free, w = heapq.heappop(free)
        start = max(t_ready, t_free)
        end = start + sum(costs[b] for b in queue[i])
        finish[w] = end
        tasks += 1
        heapq.heappush(free, (end, w))
        if sched is not None:
            nxt = sched.next_chunk()
            if nxt:
                queue.append(nxt)
                heapq.heappush(ready, (end + latency, order))
                order += 1
    used = [f for f in finish if f > 0]
    return {"makespan": max(finish) if finish else 0.0, "finish": finish,
            "tail": (max(used) - min(used)) if used else 0.0, "tasks": tasks}
