"""Why a Dask GPU worker holds the GPU turn longer than the same code without Dask.

Run on a GPU machine from the repository root with ``shared/data`` present (about 3
minutes on one H200): ``python3 tests/pipeline/turn_trace.py``.  It studies all NY
sources (weights U[1,1000] seed 7) on one local GPU worker several times (and 16,384
random ones) and installs a
tracer in the worker (``client.run``): every GPU turn's length; for turns past 2 ms, a
sample every 0.5 ms of the holder's stack and the other threads' top frames; how late
the sampler gets the GIL back after its 0.5 ms sleep (a direct gauge of GIL contention);
garbage collections over 0.5 ms; the GPU's own timeline (CUDA events on the host
clock, ``kernels.gpu.clock``): each chunk's device span and the GPU's idle time before it,
and the sums of lead / gaps / drain.  Variants: the default worker, ``gc.disable()`` in the
worker, 4,096-source batches, 16,384 random sources, 4 task threads (2 threads were
worse, 6 no better, on 2026-11-22).  (Dask's statistical profiler off,
``distributed.worker.profile.enabled: False``, made no difference on 2026-11-22.)
Writes ``$OUT/turn-trace.json`` and prints a digest.
"""
import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

OUT = Path(os.environ.get("OUT", "/tmp/trace-out"))
WORK = Path("/tmp/trace-work")


def install():
    """In the worker: wrap the GPU turn, start the sampler and a gc callback."""
    import gc
    import threading
    import time as _t

    from gpu_sssp.pipeline.study import task

    if getattr(task, "_trace", None) is not None:
        task._trace["reset"]()
        return "reset"
    st = {"holder": None, "since": 0.0, "cur": None, "episodes": [], "gc": [], "lag": [], "stop": False}
    acq0, rel0 = task._Turn.acquire, task._Turn.release

    def acq(self):
        acq0(self)
        st["cur"] = {"t0": self.got, "samples": [], "lags": []}
        st["since"] = self.got
        st["holder"] = threading.get_ident()

    def rel(self):
        cur = st["cur"]
        st["holder"] = None
        st["cur"] = None
        rel0(self)
        if cur is not None:
            cur["ms"] = (self.gave - self.got) * 1e3
            st["episodes"].append(cur)

    task._Turn.acquire, task._Turn.release = acq, rel

    def fmt(f, depth):
        out = []
        while f is not None and len(out) < depth:
            out.append(f"{f.f_code.co_filename.rsplit('/', 2)[-1]}:{f.f_lineno}:{f.f_code.co_name}")
            f = f.f_back
        return out

    def sampler():
        me = threading.get_ident()
        while not st["stop"]:
            t = _t.perf_counter()
            _t.sleep(0.0005)
            now = _t.perf_counter()
            lag = (now - t - 0.0005) * 1e3
            st["lag"].append(lag)
            h, cur = st["holder"], st["cur"]
            if h is None or cur is None:
                continue
            cur["lags"].append(lag)
            if now - st["since"] < 0.002:
                continue
            frames = sys._current_frames()
            names = {th.ident: th.name for th in threading.enumerate()}
            others = {names.get(tid, str(tid)): fmt(fr, 2) for tid, fr in frames.items() if tid not in (h, me)}
            cur["samples"].append(((now - st["since"]) * 1e3, fmt(frames.get(h), 8), others))

    def gccb(phase, info):
        if phase == "start":
            st["gc_t"] = _t.perf_counter()
        elif "gc_t" in st:
            d = (_t.perf_counter() - st["gc_t"]) * 1e3
            if d > 0.5:
                st["gc"].append((info["generation"], round(d, 2), info.get("collected")))

    def reset():
        st["io"].clear()
        st["episodes"].clear()
        st["gc"].clear()
        st["lag"].clear()

    # where a task's time goes after its kernels end: the solve's return, each write's parts
    import gpu_sssp.kernels as K
    from gpu_sssp.pipeline import writers

    st["io"] = []

    def timed(name, fn):
        def wrapper(*a, **kw):
            t = _t.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                st["io"].append((name, (_t.perf_counter() - t) * 1e3, threading.get_ident(), _t.time()))
        return wrapper

    solve0 = K.solve

    def solve(*a, **kw):
        res = solve0(*a, **kw)
        end = res.counters.get("gpu_end")
        if end is not None:
            st["io"].append(("solve returned after gpu_end", (_t.time() - end) * 1e3, threading.get_ident(),
                             _t.time()))
        return res

    K.solve = solve
    task._write_batch = timed("write_batch", task._write_batch)
    writers.pq.write_table = timed("pq.write_table", writers.pq.write_table)
    writers.os.fsync = timed("os.fsync", writers.os.fsync)
    writers.os.replace = timed("os.replace", writers.os.replace)
    gc.callbacks.append(gccb)
    threading.Thread(target=sampler, name="turn-sampler", daemon=True).start()
    st["reset"] = reset
    task._trace = st
    return "installed"


def collect():
    """In the worker: a digest of the turns since the last reset."""
    import numpy as np

    from gpu_sssp.pipeline.study import task

    st = task._trace
    eps = list(st["episodes"])
    held = np.array([e["ms"] for e in eps]) if eps else np.zeros(1)
    lag = np.array(st["lag"]) if st["lag"] else np.zeros(1)
    long_eps = sorted(eps, key=lambda e: -e["ms"])[:6]
    holder_tops, other_tops = Counter(), Counter()
    for e in eps:
        for _ms, stack, others in e["samples"]:
            holder_tops[" < ".join(stack[:3])] += 1
            for name, s in others.items():
                if s and "sleep" not in s[0] and "wait" not in s[0] and "select" not in s[0]:
                    other_tops[f"{name.split('-')[0]}: " + " < ".join(s)] += 1
    io = {}
    for name, ms, _tid, _at in st["io"]:
        io.setdefault(name, []).append(ms)
    io_digest = {k: {"n": len(v), "median": float(np.median(v)), "max": float(max(v)), "sum": float(sum(v))}
                 for k, v in io.items()}
    last = sorted(st["io"], key=lambda x: x[3])[-8:]
    return {
        "io": io_digest, "io_last": [(n, round(ms, 2)) for n, ms, _tid, _at in last],
        "turns": len(eps), "held_ms_sum": float(held.sum()), "held_ms_p50": float(np.median(held)),
        "held_ms_p90": float(np.percentile(held, 90)), "held_ms_max": float(held.max()),
        "lag_ms_p50": float(np.median(lag)), "lag_ms_p99": float(np.percentile(lag, 99)),
        "lag_ms_max": float(lag.max()),
        "lag_in_turns_ms_p90": float(np.percentile([x for e in eps for x in e["lags"]] or [0], 90)),
        "gc": list(st["gc"])[:40], "gc_ms_sum": float(sum(g[1] for g in st["gc"])),
        "long": [{"ms": round(e["ms"], 2), "lag_max": round(max(e["lags"] or [0]), 2),
                  "samples": [(round(ms, 2), stack) for ms, stack, _o in e["samples"]][:12]} for e in long_eps],
        "holder_tops": holder_tops.most_common(12), "other_tops": other_tops.most_common(12),
    }


def fmt_ms(v):
    return "-" if v is None else f"{v * 1e3:.1f}"


def timeline(journal: Path) -> list:
    """Per chunk (ms from the first chunk's start): started, gpu_start, gpu_end, ended,
    the GPU's idle time before it, batches."""
    chunks = {}
    for line in journal.read_text().splitlines():
        m = json.loads(line)
        c = chunks.setdefault(m["task"], dict(m, write_sum=0.0))
        c["n"] = c.get("n", 0) + 1
        c["write_sum"] += m["write_ms"]
    rows = sorted(chunks.values(), key=lambda m: m.get("gpu_start", m["started"]))
    if not rows or "gpu_start" not in rows[0]:
        return []
    t0 = min(m["started"] for m in rows)
    out, prev_end = [], None
    for m in rows:
        out.append({"started": (m["started"] - t0) * 1e3, "gpu_start": (m["gpu_start"] - t0) * 1e3,
                    "gpu_end": (m["gpu_end"] - t0) * 1e3, "ended": (m["ended"] - t0) * 1e3, "n": m["n"], "write_ms": m["write_sum"],
                    "idle": 0.0 if prev_end is None else max(0.0, (m["gpu_start"] - prev_end) * 1e3)})
        prev_end = m["gpu_end"] if prev_end is None else max(prev_end, m["gpu_end"])
    return out


def study_once(client, g, pq_path, label, results, **kw):
    import gpu_sssp

    out = WORK / "study"
    shutil.rmtree(out, ignore_errors=True)
    client.run(install)
    t = time.perf_counter()
    kw = {"sources": "all", **kw}
    s = gpu_sssp.study(g, out=str(out), client=client, keep_graph=True, **kw)
    wall = time.perf_counter() - t
    tm = s["timings"]
    digest = list(client.run(collect).values())[0]
    ct = tm.get("cluster", {})
    row = {"label": label, "cli_wall_s": wall, "solve_wall_s": tm.get("solve_wall_s"),
           "kernel_ms": tm.get("kernel_ms_this_run"), "outside": tm.get("outside_kernels_solve_vs_kernel"),
           **{k: ct.get(f"{k}_sum") for k in ("gpu_lead_s", "gpu_gaps_s", "gpu_drain_s", "gpu_busy_s")},
           "timeline": timeline(out / "journal.jsonl"), **digest}
    results.append(row)
    print(f"\n== {label}: solve {row['solve_wall_s']:.3f} s kernel {row['kernel_ms']:.1f} ms "
          f"outside {row['outside']:.1%}; turns {row['turns']} held sum {row['held_ms_sum']:.1f} ms "
          f"p50 {row['held_ms_p50']:.2f} p90 {row['held_ms_p90']:.2f} max {row['held_ms_max']:.1f}; "
          f"GIL lag p50 {row['lag_ms_p50']:.3f} p99 {row['lag_ms_p99']:.2f} max {row['lag_ms_max']:.1f} "
          f"(in turns p90 {row['lag_in_turns_ms_p90']:.2f}); gc {len(row['gc'])} pauses "
          f"{row['gc_ms_sum']:.1f} ms", flush=True)
    print(f"  GPU lead {fmt_ms(row['gpu_lead_s'])} busy {fmt_ms(row['gpu_busy_s'])} gaps "
          f"{fmt_ms(row['gpu_gaps_s'])} drain {fmt_ms(row['gpu_drain_s'])} ms")
    for k, v in row["io"].items():
        print(f"  {k}: n {v['n']} median {v['median']:.2f} max {v['max']:.2f} sum {v['sum']:.1f} ms")
    print("  last timed steps:", row["io_last"])
    print("  chunks (ms from the first task: started, GPU start-end, ended; GPU idle before; batches):")
    for c in row["timeline"]:
        print(f"    {c['started']:7.1f} {c['gpu_start']:7.1f}-{c['gpu_end']:7.1f} {c['ended']:7.1f} "
              f"idle {c['idle']:5.1f} n={c['n']} writes {c['write_ms']:5.1f}")
    for e in row["long"][:3]:
        print(f"  turn {e['ms']} ms (lag max {e['lag_max']}):")
        for ms, stack in e["samples"][:6]:
            print(f"    {ms:6.2f} {' < '.join(stack[:5])}")
    print("  holder tops:", row["holder_tops"][:6])
    print("  others:", row["other_tops"][:8])
    print("  gc:", row["gc"][:10], flush=True)


def fsync_bench():
    """What one statistics file's durable write costs on this machine's disk."""
    import numpy as np
    import pyarrow as pa

    from gpu_sssp.pipeline.writers import write_parquet_atomic

    d = WORK / "fsync"
    shutil.rmtree(d, ignore_errors=True)
    t = pa.table({"a": np.arange(4096), "b": np.random.default_rng(0).random(4096)})
    for fsync in (True, False):
        times = []
        for i in range(40):
            s0 = time.perf_counter()
            write_parquet_atomic(t, d / f"f{i}.parquet", fsync=fsync)
            times.append((time.perf_counter() - s0) * 1e3)
        print(f"write_parquet_atomic 4,096 rows fsync={fsync}: median {np.median(times):.2f} ms "
              f"p90 {np.percentile(times, 90):.2f} ms", flush=True)
    fd = os.open(d, os.O_RDONLY)
    times = []
    for i in range(40):
        s0 = time.perf_counter()
        os.fsync(fd)
        times.append((time.perf_counter() - s0) * 1e3)
    os.close(fd)
    print(f"fsync of the folder alone: median {np.median(times):.2f} ms", flush=True)


def main():
    import dask
    import gc

    OUT.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    from gpu_sssp.pipeline.cluster import start_cluster
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.hierarchy import load_hierarchy
    from gpu_sssp.pipeline.ingest import ingest

    pq_path = WORK / "NY.parquet"
    t = time.perf_counter()
    if not pq_path.exists():
        ingest(os.environ.get("TRACE_GRAPH", "shared/data/road-topology/NY.gr.xz"), str(pq_path), weights="random:1:1000:7")
    g = read_parquet(pq_path)
    load_hierarchy(g)
    print(f"prepare {time.perf_counter() - t:.1f} s", flush=True)
    results = []
    fsync_bench()
    variants = [
        ("default", {}, [("warm", {}), ("default", {}), ("default again", {}),
                         ("batch 4096", {"batch_size": 4096}),
                         ("random 16384", {"random": 16384, "seed": 1, "sources": None}),
                         ("random 16384 again", {"random": 16384, "seed": 2, "sources": None}),
                         ("random 16384, batch 4096", {"random": 16384, "seed": 1, "sources": None,
                                                       "batch_size": 4096})]),
    ]
    for name, config, runs in variants:
        with dask.config.set(config):
            handle = (start_cluster(cpu_workers=1, dashboard=False) if os.environ.get("TRACE_CPU")
                      else start_cluster(gpus="0", dashboard=False))
        try:
            for label, kw in runs:
                if kw == "gc":
                    handle.client.run(gc.disable)
                    kw = {}
                study_once(handle.client, g, pq_path, f"{name}: {label}", results, **kw)
        finally:
            handle.close()
    (OUT / "turn-trace.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
