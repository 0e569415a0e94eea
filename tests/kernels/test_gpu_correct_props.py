"""Property search: every GPU method on small drawn graphs against an exact Bellman-Ford in
Python numbers and SciPy (the families and checks of ``test_correct_props``: zero-weight
arcs and cycles, parallel arcs, self-loops, disconnected parts, repeated sources, weights
at the 2**53 bound, tiny and huge real weights, negative weights with and without a
reachable negative cycle).

Each result is checked for exact integer distances, the predecessor invariant and chains
that end at the source, the statistics, ``distances=False`` and the ``targets=`` matrix.
A method may refuse a graph only for a reason it documents (its registry claims: negative
weights, equal weights for the BFS variants; the 2**53 bound; ``phast``'s label and
hierarchy rules); any other refusal is a failure.

Bounded by default (a few minutes on an H100/H200 with the compilations); a longer
search by hand::

    SSSP_GPU_PROPS_EXAMPLES=400 SSSP_PROPS_SEED=3 python -m pytest -m gpu -q tests/kernels/test_gpu_correct_props.py
"""
from __future__ import annotations

import os

import pytest
from hypothesis import given, seed, settings

from gpu_sssp.kernels import hierarchy, registry

from .test_correct_props import FAMILIES, SEED, SETTINGS, _cpu_refusal_expected, check_case, graphs

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("SSSP_GPU_PROPS_EXAMPLES", "25"))

GPU_METHODS = [
    ("harish", {}), ("hbf", {"hops": 1}), ("hbf", {"hops": 2}), ("spmv-csr-scalar", {}),
    ("spmv-csr-vector", {}), ("spmv-ell", {"max_fill": float("inf")}), ("locality", {}), ("edgelist", {}),
    ("bfs-naive", {}), ("bfs-blocked", {}), ("bfs-hierarchical", {}), ("dijkstra-gpu", {}), ("queue-bf", {}),
    ("delta", {}), ("batched", {}), ("auto", {}),
]
if hierarchy.library_available():
    GPU_METHODS.append(("phast", {}))


def gpu_refusal_expected(m, msg, *, exact_ok, integer, has_negative, g) -> bool:
    """A refusal the method documents (anything else is a defect)."""
    if _cpu_refusal_expected(m, msg, exact_ok=exact_ok, integer=integer, has_negative=has_negative, g=g):
        return True
    if m == "auto":
        return False
    spec = registry.get(m, "gpu")
    if has_negative and not spec.negative_weights and "non-negative weights" in msg:
        return True
    if spec.equal_weights and "computes hop distances" in msg:
        return True
    if m == "phast" and ("phast" in msg or "32-bit labels" in msg):
        return True
    return False


@pytest.mark.parametrize("family", FAMILIES)
def test_gpu_methods_on_drawn_graphs(family):
    @seed(SEED)
    @settings(**dict(SETTINGS, max_examples=EXAMPLES))
    @given(graphs(family))
    def run(case):
        n, arcs, sources, dtype, parallel = case
        problems = check_case(n, arcs, sources, dtype, parallel, methods=GPU_METHODS, backend="gpu",
                              refusal_expected=gpu_refusal_expected)
        assert not problems, (case, problems)

    run()
