"""The distribution as a user gets it: a wheel built from this checkout, installed
without the source tree (not editable), under the one import namespace ``gpu_sssp``.

Builds the wheel once per session (pip's isolated build fetches setuptools from the
registry, as any user's `pip install .` does), from a copy of what the build reads: a
build in the checkout left its ``build/`` and ``gpu_sssp.egg-info/`` there.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernels", "pipeline", "workflows")
#: what a build leaves where it runs, and caches: not copied for the build
_NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info", "build", "dist", ".sssp-cache",
                                     "*.csr.npz", "*.ch.npz")


def _build_tree(dest: Path) -> Path:
    """A copy of what the wheel is built from: the checkout's top-level files
    (``pyproject.toml``, ``README.md``, ``MANIFEST.in``, licence files) and the folders
    of pyproject's ``package-dir`` (``gpu_sssp/``, ``kernels/``, ...), less caches and
    earlier builds' leftovers.  A few hundred kilobytes: the copy costs milliseconds."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = set(conf["tool"]["setuptools"]["package-dir"].values())
    dest.mkdir()
    for entry in ROOT.iterdir():
        if entry.is_file():
            shutil.copy2(entry, dest / entry.name)
    for folder in sorted(folders):
        shutil.copytree(ROOT / folder, dest / folder, ignore=_NOT_COPIED)
    return dest


def _checkout_state() -> dict[str, float]:
    """The checkout's top-level entries and the package folders' files (with their
    mtimes), caches apart: what a build could leave or change."""
    state = {e.name: 0.0 for e in ROOT.iterdir()}
    for folder in ("gpu_sssp", *PACKAGES):
        for f in (ROOT / folder).rglob("*"):
            if "__pycache__" not in f.parts:
                state[f.relative_to(ROOT).as_posix()] = f.stat().st_mtime
    return state


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> tuple[Path, dict, dict]:
    """``(wheel, checkout state before the build, after it)``."""
    out = tmp_path_factory.mktemp("wheel")
    before = _checkout_state()
    src = _build_tree(out / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True)
    after = _checkout_state()
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}")
    (whl,) = out.glob("gpu_sssp-*.whl")
    return whl, before, after


@pytest.fixture(scope="session")
def wheel(built) -> Path:
    return built[0]


def test_building_the_wheel_leaves_the_checkout_as_it_was(built):
    """``pip wheel <checkout>`` builds in the tree it is given: every run of this file
    left ``build/`` and ``gpu_sssp.egg-info/`` in the checkout (``git status --ignored``),
    and a later build or sdist could read the stale ``SOURCES.txt``."""
    _whl, before, after = built
    added = sorted(set(after) - set(before))
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    assert not added and not changed, f"the wheel's build changed the checkout: added {added}, changed {changed}"


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel unpacked into a folder of its own (``pip install --target``), no deps:
    they come from the test environment, the package only from the wheel."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    return site


def _expected_files() -> set[str]:
    """Every module and data file of the source tree, named as the wheel must hold it."""
    want = {"gpu_sssp/__init__.py"}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*"):
            if "__pycache__" in f.parts or not f.is_file():
                continue
            if f.suffix in (".py", ".cu", ".cuh", ".yaml"):
                want.add(f"gpu_sssp/{pkg}/{f.relative_to(ROOT / pkg).as_posix()}")
    return want


def test_wheel_holds_every_subpackage_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = _expected_files() - names
    assert not missing, f"missing from the wheel: {sorted(missing)}"
    # the CUDA sources and the config defaults, which are not Python
    assert any(n.endswith("/kernels/cuda/batched.cu") for n in names)
    assert any(n.endswith("/kernels/cuda/common.cuh") for n in names)
    assert "gpu_sssp/pipeline/sssp.yaml" in names
    top = {n.split("/")[0] for n in names}
    assert not top & set(PACKAGES), f"generic top-level names in the wheel: {sorted(top & set(PACKAGES))}"
    assert top <= {"gpu_sssp"} | {n for n in top if n.endswith(".dist-info")}, top


def test_every_package_folder_is_listed_in_pyproject():
    """A folder with an ``__init__.py`` missing from pyproject's list would be left out
    of wheels (editable installs hide it)."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"gpu_sssp"}
    for pkg in PACKAGES:
        for init in (ROOT / pkg).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).as_posix().replace("/", ".")
            found.add(f"gpu_sssp.{rel}")
    assert listed == found


def test_pyproject_uses_no_setuptools_deprecation():
    """``license = { text = ... }`` is deprecated since setuptools 77: every build printed
    a warning that builds stop being supported after 2027-02-18 (``pip install .`` takes
    the newest setuptools).  The licence is an SPDX string, which needs setuptools >= 77."""
    import re

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(conf["project"]["license"], str), conf["project"]["license"]
    req = [r for r in conf["build-system"]["requires"] if re.match(r"setuptools\b", r)]
    assert len(req) == 1, conf["build-system"]["requires"]
    m = re.fullmatch(r"setuptools\s*>=\s*(\d+)(\.\d+)*", req[0])
    assert m and int(m.group(1)) >= 77, req[0]


def _run(installed: Path, tmp_path: Path, *args, **kw):
    env = dict(os.environ, PYTHONPATH=str(installed))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, **kw)


def test_facade_and_cli_from_the_installed_wheel(installed, tmp_path):
    code = f"""
import gpu_sssp as sssp, gpu_sssp.kernels, gpu_sssp.pipeline.ingest
from gpu_sssp.kernels.gpu.loader import cuda_source
import numpy as np, scipy.sparse.csgraph as csg
assert sssp.__file__.startswith({str(installed)!r}), sssp.__file__
assert gpu_sssp.kernels.__file__.startswith({str(installed)!r}), gpu_sssp.kernels.__file__
assert gpu_sssp.pipeline.ingest.__file__.startswith({str(installed)!r})
assert "__global__" in cuda_source("batched.cu")
g = sssp.load_graph({str(ROOT / 'data' / 'rome99.gr')!r}, cache_dir={str(tmp_path / 'cache')!r})
res = sssp.solve(g, g.to_index([1, 2]), method="dijkstra")
ref = csg.dijkstra(g.to_scipy(), indices=[0, 1])
assert np.array_equal(res.distances, ref)
assert int(res.distances[0].sum()) == 116006476
assert "dijkstra" in sssp.available_methods()
print("ok", sssp.device_count())
"""
    p = _run(installed, tmp_path, "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ok")
    out = tmp_path / "rome.parquet"
    p = _run(installed, tmp_path, "-m", "gpu_sssp.workflows.cli", "ingest", str(ROOT / "data" / "rome99.gr"),
             "-o", str(out), "-q")
    assert p.returncode == 0, p.stderr
    p = _run(installed, tmp_path, "-m", "gpu_sssp.workflows.cli", "solve", str(out), "-s", "1")
    assert p.returncode == 0, p.stderr
    assert "69,102" in p.stdout or "69102" in p.stdout  # rome99's eccentricity of vertex 1


def test_the_version_is_written_once_and_the_wheel_reports_it(wheel, installed, tmp_path):
    """pyproject.toml and ``gpu_sssp/__init__.py`` each wrote ``0.1.0``: a release that
    changed one of them would have shipped a package whose ``gpu_sssp.__version__``
    differs from its metadata (``sssp --version``, the version check between a study's
    client and its workers).  The metadata takes ``gpu_sssp.__version__``."""
    import ast
    import re

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in conf["project"], "a second, static version in pyproject.toml"
    assert "version" in conf["project"].get("dynamic", [])
    assert conf["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpu_sssp.__version__"}
    tree = ast.parse((ROOT / "gpu_sssp" / "__init__.py").read_text())
    (ver,) = [n.value.value for n in tree.body if isinstance(n, ast.Assign)
              and [getattr(t, "id", None) for t in n.targets] == ["__version__"]]
    meta = zipfile.ZipFile(wheel).read(f"gpu_sssp-{ver}.dist-info/METADATA").decode()
    assert re.search(rf"^Version: {re.escape(ver)}$", meta, re.M), meta[:300]
    p = _run(installed, tmp_path, "-c", "import gpu_sssp; print(gpu_sssp.__version__)")
    assert p.returncode == 0 and p.stdout.strip() == ver, p.stdout + p.stderr


def test_an_installed_copy_inside_another_repository_names_no_commit(wheel, tmp_path):
    """``sssp bench`` rows name the code's git commit where it runs from a checkout
    (``versions``, ``gpu-sssp-commit``).  A wheel installed in a project's own virtual
    environment (``myproject/.venv``, inside the project's git repository) gave that
    project's commit as gpu-sssp's."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    project = tmp_path / "myproject"
    project.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@example.org", GIT_COMMITTER_NAME="u",
               GIT_COMMITTER_EMAIL="u@example.org")
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "my project"]):
        subprocess.run([git, *args], cwd=project, env=env, check=True, capture_output=True)
    site = project / ".venv" / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    code = ("import gpu_sssp.pipeline.bench_protocol as b; print(b.__file__); "
            "print('commit', b.source_commit(), b.environment()['versions'].get('gpu-sssp-commit'))")
    p = _run(site, tmp_path, "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(str(site)), p.stdout
    assert "commit None None" in p.stdout, p.stdout


def _examples() -> dict[str, str]:
    """The Python examples a user copies: the README's ``python`` block and the one in
    ``gpu_sssp``'s docstring (``help(gpu_sssp)``)."""
    import ast
    import re
    import textwrap

    (readme,) = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    doc = ast.get_docstring(ast.parse((ROOT / "gpu_sssp" / "__init__.py").read_text()))
    block = re.search(r"::\n\n((?:(?:    .*)?\n)+)", doc + "\n").group(1)
    return {"readme": readme, "docstring": textwrap.dedent(block)}


def test_the_python_examples_run_as_scripts_from_the_installed_wheel(installed, tmp_path):
    """Each example, saved as a script and run beside a ``data/rome99.gr``.  The
    docstring's called ``sssp.study`` at the top level of the script: the local
    cluster's worker processes import the main script again, and the study ended in
    "the local cluster did not start (Nanny failed to start ...): run the command
    again".  The README's keeps the work under ``if __name__ == "__main__":``."""
    examples = _examples()
    assert all("sssp.study(" in code for code in examples.values()), examples
    (tmp_path / "data").mkdir()
    shutil.copy2(ROOT / "data" / "rome99.gr", tmp_path / "data" / "rome99.gr")
    for name, code in examples.items():
        (tmp_path / f"{name}.py").write_text(code + '\nprint("example done")\n')
        p = _run(installed, tmp_path, f"{name}.py")
        assert p.returncode == 0 and p.stdout.strip().endswith("example done"), (name, p.stdout[-2000:],
                                                                                 p.stderr[-3000:])
        summary = tmp_path / "rome-study" / "summary.json"
        assert summary.is_file(), name
        shutil.rmtree(tmp_path / "rome-study")
