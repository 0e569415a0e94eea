"""The CSR cache (``<file>.csr.npz``) as hostile input: a file whose arrays were rewritten
under the key and fingerprint of the Parquet file is rebuilt, never trusted."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.pipeline.graph import read_parquet


def _edge_list(path, src, dst, w, n):
    t = pa.table({"src": pa.array(src, pa.int32()), "dst": pa.array(dst, pa.int32()),
                  "weight": pa.array(w, pa.int64())})
    meta = {"vertices": n, "arcs": len(src), "directed": True, "id_base": 1, "weight_type": "int64"}
    pq.write_table(t.replace_schema_metadata({b"sssp": json.dumps(meta).encode()}), path)
    return path


def test_a_csr_cache_rewritten_with_other_weights_is_rebuilt_not_trusted(tmp_path, caplog):
    """The zip's CRCs catch a flipped byte, but not a cache saved again (np.savez) with
    other arrays and the file's own key, meta and fingerprint: its weights were used and the
    recorded fingerprint vouched for them (the hierarchy cache and a study's workers trust
    it).  The fingerprint is now the arrays' own, compared with the record."""
    p = _edge_list(tmp_path / "g.parquet", [1, 2, 1], [2, 3, 3], [5, 7, 100], 3)
    good = read_parquet(p)
    cpath = p.with_name(p.name + ".csr.npz")
    with np.load(cpath, allow_pickle=False) as z:
        kept = {k: z[k] for k in z.files}
    forged = dict(kept, weights=np.ones_like(kept["weights"]))
    np.savez(cpath, **forged)
    g = read_parquet(p)
    assert g.weights.tolist() == good.weights.tolist()  # from the Parquet file, not the cache
    assert g.fingerprint == good.fingerprint
    assert "ignoring unreadable CSR cache" in caplog.text and "fingerprint" in caplog.text
    with np.load(cpath, allow_pickle=False) as z:  # and rewritten
        assert z["weights"].tolist() == good.weights.tolist()
