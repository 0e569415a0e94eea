"""`sssp study --scheduler ADDR`: the dashboard line is the scheduler's word.  A
scheduler started without a dashboard (``dask scheduler --no-dashboard``) printed a
``dashboard: http://.../status`` line all the same, a page that answers 404."""
from __future__ import annotations

import re

import pytest

from tests.pipeline.test_cluster_dashboard import _get, scheduler
from tests.pipeline.test_study_support import grid_parquet
from tests.workflows.test_cli_study import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _study(graph, address, out, capsys) -> str:
    rc = main(["study", str(graph), "--random", "5", "--seed", "1", "--scheduler", address, "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    return text


def test_attached_study_without_a_dashboard_claims_no_url(tmp_path, capsys):
    graph = grid_parquet(tmp_path, 8, 8)
    with scheduler(workers=1, dashboard=False) as address:
        text = _study(graph, address, tmp_path / "o", capsys)
        lines = [line for line in text.splitlines() if line.startswith("dashboard:")]
        assert lines == ["dashboard: none (the scheduler was started without one, e.g. dask scheduler "
                         "--no-dashboard)"], text
        assert "http://" not in text and "/sssp" not in text, text


def test_attached_study_with_a_dashboard_prints_its_link(tmp_path, capsys):
    graph = grid_parquet(tmp_path, 8, 8)
    with scheduler(workers=1, dashboard=True) as address:
        text = _study(graph, address, tmp_path / "o", capsys)
        m = re.search(r"^dashboard: (http://\S+/status) \(this study: (http://\S+/sssp)\)$", text, re.M)
        assert m, text
        assert _get(m.group(1)) == 200 and _get(m.group(2)) == 200
