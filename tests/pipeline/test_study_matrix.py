"""Matrix studies (``--targets``) on a local CPU cluster: the matrix equals SciPy's, wide
and long, stats over the targets or all vertices, resume, the size limit; bad targets
files give one line naming the file and line; the ``gpu_sssp.matrix`` facade."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

from tests.pipeline.test_study_support import cpu_client, rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def client():
    yield from cpu_client(2)


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    from gpu_sssp.pipeline.graph import read_parquet

    path = rome_parquet(tmp_path_factory.mktemp("matrix-data"))
    g = read_parquet(path)
    a = sp.csr_matrix((g.weights.astype(np.float64), g.indices, g.indptr), shape=(g.n, g.n))
    return path, g, csg.dijkstra(a, directed=True)


def _matrix(out, form="wide"):
    """The study's matrix as (source file ids, (S, T) array), rows sorted by source."""
    t = pq.read_table(out / "matrix")
    if form == "wide":
        src = t.column("source").to_numpy()
        m = np.array(t.column("distance").to_pylist(), dtype=np.float64)
    else:
        ntg = pq.read_table(out / "targets.parquet").num_rows
        src = t.column("source").to_numpy()[::ntg]
        m = t.column("distance").to_numpy().reshape(-1, ntg)
    o = np.argsort(src, kind="stable")
    return src[o], m[o]


def _targets_file(tmp_path, ids, name="targets.txt"):
    p = tmp_path / name
    p.write_text("# targets\n" + "\n".join(str(i) for i in ids) + "\n")
    return p


@pytest.mark.parametrize("stats_over, form", [("targets", "wide"), ("all", "long")])
def test_matrix_study_equals_scipy(client, rome, tmp_path, stats_over, form):
    from gpu_sssp.pipeline.study.run import study

    path, g, ref = rome
    rng = np.random.default_rng(3)
    tg_ids = list(rng.integers(1, g.n + 1, 80)) + [1, 1, g.n]
    tfile = _targets_file(tmp_path, tg_ids)
    out = tmp_path / "m"
    s = study(path, client=client, random=50, seed=4, targets=str(tfile), stats_over=stats_over,
              matrix_form=form, batch_size=16, out=out, algorithm="phast")
    assert s["complete"] and s["stats_over"] == ("targets" if stats_over == "targets" else "vertices")
    cols = pq.read_table(out / "targets.parquet")
    assert cols.column("target").to_pylist() == [int(x) for x in tg_ids]
    src, m = _matrix(out, form)
    tg = np.asarray(tg_ids) - 1
    assert np.array_equal(m, ref[np.ix_(src - 1, tg)])
    stats = pq.read_table(out / "stats").sort_by("source")
    over = ref[src - 1][:, np.unique(tg)] if stats_over == "targets" else ref[src - 1]
    fin = np.isfinite(over)
    assert stats.column("reached").to_pylist() == fin.sum(1).tolist()
    assert stats.column("sum_distance").to_pylist() == np.where(fin, over, 0).sum(1).tolist()
    man = json.loads((out / "manifest.json").read_text())
    assert man["matrix"]["stats_over"] == stats_over and man["matrix"]["form"] == form
    if stats_over == "targets":
        assert s["diameter"]["value"] is None and "targets" in s["diameter"]["kind"]


def test_matrix_study_resume_and_refusals(client, rome, tmp_path):
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    path, g, ref = rome
    out = tmp_path / "m"
    kw = dict(client=client, random=40, seed=2, random_targets=300, target_seed=5, batch_size=8, out=out,
              algorithm="phast")
    study(path, **kw)
    _, first = _matrix(out)
    lines = (out / "journal.jsonl").read_text().splitlines()
    (out / "journal.jsonl").write_text("\n".join(x for x in lines if json.loads(x)["batch"] != 1) + "\n")
    (out / "matrix" / "batch-000003.parquet").unlink()
    (out / "stats" / "batch-000003.parquet").unlink()
    redone = []
    s = study(path, resume=True, on_batch=lambda meta, st: redone.append(meta["batch"]), **kw)
    # batch 1's journal line was lost but its files are complete: adopted, not solved again
    assert sorted(redone) == [3] and s["complete"]
    entries = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    assert [e["batch"] for e in entries if e.get("adopted")] == [1]
    src, again = _matrix(out)
    assert np.array_equal(again, first)
    tg = np.sort(np.random.default_rng(5).choice(g.n, 300, replace=False))
    assert np.array_equal(again, ref[np.ix_(src - 1, tg)])
    with pytest.raises(StudyError, match="target_seed=: folder has 5, asked 6"):
        study(path, resume=True, **dict(kw, target_seed=6))
    with pytest.raises(StudyError, match="stats_over"):
        study(path, resume=True, **dict(kw, stats_over="all"))
    with pytest.raises(StudyError, match="the matrix would take up to .* above the limit"):
        study(path, **dict(kw, out=tmp_path / "big", max_distance_bytes=1000))
    with pytest.raises(StudyError, match="does not go with targets"):
        study(path, **dict(kw, out=tmp_path / "d", outputs="stats,distances"))


def test_matrix_resume_without_target_options_continues_the_matrix_study(client, rome, tmp_path):
    """A resume given no target options continues the folder's matrix study: its targets
    (``targets.parquet``, checked against the study's digest), its ``--stats-over`` and
    form; every batch's statistics are then over the same vertices.  It used to go on as
    a study without targets: the batches solved again had statistics over every vertex,
    the others over the targets, and it ended ``complete``."""
    from gpu_sssp.pipeline.study import Study, StudyError
    from gpu_sssp.pipeline.study.run import study

    path, g, ref = rome
    out = tmp_path / "m"
    kw = dict(client=client, random=40, seed=2, out=out, algorithm="dijkstra")
    study(path, random_targets=300, target_seed=5, matrix_form="long", batch_size=8, **kw)
    first = pq.read_table(out / "stats").sort_by("source").select(["source", "reached", "sum_distance"])
    _, first_matrix = _matrix(out, "long")
    # a stopped run: batches 2-4 neither journaled nor written
    lines = (out / "journal.jsonl").read_text().splitlines()
    (out / "journal.jsonl").write_text("\n".join(x for x in lines if json.loads(x)["batch"] < 2) + "\n")
    for i in (2, 3, 4):
        (out / "stats" / f"batch-{i:06d}.parquet").unlink()
        (out / "matrix" / f"batch-{i:06d}.parquet").unlink()
    redone = []
    s = study(path, resume=True, on_batch=lambda meta, st: redone.append(meta["batch"]), **kw)
    assert sorted(redone) == [2, 3, 4] and s["complete"] and s["stats_over"] == "targets"
    again = pq.read_table(out / "stats").sort_by("source").select(["source", "reached", "sum_distance"])
    assert again.equals(first)  # over the 300 targets, every batch
    assert max(again.column("reached").to_pylist()) <= 300
    src, m = _matrix(out, "long")
    assert np.array_equal(m, first_matrix)
    tg = np.sort(np.random.default_rng(5).choice(g.n, 300, replace=False))
    assert np.array_equal(m, ref[np.ix_(src - 1, tg)])
    man = json.loads((out / "manifest.json").read_text())
    assert man["matrix"]["form"] == "long" and man["matrix"]["stats_over"] == "targets"
    assert man["matrix"]["targets"]["kind"] == "random" and man["matrix"]["targets"]["seed"] == 5
    assert man["identity"]["targets_count"] == 300 and len(man["runs"]) == 2
    # what is given again must match the folder's
    with pytest.raises(StudyError, match="stats_over=: folder has 'targets', asked 'all'"):
        study(path, resume=True, stats_over="all", **kw)
    with pytest.raises(StudyError, match="matrix_form=: folder has 'long', asked 'wide'"):
        study(path, resume=True, matrix_form="wide", **kw)
    # a plan without targets (the Python API one level down) is another study
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    plain = plan_study(g, path, plan_sources(read_parquet(path), random=40, seed=2), out=out,
                       algorithm="dijkstra")
    with pytest.raises(StudyError, match="targets: the folder's study has 300 .*, asked none"):
        Study(plain, resume=True)
    # the targets are taken from targets.parquet only when they are the study's
    cols = pq.read_table(out / "targets.parquet")
    pq.write_table(cols.set_column(1, "target", pa.array(cols.column("target").to_numpy() + 1)),
                   out / "targets.parquet")
    with pytest.raises(StudyError, match="targets.parquet: .*digest") as err:
        study(path, resume=True, **kw)
    assert "(targets= or random_targets=)" in str(err.value) and len(str(err.value).splitlines()) == 1
    (out / "targets.parquet").unlink()
    with pytest.raises(StudyError, match="targets.parquet"):
        study(path, resume=True, **kw)
    # given again, the targets need no file (it is written again)
    s = study(path, resume=True, random_targets=300, target_seed=5, **kw)
    assert s["complete"] and pq.read_table(out / "targets.parquet").equals(cols)


def test_matrix_options_without_targets_are_refused(client, rome, tmp_path):
    """``stats_over`` and ``matrix_form`` without targets were silently ignored (while
    ``target_seed`` alone is refused): refused, before any folder is made, also on the
    resume of a study without targets."""
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import StudyError, plan_study
    from gpu_sssp.pipeline.study.run import study

    path, g, _ = rome
    out = tmp_path / "o"
    kw = dict(client=client, random=5, seed=1, out=out, algorithm="dijkstra")
    for opts, what in (({"stats_over": "all"}, "stats_over= goes with targets"),
                       ({"matrix_form": "long"}, "matrix_form= goes with targets"),
                       ({"stats_over": "targets", "matrix_form": "wide"}, "stats_over= and matrix_form= go with")):
        with pytest.raises(StudyError, match=what) as err:
            study(path, **kw, **opts)
        assert "targets= or random_targets=" in str(err.value)
        assert not out.exists()
        with pytest.raises(StudyError, match=what):
            plan_study(g, path, plan_sources(g, random=5), out=out, **opts)
    study(path, **kw)
    with pytest.raises(StudyError, match="stats_over= goes with targets"):
        study(path, resume=True, stats_over="all", **kw)


@pytest.mark.parametrize("content, line, what", [
    ("1\n2\n99999\n", 3, "target 99999 is not a vertex of"),
    ("1\n0\n", 2, "target 0 is not a vertex of"),
    ("1\n# c\nabc\n", 3, "non-numeric target id 'abc' (expected a decimal integer; one vertex id per line)"),
    ("1\n2.5\n", 2, "non-numeric target id '2.5'"),
    ("1 2\n", 1, "found 2: '1 2'"),
    ("# only a comment\n\n", None, "no targets in the file"),
    ("", None, "no targets in the file"),
])
def test_bad_targets_files(rome, tmp_path, capsys, content, line, what):
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.targets import plan_targets
    from gpu_sssp.workflows.cli import main

    path, g, _ = rome
    bad = tmp_path / "bad-targets.txt"
    bad.write_text(content)
    with pytest.raises(InputError) as e:
        plan_targets(g, targets=str(bad))
    where = f"{bad}:{line}: " if line else f"{bad}: "
    assert str(e.value).startswith(where) and what in str(e.value)
    # the command line: exit 2, one line, before any cluster starts
    rc = main(["study", str(path), "--random", "5", "--targets", str(bad), "--out", str(tmp_path / "o"),
               "--cpu-workers", "1", "--no-dashboard"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and where.strip() in err[0] and what in err[0], err
    assert not (tmp_path / "o").exists()


_ID_FORMS = {
    "s lines": "s 5\nc a comment\ns 7\ns 5\n",
    "s lines and header": "c a comment\np aux sp ss 3\ns 5\ns 7\ns 5\n",
    "one id per line": "# a comment\n5\n\n7\n% another\n5\n",
    "one id per line and header": "p aux sp ss 3\n5\n7\n5\n",
}


@pytest.mark.parametrize("form", list(_ID_FORMS))
def test_sources_and_targets_files_are_read_by_one_rule(rome, tmp_path, capsys, form):
    """Sources and targets files take the same forms: DIMACS ``s ID`` lines or one id
    per line, each with or without ``p aux sp ss K``.  ``s`` lines without the header
    were taken as targets but refused as sources ("expected 1 columns ... found 2")."""
    from gpu_sssp.pipeline.sources import plan_sources, read_source_file
    from gpu_sssp.pipeline.targets import plan_targets, read_target_file
    from gpu_sssp.workflows.cli import main

    path, g, _ = rome
    f = tmp_path / "ids.ss"
    f.write_text(_ID_FORMS[form])
    assert read_source_file(f, g).tolist() == read_target_file(f, g).tolist() == [5, 7, 5]
    assert plan_targets(g, targets=str(f)).targets.tolist() == [4, 6, 4]
    assert plan_sources(g, sources_file=f, order="given").sources.tolist() == [4, 6]
    assert main(["solve", str(path), "--sources-file", str(f)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("content, line, what", [
    ("5\n0\n", 2, "{w} 0 is not a vertex of"),
    ("s 5\ns 99999\n", 2, "{w} 99999 is not a vertex of"),
    ("5\nabc\n", 2, "non-numeric {w} id 'abc'"),
    ("s 5\n7\n", 2, "expected 's ID' lines, got '7'"),
    ("p aux sp ss 3\ns 5\n", None, "{w} count does not match the header: expected 3 (from 'p aux sp ss 3' at "
     "line 1), found 1"),
    ("p sp 3 4\ns 5\n", 1, "expected the header 'p aux sp ss K'"),
    ("p aux sp ss 1\np aux sp ss 1\ns 5\n", 2, "repeated 'p' line (the first is at line 1)"),
    ("# nothing\n", None, "no {w}s in the file"),
])
def test_sources_and_targets_files_give_the_same_errors(rome, tmp_path, capsys, content, line, what):
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_source_file
    from gpu_sssp.pipeline.targets import read_target_file
    from gpu_sssp.workflows.cli import main

    path, g, _ = rome
    f = tmp_path / "ids.ss"
    f.write_text(content)
    where = f"{f}:{line}: " if line else f"{f}: "
    for w, read in (("source", read_source_file), ("target", read_target_file)):
        with pytest.raises(InputError) as e:
            read(f, g)
        assert str(e.value).startswith(where) and what.format(w=w) in str(e.value), str(e.value)
    assert main(["solve", str(path), "--sources-file", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {where}") and what.format(w="source") in err[0], err


def test_targets_options(rome, tmp_path):
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.targets import plan_targets

    _, g, _ = rome
    assert plan_targets(g) is None
    assert plan_targets(g, targets="all").count == g.n
    r = plan_targets(g, random=10)
    assert r.count == 10 and r.how == {"kind": "random", "seed": 1, "count": 10, "distinct": 10}
    ss = tmp_path / "t.ss"
    ss.write_text("p aux sp ss 2\ns 5\ns 5\n")
    assert plan_targets(g, targets=str(ss)).targets.tolist() == [4, 4]
    with pytest.raises(UsageError, match="one way only"):
        plan_targets(g, targets="all", random=3)
    with pytest.raises(UsageError, match="target_seed= goes with random_targets=K"):
        plan_targets(g, targets="all", seed=3)
    with pytest.raises(UsageError, match="between 1 and"):
        plan_targets(g, random=g.n + 1)
    with pytest.raises(InputError, match="no such targets file"):
        plan_targets(g, targets=str(tmp_path / "missing.txt"))


def test_facade_matrix(rome):
    import gpu_sssp

    path, g, ref = rome
    src, tg = [1, 7, 7, 3353], [2, 2, 1, 100]
    for method in ("phast", "dijkstra"):
        m = gpu_sssp.matrix(g, src, tg, method=method, backend="cpu")
        assert m.shape == (4, 4) and np.array_equal(m, ref[np.ix_(np.array(src) - 1, np.array(tg) - 1)])
    wide = gpu_sssp.matrix(path, src, tg, backend="cpu", as_arrow=True)
    assert wide.schema.equals(gpu_sssp.MATRIX_SCHEMA, check_metadata=False)
    assert wide.column("distance").to_pylist() == ref[np.ix_(np.array(src) - 1, np.array(tg) - 1)].tolist()
    long = gpu_sssp.matrix(g, [1], "all", backend="cpu", as_arrow="long")
    assert long.num_rows == g.n and long.column("distance").to_pylist() == ref[0].tolist()
    with pytest.raises(ValueError, match="target"):
        gpu_sssp.matrix(g, [1], [0], backend="cpu")


@pytest.mark.parametrize("bad, message", [
    ([99999999999999999999], "target 99999999999999999999 does not exist in rome99: ids run from 1 to 3353"),
    ([2**63], "target 9223372036854775808 does not exist"),
    ([1, -(2**70)], f"target {-(2**70)} does not exist"),
    (["99999999999999999999"], "target 99999999999999999999 does not exist"),
    (np.array([1e30]), "ids run from 1 to 3353"),
    ([0], "target 0 does not exist"),
    ([-1], "target -1 does not exist"),
    ([3354], "target 3354 does not exist"),
    ([1.5], "must be integers"),
    (["x"], "must be integers"),
    ([True], "must be integers"),
    ([float("nan")], "must be integers"),
])
def test_facade_matrix_refuses_ids_out_of_range(rome, bad, message):
    """An id beyond 64 bits used to raise OverflowError; every bad id is a UsageError
    (a ValueError) naming the id and the range of ids."""
    import gpu_sssp
    from gpu_sssp.kernels.errors import UsageError

    _, g, _ = rome
    with pytest.raises(UsageError) as err:
        gpu_sssp.matrix(g, [1], bad, backend="cpu")
    assert message in str(err.value)
    with pytest.raises(UsageError, match="source"):
        gpu_sssp.matrix(g, bad, [1], backend="cpu")


def test_to_index_keeps_good_ids(rome):
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.targets import plan_targets

    _, g, _ = rome
    for ids in ([1, 2.0, "3", np.int64(4)], np.array([1, 2, 3, 4], dtype=np.uint64), np.array([1.0, 2, 3, 4]), (1, 2, 3, 4)):
        assert g.to_index(ids).tolist() == [0, 1, 2, 3]
    assert g.to_index(3353).tolist() == [3352]
    with pytest.raises(ValueError, match="source 99999999999999999999999 does not exist"):
        plan_sources(g, ids=[1, 99999999999999999999999])
    with pytest.raises(ValueError, match="target 99999999999999999999999 does not exist"):
        plan_targets(g, targets=[99999999999999999999999])


def test_one_target_id_is_a_list_of_one(rome):
    """``study(..., targets=7)`` as ``matrix(g, 5, 7)``: one int is one id (it was a bare
    TypeError 'int object is not iterable'); a bool or an object is refused in one line."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.targets import plan_targets

    _, g, _ = rome
    one = plan_targets(g, targets=7)
    assert list(one.targets) == [7 - g.id_base] and one.how["kind"] == "list"
    assert list(plan_targets(g, targets=np.int64(7)).targets) == [7 - g.id_base]
    for bad in (True, object()):
        with pytest.raises(UsageError, match="targets: expected 'all', an id"):
            plan_targets(g, targets=bad)


def test_a_resume_keeps_the_record_of_the_targets_file(client, rome, tmp_path):
    """A matrix study resumed with ``targets=`` its own ``targets.parquet`` (the same
    targets, as the README allows) kept going, but the manifest's record of where its
    targets came from became the folder's own output; the first run's file is kept, as
    is the sources' record."""
    from gpu_sssp.pipeline.study.run import study

    path, g, ref = rome
    tfile = tmp_path / "targets.txt"
    tfile.write_text("1\n7\n300\n")
    out = tmp_path / "m"
    kw = dict(client=client, random=20, seed=4, batch_size=5, out=out, algorithm="dijkstra")
    study(path, targets=str(tfile), **kw)
    first = json.loads((out / "manifest.json").read_text())
    assert first["matrix"]["targets"]["file"] == str(tfile)
    (out / "matrix" / "batch-000002.parquet").unlink()  # pending again
    s = study(path, resume=True, targets=str(out / "targets.parquet"), **kw)
    assert s["complete"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["matrix"]["targets"] == first["matrix"]["targets"] and m["sources"] == first["sources"]
    src, mat = _matrix(out)
    assert np.array_equal(mat, ref[np.ix_(src - 1, [0, 6, 299])])
