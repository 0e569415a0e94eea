"""GPU methods: CuPy wrappers around the CUDA sources in ``kernels/cuda``.

Importing this package imports CuPy; only the registry's lazy loader does so.
"""
