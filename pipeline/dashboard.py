"""A study on the Dask dashboard: its own page ``/sssp`` and ``/sssp.json`` on the scheduler.

Dask's own pages already show a study by batch: its task keys are
``<method>-batch-<first>-<last>-<study id>`` (``phast-batch-000120-000127-3f2a...``), so the
Status page's progress bars and task stream and the Groups page name the method and the
batches.  What Dask cannot show is the study in its own terms: sources solved out of
planned, sources per second, each worker's share.  :class:`StudyBoard`, a scheduler plugin
registered by the study's client, adds two routes to the scheduler's HTTP server (the one
serving the dashboard, same port):

- ``/sssp``: an HTML page (reloads itself every 2 s, ``?refresh=0`` not; no JavaScript): per study a progress
  bar in sources, sources/s, ETA, per-worker tasks, sources and busy time, and the
  sources-over-time curve;
- ``/sssp.json``: the same as JSON (for scripts and tests).

Why not a Bokeh page: Dask builds its Bokeh server when the scheduler starts, from a
module-level table of pages; a page can only be added by code imported before that (a
``--preload`` on ``dask scheduler``).  A plugin's HTTP routes work on any running
scheduler, the user's own ``dask scheduler`` included, with nothing to pass at start-up,
and do not depend on Bokeh's internals (``bokeh<3.10``).  Progress is counted on the
scheduler from the tasks' transitions (``processing -> memory``), so it costs the study no
extra messages: the client sends the study's description once at its start
(:func:`announce`) and its result once at its end (:func:`conclude`).

The scheduler must be able to import this package (it unpickles the plugin); where it
cannot, the study runs without the page (a warning says so).
"""
from __future__ import annotations

import html
import json
import time
from collections import OrderedDict

from distributed.diagnostics.plugin import SchedulerPlugin

BOARD = "sssp-board"
#: the Dask event topics on which a study's tasks report their batches (one per run:
#: ``pipeline.study.run._Reports``, ``pipeline.study.task._report``)
REPORTS = "sssp-done-"
#: studies kept on the page (the oldest finished ones are dropped)
KEEP = 20


class _Study:
    def __init__(self, info: dict):
        self.info = dict(info)
        self.started = time.time()
        self.ended = None
        self.status = "running"
        self.done_run = 0
        self.tasks = 0
        self.batches = 0
        self.seen: set = set()
        self.batches_seen: set = set()  # (a CPU chunk's batches are counted as each ends)
        self.workers: dict[str, dict] = {}
        self.history: list[tuple[float, int]] = [(0.0, 0)]
        self.result: dict = {}

    def sources_of(self, first: int, last: int) -> int:
        from gpu_sssp.pipeline.sources import batch_bounds

        bs, total = int(self.info["batch_size"]), int(self.info["sources_total"])
        workers, merge = int(self.info.get("batch_workers", 1)), bool(self.info.get("batch_merge", True))
        try:
            return (batch_bounds(last, total, bs, workers, merge)[1]
                    - batch_bounds(first, total, bs, workers, merge)[0])
        except (IndexError, ValueError):
            return 0

    def add(self, key, first: int, last: int, worker: str, compute_s: float, *, batches=None) -> None:
        """Count task ``key`` (batches ``first..last``) once, less its batches already
        counted; ``batches``: only those of its batches (a CPU chunk's batch reported as it
        ended: the task itself is counted, with its busy time, when it ends)."""
        if key in self.seen:
            return
        if batches is None:
            self.seen.add(key)
        new = [b for b in (range(first, last + 1) if batches is None else batches) if b not in self.batches_seen]
        self.batches_seen.update(new)
        k = sum(self.sources_of(b, b) for b in new)
        self.done_run += k
        self.batches += len(new)
        w = self.workers.setdefault(worker, {"tasks": 0, "sources": 0, "busy_s": 0.0})
        w["sources"] += k
        if batches is None:
            self.tasks += 1
            w["tasks"] += 1
            w["busy_s"] += compute_s
        t = time.time() - self.started
        if len(self.history) >= 400:  # keep the curve small: every other point
            self.history = self.history[::2]
        self.history.append((round(t, 3), self.done_run))

    def status_dict(self) -> dict:
        now = self.ended or time.time()
        elapsed = max(now - self.started, 1e-9)
        before = int(self.info.get("sources_before", 0))
        total = int(self.info["sources_total"])
        rate = self.done_run / elapsed if self.done_run else None
        left = total - before - self.done_run
        return {
            **self.info,
            "status": self.status,
            "sources_done": before + self.done_run,
            "sources_done_run": self.done_run,
            "batches_done_run": self.batches,
            "tasks_done": self.tasks,
            "elapsed_s": elapsed,
            "sources_per_s": rate,
            "eta_s": (left / rate) if rate and self.status == "running" else None,
            "workers": self.workers,
            "history": self.history,
            "result": self.result,
        }


class StudyBoard(SchedulerPlugin):
    """The scheduler side of the ``/sssp`` page (see the module docstring)."""

    idempotent = True
    name = BOARD

    def __init__(self):
        self.studies: "OrderedDict[str, _Study]" = OrderedDict()
        self.scheduler = None

    def __getstate__(self):  # nothing of a client's copy travels (never falsy: see pickle)
        return {"board": 1}

    def __setstate__(self, state):
        self.__init__()

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        app = getattr(scheduler, "http_application", None)
        if app is None or getattr(app, "_sssp_board", False):
            return
        app.add_handlers(r".*", [(r"/sssp/?", _PageHandler, {"scheduler": scheduler}),
                                 (r"/sssp\.json", _JsonHandler, {"scheduler": scheduler})])
        app._sssp_board = True

    # ------------------------------------------------------------------ studies
    def add_study(self, info: dict) -> None:
        self.studies[str(info["study_id"])] = _Study(info)
        self.studies.move_to_end(str(info["study_id"]))
        while len(self.studies) > KEEP:
            self.studies.popitem(last=False)

    def end_study(self, study_id: str, status: str, result: dict | None) -> None:
        st = self.studies.get(str(study_id))
        if st is not None:
            st.status = status
            st.ended = time.time()
            st.result = dict(result or {})

    def _count(self, key, worker, compute_s, batches=None) -> None:
        """Count task ``key`` (``<prefix>-batch-<first>-<last>-<study id>``) once (or
        ``batches`` of it, :meth:`_Study.add`)."""
        if not isinstance(key, str) or "-batch-" not in key:
            return
        parts = key.rsplit("-", 3)
        if len(parts) != 4:
            return
        st = self.studies.get(parts[3])
        if st is None:
            return
        try:
            first, last = int(parts[1]), int(parts[2])
        except ValueError:
            return
        st.add(key, first, last, worker, compute_s, batches=batches)

    def log_event(self, topic, msg) -> None:
        """A task's report of its batches (topic :data:`REPORTS`...): counted as it passes
        on its way to the client, before the task's completion (which follows its
        statistics files' flush), so that the page is never behind the study's journal."""
        if not isinstance(topic, str) or not topic.startswith(REPORTS) or not isinstance(msg, dict):
            return
        res = msg.get("result")
        if isinstance(res, dict) and res.get("partial"):  # one batch of a CPU chunk still running
            try:
                batches = [int(m["batch"]) for m in res.get("batches", ())]
            except (KeyError, TypeError, ValueError):
                return
            self._count(res.get("task"), str(res.get("worker", "?")), 0.0, batches=batches)
        elif isinstance(res, dict):
            self._count(res.get("task"), str(res.get("worker", "?")), float(res.get("task_ms", 0.0)) / 1e3)

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if finish != "memory" or start != "processing" or not isinstance(key, str) or "-batch-" not in key:
            return
        addr = kwargs.get("worker", "?")
        ws = self.scheduler.workers.get(addr) if self.scheduler is not None else None
        worker = str(ws.name) if ws is not None and ws.name is not None else str(addr)
        compute = 0.0
        for ss in kwargs.get("startstops") or ():
            if ss.get("action") == "compute":
                compute += float(ss["stop"]) - float(ss["start"])
        self._count(key, worker, compute)

    def status(self) -> dict:
        return {"studies": [s.status_dict() for s in reversed(self.studies.values())], "now": time.time()}


def _board_of(scheduler) -> StudyBoard | None:
    b = scheduler.plugins.get(BOARD)
    return b if isinstance(b, StudyBoard) else None


try:
    from tornado import web

    class _JsonHandler(web.RequestHandler):
        def initialize(self, scheduler):
            self.scheduler = scheduler

        def get(self):
            b = _board_of(self.scheduler)
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            self.write(json.dumps(b.status() if b is not None else {"studies": []}, default=str))

    class _PageHandler(web.RequestHandler):
        def initialize(self, scheduler):
            self.scheduler = scheduler

        def get(self):
            b = _board_of(self.scheduler)
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            try:
                refresh = max(0, int(self.get_argument("refresh", "2")))
            except ValueError:
                refresh = 2
            self.write(render_page(b.status() if b is not None else {"studies": []}, refresh=refresh,
                                   dashboard=_status_path(self.scheduler)))

    def _status_path(scheduler) -> str | None:
        """The page's link to this scheduler's Dask status page, relative to ``/sssp``
        (``status``, ``PREFIX/status`` under a dashboard prefix), so that it also
        holds behind a proxy that serves the scheduler under a path of its own; None
        where the scheduler serves no dashboard."""
        from gpu_sssp.pipeline.cluster import _dashboard_probe

        try:
            path = _dashboard_probe()(dask_scheduler=scheduler).get("path")
        except Exception:  # Dask's or Tornado's internals moved: the plain link
            return "status"
        return path.lstrip("/") if path else None
except ImportError:  # pragma: no cover - tornado comes with distributed
    pass


# ---------------------------------------------------------------------- client side
def announce(client, plan, study, prefix: str) -> str:
    """Register the board (once per scheduler) and show this study on it; returns its id."""
    client.register_plugin(StudyBoard(), name=BOARD)
    info = {
        "study_id": plan.study_id, "graph": plan.graph.name, "vertices": int(plan.graph.n),
        "prefix": prefix, "algorithm": plan.algorithm, "sources_total": int(plan.sources.count),
        "sources_before": int(study.sources_done), "batch_size": int(plan.batch_size),
        "batch_workers": int(plan.batch_workers), "batch_merge": bool(plan.merge_tail),
        "batches": len(plan.batches), "out": str(plan.out), "kind": plan.sources.how.get("kind"),
    }
    client.run_on_scheduler(_announce, info)
    return plan.study_id


def conclude(client, study_id: str, status: str, summary: dict | None = None) -> None:
    """Mark the study finished on the board, with its headline figures."""
    result = {}
    if summary:
        tm = summary.get("timings", {})
        result = {"wall_s": tm.get("wall_s"), "sources_per_s": tm.get("sources_per_s"),
                  "kernel_s": (tm.get("kernel_ms_this_run") or 0.0) / 1e3,
                  "tail_s": tm.get("cluster", {}).get("tail_s"),
                  "diameter": (summary.get("diameter") or {}).get("value")}
    client.run_on_scheduler(_conclude, study_id, status, result)


def _announce(info, dask_scheduler=None):
    b = _board_of(dask_scheduler)
    if b is not None:
        b.add_study(info)


def _conclude(study_id, status, result, dask_scheduler=None):
    b = _board_of(dask_scheduler)
    if b is not None:
        b.end_study(study_id, status, result)


# ---------------------------------------------------------------------- the page
def _fmt_s(v) -> str:
    if v is None:
        return "-"
    v = float(v)
    return f"{v:.2f} s" if v < 120 else f"{v / 60:.1f} min"


def _curve(history, total: int, w: int = 360, h: int = 70) -> str:
    if len(history) < 2 or total <= 0:
        return ""
    tmax = max(t for t, _ in history) or 1.0
    pts = " ".join(f"{t / tmax * w:.1f},{h - d / total * h:.1f}" for t, d in history)
    return (f'<svg width="{w}" height="{h}" class="curve"><rect width="{w}" height="{h}" fill="#f7f7f7"/>'
            f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{pts}"/></svg>')


def render_page(status: dict, refresh: int = 2, dashboard: str | None = "status") -> str:
    """The ``/sssp`` page for :meth:`StudyBoard.status`; it reloads itself every
    ``refresh`` seconds (``/sssp?refresh=0``: never, e.g. for a screenshot).
    ``dashboard``: the link to Dask's status page, None for none (a scheduler that serves
    no dashboard)."""
    e = html.escape
    rows = []
    for s in status.get("studies", []):
        total = max(int(s["sources_total"]), 1)
        done = int(s["sources_done"])
        pct = 100.0 * done / total
        rate = s.get("sources_per_s")
        workers = "".join(
            f"<tr><td>{e(str(w))}</td><td>{d['tasks']:,}</td><td>{d['sources']:,}</td>"
            f"<td>{d['busy_s']:.2f} s</td></tr>" for w, d in sorted(s.get("workers", {}).items()))
        res = s.get("result") or {}
        extra = ""
        if res:
            extra = (f"<p>wall {_fmt_s(res.get('wall_s'))}, kernel {_fmt_s(res.get('kernel_s'))}, "
                     f"tail {_fmt_s(res.get('tail_s'))}"
                     + (f", diameter {e(str(res['diameter']))}" if res.get("diameter") is not None else "")
                     + "</p>")
        rows.append(f"""
<div class="study {e(s['status'])}">
  <h2>study {e(s['study_id'])} &middot; {e(str(s['graph']))} ({s['vertices']:,} vertices) &middot;
      <span class="tag">{e(s['prefix'])}</span> &middot; {e(s['status'])}</h2>
  <div class="bar"><div class="fill" style="width:{pct:.2f}%"></div>
    <span>{done:,} / {total:,} sources ({pct:.1f}%)</span></div>
  <p><b>{(f'{rate:,.0f}' if rate else '-')} sources/s</b> &middot; elapsed {_fmt_s(s['elapsed_s'])}
     &middot; ETA {_fmt_s(s.get('eta_s'))} &middot; {s['tasks_done']:,} tasks, {s['batches_done_run']:,} of
     {s['batches']:,} batches of {s['batch_size']:,} this run &middot; task keys
     <code>{e(s['prefix'])}-batch-&lt;first&gt;-&lt;last&gt;-{e(s['study_id'])}</code> &middot; out
     <code>{e(s['out'])}</code></p>
  {extra}
  <div class="row"><table><tr><th>worker</th><th>tasks</th><th>sources</th><th>busy</th></tr>{workers}</table>
  {_curve(s.get('history', []), total - int(s.get('sources_before', 0)))}</div>
</div>""")
    body = "".join(rows) or "<p>No study has run on this scheduler yet.</p>"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8">{f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ''}
<title>sssp studies</title>
<style>
body {{ font-family: sans-serif; margin: 16px; color: #222; }}
h1 {{ font-size: 20px; margin: 0 0 8px 0; }} h2 {{ font-size: 15px; margin: 4px 0; }}
.study {{ border: 1px solid #ccc; border-radius: 4px; padding: 8px 12px; margin-bottom: 12px; }}
.bar {{ position: relative; height: 24px; background: #eee; border-radius: 3px; }}
.fill {{ height: 100%; background: #3b8ed0; border-radius: 3px; }}
.complete .fill {{ background: #2ca02c; }} .failed .fill {{ background: #d62728; }}
.bar span {{ position: absolute; left: 8px; top: 3px; font-size: 13px; }}
.tag {{ background: #ffe9a8; padding: 0 4px; border-radius: 3px; }}
table {{ border-collapse: collapse; font-size: 13px; margin-right: 24px; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right; }}
.row {{ display: flex; align-items: flex-start; }} p {{ font-size: 13px; margin: 6px 0; }}
</style></head>
<body><h1>Shortest-path studies on this cluster</h1>
<p>{f'<a href="{e(dashboard)}">Dask status</a> &middot; ' if dashboard else ''}<a href="sssp.json">sssp.json</a></p>
{body}
</body></html>"""
