"""Studies of papers 000-003 on the GPU (not collected by pytest).

    PYTHONPATH=. python tests/kernels/papers_timing.py [--sources 100] [--max-scale 22]
        [--budget-s 400] [--out FILE] [--parts locality,delta,bfs,edgelist,other]

Road graphs: NY / BAY / COL topologies (road-topology/*.gr.xz) with weights U[1,1000]
seed 7; sources: numpy default_rng(2026) integers over the vertices (the graphs are
connected).  Times are CUDA-event kernel milliseconds per source (``kernel_ms`` /
sources; the predecessor pass and the distance copy are not run: ``distances=False``),
after one warm-up solve that compiles and uploads.  Every timed configuration is also
checked against SciPy Dijkstra on its first sources.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import graphs as G  # noqa: E402

from gpu_sssp import kernels  # noqa: E402
from gpu_sssp.kernels._gpu import device_name  # noqa: E402
from gpu_sssp.pipeline.graph import Graph  # noqa: E402

ROADS = ["NY", "BAY", "COL"]
T0 = time.perf_counter()
RESULTS: dict = {}


def elapsed():
    return time.perf_counter() - T0


def road(name, weights="random:1:1000:7"):
    return G.load(f"road-topology/{name}.gr.xz", weights=weights)


def sources_for(g, k, seed=2026):
    return np.random.default_rng(seed).integers(0, g.n, size=k)


def verify(g, method, opts, src, nref=3):
    ref = kernels.solve(g, src[:nref], method="dijkstra", backend="cpu")
    res = kernels.solve(g, src[:nref], method=method, **opts)
    if g.integer_weights:
        return "exact" if np.array_equal(ref.distances, res.distances) else "MISMATCH"
    return "ok" if np.allclose(ref.distances, res.distances, rtol=1e-6) else "MISMATCH"


def timed(g, method, opts, src, check=True):
    kernels.solve(g, src[:2], method=method, distances=False, **opts)  # compile, upload, estimates
    t = time.perf_counter()
    res = kernels.solve(g, src, method=method, distances=False, **opts)
    wall = (time.perf_counter() - t) * 1e3 / len(src)
    c = res.counters
    b = len(src)
    row = dict(method=method, opts={k: v for k, v in opts.items()}, ms=c["kernel_ms"] / b, wall_ms=wall,
               iterations=float(np.mean(res.iterations)), launches=c["launches"] / b,
               host_syncs=c["host_syncs"] / b, mteps=c["mteps"], sources=b)
    if "resident" in c:
        row["resident"] = c["resident"]
        row["k"] = c.get("k")
    for key in ("blind_launches", "buckets", "light_iterations", "delta", "edges_per_s"):
        if key in c:
            row[key] = c[key] / (b if key in ("blind_launches", "buckets", "light_iterations") else 1)
    if check:
        row["check"] = verify(g, method, opts, src)
    return row


def fmt_opts(o):
    return ", ".join(f"{k}={v}" for k, v in o.items()) or "defaults"


def table(log, rows, title):
    log(f"\n### {title}\n")
    log("| graph | method | options | ms/source | wall ms/src | iterations/src | launches/src | host syncs/src "
        "| MTEPS | check |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        log(f"| {r.get('graph', '')} | {r['method']} | {fmt_opts(r['opts'])} | {r['ms']:.3f} | {r['wall_ms']:.2f} | "
            f"{r['iterations']:.1f} | {r['launches']:.1f} | {r['host_syncs']:.1f} | {r['mteps']:.1f} | "
            f"{r.get('check', '')} |")


def part_locality(log, args):
    rows = []
    for name in ROADS:
        if elapsed() > args.budget_s:
            log(f"(budget reached: locality study cut before {name})")
            break
        g = road(name)
        nsrc = args.sources if name == "NY" else max(10, args.sources // 4)
        src = sources_for(g, nsrc)
        try:
            base = timed(g, "harish", {}, src, check=False)
        except Exception as exc:
            base = None
            log(f"harish unavailable on {name}: {type(exc).__name__}: {exc}")
        if base:
            base["graph"] = name
            rows.append(base)
        if args.launched:  # the paper's host protocol (run 1 of BENCHMARKS.md)
            configs = [dict(k=k, vertices_per_thread=2, persistent=False) for k in range(1, 6)]
            configs += [dict(k=4, vertices_per_thread=v, persistent=False) for v in (1, 4)]
            configs += [dict(k=k, vertices_per_thread=1, persistent=False) for k in (2, 3, 5)]
        elif name == "NY":
            configs = [dict(k=k, vertices_per_thread=1) for k in range(1, 6)]
            configs += [dict(k=k, vertices_per_thread=1, persistent=False) for k in range(1, 6)]
            configs += [dict(k=k, vertices_per_thread=1, arc_batch=0) for k in (1, 2, 3)]
            configs += [dict(k=k, vertices_per_thread=1, persistent=False, arc_batch=0) for k in (2, 4)]
            configs += [dict(k=4, vertices_per_thread=2, persistent=False, arc_batch=0)]  # the paper's setting
            configs += [dict(k=k, vertices_per_thread=2) for k in (2, 3)]
            configs += [dict(k=k, vertices_per_thread=1, blocks_per_sm=b) for k in (2, 3) for b in (1, 4)]
            # the block-resident arcs off (the global-memory kernel) and the prefetch off
            configs += [dict(k=k, vertices_per_thread=1, resident=False) for k in (1, 2)]
            configs += [dict(k=k, vertices_per_thread=1, prefetch=False) for k in (1, 2)]
        else:
            configs = [dict(k=k, vertices_per_thread=1) for k in range(1, 6)]
            configs += [dict(k=k, vertices_per_thread=1, persistent=False) for k in (2, 3)]
            configs += [dict(k=4, vertices_per_thread=2, persistent=False, arc_batch=0)]
            configs += [dict(k=k, vertices_per_thread=1, resident=False) for k in (1, 2)]
        for opts in configs:
            try:
                r = timed(g, "locality", opts, src, check=(name == "NY" or opts == configs[1]))
            except Exception as exc:
                log(f"locality {opts} on {name} failed: {type(exc).__name__}: {exc}")
                continue
            r["graph"] = name
            if base:
                r["speedup_vs_harish"] = base["ms"] / r["ms"]
            rows.append(r)
    RESULTS["locality"] = rows
    table(log, rows, "locality (paper 000): time vs k and vertices per thread, harish baseline")
    log("\n| graph | mode | k | vertices/thread | blocks/SM | ms/source | speedup over harish (paper: 3.4-5.8x) |")
    log("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["method"] == "locality":
            o = r["opts"]
            mode = "launched" if o.get("persistent") is False else "persistent"
            if r.get("resident"):
                mode += ", resident arcs" + (", no prefetch" if o.get("prefetch") is False else "")
            log(f"| {r['graph']} | {mode} | {r.get('k') or o['k']} | {o['vertices_per_thread']} | "
                f"{o.get('blocks_per_sm', '')} | {r['ms']:.3f} | {r.get('speedup_vs_harish', float('nan')):.2f}x |")


def part_delta(log, args):
    g = road("NY")
    src = sources_for(g, args.sources)
    rows = []
    configs = [dict(delta="median"), dict(delta="mean"), dict(delta="maxw-maxdeg")]
    configs += [dict(delta=f"mean*{x}") for x in (8, 16, 32, 64, 128, 256)] + [dict(delta=1e30)]
    configs += [dict(delta="mean*64", blocks_per_sm=1), dict(delta="mean*64", blocks_per_sm=4)]
    for opts in configs:
        if elapsed() > args.budget_s:
            log("(budget reached: delta study cut)")
            break
        try:
            few = isinstance(opts["delta"], str) and "*" not in opts["delta"]
            r = timed(g, "delta", opts, src[:30] if few else src)
        except Exception as exc:
            log(f"delta {opts} failed: {type(exc).__name__}: {exc}")
            continue
        r["graph"] = "NY"
        rows.append(r)
    RESULTS["delta"] = rows
    table(log, rows, "delta-stepping on NY (U[1,1000] seed 7): the three delta rules and fixed widths")
    log("\n| delta option | width | buckets/src | light iterations/src | ms/source |")
    log("|---|---|---|---|---|")
    for r in rows:
        log(f"| {fmt_opts(r['opts'])} | {r.get('delta', 0):g} | {r.get('buckets', 0):.0f} | "
            f"{r.get('light_iterations', 0):.0f} | {r['ms']:.3f} |")


def part_other(log, args):
    """queue-bf, edgelist, dijkstra-gpu on NY; dijkstra-gpu threads per block on delaunay_n15."""
    g = road("NY")
    src = sources_for(g, max(10, args.sources // 5))
    rows = []
    for method, opts in [("queue-bf", {}), ("edgelist", {}), ("edgelist", dict(segment=4096)),
                         ("edgelist", dict(restrict=False))]:
        if elapsed() > args.budget_s:
            break
        try:
            r = timed(g, method, opts, src)
            r["graph"] = "NY"
            rows.append(r)
        except Exception as exc:
            log(f"{method} {opts} failed: {type(exc).__name__}: {exc}")
    try:
        r = timed(g, "dijkstra-gpu", {}, src[:2], check=False)
        r["graph"] = "NY"
        rows.append(r)
    except Exception as exc:
        log(f"dijkstra-gpu on NY failed: {type(exc).__name__}: {exc}")
    gd = G.load("metis/delaunay_n15.graph", weights="random:1:1000:7")
    sd = sources_for(gd, 4)
    for tpb in (128, 256, 512, 1024):
        try:
            r = timed(gd, "dijkstra-gpu", dict(threads_per_block=tpb), sd, check=(tpb == 128))
            r["graph"] = "delaunay_n15"
            rows.append(r)
        except Exception as exc:
            log(f"dijkstra-gpu tpb={tpb} failed: {type(exc).__name__}: {exc}")
    RESULTS["other"] = rows
    table(log, rows, "queue-bf, edgelist, dijkstra-gpu")


def part_bfs(log, args):
    rows = []
    for name in ROADS:
        if elapsed() > args.budget_s:
            log("(budget reached: BFS study cut)")
            break
        g = road(name, weights=None)
        src = sources_for(g, max(10, args.sources // 5))
        for m in ("bfs-naive", "bfs-blocked", "bfs-hierarchical"):
            try:
                r = timed(g, m, {}, src)
                r["graph"] = name
                rows.append(r)
            except Exception as exc:
                log(f"{m} on {name} failed: {type(exc).__name__}: {exc}")
        try:
            r = timed(g, "delta", {}, src, check=False)  # the same unit-weight graph, for scale
            r["graph"] = name
            rows.append(r)
        except Exception as exc:
            log(f"delta on unit {name} failed: {exc}")
    RESULTS["bfs"] = rows
    table(log, rows, "BFS variants (paper 002) on the road topologies, unit weights (hop distances)")


def rmat_graph(scale, seed=1):
    from gpu_sssp.pipeline import generate

    src, dst, w, n = generate.rmat(scale, 16, seed=seed, weights=(1, 1000), weight_type="int32", undirected=True)
    return Graph.from_edges(src, dst, w, n, directed=False, name=f"rmat{scale}")


def part_edgelist(log, args):
    rows = []
    runs = 32
    for scale in range(args.min_scale, args.max_scale + 1):
        if elapsed() > args.budget_s:
            log(f"(budget reached: edgelist sizes cut at 2^{scale})")
            break
        t = time.perf_counter()
        g = rmat_graph(scale)
        gen_s = time.perf_counter() - t
        deg = g.out_degree()
        src = np.random.default_rng(7).choice(np.nonzero(deg > 0)[0], size=runs)
        configs = [dict(), dict(restrict=False), dict(segment=1 << 14), dict(restrict=False, segment=1 << 14)]
        if scale < args.max_scale and scale not in (14, 18, 20):
            configs = configs[:1]
        for opts in configs:
            if elapsed() > args.budget_s:
                break
            try:
                kernels.solve(g, src[:1], method="edgelist", distances=False, **opts)
                eps, its = [], []
                for s in src:
                    r = kernels.solve(g, [s], method="edgelist", distances=False, **opts)
                    eps.append(r.counters["edges_per_s"])
                    its.append(r.iterations[0])
                chk = verify(g, "edgelist", opts, src, nref=2) if not opts else ""
            except Exception as exc:
                log(f"edgelist {opts} on rmat{scale} failed: {type(exc).__name__}: {exc}")
                continue
            eps = np.asarray(eps)
            rows.append(dict(scale=scale, n=g.n, m=g.m, opts=opts, mean=float(eps.mean()), min=float(eps.min()),
                             max=float(eps.max()), iterations=float(np.mean(its)), check=chk, gen_s=gen_s))
        try:
            if scale in (14, 18, args.max_scale):
                t = time.perf_counter()
                kernels.solve(g, src[:2], method="dijkstra", backend="cpu", distances=False)
                rows[-1]["cpu_dijkstra_ms"] = (time.perf_counter() - t) * 1e3 / 2
        except Exception as exc:
            log(f"cpu dijkstra rmat{scale}: {exc}")
    RESULTS["edgelist"] = rows
    log("\n### edgelist (paper 001): edge checks per second on RMAT (avg degree 32, U[1,1000]), 32 runs\n")
    log("| scale | vertices | arcs | options | mean Gedges/s | min | max | iterations | CPU Dijkstra ms/src | check |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        log(f"| 2^{r['scale']} | {r['n']:,} | {r['m']:,} | {fmt_opts(r['opts'])} | {r['mean'] / 1e9:.2f} | "
            f"{r['min'] / 1e9:.2f} | {r['max'] / 1e9:.2f} | {r['iterations']:.1f} | "
            f"{r.get('cpu_dijkstra_ms', float('nan')):.1f} | {r['check']} |")


def part_target(log, args):
    """The speed target: best locality and delta configurations on NY, 100 sources."""
    rows = [r for r in RESULTS.get("locality", []) + RESULTS.get("delta", [])
            if r.get("graph") == "NY" and r["method"] in ("locality", "delta") and r["sources"] >= args.sources]
    if not rows:
        return
    best = min(rows, key=lambda r: r["ms"])
    log(f"\n### speed target (NY, U[1,1000] seed 7, {best['sources']} sources): best is {best['method']} "
        f"{fmt_opts(best['opts'])}: {best['ms']:.3f} ms/source by CUDA events, {best['wall_ms']:.2f} ms wall "
        f"(target <= 3 ms: {'met' if best['ms'] <= 3.0 else 'NOT met'})")


def part_auto(log, args):
    """Every single-source GPU method on a few graph families, for the auto rule."""
    rows = []
    fams = [("NY", road("NY")), ("NY-unit", road("NY", weights=None)),
            ("delaunay_n15", G.load("metis/delaunay_n15.graph", weights="random:1:1000:7")),
            ("rmat18-d32", rmat_graph(18)), ("rmat16-directed", G.rmat(16, 16, seed=3, dtype=np.int64, hi=1000))]
    methods = [("locality", {}), ("delta", {}), ("edgelist", {}), ("queue-bf", {}), ("harish", {}), ("hbf", {}),
               ("bfs-blocked", {})]
    for name, g in fams:
        src = sources_for(g, 20)
        for m, o in methods:
            if elapsed() > args.budget_s:
                log("(budget reached: auto study cut)")
                break
            if m.startswith("bfs") and not g.unweighted:
                continue
            try:
                r = timed(g, m, o, src, check=(m in ("locality", "delta")))
                r["graph"] = name
                rows.append(r)
            except Exception as exc:
                log(f"{m} on {name} failed: {type(exc).__name__}: {exc}")
    RESULTS["auto"] = rows
    table(log, rows, "all single-source methods on graph families (20 sources), for the auto rule")


PARTS = {"auto": part_auto, "target": part_target, "locality": part_locality, "delta": part_delta, "bfs": part_bfs, "other": part_other,
         "edgelist": part_edgelist}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=100)
    ap.add_argument("--max-scale", type=int, default=22)
    ap.add_argument("--min-scale", type=int, default=14)
    ap.add_argument("--launched", action="store_true", help="locality study in the paper's launched mode")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--parts", default="locality,delta,other,bfs,edgelist")
    args = ap.parse_args()
    fh = open(args.out, "w") if args.out else None

    def log(s=""):
        print(s, flush=True)
        if fh:
            fh.write(s + "\n")
            fh.flush()

    log(f"GPU: {device_name()}; sources {args.sources}; started {time.strftime('%Y-%m-%d %H:%M:%S')}")
    for p in args.parts.split(","):
        t = elapsed()
        try:
            PARTS[p](log, args)
        except Exception as exc:
            import traceback

            log(f"part {p} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        log(f"\n(part {p}: {elapsed() - t:.1f} s)")
        if args.json:
            Path(args.json).write_text(json.dumps(RESULTS, indent=1, default=str))


if __name__ == "__main__":
    main()
