"""pipeline.cluster: the dashboard link a study prints is the scheduler's word.

Dask's ``client.dashboard_link`` names the scheduler's HTTP server, which every
scheduler starts (health checks, metrics): one started without a dashboard (``dask
scheduler --no-dashboard``, here ``Scheduler(dashboard=False)`` with Dask's default
routes, which is what that command builds) still gave a link, whose ``/status`` is a 404.
"""
from __future__ import annotations

import contextlib
import logging
import urllib.error
import urllib.request

import dask.config
import pytest

from gpu_sssp.pipeline import cluster as cl
from gpu_sssp.pipeline.cluster import describe_cluster, start_cluster

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@contextlib.contextmanager
def scheduler(workers: int = 0, **scheduler_kwargs):
    """A scheduler on 127.0.0.1 (TCP, its HTTP server on a free port) with ``workers``
    in-process worker threads; yields its address."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, protocol="tcp",
                      host="127.0.0.1", dashboard_address="127.0.0.1:0", scheduler_kwargs=scheduler_kwargs,
                      silence_logs=logging.WARNING) as cluster:
        yield cluster.scheduler_address


def test_attached_scheduler_without_dashboard_gives_no_link():
    with scheduler(dashboard=False) as address, start_cluster(scheduler=address) as handle:
        dask_link = handle.client.dashboard_link
        assert dask_link and _get(dask_link) == 404  # what Dask reports, and what it is
        assert handle.dashboard_link is None
        assert handle.dashboard() == {"link": None, "note": cl.NO_DASHBOARD, "study_page": None}


def test_attached_scheduler_with_dashboard_gives_its_link_and_the_study_page():
    with scheduler(dashboard=True) as address, start_cluster(scheduler=address) as handle:
        got = handle.dashboard()
        assert got["link"] == handle.client.dashboard_link and got["note"] is None
        assert _get(got["link"]) == 200
        assert got["study_page"] == got["link"][: -len("/status")] + "/sssp"


def test_a_dashboard_under_a_prefix_is_linked_there():
    """``dask scheduler --dashboard-prefix /dash``: Dask's link says ``/status`` (a 404);
    the study page (a route of its own, pipeline.dashboard) stays at the root."""
    with scheduler(dashboard=True, http_prefix="/dash") as address, start_cluster(scheduler=address) as handle:
        assert _get(handle.client.dashboard_link) == 404
        got = handle.dashboard()
        assert got["link"].endswith("/dash/status") and _get(got["link"]) == 200
        assert got["study_page"] == got["link"][: -len("/dash/status")] + "/sssp"


def test_a_scheduler_without_bokeh_gives_no_link():
    """Dask's page for a dashboard it cannot draw ("Dask needs bokeh ...") is no dashboard."""
    routes = [*dask.config.get("distributed.scheduler.http.routes"), "distributed.http.scheduler.missing_bokeh"]
    with dask.config.set({"distributed.scheduler.http.routes": routes}):
        with scheduler(dashboard=False) as address, start_cluster(scheduler=address) as handle:
            assert _get(handle.client.dashboard_link) == 200  # the "install bokeh" page
            assert handle.dashboard() == {"link": None, "note": cl.NO_BOKEH, "study_page": None}


def test_a_scheduler_that_cannot_be_asked_is_looked_at_over_http(monkeypatch):
    monkeypatch.setattr(cl, "scheduler_dashboard", lambda client: None)
    with scheduler(dashboard=False) as address, start_cluster(scheduler=address) as handle:
        assert handle.dashboard()["link"] is None
    with scheduler(dashboard=True) as address, start_cluster(scheduler=address) as handle:
        assert handle.dashboard()["link"] == handle.client.dashboard_link


def test_describe_cluster_says_the_same():
    with scheduler(workers=1, dashboard=False) as address, start_cluster(scheduler=address) as handle:
        info = describe_cluster(handle)
        assert info["dashboard"] is None and info["study_page"] is None
        assert info["dashboard_note"] == cl.NO_DASHBOARD
    # a local cluster started without one, as asked: nothing to say
    with start_cluster(cpu_workers=1, dashboard=False) as handle:
        info = describe_cluster(handle)
        assert info["dashboard"] is None and info["dashboard_note"] is None


def test_study_page_keeps_what_is_before_the_dashboard_path():
    assert cl.study_page("http://h:1/status") == "http://h:1/sssp"
    assert cl.study_page("http://h:1/dash/status", "/dash/status") == "http://h:1/sssp"
    # a proxied link (distributed.dashboard.link) keeps the proxy's path
    assert cl.study_page("https://hub/user/a/proxy/8787/status") == "https://hub/user/a/proxy/8787/sssp"


def test_study_page_links_to_dask_status_only_where_there_is_one():
    from gpu_sssp.pipeline.dashboard import render_page

    assert '<a href="status">Dask status</a>' in render_page({"studies": []})
    assert '<a href="/dash/status">Dask status</a>' in render_page({"studies": []}, dashboard="/dash/status")
    assert "Dask status" not in render_page({"studies": []}, dashboard=None)


def test_the_study_pages_status_link_is_relative_so_that_it_holds_behind_a_proxy():
    """The /sssp page's link to Dask's status page: ``status`` (``dash/status`` under a
    prefix), relative to /sssp at the server's root; an absolute ``/status`` led a page
    opened through a proxy's path (``https://hub/user/a/proxy/8787/sssp``) to
    ``https://hub/status``."""
    from gpu_sssp.pipeline.dashboard import BOARD, StudyBoard

    for kwargs, want in (({}, 'href="status"'), ({"http_prefix": "/dash"}, 'href="dash/status"')):
        with scheduler(dashboard=True, **kwargs) as address, start_cluster(scheduler=address) as handle:
            handle.client.register_plugin(StudyBoard(), name=BOARD)
            page = handle.dashboard()["study_page"]
            with urllib.request.urlopen(page + "?refresh=0", timeout=10) as r:
                html = r.read().decode()
            assert want + ">Dask status</a>" in html, html[-600:]
