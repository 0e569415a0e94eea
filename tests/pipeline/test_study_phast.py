"""A CPU study with phast: the client builds and caches the hierarchy once, every worker
loads it from the cache file (plugin), the batches solve with phast, exactly."""
from __future__ import annotations


import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import _parse_gr, cpu_client, rome_parquet, rome_source, scipy_stats, write_edge_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _holds_hierarchy(fingerprint, dask_worker=None):
    from gpu_sssp.kernels import hierarchy
    from gpu_sssp.pipeline.plugins import plugin_name

    plugin = dask_worker.plugins.get(plugin_name(fingerprint, hierarchy=True))  # a phast study's plugin
    return plugin is not None and plugin.graph is not None and hierarchy.has_hierarchy(plugin.graph)


@pytest.fixture(scope="module")
def client():
    yield from cpu_client(2)


def _plan(path, out, random=None, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study

    g = read_parquet(path)
    chosen = plan_sources(g, random=random, seed=3) if random else plan_sources(g, sources="all")
    return g, plan_study(g, path, chosen, out=out, **kw)


def test_study_with_phast(client, tmp_path, monkeypatch):
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.study import run_study

    path = rome_parquet(tmp_path)
    g, plan = _plan(path, tmp_path / "study", algorithm="phast", batch_size=100)
    cache = path.with_name(path.name + ".ch.npz")
    assert not cache.exists()
    s = run_study(client, plan, backend="cpu")
    assert s["complete"] and cache.exists()  # the client built and cached it
    assert all(client.run(_holds_hierarchy, g.fingerprint).values())
    t = pq.read_table(tmp_path / "study" / "stats").sort_by("source")
    assert set(t.column("algorithm").to_pylist()) == {"phast"}
    src = t.column("source").to_numpy() - g.id_base
    reached, ecc, total, _ = scipy_stats(g, src)
    assert (t.column("reached").to_numpy() == reached).all()
    assert (t.column("eccentricity").to_numpy() == ecc).all()
    assert (t.column("sum_distance").to_numpy().astype(np.int64) == total).all()
    # the workers read the client's file: same arrays, the client's build time
    h_client, why = ph.read_cache(g, cache)
    assert h_client is not None, why


def test_auto_study_of_few_sources_keeps_dijkstra(client, tmp_path):
    from gpu_sssp.kernels import auto
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.study import run_study

    # rome99 with other weights: not the graph (fingerprint) the workers may hold already
    n, s, d, w = _parse_gr(rome_source())
    path = write_edge_parquet(tmp_path / "rome-x3.parquet", s, d, 3 * w, n=n, id_base=1)
    g, plan = _plan(path, tmp_path / "study", random=100, batch_size=50)
    # CPU workers preload the kernels, so the build alone is the fixed cost: all of
    # rome99's 3,353 sources take phast, 100 stay below the threshold (~510)
    assert 100 < auto.cpu_phast_min_sources(g, warm=True) < g.n
    assert ph.study_uses_phast(g, g.n, "cpu")
    assert ph.prepare_study(g, plan.sources.count, "cpu") is None
    s = run_study(client, plan, backend="cpu")
    assert s["complete"] and not path.with_name(path.name + ".ch.npz").exists()
    t = pq.read_table(tmp_path / "study" / "stats")
    assert set(t.column("algorithm").to_pylist()) == {"dijkstra"}


@pytest.mark.parametrize("outputs, size", [("stats", 256), ("distances", 64), ("stats,predecessors", 64)])
def test_cpu_phast_batches_are_large_for_statistics_only(tmp_path, outputs, size):
    """256-source batches on CPU workers are for statistics-only phast studies (README):
    a study with distance rows keeps 64, as on GPUs it keeps the batched engine's size.
    A batch's rows are held at once: 300 NY sources with predecessors in the 2 batches of
    150 that 256 laid out peaked at 3.4 GB (29 s), in batches of 64 at 1.7 GB (18 s)."""
    from gpu_sssp.pipeline.study.plan import CPU_BATCH_SIZE, PHAST_CPU_BATCH_SIZE

    assert (CPU_BATCH_SIZE, PHAST_CPU_BATCH_SIZE) == (64, 256)
    _g, plan = _plan(rome_parquet(tmp_path), tmp_path / "o", random=1024, algorithm="phast",
                     outputs=outputs, batch_size="auto")
    assert plan.resolve_batch_size(["cpu", "cpu"]) == size
