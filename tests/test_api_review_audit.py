"""Python API arguments that were taken silently (found by a review, as a new user
would pass them): a truthy ``resume="no"`` resumed the folder's study, ``batch_size=1.5``
ran batches of 1, ``study(graph_object, ranom=2)`` dropped the typo and solved every
source, and ``load_graph(path, max_vertices=1.5)`` read the limit as 1.  Each is refused
in one line before any folder or cluster exists, as the command line refuses them."""
from __future__ import annotations

import pytest

import gpu_sssp
from gpu_sssp.kernels.errors import OptionError, UsageError
from tests.conftest import DATA


@pytest.fixture(scope="module")
def rome():
    return gpu_sssp.load_graph(DATA / "rome99.gr")


@pytest.mark.parametrize("kw, said", [
    (dict(resume="no"), "resume must be True or False, got 'no'"),
    (dict(resume=2), "resume must be True or False, got 2"),
    (dict(batch_size=1.5), "batch_size must be a whole number, got 1.5"),
    (dict(batch_size="2"), "batch_size must be a whole number, got '2'"),
    (dict(batch_size=True), "batch_size must be a whole number, got True"),
    (dict(cpu_workers=1.5), "cpu_workers must be a whole number, got 1.5"),
    (dict(cpu_workers=True), "cpu_workers must be a whole number, got True"),
    (dict(dashboard="no"), "dashboard must be True or False, got 'no'"),
    (dict(keep_graph="no"), "keep_graph must be True or False, got 'no'"),
    (dict(ranom=2), "study() got an unknown option 'ranom' (did you mean random=?)"),
    (dict(undirected=True, weights="unit"), "study() got undirected, weights with a Graph"),
])
def test_study_refuses_what_it_would_take_silently(rome, tmp_path, kw, said):
    out = tmp_path / "s"
    with pytest.raises(OptionError) as e:
        gpu_sssp.study(rome, out=str(out), **kw)
    assert str(e.value).startswith(said), str(e.value)
    assert not out.exists()


def test_a_typo_with_a_path_is_study_s_refusal(tmp_path):
    with pytest.raises(OptionError, match=r"^study\(\) got an unknown option 'ranom' \(did you mean random=\?\)"):
        gpu_sssp.study(str(DATA / "rome99.gr"), ranom=2, out=str(tmp_path / "s"))


@pytest.mark.parametrize("kw", [dict(max_vertices=1.5), dict(max_arcs=True), dict(max_isolated_vertices="3")])
def test_ingest_limits_must_be_whole_numbers(tmp_path, kw):
    from gpu_sssp.pipeline.ingest import ingest

    name = next(iter(kw))
    with pytest.raises(UsageError, match=rf"^{name}: expected a whole number, got "):
        ingest(DATA / "rome99.gr", tmp_path / "r.parquet", **kw)
    assert ingest(DATA / "rome99.gr", tmp_path / "r.parquet", max_vertices=10_000)["vertices"] == 3353


def test_a_bad_distance_limit_is_refused_where_no_output_uses_it(rome, tmp_path):
    """``study(g, max_distance_bytes=1.5)`` of statistics alone ran (the CLI refuses
    ``--max-distance-bytes 1.5`` whatever the outputs)."""
    with pytest.raises(UsageError, match=r"^max_distance_bytes: expected a number of bytes or a size"):
        gpu_sssp.study(rome, out=str(tmp_path / "s"), max_distance_bytes=1.5)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("given", [bytearray(b"\x05"), memoryview(b"\x05"), b"\x05", bytearray(b"5")])
def test_bytes_like_sources_are_refused_not_read_as_byte_ids(given):
    """``solve(g, bytearray(b'5'))`` solved from vertex 53 (NumPy reads a bytearray or a
    memoryview of bytes as byte-sized numbers), and ``Graph.to_index`` took it as id 53,
    where ``gpu_sssp.matrix`` reads bytes as a file name: refused, naming the type."""
    import numpy as np

    import gpu_sssp
    from gpu_sssp.kernels.errors import SsspError
    from gpu_sssp.kernels.graph import Graph

    g = Graph.from_edges([0, 1], [1, 2], np.array([1, 1]), 60)
    with pytest.raises(SsspError, match=rf"sources must be integers, got a {type(given).__name__} object"):
        gpu_sssp.solve(g, given, backend="cpu")
    with pytest.raises(SsspError, match=rf"targets must be integers, got a {type(given).__name__} object"):
        gpu_sssp.solve(g, [0], targets=given, backend="cpu")
    with pytest.raises(SsspError, match=rf"vertex ids must be integers, got a {type(given).__name__} object"):
        g.to_index(given)
    # an integer array's memoryview is ids, as before
    assert g.to_index(memoryview(np.array([5], dtype=np.int64))).tolist() == [5]


def test_auto_with_a_backend_suffix_says_to_give_the_backend():
    """``-m auto@cpu`` said "unknown method 'auto'" though auto is the default method."""
    import numpy as np

    import gpu_sssp
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.kernels.graph import Graph
    from gpu_sssp.kernels.registry import method_spec

    with pytest.raises(UsageError, match=r"'auto@cpu': auto picks a method itself and takes no '@cpu'"):
        method_spec("auto@cpu")
    g = Graph.from_edges([0], [1], np.array([1]), 2)
    with pytest.raises(UsageError, match=r"method='auto', backend='cpu'"):
        gpu_sssp.solve(g, [0], method="auto@cpu")


def test_a_hierarchy_given_for_another_graph_is_named_as_given():
    """It said "the hierarchy held by B belongs to another graph" of a hierarchy the
    caller passed, which B did not hold."""
    import numpy as np

    import gpu_sssp
    from gpu_sssp.kernels import hierarchy as hmod
    from gpu_sssp.kernels.graph import Graph

    a = Graph.from_edges([0, 1, 2], [1, 2, 3], np.array([1, 2, 3]), 4, name="A")
    b = Graph.from_edges([0, 1, 2], [1, 2, 3], np.array([3, 2, 1]), 4, name="B")
    h = hmod.get_hierarchy(a) if hmod.has_hierarchy(a) else hmod.build_hierarchy(a)
    with pytest.raises(Exception, match=r"the hierarchy given belongs to another graph than B"):
        gpu_sssp.solve(b, [0], method="phast", backend="cpu", hierarchy=h)
