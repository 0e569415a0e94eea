"""load_graph's `.sssp-cache/`: nothing left by a failure, stale copies replaced, a
bounded number of option variants, atomic copies."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from gpu_sssp.pipeline import graph as pgraph
from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.pipeline.graph import CACHE_VARIANTS, load_graph
from tests.conftest import DATA


def _copies(cache):
    return sorted(f.name for f in cache.iterdir() if f.name.endswith(".parquet"))


def _input(tmp_path, name="rome99.gr"):
    p = tmp_path / name
    shutil.copy(DATA / "rome99.gr", p)
    return p


def test_failed_ingest_leaves_no_cache_folder(tmp_path):
    p = tmp_path / "bad.gr"
    p.write_text("p sp 3 2\na 1 2 1\nx\n")
    with pytest.raises(InputError):
        load_graph(p)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["bad.gr"]


def test_failed_ingest_keeps_a_folder_it_did_not_create(tmp_path):
    p = tmp_path / "bad.gr"
    p.write_text("p sp 3 2\na 1 2 1\nx\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    with pytest.raises(InputError):
        load_graph(p, cache_dir=mine)
    assert mine.is_dir() and not any(mine.iterdir())
    with pytest.raises(InputError):
        load_graph(p, cache_dir=tmp_path / "new" / "cache")
    assert not (tmp_path / "new" / "cache").exists()


def test_failed_ingest_keeps_an_existing_cache(tmp_path):
    good = _input(tmp_path)
    load_graph(good)
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 2\na 1 2 1\nx\n")
    with pytest.raises(InputError):
        load_graph(bad)
    cache = tmp_path / ".sssp-cache"
    assert [n.split(".")[0] for n in _copies(cache)] == ["rome99"]
    assert not [f for f in cache.iterdir() if f.name.startswith(".")]  # no temporaries


def test_changed_input_replaces_its_copy(tmp_path):
    p = _input(tmp_path)
    arcs = load_graph(p).meta["arcs"]  # its Graph gone: the copy is not in use (test_ingest_cache_lease)
    cache = tmp_path / ".sssp-cache"
    first = _copies(cache)
    assert len(first) == 1 and (cache / (first[0] + ".csr.npz")).exists()
    # the input changes: one arc weight more, another size and mtime
    text = p.read_text().replace("p sp 3353 8870", "p sp 3353 8871") + "a 1 2 7\n"
    p.write_text(text)
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    g2 = load_graph(p)
    assert g2.meta["arcs"] == arcs + 1
    second = _copies(cache)
    assert len(second) == 1 and second != first
    # the stale copy went with its CSR cache and its use marker
    assert sorted(f.name for f in cache.iterdir()) == [second[0], second[0] + ".csr.npz", second[0] + ".used"]


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_input_edited_with_its_old_size_and_mtime_is_read_again(tmp_path, how):
    """An edit that keeps the file's size and puts its mtime back (``touch -r``, a tool
    that restores times) was served the old copy: a study resumed on the old graph.
    The ctime, which no user call can set, and the inode key the copy too."""
    p = _input(tmp_path)
    old = load_graph(p).fingerprint  # its Graph gone: the copy is not in use
    st = p.stat()
    text = p.read_text()
    i = text.index("\na ") + 1
    line = text[i:text.index("\n", i)]
    head, w = line.rsplit(" ", 1)
    new_w = str(int(w) + 1) if len(str(int(w) + 1)) == len(w) else str(int(w) - 1)
    edited = text[:i] + head + " " + new_w + text[i + len(line):]
    assert len(edited) == len(text) and edited != text
    if how == "in place":
        with open(p, "r+") as f:
            f.write(edited)
    else:
        tmp = tmp_path / "new.gr"
        tmp.write_text(edited)
        os.replace(tmp, p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    g2 = load_graph(p)
    assert g2.fingerprint != old
    assert int(new_w) in set(g2.to_scipy().data.astype(int).tolist())
    assert len(_copies(tmp_path / ".sssp-cache")) == 1  # the old copy went


def test_another_input_in_the_same_folder_is_kept(tmp_path):
    a = _input(tmp_path, "a.gr")
    b = _input(tmp_path, "b.gr")
    load_graph(a)
    load_graph(b)
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 10**9))
    load_graph(b)
    names = _copies(tmp_path / ".sssp-cache")
    assert [n.split(".")[0] for n in names] == ["a", "b"]


def test_option_variants_are_bounded(tmp_path):
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    specs = [f"random:1:{hi}:1" for hi in range(10, 10 + CACHE_VARIANTS + 2)]
    for spec in specs:
        load_graph(p, weights=spec)
    assert len(_copies(cache)) == CACHE_VARIANTS
    # the most recently used are kept: loading the newest again ingests nothing
    before = {f.name: f.stat().st_ino for f in cache.iterdir()}
    g = load_graph(p, weights=specs[-1])
    assert int(g.weights.max()) <= 10 + CACHE_VARIANTS + 1
    after = {f.name: f.stat().st_ino for f in cache.iterdir()}
    assert before == after


def test_unreadable_copy_is_ingested_again(tmp_path):
    p = _input(tmp_path)
    want = load_graph(p)
    cache = tmp_path / ".sssp-cache"
    (copy,) = _copies(cache)
    # a half-written file under the final name (e.g. left by an older version)
    data = (cache / copy).read_bytes()
    for f in cache.iterdir():
        f.unlink()
    (cache / copy).write_bytes(data[: len(data) // 2])
    g = load_graph(p)
    assert g.fingerprint == want.fingerprint
    assert (cache / copy).read_bytes() == data or pgraph.read_parquet(cache / copy).m == want.m


def test_interrupted_ingest_leaves_no_copy(tmp_path, monkeypatch):
    from gpu_sssp.pipeline.ingest import _sink

    p = _input(tmp_path)
    real_add = _sink.EdgeSink.add
    calls = []

    def add(self, *a, **k):
        calls.append(1)
        real_add(self, *a, **k)
        raise KeyboardInterrupt  # after the first batch has gone to the writer

    monkeypatch.setattr(_sink.EdgeSink, "add", add)
    with pytest.raises(KeyboardInterrupt):
        load_graph(p, chunk_bytes=4096)
    assert calls
    assert sorted(f.name for f in tmp_path.iterdir()) == ["rome99.gr"]
    monkeypatch.setattr(_sink.EdgeSink, "add", real_add)
    g = load_graph(p, chunk_bytes=4096)
    assert g.meta["arcs"] == 8870


def test_temp_files_of_dead_processes_are_removed(tmp_path):
    p = _input(tmp_path)
    load_graph(p)
    cache = tmp_path / ".sssp-cache"
    (copy,) = _copies(cache)
    # a pid that cannot be running: above the kernel's pid_max
    dead = 2**22 + 12345
    litter = [cache / f".{copy}.{dead}.0123abcd.tmp", cache / f"{copy}.csr.npz.tmp{dead}.npz",
              cache / f"{copy}.csr.npz.tmp{dead}-0123abcd.npz"]
    alive = cache / f".{copy}.{os.getpid()}.0123abcd.tmp"
    # a pid not running here, written a moment ago: maybe another host's writer at work
    # on a shared folder, left alone until it is TEMP_GRACE_S old
    fresh = cache / f"{copy}.csr.npz.tmp{dead}-89abcdef.npz"
    for f in litter + [alive, fresh]:
        f.write_bytes(b"half")
    for f in litter:
        _age(f)
    load_graph(p)
    assert not any(f.exists() for f in litter)
    assert alive.exists() and fresh.exists()


def _age(path, seconds: float = 3600.0) -> None:
    import time

    t = time.time() - seconds
    os.utime(path, (t, t))


def test_legacy_copies_beside_the_input_are_removed(tmp_path):
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    cache.mkdir()
    old = cache / "rome99.gr.0123456789abcdef.parquet"
    old.write_bytes(b"x")
    (cache / (old.name + ".csr.npz")).write_bytes(b"x")
    other = cache / "other.gr.0123456789abcdef.parquet"
    other.write_bytes(b"x")
    load_graph(p)
    assert not old.exists() and not (cache / (old.name + ".csr.npz")).exists()
    assert other.exists()
    assert np.isfinite(load_graph(p).weights).all()


def test_threads_loading_one_new_file_write_its_csr_cache_without_colliding(tmp_path, caplog):
    """The CSR cache's temporary name was keyed by the process only: three threads of one
    process reading the same Parquet file for the first time wrote the same temporary
    file, and one warned "could not write CSR cache ... No such file or directory" (its
    file renamed away by another)."""
    import logging
    import threading

    from gpu_sssp.pipeline.graph import read_parquet

    p = _input(tmp_path)
    load_graph(p)
    cache = tmp_path / ".sssp-cache"
    (copy,) = _copies(cache)
    parquet = cache / copy
    csr = parquet.with_name(parquet.name + ".csr.npz")
    errors, graphs = [], []
    for attempt in range(5):
        csr.unlink(missing_ok=True)
        start = threading.Barrier(3)

        def load():
            try:
                start.wait()
                graphs.append(read_parquet(parquet))
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.graph"):
            threads = [threading.Thread(target=load) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert not errors
    assert not [r for r in caplog.records if "could not write CSR cache" in r.getMessage()]
    assert csr.exists() and len({g.fingerprint for g in graphs}) == 1
    assert not [f for f in cache.iterdir() if ".tmp" in f.name]


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_parquet_edited_with_its_old_size_and_mtime_is_read_again(tmp_path, how):
    """The CSR cache beside a Parquet edge list was keyed by the file's size, mtime and
    metadata only: a weight changed in place (or a same-size file renamed over it) with
    the old mtime put back was served the old CSR, fingerprint included, so the hierarchy
    cache and a study's graph.parquet matched the old graph too.  The ctime and the inode
    key it as they key load_graph's copies."""
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline.graph import read_parquet

    src = tmp_path / "src.parquet"
    pgraph.load_graph(_input(tmp_path))  # an sssp edge list
    (copy,) = _copies(tmp_path / ".sssp-cache")
    table = pq.read_table(tmp_path / ".sssp-cache" / copy)
    p = tmp_path / "g.parquet"
    # plain, uncompressed, no statistics: a weight is 8 bytes of the file, found below
    pq.write_table(table, p, compression="none", use_dictionary=False, write_statistics=False)
    g1 = read_parquet(p)
    assert p.with_name("g.parquet.csr.npz").exists()
    st = p.stat()
    w = table.column("weight").to_numpy()
    vals, counts = np.unique(w, return_counts=True)
    raw = bytearray(p.read_bytes())
    for v in vals[counts == 1]:
        old = np.array([v], dtype=w.dtype).tobytes()
        if raw.count(old) == 1:
            break
    i = raw.index(old)
    raw[i:i + 8] = np.array([v + 1], dtype=w.dtype).tobytes()
    if how == "in place":
        with open(p, "r+b") as f:
            f.write(raw)
    else:
        src.write_bytes(bytes(raw))
        os.replace(src, p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    g2 = read_parquet(p)
    want = read_parquet(p, cache=False)
    assert want.fingerprint != g1.fingerprint
    assert g2.fingerprint == want.fingerprint
    assert np.array_equal(g2.weights, want.weights)


def _recsr(csr, **changes):
    with np.load(csr) as z:
        d = {k: z[k] for k in z.files}
    for k, v in changes.items():
        d[k] = v(d[k]) if callable(v) else v
    tmp = csr.with_name("x.npz")
    np.savez(tmp, **d)
    os.replace(tmp, csr)


def _out_of_range(a):
    a = a.copy()
    a[5] = 10**6
    return a


def _ptr_past_end(a):
    a = a.copy()
    a[-1] += 100
    return a


@pytest.mark.parametrize("damage", [
    dict(indices=_out_of_range),                       # sssp solve crashed with SIGSEGV
    dict(indptr=_ptr_past_end),                         # a SciPy traceback
    dict(indptr=lambda a: a[::-1].copy()),
    dict(n=np.array(10**7)),                            # n beyond the file's vertices
    dict(weights=lambda a: a[:-1].copy()),
    dict(indices=lambda a: a.astype(np.float64)),
    dict(weights=lambda a: np.array([object()] * len(a), dtype=object)),
])
def test_csr_cache_with_its_key_but_bad_arrays_is_rebuilt(tmp_path, damage, caplog):
    """A CSR cache whose key matches its Parquet file was used as it was, arrays
    unchecked: an arc head out of range crashed `sssp solve` (any method) with a
    segmentation fault.  Its arrays are checked against the file's vertices and rows
    and against each other; a bad one is rebuilt with a warning."""
    import logging

    from gpu_sssp.pipeline.graph import read_parquet

    g = load_graph(_input(tmp_path))
    copy = tmp_path / ".sssp-cache" / _copies(tmp_path / ".sssp-cache")[0]
    csr = copy.with_name(copy.name + ".csr.npz")
    _recsr(csr, **damage)
    with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.graph"):
        g2 = read_parquet(copy)
    assert "CSR cache" in caplog.text
    assert g2.n == g.n and g2.fingerprint == g.fingerprint
    for name in ("indptr", "indices", "weights"):
        assert np.array_equal(getattr(g2, name), getattr(g, name))
    assert read_parquet(copy).fingerprint == g.fingerprint  # rewritten good


def test_csr_cache_member_that_inflates_is_refused_before_it_is_read(tmp_path):
    """A compressed CSR cache member (kilobytes on disk, 128 MB inflated) was read whole
    before anything was compared; the cache is written uncompressed."""
    import tracemalloc

    from gpu_sssp.pipeline.graph import read_parquet

    g = load_graph(_input(tmp_path))
    copy = tmp_path / ".sssp-cache" / _copies(tmp_path / ".sssp-cache")[0]
    csr = copy.with_name(copy.name + ".csr.npz")
    with np.load(csr) as z:
        d = {k: z[k] for k in z.files}
    d["indices"] = np.zeros(32_000_000, dtype=np.int32)
    np.savez_compressed(csr, **d)
    del d
    tracemalloc.start()
    try:
        g2 = read_parquet(copy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert g2.fingerprint == g.fingerprint
    assert peak < 40_000_000, f"{peak:,} bytes allocated"


def test_temp_files_of_dead_processes_beside_a_parquet_file_are_removed(tmp_path):
    """A process killed while it wrote the CSR or the hierarchy cache beside a Parquet
    edge list (not in .sssp-cache, where load_graph sweeps them) left its temporary
    file there for good: every killed run added one."""
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    load_graph(_input(tmp_path))
    copy = tmp_path / ".sssp-cache" / _copies(tmp_path / ".sssp-cache")[0]
    d = tmp_path / "odd [dir]"
    d.mkdir()
    p = d / "g*.parquet"
    shutil.copy(copy, p)
    dead = 2**22 + 12345
    litter = [d / f"{p.name}.csr.npz.tmp{dead}-0123abcd.npz", d / f"{p.name}.ch.npz.tmp{dead}-0123abcd.npz",
              d / f"{p.name}.csr.npz.tmp{dead}.npz"]
    keep = [d / f"{p.name}.csr.npz.tmp{os.getpid()}-0123abcd.npz",  # a live process's
            d / f"other.parquet.csr.npz.tmp{dead}-0123abcd.npz"]     # another file's
    fresh = d / f"{p.name}.ch.npz.tmp{dead}-89abcdef.npz"  # maybe another host's, at work
    for f in litter + keep + [fresh]:
        f.write_bytes(b"half")
    for f in litter + keep:
        _age(f)
    keep.append(fresh)
    g = read_parquet(p)
    ph.load_hierarchy(g)
    assert [f.name for f in litter if f.exists()] == []
    assert all(f.exists() for f in keep)
    assert (d / f"{p.name}.ch.npz").exists() and (d / f"{p.name}.csr.npz").exists()


@pytest.fixture()
def read_only_folder(monkeypatch):
    """Emulates a read-only file system for the caches' writers (tests may run as root,
    whom permissions do not stop): creating a file there fails with EROFS, and so does
    removing one, even one that does not exist (what Linux answers on a read-only mount)."""
    import errno
    import pathlib

    def erofs(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    real_unlink = pathlib.Path.unlink

    def unlink(self, missing_ok=False):
        if ".tmp" in self.name:
            erofs()
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(np, "savez", erofs)
    monkeypatch.setattr(pathlib.Path, "unlink", unlink)


def test_parquet_in_a_read_only_folder_still_loads(tmp_path, read_only_folder, caplog):
    """A Parquet file in a read-only folder stopped `sssp solve` with "error: [Errno 30]
    Read-only file system": the CSR cache's writer warned, then removing its temporary
    file (which a read-only mount refuses with EROFS, not ENOENT) raised out of
    read_parquet.  Likewise the hierarchy cache."""
    import logging

    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.graph import read_parquet

    from gpu_sssp.pipeline.ingest import ingest

    p = tmp_path / "g.parquet"
    ingest(DATA / "rome99.gr", p)  # Parquet, not np.savez: written as usual
    with caplog.at_level(logging.WARNING):
        g = read_parquet(p)
        h = ph.load_hierarchy(g)
    assert g.n == 3353 and h.n == 3353
    assert "could not write CSR cache" in caplog.text and "could not write the hierarchy cache" in caplog.text
    assert sorted(f.name for f in tmp_path.iterdir()) == ["g.parquet"]


@pytest.fixture()
def unwritable(monkeypatch):
    """Folders whose write probe fails as on a read-only mount (tests may run as root)."""
    import errno
    import pathlib

    blocked = []
    real_touch = pathlib.Path.touch

    def touch(self, *a, **k):
        if any(self.parent == b for b in blocked):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_touch(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "touch", touch)
    return blocked


def test_an_empty_xdg_cache_home_is_unset(tmp_path, monkeypatch, unwritable):
    """XDG_CACHE_HOME set but empty (``XDG_CACHE_HOME= sssp solve ...``) put the ingested
    copy of an input in a read-only folder into ``./sssp`` below whatever folder the
    command ran in; the XDG spec says an empty or relative value is to be ignored."""
    p = _input(tmp_path)
    unwritable.append(tmp_path / ".sssp-cache")
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    for value in ("", "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", value)
        g = load_graph(p)
        assert g.n == 3353
        assert _copies(home / ".cache" / "sssp")
        assert list(cwd.iterdir()) == []


def test_no_writable_cache_folder_says_where_it_looked(tmp_path, monkeypatch, unwritable):
    """Neither the input's folder nor the user cache folder writable: one line naming
    both and the way out, instead of the bare errno of the last folder tried."""
    p = _input(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    unwritable += [tmp_path / ".sssp-cache", home / ".cache" / "sssp"]
    with pytest.raises(OSError) as e:
        load_graph(p)
    msg = str(e.value)
    assert str(tmp_path / ".sssp-cache") in msg and str(home / ".cache" / "sssp") in msg
    assert "XDG_CACHE_HOME" in msg and "\n" not in msg
    assert not (tmp_path / ".sssp-cache").exists()


def _finishes(fn, fifos):
    """Run ``fn`` in a thread; if it is still blocked after a generous while, unblock it
    by opening every FIFO for writing and report that it hung."""
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn()), daemon=True)
    t.start()
    t.join(60)
    hung = t.is_alive()
    if hung:
        for f in fifos:
            try:
                os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(60)
    return hung, out.get("r")


def test_cache_files_that_are_fifos_are_not_opened(tmp_path):
    """A FIFO (or another special file) in place of a cache file made every load block
    for ever in open(): the CSR cache, the hierarchy cache, the ingested copy.  They are
    not regular files: ignored and replaced."""
    from gpu_sssp.pipeline import hierarchy as ph

    p = _input(tmp_path)
    load_graph(p)
    cache = tmp_path / ".sssp-cache"
    copy = cache / _copies(cache)[0]
    fifos = [copy.with_name(copy.name + ".csr.npz"), copy.with_name(copy.name + ".ch.npz"), copy]
    for which in fifos:
        for f in fifos:
            if f.exists() and not f.is_file():
                f.unlink()
        load_graph(p)
        which.unlink(missing_ok=True)
        os.mkfifo(which)

        def run():
            g = load_graph(p)
            return ph.load_hierarchy(g).n

        hung, n = _finishes(run, [which])
        assert not hung, f"blocked on {which.name}"
        assert n == 3353


def test_a_variant_used_again_is_kept_and_its_csr_cache_stays(tmp_path):
    """Least recently *used* goes (the use marker), and marking a use leaves the copy's
    own times alone: its CSR cache, keyed by them, is not rewritten by a second load."""
    import time

    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    specs = [f"random:1:{hi}:1" for hi in range(10, 10 + CACHE_VARIANTS + 1)]
    for spec in specs[:CACHE_VARIANTS]:
        load_graph(p, weights=spec)
        time.sleep(0.01)  # distinct marker times on coarse clocks
    first = {f.name: f.stat().st_ino for f in cache.iterdir() if f.name.endswith(".csr.npz")}
    load_graph(p, weights=specs[0])  # used again: now the most recent
    time.sleep(0.01)
    assert {f.name: f.stat().st_ino for f in cache.iterdir() if f.name.endswith(".csr.npz")} == first
    load_graph(p, weights=specs[-1])  # one variant too many: the least recently used goes

    def has(spec):
        okey = pgraph._short_hash(sorted({"weights": spec}.items()))
        return any(f".{okey}." in name for name in _copies(cache))

    assert len(_copies(cache)) == CACHE_VARIANTS
    assert has(specs[0]) and has(specs[-1]) and not has(specs[1])


def test_a_parquet_csr_cache_goes_to_cache_dir_or_the_users_cache(tmp_path, monkeypatch, caplog):
    """``load_graph(g.parquet, cache_dir=...)`` dropped ``cache_dir`` without a word (the
    CSR cache went beside the file); and a Parquet file in a folder that cannot be
    written had its CSR built again from the file on every load.  The cache now goes to
    ``cache_dir``, else beside the file, else the user's cache folder, and is read from
    there on the next load."""
    import errno
    import logging

    from gpu_sssp.pipeline import graph as pg
    from gpu_sssp.pipeline.graph import load_graph, read_parquet
    from gpu_sssp.pipeline.ingest import ingest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    data = tmp_path / "data"
    data.mkdir()
    p = data / "g.parquet"
    ingest(DATA / "rome99.gr", p)
    want = read_parquet(p, cache=False).fingerprint
    mine = tmp_path / "mine"
    g = load_graph(p, cache_dir=mine)
    assert g.fingerprint == want and sorted(f.name for f in data.iterdir()) == ["g.parquet"]
    (cached,) = mine.iterdir()
    assert cached.name.startswith("g.parquet.") and cached.name.endswith(".csr.npz")

    def no_rebuild(*a, **k):
        raise AssertionError("the CSR was built again from the Parquet file")

    with monkeypatch.context() as m:
        m.setattr(pg, "_read_arcs", no_rebuild)
        assert load_graph(p, cache_dir=mine).fingerprint == want  # read from cache_dir
    ro = tmp_path / "ro"
    ro.mkdir()
    other = ro / "g.parquet"
    other.write_bytes(p.read_bytes())
    real_write = pg._write_csr_cache

    def read_only(g, key, cpath):  # ro/ as a read-only mount (tests may run as root)
        if cpath.parent == ro:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_write(g, key, cpath)

    monkeypatch.setattr(pg, "_write_csr_cache", read_only)
    with caplog.at_level(logging.INFO, logger="gpu_sssp.pipeline.graph"):
        assert read_parquet(other).fingerprint == want
    assert "could not write CSR cache" not in caplog.text and "Read-only file system" in caplog.text
    assert list((tmp_path / "xdg" / "sssp" / "csr").glob("g.parquet.*.csr.npz"))
    with monkeypatch.context() as m:
        m.setattr(pg, "_read_arcs", no_rebuild)
        assert read_parquet(other).fingerprint == want  # from the user's cache
    assert sorted(f.name for f in ro.iterdir()) == ["g.parquet"]


def test_a_parquet_csr_cache_found_in_the_users_cache_is_copied_to_cache_dir(tmp_path, monkeypatch):
    """``load_graph(g.parquet, cache_dir=D)`` read a valid CSR cache the user's cache folder
    held (an earlier load from a read-only folder) and wrote nothing to ``D``, where the
    caller asked for it (a cache folder kept with a project, shared with its workers)."""
    from gpu_sssp.pipeline import graph as pg
    from gpu_sssp.pipeline.graph import load_graph
    from gpu_sssp.pipeline.ingest import ingest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    data = tmp_path / "data"
    data.mkdir()
    p = data / "g.parquet"
    ingest(DATA / "rome99.gr", p)
    data.chmod(0o555)  # read-only: the first load keeps its CSR in the user's cache
    try:
        want = load_graph(p).fingerprint
        assert list((tmp_path / "xdg" / "sssp" / "csr").glob("g.parquet.*.csr.npz"))
        mine = tmp_path / "mine"
        monkeypatch.setattr(pg, "_read_arcs", lambda *a, **k: pytest.fail("the CSR was built again"))
        assert load_graph(p, cache_dir=mine).fingerprint == want
        (copied,) = mine.iterdir()
        assert copied.name.startswith("g.parquet.") and copied.name.endswith(".csr.npz")
        assert load_graph(p, cache_dir=mine).fingerprint == want
    finally:
        data.chmod(0o755)
