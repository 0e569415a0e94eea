"""Ingested copies in use are never evicted: a process holds a shared flock on the copy it
loaded while its Graph lives (pipeline.graph._take_lease), and evictions skip a copy they
cannot lock exclusively.  A second `sssp study`/`sssp solve` of the same input with other
ingest options, or after the input was edited, deleted the copy (and the hierarchy beside
it) under a running study: a worker that restarted could not load its graph."""
from __future__ import annotations

import errno
import fcntl
import gc
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpu_sssp.pipeline import graph as pgraph
from gpu_sssp.pipeline.graph import CACHE_VARIANTS, load_graph
from tests.conftest import DATA, REPO

SPECS = [f"random:1:{hi}:1" for hi in range(10, 10 + CACHE_VARIANTS + 3)]


def _input(tmp_path, name="rome99.gr"):
    p = tmp_path / name
    shutil.copy(DATA / "rome99.gr", p)
    return p


def _copies(cache):
    return sorted(f.name for f in cache.iterdir() if f.name.endswith(".parquet"))


def _copy_of(cache, spec):
    okey = pgraph._short_hash(sorted({"weights": spec}.items()))
    found = [cache / n for n in _copies(cache) if f".{okey}." in n]
    return found[0] if found else None


def _held(copy) -> bool:
    """Whether anyone holds ``copy`` in use: an exclusive lock on a new descriptor fails
    (flock locks belong to an open file description: this process's own leases count)."""
    fd = os.open(copy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _load_variants(p, specs):
    for spec in specs:
        load_graph(p, weights=spec)
        time.sleep(0.01)  # distinct use-marker times on coarse clocks


def test_a_copy_in_use_outlives_more_option_variants(tmp_path):
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    g = load_graph(p, weights=SPECS[0])  # a study's graph: held while it runs
    copy = _copy_of(cache, SPECS[0])
    derived = [copy.with_name(copy.name + ".csr.npz"), copy.with_name(copy.name + ".ch.npz")]
    derived[1].write_bytes(b"a hierarchy")  # any file derived from the copy
    assert _held(copy)
    time.sleep(0.01)
    _load_variants(p, SPECS[1:CACHE_VARIANTS + 1])  # one more than CACHE_VARIANTS in all
    assert copy.exists() and all(f.exists() for f in derived)
    # the bound holds: the least recently used copy that no one uses went instead
    assert len(_copies(cache)) == CACHE_VARIANTS
    assert _copy_of(cache, SPECS[1]) is None
    assert g.n == 3353
    del g
    gc.collect()
    assert not _held(copy)
    load_graph(p, weights=SPECS[CACHE_VARIANTS + 1])  # released: the next eviction takes it
    assert not copy.exists() and not any(f.exists() for f in derived)
    assert len(_copies(cache)) == CACHE_VARIANTS


def test_a_copy_held_through_another_descriptor_is_kept(tmp_path):
    """What another process's lease looks like to an eviction (a lock on another open
    file description): the copy and its CSR cache stay while it is held."""
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    load_graph(p, weights=SPECS[0])
    copy = _copy_of(cache, SPECS[0])
    csr = copy.with_name(copy.name + ".csr.npz")
    fd = os.open(copy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        time.sleep(0.01)
        _load_variants(p, SPECS[1:CACHE_VARIANTS + 2])
        assert copy.exists() and csr.exists()
    finally:
        os.close(fd)
    load_graph(p, weights=SPECS[1])
    assert not copy.exists() and not csr.exists()


def test_a_copy_in_use_by_another_process_is_kept(tmp_path):
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from gpu_sssp.pipeline.graph import load_graph
            g = load_graph({str(p)!r}, weights={SPECS[0]!r})
            print(g.n, flush=True)
            sys.stdin.read()  # until the test closes it
            """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "3353"
        copy = _copy_of(cache, SPECS[0])
        time.sleep(0.01)
        _load_variants(p, SPECS[1:CACHE_VARIANTS + 2])
        assert copy.exists() and copy.with_name(copy.name + ".csr.npz").exists()
    finally:
        holder.stdin.close()
        holder.wait(60)
    assert holder.returncode == 0
    load_graph(p, weights=SPECS[1])
    assert not copy.exists()
    assert len(_copies(cache)) == CACHE_VARIANTS


def test_a_stale_copy_in_use_is_removed_once_released(tmp_path):
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    g1 = load_graph(p)
    (old,) = [cache / n for n in _copies(cache)]
    hierarchy = old.with_name(old.name + ".ch.npz")
    hierarchy.write_bytes(b"a hierarchy")
    # the input is edited while a study uses its copy (the study pins its fingerprint)
    p.write_text(p.read_text().replace("p sp 3353 8870", "p sp 3353 8871") + "a 1 2 7\n")
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))
    g2 = load_graph(p)
    assert g2.meta["arcs"] == g1.meta["arcs"] + 1
    assert old.exists() and hierarchy.exists() and old.with_name(old.name + ".csr.npz").exists()
    assert len(_copies(cache)) == 2
    del g1
    gc.collect()
    load_graph(p)
    assert _copies(cache) == [n for n in _copies(cache) if n != old.name] and len(_copies(cache)) == 1
    assert not [f for f in cache.iterdir() if f.name.startswith(old.name)]


def test_many_loads_leak_no_descriptors(tmp_path):
    p = _input(tmp_path)
    load_graph(p)  # ingested, its caches written
    gc.collect()
    before = _open_fds()
    for _ in range(200):
        assert load_graph(p).n == 3353
    gc.collect()
    assert _open_fds() == before
    kept = [load_graph(p) for _ in range(200)]  # one descriptor for one copy, however many Graphs
    assert _open_fds() == before + 1
    copy = tmp_path / ".sssp-cache" / _copies(tmp_path / ".sssp-cache")[0]
    del kept[:-1]
    gc.collect()
    assert _open_fds() == before + 1 and _held(copy)
    del kept
    gc.collect()
    assert _open_fds() == before and not _held(copy)


def test_lease_descriptors_are_not_inherited(tmp_path):
    p = _input(tmp_path)
    g = load_graph(p)
    (held,) = pgraph._leases.values()
    assert not os.get_inheritable(held.fd)  # O_CLOEXEC: an exec'd worker gets none
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a forked child closes its copies; the parent's lock stays
        try:
            os.fstat(held.fd)
            ok = False
        except OSError:
            ok = not pgraph._leases
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.close(w)
    answer = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert answer == b"1"
    copy = tmp_path / ".sssp-cache" / _copies(tmp_path / ".sssp-cache")[0]
    assert _held(copy) and g.n == 3353


@pytest.mark.parametrize("err", [errno.ENOLCK, errno.EOPNOTSUPP])
def test_no_flock_loads_and_evicts_as_before(tmp_path, monkeypatch, err):
    """A file system without flock (some NFS or FUSE mounts): loading works, without a
    lease, and the variants stay bounded."""
    def no_flock(fd, op):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(pgraph.fcntl, "flock", no_flock)
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    graphs = [load_graph(p, weights=s) for s in SPECS[:CACHE_VARIANTS + 1]]
    assert all(g.n == 3353 for g in graphs)
    assert len(_copies(cache)) == CACHE_VARIANTS
    assert not pgraph._leases


def test_a_read_only_copy_in_a_fallback_cache_is_leased(tmp_path, monkeypatch):
    """The input's folder cannot be written: the copy goes to the user cache folder,
    where its lease (a read-only open, no lock file) holds it as anywhere; a copy whose
    own mode is read-only is leased too."""
    import pathlib

    p = _input(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    real_touch = pathlib.Path.touch

    def touch(self, *a, **k):
        if self.parent == tmp_path / ".sssp-cache":
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_touch(self, *a, **k)

    monkeypatch.setattr(pathlib.Path, "touch", touch)
    load_graph(p)
    cache = home / "sssp"
    (copy,) = [cache / n for n in _copies(cache)]
    copy.chmod(0o444)
    before = sorted(f.name for f in cache.iterdir())
    g = load_graph(p)
    assert g.n == 3353 and _held(copy)
    assert sorted(f.name for f in cache.iterdir()) == before  # no lock file


def test_nfs_exclusive_lock_refused_on_a_read_only_descriptor(tmp_path, monkeypatch):
    """NFS emulates flock with byte-range locks: an exclusive one on a descriptor open
    read-only fails with EBADF.  Evictions lock a read-write descriptor where they may,
    and an EBADF left is a file system without flock (removed as before), never an error
    out of load_graph."""
    real_flock = fcntl.flock
    seen = []

    def writable(fd):
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR

    def nfs_flock(fd, op):
        if op & fcntl.LOCK_EX:
            seen.append(writable(fd))
            if not writable(fd):
                raise OSError(errno.EBADF, "Bad file descriptor")
        return real_flock(fd, op)

    monkeypatch.setattr(pgraph.fcntl, "flock", nfs_flock)
    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    g = load_graph(p, weights=SPECS[0])
    copy = _copy_of(cache, SPECS[0])
    time.sleep(0.01)
    _load_variants(p, SPECS[1:CACHE_VARIANTS + 1])
    assert seen and all(seen)  # every exclusive lock on a read-write descriptor
    assert copy.exists() and len(_copies(cache)) == CACHE_VARIANTS
    del g
    gc.collect()
    # a copy that cannot be opened for writing (a read-only file): EBADF, removed as before
    monkeypatch.setattr(pgraph, "_open_copy", lambda e, write=False: os.open(e, os.O_RDONLY | os.O_CLOEXEC))
    load_graph(p, weights=SPECS[CACHE_VARIANTS + 1])
    assert not copy.exists() and len(_copies(cache)) == CACHE_VARIANTS


def test_an_unexpected_lock_error_neither_breaks_loading_nor_removes(tmp_path, monkeypatch):
    def broken(fd, op):
        raise OSError(errno.EIO, "Input/output error")

    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    _load_variants(p, SPECS[:CACHE_VARIANTS])
    monkeypatch.setattr(pgraph.fcntl, "flock", broken)
    g = load_graph(p, weights=SPECS[CACHE_VARIANTS])  # not known to be free: kept
    assert g.n == 3353 and len(_copies(cache)) == CACHE_VARIANTS + 1
    assert load_graph(p, weights=SPECS[0]).n == 3353  # a cached copy, no lease: loads


def _worker_processes():
    import psutil

    out = []
    for c in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(c.cmdline())
        except psutil.Error:
            continue
        if "spawn_main" in cmd or "forkserver" in cmd and "resource_tracker" not in cmd:
            out.append(c)
    return out


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_study_keeps_its_copy_while_another_run_loads_more_variants(tmp_path):
    """The case itself: a study on a local cluster (whose workers load the ingested copy)
    runs while another process loads CACHE_VARIANTS more option variants of its input;
    the study's copy and CSR cache stay, and a worker restarted after that loads it."""
    import gpu_sssp

    p = _input(tmp_path)
    cache = tmp_path / ".sssp-cache"
    seen = {}

    def on_batch(meta, study):
        if seen or len(study.done) < 3:
            return
        copy = _copy_of(cache, SPECS[0])
        code = (f"from gpu_sssp.pipeline.graph import load_graph\n"
                f"for s in {SPECS[1:CACHE_VARIANTS + 1]!r}: load_graph({str(p)!r}, weights=s)\n")
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
        seen["kept"] = copy.exists() and copy.with_name(copy.name + ".csr.npz").exists()
        seen["copy"] = copy
        workers = _worker_processes()
        if workers:
            workers[0].kill()  # restarted by its nanny: it loads the graph from the copy
        seen["killed"] = bool(workers)

    s = gpu_sssp.study(p, sources="all", batch_size=16, out=tmp_path / "study", cpu_workers=2,
                       on_batch=on_batch, weights=SPECS[0])
    assert seen["kept"] and seen["killed"]
    assert s["complete"]
    # the other run's least recently used copy that no one used went in the study's place
    assert len(_copies(cache)) == CACHE_VARIANTS and _copy_of(cache, SPECS[1]) is None
    load_graph(p, weights=SPECS[1])  # the study is over: the next load evicts its copy
    assert not seen["copy"].exists() and len(_copies(cache)) == CACHE_VARIANTS


def test_a_size_limit_refusing_a_cached_copy_leaves_it(tmp_path):
    """A stricter sssp.ingest.max-vertices in a second process refused the cached copy
    as it read it; that was taken for a damaged copy, and the copy and the hierarchy
    beside it were removed under the study that held them (the refusal came back from
    the input all the same).  The refusal names the input and the copy stays."""
    import dask

    from gpu_sssp.pipeline.errors import LimitError

    src = tmp_path / "g.gr"
    src.write_text("p sp 5 4\na 1 2 1\na 2 3 1\na 3 4 1\na 4 5 1\n")
    g = load_graph(src)
    copy = Path(g.path)
    with dask.config.set({"sssp.ingest.max-vertices": 3}):
        with pytest.raises(LimitError) as ei:
            load_graph(src)
    assert ei.value.path == str(src) and "max-vertices" in ei.value.message
    assert copy.exists()
    del g


def test_a_copy_in_use_elsewhere_found_unreadable_is_not_removed(tmp_path, monkeypatch):
    """A copy this process cannot read (or whose input's hash differs) was removed even
    while another process held it in use; now the load stops with one line and the copy
    stays."""
    src = tmp_path / "g.gr"
    src.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    g = load_graph(src)
    copy = Path(g.path)
    fd = os.open(copy, os.O_RDONLY)  # another process's lease: its own open file description
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        del g
        gc.collect()  # this process's own lease gone

        def broken(path, **kw):
            raise OSError("damaged")

        monkeypatch.setattr(pgraph, "read_parquet", broken)
        with pytest.raises(OSError) as ei:
            load_graph(src)
        assert ei.value.errno == errno.EBUSY and "in use by another process" in str(ei.value), ei.value
        assert copy.exists()
    finally:
        os.close(fd)


def test_a_lasting_exclusive_lock_does_not_hang_a_load(tmp_path, monkeypatch):
    """The shared lock was awaited without limit: an exclusive lock that an eviction's
    forked child inherited (held as long as that child lives) hung every load of the
    copy.  The lock is asked again and again; past LEASE_WAIT_S the copy loads unleased."""
    src = tmp_path / "g.gr"
    src.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    g = load_graph(src)
    copy = Path(g.path)
    del g
    gc.collect()
    monkeypatch.setattr(pgraph, "LEASE_WAIT_S", 0.3)
    fd = os.open(copy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t0 = time.monotonic()
        g2 = load_graph(src)
        assert g2.n == 3 and time.monotonic() - t0 < 5.0
    finally:
        os.close(fd)


def test_no_lease_on_a_network_file_system(tmp_path, monkeypatch):
    """NFS's client emulates flock with POSIX locks, which any close() of the file by the
    holder drops (pyarrow's own read of the copy): a lease there protected nothing while
    it claimed to.  Copies on a network file system take none and are evicted as before
    leases; the mount's kind comes from /proc/self/mountinfo."""
    src = tmp_path / "g.gr"
    src.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    dev = os.stat(tmp_path).st_dev
    monkeypatch.setitem(pgraph._fs_kind, dev, False)
    g = load_graph(src)
    copy = Path(g.path)
    fd = os.open(copy, os.O_RDONLY)
    try:
        assert pgraph._take_lease(copy) is None
    finally:
        os.close(fd)
    assert pgraph._remove_unused(copy, "a test") and not copy.exists()
    assert g.n == 3  # the Graph itself is in memory


def test_the_mount_kind_is_read_from_mountinfo(tmp_path, monkeypatch):
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        dev = os.fstat(fd).st_dev
        monkeypatch.delitem(pgraph._fs_kind, dev, raising=False)
        assert pgraph._leases_hold(fd) in (True, False) and dev in pgraph._fs_kind
    finally:
        os.close(fd)
