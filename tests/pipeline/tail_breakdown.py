"""Where a study's time went after each GPU's last kernel, from its journal and summary
(``cluster_bench`` keeps both under ``journals/``); not collected by pytest.

    python tests/pipeline/tail_breakdown.py DIR/journals/NY-all-local-4.jsonl [...]

Per task (ms from the solve's start): worker, batches, started, device span, solve
returned, files written (ended), result on the client (collected); then per worker the
last task's steps: kernel end -> solve returned -> written -> collected -> study's end
(the journal's fsync and the other GPUs)."""
import json
import sys
from pathlib import Path


def breakdown(journal: Path, summary: Path, *, tasks_shown: int = 40) -> None:
    """Print one study's tasks (when at most ``tasks_shown``) and each worker's last
    task's steps, from its journal and its summary."""
    end = json.loads(Path(summary).read_text())["timings"]["collected_at"]
    tasks = {}
    for line in Path(journal).read_text().splitlines():
        m = json.loads(line)
        t = tasks.setdefault(m["task"], dict(m, write=0.0, load=0.0, wait=0.0, solve=0.0, n=0, table=0.0,
                                             encode=0.0, file=0.0))
        t["write"] += m["write_ms"]
        t["table"] += m.get("stats_table_ms", 0.0)
        t["encode"] += m.get("stats_encode_ms", 0.0)
        t["file"] += m.get("stats_file_ms", 0.0)
        t["load"] += m["load_ms"]
        t["wait"] += m["wait_ms"]
        t["solve"] += m["solve_ms"]
        t["n"] += 1
    t0 = min(t["started"] for t in tasks.values())
    print(f"== {Path(journal).name}: solve {1e3 * (end - t0):.1f} ms")
    last = {}
    for t in sorted(tasks.values(), key=lambda t: (t["worker"], t.get("gpu_start", t["started"]))):
        solved = t["started"] + (t["load"] + t["wait"] + t["solve"]) / 1e3
        t["solved"] = solved
        if len(tasks) <= tasks_shown:
            print(f"  {t['worker'][-5:]:>5} x{t['n']:<2} start {1e3 * (t['started'] - t0):6.1f} "
                  f"gpu {1e3 * (t['gpu_start'] - t0):6.1f}-{1e3 * (t['gpu_end'] - t0):6.1f} "
                  f"solved {1e3 * (solved - t0):6.1f} ended {1e3 * (t['ended'] - t0):6.1f} "
                  f"collected {1e3 * (t.get('collected', float('nan')) - t0):6.1f}")
        w = t["worker"]
        if w not in last or t["gpu_end"] > last[w]["gpu_end"]:
            last[w] = t
    for w, t in sorted(last.items()):
        print(f"  last of {w[-5:]:>5}: kernel end {1e3 * (t['gpu_end'] - t0):6.1f}  +solve return "
              f"{1e3 * (t['solved'] - t['gpu_end']):4.1f}  +write {1e3 * (t['ended'] - t['solved']):4.1f}"
              f"  +to client {1e3 * (t.get('collected', float('nan')) - t['ended']):4.1f}"
              f"  +until study end {1e3 * (end - t.get('collected', float('nan'))):5.1f}"
              f"  (write: stats rows {t['table']:.1f}, encode {t['encode']:.1f}, file {t['file']:.1f})")


def main(paths):
    """``cluster_bench``'s copies: ``X.jsonl`` beside ``X.summary.json``."""
    for p in paths:
        breakdown(Path(p), Path(str(p)[:-len(".jsonl")] + ".summary.json"))


if __name__ == "__main__":
    main(sys.argv[1:])
