"""The Python API's argument contracts (the audit of the facade): what ``solve``,
``Graph.to_index`` and ``Graph.from_edges`` refuse, with which error, and never a
silent reinterpretation (a bool as vertex 1, a wrapped or truncated number)."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_sssp as sssp
from gpu_sssp.kernels.errors import OptionError, SsspError, UsageError
from gpu_sssp.kernels.graph import Graph


@pytest.fixture
def g():
    # a 4-cycle with file ids 1..4 (as a DIMACS file)
    return Graph.from_edges([0, 1, 2, 3], [1, 2, 3, 0], [1, 2, 3, 4], n=4, id_base=1, name="ring")


@pytest.mark.parametrize("ids", [[True, 2], (2, False), [[1, True]], [np.True_, 3]])
def test_to_index_refuses_a_bool_inside_a_list(g, ids):
    """NumPy makes [True, 2] an int64 array [1, 2]: True silently became vertex 1."""
    with pytest.raises(UsageError, match="must be integers"):
        g.to_index(ids)
    assert g.to_index([1, 2]).tolist() == [0, 1]


@pytest.mark.parametrize("ids", [{1, 2}, frozenset([3]), {1: 2}])
def test_a_set_of_ids_is_refused_as_having_no_order(g, ids):
    """A set was "sources must be integers, got object" from solve and "ids must be
    integers, got [{1, 2}]" from to_index; matrix() said what to give (a list)."""
    with pytest.raises(UsageError, match=r"a (set|frozenset|dict) has no order|set or dict has no order"):
        g.to_index(ids)
    with pytest.raises(OptionError, match="set or dict has no order"):
        sssp.solve(g, ids, method="dijkstra")


def test_to_index_refuses_complex_ids(g):
    """(1+0j) was accepted with a ComplexWarning from NumPy's cast."""
    with pytest.raises(UsageError, match="must be integers"):
        g.to_index(1 + 0j)


@pytest.mark.parametrize("sources", [[True, 2], [0, False], (np.True_,)])
def test_solve_refuses_a_bool_inside_a_list(g, sources):
    with pytest.raises(OptionError, match="bool"):
        sssp.solve(g, sources, method="dijkstra")


def test_solve_names_huge_sources_out_of_range_never_wrapped(g):
    """A uint64 beyond int64 was wrapped to -1 in the message ("index -1"); a Python int
    beyond 64 bits was "must be integers, got object"."""
    with pytest.raises(UsageError, match="index 18446744073709551615 out of range"):
        sssp.solve(g, np.array([2**64 - 1], dtype=np.uint64), method="dijkstra")
    with pytest.raises(UsageError, match=f"index {2**70} out of range"):
        sssp.solve(g, [2**70, 1], method="dijkstra")
    with pytest.raises(UsageError, match=f"index {2**70} out of range"):
        sssp.solve(g, 2**70, method="dijkstra")
    res = sssp.solve(g, np.array([3], dtype=np.uint64), method="dijkstra")
    assert res.distances[0].tolist() == [4, 5, 7, 0]


@pytest.mark.parametrize("graph", ["data/rome99.gr", None, 3])
def test_solve_refuses_what_is_not_a_graph(graph):
    """A path given as the graph failed with "AttributeError: 'str' object has no
    attribute 'n'" from inside the registry."""
    with pytest.raises(OptionError, match="graph must be a gpu_sssp.Graph.*load_graph"):
        sssp.solve(graph, [0])


@pytest.mark.parametrize("kw, match", [
    (dict(n=2.5), "whole number"), (dict(n="3"), "whole number"), (dict(n=True), "whole number"),
    (dict(n=-1), "at least 0"), (dict(n=4, id_base=1.5), "id_base must be a whole number"),
    (dict(n=4, id_base=True), "id_base must be a whole number"),
])
def test_from_edges_checks_n_and_id_base(kw, match):
    """n=2.5 failed inside np.bincount, n="3" with a str/int comparison, n=-1 said
    "expected 0..-2", and id_base=1.5 was truncated to 1 (every file id shifted)."""
    with pytest.raises(UsageError, match=match):
        Graph.from_edges([0], [1], [1], **kw)
    assert Graph.from_edges([0], [1], [1], n=np.int64(3), id_base=np.int32(1)).id_base == 1
    assert Graph.from_edges([0], [1], [1], n=3.0).n == 3  # a whole float, as arc ends


@pytest.mark.parametrize("src, dst, w", [(0, 1, 1), ([[0]], [[1]], [1]), ([0], [1], [[1]]), (None, [1], [1])])
def test_from_edges_needs_one_dimensional_arrays(src, dst, w):
    """A scalar failed with "len() of unsized object", a 2-D list with NumPy's "object
    too deep for desired array"."""
    with pytest.raises(UsageError, match="1-D"):
        Graph.from_edges(src, dst, w, n=2)


def test_every_refusal_is_an_sssp_error(g):
    for call in (lambda: sssp.solve(g, [True]), lambda: sssp.solve("x", [0]), lambda: g.to_index([True]),
                 lambda: Graph.from_edges([0], [1], [1], n=0.5)):
        with pytest.raises(SsspError):
            call()


@pytest.mark.parametrize("kw", [dict(predecessors="no"), dict(predecessors=None), dict(distances="False"),
                                dict(predecessors=2)])
def test_solve_flags_are_booleans(g, kw):
    """predecessors="no" is truthy: it computed the trees (and held their memory)."""
    with pytest.raises(OptionError, match="must be True or False"):
        sssp.solve(g, [0], method="dijkstra", **kw)
    assert sssp.solve(g, [0], method="dijkstra", predecessors=np.True_, distances=1).predecessors is not None


def test_a_missing_input_file_is_an_sssp_error_and_a_file_not_found_error(tmp_path):
    """``load_graph('nosuch.gr')`` raised a bare ``FileNotFoundError`` (and
    ``read_parquet`` pyarrow's "[Errno 2] Failed to open local file ..."): code catching
    ``SsspError``, every error for what a user gave (README), missed it."""
    import pickle

    from gpu_sssp.pipeline.graph import read_parquet

    for call in (lambda: sssp.load_graph(tmp_path / "nosuch.gr"), lambda: read_parquet(tmp_path / "nosuch.parquet"),
                 lambda: sssp.load_graph(tmp_path / "nosuch.parquet")):
        with pytest.raises(sssp.SsspError) as e:
            call()
        assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, sssp.MissingFileError)
        assert e.value.errno == 2
        assert str(e.value).endswith("nosuch.gr: no such file") or str(e.value).endswith("nosuch.parquet: no such file")
        assert str(pickle.loads(pickle.dumps(e.value))) == str(e.value)  # (a worker's error reaches the client)
