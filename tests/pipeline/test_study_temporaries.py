"""A study removes its killed writers' temporary files, and nothing else: not a user's
files in the folder it was given, not those of another study run inside its folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.test_study_support import grid_parquet

#: the random part of a temporary name as ``pipeline.writers.atomic_path`` makes it
HEX = "0123456789ab"


def _study(graph_path, out, resume=False):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import Study, plan_study

    g = read_parquet(graph_path)
    plan = plan_study(g, graph_path, plan_sources(g, random=10, seed=1), out=out, batch_size=5,
                      outputs="distances")
    return Study(plan, resume=resume)


def _finish(study):
    return study.finish(wall_s=1.0, run_sources=0, run_meta=[], workers=1)


@pytest.fixture
def graph(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    return grid_parquet(data, 10, 10)


def _write(path: Path, data=b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_remove_temporaries_looks_at_the_folder_itself_and_the_names_of_its_writers(tmp_path):
    from gpu_sssp.pipeline.writers import _temp_for, is_batch_name, remove_temporaries, temporary_of

    made = _temp_for(tmp_path / "batch-000003.parquet")  # the writer's own form
    assert temporary_of(made.name) == "batch-000003.parquet"
    ours = [_write(made), _write(tmp_path / f".manifest.json.tmp-{HEX}")]
    kept = [_write(tmp_path / "notes.tmp-1.txt"),  # a user's: not hidden
            _write(tmp_path / ".batch-000004.parquet.tmp-abc"),  # not a 12-digit random part
            _write(tmp_path / f".batch-000005.parquet.tmp-{HEX}.bak"),
            _write(tmp_path / f".x.parquet.tmp-{HEX}"),  # another final name
            _write(tmp_path / "sub" / f".batch-000001.parquet.tmp-{HEX}")]  # a subfolder's
    (tmp_path / f".batch-000006.parquet.tmp-{HEX}").mkdir()  # a folder, not a file
    assert remove_temporaries(tmp_path, lambda n: is_batch_name(n) or n == "manifest.json") == 2
    assert not any(p.exists() for p in ours) and all(p.exists() for p in kept)
    assert remove_temporaries(tmp_path / "missing", ["x"]) == 0
    assert remove_temporaries(tmp_path, ["x.parquet"]) == 1  # a collection of final names


def test_a_study_in_a_folder_of_hidden_user_files_leaves_them_alone(graph, tmp_path):
    # `--out .` in a folder holding only hidden entries (`.git/`, `.venv/`, a tool's
    # `.work/`) is taken as empty; start and finish used to delete every file with
    # ".tmp-" in its name anywhere below it
    proj = tmp_path / "proj"
    users = [_write(proj / ".work" / "report.tmp-2024.csv", b"mine"),
             _write(proj / ".venv" / "lib" / f".x.parquet.tmp-{HEX}", b"mine"),
             _write(proj / ".git" / "stats" / f".batch-000000.parquet.tmp-{HEX}", b"mine")]
    s = _study(graph, proj)
    s.start({})
    assert all(p.exists() for p in users)
    # the study's own killed writers' temporaries still go at its end
    torn = [_write(proj / "stats" / f".batch-000001.parquet.tmp-{HEX}"),
            _write(proj / "distances" / f".batch-000001.parquet.tmp-{HEX}"),
            _write(proj / f".summary.json.tmp-{HEX}")]
    _finish(s)
    assert not any(p.exists() for p in torn)
    assert all(p.read_bytes() == b"mine" for p in users)


def test_a_study_leaves_alone_the_temporaries_of_a_study_running_inside_its_folder(graph, tmp_path):
    # study B with --out A/sub while A runs: A's start (a resume) and finish deleted the
    # temporaries of B's writers mid-write, so that B's rename failed
    a_out = tmp_path / "A"
    a = _study(graph, a_out)
    a.start({})
    b = _study(graph, a_out / "sub")
    b.start({})
    live = [_write(a_out / "sub" / "stats" / f".batch-000000.parquet.tmp-{HEX}", b"B writing"),
            _write(a_out / "sub" / f".manifest.json.tmp-{HEX}", b"B writing")]
    other = _write(a_out / f".result.parquet.tmp-{HEX}", b"sssp solve -o A/result.parquet")
    _finish(a)
    assert all(p.exists() for p in live) and other.exists()
    a = _study(graph, a_out, resume=True)
    a.start({})
    _finish(a)
    assert all(p.exists() for p in live) and other.exists()
    # B's own end removes them (its writers are done)
    _finish(b)
    assert not any(p.exists() for p in live)


def test_graph_parquet_of_the_user_is_not_replaced(tmp_path):
    """A folder holding only a ``graph.parquet`` is taken as empty (a run stopped before
    its manifest leaves one), so a study may meet a user's own file there: it is replaced
    only when a study wrote it (its metadata says so), reused when it is the same graph,
    and otherwise refused with the file named - it was silently overwritten."""
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.study.folder import graph_parquet_path
    from gpu_sssp.pipeline.study.plan import StudyError

    mine = read_parquet(grid_parquet(tmp_path, 6, 6, seed=1), cache=False)
    other = read_parquet(grid_parquet(tmp_path, 7, 7, seed=2), cache=False)
    out = tmp_path / "out"
    out.mkdir()
    user_file = out / "graph.parquet"
    user_file.write_bytes(grid_parquet(tmp_path, 6, 6, seed=1).read_bytes())  # the user's own, not a study's
    before = user_file.read_bytes()
    with pytest.raises(StudyError, match=r"graph\.parquet: a different graph, not written by sssp study"):
        graph_parquet_path(other, tmp_path / "other.gr", out, shared=True)
    assert user_file.read_bytes() == before
    # refused, it leaves nothing beside the user's file (its CSR cache was written there)
    assert sorted(p.name for p in out.iterdir()) == ["graph.parquet"]
    # the same graph is read from it, not rewritten
    assert graph_parquet_path(mine, tmp_path / "mine.gr", out, shared=True) == str(user_file.resolve())
    assert user_file.read_bytes() == before
    # a study's own graph.parquet of another graph is replaced
    user_file.unlink()
    graph_parquet_path(mine, tmp_path / "mine.gr", out, shared=True)
    graph_parquet_path(other, tmp_path / "other.gr", out, shared=True)
    assert read_parquet(user_file, cache=False).fingerprint == other.fingerprint
    # an unreadable file that no study wrote is refused too
    user_file.write_bytes(b"not parquet")
    with pytest.raises(StudyError, match="not written by sssp study"):
        graph_parquet_path(other, tmp_path / "other.gr", out, shared=True)
    assert user_file.read_bytes() == b"not parquet"
