"""One GPU's share of a multi-GPU study, measured on one GPU; not collected by pytest.

A 4-GPU study of all NY sources gives each GPU about 66,000 sources (8 batches of 8,192).
This runs ``REPS`` studies of ``K`` random sources of ``GRAPH`` (a Parquet edge list whose
hierarchy is cached) on one local cluster started once, and prints per study the solve
wall, the kernel time, the time outside kernels and the GPU's lead, gaps and drain
(``pipeline.study.timing``), then their medians.  What it cannot show: what several GPUs
add (one scheduler and one client serving all of them).

    python tests/pipeline/share_proxy.py GRAPH.parquet LABEL REPS K OUT.jsonl [--batch-size B] [--cpu]

(``--cpu``: a one-worker CPU cluster, to check the script without a GPU.)
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("label")
    ap.add_argument("reps", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("out")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--cpu", action="store_true")
    a = ap.parse_args(argv)
    import gpu_sssp
    from gpu_sssp.pipeline.cluster import start_cluster

    t = time.perf_counter()
    h = start_cluster(cpu_workers=1, dashboard=False) if a.cpu else start_cluster(gpus="0", dashboard=False)
    print(a.label, "cluster", round(time.perf_counter() - t, 2), gpu_sssp.__file__, flush=True)
    work = Path(tempfile.mkdtemp(prefix=f"share-{a.label}-"))
    extra = {"batch_size": a.batch_size} if a.batch_size else {}
    rows = []
    try:
        gpu_sssp.study(a.graph, random=min(4096, a.k), seed=999, out=work / "warm", client=h.client)
        for r in range(a.reps):
            s = gpu_sssp.study(a.graph, random=a.k, seed=r, out=work / f"s{r}", client=h.client, **extra)
            tm = s["timings"]
            w = list(tm["cluster"]["workers"].values())[0]
            journal = [json.loads(x) for x in (work / f"s{r}" / "journal.jsonl").read_text().splitlines()]
            tasks = {}
            for m in journal:
                tasks.setdefault(m["task"], m)
            last = max(tasks.values(), key=lambda m: m.get("gpu_end", m["ended"]))
            row = dict(label=a.label, rep=r, solve_wall_ms=1e3 * tm["solve_wall_s"],
                       kernel_ms=sum(m["kernel_ms"] for m in journal),
                       outside=tm["outside_kernels_solve_vs_kernel"],
                       lead_ms=1e3 * w.get("gpu_lead_s", 0.0), gaps_ms=1e3 * w.get("gpu_gaps_s", 0.0),
                       drain_ms=1e3 * w.get("gpu_drain_s", 0.0),
                       last_ended_ms=1e3 * (last["ended"] - last.get("gpu_end", last["ended"])),
                       last_collected_ms=1e3 * (last["collected"] - last.get("gpu_end", last["ended"])),
                       tasks=len(tasks), batches=len(journal))
            rows.append(row)
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    finally:
        h.close()
    with open(a.out, "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    for key in ("solve_wall_ms", "kernel_ms", "outside", "lead_ms", "gaps_ms", "drain_ms", "last_ended_ms",
                "last_collected_ms"):
        v = [r[key] for r in rows]
        print(f"{a.label} {key}: median {statistics.median(v):.3f} min {min(v):.3f} max {max(v):.3f}", flush=True)


if __name__ == "__main__":
    main()
