"""``Graph.to_ids`` of an index that is no vertex is refused: ``to_ids([n])`` gave the id
of no vertex, and ``to_ids([2**63 - 1])`` wrapped to ``-2**63`` (README: "never truncated or
wrapped")."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.kernels.graph import Graph


def test_to_ids_refuses_an_index_that_is_no_vertex():
    g = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([5, 5]), 3, id_base=1)
    assert g.to_ids([0, 2]).tolist() == [1, 3] and g.to_ids(1) == 2
    assert g.to_ids(np.array([], dtype=np.int64)).tolist() == []
    for bad in ([3], [-1], [2**63 - 1], np.array([2**64 - 1], dtype=np.uint64)):
        with pytest.raises(UsageError, match=r"is not a vertex of .*its indices run 0\.\.2, its ids 1\.\.3"):
            g.to_ids(bad)
