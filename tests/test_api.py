"""The public facade ``gpu_sssp``: the names users import, and a study run from Python."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse.csgraph as csg

import gpu_sssp as sssp

ROME = Path(__file__).resolve().parents[1] / "data" / "rome99.gr"


def test_facade_names():
    for name in ("solve", "Graph", "load_graph", "read_parquet", "study", "available_methods",
                 "device_count", "NegativeCycleError", "Result"):
        assert hasattr(sssp, name), name
    assert sssp.Graph is sssp.kernels.graph.Graph
    assert "dijkstra" in sssp.available_methods("cpu")


def test_import_is_light():
    """``import gpu_sssp`` (to solve on one device) does not pull Dask or CuPy in."""
    code = "import sys, gpu_sssp; print(sorted(m for m in ('dask', 'distributed', 'cupy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_command_starts_without_numpy():
    """The ``sssp`` entry point's module and ``import gpu_sssp`` load neither NumPy nor
    pyarrow (the public names come on first use): Ctrl-C in the first moments of ``sssp``
    reaches ``main``'s handler (one line, status 130), not an import traceback.  The
    lazy names are the real objects, each imported once."""
    code = ("import sys, gpu_sssp, gpu_sssp.workflows.cli; heavy = [m for m in ('numpy', 'pyarrow') "
            "if m in sys.modules]; from gpu_sssp import solve, Graph, STATS_SCHEMA; "
            "import gpu_sssp.kernels as k; "
            "print(heavy, solve is k.solve, Graph is k.graph.Graph, STATS_SCHEMA is k.STATS_SCHEMA, "
            "'solve' in dir(gpu_sssp), hasattr(gpu_sssp, 'no_such_name'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True True True True False"


def test_interrupt_while_the_command_imports_is_one_line():
    """SIGINT as ``main`` builds its parser (the subcommands import NumPy, pyarrow, rich):
    status 130 and one line, no traceback."""
    code = ("import signal, sys, os, gpu_sssp.workflows.cli as cli\n"
            "real = cli.build_parser\n"
            "def build():\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    return real()\n"
            "cli.build_parser = build\n"
            "sys.exit(cli.main(['--help']))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 130, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_solve_through_the_facade(tmp_path):
    g = sssp.load_graph(ROME, cache_dir=tmp_path)
    res = sssp.solve(g, g.to_index([1, 3353]), method="dijkstra", predecessors=True)
    ref = csg.dijkstra(g.to_scipy(), indices=[0, 3352])
    assert np.array_equal(res.distances, ref)


def test_study_from_python(tmp_path):
    from gpu_sssp.pipeline.generate import generate

    path = tmp_path / "grid.parquet"
    generate("grid", path, rows=4, cols=5, seed=3)
    summary = sssp.study(path, out=tmp_path / "s", cpu_workers=1)
    assert summary["sources_solved"] == 20 and summary["complete"]
    g = sssp.read_parquet(path)
    ref = csg.dijkstra(g.to_scipy())
    assert summary["diameter"]["value"] == int(ref.max())
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["identity"]["batch_size"] == 64  # CPU workers get the CPU default


def test_study_refuses_a_gpu_method_for_a_cpu_cluster_before_starting_it(tmp_path):
    """``study(algorithm="hbf")`` where the local cluster would be CPU workers: refused
    before any cluster starts or folder is made (it warned once per worker and left a
    'failed' study); with ``cpu_workers`` too, wherever a GPU is visible."""
    from gpu_sssp.kernels.errors import GPUUnavailableError, OptionError

    out = tmp_path / "s"
    t = time.perf_counter()
    err = GPUUnavailableError if sssp.device_count() == 0 else OptionError
    with pytest.raises(err, match="algorithm='hbf'"):
        sssp.study(ROME, random=3, algorithm="hbf", out=out, cpu_workers=1)
    assert not out.exists() and time.perf_counter() - t < 10
    if sssp.device_count() == 0:
        with pytest.raises(GPUUnavailableError, match="needs a CUDA device"):
            sssp.study(ROME, random=3, algorithm="hbf", out=out)
        assert not out.exists()


def test_default_batch_size_comes_from_the_workers():
    """An attached cluster's GPU workers get GPU batches whatever the client machine has
    (the client used to decide from its own devices: 64-source batches on 4 GPUs)."""
    from gpu_sssp.pipeline.study.plan import CPU_BATCH_SIZE, GPU_BATCH_SIZE, default_batch_size

    assert default_batch_size("auto", ["NVIDIA H200", "NVIDIA H200"]) == GPU_BATCH_SIZE
    assert default_batch_size("auto", ["cpu"]) == CPU_BATCH_SIZE
    assert default_batch_size("auto", ["NVIDIA H200", "cpu"]) == CPU_BATCH_SIZE
    assert default_batch_size("auto", []) == CPU_BATCH_SIZE
    assert default_batch_size("batched", ["cpu"]) == GPU_BATCH_SIZE  # a GPU method asks for GPU batches
    assert default_batch_size("dijkstra", ["NVIDIA H200"]) == CPU_BATCH_SIZE


def test_phast_studies_get_larger_batches():
    """A study that sweeps with phast gets PHAST_*_BATCH_SIZE sources per task (one sweep
    serves the whole batch; the task's fixed cost dominates small ones)."""
    from gpu_sssp.pipeline.study.plan import (CPU_BATCH_SIZE, GPU_BATCH_SIZE, PHAST_CPU_BATCH_SIZE,
                                              PHAST_GPU_BATCH_SIZE, default_batch_size)

    assert default_batch_size("phast", ["NVIDIA H200"], phast=True) == PHAST_GPU_BATCH_SIZE
    assert default_batch_size("phast", ["cpu", "cpu"], phast=True) == PHAST_CPU_BATCH_SIZE
    # few sources: at least two batches per GPU worker, down to 1,024 sources per batch
    h200 = ["NVIDIA H200"]
    assert default_batch_size("phast", h200, phast=True, sources=264_346) == 8192
    assert default_batch_size("phast", h200 * 4, phast=True, sources=264_346) == 8192
    assert default_batch_size("phast", h200, phast=True, sources=16_384) == 8192
    assert default_batch_size("phast", h200 * 2, phast=True, sources=16_384) == 4096
    assert default_batch_size("phast", h200 * 4, phast=True, sources=16_384) == 2048
    assert default_batch_size("phast", h200 * 4, phast=True, sources=3353) == 1024
    assert default_batch_size("phast", ["cpu"] * 4, phast=True, sources=3353) == PHAST_CPU_BATCH_SIZE
    assert default_batch_size("auto", ["cpu"], phast=False) == CPU_BATCH_SIZE
    assert default_batch_size("batched", ["NVIDIA H200"], phast=False) == GPU_BATCH_SIZE


def test_plan_resolves_phast_batch_size(tmp_path):
    pytest.importorskip("routingkit_ch")
    from gpu_sssp.pipeline.study.plan import (CPU_BATCH_SIZE, PHAST_CPU_BATCH_SIZE,
                                              plan_study)
    from gpu_sssp.pipeline.sources import plan_sources

    g = sssp.load_graph(ROME)
    sources = plan_sources(g, sources="all")
    for algo, devices, want in (("phast", ["NVIDIA H200"], 1024),  # 3,353 sources: two batches or more
                                ("phast", ["cpu", "cpu"], PHAST_CPU_BATCH_SIZE),
                                ("dijkstra", ["cpu"], CPU_BATCH_SIZE)):
        plan = plan_study(g, ROME, sources, out=tmp_path / algo, algorithm=algo)
        assert plan.resolve_batch_size(devices) == want, algo


def test_default_batch_size_of_a_gpu_hierarchy_sweep(tmp_path):
    """Statistics-only studies that sweep a hierarchy on GPU workers get up to 8,192-source
    batches (two or more per worker: 1,024 for rome99's 3,353 sources on 4 GPUs), on CPU
    workers 256; with distance outputs on GPUs, or without phast, as before."""
    pytest.importorskip("routingkit_ch")
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import plan_study
    from gpu_sssp.pipeline.study.plan import (CPU_BATCH_SIZE, GPU_BATCH_SIZE, PHAST_CPU_BATCH_SIZE,
                                              PHAST_GPU_MIN_BATCH_SIZE)
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    g = read_parquet(path)
    gpu = ["NVIDIA H200"] * 4

    def size(devices, **kw):
        src = {k: kw.pop(k) for k in ("sources", "random", "seed") if k in kw} or {"sources": "all"}
        plan = plan_study(g, path, plan_sources(g, **src), out=tmp_path / "o", **kw)
        return plan.resolve_batch_size(devices)

    assert size(gpu) == PHAST_GPU_MIN_BATCH_SIZE  # rome99: road-like, every vertex a source
    assert size(gpu[:1], sources="all") == 1024  # 3,353 // 2 = 1,676: still the smallest
    assert size(gpu, algorithm="phast", random=10, seed=1) == PHAST_GPU_MIN_BATCH_SIZE
    assert size(gpu, outputs="stats,distances") == GPU_BATCH_SIZE
    assert size(gpu, random=10, seed=1) == GPU_BATCH_SIZE  # too few sources to build a hierarchy
    assert size(["cpu", "cpu"]) == PHAST_CPU_BATCH_SIZE  # warm CPU workers sweep all of rome99
    assert size(["cpu", "cpu"], random=10, seed=1) == CPU_BATCH_SIZE
    assert size(gpu, algorithm="batched") == GPU_BATCH_SIZE


def test_matrix_refuses_phast_before_building_a_hierarchy(tmp_path):
    """``matrix(path, method="phast")`` used to contract a graph that is not road-like on
    its way in (``prepare_study``), past the rule ``solve`` applies; it is refused first,
    with the registry's reason, and ``force=True`` still builds it."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.generate import generate

    path = tmp_path / "zg.parquet"
    generate("random", path, n=1000, m=4000, seed=0)
    with pytest.raises(UsageError, match="phast: .*hop depth"):
        sssp.matrix(path, [0], [1, 2], method="phast", backend="cpu")
    assert not list(tmp_path.glob("*.ch.npz"))
    g = sssp.read_parquet(path)
    m = sssp.matrix(g, [0], [1, 2], method="phast", backend="cpu", force=True)
    ref = csg.dijkstra(g.to_scipy(), indices=[0])[:, [1, 2]]
    assert np.array_equal(m, ref)


def test_matrix_reads_id_files_and_takes_one_id(tmp_path):
    """A path is a file of ids read as the command line reads it (--sources-file,
    --targets FILE), not a string iterated character by character; one int is one id."""
    g = sssp.load_graph(ROME, cache_dir=tmp_path)
    ref = csg.dijkstra(g.to_scipy(), indices=[1, 0])
    (tmp_path / "t.txt").write_text("# targets\n1\n3\n3\n")
    (tmp_path / "s.ss").write_text("p aux sp ss 2\ns 2\ns 1\n")
    want = ref[:, [0, 2, 2]]
    assert np.array_equal(sssp.matrix(g, [2, 1], str(tmp_path / "t.txt"), backend="cpu"), want)
    assert np.array_equal(sssp.matrix(g, tmp_path / "s.ss", tmp_path / "t.txt", backend="cpu"), want)
    assert np.array_equal(sssp.matrix(g, 2, 3, backend="cpu"), ref[:1, [2]])
    assert np.array_equal(sssp.matrix(g, np.int64(1), [1, 3], backend="cpu"), ref[1:, [0, 2]])
    with pytest.raises(sssp.kernels.errors.SsspError, match="no such targets file"):
        sssp.matrix(g, 1, str(tmp_path / "missing.txt"))
    (tmp_path / "bad.txt").write_text("1\n99999\n")
    with pytest.raises(ValueError, match="bad.txt:2: target 99999 is not a vertex"):
        sssp.matrix(g, 1, tmp_path / "bad.txt")
    for bad in (True, 1.5, None, {1, 2}, np.ones((2, 2), dtype=np.int64)):
        with pytest.raises(sssp.kernels.errors.OptionError, match="expected 'all', an id"):
            sssp.matrix(g, bad, 1)  # a set: its order would be the matrix's rows
    # one rule with study(sources=, targets=): a name as bytes is a file (it was read as
    # a list of byte values), a 0-d array one id
    assert np.array_equal(sssp.matrix(g, np.array(2), os.fsencode(str(tmp_path / "t.txt")), backend="cpu"),
                          ref[:1, [0, 2, 2]])


def test_solve_with_no_sources_says_so(tmp_path):
    g = sssp.load_graph(ROME, cache_dir=tmp_path)
    for empty in ([], np.array([], dtype=np.int64), ()):
        with pytest.raises(sssp.kernels.errors.UsageError, match="no sources given"):
            sssp.solve(g, empty)
    with pytest.raises(sssp.kernels.errors.UsageError, match="no targets given"):
        sssp.solve(g, [0], targets=[])
