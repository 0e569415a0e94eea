"""Registration of the GPU methods (lazy: nothing here imports CuPy)."""
from gpu_sssp.kernels.registry import register

# Each GPU method module registers itself here by name -> "module:function".
register("harish", "gpu", "gpu_sssp.kernels.gpu.harish:solve", negative_weights=True,
         description="Harish-Narayanan Bellman-Ford baseline: mask/cost/update arrays, two kernels, host flag per iteration")
register("hbf", "gpu", "gpu_sssp.kernels.gpu.hbf:solve", negative_weights=True,
         description="H-BF frontier Bellman-Ford: edge classes, 64-bit dedup, coalesced enqueue, virtual warps, "
                     "heavy-vertex launch; persistent kernel")
register("spmv-csr-scalar", "gpu", "gpu_sssp.kernels.gpu.spmv:csr_scalar", negative_weights=True,
         description="min-plus SpMV Bellman-Ford over the reverse CSR, thread per row")
register("spmv-csr-vector", "gpu", "gpu_sssp.kernels.gpu.spmv:csr_vector", negative_weights=True,
         description="min-plus SpMV Bellman-Ford over the reverse CSR, warp per row, shuffle min-reduction")
register("spmv-ell", "gpu", "gpu_sssp.kernels.gpu.spmv:ell", negative_weights=True,
         description="min-plus SpMV Bellman-Ford over column-major padded ELL (refuses padding > max_fill x CSR)")
# --- papers 000-003 (issue 4)
register("locality", "gpu", "gpu_sssp.kernels.gpu.locality:solve", negative_weights=True,
         description="locality-based k-step depth-first relaxation, two flag arrays; one persistent launch per "
                     "source (default) or N blind launches then host-checked ones (paper 000)")
register("edgelist", "gpu", "gpu_sssp.kernels.gpu.edgelist:solve", negative_weights=True,
         description="edge-list Bellman-Ford, thread per undirected edge relaxing both ways, modif word, "
                     "restrict alias, segment sort (paper 001)")
register("bfs-naive", "gpu", "gpu_sssp.kernels.gpu.bfs:naive", negative_weights=False, equal_weights=True,
         description="level-synchronous BFS, global queue (paper 002); hop distances, equal weights only")
register("bfs-blocked", "gpu", "gpu_sssp.kernels.gpu.bfs:blocked", negative_weights=False, equal_weights=True,
         description="level-synchronous BFS, shared-memory block queue (paper 002); equal weights only")
register("bfs-hierarchical", "gpu", "gpu_sssp.kernels.gpu.bfs:hierarchical", negative_weights=False, equal_weights=True,
         description="level-synchronous BFS, per-warp hierarchical queues (paper 002); equal weights only")
register("dijkstra-gpu", "gpu", "gpu_sssp.kernels.gpu.dijkstra_gpu:solve", negative_weights=False,
         description="Dijkstra with parallel-reduction extract-min, one launch per vertex (paper 003); "
                     "refuses runs estimated over 10 minutes (its max_seconds) unless force=True")
register("queue-bf", "gpu", "gpu_sssp.kernels.gpu.queue_bf:solve", negative_weights=True,
         description="Bellman-Ford driven by per-block queues of updated vertices (paper 003)")
register("delta", "gpu", "gpu_sssp.kernels.gpu.delta:solve", negative_weights=False,
         description="delta-stepping, per-vertex bucket index, light/heavy on the fly, one cooperative "
                     "kernel per source (paper 003, Meyer-Sanders)")
register("batched", "gpu", "gpu_sssp.kernels.gpu.batched:batched", negative_weights=True, device_turn=True,
         targets=True,
         description="many sources per cooperative kernel, vertex-major distances, near-far buckets, GPU reductions")
register("phast", "gpu", "gpu_sssp.kernels.gpu.phast:solve", negative_weights=False, targets=True,
         device_turn=True, needs_hierarchy=True,
         description="PHAST: a contraction hierarchy (RoutingKit) once per graph, then one cooperative kernel per "
                     "batch sweeps it upward and downward level by level, labels vertex-major, reductions fused; "
                     "integer weights >= 0")
