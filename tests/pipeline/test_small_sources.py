"""Ids given as a ``memoryview`` (``pipeline.sources.id_choice``, the one rule of
``gpu_sssp.matrix``, ``study(sources=..., targets=...)`` and ``plan_sources``)."""
from __future__ import annotations

import array

import numpy as np
import pytest

import gpu_sssp
from gpu_sssp.kernels.errors import OptionError, UsageError
from gpu_sssp.kernels.graph import Graph
from gpu_sssp.pipeline.sources import id_choice, plan_sources


def _path_graph(n: int = 6, id_base: int = 1) -> Graph:
    src = np.arange(n - 1)
    return Graph.from_edges(src, src + 1, np.arange(1, n, dtype=np.int64), n=n, id_base=id_base, name="path")


@pytest.mark.parametrize("view, ids", [
    (memoryview(np.array([1, 2, 3])), [1, 2, 3]),
    (memoryview(array.array("q", [4, 2])), [4, 2]),
    (memoryview(np.array([1, 2], dtype=">i8")), [1, 2]),  # big-endian: was NotImplementedError
    (memoryview(np.array([1, 2, 3, 4]))[::2], [1, 3]),  # strided
    (memoryview(np.array(5)), [5]),  # 0-D: one id, as a 0-D array (was "invalid indexing of 0-dim memory")
    (memoryview(np.array([3, 1], dtype=np.int8)), [3, 1]),  # int8 ('b') is not a byte string
])
def test_a_memoryview_of_numbers_holds_ids(view, ids):
    kind, value = id_choice(view, "source")
    assert kind == "ids" and np.asarray(value).tolist() == ids


@pytest.mark.parametrize("view", [memoryview(b"12"), memoryview(bytearray(b"/tmp/x")),
                                  memoryview(b"ab").cast("c"), memoryview(np.array([1, 2], dtype=np.uint8))])
def test_a_memoryview_of_bytes_is_refused_in_one_line(view):
    """A view of bytes was iterated as its byte values (memoryview(b"12"): vertices 49
    and 50) while bytes themselves are a file name: refused, as ambiguous."""
    with pytest.raises(UsageError, match=r"^sources: a memoryview of bytes \(format '[Bc]'\) is ambiguous") as e:
        id_choice(view, "source")
    assert "\n" not in str(e.value)
    with pytest.raises(UsageError, match="^ids: a memoryview of bytes"):
        id_choice(view, "source", files=False, name="ids")


def test_a_2d_or_released_memoryview_is_one_line():
    with pytest.raises(UsageError, match=r"^targets: expected .*got a 2-D array of shape \(2, 2\)$"):
        id_choice(memoryview(np.array([[1, 2], [3, 4]])), "target")  # was NotImplementedError
    view = memoryview(np.array([1, 2]))
    view.release()
    with pytest.raises(UsageError, match="^sources: the memoryview given is released"):
        id_choice(view, "source")


def test_matrix_and_plan_sources_take_memoryview_ids():
    g = _path_graph()
    want = gpu_sssp.matrix(g, [2, 1], [1, 6, 6], backend="cpu")
    got = gpu_sssp.matrix(g, memoryview(np.array([2, 1])), memoryview(array.array("q", [1, 6, 6])), backend="cpu")
    assert np.array_equal(got, want)
    plan = plan_sources(g, sources=memoryview(np.array([6, 2], dtype=">i8")), order="given")
    assert plan.sources.tolist() == [5, 1]
    assert plan_sources(g, ids=memoryview(np.array([3])), order="given").sources.tolist() == [2]
    with pytest.raises(OptionError, match="^targets: a memoryview of bytes"):
        gpu_sssp.matrix(g, 1, memoryview(b"12"), backend="cpu")


def test_a_byte_memoryview_where_no_file_is_taken_does_not_offer_a_file_name():
    """``ids=`` takes no file: the refusal suggested ``bytes(view)`` "for a file name"."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline.sources import id_choice

    with pytest.raises(UsageError) as exc:
        id_choice(memoryview(b"12"), "id", files=False, name="ids")
    assert "file name" not in str(exc.value) and "integer array" in str(exc.value)
