"""Travel-time matrix studies: cases found by an audit (kills at start-up, ...).

No cluster: the study folder (``pipeline.study.folder.Study``) is driven directly."""
from __future__ import annotations

import numpy as np
import pytest

from tests.pipeline.test_study_support import rome_parquet

# the messages of the pipeline functions the command line calls, in its words (--zero-based)
pytestmark = pytest.mark.usefixtures("cli_words")


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    from gpu_sssp.pipeline.graph import read_parquet

    path = rome_parquet(tmp_path_factory.mktemp("audit-data"))
    return path, read_parquet(path)


def _plan(rome, out, targets=True):
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study
    from gpu_sssp.pipeline.targets import plan_targets

    path, g = rome
    tp = plan_targets(g, targets=[5, 1, 5, g.n]) if targets else None
    return plan_study(g, str(path), plan_sources(g, random=20, seed=2), out=out, batch_size=8,
                      algorithm="dijkstra", targets=tp)


@pytest.mark.parametrize("targets", [True, False])
def test_start_killed_before_its_manifest_resumes(rome, tmp_path, monkeypatch, targets):
    """A run stopped while its folder is being started (kill -9 or Ctrl-C while
    targets.parquet is written) must leave a folder that ``--resume`` continues: the
    manifest comes first, the batch folders and targets.parquet after it (a study
    without targets stopped as it wrote its manifest left an empty stats/ behind, with
    the same refusals).  Before, the
    folder held matrix/, stats/ and targets.parquet without a manifest, and both
    ``--resume`` ("no study to resume here") and a fresh run ("folder is not empty and
    holds no study") refused it."""
    from gpu_sssp.pipeline.study import folder as fmod
    from gpu_sssp.pipeline.study.folder import Study

    out = tmp_path / "m"

    def killed(*a, **k):
        raise KeyboardInterrupt

    # the last step of a start that creates anything in the folder, interrupted
    monkeypatch.setattr(fmod._matrix, "start_folder", killed)
    if not targets:  # a study without targets: stopped as it writes its manifest
        monkeypatch.setattr(fmod, "write_json_atomic", killed)
    st = Study(_plan(rome, out, targets))
    with pytest.raises(KeyboardInterrupt):
        st.start({})
    st.close()
    monkeypatch.undo()
    st = Study(_plan(rome, out, targets), resume=True)  # refused before the fix
    st.start({})
    st.close()
    assert (out / "manifest.json").exists() and (out / "stats").is_dir()
    if targets:
        import pyarrow.parquet as pq

        assert pq.read_table(out / "targets.parquet").column("target").to_pylist() == [5, 1, 5, rome[1].n]


@pytest.mark.parametrize("k", [2.7, 1.0, True, "5", np.float64(3.0)])
def test_random_targets_k_must_be_a_whole_number(rome, k):
    """``study(random_targets=2.7)`` drew 2 targets (``int(K)``), ``True`` 1, ``"5"`` 5:
    a count that is not a whole number is refused, never truncated."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.targets import plan_targets

    with pytest.raises(UsageError, match="--random-targets K takes a whole number"):
        plan_targets(rome[1], random=k)


def test_random_targets_k_numpy_integer(rome):
    from gpu_sssp.pipeline.targets import plan_targets

    tp = plan_targets(rome[1], random=np.int64(5))
    assert tp.count == 5 and tp.how["kind"] == "random" and tp.how["seed"] == 1


def test_default_batch_of_a_matrix_study_fits_chunk_bytes(rome, tmp_path):
    """A default batch's matrix stays within ``sssp.study.chunk-bytes``: 64 sources (the
    CPU default) x 20,000,000 targets made 10 GB batches and workers restarted for memory
    again and again; a batch size the user gives is kept."""
    import dask

    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study
    from gpu_sssp.pipeline.targets import TargetPlan

    path, g = rome
    many = TargetPlan(np.zeros(200_000, dtype=np.int64), {"kind": "list"})  # 1.6 MB a source
    sp_ = plan_sources(g, random=300, seed=2)
    with dask.config.set({"sssp.study.chunk-bytes": 16_000_000}):  # 10 sources' rows
        p = plan_study(g, str(path), sp_, out=tmp_path / "a", algorithm="dijkstra", targets=many)
        assert p.resolve_batch_size(["cpu"]) == 10
        assert max(len(b) for b in p.batches) == 10 and sum(len(b) for b in p.batches) == 300
        given = plan_study(g, str(path), sp_, out=tmp_path / "b", algorithm="dijkstra", targets=many, batch_size=64)
        assert given.resolve_batch_size(["cpu"]) == 64
    few = TargetPlan(np.arange(50, dtype=np.int64), {"kind": "list"})
    p = plan_study(g, str(path), sp_, out=tmp_path / "c", algorithm="dijkstra", targets=few)
    assert p.resolve_batch_size(["cpu"]) == 64  # the CPU default, far below the cap


@pytest.mark.parametrize("k", [2.7, 1.0, True, "5", np.float64(3.0)])
def test_random_sources_k_must_be_a_whole_number(rome, k):
    """The same for the sources: ``study(random=2.7)`` drew 2 sources, ``True`` 1."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.sources import plan_sources

    with pytest.raises(UsageError, match="--random K takes a whole number"):
        plan_sources(rome[1], random=k)
    assert plan_sources(rome[1], random=np.int64(4), seed=1).how["count"] == 4


@pytest.mark.parametrize("form", ["wide", "long"])
def test_matrix_files_are_written_in_bounded_row_groups(rome, tmp_path, monkeypatch, form):
    """A batch's matrix file is written a row group of about MATRIX_GROUP_BYTES at a time
    (one table and one group per batch made the writer hold as much again as the matrix,
    the long form's table twice more) and its distances are not dictionary-encoded; it
    reads back the same matrix, metadata included."""
    import pyarrow.parquet as pq

    from gpu_sssp import kernels
    from gpu_sssp.pipeline.study import matrix as mx

    _path, g = rome
    targets = np.arange(0, g.n, 7)
    res = kernels.solve(g, np.arange(12), method="dijkstra", backend="cpu", targets=targets)
    # 5 sources a group: 8 bytes a distance (wide), 24 a pair with its ids (long)
    monkeypatch.setattr(mx, "MATRIX_GROUP_BYTES", (8 if form == "wide" else 24) * len(targets) * 5)
    mx.write_batch(res, g, tmp_path, "batch-000000.parquet", form, fsync=False)
    f = pq.ParquetFile(tmp_path / mx.MATRIX_DIR / "batch-000000.parquet")
    groups = f.metadata.num_row_groups
    if form == "wide":
        assert groups == 3  # 12 sources in groups of 5
        got = np.array(f.read().column("distance").to_pylist())
    else:
        assert groups == 3
        t = f.read()
        got = t.column("distance").to_numpy().reshape(12, len(targets))
        assert t.column("source").to_pylist()[:: len(targets)] == list(np.arange(12) + g.id_base)
    np.testing.assert_array_equal(got, res.matrix)
    import json

    assert json.loads(f.schema_arrow.metadata[b"sssp"]) == {"form": form, "targets": mx.TARGETS_FILE}
    col = [i for i in range(f.metadata.num_columns) if f.metadata.row_group(0).column(i).path_in_schema.startswith("distance")][0]
    encodings = f.metadata.row_group(0).column(col).encodings
    assert not any("DICTIONARY" in e for e in encodings), encodings
