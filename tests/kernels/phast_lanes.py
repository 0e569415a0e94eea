"""``phast``'s kernel time against a batch's sources (its lanes: ``kernels.gpu.phast.lanes_for``),
statistics only; not collected by pytest.  Needs a GPU.

    python tests/kernels/phast_lanes.py GRAPH.parquet 1024,2048,2202,8192,8742
"""
import json
import sys

import numpy as np

from gpu_sssp.kernels.gpu import phast
from gpu_sssp.pipeline.graph import read_parquet
from gpu_sssp.pipeline.hierarchy import load_hierarchy

g = read_parquet(sys.argv[1])
h = load_hierarchy(g)
src = np.random.default_rng(5).integers(0, g.n, 40000)
phast.solve(g, src[:8192], distances=False, hierarchy=h)  # compiled, work arrays kept
for k in (int(x) for x in sys.argv[2].split(",")):
    ms = [phast.solve(g, src[r * 1000:r * 1000 + k], distances=False, hierarchy=h, batch_size=k).counters
          for r in range(5)]
    med = float(np.median([c["kernel_ms"] for c in ms]))
    print(json.dumps(dict(k=k, lanes=ms[-1]["lanes"], grid=ms[-1]["grid_blocks"], kernel_ms=round(med, 3),
                          us_per_src=round(1e3 * med / k, 4))), flush=True)
