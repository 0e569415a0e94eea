"""Threads on ingestion's error paths.

An input error ends ``sssp`` at once, so the interpreter may be finalizing while a
thread is still busy. Python's own threads (read-ahead, Parquet writer, key sort) are
joined before ``ingest`` returns or raises. Arrow's worker threads cannot be joined:
pyarrow's threaded CSV reader may release its input on one of them after ``read_csv``
has returned, and releasing a buffer over Python memory takes the GIL, which kills the
thread during finalization and aborts the process ("terminate called without an active
exception", exit 134; seen ~2 in 30 error runs under CPU load). So pyarrow is never
given Python memory or a Python callback to parse: checked here deterministically.
"""
from __future__ import annotations

import threading

import numpy as np
import pyarrow.csv as pacsv
import pytest

from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.pipeline.ingest import _source


def _address(ba) -> int:
    return int(np.frombuffer(ba, dtype=np.uint8).ctypes.data)


@pytest.fixture
def spies(monkeypatch):
    """Record the chunk buffers the read-ahead hands out (Python bytearrays) and what
    pyarrow's CSV reader is given."""
    chunks, calls = [], []
    real_chunks = _source.LineCursor.chunks

    def chunks_spy(self):
        for item in real_chunks(self):
            ba = item[0]
            chunks.append((_address(ba), len(ba)))
            yield item

    real_read_csv = pacsv.read_csv

    def read_csv_spy(source, *args, **kwargs):
        po = kwargs.get("parse_options")
        calls.append({"type": type(source).__name__,
                      "address": getattr(source, "address", None), "size": getattr(source, "size", None),
                      "handler": getattr(po, "invalid_row_handler", None)})
        return real_read_csv(source, *args, **kwargs)

    monkeypatch.setattr(_source.LineCursor, "chunks", chunks_spy)
    monkeypatch.setattr(pacsv, "read_csv", read_csv_spy)
    return chunks, calls


def _check_no_python_memory(chunks, calls):
    assert chunks and calls
    for c in calls:
        assert c["type"] == "Buffer" and c["handler"] is None, c
        lo, hi = c["address"], c["address"] + c["size"]
        for a, n in chunks:
            assert hi <= a or lo >= a + n, "pyarrow was handed the read-ahead's Python buffer"


def _sssp_threads():
    return [t for t in threading.enumerate() if t.name.startswith("sssp-") and t.is_alive()]


@pytest.mark.parametrize("name,text", [
    ("oor.gr", "p sp 3 3\na 1 2 5\na 2 4 1\na 3 1 2\n"),          # the audit's file
    ("oor.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 9 1\n"),
    ("neg.wel", "0 1 5\n1 -2 7\n"),
])
def test_input_error_leaves_no_python_memory_with_arrow(tmp_path, spies, name, text):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(InputError):
        ingest(p, tmp_path / "x.parquet", chunk_bytes=4096)
    _check_no_python_memory(*spies)
    assert not _sssp_threads()


def test_error_while_the_writer_is_busy(tmp_path, spies):
    # many chunks parsed, written and key-sorted before a bad id on the last line: the
    # error comes while the writer and key threads have work in flight
    n = 60000
    body = "".join(f"a {i} {i % n + 1} {i % 97}\n" for i in range(1, n + 1))
    p = tmp_path / "late.gr"
    p.write_text(f"p sp {n} {n + 1}\n" + body + f"a 1 {n + 5} 1\n")
    with pytest.raises(InputError) as ei:
        ingest(p, tmp_path / "x.parquet", chunk_bytes=1 << 16)
    assert ei.value.line == n + 2
    chunks, calls = spies
    assert len(calls) > 10
    _check_no_python_memory(chunks, calls)
    assert not _sssp_threads()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["late.gr"]


def test_success_leaves_no_python_memory_with_arrow(tmp_path, spies):
    p = tmp_path / "ok.gr"
    p.write_text("p sp 3 3\na 1 2 5\na 2 3 1\na 3 1 2\n")
    assert ingest(p, tmp_path / "ok.parquet")["arcs"] == 3
    _check_no_python_memory(*spies)
    assert not _sssp_threads()
