"""A study stopped after some batches' files were written but before their chunk was
journaled (a chunk is journaled once all of its batches are written): the resume adopts
those batches - complete files of exactly the planned batch - instead of solving them
again, journals them as ``adopted``, and redoes every doubtful one (an empty statistics
file left by a power loss, another batch's file, a missing distance file)."""
from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import rome_parquet, solve_counter

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEEP = 5  # journal lines kept: the batches the stopped run had journaled


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                     silence_logs=logging.ERROR)
    client = Client(c)
    counter = solve_counter()
    c.scheduler.add_plugin(counter)
    yield client, counter
    client.close()
    c.close()


def _plan(graph_path, out, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(graph_path)
    if kw.pop("matrix", None):  # a travel-time matrix study: 40 random targets
        from gpu_sssp.pipeline.targets import plan_targets

        kw["targets"] = plan_targets(g, random=40, seed=1)
    return plan_study(g, graph_path, plan_sources(g, sources="all"), out=out, batch_size=64,
                      algorithm="dijkstra", **kw)


def _deterministic(folder):
    t = pq.read_table(folder / "stats").sort_by("source")
    return t.select(["source", "reached", "eccentricity", "sum_distance", "mean_distance", "algorithm"])


def _journal(folder):
    return [json.loads(x) for x in (folder / "journal.jsonl").read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("outputs, form", [("stats", None), ("stats,distances", "long"),
                                           ("stats,distances,predecessors", "wide"),
                                           ("matrix", "wide"), ("matrix", "long")])
def test_written_but_unjournaled_batches_are_adopted_not_solved_again(tmp_path, cluster, outputs, form):
    from gpu_sssp.pipeline.study import run_study
    from gpu_sssp.pipeline.writers import batch_name

    client, counter = cluster
    path = rome_parquet(tmp_path)
    if outputs == "matrix":
        kw, sub_dirs = {"matrix": True, "matrix_form": form}, ("matrix",)
    else:
        kw = {"outputs": outputs, **({"distance_form": form} if form else {})}
        sub_dirs = ("distances",) + (("predecessors",) if "predecessors" in outputs else ()) if form else ()
    ref = tmp_path / "ref"
    run_study(client, _plan(path, ref, **kw))
    nb = len(_journal(ref))
    assert nb == (3353 + 63) // 64

    # the stopped run: every batch's files written, only the first KEEP journaled, the
    # manifest left "interrupted"; then three doubtful batches
    out = tmp_path / "stopped"
    shutil.copytree(ref, out)
    lines = (out / "journal.jsonl").read_text().splitlines(keepends=True)
    kept = [json.loads(x)["batch"] for x in lines[:KEEP]]
    (out / "journal.jsonl").write_text("".join(lines[:KEEP]))
    (out / "summary.json").unlink()
    m = json.loads((out / "manifest.json").read_text())
    m["status"] = "interrupted"
    (out / "manifest.json").write_text(json.dumps(m))
    unjournaled = sorted(set(range(nb)) - set(kept))
    empty, other, gone = unjournaled[3], unjournaled[10], unjournaled[-1]
    (out / "stats" / batch_name(empty)).write_bytes(b"")  # renamed, never flushed: a power loss
    shutil.copy(out / "stats" / batch_name(other + 1), out / "stats" / batch_name(other))  # another batch's
    if sub_dirs:  # the stats file is there but its distance (or matrix) file is not
        (out / sub_dirs[0] / batch_name(gone)).unlink()
    else:
        (out / "stats" / batch_name(gone)).unlink()
    doubtful = {empty, other, gone}

    counter.memory.clear()
    plan = _plan(path, out, **kw)
    summary = run_study(client, plan, resume=True)
    assert summary["complete"]

    # only the doubtful batches were solved again: by the tasks run, by the sources solved
    solved_batches = [b for k in counter.memory for b in range(int(k.split("-")[-3]), int(k.split("-")[-2]) + 1)]
    assert set(solved_batches) <= doubtful and set(counter.memory.values()) == {1}
    entries = _journal(out)
    assert [e["batch"] for e in entries[:KEEP]] == kept
    adopted = [e for e in entries if e.get("adopted")]
    assert sorted(e["batch"] for e in adopted) == sorted(set(unjournaled) - doubtful)
    assert all("kernel_ms" not in e and "task" not in e and e["rows"] == len(plan.batches[e["batch"]])
               for e in adopted)
    redone = [e for e in entries[KEEP:] if not e.get("adopted")]
    assert sorted(e["batch"] for e in redone) == sorted(doubtful)
    assert sorted(e["batch"] for e in entries) == list(range(nb))
    assert summary["sources_solved"] == 3353
    man = json.loads((out / "manifest.json").read_text())
    assert man["status"] == "complete" and man["runs"][-1]["batches_adopted"] == len(adopted)

    # the results equal the uninterrupted run's
    assert _deterministic(out).equals(_deterministic(ref))
    for sub in sub_dirs:
        names = sorted(f.name for f in (ref / sub).iterdir())
        assert names == sorted(f.name for f in (out / sub).iterdir()) and len(names) == nb
        for name in names:  # the same batches: file by file
            assert pq.read_table(out / sub / name).equals(pq.read_table(ref / sub / name)), (sub, name)
    src = pq.read_table(out / "stats").column("source").to_numpy()
    assert np.array_equal(np.sort(src), np.arange(1, 3354))


def test_a_study_stopped_before_any_journal_line_resumes_from_its_files(tmp_path, cluster):
    """No journal at all (the reported case: 176 files, no journal.jsonl): every complete
    batch file is adopted, nothing solved."""
    from gpu_sssp.pipeline.study import run_study

    client, counter = cluster
    path = rome_parquet(tmp_path)
    ref = tmp_path / "ref"
    run_study(client, _plan(path, ref))
    out = tmp_path / "stopped"
    shutil.copytree(ref, out)
    (out / "journal.jsonl").unlink()
    counter.memory.clear()
    summary = run_study(client, _plan(path, out), resume=True)
    assert summary["complete"] and not counter.memory
    assert all(e.get("adopted") for e in _journal(out))
    assert _deterministic(out).equals(_deterministic(ref))


@pytest.mark.parametrize("outputs, form", [("stats,distances,predecessors", "wide"), ("stats,distances", "long"),
                                           ("matrix", "wide")])
def test_journaled_batches_with_missing_or_empty_files_are_solved_again(tmp_path, cluster, outputs, form):
    """A journaled batch counts as done on resume only while every file it writes is
    complete (a readable footer, its row count): a deleted or emptied distance file, a
    deleted matrix file -> the batch is solved again, and says so; the rest are kept."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import Study, plan_study, run_study
    from gpu_sssp.pipeline.writers import batch_name

    from tests.pipeline.test_study_support import grid_parquet

    client, counter = cluster
    path = grid_parquet(tmp_path, 20, 20)

    def plan(out):
        g = read_parquet(path)
        kw = {"outputs": outputs, "distance_form": form}
        if outputs == "matrix":
            from gpu_sssp.pipeline.targets import plan_targets

            kw = {"targets": plan_targets(g, random=40, seed=1), "matrix_form": form}
        return plan_study(g, path, plan_sources(g, sources="all"), out=out, batch_size=16, algorithm="dijkstra",
                          **kw)

    ref = tmp_path / "ref"
    run_study(client, plan(ref))
    sub_dirs = plan(ref).distance_folders or ("matrix",)
    nb = len(_journal(ref))
    assert nb == 400 // 16 and sorted(f.name for f in (ref / sub_dirs[0]).iterdir()) == [
        batch_name(i) for i in range(nb)]

    out = tmp_path / "damaged"
    shutil.copytree(ref, out)
    (out / sub_dirs[0] / batch_name(5)).unlink()  # deleted
    (out / sub_dirs[0] / batch_name(7)).write_bytes(b"")  # emptied (renamed, never flushed)
    doubtful = {5, 7}
    if len(sub_dirs) > 1:  # the wide form's predecessors too
        (out / sub_dirs[1] / batch_name(11)).unlink()
        doubtful.add(11)

    study = Study(plan(out), resume=True)
    try:
        assert sorted(study.pending) == sorted(doubtful) and set(study.redone) == doubtful
        note = study.redone_note()
        assert note.startswith(f"{len(doubtful)} journaled batch{'' if len(doubtful) == 1 else 'es'} will be solved again")
        assert f"{sub_dirs[0]}/{batch_name(5)} missing" in note and f"{sub_dirs[0]}/{batch_name(7)} unreadable" in note
    finally:
        study.close()

    counter.memory.clear()
    summary = run_study(client, plan(out), resume=True)
    assert summary["complete"] and summary["sources_solved"] == 400
    solved = [b for k in counter.memory for b in range(int(k.split("-")[-3]), int(k.split("-")[-2]) + 1)]
    assert set(solved) == doubtful and set(counter.memory.values()) == {1}
    man = json.loads((out / "manifest.json").read_text())
    assert man["status"] == "complete" and man["runs"][-1]["batches_redone"] == len(doubtful)

    # the outputs equal the uninterrupted run's, file by file
    assert _deterministic(out).equals(_deterministic(ref))
    for sub in sub_dirs:
        names = sorted(f.name for f in (ref / sub).iterdir())
        assert names == sorted(f.name for f in (out / sub).iterdir()) and len(names) == nb
        for name in names:
            assert pq.read_table(out / sub / name).equals(pq.read_table(ref / sub / name)), (sub, name)

    # a second resume finds nothing to do
    counter.memory.clear()
    study = Study(plan(out), resume=True)
    try:
        assert not study.pending and not study.redone and study.redone_note() is None
    finally:
        study.close()
