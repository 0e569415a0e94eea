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
