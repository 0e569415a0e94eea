"""Studies: shortest paths from many sources, batched over the workers of a Dask cluster.

A study solves every source of a :class:`pipeline.sources.SourcePlan` once, in
batches; each batch is one task that solves on a worker (using the graph held by the
worker's :class:`pipeline.plugins.GraphPlugin`), writes its files atomically into the
study folder and returns only small metadata.  The client records each finished
batch in a journal, so that a study killed at any point can be resumed.

Study folder ``DIR``::

    manifest.json          graph, sources plan, algorithm, versions, cluster, timings
    journal.jsonl          one line per finished batch (client side, fsync'd)
    stats/batch-000000.parquet        one row per source (kernels.result.STATS_SCHEMA)
    distances/batch-000000.parquet    only when asked (long or wide form)
    predecessors/batch-000000.parquet only for the wide form with predecessors
    summary.json           the study summary (diameter/radius found, closeness, totals)

A batch is done when its journal line exists and its files are complete and its own
(``folder.Study`` checks footers, row counts, the stats file's sources and the journaled
bytes; a batch written but not journaled is adopted on resume).  Batches are
a pure function of the plan (sources in order, batch size), so a resumed study
rewrites a half-done batch under the same file names and never duplicates a source.

Modules: ``plan`` (options, batches), ``task`` (the worker side), ``folder`` (manifest,
journal, summary file), ``summary`` (the metrics), ``run`` (submission on a Dask client),
``versions``.  Nothing here prints; progress goes through the ``on_batch`` callback.
"""
from __future__ import annotations

from gpu_sssp.pipeline.study.folder import JOURNAL, MANIFEST, SUMMARY, Study, graph_parquet_path
from gpu_sssp.pipeline.study.plan import (BatchError, StudyError, StudyPlan, distance_bytes, fmt_bytes,
                                          parse_outputs, plan_study)
from gpu_sssp.pipeline.study.run import register_graph, run_study, submit_batches
from gpu_sssp.pipeline.study.summary import summarize
from gpu_sssp.pipeline.study.task import solve_batch

__all__ = ["BatchError", "JOURNAL", "MANIFEST", "SUMMARY", "Study", "StudyError", "StudyPlan",
           "distance_bytes", "fmt_bytes", "graph_parquet_path", "parse_outputs", "plan_study",
           "register_graph", "run_study", "solve_batch", "submit_batches", "summarize"]
