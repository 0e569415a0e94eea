"""A running study on the Dask dashboard: ``/sssp`` and ``/sssp.json`` (the study in
sources and sources/s), Dask's own Status page (task keys named by method and batch),
loaded over HTTP while the study runs; screenshots with headless Chromium where one is
installed (that part is skipped otherwise)."""
from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.pipeline.test_study_support import rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(url: str, png: Path, *, size=(1280, 860), wait_s: float = 4.0, timeout: float = 60) -> Path:
    """A PNG of ``url`` taken by headless Chromium after ``wait_s`` seconds of real time.

    Driven over the DevTools protocol (with Tornado's websocket client, which Dask brings):
    ``chromium --screenshot`` shoots at the load event, or after a *virtual* time budget
    that elapses at once while the page waits on its websocket, before Bokeh has drawn
    Dask's pages."""
    import asyncio
    import base64
    import re
    import tempfile
    import time
    import urllib.request

    from tornado.websocket import websocket_connect

    exe = browser()
    if exe is None:
        raise FileNotFoundError("no Chromium/Chrome installed")

    async def shoot(port: str):
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t.get("type") == "page")
        conn = await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=64 << 20)
        ids = iter(range(1, 1 << 30))

        async def call(method, **params):
            mid = next(ids)
            conn.write_message(json.dumps({"id": mid, "method": method, "params": params}))
            while True:
                msg = await conn.read_message()
                if msg is None:
                    raise RuntimeError("chromium closed the DevTools connection")
                msg = json.loads(msg)
                if msg.get("id") == mid:
                    return msg.get("result", {})

        await call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1,
                   mobile=False)
        await call("Page.navigate", url=url)
        await asyncio.sleep(wait_s)
        got = await call("Page.captureScreenshot", format="png")
        conn.close()
        return base64.b64decode(got["data"])

    # Chromium's helper processes may still write into the profile for a moment after the
    # browser exits ("Directory not empty" on cleanup): the folder is removed best effort
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                 "--disable-dev-shm-usage", f"--window-size={size[0]},{size[1]}",
                                 "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            port, deadline = None, time.monotonic() + timeout
            while port is None and time.monotonic() < deadline:
                line = proc.stderr.readline().decode("utf-8", "replace")
                if not line and proc.poll() is not None:
                    break
                m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
                port = m.group(1) if m else None
            if port is None:
                raise RuntimeError("chromium did not open its DevTools port")
            data = asyncio.run(asyncio.wait_for(shoot(port), timeout))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    png.write_bytes(data)
    return png


def get(url: str, timeout: float = 20) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode("utf-8", "replace")


def run_and_look(graph, out: Path, *, shots: Path | None = None, pages=("sssp", "status"), after: int = 1,
                 block: bool = True, **study_kw) -> dict:
    """Run a study on a local CPU cluster with its dashboard on a free port; after ``after``
    batches are journaled, load its pages over HTTP (and screenshot them into ``shots``).

    ``block``: the client waits for the pages (the study is then surely still running
    when they are read; its in-flight tasks go on); otherwise they are read in a thread
    while the study goes on (for pictures of a busy cluster).  Returns what was seen and
    the summary."""
    import threading

    from gpu_sssp.pipeline.study.run import study

    seen: dict = {}

    def on_cluster(info, plan, folder):
        seen["base"] = info["dashboard"].rsplit("/", 1)[0]
        seen["study_id"] = plan.study_id

    def look():
        base = seen["base"]
        seen["json"] = json.loads(get(f"{base}/sssp.json")[1])
        for page in pages:
            seen[page] = get(f"{base}/{page}")
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            seen["shots"] = [screenshot(f"{base}/{page}" + ("?refresh=0" if page == "sssp" else ""),
                                        shots / f"{page}.png") for page in pages]

    def on_batch(meta, folder):
        if "journaled" in seen or len(folder.done) < after:
            return
        seen["journaled"] = sum(len(folder.plan.batches[i]) for i in folder.done)
        if block:
            look()
        else:
            seen["thread"] = threading.Thread(target=look)
            seen["thread"].start()

    kw = dict(cpu_workers=2, dashboard=True, dashboard_address="127.0.0.1:0")
    kw.update(study_kw)
    try:
        seen["summary"] = study(graph, out=out, on_cluster=on_cluster, on_batch=on_batch, **kw)
    finally:
        if "thread" in seen:
            seen["thread"].join()
    return seen


@pytest.fixture
def rome(tmp_path):
    return rome_parquet(tmp_path)


def _check(seen, with_shots: bool):
    sid = seen["study_id"]
    studies = {s["study_id"]: s for s in seen["json"]["studies"]}
    st = studies[sid]
    assert st["status"] == "running"  # loaded while the study ran
    # rome99's sources on CPU workers: phast (warm workers), dijkstra without ch-router
    assert st["sources_total"] == 3353 and st["prefix"] in ("phast", "dijkstra")
    # counted on the scheduler from the tasks' transitions: at least what the client journaled
    assert st["sources_done"] >= seen["journaled"] > 0
    assert sum(w["sources"] for w in st["workers"].values()) == st["sources_done_run"]
    code, page = seen["sssp"]
    assert code == 200 and sid in page and "sources/s" in page and f"{st['prefix']}-batch-" in page
    code, status = seen["status"]
    assert code == 200 and "Dask" in status
    if with_shots:
        for png in seen["shots"]:
            head = png.read_bytes()[:8]
            assert head == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_study_pages_over_http_while_it_runs(rome, tmp_path):
    seen = run_and_look(rome, tmp_path / "s", sources="all", batch_size=8)
    _check(seen, with_shots=False)
    assert seen["summary"]["complete"]


@pytest.mark.skipif(browser() is None, reason="no Chromium installed for the screenshots")
def test_study_pages_screenshots(rome, tmp_path):
    seen = run_and_look(rome, tmp_path / "s", shots=tmp_path / "shots", sources="all", batch_size=8)
    _check(seen, with_shots=True)


def test_board_after_the_study_and_page_rendering(rome, tmp_path):
    """The finished study stays on the page with its result; the page renders with no
    study at all; progress is counted once per task key."""
    from gpu_sssp.pipeline.dashboard import StudyBoard, render_page

    seen = run_and_look(rome, tmp_path / "s", sources="all", batch_size=64, pages=("sssp",))
    assert seen["summary"]["complete"]
    assert "No study has run" in render_page({"studies": []})
    b = StudyBoard()
    b.add_study({"study_id": "abc", "graph": "g", "vertices": 10, "prefix": "phast", "algorithm": "auto",
                 "sources_total": 100, "sources_before": 0, "batch_size": 16, "batches": 7, "out": "o", "kind": "all"})
    for _ in range(2):  # a task stored twice (recomputed) counts once
        b.transition("phast-batch-000005-000006-abc", "processing", "memory", worker="tcp://w:1",
                     startstops=[{"action": "compute", "start": 1.0, "stop": 1.5}])
    b.transition("phast-batch-000000-000000-zzz", "processing", "memory", worker="w")  # another study
    st = b.status()["studies"][0]
    assert st["sources_done"] == 20 and st["tasks_done"] == 1  # batches 5 (16) and 6 (last: 4)
    assert st["workers"]["tcp://w:1"]["busy_s"] == pytest.approx(0.5)
    b.end_study("abc", "complete", {"wall_s": 1.0})
    assert "complete" in render_page(b.status())


def test_a_cpu_chunks_batches_are_counted_as_they_end_and_once():
    """A CPU chunk reports each batch as it ends (``partial``): the page counts its
    sources then, and the chunk's own report or completion adds only the rest (a partial
    report counted as the whole chunk, or the chunk counted again, would show sources
    that are not solved)."""
    from gpu_sssp.pipeline.dashboard import REPORTS, StudyBoard

    b = StudyBoard()
    b.add_study({"study_id": "abc", "graph": "g", "vertices": 10, "prefix": "dijkstra", "algorithm": "dijkstra",
                 "sources_total": 100, "sources_before": 0, "batch_size": 16, "batches": 7, "out": "o", "kind": "all"})
    key = "dijkstra-batch-000002-000004-abc"
    for _ in range(2):  # (a chunk run twice reports twice)
        b.log_event(f"{REPORTS}abc", {"result": {"task": key, "partial": True, "worker": "w",
                                                 "batches": [{"batch": 2}]}})
    st = b.status()["studies"][0]
    assert st["sources_done"] == 16 and st["batches_done_run"] == 1 and st["tasks_done"] == 0
    b.log_event(f"{REPORTS}abc", {"result": {"task": key, "partial": True, "worker": "w", "batches": [{"batch": 3}]}})
    b.log_event(f"{REPORTS}abc", {"result": {"task": key, "worker": "w", "task_ms": 1500.0}})
    b.transition(key, "processing", "memory", worker="w", startstops=[{"action": "compute", "start": 1.0, "stop": 2.5}])
    st = b.status()["studies"][0]
    assert st["sources_done"] == 48 and st["batches_done_run"] == 3 and st["tasks_done"] == 1
    assert st["workers"]["w"] == {"tasks": 1, "sources": 48, "busy_s": pytest.approx(1.5)}
