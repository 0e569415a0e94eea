"""The study folder: its checks, manifest, journal of finished batches and summary file."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.pipeline.study.plan import StudyError, StudyPlan
from gpu_sssp.pipeline.study.summary import summarize
from gpu_sssp.pipeline.study.versions import versions
from gpu_sssp.pipeline.writers import (Journal, batch_name, remove_temporaries, write_json_atomic,
                                       write_parquet_atomic)

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
SUMMARY = "summary.json"


def graph_parquet_path(graph, input_path, out_dir) -> str:
    """A Parquet file holding ``graph`` that the workers can read.

    The input itself when it is Parquet; the ingestion cache file when it can be
    found (``graph.path`` or the cache name ``load_graph`` uses); else the graph is
    written once to ``<out_dir>/graph.parquet``.

    Parameters
    ----------
    graph : kernels.graph.Graph
    input_path : str or os.PathLike or None
        The input the graph was loaded from.
    out_dir : str or os.PathLike
        The study folder.  An existing ``graph.parquet`` there is reused when its
        fingerprint matches (a resumed study does not rewrite it), and rewritten
        otherwise.

    Returns
    -------
    str
        Absolute path of the Parquet file.

    Raises
    ------
    RuntimeError
        The written file does not load back to the same graph (fingerprint
        mismatch), which would make the workers solve a different graph.
    OSError
        ``graph.parquet`` cannot be written.
    """
    from gpu_sssp.pipeline.graph import read_parquet

    p = getattr(graph, "path", None)
    if p and Path(p).suffix == ".parquet" and Path(p).exists():
        return os.fspath(Path(p).resolve())
    input_path = Path(input_path or "")
    if input_path.suffix == ".parquet":
        return os.fspath(input_path.resolve())
    target = Path(out_dir) / "graph.parquet"
    if target.exists():
        try:
            if read_parquet(target).fingerprint == graph.fingerprint:
                return os.fspath(target.resolve())
        except Exception:  # rewritten below
            pass
    tails = graph.tails().astype(np.int64) + graph.id_base
    meta = dict(graph.meta)
    meta.update(vertices=graph.n, arcs=graph.m, directed=graph.directed, id_base=graph.id_base,
                weight_type=graph.weight_type, written_by="sssp study")
    table = pa.table({"src": tails, "dst": graph.indices.astype(np.int64) + graph.id_base,
                      "weight": graph.weights})
    write_parquet_atomic(table, target, metadata=meta)
    written = read_parquet(target)
    if written.fingerprint != graph.fingerprint:  # should not happen: CSR round trip
        raise RuntimeError(f"{target}: rewritten graph differs from the input (fingerprint)")
    return os.fspath(target.resolve())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def resumed_settings(out) -> dict:
    """Settings of the study in ``out`` that a resume takes when not given again:
    ``batch_size``, ``distance_form``, ``order`` (empty when there is no readable manifest)."""
    try:
        m = json.loads((Path(out) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    ident = m.get("identity", {})
    got = {"batch_size": ident.get("batch_size"), "distance_form": ident.get("distance_form"),
           "order": m.get("sources", {}).get("order")}
    return {k: v for k, v in got.items() if v}


class Study:
    """A study folder: validation, the journal of finished batches, the manifest.

    Parameters
    ----------
    plan : StudyPlan
    resume : bool
        Continue the study already in ``plan.out`` (it must be the same study).

    Raises
    ------
    StudyError
        Without ``resume``: the folder holds a study or other files.  With it: the
        folder holds a different study (the message names what differs).
    """

    def __init__(self, plan: StudyPlan, *, resume: bool = False):
        self.plan = plan
        self.out = plan.out
        self.journal = Journal(self.out / JOURNAL)
        self.manifest: dict = {}
        self._check_folder(resume)
        self.done: dict[int, dict] = self._finished_batches() if resume else {}

    # .................................................................. folder checks
    def _check_folder(self, resume: bool) -> None:
        out = self.out
        mpath = out / MANIFEST
        if out.exists() and not out.is_dir():
            raise StudyError(f"{out}: exists and is not a folder")
        if mpath.exists():
            try:
                old = json.loads(mpath.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise StudyError(f"{mpath}: unreadable study manifest ({exc}); remove the folder or choose another --out") from None
            if not resume:
                raise StudyError(
                    f"{out} already holds a study ({old.get('status', 'unknown')}, graph "
                    f"{old.get('graph', {}).get('name', '?')}); use --resume to continue it or choose another --out"
                )
            theirs = old.get("identity", {})
            if self.plan.batch_size is None and theirs.get("batch_size"):
                self.plan.set_batch_size(theirs["batch_size"])  # not given again: the folder's
            mine = self.plan.identity
            diff = [k for k in mine if theirs.get(k) != mine[k]]
            if diff:
                details = "; ".join(f"{k}: folder has {theirs.get(k)!r}, asked {mine[k]!r}" for k in diff)
                raise StudyError(f"{out} holds a different study, cannot resume ({details})")
            self.manifest = old
        elif out.exists() and any(p.name not in ("graph.parquet",) and not p.name.startswith(".")
                                  for p in out.iterdir()):
            if resume:
                raise StudyError(f"{out}: no study to resume here (no {MANIFEST})")
            raise StudyError(f"{out}: folder is not empty and holds no study; choose another --out")

    def _finished_batches(self) -> dict[int, dict]:
        done = {}
        nb = len(self.plan.batches)
        for e in self.journal.entries():
            i = e.get("batch")
            if not isinstance(i, int) or not 0 <= i < nb:
                continue
            f = self.out / "stats" / batch_name(i)
            try:
                # a readable footer with the batch's row count: complete, even after a
                # power loss that left a renamed but empty file (fsync off)
                rows = pq.read_metadata(f).num_rows
            except (OSError, pa.ArrowInvalid):
                continue
            if rows == len(self.plan.batches[i]):
                done[i] = e
        return done

    # .................................................................. state
    @property
    def pending(self) -> list[int]:
        return [i for i in range(len(self.plan.batches)) if i not in self.done]

    @property
    def sources_done(self) -> int:
        return sum(len(self.plan.batches[i]) for i in self.done)

    def start(self, cluster_info: dict | None = None) -> None:
        """Create the folder and write the manifest (status ``running``).

        Leftover temporary files of a killed run are removed, and when the plan has
        no Parquet file for the workers yet, one is found or written (see
        :func:`graph_parquet_path`).  On a resume the manifest's ``created`` time
        and earlier ``runs`` are kept, and a new run entry is appended.

        Parameters
        ----------
        cluster_info : dict, optional
            Stored in the manifest and in this run's entry
            (``pipeline.cluster.describe_cluster``).

        Raises
        ------
        RuntimeError
            The graph written for the workers does not load back identical (see
            :func:`graph_parquet_path`).
        OSError
            The folder or its files cannot be written.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        for sub in ("stats",) + (("distances",) if {"distances", "predecessors"} & set(self.plan.outputs) else ()):
            (self.out / sub).mkdir(exist_ok=True)
        remove_temporaries(self.out)
        g = self.plan.graph
        if not self.plan.graph_path:
            self.plan.graph_path = graph_parquet_path(g, self.plan.input_path, self.out)
        runs = list(self.manifest.get("runs", []))
        runs.append({"start": _now(), "batches_before": len(self.done), "cluster": cluster_info or {}})
        self.manifest = {
            "study_id": self.plan.study_id,
            "status": "running",
            "identity": self.plan.identity,
            "graph": {"name": g.name, "input": self.plan.input_path, "path": self.plan.graph_path, "fingerprint": g.fingerprint,
                      "vertices": g.n, "arcs": g.m, "directed": g.directed, "id_base": g.id_base,
                      "weight_type": g.weight_type, "meta": g.meta},
            "sources": dict(self.plan.sources.how, digest=self.plan.sources.digest()),
            "algorithm": self.plan.algorithm,
            "batch_size": self.plan.batch_size,
            "batches": len(self.plan.batches),
            "outputs": list(self.plan.outputs),
            "distance_form": self.plan.distance_form,
            "distance_estimate_bytes": self.plan.distance_estimate,
            "versions": versions(),
            "cluster": cluster_info or {},
            "runs": runs,
            "created": self.manifest.get("created", _now()),
        }
        write_json_atomic(self.manifest, self.out / MANIFEST)

    def record(self, meta: dict) -> None:
        """Journal a finished batch (after its files exist).

        The journal line is what marks the batch done on resume, so it must be
        written only once the batch's files are complete.

        Parameters
        ----------
        meta : dict
            The metadata :func:`solve_batch` returned; ``meta["batch"]`` is the batch
            index.  It is stored with a ``done`` timestamp added.

        Raises
        ------
        KeyError
            ``meta`` has no ``batch``.  It is raised after the line is journaled;
            a resume ignores such a line, as it has no batch index.
        TypeError
            ``meta`` holds something that cannot be serialised to JSON.
        OSError
            The journal cannot be written.
        """
        self.record_many([meta])

    def record_many(self, metas: list[dict]) -> None:
        """Journal several finished batches with one disk flush (see :meth:`record`)."""
        now = _now()
        entries = [dict(meta, done=now) for meta in metas]
        self.journal.extend(entries)
        for entry in entries:
            self.done[int(entry["batch"])] = entry

    # .................................................................. tables
    def stats_table(self) -> pa.Table:
        """Every finished batch's stats, in plan order."""
        from gpu_sssp.kernels.result import STATS_SCHEMA

        parts = [pq.read_table(self.out / "stats" / batch_name(i), schema=STATS_SCHEMA) for i in sorted(self.done)]
        if not parts:
            return STATS_SCHEMA.empty_table()
        return pa.concat_tables(parts)

    def finish(self, *, wall_s: float, run_sources: int, run_meta: list[dict], workers: int,
               clock: tuple[float, float] | None = None) -> dict:
        """Summarise, write ``summary.json`` and the final manifest; return the summary."""
        stats = self.stats_table()
        summary = summarize(stats, self.plan, wall_s=wall_s, run_sources=run_sources,
                            run_meta=run_meta, workers=workers, clock=clock)
        write_json_atomic(summary, self.out / SUMMARY)
        complete = not self.pending
        self.manifest["status"] = "complete" if complete else "incomplete"
        run = self.manifest["runs"][-1]
        run.update(end=_now(), wall_s=wall_s, sources=run_sources, batches=len(run_meta),
                   kernel_ms=sum(m.get("kernel_ms", 0.0) for m in run_meta))
        self.manifest["timings"] = summary["timings"]
        self.manifest["summary"] = {k: v for k, v in summary.items() if k != "timings"}
        write_json_atomic(self.manifest, self.out / MANIFEST)
        return summary
