import numpy as np
import gpu_sssp as sssp
from gpu_sssp.kernels.errors import OptionError
g = sssp.Graph.from_edges(np.array([0, 1]), np.array([1, 2]), np.array([5, 5]), n=3)
names = [m for m in sssp.available_methods()]
print(names)
bad = []
from gpu_sssp.kernels.registry import get
for m in names:
    try:
        sssp.solve(g, [0], method=m, backend="gpu", foo=1)
        bad.append((m, "no error"))
    except OptionError as e:
        print("ok", m, e)
    except Exception as e:
        print("other", m, type(e).__name__, e)
        if "gpu" in str(e).lower() and "backend" in str(e).lower():
            continue
        bad.append((m, type(e).__name__))
print("BAD", bad)
