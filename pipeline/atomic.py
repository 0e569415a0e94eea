"""Atomic file output: write to a temporary name in the same folder, then rename."""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_parquet(table: pa.Table, path, *, metadata: dict | None = None, **kwargs) -> Path:
    """Write ``table`` to ``path`` atomically, with JSON ``metadata`` under key ``sssp``."""
    if metadata is not None:
        md = dict(table.schema.metadata or {})
        md[b"sssp"] = json.dumps(metadata, default=str).encode()
        table = table.replace_schema_metadata(md)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **kwargs)
    return Path(path)


def write_json(obj, path) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, default=str) + "\n")
    return Path(path)
