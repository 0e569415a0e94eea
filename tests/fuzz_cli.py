#!/usr/bin/env python
"""Fuzzing of the `sssp` command line against its exit-status promise.

Not collected by pytest (no ``test_`` prefix).  Run from the checkout::

    python tests/fuzz_cli.py --seconds 600 --seed S --out DIR [--commands solve,study]
                             [--timeout S] [--study-timeout S] [-v]
    python tests/fuzz_cli.py --replay DIR/case-NNNN.json

It builds random invocations of every subcommand (``generate`` with each family) from
the options the real parsers declare (``gpu_sssp.workflows.cli.build_parser()`` is
introspected: option strings, ``nargs``, ``choices``, ``type``, required options and
positionals), each option's value drawn from valid ones (small graphs: ``rome99.gr``,
``USAir97.mtx``, ``karate.mtx``, a generated 4x4 grid, an ingested Parquet file, ``.ss``
sources files, ids that exist) or hostile ones (0, -1, huge numbers, ``nan``, ``inf``,
``''``, unicode digits and text, directories, missing files, paths below a file, the
input itself as the output), with options sometimes repeated, dropped or given twice
with conflicting values.  Studies get a local CPU cluster (``--cpu-workers 1
--no-dashboard`` most of the time) and few sources.

Each command runs in a subprocess (its own session, killed as a group at its timeout)
in a fresh folder of a sandbox whose ``HOME`` / ``XDG_CACHE_HOME`` are inside the
sandbox, and is flagged when:

- stderr holds a Python traceback (a bug);
- the exit status is not one of 0, 1, 2, 3, 4, 130, 143;
- it does not end within its timeout (a hang);
- it fails (status 2, 3, 4, 130, 143) with nothing on stderr, or not with exactly one
  ``error:`` / ``stopped:`` line, the last one (progress, ``warning:`` and ``note:`` lines
  may come before it; a usage error too: argparse's usage block is a failure);
- it fails and leaves a new file or folder behind (caches excepted: ``.sssp-cache/``,
  ``*.csr.npz``, ``*.ch.npz`` and the sandbox's cache home).

Each flagged case is saved as ``DIR/case-NNNN.json`` (argv, cwd, status, stdout, stderr,
the reasons, leftovers); a summary per subcommand and reason is printed at the end, and
the exit status is 1 when anything was flagged.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ALLOWED = {0, 1, 2, 3, 4, 130, 143}
RUNNER = ("import sys; from gpu_sssp.workflows.cli import main; sys.exit(main(sys.argv[1:]))")
CACHE_PARTS = (".sssp-cache", "cache-home")
CACHE_SUFFIXES = (".csr.npz", ".ch.npz")

HOSTILE_INTS = ["0", "-1", "-5", "9223372036854775808", "1" + "0" * 30, "nan", "inf", "-inf", "",
                "x", "٣", "1e3", "0x10", " 3", "3.5", "+2", "1_000"]
HOSTILE_FLOATS = ["nan", "inf", "-inf", "-1", "0", "1e400", "-0", "", "x", "1e-400", "2"]
HOSTILE_TEXT = ["", " ", "é", "\u202e", "a,b", ",", "all,all", "x" * 300, "-", "--", "☃",
                "random:1:2", "random:2:1:0", "random:1:1e400:0", "random:-1:5:0", "random:nan:2:0",
                "random-float:0:1:-1", "unit:1", "file", "1:2:3"]


def _parsers():
    from gpu_sssp.workflows.cli import build_parser

    root = build_parser()
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        inner = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if inner:
            for fam, fp in inner[0].choices.items():
                out[f"{name} {fam}"] = fp
        else:
            out[name] = p
    return out


class Sandbox:
    """The folder the commands run in, with the inputs they draw from."""

    def __init__(self, root: Path, python: str):
        self.root = root
        self.python = python
        self.inputs = root / "inputs"
        self.inputs.mkdir(parents=True, exist_ok=True)
        self.runs = root / "runs"
        self.runs.mkdir(exist_ok=True)
        data = REPO / "data"
        for name in ("rome99.gr", "USAir97.mtx", "karate.mtx", "Random4-C.9.0.ss", "clrs-p659-zero-based.gr",
                     "clrs-p659-zero-based.ss"):
            shutil.copy(data / name, self.inputs / name)
        (self.inputs / "rome.ss").write_text("p aux sp ss 3\ns 1\ns 2\ns 3337\n")
        (self.inputs / "ids.txt").write_text("1\n2\n# c\n5\n")
        (self.inputs / "bad.ss").write_text("s abc\n")
        (self.inputs / "empty.ss").write_text("")
        (self.inputs / "zero.ss").write_text("s 0\n")
        (self.inputs / "adir").mkdir(exist_ok=True)
        if not (self.inputs / "fifo").exists():  # an output that is not a regular file (never /dev/null:
            os.mkfifo(self.inputs / "fifo")     # as root, a rename over it replaced the device)
        (self.inputs / "notjson.json").write_text("{not json")
        (self.inputs / "sched.json").write_text('{"address": "tcp://127.0.0.1:1"}')
        (self.inputs / "neg.gr").write_text("p sp 3 3\na 1 2 1\na 2 3 -5\na 3 1 1\n")
        (self.inputs / "junk.gr").write_text("hello\n")
        env = self.env()
        for argv in (["generate", "grid", "--rows", "4", "--cols", "4", "-o", str(self.inputs / "grid.parquet"), "-q"],
                     ["ingest", str(self.inputs / "rome99.gr"), "-o", str(self.inputs / "rome99.parquet"), "-q"],
                     ["ingest", str(self.inputs / "rome.ss"), "-o", str(self.inputs / "rome.ss.parquet"), "-q"]):
            subprocess.run([python, "-c", RUNNER, *argv], env=env, cwd=self.inputs, check=True,
                           stdout=subprocess.DEVNULL)

    def env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["HOME"] = str(self.root / "home")
        env["XDG_CACHE_HOME"] = str(self.root / "cache-home")
        env["COLUMNS"] = "80"
        env.pop("DASK_SSSP__STUDY__BATCH_SIZE", None)
        return env

    # values ---------------------------------------------------------------
    def graphs(self):
        i = self.inputs
        return [i / "rome99.gr", i / "rome99.parquet", i / "grid.parquet", i / "karate.mtx", i / "USAir97.mtx",
                i / "clrs-p659-zero-based.gr"]

    def hostile_paths(self, case: Path):
        i = self.inputs
        return [i / "adir", i / "missing.gr", i / "rome99.gr" / "x", i / "junk.gr", i / "neg.gr", i / "empty.ss",
                case / "ünï ☃.gr", Path(""), Path("-"), i / "notjson.json"]

    def sources_files(self):
        i = self.inputs
        return [i / "rome.ss", i / "ids.txt", i / "Random4-C.9.0.ss", i / "rome.ss.parquet", i / "bad.ss",
                i / "empty.ss", i / "zero.ss", i / "clrs-p659-zero-based.ss"]


def _value(rng: random.Random, sb: Sandbox, cmd: str, action, case: Path, graph: Path | None,
           hp: float = 0.2) -> str:
    """One value for ``action``: valid most of the time, hostile with probability ``hp``."""
    hostile = rng.random() < hp
    dest = action.dest
    if action.choices and not hostile:
        return str(rng.choice(list(action.choices)))
    if dest in ("output", "out", "report"):
        good = [case / "o.parquet", case / "sub" / "o.parquet", case / "outdir"]
        if dest == "report":
            good = [case / "r.html"]
        if dest == "out" and cmd in ("study", "bench"):
            good = [case / "study-out", case / "deep" / "x"]
        bad = [sb.inputs / "adir", sb.inputs / "rome99.gr" / "x", sb.inputs / "rome99.gr", case, Path(""),
               (graph or sb.inputs / "rome99.gr"), case / "ü☃.parquet", sb.inputs / "grid.parquet",
               Path("/proc/x.parquet"), sb.inputs / "fifo"]
        return str(rng.choice(bad if hostile else good))
    if dest in ("sources_file", "targets", "from_rows"):
        if dest == "targets" and rng.random() < 0.4:
            return "all"
        pool = sb.sources_files() if not hostile else sb.hostile_paths(case)
        return str(rng.choice(pool))
    if dest in ("input", "graph", "graphs"):
        return str(rng.choice(sb.hostile_paths(case) if hostile else sb.graphs()))
    if dest == "scheduler_file":
        return str(rng.choice([sb.inputs / "notjson.json", sb.inputs / "sched.json", sb.inputs / "adir",
                               sb.inputs / "missing.json", sb.inputs / "empty.ss"]))
    if dest == "scheduler":
        return rng.choice(["tcp://127.0.0.1:1", "", "nonsense::", "tcp://[::1", "inproc://x"])
    if dest == "gpus":
        return rng.choice(["0", "0,1", "", "-1", "a", "0,0", "99"])
    if dest == "host":
        return rng.choice(["127.0.0.1", "localhost", "", "8.8.8.8", "no.such.host.invalid", "::1", "0.0.0.0", "☃"])
    if dest == "dashboard_address":
        return rng.choice([":0", "127.0.0.1:0", "", ":99999", "8.8.8.8:80", "x", ":-1", "localhost:abc"])
    if dest == "cpu_workers":
        return rng.choice(["1", "1", "1", "2", "0", "-1", "1000000", "x"])
    if dest == "weights" and cmd.startswith("generate"):
        return rng.choice(["1:100", "0.2:0.9", "1:1", "5:1", "-3:3", "0:0", "1:1e300", "nan:1", "x", "",
                           "1:inf", ":", "1:9223372036854775807"])
    if dest == "weights":
        return rng.choice(["unit", "file", "random:1:10:3", "random-float:0.5:2:1"] if not hostile else HOSTILE_TEXT)
    if dest in ("algorithm", "method", "methods", "algorithms"):
        pool = ["auto", "dijkstra", "bellman-ford", "phast", "batched", "bfs", "delta-stepping", "all", "cpu",
                "gpu", "phast@cpu", "dijkstra@cpu", "phast@gpu", "dijkstra,phast@cpu"]
        return rng.choice(pool if not hostile else pool + HOSTILE_TEXT)
    if dest == "outputs":
        return rng.choice(["stats", "stats,distances", "distances", "predecessors", "stats,predecessors",
                           "", "bogus", "stats,stats", "distances,predecessors"])
    if dest == "max_distance_bytes":
        return rng.choice(["20GB", "1", "0", "-1", "1e400", "nan", "2e9", "x", "", "1TB"])
    if dest in ("baselines",):
        return rng.choice(["scipy", "", "none", "scipy,scipy", "bogus", "networkit"])
    if dest in ("ablation",):
        return rng.choice(["", "hbf", "bogus"])
    if dest in ("locality_k",):
        return rng.choice(["1,2", "1", "", "0", "-1", "x", "1,1"])
    if dest in ("exclude",):
        return rng.choice(["", "rome99", "x"])
    if dest in ("source",):
        return rng.choice(["1", "2", "3", "0", "-1", "3353", "99999999999", "4"] if not hostile else HOSTILE_INTS)
    if dest in ("random", "random_targets", "sources") and cmd in ("study", "verify", "bench"):
        return rng.choice(["1", "2", "3"] if not hostile else HOSTILE_INTS)
    if dest in ("batch_size",):
        return rng.choice(["1", "2", "64", "3"] if not hostile else HOSTILE_INTS)
    if dest in ("scale",):
        return rng.choice(["1", "2", "4", "0"] if not hostile else HOSTILE_INTS + ["40", "63", "64"])
    if dest in ("rows", "cols", "n", "m"):
        return rng.choice(["1", "2", "4", "10"] if not hostile else HOSTILE_INTS + ["100000000"])
    if dest in ("edge_factor",):
        return rng.choice(["1", "2", "4"] if not hostile else HOSTILE_INTS)
    if dest in ("min_component",):
        return rng.choice(["1", "10", "100000"] if not hostile else HOSTILE_INTS)
    if dest in ("runs", "warmup", "slow_sources"):
        return rng.choice(["1", "0", "2"] if not hostile else HOSTILE_INTS)
    if action.type is int:
        return rng.choice(["0", "1", "2", "3", "7", "1000"] if not hostile else HOSTILE_INTS)
    if action.type is float:
        return rng.choice(["0", "0.1", "0.5", "1", "0.25"] if not hostile else HOSTILE_FLOATS)
    if action.choices:
        return rng.choice(HOSTILE_TEXT)
    return rng.choice(["x", "1", "a,b"] if not hostile else HOSTILE_TEXT)


def _coherent_study(rng: random.Random, sb: Sandbox, parser, case: Path) -> list[str]:
    """A study that should run: one way of choosing sources, targets or not, outputs and
    their form together, a one-worker local CPU cluster; then 0-2 options of any kind."""
    graph = rng.choice(sb.graphs()[:4])
    argv = ["study", str(graph), "--cpu-workers", "1", "--no-dashboard", "--out", str(case / "study-out")]
    way = rng.choice(["random", "random", "source", "file", "all-small"])
    if way == "random" or (way == "all-small" and "grid" not in graph.name):
        argv += ["--random", rng.choice(["1", "2", "3", "5"])] + (["--seed", rng.choice(["0", "7"])]
                                                                 if rng.random() < 0.5 else [])
    elif way == "source":
        for _ in range(rng.choice([1, 2, 3])):
            argv += ["-s", rng.choice(["1", "2", "3", "4"])]
    elif way == "file":
        argv += ["--sources-file", str(sb.inputs / "ids.txt")]
    else:
        argv += ["--sources", "all"]
    if rng.random() < 0.3:
        argv += rng.choice([["--targets", "all"], ["--random-targets", rng.choice(["1", "3"])],
                            ["--targets", str(sb.inputs / "ids.txt")]])
        if rng.random() < 0.5:
            argv += ["--stats-over", rng.choice(["targets", "all"])]
        if rng.random() < 0.5:
            argv += ["--matrix-form", rng.choice(["wide", "long"])]
    elif rng.random() < 0.4:
        argv += ["--outputs", rng.choice(["stats,distances", "distances", "stats,predecessors"])]
        if rng.random() < 0.5:
            argv += ["--distance-form", rng.choice(["long", "wide"])]
    if rng.random() < 0.4:
        argv += ["--algorithm", rng.choice(["auto", "dijkstra", "phast", "bellman-ford", "batched", "bfs"])]
    if rng.random() < 0.4:
        argv += ["--batch-size", rng.choice(["1", "2", "3"])]
    if rng.random() < 0.3:
        argv += ["--order", rng.choice(["given", "locality"])]
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    for _ in range(rng.choice([0, 0, 1, 2])):
        a = rng.choice(options)
        flag = rng.choice(a.option_strings)
        argv += [flag] if a.nargs == 0 else [flag, _value(rng, sb, "study", a, case, graph, 0.3)]
    return argv


def _build(rng: random.Random, sb: Sandbox, cmd: str, parser, case: Path) -> list[str]:
    if cmd == "study" and rng.random() < 0.6:
        return _coherent_study(rng, sb, parser, case)
    head = cmd.split()
    argv: list[str] = []
    positionals = [a for a in parser._actions if not a.option_strings]
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    graph = None
    hp = rng.choice([0.0, 0.0, 0.05, 0.15, 0.3])  # how hostile this invocation is
    pp = rng.choice([0.15, 0.3, 0.45])  # how many options it names
    for a in positionals:
        if a.nargs in ("?", "*") and rng.random() < 0.1:
            continue
        if a.nargs == "*" or a.nargs == "+":
            vals = [_value(rng, sb, cmd, a, case, None, hp) for _ in range(rng.choice([1, 1, 2]))]
        else:
            vals = [_value(rng, sb, cmd, a, case, None, hp)]
        graph = Path(vals[0])
        argv += vals
    # a study/bench/verify: keep them cheap
    if cmd == "study":
        if rng.random() < 0.9:
            argv += ["--cpu-workers", "1"]
        if rng.random() < 0.9:
            argv += ["--no-dashboard"]
        if rng.random() < 0.7:
            argv += ["--random", rng.choice(["1", "2", "3"])]
        if rng.random() < 0.8:
            argv += ["--out", str(case / "study-out")]
    elif cmd == "bench":
        argv += ["--sources", rng.choice(["1", "2"]), "--min-component", "1", "--baselines", "scipy",
                 "--algorithms", rng.choice(["dijkstra", "phast@cpu", "bellman-ford", "dijkstra,phast@cpu"]),
                 "--no-plots", "--out", str(case / "bench-out")]
    elif cmd == "verify":
        if rng.random() < 0.8:
            argv += ["--random", rng.choice(["1", "2"])]
        if rng.random() < 0.7:
            argv += ["--methods", rng.choice(["dijkstra", "bellman-ford", "phast@cpu", "dijkstra,bfs"])]
    for a in options:
        required = getattr(a, "required", False)
        p = pp if not required else 0.97
        if rng.random() >= p:
            continue
        reps = 1 if rng.random() < 0.85 else 2
        for _ in range(reps):
            flag = rng.choice(a.option_strings)
            if a.nargs == 0:
                argv.append(flag)
            elif a.nargs == "+":
                argv += [flag] + [_value(rng, sb, cmd, a, case, graph, hp) for _ in range(rng.choice([1, 2]))]
            else:
                argv += [flag, _value(rng, sb, cmd, a, case, graph, hp)]
    if cmd == "solve" and "-s" not in argv and "--source" not in argv and rng.random() < 0.7:
        argv += ["-s", rng.choice(["1", "2"])]
    if rng.random() < 0.05:
        argv.insert(rng.randrange(len(argv) + 1), rng.choice(["--bogus", "-z", "--", "-h"]))
    return head + argv


_USAGE = re.compile(r"^usage: ", re.M)


def _snapshot(paths) -> set:
    """Every path under ``paths`` (with its kind: a FIFO replaced by a file is a change),
    caches left out."""
    seen = set()
    for root in paths:
        root = Path(root)
        if not root.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                p = Path(dirpath) / n
                s = str(p)
                if any(part in p.parts for part in CACHE_PARTS) or s.endswith(CACHE_SUFFIXES):
                    continue
                try:
                    kind = "fifo" if stat.S_ISFIFO(os.lstat(p).st_mode) else ""
                except OSError:
                    kind = ""
                seen.add(s + (" (fifo)" if kind else ""))
    return seen


def _judge(argv, rc, out, err, hung, leftovers) -> list[str]:
    reasons = []
    if hung:
        return ["hang"]
    if "Traceback (most recent call last)" in err:
        reasons.append("traceback")
    if rc not in ALLOWED:
        reasons.append(f"exit status {rc}")
    if rc != 0:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if _USAGE.search(err):
            reasons.append("usage block before the error line")
        else:
            # progress lines (bench's `device:` / `loaded` lines) may come first; the
            # error is one line, the last
            errs = [ln for ln in lines if ln.startswith(("error:", "stopped:"))]
            if not lines:
                reasons.append("no message")
            elif rc != 1 and len(errs) != 1:
                reasons.append("not one error line")
            elif rc != 1 and not lines[-1].startswith(("error:", "stopped:")):
                reasons.append("error line not last (multi-line error)")
        if leftovers:
            reasons.append("leftovers")
    return reasons


def run_case(sb: Sandbox, argv, case: Path, timeout: float):
    before = _snapshot([sb.inputs, case])
    t0 = time.monotonic()
    proc = subprocess.Popen([sb.python, "-c", RUNNER, *argv], cwd=case, env=sb.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    hung = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    wall = time.monotonic() - t0
    after = _snapshot([sb.inputs, case])
    leftovers = sorted(after - before) if proc.returncode != 0 else []
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    return proc.returncode, out, err, hung, leftovers, wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-cli-out")
    ap.add_argument("--commands", default="", help="comma-separated subcommands (default: all)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per command (not study)")
    ap.add_argument("--study-timeout", type=float, default=120)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--replay", help="a saved case-NNNN.json to run again")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.replay:
        saved = json.loads(Path(args.replay).read_text())
        sb = Sandbox(out / "sandbox", args.python)
        case = Path(saved["cwd"])
        case.mkdir(parents=True, exist_ok=True)
        rc, so, se, hung, left, wall = run_case(sb, saved["argv"], case, args.study_timeout)
        print(f"status {rc} in {wall:.1f}s\n--- stdout\n{so}\n--- stderr\n{se}\nreasons: "
              f"{_judge(saved['argv'], rc, so, se, hung, left)}; leftovers {left}")
        return 0
    rng = random.Random(args.seed)
    sb = Sandbox(out / "sandbox", args.python)
    parsers = _parsers()
    names = sorted(parsers)
    if args.commands:
        want = set(args.commands.split(","))
        names = [n for n in names if n in want or n.split()[0] in want]
    stats = Counter()
    flagged = Counter()
    n = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        n += 1
        cmd = rng.choice(names)
        case = sb.runs / f"{n:05d}"
        case.mkdir()
        argv_ = _build(rng, sb, cmd, parsers[cmd], case)
        timeout = args.study_timeout if cmd == "study" else args.timeout
        rc, so, se, hung, left, wall = run_case(sb, argv_, case, timeout)
        stats[(cmd, rc)] += 1
        reasons = _judge(argv_, rc, so, se, hung, left)
        if cmd == "study" and not reasons and rc in (0, 1) and (case / "study-out").is_dir() and rng.random() < 0.4:
            # the same folder again: --resume (sometimes with a changed option), or without it
            again = list(argv_) + (["--resume"] if rng.random() < 0.8 else [])
            if rng.random() < 0.4:
                again += rng.choice([["--batch-size", "1"], ["--algorithm", "dijkstra"], ["--random", "4"],
                                     ["--order", "given"], ["--outputs", "stats,distances"], ["--seed", "9"]])
            before_files = _snapshot([case / "study-out"])
            rc2, so2, se2, hung2, left2, wall2 = run_case(sb, again, case, timeout)
            # a refused resume must leave the folder as it was
            left2 = sorted(_snapshot([case / "study-out"]) - before_files) if rc2 not in (0, 1) else []
            r2 = _judge(again, rc2, so2, se2, hung2, left2)
            if r2 or args.verbose:
                print(f"[{n}r] {wall2:5.1f}s rc={rc2} resume" + (f"  FLAG {r2}" if r2 else ""), flush=True)
            if r2:
                argv_, rc, so, se, hung, left, wall, reasons = again, rc2, so2, se2, hung2, left2, wall2, r2
        if args.verbose or reasons:
            print(f"[{n}] {wall:5.1f}s rc={rc} {' '.join(map(repr, argv_))}" + (f"  FLAG {reasons}" if reasons else ""),
                  flush=True)
            if reasons or (args.verbose and rc):
                print("    " + (se.strip().splitlines() or ["(no stderr)"])[-1][:300], flush=True)
        if reasons:
            for r in reasons:
                flagged[(cmd, r)] += 1
            (out / f"case-{n:05d}.json").write_text(json.dumps({
                "argv": argv_, "cwd": str(case), "status": rc, "reasons": reasons, "wall_s": wall,
                "leftovers": left, "stdout": so[-20000:], "stderr": se[-20000:],
                "shell": " ".join(_shq(a) for a in ["sssp", *argv_])}, indent=1))
        else:
            shutil.rmtree(case, ignore_errors=True)
    print(f"\n{n} invocations in {args.seconds:.0f}s (seed {args.seed})")
    for cmd in names:
        codes = {rc: c for (c_, rc), c in stats.items() if c_ == cmd}
        print(f"  {cmd:16s} statuses {dict(sorted(codes.items(), key=lambda kv: str(kv[0])))}")
    for (cmd, r), c in sorted(flagged.items()):
        print(f"  FLAGGED {cmd}: {r} x{c}")
    return 1 if flagged else 0


def _shq(a: str) -> str:
    import shlex

    return shlex.quote(a)


if __name__ == "__main__":
    sys.exit(main())
