"""The package as a checkout gives it: ``pip install -e .`` (the README's two commands) or
``PYTHONPATH=<checkout>``, where ``kernels/``, ``pipeline/`` and ``workflows/`` sit beside
``gpu_sssp/`` and ``gpu_sssp/__init__.py`` makes them its subpackages.

It did so by putting the whole checkout on ``gpu_sssp.__path__``: every folder there became a
subpackage - ``gpu_sssp.tests`` (the test suite, importable as part of the library),
``gpu_sssp.gpu_sssp`` (a second copy of the package, with classes of their own, itself with a
``gpu_sssp.gpu_sssp.gpu_sssp`` ...) - and ``pkgutil.walk_packages(gpu_sssp.__path__,
"gpu_sssp.")`` went down that chain without end (163,558 names, then an error per level)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_CODE = r"""
import importlib, itertools, pkgutil, sys
import gpu_sssp
root = sys.argv[1]
assert gpu_sssp.__file__ == f"{root}/gpu_sssp/__init__.py", gpu_sssp.__file__
top = sorted(m.name for m in pkgutil.iter_modules(gpu_sssp.__path__))
print("top", top)
errors = []
# bounded: the old layout made an endless walk
names = [m.name for m in itertools.islice(
    pkgutil.walk_packages(gpu_sssp.__path__, "gpu_sssp.", onerror=errors.append), 2000)]
print("walked", len(names), "errors", [e[:80] for e in errors[:3]])
stray = sorted({n for n in names if n.split(".")[1] not in ("kernels", "pipeline", "workflows")})
print("stray", [n[:80] for n in stray[:3]])
for name in ("kernels", "pipeline", "workflows"):
    mod = importlib.import_module(f"gpu_sssp.{name}")
    assert mod.__file__ == f"{root}/{name}/__init__.py", mod.__file__
    assert getattr(gpu_sssp, name) is mod
for name in ("gpu_sssp.tests", "gpu_sssp.gpu_sssp", "gpu_sssp.data", "gpu_sssp.docs"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        print("importable", name)
from gpu_sssp.kernels.gpu.loader import cuda_source
assert "__global__" in cuda_source("batched.cu")
print("cli", importlib.import_module("gpu_sssp.workflows.cli").__file__)
"""


def test_a_checkout_on_pythonpath_has_the_three_layers_as_its_only_subpackages(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", _CODE, str(ROOT)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "top ['kernels', 'pipeline', 'workflows']" in out, out[-3000:]
    assert "errors []" in out and "stray []" in out, out[-3000:]
    assert "importable" not in out, out[-3000:]
    walked = int(out.split("walked ", 1)[1].split()[0])
    assert 50 < walked < 2000, out[-3000:]  # every module of the three layers, and an end
    assert f"cli {ROOT}/workflows/cli.py" in out, out[-3000:]
