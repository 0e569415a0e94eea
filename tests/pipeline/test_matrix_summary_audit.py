"""Matrix study summaries and target inputs: cases found by an audit of ``sssp study
--targets`` (no cluster: ``summarize`` and ``plan_targets`` are called directly)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

INF = np.inf
#: a 5-vertex graph's distances (row: source), vertex 5 reaches nobody else
D = np.array([[0, 3, 5, 9, 2],
              [4, 0, 2, 6, 6],
              [7, 3, 0, 4, 9],
              [3, 6, 8, 0, 5],
              [INF, INF, INF, INF, 0]], dtype=np.float64)


def _stats(rows, cols):
    """Per-source statistics over the vertices ``cols`` (0-based), as the kernels write them."""
    out = {k: [] for k in ("source", "reached", "eccentricity", "sum_distance", "mean_distance", "kernel_ms",
                           "relaxations", "algorithm", "device")}
    for s in rows:
        d = D[s, np.unique(cols)]
        fin = d[np.isfinite(d)]
        others = len(fin) - int(s in cols)
        out["source"].append(s + 1)
        out["reached"].append(len(fin))
        out["eccentricity"].append(float(fin.max()) if len(fin) else float("nan"))
        out["sum_distance"].append(float(fin.sum()))
        out["mean_distance"].append(float(fin.sum()) / others if others else float("nan"))
        out["kernel_ms"].append(0.0)
        out["relaxations"].append(0)
        out["algorithm"].append("dijkstra")
        out["device"].append("cpu")
    return pa.table(out)


def _plan(targets, stats_over, sources):
    from gpu_sssp.pipeline.targets import TargetPlan

    g = SimpleNamespace(n=len(D), m=12, name="five", has_negative=False, id_base=1)
    tp = None if targets is None else TargetPlan(np.asarray(targets, dtype=np.int64), {"kind": "list"})
    return SimpleNamespace(graph=g, targets=tp, stats_over=stats_over, study_id="x",
                           sources=SimpleNamespace(count=len(sources)))


@pytest.mark.parametrize("sources", [[0, 1, 2, 3], [0, 1, 2, 3, 4]])
def test_every_vertex_a_target_gives_the_diameter_and_radius(sources):
    """``--targets all`` (or a targets file naming every vertex, repeats or not) with
    ``--stats-over targets`` has its statistics over every vertex: the summary gives the
    diameter and radius a study without targets gives, not "not computed: statistics over
    the targets only (--stats-over all)" (which sent the user to a full sweep for the
    same numbers)."""
    from gpu_sssp.pipeline.study.summary import summarize

    every = [4, 0, 1, 2, 3, 0]  # every vertex, in another order, one repeated
    over_targets = summarize(_stats(sources, every), _plan(every, "targets", sources))
    plain = summarize(_stats(sources, range(5)), _plan(None, None, sources))
    for key in ("diameter", "radius", "closeness_max", "closeness_min", "eccentricity_max",
                "sources_reaching_all"):
        assert over_targets[key] == plain[key], key
    assert over_targets["stats_over"] == "targets" and over_targets["distinct_targets"] == 5
    assert "not computed" not in str(over_targets["diameter"])


def test_some_vertices_as_targets_still_leave_the_diameter_out():
    from gpu_sssp.pipeline.study.summary import summarize

    sources, targets = [0, 1, 2, 3], [1, 3, 1]
    s = summarize(_stats(sources, targets), _plan(targets, "targets", sources))
    assert s["diameter"]["kind"].startswith("not computed") and s["radius"]["kind"].startswith("not computed")
    assert s["sources_reaching_all"] == 4  # every source reaches both distinct targets
    # closeness over the targets reached other than the source (vertices 1 and 3): from 2,
    # 2 / (3 + 4); from 1 (a target), 1 / 6
    assert s["closeness_max"] == {"value": 2 / 7, "source": 3}


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_targets_name_is_named(bad):
    """``--targets ''`` (an unset shell variable) said ``.: is a folder, not a targets
    file``: the empty name is said for what it is."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.targets import plan_targets

    g = SimpleNamespace(n=5, id_base=1, name="five")
    with pytest.raises(UsageError, match="empty"):
        plan_targets(g, targets=bad)
