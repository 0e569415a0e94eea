"""A study refused in a folder of the user's (a ``graph.parquet`` of another graph that no
study wrote, other files) is refused before any cluster starts where it can be told,
and leaves the folder as it found it: no ``.lock`` file, nothing else."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from tests.pipeline.test_study_support import grid_parquet, rome_source

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _user_folder(tmp_path):
    """``tmp_path/out`` holding the user's own ``graph.parquet`` (a 6x6 grid; no study wrote it)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "graph.parquet").write_bytes(grid_parquet(tmp_path, 6, 6, seed=1).read_bytes())
    return out


def test_in_memory_graph_refused_before_the_cluster_and_no_lock_left(tmp_path, monkeypatch):
    """An in-memory graph (no file) is written to ``DIR/graph.parquet`` for the workers:
    a user's file of another graph there is refused before the cluster starts (it was
    refused once the cluster was up), and the refusal leaves no ``.lock`` beside it."""
    from gpu_sssp.kernels.graph import Graph
    from gpu_sssp.pipeline import cluster
    from gpu_sssp.pipeline.study.plan import StudyError
    from gpu_sssp.pipeline.study.run import study

    out = _user_folder(tmp_path)
    before = (out / "graph.parquet").read_bytes()
    g = Graph.from_edges(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1.0, 2.0, 3.0]), n=3)
    assert g.path is None

    def no_cluster(**_kw):
        raise AssertionError("a cluster was started for a study refused by its folder")

    monkeypatch.setattr(cluster, "start_cluster", no_cluster)
    with pytest.raises(StudyError, match=r"graph\.parquet: a different graph, not written by sssp study"):
        study(g, out=out, cpu_workers=1)
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]
    assert (out / "graph.parquet").read_bytes() == before


def test_attached_study_refused_by_a_user_graph_file_leaves_no_lock(tmp_path):
    """On an attached cluster a non-Parquet input is written to ``DIR/graph.parquet``: a
    user's file of another graph there is refused, and the folder keeps only that file
    (the ``.lock`` was left behind)."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study.plan import StudyError
    from gpu_sssp.pipeline.study.run import study

    out = _user_folder(tmp_path)
    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        with pytest.raises(StudyError, match=r"graph\.parquet: a different graph, not written by sssp study"):
            study(gr, random=5, seed=1, out=out, client=client)
    finally:
        client.close()
        cluster.close()
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]


def test_study_refused_when_shared_is_known_checks_the_graph_file_at_once(tmp_path):
    """``Study(..., shared=True)`` (the workers are elsewhere) checks the folder's
    ``graph.parquet`` when it is made, before any cluster is attached, also for an input
    whose ingestion cache file a local cluster would read; unknown (None), that input's
    check waits for :meth:`Study.start`."""
    from gpu_sssp.pipeline.graph import load_graph
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import Study, plan_study
    from gpu_sssp.pipeline.study.plan import StudyError

    out = _user_folder(tmp_path)
    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    g = load_graph(gr)
    plan = plan_study(g, gr, plan_sources(g, random=5, seed=1), out=out, batch_size=5)
    with pytest.raises(StudyError, match=r"graph\.parquet: a different graph, not written by sssp study"):
        Study(plan, shared=True)
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]
    Study(plan).close()  # a local cluster's workers read the ingestion cache file: not refused
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]


def test_study_refused_in_a_non_empty_folder_leaves_no_lock(tmp_path):
    """``--out`` naming a folder of other files is refused; the refusal left its ``.lock``
    among the user's files."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import Study, plan_study
    from gpu_sssp.pipeline.study.plan import StudyError

    path = grid_parquet(tmp_path, 6, 6)
    g = read_parquet(path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(StudyError, match="folder is not empty and holds no study"):
        Study(plan_study(g, path, plan_sources(g, random=5, seed=1), out=out, batch_size=5))
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # a lock file that was there before the run (a killed run's) stays
    (out / ".lock").write_text("pid 1 on a host that is gone\n")
    with pytest.raises(StudyError, match="folder is not empty and holds no study"):
        Study(plan_study(g, path, plan_sources(g, random=5, seed=1), out=out, batch_size=5))
    assert sorted(p.name for p in out.iterdir()) == [".lock", "notes.txt"]


def test_attached_study_refused_before_it_reaches_the_scheduler(tmp_path):
    """With ``scheduler_file=`` a non-Parquet input goes to ``DIR/graph.parquet``: the
    user's file there is refused before the scheduler is asked anything (here the file
    names none: the refusal, not the attach's error, is what comes back)."""
    from gpu_sssp.pipeline.study.plan import StudyError
    from gpu_sssp.pipeline.study.run import study

    out = _user_folder(tmp_path)
    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    sched = tmp_path / "scheduler.json"  # (read before the graph: it names no live scheduler)
    sched.write_text('{"address": "tcp://127.0.0.1:1"}')
    with pytest.raises(StudyError, match=r"graph\.parquet: a different graph, not written by sssp study"):
        study(gr, random=5, seed=1, out=out, scheduler_file=str(sched))
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]


@pytest.mark.parametrize("outputs, message", [("", "no output named"), ("  ", "no output named"),
                                             ([], "no output named"), ((), "no output named"),
                                             # (commas with no item: a list of empty items)
                                             (" , ", "an empty item in the list")])
def test_study_with_no_output_named_is_refused(tmp_path, outputs, message):
    """``outputs=""`` (or an empty list) names no output: refused, not taken as stats."""
    from gpu_sssp.pipeline.study.plan import StudyError
    from gpu_sssp.pipeline.study.run import study

    gr = tmp_path / "rome99.gr"
    gr.write_bytes(rome_source().read_bytes())
    with pytest.raises(StudyError, match=message):
        study(gr, random=5, seed=1, out=tmp_path / "o", outputs=outputs, cpu_workers=1)
    assert not (tmp_path / "o").exists()
