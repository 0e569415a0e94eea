"""Atomic file output for files other than study batches: a context manager giving a
temporary path next to the target, renamed over it on success (the study's own
writers, built on the same temporary naming, are in :mod:`pipeline.writers`)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pipeline.writers import _fsync_dir, _temp_for, write_json_atomic, write_parquet_atomic


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_for(path)
    try:
        yield tmp
        if tmp.exists():
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def write_parquet(table, path, *, metadata: dict | None = None, **kwargs) -> Path:
    """Write ``table`` to ``path`` atomically, with JSON ``metadata`` under key ``sssp``."""
    write_parquet_atomic(table, path, metadata=metadata, **kwargs)
    return Path(path)


def write_json(obj, path) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    write_json_atomic(obj, path)
    return Path(path)
