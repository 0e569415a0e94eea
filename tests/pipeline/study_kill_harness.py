"""Kill `sssp study` at random points, resume it, and check the study's promises.

Not collected by pytest (no ``test_`` prefix): it runs real local CPU clusters many
times and takes minutes.  Run it by hand::

    PYTHONPATH=. python tests/pipeline/study_kill_harness.py GRAPH --trials 10 --mode cli \
        --work /tmp/killharness [--distances] [--seed 1]

Each trial starts ``sssp study GRAPH --sources all --batch-size B --out DIR`` (with
``--outputs distances`` for ``--distances``), waits a random time, then

- ``cli``: SIGKILLs the command's process;
- ``worker``: SIGKILLs one worker process of its local cluster (the study must go on
  and complete by itself);
- ``int``: sends SIGINT to the command's process group (Ctrl-C at a terminal): the
  command must stop with one ``stopped:``/``error:`` line (after its note) or complete;
- ``int2``: the same, and a second Ctrl-C 0.01-1 s later;

``--kills N`` interrupts N runs (the first, then ``--resume`` runs), ``--after-first-batch``
counts the delay from the run's first journal line (a kill mid-solve), ``--orphan-wait 0``
resumes at once while the killed run's worker processes still end, ``--extra`` adds study
options (``--random-targets 400 --matrix-form long``, ``--outputs predecessors
--distance-form wide``), ``--schedule batch`` one task per batch.  Then it runs
``--resume`` to its end and checks:

- the resume exits 0 and the manifest says ``complete``;
- no batch journaled before the resume is journaled again by it, and every batch whose
  statistics file was complete but not journaled is adopted, not solved again;
- the statistics (without the timing/placement columns) sorted by source, and the
  distances, predecessors or matrix, equal those of an uninterrupted run, and so does the
  summary (its timings apart);
- no temporary file is left in the folder, and no process of the killed run outlives it
  for long (it would write into the folder while the resume runs);
- the summary counts every source once.

A trial that fails keeps its folder and logs under ``--work``.
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

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
VOLATILE = {"kernel_ms", "worker", "device", "mteps"}
#: sessions of killed runs left to end by themselves (--orphan-wait 0): ended after the trial
LIVE_SESSIONS: list[int] = []


def cli(args, log: Path, env=None) -> subprocess.Popen:
    fh = open(log, "w")
    e = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    e.update(env or {})
    return subprocess.Popen([PY, "-m", "gpu_sssp.workflows.cli", "study", *map(str, args)], stdout=fh,
                            stderr=subprocess.STDOUT, env=e, start_new_session=True, cwd=log.parent)


def session_pids(sid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if os.getsid(int(p.name)) == sid:
                out.append(int(p.name))
        except OSError:
            pass
    return out


def children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(p.name))
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def table(folder: Path):
    if not folder.is_dir():
        return None
    t = pq.read_table(folder)
    keep = [c for c in t.column_names if c not in VOLATILE]
    t = t.select(keep)
    sort = [(c, "ascending") for c in ("source", "vertex", "target", "column") if c in keep]
    return t.sort_by(sort)


def journal(out: Path) -> list[dict]:
    p = out / "journal.jsonl"
    if not p.exists():
        return []
    rows = []
    for line in p.read_bytes().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


def leftovers(out: Path) -> list[str]:
    return [str(p.relative_to(out)) for p in out.rglob("*") if ".tmp-" in p.name]


def complete_stats_files(out: Path) -> set[int]:
    got = set()
    for p in (out / "stats").glob("batch-*.parquet") if (out / "stats").is_dir() else ():
        try:
            pq.read_metadata(p)
            got.add(int(p.name[6:12]))
        except Exception:
            pass
    return got


def interrupted_run(a, args, out: Path, log: Path, delay: float, problems: list) -> tuple[str, int]:
    """Start the command, signal it (``a.mode``) ``delay`` s later, wait for its end and
    for its processes to go; return (what was done, exit status)."""
    p = cli(args, log, env=a.env)
    sid = p.pid  # start_new_session: the session id is the pid
    if a.after_first_batch:  # the delay counts from the first journal line written by this run
        lines0 = len(journal(out))
        t0 = time.time()
        while p.poll() is None and len(journal(out)) == lines0 and time.time() - t0 < 120:
            time.sleep(0.02)
    time.sleep(delay)
    how = a.mode
    if p.poll() is None:
        if how == "cli":
            os.kill(p.pid, signal.SIGKILL)
        elif how == "int":
            os.killpg(p.pid, signal.SIGINT)
        elif how == "int2":  # an impatient user: a second Ctrl-C while the first is handled
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(random.uniform(0.01, 1.0))
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGINT)
        elif how == "worker":
            # the worker processes (multiprocessing.spawn), not its resource tracker
            kids = [c for c in children(p.pid) if "spawn_main" in cmdline(c)]
            if kids:
                os.kill(random.choice(kids), signal.SIGKILL)
            else:
                how = "worker (none yet)"
    else:
        how = "none (ended first)"
    try:
        rc = p.wait(timeout=240)
    except subprocess.TimeoutExpired:
        problems.append(f"{log.name}: did not end within 240 s after the signal")
        os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
    text = log.read_text()
    if how in ("int", "int2") and rc not in (0, 130):
        problems.append(f"{log.name}: Ctrl-C: exit {rc}: {text[-1500:]!r}")
    if how in ("int", "int2") and rc == 130:
        # one line saying why (after a note of what is recorded); a Ctrl-C in the first
        # seconds of the cluster's start may print a starting worker's traceback (README)
        errs = [ln for ln in text.splitlines() if ln.startswith(("error:", "stopped:"))]
        if len(errs) != 1 or ("Traceback" in text and "spawn.py" not in text):
            problems.append(f"{log.name}: Ctrl-C output is not one error line: {text[-1500:]!r}")
    started = "the local cluster did not start" not in text  # a worker killed while it starts: one line
    if how.startswith("worker") and rc != 0 and started:
        problems.append(f"{log.name}: worker killed: the study did not complete by itself (exit {rc}): "
                        f"{text[-800:]!r}")
    if "Traceback" in text and how != "cli" and not (how.startswith("int") and "spawn.py" in text):
        problems.append(f"{log.name}: traceback: {text[-1500:]!r}")
    # processes of the killed run: they must go (a worker writing into DIR during the resume)
    t0 = time.time()
    while session_pids(sid) and time.time() - t0 < a.orphan_wait:
        time.sleep(0.2)
    left = session_pids(sid)
    if a.orphan_wait <= 0:  # resume at once, the killed run's processes still going (their own end)
        LIVE_SESSIONS.append(sid)
        left = []
    if left:
        problems.append(f"{len(left)} process(es) of the killed run still alive {a.orphan_wait:.0f} s later: "
                        + "; ".join(cmdline(x)[:100] for x in left))
        for x in left:
            try:
                os.kill(x, signal.SIGKILL)
            except OSError:
                pass
    return f"{how} at {delay:.2f} s (exit {rc}, processes gone {time.time() - t0:.1f} s after)", rc


def trial(k: int, a, base_args, base_tables, t_max: float) -> list[str]:
    work = Path(a.work)
    out = work / f"t{k}"
    shutil.rmtree(out, ignore_errors=True)
    problems = []
    said = []
    for j in range(a.kills):
        prev = journal(out)
        prev_done = {e["batch"] for e in prev if isinstance(e.get("batch"), int)}
        args = [*base_args, "--out", out] + (["--resume"] if j else [])
        what, _rc = interrupted_run(a, args, out, work / f"t{k}-run{j + 1}.log", random.uniform(0, t_max), problems)
        new = journal(out)[len(prev):]
        again = sorted(e["batch"] for e in new if e.get("batch") in prev_done)
        if again:
            problems.append(f"run {j + 1}: batches journaled before it were journaled again: {again[:10]}")
        said.append(what)
    before = journal(out)
    done_before = {e["batch"] for e in before if isinstance(e.get("batch"), int)}
    written_before = complete_stats_files(out) - done_before
    n_lines = len(before)
    status1 = None
    if (out / "manifest.json").exists():
        status1 = json.loads((out / "manifest.json").read_text()).get("status")
    how = "; ".join(said)
    resume_args = [*base_args, "--out", out, "--resume"]
    final_log = work / f"t{k}-run{a.kills + 1}.log"
    p2 = cli(resume_args, final_log, env=a.env)
    try:
        rc2 = p2.wait(timeout=300)
    except subprocess.TimeoutExpired:
        problems.append("resume did not end within 300 s")
        os.killpg(p2.pid, signal.SIGKILL)
        rc2 = p2.wait()
    log2 = final_log.read_text()
    if rc2 != 0:
        problems.append(f"resume exit {rc2}: {log2[-1500:]!r}")
    if "Traceback" in log2:
        problems.append(f"traceback in the resume: {log2[-1500:]!r}")
    after = journal(out)
    new = after[n_lines:]
    again = sorted(e["batch"] for e in new if e.get("batch") in done_before)
    if again:
        problems.append(f"batches journaled before the resume were journaled again: {again[:10]}")
    solved_again = sorted(e["batch"] for e in new if e.get("batch") in written_before and not e.get("adopted"))
    if solved_again:
        problems.append(f"written (complete) but unjournaled batches solved again, not adopted: {solved_again[:10]}")
    try:
        m = json.loads((out / "manifest.json").read_text())
        if m.get("status") != "complete":
            problems.append(f"manifest status {m.get('status')}")
        s = json.loads((out / "summary.json").read_text())
        if s.get("sources_solved") != base_tables["n"]:
            problems.append(f"summary: sources solved {s.get('sources_solved')} != {base_tables['n']}")
        diff = [k for k in set(s) | set(base_tables["summary"]) if k != "timings"
                and s.get(k) != base_tables["summary"].get(k)]
        if diff:
            problems.append(f"summary differs from the uninterrupted run's in {sorted(diff)}")
    except (OSError, ValueError) as exc:
        problems.append(f"manifest/summary unreadable: {exc}")
    lines = {}
    for e in after:
        if isinstance(e.get("batch"), int):
            lines[e["batch"]] = e
    if len(lines) != base_tables["batches"]:
        problems.append(f"journal covers {len(lines)} batches, not {base_tables['batches']}")
    for name in ("stats", "distances", "predecessors", "matrix"):
        want = base_tables.get(name)
        got = table(out / name)
        if want is None and got is None:
            continue
        if got is None or want is None or not got.equals(want):
            problems.append(f"{name} differ from the uninterrupted run's "
                            f"({None if got is None else got.num_rows} rows against "
                            f"{None if want is None else want.num_rows})")
    for sid in LIVE_SESSIONS:
        time.sleep(0.5)
        for x in session_pids(sid):
            if not cmdline(x):  # a zombie, or gone meanwhile
                continue
            problems.append(f"a process of killed run {sid} outlived the resume: {cmdline(x)[:100]}")
            try:
                os.kill(x, signal.SIGKILL)
            except OSError:
                pass
    LIVE_SESSIONS.clear()
    tmp = leftovers(out)
    if tmp:
        problems.append(f"temporary files left: {tmp[:5]}")
    print(f"trial {k}: {how}; status {status1}, {len(done_before)} journaled, "
          f"{len(written_before)} written unjournaled -> resume exit {rc2}, {len(new)} new lines: "
          + ("OK" if not problems else "PROBLEMS"), flush=True)
    for pr in problems:
        print("   -", pr[:2000], flush=True)
    if not problems:
        shutil.rmtree(out, ignore_errors=True)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--mode", choices=("cli", "worker", "int", "int2"), default="cli")
    ap.add_argument("--work", default="/tmp/killharness")
    ap.add_argument("--distances", action="store_true")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--algorithm", default="auto")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--t-max", type=float, default=None, help="latest kill time (default: the base run's wall)")
    ap.add_argument("--orphan-wait", type=float, default=20.0)
    ap.add_argument("--extra", default="", help="more study options, e.g. '--random-targets 40'")
    ap.add_argument("--kills", type=int, default=1, help="runs interrupted before the final resume")
    ap.add_argument("--after-first-batch", action="store_true",
                    help="count the kill's delay from the first journal line")
    ap.add_argument("--schedule", default=None, help="sssp.study.schedule (batch: one task per batch)")
    a = ap.parse_args()
    random.seed(a.seed)
    a.env = {"DASK_SSSP__STUDY__SCHEDULE": a.schedule} if a.schedule else {}
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    base_args = [Path(a.graph).resolve(), "--sources", "all", "--batch-size", a.batch_size, "--algorithm",
                 a.algorithm, "--cpu-workers", 2, "--no-dashboard"]
    if a.distances:
        base_args += ["--outputs", "distances"]
    base_args += a.extra.split()
    base = work / "base"
    shutil.rmtree(base, ignore_errors=True)
    t0 = time.time()
    p = cli([*base_args, "--out", base], work / "base.log", env=a.env)
    if p.wait() != 0:
        print((work / "base.log").read_text())
        return 1
    wall = time.time() - t0
    m = json.loads((base / "manifest.json").read_text())
    base_tables = {"stats": table(base / "stats"), "distances": table(base / "distances"),
                   "predecessors": table(base / "predecessors"), "matrix": table(base / "matrix"),
                   "n": m["graph"]["vertices"], "batches": m["batches"],
                   "summary": json.loads((base / "summary.json").read_text())}
    print(f"base run: {wall:.1f} s, {m['batches']} batches", flush=True)
    t_max = a.t_max or wall
    bad = 0
    for k in range(a.trials):
        bad += bool(trial(k, a, base_args, base_tables, t_max))
    print(f"{a.trials - bad}/{a.trials} trials OK")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
