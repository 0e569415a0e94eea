"""Small defects: values like `-nan` after an option, the version of a checkout, the
sdist's README files, the start-up message of an unguarded script, heavy self-loops in
the bound on path lengths."""
from __future__ import annotations

import argparse
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from gpu_sssp.workflows.cli import build_parser, main
from gpu_sssp.workflows.common import NEGATIVE_VALUE


def _status(argv):
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own refusal
        return exc.code


@pytest.mark.parametrize("argv, message", [
    (["-n", "10", "-m", "-nan"], "argument -m/--edges: invalid int value: '-nan'"),
    (["-n", "10", "-m", "-NaN"], "argument -m/--edges: invalid int value: '-NaN'"),
    (["-n", "-nan", "-m", "5"], "argument -n/--vertices: invalid int value: '-nan'"),
    (["-n", "10", "-m", "5", "--negative-fraction", "-nan"], "argument --negative-fraction: '-nan': expected a finite number"),
    (["-n", "10", "-m", "5", "--weights", "-nan:5"], "argument --weights: '-nan:5': the bounds must be finite numbers"),
    (["-n", "10", "-m", "5", "--max-arcs", "-nan"], "argument --max-arcs: '-nan': expected a whole number >= 0"),
    (["-n", "10", "-m", "5", "--seed", "-nan"], "argument --seed: invalid int value: '-nan'"),
    (["-n", "10", "-m", "-Infinity"], "argument -m/--edges: invalid int value: '-Infinity'"),
])
def test_nan_after_an_option_reaches_that_option(tmp_path, capsys, argv, message):
    """`generate random` has `-n`: argparse read `-nan` as `-n an` (an option with its value
    in one token) before its negative-number test, so `-m -nan` said "argument -m/--edges:
    expected one argument" and `--negative-fraction -nan` the same of its option."""
    assert _status(["generate", "random", *argv, "-o", str(tmp_path / "g.parquet"), "-q"]) == 2
    err = capsys.readouterr().err
    assert message in err and "expected one argument" not in err
    assert not (tmp_path / "g.parquet").exists()


def test_no_option_looks_like_a_negative_value():
    """What lets `take_negative_values` read every such token as a value: no option of
    any command is itself one (an option named whole would still win)."""
    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sp in set(action.choices.values()):
                    yield from walk(sp)

    parsers = list(walk(build_parser()))
    assert len(parsers) > 5
    for parser in parsers:
        for opt in parser._option_string_actions:
            assert not NEGATIVE_VALUE.match(opt), (parser.prog, opt)


def _version_line(capsys):
    assert _status(["--version"]) == 0
    return capsys.readouterr().out.strip()


def test_version_of_a_checkout_without_installed_metadata(monkeypatch, capsys):
    """`PYTHONPATH=<checkout> sssp --version` said "sssp unknown" where gpu-sssp was not
    installed (the version came from the installed metadata only), and another copy's
    version where one was installed."""
    import importlib.metadata as md
    import os

    import gpu_sssp

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "version", missing)
    root = os.path.dirname(os.path.dirname(os.path.abspath(gpu_sssp.__file__)))
    line = _version_line(capsys)
    assert line.startswith(f"sssp {gpu_sssp.__version__}") and "unknown" not in line
    if os.path.isfile(os.path.join(root, "pyproject.toml")):  # the tests run from a checkout
        assert line == f"sssp {gpu_sssp.__version__} (source checkout {root})"


def test_version_of_an_installed_copy_and_a_percent_in_the_path(tmp_path, monkeypatch, capsys):
    import gpu_sssp

    site = tmp_path / "site%s 100%"
    (site / "gpu_sssp" / "kernels").mkdir(parents=True)
    (site / "gpu_sssp" / "kernels" / "__init__.py").write_text("")
    monkeypatch.setattr(gpu_sssp, "__file__", str(site / "gpu_sssp" / "__init__.py"))
    assert _version_line(capsys) == f"sssp {gpu_sssp.__version__}"  # a wheel's layout
    (site / "pyproject.toml").write_text("")
    assert _version_line(capsys) == f"sssp {gpu_sssp.__version__} (source checkout {site})"


ROOT = Path(__file__).resolve().parents[2]


def _readme_paths() -> set[str]:
    """The repository paths that README.md links to or shows: ``[text](path)``,
    ``![alt](path)``, ``[name]: path`` and ``<img src="path">``, less web addresses and
    anchors of the README itself."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    targets += re.findall(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", text, re.M)
    targets += re.findall(r"<(?:img|a)\b[^>]*?\b(?:src|href)=[\"']([^\"']+)[\"']", text)
    paths = set()
    for t in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I) or t.startswith(("#", "//")):
            continue  # https:, mailto:, an anchor
        p = unquote(t.split("#", 1)[0].split("?", 1)[0])
        if p:
            paths.add(posixpath.normpath(p))
    return paths


def test_readme_links_exist_and_are_in_the_manifest(monkeypatch):
    """The sdist left out docs/dashboard-status.png and docs/dashboard-sssp.png, which the
    README shows: an unpacked sdist's README had two broken images."""
    from setuptools.command.egg_info import FileList

    paths = _readme_paths()
    assert {"BENCHMARKS.md", "docs/dashboard-status.png", "docs/dashboard-sssp.png"} <= paths
    for p in paths:
        assert not p.startswith("../"), f"README.md links outside the repository: {p}"
        assert (ROOT / p).is_file(), f"README.md links to {p}, which is not in the repository"
    monkeypatch.chdir(ROOT)
    files = FileList()
    files.findall(".")
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            files.process_template_line(line)
    missing = {p for p in paths if p not in set(files.files) | {"README.md", "pyproject.toml"}}
    assert not missing, f"README.md links to files MANIFEST.in leaves out of the sdist: {sorted(missing)}"
    big = {f: (ROOT / f).stat().st_size for f in files.files if f.startswith("docs/")}
    assert sum(big.values()) < 1_000_000, f"MANIFEST.in puts more of docs/ in the sdist than README shows: {big}"


from tests.packaging.test_sdist import sdist_names  # noqa: E402,F401  (the built sdist's files)


def test_readme_links_are_in_the_built_sdist(sdist_names):  # noqa: F811
    missing = _readme_paths() - sdist_names
    assert not missing, f"README.md links to files missing from the sdist: {sorted(missing)}"


def _run_script(tmp_path, text, timeout=120):
    import os
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return script, subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=timeout)


def test_a_script_without_the_main_guard_is_told_to_add_it(tmp_path):
    """A script that starts a local cluster at its top level: each spawned worker imports it
    again and starts a cluster of its own, so no worker starts, every time.  The error said
    "a worker process ended while starting; run the command again"."""
    script, p = _run_script(tmp_path, "from gpu_sssp.pipeline.cluster import start_cluster\n\n"
                                      "start_cluster(cpu_workers=1, dashboard=False)\n")
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("gpu_sssp.pipeline.cluster.ClusterStartError: the local cluster did not start ("), last
    assert last.endswith(f"{script}:3 starts the cluster outside 'if __name__ == \"__main__\":'; "
                         "put the script's work under that guard"), last
    assert "run the command again" not in last
    assert p.stderr.count("Traceback") == 1, p.stderr  # the script's own error, no Dask chain


def test_an_unguarded_study_script_gets_one_error_not_one_per_worker(tmp_path):
    """``study()`` at a script's top level: each spawned worker ran it again, and each
    printed a traceback ending in "st is in use by another study run ... then --resume"
    (the folder its parent held) before the parent's one error; the workers now end
    quietly and the parent's error is the only one."""
    import shutil

    shutil.copy(ROOT / "data" / "rome99.gr", tmp_path / "rome99.gr")
    script, p = _run_script(tmp_path, "import gpu_sssp as sssp\n"
                                      "sssp.study('rome99.gr', random=8, out='st', cpu_workers=2)\n")
    assert p.returncode == 1
    assert p.stderr.count("Traceback") == 1 and "in use by another study" not in p.stderr, p.stderr
    assert p.stderr.strip().splitlines()[-1].endswith(f"{script}:2 starts the cluster outside 'if __name__ == "
                                                      "\"__main__\":'; put the script's work under that guard")
    assert not (tmp_path / "st").exists()


def test_a_study_from_a_script_on_standard_input_says_what_to_do(tmp_path):
    """``python - <<EOF`` with a study: every spawned worker failed on ``FileNotFoundError:
    .../<stdin>`` (a traceback each), then "a worker process ended while starting; run the
    command again", which fails the same way.  Refused before any worker starts now."""
    import os
    import shutil
    import subprocess
    import sys

    shutil.copy(ROOT / "data" / "rome99.gr", tmp_path / "rome99.gr")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-"], input="import gpu_sssp as sssp\n"
                       "sssp.study('rome99.gr', random=8, out='st', cpu_workers=1)\n", cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("gpu_sssp.pipeline.cluster.ClusterStartError: a local cluster's worker processes run "
                           "the main script again"), p.stderr
    assert "(<stdin>) is not a file they can read" in last and "python -c" in last
    assert p.stderr.count("Traceback") == 1 and "FileNotFoundError" not in p.stderr, p.stderr
    assert not (tmp_path / "st").exists()


def test_a_pool_worker_may_start_a_study_after_its_import(tmp_path):
    """A later call in a spawned process (a function a pool runs) is not taken for the
    script's import."""
    script, p = _run_script(tmp_path, '''\
import multiprocessing as mp


def probe(_):
    from gpu_sssp.pipeline.cluster import quiet_in_spawned_import
    quiet_in_spawned_import()
    return "went on"


if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as pool:
        print(pool.map(probe, [0]))
''')
    assert p.returncode == 0 and "['went on']" in p.stdout, p.stderr


def test_which_cluster_starts_count_as_unguarded(tmp_path):
    script, p = _run_script(tmp_path, '''\
from gpu_sssp.pipeline.cluster import _unguarded_main_line as where


def start():
    return where()


print("top", where())
print("call", start())
if __name__ == "__main__":
    print("guarded", where())
    print("guarded-call", start())
if "__main__" == __name__:
    print("reversed", start())
else:
    print("never")
''', timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"top {script}:8", f"call {script}:9", "guarded None", "guarded-call None",
                                     "reversed None"]


# ---------------------------------------------------------------- self-loops and the bound

CPU_METHODS = ["dijkstra", "bellman-ford", "phast"]


def _loop_graph(loop_weights, *, negative_loop=None):
    """0 -> 1 -> 2 (weight 1 each), a self-loop of each of ``loop_weights`` on 2, 3, ...;
    ``negative_loop``: a self-loop of that weight on 1 as well."""
    import numpy as np

    from gpu_sssp.kernels.graph import Graph

    src, dst, w = [0, 1], [1, 2], [1, 1]
    for i, lw in enumerate(loop_weights):
        src.append(2 + i), dst.append(2 + i), w.append(lw)
    if negative_loop is not None:
        src.append(1), dst.append(1), w.append(negative_loop)
    return Graph.from_edges(src, dst, np.array(w, dtype=np.int64), n=max(4, 2 + len(loop_weights)))


def _runnable(method):
    from gpu_sssp.kernels import hierarchy

    if method == "phast" and not hierarchy.library_available():
        pytest.skip("phast needs routingkit_ch (ch-router)")


@pytest.mark.parametrize("method", CPU_METHODS)
@pytest.mark.parametrize("loops", [[2**53 - 1], [2**52, 2**52], [2**40, 2**35]])
def test_a_heavy_self_loop_no_path_uses_is_not_refused(method, loops):
    """A non-negative self-loop is on no simple path: the bound on path lengths counted it
    (the in-arc sum), so 0 -> 1 -> 2 with a loop of 2**53 - 1 on 2 was "integer weights too
    large for exact distances" for every method, and phast refused loops summing past 2**30."""
    from gpu_sssp import kernels

    _runnable(method)
    g = _loop_graph(loops)
    g.check_exact()
    res = kernels.solve(g, [0, 2], method=method, backend="cpu")
    assert res.distances[0][:3].tolist() == [0.0, 1.0, 2.0]
    assert res.distances[1][2] == 0.0


@pytest.mark.parametrize("method", ["bellman-ford", "auto"])
def test_a_negative_self_loop_is_still_a_negative_cycle(method):
    from gpu_sssp import kernels
    from gpu_sssp import NegativeCycleError

    g = _loop_graph([2**53 - 1], negative_loop=-1)
    with pytest.raises(NegativeCycleError):
        kernels.solve(g, [0], method=method, backend="cpu")
    g = _loop_graph([2**52], negative_loop=-(2**53 - 1))  # a negative loop still counts in the bound
    with pytest.raises(ValueError, match="too large for exact distances"):
        g.check_exact()


def test_a_self_loop_from_2_53_still_counts():
    """A loop's ``d[u] + w`` must stay within int64 and exact enough never to go below
    ``d[u]``: loops of 2**53 and more are counted as before."""
    g = _loop_graph([2**53])
    with pytest.raises(ValueError, match="too large for exact distances"):
        g.check_exact()


@pytest.mark.parametrize("method", CPU_METHODS)
def test_solve_reads_a_file_whose_heavy_arcs_are_self_loops(tmp_path, capsys, method):
    """The ingestion's own bound (the same rule, on the arcs it streams) refused the file
    before any method ran: "weight 4503599627370496 is too large for exact shortest paths"."""
    _runnable(method)
    gr = tmp_path / "loops.gr"
    gr.write_text("p sp 4 4\na 1 2 1\na 2 3 1\na 3 3 4503599627370496\na 4 4 4503599627370496\n")
    out = tmp_path / "d.parquet"
    assert main(["solve", str(gr), "-s", "1", "--method", f"{method}@cpu", "-o", str(out)]) == 0, \
        capsys.readouterr().err
    import pyarrow.parquet as pq

    t = pq.read_table(out).to_pydict()
    assert dict(zip(t["vertex"], t["distance"])) == {1: 0.0, 2: 1.0, 3: 2.0}


def test_a_report_below_a_file_says_the_file_is_one(tmp_path, monkeypatch, capsys):
    """``--report rome99.gr/r.html`` said "no folder rome99.gr to write it in" of a
    file that exists (``--out`` and ``-o`` say "is a file, not a folder")."""
    import shutil

    shutil.copy(ROOT / "data" / "rome99.gr", tmp_path / "rome99.gr")
    monkeypatch.chdir(tmp_path)
    for report, said in (("rome99.gr/r.html", "error: --report rome99.gr/r.html: rome99.gr is a file, not a folder"),
                         ("rome99.gr/x/r.html", "error: --report rome99.gr/x/r.html: rome99.gr is a file, not a folder"),
                         ("none/r.html", "error: --report none/r.html: no folder none to write it in")):
        assert _status(["study", "rome99.gr", "--random", "2", "--report", report, "--out", "st"]) == 2
        assert capsys.readouterr().err.strip() == said
    assert not (tmp_path / "st").exists()
