"""A study folder that cannot be written (full, a file-size limit) or that is badly
placed: the error names the file, the journal counts no line it did not write whole, a
summary never stands beside a manifest that says "running", and ``--out`` inside
another study or through a dangling link is refused in one line (found by a user audit
of the study, 2026-12-07)."""
from __future__ import annotations

import errno
import json
import logging
import os

import pytest

from tests.pipeline.test_study_support import grid_parquet, rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _plan(graph_path, out, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(graph_path)
    src_kw = {k: kw.pop(k) for k in ("sources", "ids", "random", "seed", "sources_file", "order") if k in kw}
    return plan_study(g, graph_path, plan_sources(g, **src_kw), out=out, **kw)


def test_a_short_journal_write_is_no_entry_and_the_error_names_the_journal(tmp_path, monkeypatch):
    """Under ``ulimit -f`` the append wrote part of a line and returned (a short write,
    no error): the batch was counted as journaled, and the stop note said one batch more
    than the journal held; the next append's EFBIG said "[Errno 27] File too large"
    naming no file."""
    from gpu_sssp.pipeline import writers
    from gpu_sssp.pipeline.writers import Journal, OutputWriteError

    j = Journal(tmp_path / "journal.jsonl")
    j.extend([{"batch": 0}])
    real = os.write
    calls = []

    def short(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:5]))  # the limit reached mid-line
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(writers.os, "write", short)
    with pytest.raises(OutputWriteError, match=r"journal\.jsonl: could not be written \(File too large\)") as got:
        j.extend([{"batch": 1, "rows": 16}])
    assert got.value.errno == errno.EFBIG and isinstance(got.value, OSError)
    assert len(calls) == 2  # the rest of the line was tried, not dropped
    monkeypatch.undo()
    assert [e["batch"] for e in j.entries()] == [0]  # the torn line is no entry


def test_an_atomic_write_that_fails_names_the_final_file(tmp_path, monkeypatch):
    """ENOSPC while a JSON document is written: one line naming the file (not its
    temporary name, not nothing); the temporary file is gone and the old file kept.  An
    error about another file (read in the block) keeps its own name."""
    from gpu_sssp.pipeline import writers
    from gpu_sssp.pipeline.writers import OutputWriteError, atomic_path, write_json_atomic

    target = tmp_path / "summary.json"
    target.write_text("{}\n")

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writers.json, "dump", full)
    with pytest.raises(OutputWriteError) as got:
        write_json_atomic({"a": 1}, target)
    assert str(got.value) == f"{target}: could not be written (No space left on device)"
    assert got.value.errno == errno.ENOSPC
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"] and target.read_text() == "{}\n"
    other = tmp_path / "input.gr"
    with pytest.raises(FileNotFoundError) as got:
        with atomic_path(tmp_path / "out.parquet"):
            open(other)
    assert not isinstance(got.value, OutputWriteError) and got.value.filename == str(other)


def test_no_summary_stands_beside_a_manifest_left_running(tmp_path, monkeypatch):
    """A disk that fills at the very end: ``summary.json`` (small) was written, the final
    manifest was not, and the folder said both "complete" and "running".  The summary
    is removed again; a resume (nothing solved again) writes both."""
    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study import Study, run_study
    from gpu_sssp.pipeline.study import folder as folder_mod

    real = folder_mod.write_json_atomic
    out = tmp_path / "s"

    def full_at_the_end(obj, path):
        if os.path.basename(path) == "manifest.json" and (out / "summary.json").exists():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(obj, path)

    g = rome_parquet(tmp_path)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0",
                           silence_logs=logging.ERROR)
    client = Client(cluster)
    try:
        monkeypatch.setattr(folder_mod, "write_json_atomic", full_at_the_end)
        plan = _plan(g, out, ids=[1, 2, 3], batch_size=2, order="given", algorithm="dijkstra")
        with pytest.raises(OSError, match="No space left on device"):
            run_study(client, plan, backend="cpu")
        assert not (out / "summary.json").exists()
        assert json.loads((out / "manifest.json").read_text())["status"] == "running"
        monkeypatch.undo()
        plan = _plan(g, out, ids=[1, 2, 3], batch_size=2, order="given", algorithm="dijkstra")
        summary = run_study(client, plan, resume=True, backend="cpu", study=Study(plan, resume=True))
        assert summary["complete"] and summary["sources_solved"] == 3
        assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
        assert json.loads((out / "summary.json").read_text())["complete"]
    finally:
        client.close()
        cluster.close()


def test_a_study_inside_another_studys_folder_is_refused(tmp_path):
    """``--out S/stats/sub``: readers of ``S/stats`` then read the new study's files as
    S's (``pq.read_table`` failed on its journal), and S's resume refused its folder.  A
    ``manifest.json`` of another tool above is no study."""
    from gpu_sssp.pipeline.study import Study, StudyError

    parent = tmp_path / "S"
    plan = _plan(grid_parquet(tmp_path, 4, 4), parent, sources="all", batch_size=4)
    study = Study(plan)
    study.start()
    study.close()
    for inner in (parent / "stats" / "sub", parent / "stats", parent / "matrix" / "x" / "y"):
        with pytest.raises(StudyError, match=r": is inside the batch files of the study in .*S \(whose readers"):
            Study(_plan(grid_parquet(tmp_path, 4, 4), inner, sources="all", batch_size=4))
        assert not (inner / "manifest.json").exists()
    # elsewhere in its folder a study harms none of S's files (tests/pipeline/test_study_temporaries.py)
    Study(_plan(grid_parquet(tmp_path, 4, 4), parent / "sub", sources="all", batch_size=4)).close()
    other = tmp_path / "tool"
    other.mkdir()
    (other / "manifest.json").write_text('{"name": "some other tool"}')
    Study(_plan(grid_parquet(tmp_path, 4, 4), other / "study", sources="all", batch_size=4)).close()


def test_out_as_a_dangling_link_is_one_line(tmp_path):
    """``--out LINK`` to a folder that does not exist: the OS said "[Errno 17] File
    exists: 'LINK'"."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.writers import check_output_dir

    link = tmp_path / "lnk"
    link.symlink_to(tmp_path / "nonexist")
    with pytest.raises(UsageError, match=r"lnk'?: is a link to .*nonexist, which does not exist; make that folder"):
        check_output_dir(link)
    (tmp_path / "nonexist").mkdir()
    check_output_dir(link)  # a link to a folder is a folder
