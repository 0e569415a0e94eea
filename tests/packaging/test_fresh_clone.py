"""The README's test command in a fresh clone: ``python -m pytest -q`` where the shared
data folder (``../shared/data``, real graphs such as NY) is not there.  Tests that need
such a file skip; none errors."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the test modules that load real graphs through tests/kernels/graphs.py or
# tests/kernels/batched_graphs.py without a GPU mark of their own
MODULES = ("tests/kernels/test_matrix.py", "tests/kernels/test_pred_tree.py")


def test_tests_that_need_the_shared_data_skip_without_it(tmp_path):
    empty = tmp_path / "no-shared-data"
    empty.mkdir()
    env = dict(os.environ, SSSP_SHARED_DATA=str(empty),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *MODULES],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert " error" not in out, out
    assert "no-shared-data" in out  # the real-graph tests did skip, naming the folder
