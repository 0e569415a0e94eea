"""Sources and targets files (``--sources-file``, ``--targets FILE``) that are a study's
outputs: a study's per-source statistics (``stats/batch-*.parquet``, and the other
statistics tables the README documents) and a matrix study's ``targets.parquet`` of an
earlier version, which recorded no id base.  Real files, from ``sssp study`` runs on the
bundled rome99 on the CPU."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import _parse_gr, rome_source, write_edge_parquet


def _study(*argv) -> None:
    from gpu_sssp.workflows.cli import main

    assert main(["study", *argv, "--cpu-workers", "1", "--no-dashboard"]) == 0


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    """rome99.gr (copied: its cache goes beside the copy), the graph, a study of 20
    random sources and a matrix study of 6 sources x 4 random targets (their folders)."""
    from gpu_sssp.pipeline.graph import load_graph

    tmp = tmp_path_factory.mktemp("id-files")
    gr = tmp / "rome99.gr"
    shutil.copyfile(rome_source(), gr)
    _study(str(gr), "--random", "20", "--out", str(tmp / "study"))
    _study(str(gr), "--random", "6", "--random-targets", "4", "--out", str(tmp / "matrix"))
    return gr, load_graph(gr), tmp / "study", tmp / "matrix"


def _cli(gr, what, f, out, capsys):
    """``sssp study`` with ``f`` as its sources file (``what`` "source") or targets file;
    ``(status, stderr lines)``."""
    from gpu_sssp.workflows.cli import main

    argv = (["--sources-file", str(f)] if what == "source" else ["--random", "3", "--targets", str(f)])
    capsys.readouterr()
    rc = main(["study", str(gr), *argv, "--out", str(out), "--cpu-workers", "1", "--no-dashboard"])
    return rc, capsys.readouterr().err.strip().splitlines()


# ------------------------------------------------------------------ statistics files
@pytest.mark.parametrize("folder", ["study", "matrix"])
@pytest.mark.parametrize("what", ["source", "target"])
def test_a_studys_statistics_file_is_not_an_id_file(rome, tmp_path, capsys, what, folder):
    """A study's ``stats/batch-000000.parquet`` (``source``, ``reached``, ...) was read as
    a list of ids, its ``source`` column: given as ``--sources-file`` it solved the study's
    sources again, as ``--targets`` it made them the matrix's columns, without a word.
    Refused in one line saying what it is, as a matrix or a distance table is."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file

    gr, g, study, matrix = rome
    f = (study if folder == "study" else matrix) / "stats" / "batch-000000.parquet"
    assert "reached" in pq.read_schema(f).names  # a real statistics file
    with pytest.raises(InputError) as e:
        read_id_file(f, g, what)
    msg = str(e.value)
    assert msg.startswith(f"{f}: per-source statistics (a study's stats/ file") and f"not a {what}s file" in msg, msg
    rc, err = _cli(gr, what, f, tmp_path / "o", capsys)
    assert rc == 2 and len(err) == 1 and "per-source statistics" in err[0] and f"not a {what}s file" in err[0], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("what", ["source", "target"])
def test_statistics_tables_from_python_and_benchmark_rows_are_not_id_files(rome, tmp_path, what):
    """The other statistics tables the README documents: ``Result.stats_table()`` saved
    by a user (the stats schema), and ``sssp bench``'s ``rows.parquet`` (a row per
    source, method and run: its sources repeat)."""
    from gpu_sssp import solve
    from gpu_sssp.pipeline.bench_protocol import ROW_SCHEMA
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file

    _gr, g, _study, _matrix = rome
    stats = tmp_path / "stats.parquet"
    pq.write_table(solve(g, g.to_index([1, 2]), method="dijkstra").stats_table(), stats)
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([{"source": 1, "run": 0, "reached": 3353, "time_ms": 1.0},
                                         {"source": 1, "run": 1, "reached": 3353, "time_ms": 1.0}],
                                        schema=ROW_SCHEMA), rows)
    for f, kind in ((stats, "per-source statistics"), (rows, "benchmark rows (`sssp bench` rows.parquet")):
        with pytest.raises(InputError) as e:
            read_id_file(f, g, what)
        assert str(e.value).startswith(f"{f}: {kind}") and f"not a {what}s file" in str(e.value), str(e.value)


def test_an_ss_table_is_still_a_sources_file(rome, tmp_path):
    """A plain Parquet table of ids (``source`` alone) stays an id file."""
    from gpu_sssp.pipeline.sources import read_id_file

    _gr, g, _study, _matrix = rome
    f = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"source": pa.array([5, 7, 5], pa.int64())}), f)
    assert read_id_file(f, g, "source").tolist() == [5, 7, 5]


# ------------------------------------------------------ targets.parquet of an earlier version
def _older(targets, dest):
    """``targets`` as an earlier version wrote it: the same table, its ``sssp`` metadata
    without ``id_base`` (``targets`` and ``digest`` only)."""
    table = pq.read_table(targets)
    meta = json.loads(table.schema.metadata[b"sssp"])
    assert meta.pop("id_base") == 1 and set(meta) == {"targets", "digest"}, meta
    pq.write_table(table.replace_schema_metadata({b"sssp": json.dumps(meta).encode()}), dest)
    return dest


@pytest.fixture(scope="module")
def rome0(rome, tmp_path_factory):
    """rome99 with 0-based ids (vertex 0 is rome's 1): its file and its graph."""
    from gpu_sssp.pipeline.graph import read_parquet

    n, s, d, w = _parse_gr(rome_source())
    path = write_edge_parquet(tmp_path_factory.mktemp("rome0") / "rome0.parquet", s - 1, d - 1, w, n=n, id_base=0)
    return path, read_parquet(path)


@pytest.mark.parametrize("what", ["source", "target"])
def test_an_older_targets_parquet_of_another_id_base_is_refused(rome, rome0, tmp_path, capsys, what):
    """A ``targets.parquet`` written before the id base was recorded was read unchecked:
    a 1-based study's columns given to a 0-based graph made every target another vertex
    (each off by one).  Its digest (of its targets as internal indices) tells its id base:
    the other base is refused in one line as a file that records it is; its own base is
    read as before."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file
    from gpu_sssp.workflows.cli import main

    gr, g, _study, matrix = rome
    path0, g0 = rome0
    f = _older(matrix / "targets.parquet", tmp_path / "targets.parquet")
    want = pq.read_table(matrix / "targets.parquet").column("target").to_pylist()
    assert read_id_file(f, g, what).tolist() == want  # its own base: read
    with pytest.raises(InputError) as e:
        read_id_file(f, g0, what)
    msg = str(e.value)
    assert msg.startswith(f"{f}: its ids are 1-based but rome0's are 0-based: every {what} would be another "
                          "vertex (a targets.parquet of an earlier version"), msg
    option = ["--sources-file", str(f)] if what == "source" else ["--random", "3", "--targets", str(f)]
    capsys.readouterr()
    rc = main(["study", str(path0), *option, "--out", str(tmp_path / "o"), "--cpu-workers", "1", "--no-dashboard"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "targets.parquet: its ids are 1-based" in err[0], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("digest", ["0123456789abcdef", None, 7])
def test_an_older_targets_parquet_whose_digest_does_not_tell_is_refused(rome, tmp_path, capsys, digest):
    """An earlier version's ``targets.parquet`` whose digest is that of its targets in
    neither base (changed after its study wrote it; or a damaged digest) cannot be
    checked: refused in one line that says so and how to go on, not read in a base
    guessed (nor a traceback)."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file

    gr, g, _study, matrix = rome
    f = _older(matrix / "targets.parquet", tmp_path / "targets.parquet")
    table = pq.read_table(f)
    meta = json.loads(table.schema.metadata[b"sssp"])
    meta["digest"] = digest
    pq.write_table(table.replace_schema_metadata({b"sssp": json.dumps(meta).encode()}), f)
    with pytest.raises(InputError) as e:
        read_id_file(f, g, "target")
    msg = str(e.value)
    assert msg.startswith(f"{f}: a targets.parquet of an earlier version records no id base") and \
        "its ids cannot be checked" in msg and "give the targets as a text file of" in msg, msg
    rc, err = _cli(gr, "target", f, tmp_path / "o", capsys)
    assert rc == 2 and len(err) == 1 and "records no id base" in err[0], err
    assert not (tmp_path / "o").exists()


def test_an_older_targets_parquet_edited_after_its_study_is_refused(rome, tmp_path):
    """Its targets changed (one column dropped) with the metadata kept, as a table
    filtered and saved again keeps it: its digest no longer tells its base."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file

    _gr, g, _study, matrix = rome
    f = _older(matrix / "targets.parquet", tmp_path / "targets.parquet")
    table = pq.read_table(f)
    pq.write_table(table.slice(0, table.num_rows - 1), f)  # keeps the schema's metadata
    assert b"digest" in pq.read_schema(f).metadata[b"sssp"]
    with pytest.raises(InputError, match="records no id base"):
        read_id_file(f, g, "target")


def test_a_targets_parquet_that_records_its_id_base_is_read_as_before(rome):
    from gpu_sssp.pipeline.sources import read_id_file

    _gr, g, _study, matrix = rome
    f = matrix / "targets.parquet"
    assert json.loads(pq.read_schema(f).metadata[b"sssp"])["id_base"] == 1
    assert read_id_file(f, g, "target").tolist() == pq.read_table(f).column("target").to_pylist()
    assert np.array_equal(read_id_file(f, g, "source"), read_id_file(f, g, "target"))
