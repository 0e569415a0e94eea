"""``method="auto"``: choose a method from the graph's statistics.

The rule (documented in the README, justified by BENCHMARKS.md):
- CPU backend: ``dijkstra`` for non-negative weights, else ``bellman-ford``.
- GPU backend: the best registered GPU method for the graph, in order of preference
  listed in ``GPU_PREFERENCE`` (methods that cannot take negative weights are skipped
  when the graph has some).
"""
from __future__ import annotations

from kernels import registry

#: Preference order on the GPU, many sources first then one source.
GPU_PREFERENCE_MANY = ["batched", "hbf", "harish"]
GPU_PREFERENCE_ONE = ["hbf", "harish", "batched"]


def choose(graph, n_sources: int, backend: str) -> str:
    if backend == "cpu":
        return "bellman-ford" if graph.has_negative else "dijkstra"
    prefs = GPU_PREFERENCE_MANY if n_sources > 1 else GPU_PREFERENCE_ONE
    names = set(registry.available_methods("gpu"))
    for name in prefs:
        if name in names and (registry.get(name).negative_weights or not graph.has_negative):
            return name
    raise ValueError("no GPU method is registered that accepts this graph")
