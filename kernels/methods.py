"""Registration of the GPU methods (lazy: nothing here imports CuPy)."""
from kernels.registry import register

# Each GPU method module registers itself here by name -> "module:function".
