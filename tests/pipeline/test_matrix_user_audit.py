"""Found by a new user's audit of matrix studies (``--targets``): Parquet targets and
sources files.  A bad id in a Parquet file is refused naming the file and its row (as a
text file names its line); a matrix study's own ``targets.parquet`` (its columns) is a
targets file for another study."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import rome_parquet


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    from gpu_sssp.pipeline.graph import read_parquet

    path = rome_parquet(tmp_path_factory.mktemp("matrix-user-data"))
    return path, read_parquet(path)


def _ss_parquet(path, ids):
    """An ingested ``.ss`` file as ``sssp ingest F.ss`` writes it: a ``source`` column."""
    pq.write_table(pa.table({"source": pa.array(ids, pa.int32())}), path)
    return path


@pytest.mark.parametrize("what", ["source", "target"])
def test_parquet_id_out_of_range_names_its_row(rome, tmp_path, capsys, what):
    """A text file's bad id is refused at its line; a Parquet file's named no place at
    all ('ids.parquet: target 4000 is not a vertex'), leaving the user to search it."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file
    from gpu_sssp.workflows.cli import main

    path, g = rome
    f = _ss_parquet(tmp_path / "ids.parquet", [5, 7, 4000, 9])
    with pytest.raises(InputError) as e:
        read_id_file(f, g, what)
    msg = str(e.value)
    assert msg.startswith(f"{f}: ") and "row 3" in msg and f"{what} 4000 is not a vertex of" in msg, msg
    option = "--sources-file" if what == "source" else "--targets"
    rc = main(["study", str(path), "--random" if what == "target" else "--random-targets", "3", option, str(f),
               "--out", str(tmp_path / "o"), "--cpu-workers", "1", "--no-dashboard"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "row 3" in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_studys_targets_parquet_is_a_targets_file(rome, tmp_path):
    """``targets.parquet`` (columns ``column``, ``target``) was refused as ``--targets
    FILE`` ("a Parquet targets file is an ingested .ss file ... this one has column,
    target"): the columns of one matrix study could not be given to the next.  Read in
    ``column`` order, repeats kept."""
    from gpu_sssp.pipeline.study.matrix import TARGETS_SCHEMA
    from gpu_sssp.pipeline.targets import plan_targets, read_target_file

    path, g = rome
    f = tmp_path / "targets.parquet"
    # rows out of column order: the column order wins
    pq.write_table(pa.table({"column": [1, 0, 2, 3], "target": [17, 3353, 17, 1]}, schema=TARGETS_SCHEMA), f)
    assert read_target_file(f, g).tolist() == [3353, 17, 17, 1]
    # one rule for sources and targets files: the columns may be a study's sources too
    from gpu_sssp.pipeline.sources import read_source_file
    assert read_source_file(f, g).tolist() == [3353, 17, 17, 1]
    assert plan_targets(g, targets=str(f)).targets.tolist() == [3352, 16, 16, 0]


@pytest.mark.parametrize("columns, why", [
    ([0, 2, 3], "'column'"),       # a column missing
    ([0, 1, 1], "'column'"),       # a column twice
])
def test_a_targets_parquet_with_broken_columns_is_refused(rome, tmp_path, columns, why):
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.study.matrix import TARGETS_SCHEMA
    from gpu_sssp.pipeline.targets import read_target_file

    path, g = rome
    f = tmp_path / "targets.parquet"
    pq.write_table(pa.table({"column": columns, "target": [5, 6, 7]}, schema=TARGETS_SCHEMA), f)
    with pytest.raises(InputError, match=why) as e:
        read_target_file(f, g)
    assert str(e.value).startswith(f"{f}: ")


def test_a_previous_studys_targets_give_the_same_columns(rome, tmp_path):
    """End to end: a second study given the first one's ``targets.parquet`` writes the
    same ``targets.parquet`` and the same matrix columns."""
    from gpu_sssp.workflows.cli import main

    path, g = rome
    t = tmp_path / "t.txt"
    t.write_text("3353\n1\n17\n17\n200\n")
    a, b = tmp_path / "a", tmp_path / "b"
    common = [str(path), "--source", "1", "--source", "17", "--cpu-workers", "1", "--no-dashboard"]
    assert main(["study", *common, "--targets", str(t), "--out", str(a)]) == 0
    assert main(["study", *common, "--targets", str(a / "targets.parquet"), "--out", str(b)]) == 0
    ta, tb = pq.read_table(a / "targets.parquet"), pq.read_table(b / "targets.parquet")
    assert ta.column("target").to_pylist() == tb.column("target").to_pylist() == [3353, 1, 17, 17, 200]
    ma, mb = pq.read_table(a / "matrix"), pq.read_table(b / "matrix")
    assert ma.column("distance").to_pylist() == mb.column("distance").to_pylist()


@pytest.mark.parametrize("recorded", [None, "zero", 1.5, True, 2])
def test_an_ingested_ss_file_with_a_damaged_id_base_is_refused_in_one_line(rome, tmp_path, recorded):
    """The id base of an ingested ``.ss`` file is checked against the graph's: a damaged
    ``id_base`` in its metadata (null, a word) ended in int()'s TypeError or ValueError
    with a traceback, and 1.5 was taken as 1."""
    import json

    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file

    path, g = rome
    meta = {"format": "ss", "id_base": recorded, "count": 2}
    f = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"source": pa.array([5, 7], pa.int32())}).replace_schema_metadata(
        {b"sssp": json.dumps(meta).encode()}), f)
    with pytest.raises(InputError, match=r"metadata says id_base = .*: expected 0 or 1") as e:
        read_id_file(f, g, "source")
    assert str(e.value).startswith(f"{f}: ")


def test_a_studys_targets_parquet_of_another_id_base_is_refused(rome, tmp_path, capsys):
    """A matrix study's ``targets.parquet`` holds file ids in its graph's id base (now
    recorded in its ``sssp`` metadata, as an ingested ``.ss`` file's is): given as
    ``--targets`` for a graph of the other base, every target was silently another
    vertex (each off by one).  Refused in one line naming the file; the same base is
    read as before."""
    import json

    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.targets import read_target_file
    from gpu_sssp.workflows.cli import main
    from tests.pipeline.test_study_support import _parse_gr, rome_source, write_edge_parquet

    path, g = rome
    a = tmp_path / "a"
    assert main(["study", str(path), "--source", "1", "--targets", str(_ids(tmp_path / "t.txt", [3353, 1, 17])),
                 "--cpu-workers", "1", "--no-dashboard", "--out", str(a)]) == 0
    capsys.readouterr()
    meta = json.loads(pq.read_schema(a / "targets.parquet").metadata[b"sssp"])
    assert meta["id_base"] == 1
    assert read_target_file(a / "targets.parquet", g).tolist() == [3353, 1, 17]  # the same base: read
    # rome99 with 0-based ids: vertex 0 is rome's 1
    n, s, d, w = _parse_gr(rome_source())
    zero = write_edge_parquet(tmp_path / "rome0.parquet", s - 1, d - 1, w, n=n, id_base=0)
    from gpu_sssp.pipeline.graph import read_parquet

    with pytest.raises(InputError, match="its ids are 1-based but .* are 0-based: every target would be another "
                                         "vertex") as e:
        read_target_file(a / "targets.parquet", read_parquet(zero))
    assert str(e.value).startswith(f"{a / 'targets.parquet'}: ")
    rc = main(["study", str(zero), "--source", "0", "--targets", str(a / "targets.parquet"), "--cpu-workers", "1",
               "--no-dashboard", "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "targets.parquet: its ids are 1-based" in err[0], err
    assert not (tmp_path / "b").exists()


def _ids(path, ids):
    path.write_text("".join(f"{i}\n" for i in ids))
    return path


@pytest.mark.parametrize("kind, table", [
    ("a travel-time matrix in long form", {"source": [5, 5, 9, 9], "target": [1, 2, 1, 2],
                                           "distance": [1.0, 2.0, 3.0, 4.0]}),
    ("a travel-time matrix (source, distance)", {"source": [5, 9], "distance": [[1.0, 2.0], [3.0, 4.0]]}),
    ("a distance table", {"source": [5, 5], "vertex": [5, 6], "distance": [0.0, 1.0], "predecessor": [-1, 5]}),
])
@pytest.mark.parametrize("what", ["source", "target"])
def test_a_table_of_results_is_not_an_id_file(rome, tmp_path, capsys, kind, table, what):
    """A long-form matrix file (``source``, ``target``, ``distance``) was taken as a
    sources file for its ``source`` column (each source repeated per target, the repeats
    dropped with a note) and, as ``--targets``, gave the matrix's sources as the targets.
    A matrix or distance table is refused in one line saying what it is."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_id_file
    from gpu_sssp.workflows.cli import main

    path, g = rome
    f = tmp_path / "result.parquet"
    pq.write_table(pa.table(table), f)
    with pytest.raises(InputError) as e:
        read_id_file(f, g, what)
    assert str(e.value).startswith(f"{f}: {kind}") and f"not a {what}s file" in str(e.value), str(e.value)
    option = "--sources-file" if what == "source" else "--targets"
    rc = main(["study", str(path), "--random" if what == "target" else "--random-targets", "3", option, str(f),
               "--out", str(tmp_path / "o"), "--cpu-workers", "1", "--no-dashboard"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and kind in err[0], err
    assert not (tmp_path / "o").exists()
