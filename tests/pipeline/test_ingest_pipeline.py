"""The read-ahead thread and the parallel-arc count: exact lines, clean stops, counts."""
from __future__ import annotations

import gzip
import hashlib
import threading

import numpy as np
import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest._sink import count_repeats


def _reader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("sssp-ingest-read") and t.is_alive()]


def _gr(n_arcs, n=50, seed=0, bad_at=None, blanks=()):
    rng = np.random.default_rng(seed)
    u = rng.integers(1, n + 1, n_arcs)
    v = rng.integers(1, n + 1, n_arcs)
    w = rng.integers(1, 100, n_arcs)
    lines = ["c test", f"p sp {n} {n_arcs}"]
    for i in range(n_arcs):
        if i in blanks:
            lines.append("")
            lines.append("c a comment in the middle")
        lines.append(f"a {u[i]} {v[i]} {w[i]}" if i != bad_at else f"a {u[i]} x {w[i]}")
    return "\n".join(lines) + "\n", (u, v, w)


@pytest.mark.parametrize("chunk", [4096, 1 << 14, 1 << 20])
def test_error_line_exact_across_chunks(tmp_path, chunk):
    text, _ = _gr(5000, bad_at=4321, blanks=(100, 2500, 4000))
    p = tmp_path / "g.gr"
    p.write_text(text)
    out = tmp_path / "o" / "g.parquet"
    with pytest.raises(InputError) as ei:
        ingest(p, out, chunk_bytes=chunk)
    expected = text.split("\n").index(next(ln for ln in text.split("\n") if " x " in ln)) + 1
    assert ei.value.line == expected and str(ei.value).startswith(f"{p}:{expected}:")
    assert not out.exists() and not any(out.parent.iterdir())
    assert not _reader_threads()


def test_counts_hash_and_parallel_arcs_multi_chunk(tmp_path):
    text, (u, v, _) = _gr(20000, n=40, blanks=(7, 9000))
    p = tmp_path / "g.gr.gz"
    with gzip.open(p, "wt") as f:
        f.write(text)
    meta = ingest(p, tmp_path / "g.parquet", chunk_bytes=4096)
    assert meta["arcs"] == 20000
    assert meta["parallel_arcs"] == 20000 - len(set(zip(u.tolist(), v.tolist())))
    assert meta["source_sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert not _reader_threads()


def test_truncated_gzip_raises_and_stops_reader(tmp_path):
    text, _ = _gr(20000)
    blob = gzip.compress(text.encode())
    p = tmp_path / "g.gr.gz"
    p.write_bytes(blob[: len(blob) // 2])
    with pytest.raises((EOFError, OSError, InputError)):
        ingest(p, tmp_path / "g.parquet", chunk_bytes=4096)
    assert not (tmp_path / "g.parquet").exists()
    assert not _reader_threads()


@pytest.mark.parametrize("total,hi,nruns", [(0, 5, 3), (1, 5, 1), (10, 3, 4), (3_000_000, 1000, 7),
                                             (2_500_000, 10**12, 5), (2_200_000, 7, 9)])
def test_count_repeats_matches_unique(total, hi, nruns):
    a = np.random.default_rng(total).integers(0, hi, total)
    runs = [np.sort(x) for x in np.array_split(a, nruns)]
    want = len(a) - len(np.unique(a))
    assert count_repeats(runs) == want
    assert count_repeats(runs, threads=1) == want
