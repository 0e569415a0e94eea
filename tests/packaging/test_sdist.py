"""The source distribution as ``python -m build --sdist`` makes it (a fresh virtual
environment with ``build``, from the package index as a user's): it holds the package
with its data files, and the whole test suite with the small graphs it reads, so that
the README's test command runs from an unpacked sdist.  It used to hold
tests/test_api.py alone (setuptools' default), without tests/conftest.py, the other
test modules or data/rome99.gr that it reads."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernels", "pipeline", "workflows")


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory) -> set[str]:
    tmp = tmp_path_factory.mktemp("sdist")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    p = subprocess.run([str(py), "-m", "pip", "install", "-q", "build"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"`build` could not be installed (no package index?): {p.stderr.strip()[-300:]}")
    # from a copy of the checkout's files (tracked or new, not ignored): a build in the
    # checkout itself reads the gpu_sssp.egg-info/SOURCES.txt an earlier build left there
    src = tmp / "src"
    for rel in _files("--cached", "--others", "--exclude-standard"):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    p = subprocess.run([str(py), "-m", "build", "--sdist", "-o", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    (sdist,) = (tmp / "dist").glob("gpu_sssp-*.tar.gz")
    with tarfile.open(sdist) as tar:
        return {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}


def _files(*args: str) -> set[str]:
    out = subprocess.run(["git", "ls-files", *args], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return {line for line in out.stdout.splitlines() if line}


def _tracked(*folders: str) -> set[str]:
    return _files("--", *folders)


def test_sdist_holds_the_package_and_its_data_files(sdist_names):
    want = {"gpu_sssp/__init__.py", "pyproject.toml", "README.md", "pipeline/sssp.yaml",
            "kernels/cuda/batched.cu", "kernels/cuda/common.cuh"}
    for f in _tracked(*PACKAGES):
        if f.endswith((".py", ".cu", ".cuh", ".yaml")):
            want.add(f)
    missing = want - sdist_names
    assert not missing, f"missing from the sdist: {sorted(missing)}"


def test_sdist_holds_the_test_suite_and_its_graphs(sdist_names):
    missing = _tracked("tests", "data") - sdist_names
    assert not missing, f"missing from the sdist: {sorted(missing)}"
    assert not {n for n in sdist_names if "__pycache__" in n or n.endswith(".pyc")}
