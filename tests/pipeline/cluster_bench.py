"""Studies on 1, 2 and 4 GPUs, LocalCUDACluster and separate processes; not collected by pytest.

What issue 19 asks to measure, in one run (about 5-7 minutes on a 4 x H200 host):

- all NY sources and all FLA sources (1,070,376) with the default engine on 1, 2 and 4
  GPUs, with ``sssp study --gpus`` (LocalCUDACluster) and with separate processes
  (``dask scheduler --scheduler-file F`` + ``dask cuda worker --scheduler-file F``, then
  ``sssp study ... --scheduler-file F``);
- 16,384 random FLA sources (seed 1) on 1 and 4 GPUs, both ways;

each study a ``sssp study`` process of its own (what a user runs; its whole wall time is
recorded too), statistics only.  The graphs are ingested once with weights U[1,1000]
seed 7 and their contraction hierarchies built once (cached beside the Parquet files)
before any timing.  An untimed warm-up study first fills CuPy's on-disk kernel cache
(its start-up is reported as the cold one).

Per study (JSON rows and a markdown table under ``--out``): study wall and solve wall
(start-up apart), sources/s, kernel time, time outside kernels, per-GPU busy and kernel
time, start-up (cluster start, the hierarchy on the client, the workers' graph and
hierarchy loading, kernel compilation, warm-up, the first batch), tail (last GPU's finish
minus the first's), scheduler overhead (time a ready GPU had no task), tasks and
batches; 8 sources of each study checked against SciPy on the client, and the NY
diameter/radius compared across the configurations.  Then 4-GPU vs 1-GPU speedups against
the targets (3.8x for all sources, 3.5x for 16,384 FLA sources; outside kernels <= 5%).

Robust: every step has a time limit; a failed step is recorded and the next one runs;
steps are skipped (and listed) when the overall ``--budget-s`` would be exceeded.

GPU (from the repository root, wheels installed as in tests/gpu_session.sh)::

    bash tests/pipeline/cluster_bench.sh            # writes $OUT/cluster-bench.{md,json}

CPU check of the script itself (local CPU clusters and ``dask worker`` processes, rome99
and a small random set, 1 and 2 workers)::

    python tests/pipeline/cluster_bench.py --cpu --out /tmp/cb
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def env_for(extra: dict | None = None) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    pp = env.get("PYTHONPATH", "")
    if str(REPO) not in pp.split(os.pathsep):
        env["PYTHONPATH"] = pp + os.pathsep + str(REPO) if pp else str(REPO)
    env.update(extra or {})
    return env


def sssp_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "gpu_sssp.workflows.cli", *args]


def dask_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "dask", *args]


def cuda_worker_cmd() -> list[str]:
    """``dask cuda worker`` (dask-cuda's ``dask`` subcommand; its own module where the
    subcommand is not registered, e.g. wheels unpacked with ``pip --target``)."""
    probe = subprocess.run(dask_cmd("cuda", "worker", "--help"), capture_output=True, env=env_for(), timeout=60)
    if probe.returncode == 0:
        return dask_cmd("cuda", "worker")
    return [sys.executable, "-m", "dask_cuda.cli", "worker"]


def run(cmd, *, timeout: float, log: Path, env=None, cwd=None) -> tuple[int, float]:
    """Run ``cmd`` in a process group of its own (killed whole on timeout); ``(rc, wall)``."""
    t = time.perf_counter()
    with open(log, "ab") as fh:
        fh.write(("$ " + " ".join(map(str, cmd)) + "\n").encode())
        fh.flush()
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env or env_for(), cwd=cwd,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = 124
    return rc, time.perf_counter() - t


# ---------------------------------------------------------------------- preparation
def prepare(args, work: Path, log: Path) -> dict:
    """Ingest the graphs (weights U[1,1000] seed 7) and build their hierarchies once, in
    parallel processes; returns ``{name: parquet path}``."""
    graphs = {}
    procs = []
    for name, src in args.graph_inputs.items():
        out = work / f"{name}.parquet"
        graphs[name] = out
        code = (
            "import sys, time; from gpu_sssp.pipeline.graph import read_parquet\n"
            "from gpu_sssp.pipeline.ingest import ingest\n"
            "from gpu_sssp.pipeline.hierarchy import load_hierarchy\n"
            "from gpu_sssp.kernels import hierarchy as H\n"
            f"src, out, w = {str(src)!r}, {str(out)!r}, {args.weights!r}\n"
            "t=time.perf_counter()\n"
            "import os\n"
            "if not os.path.exists(out): ingest(src, out, **({'weights': w} if w else {}))\n"
            "g = read_parquet(out); t1=time.perf_counter()\n"
            "why = H.eligible(g) or H.structure(g)\n"
            "h = None if why else load_hierarchy(g)\n"
            "print(f'{out}: ingest {t1-t:.1f} s, hierarchy {time.perf_counter()-t1:.1f} s', "
            "'levels', getattr(h, 'levels', None), why or '')\n"
        )
        plog = log.with_name(f"prepare-{name}.log")
        procs.append((name, subprocess.Popen([sys.executable, "-c", code], env=env_for(),
                                             stdout=open(plog, "wb"), stderr=subprocess.STDOUT), plog))
    for name, p, plog in procs:
        try:
            rc = p.wait(timeout=args.prepare_timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = 124
        say(f"prepare {name}: rc {rc}; {plog.read_text().strip().splitlines()[-1:] if plog.exists() else ''}")
        if rc != 0:
            graphs.pop(name, None)
    return graphs


# ---------------------------------------------------------------------- clusters
class ProcessCluster:
    """``dask scheduler`` + workers as separate processes (``dask cuda worker`` on GPUs:
    one worker per visible GPU; ``dask worker --nworkers N`` on CPUs)."""

    def __init__(self, root: Path, n: int, *, cpu: bool, log: Path, threads: int = 3, timeout: float = 120):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.file = root / "scheduler.json"
        self.file.unlink(missing_ok=True)
        self.procs = []
        self.log = log
        t = time.perf_counter()
        self._spawn(dask_cmd("scheduler", "--scheduler-file", str(self.file), "--host", "127.0.0.1", "--port", "0",
                             "--dashboard-address", "127.0.0.1:0"), {})
        while not self.file.exists():
            if time.perf_counter() - t > timeout or self.procs[0].poll() is not None:
                raise RuntimeError("dask scheduler did not start")
            time.sleep(0.1)
        if cpu:
            self._spawn(dask_cmd("worker", "--scheduler-file", str(self.file), "--nworkers", str(n), "--nthreads",
                                 "1", "--host", "127.0.0.1", "--no-dashboard"), {"SSSP_DISABLE_GPU": "1"})
        else:
            devices = ",".join(str(i) for i in range(n))
            self._spawn(cuda_worker_cmd() + ["--scheduler-file", str(self.file), "--nthreads", str(threads),
                                             "--host", "127.0.0.1", "--no-dashboard"], {"CUDA_VISIBLE_DEVICES": devices})
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=timeout) as c:
            c.wait_for_workers(n, timeout=timeout)
        self.start_s = time.perf_counter() - t

    def _spawn(self, cmd, extra):
        fh = open(self.log, "ab")
        fh.write(("$ " + " ".join(cmd) + "\n").encode())
        fh.flush()
        self.procs.append(subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env_for(extra),
                                           cwd=self.root, start_new_session=True))

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


# ---------------------------------------------------------------------- one study
_GRAPHS: dict = {}


def check_sample(parquet: Path, out: Path, k: int = 8) -> dict:
    """``k`` sources of the study against SciPy's Dijkstra (reached, eccentricity, sum)."""
    import numpy as np
    import pyarrow.parquet as pq

    from gpu_sssp import kernels
    from gpu_sssp.pipeline.graph import read_parquet

    g = _GRAPHS.get(str(parquet))
    if g is None:
        g = _GRAPHS[str(parquet)] = read_parquet(parquet)
    t = pq.read_table(out / "stats", columns=["source", "reached", "eccentricity", "sum_distance"])
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(t.num_rows, size=min(k, t.num_rows), replace=False))
    src = t.column("source").to_numpy()[pick]
    ref = kernels.solve(g, g.to_index(src), method="dijkstra", backend="cpu", distances=False)
    bad = 0
    for j, i in enumerate(pick):
        ok = (int(t.column("reached")[int(i)].as_py()) == int(ref.reached[j])
              and float(t.column("eccentricity")[int(i)].as_py()) == float(ref.eccentricity[j])
              and float(t.column("sum_distance")[int(i)].as_py()) == float(ref.sum_distance[j]))
        bad += not ok
    return {"checked": int(len(pick)), "mismatches": int(bad)}


def study_row(spec: dict, summary: dict, cli_wall: float, check: dict | None) -> dict:
    tm = summary["timings"]
    ct = tm.get("cluster", {})
    st = tm.get("startup", {})
    workers = ct.get("workers", {})
    kernel = tm["kernel_ms_this_run"] / 1e3
    return {
        **{k: spec[k] for k in ("graph", "sources", "mode", "gpus")},
        "complete": summary["complete"], "sources_solved": summary["sources_solved"],
        "algorithms": summary["algorithms"], "devices": summary["devices"],
        "cli_wall_s": cli_wall, "wall_s": tm["wall_s"], "solve_wall_s": tm.get("solve_wall_s"),
        "sources_per_s": tm["sources_per_s"],
        "sources_per_s_solve": (tm["sources_this_run"] / tm["solve_wall_s"]) if tm.get("solve_wall_s") else None,
        "kernel_s": kernel,
        "outside_vs_kernel": tm["outside_kernels_vs_kernel"],
        "outside_vs_kernel_solve": tm.get("outside_kernels_solve_vs_kernel"),
        "busy_s": {w: round(d["busy_s"], 4) for w, d in workers.items()},
        "kernel_s_per_gpu": {w: round(d["kernel_s"], 4) for w, d in workers.items()},
        "tasks_per_gpu": {w: d["tasks"] for w, d in workers.items()},
        "tail_s": ct.get("tail_s"), "scheduler_overhead_s": ct.get("scheduler_overhead_s"),
        "dispatch_s": ct.get("dispatch_s"), "drain_s": ct.get("drain_s"), "tasks": ct.get("tasks"),
        # the GPUs' own clock (CUDA events): summed over GPUs, before the first kernel, idle
        # between kernels, after the last; with the kernels' span they make up solve wall x GPUs
        **{k: ct.get(f"{k}_sum") for k in ("gpu_lead_s", "gpu_gaps_s", "gpu_drain_s", "gpu_busy_s")},
        "batches": tm.get("schedule", {}).get("batches"),
        "startup": st, "per_worker": workers,
        "diameter": (summary.get("diameter") or {}).get("value"),
        "radius": (summary.get("radius") or {}).get("value"),
        "check": check,
    }


def run_study(spec: dict, args, work: Path, log: Path, *, scheduler_file: Path | None) -> dict:
    out = work / "studies" / spec["id"]
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = sssp_cmd("study", str(spec["parquet"]), *spec["source_args"], "--out", str(out), "--no-dashboard")
    if args.batch_size:
        cmd += ["--batch-size", str(args.batch_size)]
    extra = {}
    if scheduler_file is not None:
        cmd = [c for c in cmd if c != "--no-dashboard"] + ["--scheduler-file", str(scheduler_file)]
    elif args.cpu:
        cmd += ["--cpu-workers", str(spec["gpus"])]
        extra["SSSP_DISABLE_GPU"] = "1"
    else:
        cmd += ["--gpus", ",".join(str(i) for i in range(spec["gpus"]))]
    rc, wall = run(cmd, timeout=args.step_timeout, log=log, env=env_for(extra))
    if rc != 0 or not (out / "summary.json").exists():
        return {**{k: spec[k] for k in ("graph", "sources", "mode", "gpus")}, "error": f"rc {rc}", "cli_wall_s": wall}
    summary = json.loads((out / "summary.json").read_text())
    check = None
    if args.check:
        try:
            check = check_sample(spec["parquet"], out, args.check)
        except Exception as exc:  # the timing row stands; the check failure is recorded
            check = {"error": repr(exc)}
    row = study_row(spec, summary, wall, check)
    # each batch's own stamps (task start, device span, end, write), for the timeline
    jdir = Path(args.out) / "journals"
    jdir.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copyfile(out / "journal.jsonl", jdir / f"{spec['id']}.jsonl")
        shutil.copyfile(out / "summary.json", jdir / f"{spec['id']}.summary.json")
    except OSError:
        pass
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
    return row


# ---------------------------------------------------------------------- report
def speedups(rows: list[dict]) -> list[dict]:
    out = []
    keyed = {}
    for r in rows:
        if "error" not in r and not r.get("warmup"):
            keyed[(r["graph"], r["sources"], r["mode"], r["gpus"])] = r
    for (g, s, mode, n), r in sorted(keyed.items()):
        one = keyed.get((g, s, mode, 1))
        if n == 1 or one is None:
            continue
        target = 3.5 if s.startswith("random") else 3.8
        sp = one["wall_s"] / r["wall_s"]
        sp_solve = (one["solve_wall_s"] / r["solve_wall_s"]) if one.get("solve_wall_s") and r.get("solve_wall_s") else None
        # the targets are judged on the solve wall: start-up (cluster, graph, hierarchy,
        # kernels, warm-up) is reported apart, as the issue asks
        out.append({"graph": g, "sources": s, "mode": mode, "gpus": n, "speedup_wall": sp,
                    "speedup_solve": sp_solve, "efficiency_wall": sp / n,
                    "efficiency_solve": (sp_solve / n) if sp_solve else None,
                    "target": target if n == 4 else None,
                    "meets_target": (sp_solve is not None and sp_solve >= target) if n == 4 else None,
                    "outside_vs_kernel": r["outside_vs_kernel"], "outside_vs_kernel_solve": r.get("outside_vs_kernel_solve")})
    return out


def fmt(v, spec=".2f", scale=1.0, suffix=""):
    if v is None:
        return "-"
    try:
        return f"{v * scale:{spec}}{suffix}"
    except (TypeError, ValueError):
        return str(v)


def markdown(rows: list[dict], sp: list[dict], meta: dict) -> str:
    lines = [f"# Cluster benchmark ({meta.get('device', '?')}, {meta.get('date', '')})", "",
             f"Versions: {meta.get('versions', {})}", "",
             "| graph | sources | mode | GPUs | study wall s | solve wall s | CLI wall s | sources/s | kernel s | "
             "outside/kernel (wall) | outside/kernel (solve) | busy s per GPU | kernel s per GPU | tail s | sched. "
             "overhead s | GPU lead / gaps / drain s | cluster start s | workers ready s | first batch s | graph / hierarchy load s | compile s | "
             "warm s | tasks / batches | check |",
             "|" + "---|" * 24]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['graph']} | {r['sources']} | {r['mode']} | {r['gpus']} | **{r['error']}** |"
                         + " |" * 19 + f" CLI {fmt(r.get('cli_wall_s'))} s |")
            continue
        st = r.get("startup", {})
        busy = ", ".join(fmt(v) for _, v in sorted(r["busy_s"].items()))
        kern = ", ".join(fmt(v, ".3f") for _, v in sorted(r["kernel_s_per_gpu"].items()))
        chk = r.get("check") or {}
        chk_s = ("-" if not chk else f"{chk.get('checked', 0) - chk.get('mismatches', 0)}/{chk.get('checked', 0)}"
                 if "error" not in chk else "error")
        label = r["graph"] + (" (warm-up, cold kernel cache)" if r.get("warmup") else "")
        lines.append(
            f"| {label} | {r['sources']} | {r['mode']} | {r['gpus']} | {fmt(r['wall_s'])} | {fmt(r['solve_wall_s'])} | "
            f"{fmt(r['cli_wall_s'], '.1f')} | {fmt(r['sources_per_s'], ',.0f')} | {fmt(r['kernel_s'], '.3f')} | "
            f"{fmt(r['outside_vs_kernel'], '.0f', 100, '%')} | {fmt(r.get('outside_vs_kernel_solve'), '.0f', 100, '%')} | "
            f"{busy} | {kern} | {fmt(r['tail_s'], '.3f')} | {fmt(r['scheduler_overhead_s'], '.3f')} | "
            f"{fmt(r.get('gpu_lead_s'), '.3f')} / {fmt(r.get('gpu_gaps_s'), '.3f')} / {fmt(r.get('gpu_drain_s'), '.3f')} | "
            f"{fmt(st.get('cluster_start_s'), '.1f')} | {fmt(st.get('workers_ready_s'))} | {fmt(st.get('first_batch_s'))} | "
            f"{fmt(st.get('graph_load_s_max'))} / {fmt(st.get('hierarchy_load_s_max'))} | {fmt(st.get('compile_s_max'))} | "
            f"{fmt(st.get('warm_s_max'))} | {r.get('tasks')} / {r.get('batches')} | {chk_s} |")
    lines += ["", "| graph | sources | mode | GPUs | speedup (study wall) | speedup (solve wall) | efficiency "
              "(solve) | efficiency (study wall) | target (solve) | met | outside/kernel (wall) | outside/kernel (solve) |",
              "|" + "---|" * 12]
    for s in sp:
        lines.append(f"| {s['graph']} | {s['sources']} | {s['mode']} | {s['gpus']} | {fmt(s['speedup_wall'])}x | "
                     f"{fmt(s['speedup_solve'])}x | {fmt(s['efficiency_solve'])} | {fmt(s['efficiency_wall'])} | "
                     f"{fmt(s['target'], '.1f')} | "
                     f"{'-' if s['meets_target'] is None else ('yes' if s['meets_target'] else 'no')} | "
                     f"{fmt(s['outside_vs_kernel'], '.0f', 100, '%')} | {fmt(s['outside_vs_kernel_solve'], '.0f', 100, '%')} |")
    if meta.get("skipped"):
        lines += ["", "Skipped (time budget or failed cluster): " + "; ".join(meta["skipped"])]
    if meta.get("consistency"):
        lines += ["", "Consistency: " + json.dumps(meta["consistency"])]
    lines += ["", "study wall: from registering the graph to the last batch collected (workers' loading included); "
              "solve wall: from the first task's start (the batches go out once every worker has loaded the graph) "
              "to the last batch collected; outside/kernel = (wall x GPUs - kernel) / kernel; "
              "tail: last GPU's finish minus the first's; sched. overhead: time a ready GPU had no task (summed); "
              "GPU lead / gaps / drain (CUDA events, summed over GPUs): from the solve's start to a GPU's first kernel, "
              "idle between its kernels, from its last kernel to the last batch collected; "
              "CLI wall: the whole `sssp study` process."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- main
def plan_steps(args, graphs: dict) -> list[tuple[str, int, dict]]:
    """``[(mode, n_gpus, spec)]`` in priority order (the rows the targets need first)."""
    big, small = args.all_graphs, args.random_graph
    specs = []

    def spec(graph, kind, n, mode):
        if graph not in graphs:
            return
        src = ["--sources", "all"] if kind == "all" else ["--random", str(args.random), "--seed", "1"]
        label = "all" if kind == "all" else f"random {args.random}"
        specs.append((mode, n, {"id": f"{graph}-{kind}-{mode}-{n}", "graph": graph, "parquet": graphs[graph],
                                "source_args": src, "sources": label, "mode": mode, "gpus": n}))

    for mode in args.modes:
        for n in args.gpu_counts:
            for g in big:
                spec(g, "all", n, mode)
            if n in (args.gpu_counts[0], args.gpu_counts[-1]):
                spec(small, "random", n, mode)
    # the 1-GPU and largest rows of each mode before the middle ones
    order = {n: i for i, n in enumerate([args.gpu_counts[0], args.gpu_counts[-1]] + args.gpu_counts[1:-1])}
    specs.sort(key=lambda s: (args.modes.index(s[0]), order[s[1]]))
    return specs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "cluster-bench-out"))
    ap.add_argument("--data", default=str(REPO / "shared" / "data" / "road-topology"))
    ap.add_argument("--work", default=None, help="graphs and studies (default: a temporary folder)")
    ap.add_argument("--gpus", default="1,2,4", help="GPU counts")
    ap.add_argument("--modes", default="local,processes")
    ap.add_argument("--random", type=int, default=16384)
    ap.add_argument("--batch-size", type=int, default=None, help="default: the study's own (auto)")
    ap.add_argument("--budget-s", type=float, default=480, help="stop starting steps after this")
    ap.add_argument("--step-timeout", type=float, default=150)
    ap.add_argument("--prepare-timeout", type=float, default=150)
    ap.add_argument("--check", type=int, default=8, help="sources per study checked against SciPy (0: none)")
    ap.add_argument("--keep", action="store_true", help="keep the study folders")
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--cpu", action="store_true", help="check the script on CPUs: rome99, 1 and 2 CPU workers")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "cluster-bench.log"
    args.gpu_counts = [int(x) for x in args.gpus.split(",") if x.strip()]
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.cpu:
        args.graph_inputs = {"rome99": REPO / "data" / "rome99.gr"}
        args.all_graphs, args.random_graph = ["rome99"], "rome99"
        args.weights = None
        args.random = min(args.random, 512)
        if args.gpus == "1,2,4":
            args.gpu_counts = [1, 2]
    else:
        data = Path(args.data)
        args.graph_inputs = {"NY": data / "NY.gr.xz", "FLA": data / "FLA.gr.xz"}
        args.all_graphs, args.random_graph = ["NY", "FLA"], "FLA"
        args.weights = "random:1:1000:7"
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    meta: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "skipped": [], "args": {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "graph_inputs"}}
    try:
        from gpu_sssp import kernels
        from gpu_sssp.pipeline.study.versions import versions

        meta["versions"] = versions()
        meta["device"] = "CPU" if args.cpu else (kernels.device_name() if kernels.device_count() else "no GPU")
        meta["gpus_visible"] = kernels.device_count()
        import gpu_sssp

        meta["gpu_sssp_from"] = gpu_sssp.__file__
    except Exception as exc:
        meta["versions_error"] = repr(exc)
    say(f"device {meta.get('device')}; work {work}; out {out}")
    graphs = prepare(args, work, log)
    rows: list[dict] = []

    def save():
        sp = speedups(rows)
        ny = {(r["mode"], r["gpus"]): (r.get("diameter"), r.get("radius")) for r in rows
              if "error" not in r and r["sources"] == "all" and not r.get("warmup")}
        meta["consistency"] = {"same diameter/radius in every all-sources study of a graph": {
            g: len({(r.get("diameter"), r.get("radius")) for r in rows if "error" not in r and r["graph"] == g
                    and r["sources"] == "all"}) <= 1 for g in args.all_graphs}} if ny else {}
        (out / "cluster-bench.json").write_text(json.dumps({"meta": meta, "rows": rows, "speedups": sp},
                                                           indent=2, default=str) + "\n")
        (out / "cluster-bench.md").write_text(markdown(rows, sp, meta))

    if not args.no_warmup and graphs:
        g = args.random_graph if args.random_graph in graphs else next(iter(graphs))
        spec = {"id": "warmup", "graph": g, "parquet": graphs[g], "source_args": ["--random", "2048", "--seed", "5"],
                "sources": "random 2048", "mode": "local", "gpus": 1}
        say("warm-up study (fills CuPy's on-disk kernel cache; its start-up is the cold one)")
        r = run_study(spec, args, work, log, scheduler_file=None)
        r["warmup"] = True
        rows.append(r)
        save()
    steps = plan_steps(args, graphs)
    cluster = None
    cluster_key = None
    try:
        for mode, n, spec in steps:
            left = args.budget_s - (time.monotonic() - T0)
            if left < 25:
                meta["skipped"].append(spec["id"])
                say(f"skip {spec['id']} ({left:.0f} s left)")
                continue
            sched_file = None
            if mode == "processes":
                if cluster_key != n:
                    if cluster is not None:
                        cluster.close()
                        cluster = None
                    cluster_key = n
                    try:
                        say(f"starting dask scheduler + {'dask worker' if args.cpu else 'dask cuda worker'} "
                            f"({n} {'CPU workers' if args.cpu else 'GPUs'})")
                        cluster = ProcessCluster(work / f"cluster-{n}", n, cpu=args.cpu, log=log)
                        say(f"cluster of {n} up in {cluster.start_s:.1f} s")
                    except Exception as exc:
                        say(f"cluster of {n} failed: {exc}")
                        cluster = None
                if cluster is None:
                    meta["skipped"].append(spec["id"] + " (no cluster)")
                    continue
                sched_file = cluster.file
            else:
                if cluster is not None:
                    cluster.close()
                    cluster, cluster_key = None, None
            say(f"study {spec['id']}")
            try:
                r = run_study(spec, args, work, log, scheduler_file=sched_file)
                if mode == "processes" and cluster is not None and "error" not in r:
                    r["process_cluster_start_s"] = cluster.start_s
            except Exception as exc:
                r = {**{k: spec[k] for k in ("graph", "sources", "mode", "gpus")}, "error": repr(exc)}
                traceback.print_exc()
            rows.append(r)
            if "error" in r:
                say(f"  failed: {r['error']} (see {log})")
            else:
                say(f"  wall {r['wall_s']:.2f} s (solve {fmt(r['solve_wall_s'])} s, CLI {r['cli_wall_s']:.1f} s), "
                    f"{r['sources_per_s']:,.0f} sources/s, kernel {r['kernel_s']:.3f} s, tail {fmt(r['tail_s'], '.3f')} s, "
                    f"outside {fmt(r['outside_vs_kernel'], '.0f', 100, '%')} (solve "
                    f"{fmt(r.get('outside_vs_kernel_solve'), '.0f', 100, '%')}), {r['tasks']} tasks, check {r['check']}")
            save()
    finally:
        if cluster is not None:
            cluster.close()
        save()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    say(f"done: {out / 'cluster-bench.md'}")
    print((out / "cluster-bench.md").read_text())
    bad = [r for r in rows if "error" in r or (r.get("check") or {}).get("mismatches")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
