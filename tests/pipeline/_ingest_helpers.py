"""Shared helpers for the ingestion tests."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from gpu_sssp.pipeline.ingest import ingest, read_meta


def arcs(path):
    t = pq.read_table(path)
    return (t.column("src").to_numpy().astype(np.int64), t.column("dst").to_numpy().astype(np.int64),
            t.column("weight").to_numpy())


def ingest_arcs(src, tmp_path, name="out.parquet", **kw):
    out = tmp_path / name
    meta = ingest(src, out, **kw)
    assert read_meta(out) == meta
    return arcs(out), meta


def arcset(s, d, w=None, shift=0):
    if w is None:
        return sorted(zip((s - shift).tolist(), (d - shift).tolist()))
    return sorted(zip((s - shift).tolist(), (d - shift).tolist(), w.tolist()))
