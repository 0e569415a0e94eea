"""The study pipeline on a local CPU cluster: results equal SciPy's, outputs, resume,
refusals, a worker killed mid-study."""
from __future__ import annotations

import json
import logging
import os
import signal
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.pipeline.test_study_support import cpu_client, grid_parquet, local_cpu_cluster, rome_parquet, scipy_stats, write_edge_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def client():
    yield from cpu_client(2)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tmp_path_factory.mktemp("study-data")


def _run(client, graph_path, out, *, resume=False, **kw):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study, run_study

    on_batch = kw.pop("on_batch", None)
    g = read_parquet(graph_path)
    src_kw = {k: kw.pop(k) for k in ("sources", "ids", "random", "seed", "sources_file", "order") if k in kw}
    sp = plan_sources(g, **src_kw)
    plan = plan_study(g, graph_path, sp, out=out, **kw)
    summary = run_study(client, plan, resume=resume, backend="cpu", on_batch=on_batch)
    return g, plan, summary


def _plugin_holds_graph(fingerprint, dask_worker=None):
    from gpu_sssp.pipeline.plugins import _plugins

    found = _plugins(dask_worker, fingerprint)  # with or without the hierarchy (phast)
    return bool(found) and all(p.graph is not None and p.graph.fingerprint == fingerprint for p in found)


def _graph_id(fingerprint, dask_worker=None):
    from gpu_sssp.pipeline.plugins import _plugins

    return id(_plugins(dask_worker, fingerprint)[0].graph)


def _stats(out):
    t = pq.read_table(out / "stats")
    return t.sort_by("source")


def test_all_sources_rome99_equals_scipy(client, data, tmp_path):
    path = rome_parquet(data)
    g, plan, s = _run(client, path, tmp_path / "study", sources="all", batch_size=128)
    t = _stats(tmp_path / "study")
    assert t.num_rows == g.n
    src = t.column("source").to_numpy()
    assert (src == np.arange(g.n) + g.id_base).all()  # every source exactly once
    reached, ecc, total, _ = scipy_stats(g, src - g.id_base)
    assert (t.column("reached").to_numpy() == reached).all()
    assert (t.column("eccentricity").to_numpy() == ecc).all()
    assert (t.column("sum_distance").to_numpy().astype(np.int64) == total).all()
    # the README's figures for vertex 1: all reachable, sum 116,006,476, max 69,102
    row = t.filter(t.column("source").to_numpy() == 1)
    assert row.column("reached")[0].as_py() == 3353
    assert row.column("sum_distance")[0].as_py() == 116_006_476
    assert row.column("eccentricity")[0].as_py() == 69_102
    assert s["complete"] and s["sources_solved"] == g.n
    assert s["diameter"]["kind"] == "exact" and s["diameter"]["value"] == ecc.max()
    assert s["radius"]["value"] == ecc.min()
    close = (reached - 1) / total
    assert s["closeness_max"]["source"] == int(src[np.argmax(close)])
    assert set(t.column("worker").to_pylist()) <= {"0", "1"}
    m = json.loads((tmp_path / "study" / "manifest.json").read_text())
    assert m["status"] == "complete" and m["graph"]["fingerprint"] == g.fingerprint
    assert m["sources"]["kind"] == "all" and m["versions"]["distributed"]
    assert json.loads((tmp_path / "study" / "summary.json").read_text())["study_id"] == plan.study_id
    lines = (tmp_path / "study" / "journal.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["batch"] for x in lines) == list(range(len(plan.batches)))


def test_closeness_of_sources_reaching_others_at_distance_zero_is_infinite(client, tmp_path):
    """0 <-> 1 by zero-weight arcs, 2 -> 0 weight 5: sources 0 and 1 reach each other at
    distance 0, so their closeness (reached-1)/sum is infinite; the summary says so
    (it used to report source 2's 0.2 as the largest, leaving 0 and 1 out unsaid)."""
    path = write_edge_parquet(tmp_path / "zero.parquet", np.array([0, 1, 2]), np.array([1, 0, 0]),
                              np.array([0, 0, 5], dtype=np.int64), n=3, id_base=0)
    _, _, s = _run(client, path, tmp_path / "study", sources="all", algorithm="dijkstra")
    cmax = s["closeness_max"]
    assert cmax["value"] is None and cmax["kind"].startswith("infinite: 2 sources reach"), cmax
    assert cmax["source"] in (0, 1) and cmax["sources"] == 2
    assert cmax["largest_finite"] == {"value": 0.2, "source": 2}  # 2 others at 5 each: 2/10
    assert s["closeness_min"] == {"value": 0.2, "source": 2}
    json.dumps(s, allow_nan=False)  # still strict JSON


def _not_strongly_connected(tmp_path):
    """1 -> 2 -> 3 -> 1 (weights 2, 3, 1) and 1 -> 4 (5): 4 reaches nothing else."""
    return write_edge_parquet(tmp_path / "g4.parquet", np.array([1, 2, 3, 1]), np.array([2, 3, 1, 4]),
                              np.array([2, 3, 1, 5], dtype=np.int64), n=4, id_base=1)


def test_sampled_sources_that_miss_a_vertex_prove_an_infinite_diameter(client, tmp_path):
    """A solved source that does not reach every vertex proves the graph is not strongly
    connected, so the diameter is infinite whether every vertex was a source or a sample;
    the summary said 'lower bound' (or '-' with no note) for a sample (audit 3, C8)."""
    from gpu_sssp.workflows.cmd_study import summary_table
    from rich.console import Console

    path = _not_strongly_connected(tmp_path)
    _, _, s = _run(client, path, tmp_path / "a", ids=[1, 4], algorithm="dijkstra")
    # source 1 reaches all (eccentricity 5: 1->3 and 1->4), source 4 only itself
    assert s["diameter"] == {"value": None, "kind": "infinite (not strongly connected)", "source": 4,
                             "largest_finite": {"value": 5, "source": 1, "kind": "lower bound"}}
    assert s["radius"] == {"value": 5, "source": 1, "kind": "upper bound"}
    saved = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert saved["diameter"] == s["diameter"]
    _, _, s = _run(client, path, tmp_path / "b", ids=[4], algorithm="dijkstra")
    assert s["diameter"] == {"value": None, "kind": "infinite (not strongly connected)", "source": 4}
    assert s["radius"] == {"value": None, "kind": "unknown: no sampled source reaches every vertex"}
    console = Console(record=True, width=200)
    console.print(summary_table(s, True))
    line = next(x for x in console.export_text().splitlines() if "diameter" in x)
    assert "infinite (not strongly connected)" in line and "4" in line, line
    # every vertex a source: the same form as before, with a source that misses a vertex
    _, _, s = _run(client, path, tmp_path / "c", sources="all", algorithm="dijkstra")
    assert s["diameter"]["value"] is None and s["diameter"]["kind"] == "infinite (not strongly connected)"
    assert s["diameter"]["source"] == 4 and s["diameter"]["largest_finite"]["value"] == 9  # 2 -> 4: 3 + 1 + 5
    assert s["radius"] == {"value": 5, "source": 1, "kind": "exact"}


def test_summary_of_sampled_and_all_sources_diameter_forms():
    """summarize() itself, no cluster: a sample where every source reaches all keeps its
    lower bound; every vertex a source and none reaching all makes the radius infinite too."""
    from types import SimpleNamespace

    import pyarrow as pa

    from gpu_sssp.pipeline.study.summary import summarize

    def summary(kind, reached, ecc):
        k = len(reached)
        stats = pa.table({"source": np.arange(1, k + 1), "reached": np.array(reached),
                          "eccentricity": np.array(ecc, dtype=float), "sum_distance": np.full(k, 10.0),
                          "kernel_ms": np.zeros(k), "relaxations": np.zeros(k, dtype=np.int64),
                          "algorithm": ["dijkstra"] * k, "device": ["cpu"] * k})
        g = SimpleNamespace(n=3, m=3, name="g", id_base=1)
        plan = SimpleNamespace(graph=g, sources=SimpleNamespace(how={"kind": kind}, count=k), study_id="x",
                               targets=None)
        return summarize(stats, plan)

    s = summary("list", [3, 3], [4, 7])
    assert s["diameter"] == {"value": 7, "source": 2, "kind": "lower bound"}
    assert s["radius"] == {"value": 4, "source": 1, "kind": "upper bound"}
    s = summary("random", [3, 2], [4, 7])
    assert s["diameter"]["kind"] == "infinite (not strongly connected)" and s["diameter"]["source"] == 2
    s = summary("all", [1, 2, 2], [0, 3, 3])
    assert s["diameter"] == {"value": None, "kind": "infinite (not strongly connected)", "source": 1}
    assert s["radius"] == {"value": None, "kind": "infinite (no vertex reaches every other)"}
    json.dumps(s, allow_nan=False)


def _summary(kind, reached, ecc, sdist, *, n=3, negative=False, targets=None, sources=None):
    """summarize() on a crafted stats table (sources 1..k unless given), no cluster."""
    from types import SimpleNamespace

    import pyarrow as pa

    from gpu_sssp.pipeline.study.summary import summarize

    k = len(reached)
    stats = pa.table({"source": np.array(sources if sources is not None else np.arange(1, k + 1)),
                      "reached": np.array(reached, dtype=np.int64),
                      "eccentricity": np.array(ecc, dtype=float), "sum_distance": np.array(sdist, dtype=float),
                      "kernel_ms": np.zeros(k), "relaxations": np.zeros(k, dtype=np.int64),
                      "algorithm": ["bellman-ford"] * k, "device": ["cpu"] * k})
    g = SimpleNamespace(n=n, m=3, name="g", id_base=1, has_negative=negative)
    tp = None if targets is None else SimpleNamespace(targets=np.array(targets), count=len(targets))
    plan = SimpleNamespace(graph=g, sources=SimpleNamespace(how={"kind": kind}, count=k), study_id="x",
                           targets=tp, stats_over="targets" if targets is not None else "")
    s = summarize(stats, plan)
    json.dumps(s, allow_nan=False)
    return s


def _table_lines(s):
    from rich.console import Console

    from gpu_sssp.workflows.cmd_study import summary_table

    console = Console(record=True, width=250)
    console.print(summary_table(s, True))
    return console.export_text().splitlines()


def test_closeness_on_a_graph_with_negative_weights_is_not_defined():
    """Audit 4, #1: with negative arcs (bellman-ford) a sum of 0 is not 'all at distance
    0' (distances -5 and +5), and a negative sum (-4) was dropped without a word; the
    summary now says closeness is not defined, in summary.json and the table."""
    # negz.gr: 1 -> 2 (-5), 1 -> 3 (5): source 1 reaches 3 with sum 0, eccentricity 5
    s = _summary("all", [3, 1, 1], [5, 0, 0], [0, 0, 0], negative=True)
    # negc.gr: source 1 reaches 4, sum -4; source 2 reaches 2 (sum 1) ...
    c = _summary("all", [4, 2, 1, 2], [5, 1, 0, 1], [-4, 1, 0, 1], n=4, negative=True)
    for x in (s, c):
        want = {"value": None, "kind": "not defined: the graph has negative arc weights"}
        assert x["closeness_max"] == want and x["closeness_min"] == want, x
        rows = [ln for ln in _table_lines(x) if "closeness" in ln]
        assert len(rows) == 2 and all("not defined: the graph has negative arc weights" in r for r in rows), rows
    # the same stats on a graph without negative weights keep their figures
    c = _summary("all", [4, 2, 1, 2], [5, 1, 0, 1], [4, 1, 0, 1], n=4)
    assert c["closeness_max"] == {"value": 1, "source": 2} and c["closeness_min"] == {"value": 0.75, "source": 1}


def test_infinite_closeness_needs_every_distance_zero():
    """Sum 0 alone does not make closeness infinite: the eccentricity must be 0 too."""
    # source 2 (crafted: eccentricity 5 with a sum of 0) is not at distance 0 from all it reaches
    s = _summary("all", [3, 3, 1], [0, 5, 0], [0, 0, 0])
    assert s["closeness_max"]["sources"] == 1 and s["closeness_max"]["source"] == 1, s["closeness_max"]
    assert "1 source reaches every vertex it reaches at distance 0" in s["closeness_max"]["kind"]


def test_matrix_closeness_wording_says_targets():
    """Audit 4, #7: with --stats-over targets the table's closeness note and the infinite
    closeness text speak of targets, not vertices."""
    # targets 2, 3 (file ids; id_base 1 -> internal 1, 2): source 1 not a target reaches
    # both at 4 + 6; source 2 a target reaches 2 and 3 (others 1) at 0
    s = _summary("random", [2, 2], [6, 0], [10, 0], n=5, targets=[1, 2], sources=[1, 2])
    assert s["closeness_max"]["kind"] == ("infinite: 1 source reaches every target it reaches at "
                                          "distance 0 (zero-weight arcs)"), s["closeness_max"]
    assert s["closeness_max"]["largest_finite"] == {"value": 0.2, "source": 1}
    assert s["closeness_min"] == {"value": 0.2, "source": 1}
    rows = [ln for ln in _table_lines(s) if "closeness" in ln]
    assert "target" in rows[0] and "vertex" not in rows[0], rows
    assert "targets reached other than the source / sum of distances" in rows[1], rows
    assert "(reached-1)" not in rows[1], rows


def test_radius_of_a_sample_with_no_source_reaching_all_is_unknown():
    """Audit 4, #7: a sample where no source reaches every vertex gives no bound on the
    radius: summary.json says so (it had "radius": null) and the table's note too."""
    s = _summary("random", [2, 1], [4, 0], [4, 0])
    assert s["radius"] == {"value": None, "kind": "unknown: no sampled source reaches every vertex"}
    line = next(ln for ln in _table_lines(s) if ln.lstrip("│ ").startswith("radius"))
    assert "unknown: no sampled source reaches every vertex" in line, line
    s = _summary("all", [2, 1, 1], [4, 0, 0], [4, 0, 0])
    assert s["radius"] == {"value": None, "kind": "infinite (no vertex reaches every other)"}


def test_second_study_keeps_the_loaded_graph(client, data, tmp_path):
    path = rome_parquet(data)
    g, _, _ = _run(client, path, tmp_path / "a", random=40, seed=1, batch_size=16)
    before = client.run(_graph_id, g.fingerprint)
    _, _, s = _run(client, path, tmp_path / "b", random=40, seed=2, batch_size=16)
    assert s["complete"] and client.run(_graph_id, g.fingerprint) == before


def test_random_sources_grid_with_distances(client, data, tmp_path):
    path = grid_parquet(data, 120, 120)
    out = tmp_path / "study"
    g, plan, s = _run(client, path, out, random=300, seed=11, batch_size=32,
                      outputs="distances,predecessors")
    t = _stats(out)
    assert t.num_rows == 300
    src = t.column("source").to_numpy()
    expect = np.sort(np.random.default_rng(11).choice(g.n, size=300, replace=False))
    assert (src == expect + g.id_base).all()
    reached, ecc, total, dist = scipy_stats(g, src - g.id_base)
    assert (t.column("reached").to_numpy() == reached).all()
    assert (t.column("eccentricity").to_numpy() == ecc).all()
    assert (t.column("sum_distance").to_numpy().astype(np.int64) == total).all()
    assert s["diameter"]["kind"] == "lower bound" and s["radius"]["kind"] == "upper bound"
    d = pq.read_table(out / "distances")
    assert d.num_rows == int(reached.sum())
    one = d.filter(d.column("source").to_numpy() == src[0]).sort_by("vertex")
    assert np.array_equal(one.column("distance").to_numpy(), dist[0][np.isfinite(dist[0])])
    # predecessor invariant dist[pred] + w(pred, v) == dist[v]
    pred = one.column("predecessor").to_numpy()
    v = one.column("vertex").to_numpy()
    has = pred >= 0
    full = dist[0]
    A = g.to_scipy()
    w = np.asarray(A[pred[has], v[has]]).ravel()
    assert np.allclose(full[pred[has]] + w, full[v[has]])


def test_wide_distances(client, data, tmp_path):
    path = grid_parquet(data, 30, 30)
    out = tmp_path / "study"
    g, plan, s = _run(client, path, out, ids=[0, 17, 899], batch_size=2, outputs="distances",
                      distance_form="wide", order="given")
    b0 = pq.read_table(out / "distances" / "batch-000000.parquet")
    assert b0.column_names == ["vertex", "0", "17"]
    _, _, _, dist = scipy_stats(g, [0, 17])
    assert np.array_equal(b0.column("17").to_numpy(), dist[1])


def test_resume_and_refusals(client, data, tmp_path):
    from gpu_sssp.pipeline.study import StudyError

    path = grid_parquet(data, 30, 30)
    out = tmp_path / "study"
    _run(client, path, out, random=100, seed=1, batch_size=10)
    first = _stats(out)
    # a study folder is never overwritten without --resume
    with pytest.raises(StudyError, match="already holds a study"):
        _run(client, path, out, random=100, seed=1, batch_size=10)
    # a resume of another study is refused, naming what differs
    with pytest.raises(StudyError, match="seed=: folder has 1, asked 2"):
        _run(client, path, out, random=100, seed=2, batch_size=10, resume=True)
    with pytest.raises(StudyError, match="algorithm"):
        _run(client, path, out, random=100, seed=1, batch_size=10, resume=True, algorithm="bellman-ford")
    # simulate a crash: one journal line lost (its files complete: adopted, not solved
    # again), one stats file lost, one both, a torn temporary, an empty stats file
    lines = (out / "journal.jsonl").read_text().splitlines()
    keep = [x for x in lines if json.loads(x)["batch"] not in (2, 5)]
    (out / "journal.jsonl").write_text("\n".join(keep) + "\n")
    (out / "stats" / "batch-000005.parquet").unlink()
    (out / "stats" / "batch-000007.parquet").unlink()
    (out / "stats" / ".batch-000008.parquet.tmp-00000000beef").write_bytes(b"torn")
    (out / "stats" / "batch-000009.parquet").write_bytes(b"")  # renamed but never flushed
    redone = []
    _, plan, s = _run(client, path, out, random=100, seed=1, batch_size=10, resume=True,
                      on_batch=lambda meta, st: redone.append(meta["batch"]))
    assert sorted(redone) == [5, 7, 9]
    entries = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    assert [e["batch"] for e in entries if e.get("adopted")] == [2]
    again = _stats(out)
    assert again.num_rows == 100 and s["complete"]
    for col in ("source", "reached", "eccentricity", "sum_distance", "mean_distance", "algorithm"):
        assert again.column(col).equals(first.column(col))
    assert not list(out.rglob("*.tmp-*"))
    # a folder that holds other files is not a study folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(StudyError, match="not empty"):
        _run(client, path, other, random=5, seed=1)


def test_distance_form_only_matters_where_distances_are_written(client, data, tmp_path):
    """A statistics-only study writes the same files in either distance form: a resume
    that names the other form is the same study (it was refused as "a different study"
    although no distance file existed).  With distances the form still differs."""
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.folder import identity_difference

    path = grid_parquet(data, 20, 20)
    out = tmp_path / "stats-only"
    _run(client, path, out, random=30, seed=3, batch_size=10, distance_form="wide")
    _, _, s = _run(client, path, out, random=30, seed=3, batch_size=10, distance_form="long", resume=True)
    assert s["complete"]
    out2 = tmp_path / "with-distances"
    _run(client, path, out2, random=6, seed=3, batch_size=3, outputs="distances", distance_form="wide")
    with pytest.raises(StudyError, match="different study"):
        _run(client, path, out2, random=6, seed=3, batch_size=3, outputs="distances", distance_form="long",
             resume=True)
    stats_only = {"outputs": ["stats"], "distance_form": "wide"}
    assert identity_difference(stats_only, dict(stats_only, distance_form="long")) == []
    assert identity_difference(stats_only, {"outputs": ["stats", "distances"], "distance_form": "long"}) \
        == ["outputs", "distance_form"]


def test_worker_killed_mid_study(data, tmp_path):
    """A worker process dies mid-study: its batches run elsewhere, nothing is lost or doubled."""
    path = rome_parquet(data)
    cluster, client = local_cpu_cluster()
    try:
        pids = client.run(os.getpid)
        killed = []

        last = []

        def on_batch(meta, study):
            last[:] = [time.perf_counter()]
            if not killed and len(study.done) >= 3:
                victim = next(iter(pids.values()))
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

        g, plan, s = _run(client, path, tmp_path / "study", sources="all", batch_size=16, on_batch=on_batch)
        assert killed
        # the study ends once its last batch is in: not after a 30 s wait on the lost
        # worker's old address (where the streams' intervals were put back)
        assert time.perf_counter() - last[0] < 20
        t = _stats(tmp_path / "study")
        src = t.column("source").to_numpy()
        assert (src == np.arange(g.n) + g.id_base).all()
        reached, ecc, total, _ = scipy_stats(g, src - g.id_base)
        assert (t.column("sum_distance").to_numpy().astype(np.int64) == total).all()
        assert s["complete"]
        # the restarted worker got the graph from the plugin, not from a task's fallback
        client.wait_for_workers(2, timeout=30)
        # the study now ends as soon as its last batch is in, possibly while the restarted
        # worker's plugin is still loading the graph (in its own thread): wait for that
        from gpu_sssp.pipeline.plugins import wait_ready

        assert all(client.run(wait_ready, g.fingerprint, 60).values())
        held = client.run(_plugin_holds_graph, g.fingerprint)
        assert len(held) == 2 and all(held.values())
    finally:
        client.close()
        cluster.close()


class _StreamsClient:
    """run_on_scheduler names the workers there now; run records whom it asks."""

    def __init__(self, live):
        self.live, self.asked = live, []

    def run_on_scheduler(self, fn, **kw):
        return list(self.live)

    def run(self, fn, *, workers=None, **kw):
        self.asked.append((sorted(workers), kw))
        return {}


def test_stream_intervals_are_put_back_only_on_the_workers_still_there():
    """A worker lost during the study (restarted under a new address) is not asked: its
    old address made the scheduler wait 30 s (the connect timeout) and log an ERROR."""
    from gpu_sssp.pipeline.study.run import _restore_worker_streams

    c = _StreamsClient(["tcp://a:1", "tcp://c:3"])
    _restore_worker_streams(c, {"tcp://a:1": 0.002, "tcp://b:2": 0.002, "tcp://c:3": None}, "t")
    assert [w for w, _kw in c.asked] == [["tcp://a:1"]]
    assert c.asked[0][1]["restore"] == 0.002 and c.asked[0][1]["on_error"] == "return"
    c = _StreamsClient([])
    _restore_worker_streams(c, {"tcp://b:2": 0.002}, "t")
    assert c.asked == []


class _Stream:
    def __init__(self, interval):
        self.interval = interval


class _Server:
    """A worker (``batched_stream``) or a scheduler (``stream_comms``, ``client_comms``)."""

    def __init__(self):
        self.batched_stream = _Stream(0.002)
        self.stream_comms = {"tcp://w:1": _Stream(0.005)}
        self.client_comms = {"c1": _Stream(0.002), "c2": _Stream(0.002)}


def test_overlapping_studies_of_two_clients_put_the_shared_streams_back_to_dasks():
    """Two clients' studies overlap on a shared cluster: the second took the first's prompt
    interval for the old one and put it back at its end, after the first had restored
    Dask's, so the workers' streams (and the scheduler's to them) stayed prompt for good."""
    from gpu_sssp.pipeline.study.run import _scheduler_streams, _worker_stream

    w, sch = _Server(), _Server()
    a = _worker_stream(w, interval=0.0005, token="a")
    sa = _scheduler_streams(sch, client_id="c1", interval=0.0005, token="a")
    b = _worker_stream(w, interval=0.0005, token="b")
    sb = _scheduler_streams(sch, client_id="c2", interval=0.0005, token="b")
    _worker_stream(w, restore=a, token="a")  # the first study ends: the second still runs
    _scheduler_streams(sch, client_id="c1", restore=sa, token="a")
    assert w.batched_stream.interval == 0.0005 and sch.stream_comms["tcp://w:1"].interval == 0.0005
    assert sch.client_comms["c1"].interval == 0.002  # that client's own stream is back
    _worker_stream(w, restore=b, token="b")  # the second ends
    _scheduler_streams(sch, client_id="c2", restore=sb, token="b")
    assert w.batched_stream.interval == 0.002
    assert sch.stream_comms["tcp://w:1"].interval == 0.005
    assert sch.client_comms["c2"].interval == 0.002


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_resuming_a_finished_study_on_a_given_client_logs_no_scheduler_error(client, data, tmp_path):
    """Nothing to do: no plugin registered, so none unregistered (the scheduler logged
    "Exception while handling op unregister_worker_plugin ... does not exist")."""
    import gpu_sssp

    path = rome_parquet(data)
    out = tmp_path / "done"
    gpu_sssp.study(path, client=client, ids=[5, 3], out=out)
    seen = _Records()
    loggers = [logging.getLogger(n) for n in ("distributed", "distributed.core", "distributed.scheduler")]
    for lg in loggers:
        lg.addHandler(seen)
    try:
        s = gpu_sssp.study(path, client=client, ids=[5, 3], out=out, resume=True)
    finally:
        for lg in loggers:
            lg.removeHandler(seen)
    assert s["complete"]
    bad = [r.getMessage() for r in seen.records if r.levelno >= logging.ERROR]
    assert bad == []


def test_start_up_row_names_the_hierarchy_built_inside_the_wall():
    """The client's hierarchy build is part of the study's wall (and of the time outside
    kernels): all NY on two CPU workers spent 7.5 s of its 91 s there, and the start-up
    row named only the cluster, the workers and the first task (shown as "first batch":
    129 batches, 31 s, on CPU workers)."""
    s = _summary("all", [3, 3, 3], [5, 4, 5], [7, 6, 7])
    s["timings"]["startup"] = {"cluster_start_s": 0.94, "client_hierarchy_s": 7.47, "register_s": 0.02,
                               "hierarchy_file": "/x/g.parquet.ch.npz", "workers_ready_s": 8.17,
                               "first_batch_s": 31.23}
    row = next(line for line in _table_lines(s) if "start-up" in line)
    assert "cluster 0.94 s, hierarchy 7.47 s, workers ready 8.17 s, first task done 31.23 s" in row
    s["timings"]["startup"].update(client_hierarchy_s=0.0001, hierarchy_file=None)  # no phast: no hierarchy
    row = next(line for line in _table_lines(s) if "start-up" in line)
    assert "hierarchy" not in row and "cluster 0.94 s, workers ready" in row


def test_a_complete_study_leaves_no_temporary_file_of_a_writer_killed_during_the_run(client, data, tmp_path):
    # a worker killed (SIGKILL, out of memory) while it wrote a batch file leaves a
    # `.batch-*.parquet.tmp-*` beside the files; Dask re-runs the batch elsewhere and the
    # study completes. The temporary used to stay in the finished folder (only the start
    # of a later run removed them): found with `kill -9` on a local CPU worker mid-study
    path = grid_parquet(data, 30, 30)
    out = tmp_path / "study"
    torn = out / "distances" / ".batch-000003.parquet.tmp-0123456789ab"

    def worker_killed_mid_write(meta, stats):
        if meta["batch"] == 0 and not torn.exists():
            torn.parent.mkdir(parents=True, exist_ok=True)
            torn.write_bytes(b"PAR1 torn")

    _, _, s = _run(client, path, out, random=40, seed=1, batch_size=5, outputs="distances",
                   distance_form="wide", on_batch=worker_killed_mid_write)
    assert s["complete"]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert not list(out.rglob("*.tmp-*"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_putting_stream_intervals_back_does_not_wait_for_a_worker_dying_meanwhile():
    """A worker that dies between the question of which workers are there and the call
    (a killed worker the scheduler has not removed yet, as the study ends) was asked all
    the same, and the scheduler retried its refused connection for the whole connect
    timeout: about one run in six of a study whose worker was killed ended 30 s late."""
    import socket
    import time

    from distributed import Client, LocalCluster

    from gpu_sssp.pipeline.study import run as run_mod

    with socket.socket() as s:  # a port nobody listens on: connections to it are refused
        s.bind(("127.0.0.1", 0))
        dead = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    cluster = LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None)
    client = Client(cluster)
    try:
        live = list(client.scheduler_info()["workers"])

        class _Dying:  # the scheduler still names the dead worker when asked
            def __getattr__(self, name):
                return getattr(client, name)

            def run_on_scheduler(self, fn, **kw):
                return live + [dead]

        t0 = time.perf_counter()
        run_mod._restore_worker_streams(_Dying(), {a: 0.002 for a in live + [dead]}, "t")
        assert time.perf_counter() - t0 < run_mod.RESTORE_WAIT_S + 2
    finally:
        client.close()
        cluster.close()
