"""The README's Python interface as a new user calls it: ``gpu_sssp.matrix`` and
``gpu_sssp.solve`` with values at the edges of what their documentation promises."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse.csgraph as csg

import gpu_sssp as sssp
from gpu_sssp.kernels.errors import OptionError, OutputTooLargeError, UsageError

ROME = Path(__file__).resolve().parents[1] / "data" / "rome99.gr"


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    return sssp.load_graph(ROME, cache_dir=tmp_path_factory.mktemp("cache"))


def test_matrix_as_arrow_false_values_give_the_numpy_array(rome):
    """``as_arrow`` accepted 0 and NumPy's False (they compare equal to False) and then
    returned an Arrow table, since only the ``False`` and ``None`` objects themselves
    gave the array; a false value gives the array, a true one the wide table, and
    anything else is refused."""
    want = csg.dijkstra(rome.to_scipy(), indices=[0])[:, [2]]
    for false in (False, None, 0, np.False_):
        m = sssp.matrix(rome, [1], [3], as_arrow=false, backend="cpu")
        assert isinstance(m, np.ndarray), false
        assert np.array_equal(m, want)
    for true in (True, 1, np.True_, "wide"):
        t = sssp.matrix(rome, [1], [3], as_arrow=true, backend="cpu")
        assert isinstance(t, pa.Table) and t.column_names == ["source", "distance"], true
        assert t.column("distance").to_pylist() == [want[0].tolist()]
    for bad in (2, 1.0, "yes", [True]):
        with pytest.raises(UsageError, match="as_arrow="):
            sssp.matrix(rome, [1], [3], as_arrow=bad, backend="cpu")


def test_matrix_refuses_a_graph_that_is_not_one(rome):
    """``matrix(42, ...)`` ended in ``AttributeError: 'int' object has no attribute
    'to_index'``; like ``solve``, it is a ``TypeError`` that says what a graph is."""
    for bad in (42, None, [1, 2], rome.to_scipy()):
        with pytest.raises(OptionError, match=r"graph must be a gpu_sssp\.Graph or a path"):
            sssp.matrix(bad, [1], [3])


def test_memory_refusal_of_predecessors_gives_advice_that_applies():
    """A refused ``predecessors=True, distances=False`` call was told to "pass
    distances=False", which it had done: the advice names what would help."""
    big = sssp.Graph.from_edges([0], [1], [1], n=200_000_000)
    with pytest.raises(OutputTooLargeError) as e:
        sssp.solve(big, np.arange(2000), predecessors=True, distances=False)
    msg = str(e.value)
    assert "predecessors of 2,000 sources" in msg
    assert "distances=False" not in msg
    assert "predecessors=False" in msg
    with pytest.raises(OutputTooLargeError) as e:
        sssp.solve(big, np.arange(2000), predecessors=True)
    msg = str(e.value)
    assert "distances=False" in msg and "predecessors=False" in msg
    with pytest.raises(OutputTooLargeError) as e:
        sssp.solve(big, np.arange(2000))
    msg = str(e.value)
    assert "distances=False" in msg and "predecessors=False" not in msg


def test_load_graph_refuses_ingest_options_for_a_parquet_file(tmp_path):
    """``load_graph("g.parquet", weights="unit")`` returned the file's own weights and
    said nothing (``sssp solve g.parquet --weights unit`` is refused): options that would
    change the graph are refused for a Parquet edge list, as on the command line, and an
    option ``ingest`` does not take is named, not left to ``ingest()``'s TypeError."""
    from gpu_sssp.pipeline.ingest import ingest

    pq_path = tmp_path / "rome99.parquet"
    ingest(ROME, pq_path)
    for opts in ({"weights": "unit"}, {"undirected": True}, {"format": "gr"}, {"zero_based": True},
                 {"weight_type": "float64"}):
        with pytest.raises(OptionError, match=r"apply to raw inputs, not to an ingested Parquet file"):
            sssp.load_graph(pq_path, **opts)
    # the defaults change nothing and are accepted
    g = sssp.load_graph(pq_path, weights=None, undirected=False)
    assert g.n == 3353
    for path in (pq_path, ROME):
        with pytest.raises(OptionError, match=r"unknown option 'wieghts'.*weights"):
            sssp.load_graph(path, wieghts="unit", cache_dir=tmp_path)
    assert not (tmp_path / ".sssp-cache").exists()


@pytest.mark.parametrize("name, what", [("Random4-C.9.0.ss", "DIMACS source list"),
                                        ("coords.co", "DIMACS coordinate table")])
def test_a_sources_or_coordinates_file_given_as_the_graph_says_so(name, what, tmp_path):
    """``load_graph("x.ss")`` (``sssp solve x.ss``) ingested the source list into the
    cache, then failed naming the cached copy ("its 'sssp' metadata has no 'vertices'"),
    and the next run warned that the copy was unreadable and ingested it again; the
    ingested ``.ss`` Parquet file failed alike.  Both now say what the file is."""
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.ingest import ingest

    src = tmp_path / name
    if name.endswith(".ss"):
        src.write_bytes((ROME.parent / name).read_bytes())
    else:
        src.write_text("p aux sp co 2\nv 1 10 20\nv 2 30 40\n")
    for _ in range(2):
        with pytest.raises(InputError, match=f"{name}: .*{what}.*not a graph"):
            sssp.load_graph(src, cache_dir=tmp_path)
    assert not list(tmp_path.glob(f"{name}.*.parquet"))  # nothing ingested into the cache
    ingest(src, tmp_path / "aux.parquet")
    with pytest.raises(InputError, match=f"aux.parquet: .*{what}.*not a graph"):
        sssp.read_parquet(tmp_path / "aux.parquet")
    with pytest.raises(InputError, match=f"aux.parquet: .*{what}.*not a graph"):
        sssp.load_graph(tmp_path / "aux.parquet")


def test_a_cached_tarball_is_not_read_again_to_find_its_format(tmp_path, monkeypatch):
    """The refusal of a ``.ss``/``.co`` given as the graph found the input's format from
    its content on every load_graph: a tarball's is found by reading the whole archive,
    so a cache hit (milliseconds) decompressed the whole tarball first.  Its format is
    looked at only where it is about to be ingested."""
    import tarfile

    from gpu_sssp.pipeline.ingest import _source

    tgz = tmp_path / "rome99.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(ROME, arcname="rome99.gr")
    first = sssp.load_graph(tgz, cache_dir=tmp_path)
    opened = []
    real = _source.Source._open_tar
    monkeypatch.setattr(_source.Source, "_open_tar", lambda self: opened.append(self.path) or real(self))
    again = sssp.load_graph(tgz, cache_dir=tmp_path)
    assert again.fingerprint == first.fingerprint
    assert opened == []  # read from the cache, the tarball left unread


def test_solve_names_an_out_of_range_source_among_python_ints(rome):
    """``solve(g, [0, 2**63])``: NumPy makes that list float64, and the call was refused
    as "sources must be integers, got float64" (a TypeError) although every source is an
    int; it is the ValueError of an index out of range, naming it, as ``[2**63]`` alone."""
    for bad in ([0, 2**63], [-1, 2**63], (1, 2**64 + 3), [0, np.uint64(2**63)]):
        with pytest.raises(UsageError, match=r"source index -?\d+ out of range for rome99"):
            sssp.solve(rome, bad)
        with pytest.raises(UsageError, match=r"target index -?\d+ out of range for rome99"):
            sssp.solve(rome, [0], targets=bad)
    with pytest.raises(OptionError, match="sources must be integers, got float64"):
        sssp.solve(rome, [0, 1.5])
    # in range, the same mix is solved (int64 and uint64 are float64 together to NumPy)
    assert sssp.solve(rome, [np.int64(1), np.uint64(2)], distances=False).sources.tolist() == [1, 2]


def test_a_result_table_given_as_the_graph_names_its_columns(rome, tmp_path):
    """A distance table (``sssp solve -o``, ``Result.to_table()``) given as the graph was
    refused as "its 'sssp' metadata has no 'vertices'"; it is named for what it holds."""
    import pyarrow.parquet as pq

    t = sssp.solve(rome, [0]).to_table()
    meta = {b"sssp": b'{"graph": "rome99", "id_base": 1}'}
    pq.write_table(t.replace_schema_metadata(meta), tmp_path / "d.parquet")
    from gpu_sssp.pipeline.errors import InputError

    with pytest.raises(InputError, match=r"d.parquet: not an sssp edge list: its columns are source, vertex, "
                                         r"distance, predecessor \(an edge list has src, dst, weight"):
        sssp.read_parquet(tmp_path / "d.parquet")


def test_a_study_of_a_graph_with_another_id_base_is_refused_before_any_folder(tmp_path):
    """``Graph.from_edges(..., id_base=2)`` solves, but a study's workers read the graph
    from a Parquet edge list (ids 0- or 1-based): the study failed once its folder and
    cluster existed, reading back the ``graph.parquet`` it had written."""
    import gpu_sssp
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.kernels.graph import Graph

    g = Graph.from_edges([0, 1], [1, 2], [1, 2], n=3, id_base=2, name="based2")
    with pytest.raises(UsageError, match="based2's id_base is 2: build it with id_base=0 or 1"):
        gpu_sssp.study(g, sources="all", out=tmp_path / "o", cpu_workers=1)
    assert not (tmp_path / "o").exists()
