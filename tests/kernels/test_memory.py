"""Outputs that cannot fit are refused before anything is allocated (kernels.memory),
with one line naming the size, the memory available and how to proceed."""
from __future__ import annotations

import numpy as np
import pytest

import gpu_sssp
from gpu_sssp.kernels import memory, solve
from gpu_sssp.kernels.errors import OutputTooLargeError, SsspError, UsageError
from gpu_sssp.kernels.graph import Graph


def chain(n: int) -> Graph:
    return Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, dtype=np.int64), n=n)


@pytest.fixture
def little_memory(monkeypatch):
    """1 MB available, and every array checked (not only those above 64 MB)."""
    monkeypatch.setattr(memory, "available_memory", lambda: 1_000_000)
    monkeypatch.setattr(memory, "SMALL_BYTES", 0)


def test_error_is_a_memory_and_usage_error():
    assert issubclass(OutputTooLargeError, MemoryError)
    assert issubclass(OutputTooLargeError, UsageError) and issubclass(OutputTooLargeError, SsspError)
    assert OutputTooLargeError.exit_code == 2


def test_available_memory_is_known_here():
    avail = memory.available_memory()
    assert avail is None or avail > 0


def test_solve_refuses_distances_beyond_memory_before_solving(little_memory):
    g = chain(100)
    with pytest.raises(OutputTooLargeError, match=r"distances of 2,000 sources x 100 vertices \(float64\) would "
                                                   r"take 1\.6 MB, more than the 1\.0 MB of memory available here; "
                                                   r"solve fewer sources"):
        solve(g, np.zeros(2000, dtype=np.int64), method="dijkstra")
    with pytest.raises(MemoryError, match=r"and predecessors of 1,000 sources x 100 vertices \(int64\)"):
        solve(g, np.zeros(1000, dtype=np.int64), method="dijkstra", predecessors=True)
    with pytest.raises(OutputTooLargeError, match=r"a matrix of 20,000 sources x 10 targets .* fewer sources or "
                                                   r"targets, or run a study with targets"):
        solve(g, np.zeros(20_000, dtype=np.int64), method="dijkstra", targets=np.arange(10))
    # SciPy's rows are full even when only the statistics are kept
    with pytest.raises(OutputTooLargeError, match=r"working arrays of dijkstra on the CPU for 2,000 sources x 100 vertices"):
        solve(g, np.zeros(2000, dtype=np.int64), method="dijkstra", distances=False)
    # what fits is solved
    assert solve(g, np.zeros(100, dtype=np.int64), method="dijkstra").distances.shape == (100, 100)


def test_solve_refuses_a_huge_output_without_any_patching():
    """300,000 sources x 300,000 vertices: 720 GB of float64, refused at once."""
    n = 300_000
    g = chain(n)
    with pytest.raises(OutputTooLargeError, match=r"720\.0 GB, more than the .* of memory available here"):
        solve(g, np.arange(n), method="dijkstra")


def test_matrix_refuses_above_the_study_limit_before_allocating():
    """gpu_sssp.matrix(g, 'all', 'all') applies sssp.study.max-distance-bytes (20 GB), as
    ``sssp study --targets`` does, before a hierarchy is built or anything allocated."""
    g = chain(300_000)
    with pytest.raises(OutputTooLargeError) as err:
        gpu_sssp.matrix(g, "all", "all")
    msg = str(err.value)
    assert "the matrix would take up to 720.0 GB (300,000 sources x 300,000 targets, float64), above the limit " \
           "of 20.0 GB; raise it with matrix(..., max_distance_bytes=720002400000)" in msg
    assert "fewer sources or targets" in msg and "sssp study --targets" in msg
    assert "\n" not in msg
    # an explicit limit is honoured the same way
    with pytest.raises(OutputTooLargeError, match=r"above the limit of 1\.0 KB"):
        gpu_sssp.matrix(chain(100), "all", "all", max_distance_bytes=1000)
    assert gpu_sssp.matrix(chain(100), [0, 1], [2, 3], method="dijkstra").shape == (2, 2)
    # a limit just below the estimate: both rounded to the same size said "up to 80.8 KB
    # ..., above the limit of 80.8 KB"; the bytes themselves are given then
    with pytest.raises(OutputTooLargeError, match=r"up to 80,800 bytes \(.*\), above the limit of 80,799 bytes"):
        gpu_sssp.matrix(chain(100), "all", "all", max_distance_bytes=80_799)


def test_matrix_refuses_beyond_memory(little_memory):
    with pytest.raises(OutputTooLargeError, match=r"a matrix of 2,000 sources x 100 targets .* more than the "
                                                   r"1\.0 MB of memory available here"):
        gpu_sssp.matrix(chain(100), np.zeros(2000, dtype=np.int64), "all", method="dijkstra")


def test_gpu_host_arrays_are_checked(little_memory):
    """The GPU methods' large host destinations (kernels.gpu.transfer.host_empty) are
    checked the same way (no GPU needed: the check comes before anything is allocated)."""
    from gpu_sssp.kernels.gpu.transfer import host_empty

    with pytest.raises(OutputTooLargeError, match=r"a host array of shape \(1000, 1000\) \(float64\) would take "
                                                   r"8\.0 MB"):
        host_empty((1000, 1000), np.float64)
    assert host_empty((10, 10), np.float64).shape == (10, 10)


def test_matrix_as_a_long_table_counts_its_ids(little_memory, monkeypatch):
    """A long Arrow table adds a source and a target id (int64) to every cell: 600 x 100
    cells are 0.48 MB as a matrix, which fits in 1 MB, but 1.44 MB as a long table,
    which does not; the wide table shares the matrix's memory and passes.  (SciPy's own
    rows, 36 bytes a cell at their peak, are left out here: tests/workflows/
    test_memory_audit.py checks them.)"""
    from gpu_sssp.kernels import registry

    monkeypatch.setattr(registry, "CPU_CELL_BYTES", {})
    g = chain(100)
    src = np.zeros(600, dtype=np.int64)
    with pytest.raises(OutputTooLargeError, match=r"a matrix of 600 sources x 100 targets \(float64\) and its long "
                                                   r"table's source and target ids \(int64\) would take 1\.4 MB"):
        gpu_sssp.matrix(g, src, "all", method="dijkstra", as_arrow="long")
    assert gpu_sssp.matrix(g, src, "all", method="dijkstra", as_arrow="wide").num_rows == 600
    assert gpu_sssp.matrix(g, src, "all", method="dijkstra").shape == (600, 100)


def test_matrix_long_table_limit_is_the_long_size():
    """max_distance_bytes applies to what is handed over: 24 bytes a cell in long form."""
    g = chain(100)
    with pytest.raises(OutputTooLargeError, match=r"would take up to 240\.0 KB \(100 sources x 100 targets, float64, "
                                                   r"a long table"):
        gpu_sssp.matrix(g, "all", "all", method="dijkstra", as_arrow="long", max_distance_bytes=100_000)
    assert gpu_sssp.matrix(g, "all", "all", method="dijkstra", max_distance_bytes=100_000).shape == (100, 100)


def test_matrix_refuses_an_unknown_form_before_solving():
    with pytest.raises(UsageError, match=r"as_arrow='tall': use False"):
        gpu_sssp.matrix(chain(5), "all", "all", method="dijkstra", as_arrow="tall")


def test_max_distance_bytes_takes_a_size_as_the_flag_does():
    """max_distance_bytes="1MB" works as --max-distance-bytes 1MB; a word is one usage error."""
    g = chain(100)
    assert gpu_sssp.matrix(g, "all", "all", method="dijkstra", max_distance_bytes="1MB").shape == (100, 100)
    with pytest.raises(OutputTooLargeError, match=r"above the limit of 1\.0 KB"):
        gpu_sssp.matrix(g, "all", "all", method="dijkstra", max_distance_bytes="1KB")
    with pytest.raises(UsageError, match=r"max_distance_bytes: expected a number of bytes or a size .* got 'lots'"):
        gpu_sssp.matrix(g, "all", "all", method="dijkstra", max_distance_bytes="lots")


def test_from_edges_refuses_a_vertex_count_past_memory_before_allocating():
    """``Graph.from_edges([0], [1], [1], 2**40)`` ended in NumPy's raw ``MemoryError:
    Unable to allocate 8.00 TiB`` (found by a review); the product's one-line refusal
    names the size, the memory and the way on, before the arrays are made."""
    from gpu_sssp.kernels.errors import OutputTooLargeError
    from gpu_sssp.kernels.graph import Graph

    with pytest.raises(OutputTooLargeError, match=r"^a graph of 1,099,511,627,776 vertices and 1 arcs would take "
                                                  r".* more than the .* of memory available here.*give fewer vertices"):
        Graph.from_edges([0], [1], [1], 2**40)
    assert Graph.from_edges([0], [1], [1], 1_000_000).n == 1_000_000


def test_one_source_is_counted_in_its_number(little_memory):
    """"1 sources x 1,000,000 targets" (found by the 2026-12-07 audit)."""
    g = chain(100)
    with pytest.raises(OutputTooLargeError, match=r"a matrix of 1 source x 200,000 targets \(float64\)"):
        solve(g, [0], method="dijkstra", targets=np.zeros(200_000, dtype=np.int64))
