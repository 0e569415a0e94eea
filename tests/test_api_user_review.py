"""Python API defects found by a new-user review (session 23); each test failed before.

A Graph's arrays could be edited in place (solvers then disagreed: the hierarchy, the
fingerprint and every cached datum were of the old weights), ``to_scipy()`` shared them
with SciPy's in-place operations, options were dropped or truncated without a word
(``study(client=..., cpu_workers=3)``, ``seed=`` without ``random=``, ``lanes=2.5``,
``force="no"``), ``load_graph(replace=...)`` crashed, unsigned ids needed ``n``, a bad
``report=`` was found only after the whole study, and the errors to catch were not
importable from ``gpu_sssp``.
"""
from __future__ import annotations

import inspect
import pickle
from pathlib import Path

import numpy as np
import pytest

import gpu_sssp as sssp
from gpu_sssp.kernels.errors import OptionError, UsageError

ROOT = Path(__file__).resolve().parents[1]
ROME = ROOT / "data" / "rome99.gr"


def _small():
    # 0 -> 1 (0), 0 -> 2 (5), 1 -> 2 (1), 2 -> 0 (1)
    return sssp.Graph.from_edges([0, 0, 1, 2], [1, 2, 2, 0], [0, 5, 1, 1])


def test_graph_arrays_refuse_edits_in_place():
    g = _small()
    before = sssp.solve(g, [0], method="dijkstra").distances.copy()
    for name in ("weights", "indices", "indptr"):
        arr = getattr(g, name)
        with pytest.raises(ValueError, match="read-only"):
            arr[:] = 1
    np.testing.assert_array_equal(sssp.solve(g, [0], method="dijkstra").distances, before)
    # a pickled copy (a worker's) is read-only too
    g2 = pickle.loads(pickle.dumps(g))
    assert not g2.weights.flags.writeable and not g2.indptr.flags.writeable
    # the caller's own arrays are left as they were (read-only views, not frozen originals)
    ip, ix, w = np.array([0, 1, 1]), np.array([1]), np.array([3])
    g3 = sssp.Graph(n=2, indptr=ip, indices=ix, weights=w)
    assert ip.flags.writeable and not g3.indptr.flags.writeable


def test_loaded_graph_and_hierarchy_stay_consistent():
    g = sssp.load_graph(ROME)
    ph = sssp.solve(g, [0], method="phast", backend="cpu").eccentricity
    with pytest.raises(ValueError):
        g.weights[:] = 1
    assert sssp.solve(g, [0], method="dijkstra").eccentricity == ph == 69102


def test_to_scipy_is_a_copy():
    g = _small()
    a = g.to_scipy()
    a.eliminate_zeros()  # drops the zero-weight arc 0 -> 1 from the matrix only
    a.data[:] = 7
    assert g.m == 4 and list(g.weights) == [0, 5, 1, 1]
    np.testing.assert_array_equal(sssp.solve(g, [0], method="dijkstra").distances, [[0, 0, 1]])


def test_load_graph_replace_is_not_an_option():
    with pytest.raises(OptionError, match="unknown option 'replace'"):
        sssp.load_graph(ROME, replace=False)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_from_edges_unsigned_ids_without_n(dtype):
    g = sssp.Graph.from_edges(np.array([0, 1], dtype), np.array([1, 2], dtype))
    assert g.n == 3 and g.m == 2


def test_from_edges_directed_flag():
    with pytest.raises(UsageError, match="directed must be True or False"):
        sssp.Graph.from_edges([0, 1], [1, 0], directed="no")
    with pytest.raises(UsageError, match=r"arc 2 -> 0 \(weight 1\) has no arc 0 -> 2"):
        sssp.Graph.from_edges([0, 1, 1, 2], [1, 0, 2, 0], [1, 1, 1, 1], directed=False)
    with pytest.raises(UsageError, match=r"arc 0 -> 1 \(weight 1\) has no arc 1 -> 0 of that weight"):
        sssp.Graph.from_edges([0, 1], [1, 0], [1, 2], directed=False)
    g = sssp.Graph.from_edges([0, 1, 1, 2], [1, 0, 2, 1], [1, 1, 3, 3], directed=False)
    assert g.directed is False and g.m == 4
    # named by the graph's ids (id_base 1: "arc 0 -> 1" named vertices 1 and 2 by index)
    with pytest.raises(UsageError, match=r"arc 1 -> 2 \(weight 1\) has no arc 2 -> 1 of that weight"):
        sssp.Graph.from_edges([0, 1], [1, 0], [1, 2], directed=False, id_base=1)


def test_a_parquet_edge_list_marked_undirected_with_one_way_arcs_names_the_file(tmp_path):
    """Its refusal spoke of a keyword ("directed=False says ... leave directed=True") and
    named no file, where every other Parquet check starts with the file's name."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.graph import read_parquet

    t = pa.table({"src": pa.array([1, 2], pa.int32()), "dst": pa.array([2, 3], pa.int32()),
                  "weight": pa.array([1, 2], pa.int64())})
    meta = {"vertices": 3, "arcs": 2, "directed": False, "id_base": 1}
    p = tmp_path / "undirbad.parquet"
    pq.write_table(t.replace_schema_metadata({b"sssp": json.dumps(meta).encode()}), p)
    with pytest.raises(InputError) as e:
        read_parquet(p)
    text = str(e.value)
    assert text.startswith(f"{p}: its sssp metadata says undirected"), text
    assert "arc 1 -> 2 (weight 1) has no arc 2 -> 1 of that weight" in text and "directed=" not in text


def test_to_ids_and_tables_take_integers_only():
    g = _small()
    assert g.to_ids([0, 2]).tolist() == [0, 2]
    for bad in (1.5, True, "3", [1, 2.0]):
        with pytest.raises(UsageError, match="must be integers"):
            g.to_ids(bad)
    res = sssp.solve(g, [0], method="dijkstra")
    for bad in (1.5, True):
        with pytest.raises(UsageError, match="id_base must be a whole number"):
            res.to_table(id_base=bad)
    with pytest.raises(OptionError, match="reachable_only must be True or False"):
        res.to_table(reachable_only="no")
    assert res.to_table(id_base=np.int64(1)).num_rows == 3


@pytest.mark.parametrize("kw, err, text", [
    ({"lanes": 2.5}, OptionError, "lanes must be a whole number"),
    ({"lanes": "4"}, OptionError, "lanes must be a whole number"),
    ({"lanes": True}, OptionError, "lanes must be a whole number"),
    ({"lanes": 0}, UsageError, "lanes must be at least 1"),
    ({"threads": 1.5}, OptionError, "threads must be a whole number"),
    ({"force": "no"}, OptionError, "force must be True or False"),
    ({"hierarchy": "x"}, OptionError, "hierarchy= takes a kernels.hierarchy.Hierarchy"),
])
def test_cpu_phast_option_kinds(kw, err, text):
    g = sssp.load_graph(ROME)
    with pytest.raises(err, match=text):
        sssp.solve(g, [0], method="phast", backend="cpu", **kw)


def test_gpu_method_option_kinds_checked_without_a_gpu():
    from gpu_sssp.kernels.gpu.common import check_options

    defaults = {"persistent": True, "lanes": 32, "max_fill": 3.0, "coalesced_enqueue": "block", "hops": None}
    assert check_options("hbf", {"lanes": np.int32(8), "persistent": 0, "max_fill": 2}, defaults)["lanes"] == 8
    assert check_options("hbf", {"lanes": None, "hops": "x", "coalesced_enqueue": False}, defaults)["hops"] == "x"
    with pytest.raises(OptionError, match="hbf: persistent must be True or False"):
        check_options("hbf", {"persistent": "no"}, defaults)
    with pytest.raises(OptionError, match="hbf: lanes must be a whole number"):
        check_options("hbf", {"lanes": 2.5}, defaults)
    with pytest.raises(OptionError, match="hbf: max_fill must be a number"):
        check_options("hbf", {"max_fill": "3"}, defaults)


def test_study_refuses_options_it_would_drop(tmp_path):
    from distributed import Client

    class _NotConnected(Client):  # a Client for isinstance: the refusal comes before any use
        def __init__(self):
            pass

        def __del__(self):
            pass

    with pytest.raises(OptionError, match="client= takes a distributed.Client, got str"):
        sssp.study(ROME, sources=[1], out=tmp_path / "a", client="tcp://127.0.0.1:1")
    for kw in ({"cpu_workers": 3}, {"host": "0.0.0.0"}, {"dashboard": True}, {"scheduler": "tcp://x:1"}):
        with pytest.raises(OptionError, match=f"{next(iter(kw))}= apply to a cluster the study starts"):
            sssp.study(ROME, sources=[1], out=tmp_path / "b", client=_NotConnected(), **kw)
    with pytest.raises(OptionError, match="seed= goes with random=K"):
        sssp.study(ROME, sources=[1], seed=3, out=tmp_path / "c")
    with pytest.raises(OptionError, match="dashboard_address= goes with dashboard=True"):
        sssp.study(ROME, sources=[1], out=tmp_path / "d", dashboard_address="127.0.0.1:0")
    assert not any(tmp_path.iterdir())  # refused before any folder was made


def test_study_report_path_checked_first(tmp_path):
    pytest.importorskip("bokeh")
    with pytest.raises(UsageError, match="report='.*': is a directory"):
        sssp.study(ROME, sources=[1], out=tmp_path / "s", cpu_workers=1, report=tmp_path)
    with pytest.raises(UsageError, match="report='.*': no folder"):
        sssp.study(ROME, sources=[1], out=tmp_path / "s", cpu_workers=1, report=tmp_path / "no" / "r.html")
    assert not (tmp_path / "s").exists()


def test_public_names():
    for name in ("SsspError", "UsageError", "OptionError", "OutputTooLargeError", "GPUUnavailableError",
                 "InputError", "StudyError"):
        cls = getattr(sssp, name)
        assert issubclass(cls, sssp.SsspError) and name in sssp.__all__
    params = inspect.signature(sssp.study).parameters
    assert {"batch_size", "client", "report", "targets"} <= set(params)
    assert "cache_dir" in inspect.signature(sssp.load_graph).parameters
    assert sssp.study.__doc__ and "Parameters" in sssp.study.__doc__


@pytest.mark.gpu
def test_gpu_option_kinds():
    g = sssp.load_graph(ROME)
    with pytest.raises(TypeError, match="method 'batched' got unknown option"):
        sssp.solve(g, [0], method="batched", batch_sise=4)
    for method, kw, text in (("batched", {"batch_size": 2.5}, "batch_size must be a whole number"),
                             ("batched", {"locality": "no"}, "locality must be True or False"),
                             ("phast", {"batch_size": "4"}, "batch_size must be a whole number"),
                             ("phast", {"force": "no"}, "force must be True or False"),
                             ("hbf", {"persistent": "no"}, "persistent must be True or False")):
        with pytest.raises(OptionError, match=text):
            sssp.solve(g, [0], method=method, backend="gpu", **kw)


def test_batched_names_its_options_from_its_signature():
    """A misspelt option is refused before any device is needed, naming the options
    the signature has (the list was a literal kept beside it)."""
    from gpu_sssp.kernels.gpu import batched as mod

    g = _small()
    with pytest.raises(TypeError, match=r"got unknown option\(s\) \['batch_sise'\]; it takes \['batch_size', "):
        mod.batched(g, [0], batch_sise=4)
    params = inspect.signature(mod.batched).parameters
    assert set(mod._OPTIONS) <= set(params) and "count_work" in mod._OPTIONS and "targets" not in mod._OPTIONS


def test_load_graph_takes_a_bytes_name_and_refuses_what_is_no_name(tmp_path):
    """`load_graph(b'rome99.gr')` raised a bare TypeError from pathlib, not an SsspError
    (file names need not be UTF-8: bytes are how the system gives them); found by the
    2026-12-07 audit."""
    import os
    import shutil

    g = tmp_path / "r\xe9.gr"  # (a name the system holds as bytes b"r\xc3\xa9.gr")
    shutil.copy(ROME, g)
    assert sssp.load_graph(os.fsencode(g)).n == 3353
    for bad in (3, None, [str(g)]):
        with pytest.raises(UsageError, match=r"^load_graph: the graph must be a file name \(str, bytes or os\.PathLike\)"):
            sssp.load_graph(bad)


def test_dir_of_the_package_lists_no_future_import():
    """`dir(gpu_sssp)` listed `annotations` (the `from __future__` import) among the
    API's names."""
    names = [n for n in dir(sssp) if not n.startswith("_")]
    assert "annotations" not in names
    assert {"solve", "matrix", "study", "load_graph", "Graph", "SsspError"} <= set(names)


def test_an_id_of_a_graph_without_vertices_is_refused_without_a_range():
    """"ids run 0..-1" for a graph with no vertices."""
    g = sssp.Graph.from_edges(np.zeros(0, int), np.zeros(0, int), np.zeros(0), n=0)
    with pytest.raises(UsageError, match=r"vertex 1 does not exist in .*: it has no vertices$"):
        g.to_index([1])
    with pytest.raises(UsageError, match=r"source index 0 out of range for .*, which has no vertices$"):
        sssp.solve(g, [0])


def test_a_result_refuses_a_negative_id_base_as_graph_does():
    """`Result.matrix_table(id_base=-3)` gave source -3 while `Graph` refuses
    `id_base < 0` (file id -1 is the -1 of 'no predecessor')."""
    g = sssp.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 2.0]), n=3)
    res = sssp.solve(g, [0], method="dijkstra", targets=[2])
    assert res.matrix_table(id_base=1).column("source").to_pylist() == [1]
    for method in (res.matrix_table, res.to_table):
        with pytest.raises(UsageError, match=r"id_base must be >= 0 .* got -3"):
            method(id_base=-3)


def test_a_method_at_backend_in_python_hints_at_the_backend_argument():
    """`solve(g, [0], method='phast@cpu')` (the command line's spelling) said only
    "unknown method"."""
    g = sssp.Graph.from_edges(np.array([0]), np.array([1]), np.array([1.0]), n=2)
    with pytest.raises(UsageError, match=r"unknown method 'phast@cpu'; .*\(a backend is its own argument: "
                                         r"method='phast', backend='cpu'\)$"):
        sssp.solve(g, [0], method="phast@cpu")
    with pytest.raises(UsageError, match=r"unknown method 'nosuch'; available: [^(]*$"):
        sssp.solve(g, [0], method="nosuch")
