"""The hierarchy cache file (pipeline.hierarchy) survives a crash: its writer flushes the
file before the rename and the folder after it, and a reader that meets an empty or cut
file (what a crash left before the writer flushed) rebuilds it, never crashes or answers
wrong."""
from __future__ import annotations

import os

import numpy as np
import pytest

from gpu_sssp.kernels import hierarchy as hmod
from tests.kernels.test_hierarchy import (_fresh, load_counting_builds, numpy_phast, rome_parquet,  # noqa: F401
                                          scipy_int)  # (rome_parquet: a fixture)


def _what(fd_or_path):
    if isinstance(fd_or_path, int):
        return os.readlink(f"/proc/self/fd/{fd_or_path}")
    return os.fspath(fd_or_path)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd to name fsynced files")
def test_writer_fsyncs_the_file_before_the_rename_and_the_folder_after(rome_parquet, monkeypatch):
    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    h = hmod.build_hierarchy(g)
    cpath = rome_parquet.with_name("rome99.parquet.ch.npz")
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", _what(fd)))
        return real_fsync(fd)

    def replace(a, b, *args, **kw):
        events.append(("replace", _what(a), _what(b)))
        return real_replace(a, b, *args, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    ph.write_cache(h, g, cpath)
    renames = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(cpath)]
    assert len(renames) == 1, events
    r = renames[0]
    tmp = events[r][1]
    # the temporary file's data reached the disk before the rename made it the cache
    assert ("fsync", tmp) in events[:r], events
    # and the folder's entry after it
    assert ("fsync", str(cpath.parent)) in events[r + 1:], events
    assert ph.read_cache(_fresh(rome_parquet), cpath)[0] is not None


@pytest.mark.parametrize("crash", [
    lambda p: p.write_bytes(b""),                                    # renamed, data never written
    lambda p: p.write_bytes(p.read_bytes()[:4096]),                  # the first block only
    lambda p: p.write_bytes(b"\0" * len(p.read_bytes())),            # its size, no data (ext4 after a crash)
    lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) - 22]),  # all but the zip's end record
], ids=["empty", "first-block", "zeros", "no-end-record"])
def test_a_file_a_crash_left_is_rebuilt(rome_parquet, crash, caplog):
    from gpu_sssp.pipeline import hierarchy as ph

    g = _fresh(rome_parquet)
    ph.load_hierarchy(g)
    cpath = ph.cache_path(g)
    crash(cpath)
    g2 = _fresh(rome_parquet)
    bad, why = ph.read_cache(g2, cpath)
    assert bad is None and why
    h2, built = load_counting_builds(g2, caplog)
    assert len(built) == 1 and "rebuilding" in caplog.text
    assert np.array_equal(numpy_phast(h2, [0, 9]), scipy_int(g2, [0, 9]))
    assert ph.read_cache(_fresh(rome_parquet), cpath)[0] is not None
