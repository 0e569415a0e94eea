"""Kill `sssp solve -o`, `sssp ingest -o`, `sssp generate -o` (and `sssp bench --out`)
at random moments and check the single-output promises.

Not collected by pytest (no ``test_`` prefix): it runs each command dozens of times.
Run it by hand (a minute or two per command on two cores)::

    PYTHONPATH=. python tests/workflows/writers_kill_harness.py --work /tmp/wkh \
        [--commands solve,ingest,generate] [--trials 30] [--seed 1] [--signals kill,int]

For each command it makes two reference outputs with uninterrupted runs: an "old" one
(other options) and a "new" one (the command under test).  Each trial puts a copy of
the old output under the final name, starts the command on it, and after a random
delay between 0 and the command's normal run time sends SIGKILL (``kill``) or SIGINT to
its process group (``int``: Ctrl-C at a terminal; ``term``: SIGTERM, ``kill`` or a
batch scheduler's stop, status 143).  Then it checks:

- the final name holds the old file or the new one, whole (read back with pyarrow and
  compared with the references, data and ``sssp`` metadata), never a partial one;
- a SIGINT run ends with status 130 (or 0 when it had finished; or killed by the SIGINT
  itself, which a shell shows as 130 too: CPython does so while it finalizes) and at
  most one ``stopped:`` line on stderr, no traceback; a SIGINT in the interpreter's own
  start-up (before any code of the package runs: Python's traceback, status 1) is noted,
  not counted; a killed run leaves the old or the new file;
- what the killed run left in the folder besides the output (its temporaries) is
  listed; a next uninterrupted run of the same command must not be blocked by them and
  writes the new file;
- with ``--backdate``, the leftovers are made 11 minutes old and their process is gone,
  so that the next run must remove them (``pipeline.writers.remove_abandoned_temporaries``):
  none may be left after it (``bench`` is exempt: its files use the study's temporary
  names, which carry no pid, and are reported only).

A failing trial keeps its folder under ``--work``; the summary lists every failure.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def _as_at_a_terminal():
    # a harness started in the background of a shell (`... &`) runs with SIGINT ignored,
    # which its children inherit: Python then installs no Ctrl-C handler and the SIGINT
    # trials would test nothing (every run ended 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sssp(args, cwd: Path, **popen) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.Popen([PY, "-m", "gpu_sssp.workflows.cli", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_as_at_a_terminal, **popen)


def run_ok(args, cwd: Path) -> float:
    t0 = time.perf_counter()
    p = sssp(args, cwd)
    out, err = p.communicate()
    if p.returncode != 0:
        raise SystemExit(f"reference run failed ({p.returncode}): sssp {' '.join(map(str, args))}\n{err.decode()}")
    return time.perf_counter() - t0


def make_inputs(work: Path) -> None:
    """A 600,000-line weighted edge list (about 9 MB: ingest takes a second or two), a
    small one (the old output), and the Rome graph ingested (solve's graph)."""
    rng = np.random.default_rng(7)
    for name, n, v in (("big.wel", 600_000, 100_000), ("small.wel", 2_000, 500)):
        if not (work / name).exists():
            a = np.c_[rng.integers(0, v, n), rng.integers(0, v, n), rng.integers(1, 1000, n)]
            np.savetxt(work / name, a, fmt="%d")
    if not (work / "rome.parquet").exists():
        shutil.copy(REPO / "data" / "rome99.gr", work / "rome99.gr")
        run_ok(["ingest", "rome99.gr", "-o", "rome.parquet", "-q"], work)


#: command -> (output name, new run's arguments, old run's arguments); {out} is the output
COMMANDS = {
    "solve": ("d.parquet",
              ["solve", "../rome.parquet", *sum((["-s", str(i)] for i in range(1, 121)), []), "--all-vertices",
               "--predecessors", "-o", "{out}"],
              ["solve", "../rome.parquet", "-s", "5", "-o", "{out}"]),
    "ingest": ("g.parquet", ["ingest", "../big.wel", "-o", "{out}", "-q"],
               ["ingest", "../small.wel", "-o", "{out}", "-q"]),
    "generate": ("g.parquet", ["generate", "rmat", "--scale", "15", "-o", "{out}", "-q"],
                 ["generate", "grid", "--rows", "10", "--cols", "10", "-o", "{out}", "-q"]),
    "bench": ("b", ["bench", "../rome.parquet", "--algorithms", "dijkstra", "--sources", "8", "--runs", "2",
                    "--baselines", "scipy", "--no-plots", "--out", "{out}"],
              ["bench", "../rome.parquet", "--algorithms", "dijkstra", "--sources", "2", "--runs", "1",
               "--baselines", "scipy", "--no-plots", "--out", "{out}"]),
}
#: bench's run-to-run columns (times, host details): compared without them
VOLATILE = {"time_ms", "kernel_ms", "warmup_ms", "mteps", "edges_per_s", "versions", "cpu", "device", "gpu",
            "driver", "launches", "host_syncs"}


def content(path: Path, command: str):
    """What a finished output holds, comparable between runs: its data and its ``sssp``
    metadata (bench: the rows without their timings); raises where it is not whole."""
    if command == "bench":
        t = pq.read_table(path / "rows.parquet")
        meta = json.loads(t.schema.metadata[b"sssp"])
        cols = [c for c in t.column_names if c not in VOLATILE]
        # (repr: NaN, in some rows' columns, is never equal to itself)
        return (repr(t.select(cols).to_pylist()), meta.get("notes"), (path / "summary.md").read_text().count("\n") > 0)
    t = pq.read_table(path)
    meta = json.loads(t.schema.metadata[b"sssp"])
    for k in ("created_by",):
        meta.pop(k, None)
    return t.replace_schema_metadata(None), meta


def same(a, b) -> bool:
    if isinstance(a[0], str):
        return a[0] == b[0] and a[1] == b[1]
    return a[0].equals(b[0]) and a[1] == b[1]


def entries(folder: Path, final: str) -> list[str]:
    return sorted(e for e in os.listdir(folder) if e != final)


def trial(work: Path, command: str, k: int, sig: str, delay: float, refs, backdate: bool) -> list[str]:
    name, new_args, _ = COMMANDS[command]
    d = work / f"{command}-{k:03d}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    out = d / name
    old_copy = work / f"ref-{command}-old"
    (shutil.copytree if old_copy.is_dir() else shutil.copy2)(old_copy, out)
    args = [a.replace("{out}", name) for a in new_args]
    p = sssp(args, d)
    time.sleep(delay)
    try:
        os.killpg(p.pid, {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM}[sig])
    except ProcessLookupError:
        pass
    _, err = p.communicate()
    err = err.decode(errors="replace")
    problems, notes = [], []
    rc = p.returncode
    startup = sig in ("int", "term") and "Traceback" in err and str(REPO) not in err
    if startup:
        # Ctrl-C while the interpreter itself starts (site, the editable install's finder,
        # the standard library: a few tens of ms), before any code of the package runs:
        # Python's own traceback, status 1; nothing of sssp's to check
        notes.append(f"SIGINT in the interpreter's start-up: {err.strip().splitlines()[-2:]}")
    elif sig == "int" and rc not in (0, 130, -signal.SIGINT) or sig == "term" and rc not in (0, 143, -signal.SIGTERM):
        # (-SIGINT: ended by the signal itself, as CPython does when it saw an unhandled
        # KeyboardInterrupt or was finalizing; a shell shows 130 for it, as for 130)
        problems.append(f"SIG{sig.upper()}: exit status {rc} (stderr {err[-300:]!r})")
    if not startup and sig in ("int", "term") and ("Traceback" in err or len(
            [ln for ln in err.splitlines() if ln.startswith(("stopped", "error"))]) > 1):
        problems.append(f"SIG{sig.upper()}: stderr {err[-400:]!r}")
    if command == "bench" and sig == "kill":
        # the killed bench's workers are in its process group: SIGKILL went to all of them
        pass
    try:
        got = content(out, command)
        which = "new" if same(got, refs["new"]) else "old" if same(got, refs["old"]) else None
        if which is None and command == "bench" and any("still going" in n for n in got[1] or ()):
            which = "partial, marked so"  # (the rows a bench writes as it goes, by design)
        if which is None:
            problems.append("the output is neither the old file nor the new one")
        if command == "bench" and which == "new" and rc != 0:
            pass  # (a bench folder's last rows are rewritten at its end)
    except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
        which = None
        problems.append(f"the output does not read back: {type(exc).__name__}: {exc}")
    left = entries(d if command != "bench" else out, name if command != "bench" else "")
    if command == "bench":
        left = [e for e in left if e not in ("rows.parquet", "summary.md")]
    if backdate:
        for e in left:
            f = (d if command != "bench" else out) / e
            old = time.time() - 660
            os.utime(f, (old, old))
    q = sssp(args, d)
    _, err2 = q.communicate()
    if q.returncode != 0:
        problems.append(f"the next run failed ({q.returncode}): {err2.decode(errors='replace')[-300:]!r}")
    else:
        try:
            if not same(content(out, command), refs["new"]):
                problems.append("the next run's output is not the new file")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"the next run's output does not read back: {exc}")
    after = entries(d if command != "bench" else out, name if command != "bench" else "")
    if command == "bench":
        after = [e for e in after if e not in ("rows.parquet", "summary.md")]
    if backdate and after and command != "bench":
        problems.append(f"left after the next run: {after}")
    print(f"{command} #{k} {sig} at {delay:.2f}s: status {rc}, final={which}, left={left}, after next run={after}"
          + (f"  NOTES: {notes}" if notes else "") + (f"  PROBLEMS: {problems}" if problems else ""), flush=True)
    if not problems:
        shutil.rmtree(d, ignore_errors=True)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--commands", default="solve,ingest,generate")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--signals", default="kill,int")
    ap.add_argument("--backdate", action="store_true",
                    help="age the leftovers by 11 minutes before the next run, which must remove them")
    a = ap.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    make_inputs(work)
    rng = random.Random(a.seed)
    failures = {}
    for command in a.commands.split(","):
        name, new_args, old_args = COMMANDS[command]
        refs = {}
        runtime = 0.0
        for which, argv in (("old", old_args), ("new", new_args)):
            d = work / f"ref-{command}-{which}-run"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            t = run_ok([x.replace("{out}", name) for x in argv], d)
            if which == "new":
                runtime = t
            target = work / f"ref-{command}-{which}"
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            shutil.move(str(d / name), target)
            refs[which] = content(target, command)
        print(f"{command}: a clean run takes {runtime:.2f} s", flush=True)
        for k in range(a.trials):
            sig = rng.choice(a.signals.split(","))
            probs = trial(work, command, k, sig, rng.uniform(0, runtime), refs, a.backdate)
            if probs:
                failures[f"{command}#{k}"] = probs
    print(f"{len(failures)} failing trial(s)")
    for k, v in failures.items():
        print(f"  {k}: {v}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
