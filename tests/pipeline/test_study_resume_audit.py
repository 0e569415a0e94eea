"""A study folder tampered with between runs: a journaled batch's statistics file
replaced by another study's (copied in) is solved again on resume, never summarised as
this study's; and a file replaced during the run stops the summary with one line.

(``tests/pipeline/study_kill_harness.py`` kills real ``sssp study`` runs at random
points and resumes them; it is run by hand.)"""
from __future__ import annotations

import json
import logging
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SUMMARY_KEYS = ("sources_solved", "sources_reaching_all", "diameter", "radius", "eccentricity_max",
                "closeness_max", "closeness_min", "reached_total", "relaxations_total")


def _plan(graph_path, out, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(graph_path)
    how = kw.pop("how", {"sources": "all"})
    return plan_study(g, graph_path, plan_sources(g, **how), out=out, batch_size=64, algorithm="dijkstra", **kw)


def _deterministic(folder):
    t = pq.read_table(folder / "stats").sort_by("source")
    return t.select(["source", "reached", "eccentricity", "sum_distance", "mean_distance", "algorithm"])


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """Three finished studies: ``ref`` (rome99, all sources), ``other`` (500 random
    sources of rome99) and ``heavy`` (all sources of rome99 with every weight doubled:
    the same batches of the same sources, other results), and a client."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study import run_study

    tmp = tmp_path_factory.mktemp("resume-audit")
    path = rome_parquet(tmp)
    t = pq.read_table(path)
    heavy_path = tmp / "rome99-heavy.parquet"
    w = t.column("weight")
    pq.write_table(t.set_column(t.column_names.index("weight"), "weight",
                                pa.compute.multiply(w, pa.scalar(2, w.type))), heavy_path)
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                     silence_logs=logging.ERROR)
    client = Client(c)
    folders = {"ref": (path, {}), "other": (path, {"how": {"random": 500, "seed": 5}}),
               "heavy": (heavy_path, {})}
    got = {}
    for name, (gpath, kw) in folders.items():
        out = tmp / name
        got[name] = (run_study(client, _plan(gpath, out, **kw)), out)
    got["graph"] = path
    yield client, got
    client.close()
    c.close()


def _tampered(studies, tmp_path, donor: str, batch: int = 2):
    """A copy of the reference study with its journaled batch ``batch``'s statistics file
    replaced by the ``donor`` study's file of that name."""
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    shutil.copyfile(got[donor][1] / "stats" / batch_name(batch), out / "stats" / batch_name(batch))
    return out


@pytest.mark.parametrize("donor, why", [("other", "holds other sources than batch 2's"),
                                        ("heavy", "was written by another study")])
def test_a_journaled_statistics_file_replaced_by_another_studys_is_solved_again(studies, tmp_path, donor, why):
    from gpu_sssp.pipeline.study import Study, run_study
    from gpu_sssp.pipeline.writers import batch_name

    client, got = studies
    ref_summary, ref = got["ref"]
    out = _tampered(studies, tmp_path, donor)
    if donor == "heavy":  # the same sources in the same batches: only the file differs
        a = pq.read_table(out / "stats" / batch_name(2), columns=["source"])
        b = pq.read_table(ref / "stats" / batch_name(2), columns=["source"])
        assert a.equals(b)
        # (its bytes: a file of fixed-width columns can have the reference's size)
        assert (out / "stats" / batch_name(2)).read_bytes() != (ref / "stats" / batch_name(2)).read_bytes()
    study = Study(_plan(got["graph"], out), resume=True)
    try:
        assert set(study.redone) == {2} and why in study.redone[2], study.redone
        assert study.redone_note().startswith("1 journaled batch will be solved again, their files missing, "
                                              "incomplete or not the batch's: stats/batch-000002.parquet")
        assert 2 not in study.done and study.adopted == []
    finally:
        study.close()
    summary = run_study(client, _plan(got["graph"], out), resume=True)
    assert _deterministic(out).equals(_deterministic(ref))
    assert {k: summary[k] for k in SUMMARY_KEYS} == {k: ref_summary[k] for k in SUMMARY_KEYS}
    journal = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    ref_lines = len((ref / "journal.jsonl").read_text().splitlines())
    assert [e["batch"] for e in journal[ref_lines:]] == [2]  # only the replaced batch again


def test_another_studys_file_of_the_same_sources_is_not_adopted(studies, tmp_path):
    """An unjournaled batch (a run stopped between its write and its journal line)
    whose statistics file is another study's of the same sources (rome99 with doubled
    weights: same rows, other results) is solved again, not adopted; this study's own
    unjournaled file is adopted."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = _tampered(studies, tmp_path, "heavy", batch=2)
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines()
    keep = [x for x in lines if json.loads(x).get("batch") not in (2, 3)]
    assert len(keep) < len(lines)
    journal.write_text("".join(x + "\n" for x in keep))
    study = Study(_plan(got["graph"], out), resume=True)
    try:
        assert 2 not in study.done and 3 in study.done
        assert study.adopted == [3], study.adopted  # its own file: kept
        assert 2 in study.pending
    finally:
        study.close()
    # the files name their study
    meta = pq.read_metadata(got["ref"][1] / "stats" / batch_name(0)).metadata
    assert meta[b"gpu_sssp.study"] != pq.read_metadata(got["heavy"][1] / "stats" / batch_name(0)).metadata[
        b"gpu_sssp.study"]


def test_files_of_a_version_before_the_study_ids_are_kept_when_journaled_only(studies, tmp_path):
    """A folder written before files named their study: its journaled batches are
    kept (the journal and the sizes vouch for them); an unjournaled one is solved again."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = tmp_path / "old"
    shutil.copytree(got["ref"][1], out)
    entries = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    for b in (1, 4):  # rewritten as an older version wrote them: no study id
        f = out / "stats" / batch_name(b)
        pq.write_table(pq.read_table(f).replace_schema_metadata(None), f, store_schema=False)
        assert b"gpu_sssp.study" not in (pq.read_metadata(f).metadata or {})
        for e in entries:
            if e.get("batch") == b:
                e["bytes"] = f.stat().st_size
    entries = [e for e in entries if e.get("batch") != 4]  # batch 4: written, not journaled
    (out / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    study = Study(_plan(got["graph"], out), resume=True)
    try:
        assert 1 in study.done and 1 not in study.redone
        assert 4 not in study.done and study.adopted == [] and 4 in study.pending
    finally:
        study.close()


@pytest.mark.parametrize("recorded", [True, False])
def test_a_file_named_by_an_earlier_runs_id_is_kept_where_the_manifest_lists_it(studies, tmp_path, recorded):
    """A resume by a version whose study id differs (an identity key whose absence
    means the same) keeps the batches its earlier runs wrote: every run's id is kept in
    the manifest (``study_ids``); a file naming an id no run of the folder had is
    another study's, solved again."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.writers import batch_name, encode_parquet

    _client, got = studies
    out = tmp_path / "ids"
    shutil.copytree(got["ref"][1], out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study_ids"] == [manifest["study_id"]]
    f = out / "stats" / batch_name(1)
    from gpu_sssp.pipeline.study.task import STATS_PARQUET

    t = pq.read_table(f)
    f.write_bytes(encode_parquet(t, **dict(STATS_PARQUET, use_dictionary=False),
                                 key_value_metadata={"gpu_sssp.study": "feedfacefeedface"}).to_pybytes())
    entries = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    for e in entries:
        if e.get("batch") == 1:
            e["bytes"] = f.stat().st_size
    (out / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    if recorded:
        manifest["study_ids"] = ["feedfacefeedface", manifest["study_id"]]
        (out / "manifest.json").write_text(json.dumps(manifest))
    study = Study(_plan(got["graph"], out), resume=True)
    try:
        if recorded:
            assert 1 in study.done and 1 not in study.redone
        else:
            assert 1 not in study.done and "another study (feedfacefeedface)" in study.redone[1]
    finally:
        study.close()


def test_a_statistics_file_replaced_during_the_run_stops_the_summary(studies, tmp_path):
    from gpu_sssp.pipeline.study import Study, StudyError
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    study = Study(_plan(got["graph"], out), resume=True)
    assert not study.pending and not study.redone
    study.start({"mode": "none"})
    # after the resume's checks: another study's file under a finished batch's name
    shutil.copyfile(got["other"][1] / "stats" / batch_name(5), out / "stats" / batch_name(5))
    with pytest.raises(StudyError, match="batch-000005.parquet: holds other sources than batch 5's"):
        study.finish(wall_s=0.0, run_sources=0, run_meta=[], workers=0)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["failure"]["batch"] == 5
    assert not study.lock.held
    # the resume that follows solves it again
    again = Study(_plan(got["graph"], out), resume=True)
    try:
        assert set(again.redone) == {5}
    finally:
        again.close()


@pytest.mark.parametrize("name", ["batch-000099.parquet", "mine.parquet"])
def test_a_file_of_another_study_beside_the_batches_refuses_the_resume(studies, tmp_path, name):
    """``pyarrow.parquet.read_table("DIR/stats")`` reads every file of the folder: one
    that is no batch of the study (copied in from another study) would be read as the
    study's rows, while the study said it wrote its own 3,353."""
    from gpu_sssp.pipeline.study import Study, StudyError
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    (out / "stats" / ".hidden").write_bytes(b"x")  # hidden names: no reader takes them
    (out / "stats" / "_common_metadata").write_bytes(b"x")
    shutil.copyfile(got["other"][1] / "stats" / batch_name(3), out / "stats" / name)
    with pytest.raises(StudyError, match=f"stats/{name}: not a batch file of this study"):
        Study(_plan(got["graph"], out), resume=True)
    (out / "stats" / name).unlink()
    Study(_plan(got["graph"], out), resume=True).close()  # once moved out


def test_a_file_of_another_study_put_beside_the_batches_during_the_run_stops_the_summary(studies, tmp_path):
    from gpu_sssp.pipeline.study import Study, StudyError
    from gpu_sssp.pipeline.writers import batch_name

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    study = Study(_plan(got["graph"], out), resume=True)
    study.start({"mode": "none"})
    shutil.copyfile(got["other"][1] / "stats" / batch_name(3), out / "stats" / "batch-000099.parquet")
    with pytest.raises(StudyError, match="batch-000099.parquet: not a batch file of this study"):
        study.finish(wall_s=0.0, run_sources=0, run_meta=[], workers=0)
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"


def test_journal_lines_that_are_no_entries_are_ignored_not_a_traceback(studies, tmp_path):
    """Lines of a damaged journal that parse as JSON but are no entry (a number, a list,
    a string) were read as entries: the resume ended in an AttributeError traceback."""
    from gpu_sssp.pipeline.study import Study
    from gpu_sssp.pipeline.writers import Journal

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    with open(out / "journal.jsonl", "ab") as fh:
        fh.write(b'5\n[1, 2]\n"x"\nnull\n\xff\xfe\n{"batch": "3"}\n')
    entries = Journal(out / "journal.jsonl").entries()
    assert all(isinstance(e, dict) for e in entries) and entries[-1] == {"batch": "3"}
    study = Study(_plan(got["graph"], out), resume=True)
    try:
        assert not study.pending and not study.redone and not study.adopted
    finally:
        study.close()


@pytest.mark.parametrize("text", ["[]", "null", '{"identity": 5}', '{"graph": []}'])
@pytest.mark.parametrize("resume", [True, False])
def test_a_manifest_that_is_json_but_no_studys_is_one_line(studies, tmp_path, text, resume):
    """(an AttributeError traceback before)"""
    from gpu_sssp.pipeline.study import Study, StudyError

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    (out / "manifest.json").write_text(text)
    with pytest.raises(StudyError, match="manifest.json: unreadable study manifest"):
        Study(_plan(got["graph"], out), resume=resume)


def test_a_batch_folder_replaced_by_a_file_refuses_the_resume(studies, tmp_path):
    """(the resume started its cluster, then stopped with "[Errno 17] File exists")"""
    from gpu_sssp.pipeline.study import Study, StudyError

    _client, got = studies
    out = tmp_path / "study"
    shutil.copytree(got["ref"][1], out)
    shutil.rmtree(out / "stats")
    (out / "stats").write_text("not a folder")
    with pytest.raises(StudyError, match="stats: a file, where the study keeps its stats batch files"):
        Study(_plan(got["graph"], out), resume=True)
