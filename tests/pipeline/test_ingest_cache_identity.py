"""load_graph never serves an ingested copy of another content than its input's: an edit
that its stat cannot show (the same timestamp tick) is caught by the SHA-256 the copy
recorded, an input that changes while it is read is read again, and links are keyed
by what they point to."""
from __future__ import annotations

import os
import pathlib
import shutil
from types import SimpleNamespace

import pytest

from gpu_sssp.pipeline import graph as pgraph
from gpu_sssp.pipeline.graph import load_graph
from gpu_sssp.pipeline.ingest import _source
from tests.conftest import DATA

ROME = (DATA / "rome99.gr").read_text()


def _edited(text=ROME):
    """``text`` with its first arc's weight changed to one no arc has, its size kept;
    and that weight."""
    used = {int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("a ")}
    i = text.index("\na ") + 1
    line = text[i:text.index("\n", i)]
    head, w = line.rsplit(" ", 1)
    new_w = next(v for v in range(10 ** (len(w) - 1), 10 ** len(w)) if v not in used)
    out = text[:i] + head + " " + str(new_w) + text[i + len(line):]
    assert len(out) == len(text) and out != text
    return out, new_w


def _weights(g):
    return set(g.to_scipy().data.astype(int).tolist())


def _copies(cache):
    return sorted(f.name for f in cache.iterdir() if f.name.endswith(".parquet"))


@pytest.fixture
def frozen_times(monkeypatch):
    """A filesystem whose timestamps did not move between two writes (both fell in one
    tick: a few ms on Linux, a second or two on some filesystems): the input's stat
    keeps the size, times and inode it first showed."""
    frozen = {}
    real = pathlib.Path.stat

    def stat(self, *args, **kwargs):
        st = real(self, *args, **kwargs)
        if self.suffix != ".gr":
            return st
        key = os.path.realpath(self)
        f = frozen.setdefault(key, SimpleNamespace(**{k: getattr(st, k) for k in dir(st) if k.startswith("st_")}))
        assert st.st_size == f.st_size
        return f

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    return frozen


def test_an_edit_in_the_same_timestamp_tick_is_not_served_the_old_copy(tmp_path, frozen_times):
    # the copy's name keys size, mtime, ctime and inode; an edit of the same size in the
    # same tick keeps all four, and its old copy was served (the source_sha256 it
    # records was never compared)
    p = tmp_path / "g.gr"
    p.write_text(ROME)
    g1 = load_graph(p)
    edited, new_w = _edited()
    with open(p, "r+") as f:  # in place: the same inode
        f.write(edited)
    assert new_w not in _weights(g1)
    g2 = load_graph(p)
    assert g2.fingerprint != g1.fingerprint and new_w in _weights(g2)
    assert len(_copies(tmp_path / ".sssp-cache")) == 1
    assert load_graph(p).fingerprint == g2.fingerprint


def test_a_settled_input_is_never_hashed_again(tmp_path, monkeypatch):
    # the cost rule: only a copy made within SETTLE_NS of its input's last change is
    # verified by hashing the input, on each use until the input has been still that long
    hashed = []
    real = _source.sha256_file
    monkeypatch.setattr(_source, "sha256_file", lambda p: hashed.append(p) or real(p))
    p = tmp_path / "g.gr"
    shutil.copy(DATA / "rome99.gr", p)
    cache = tmp_path / ".sssp-cache"
    g1 = load_graph(p)  # just written: not settled
    (copy,) = _copies(cache)
    assert not (cache / (copy + ".settled")).exists() and hashed == []
    assert load_graph(p).fingerprint == g1.fingerprint and len(hashed) == 1
    assert load_graph(p).fingerprint == g1.fingerprint and len(hashed) == 2
    # later: the input has been still for longer than SETTLE_NS
    now = pgraph._now_ns
    monkeypatch.setattr(pgraph, "_now_ns", lambda: now() + 2 * pgraph.SETTLE_NS)
    assert load_graph(p).fingerprint == g1.fingerprint and len(hashed) == 3
    assert (cache / (copy + ".settled")).exists()
    for _ in range(3):
        assert load_graph(p).fingerprint == g1.fingerprint
    assert len(hashed) == 3
    # a copy made from an input that was already still is settled at once
    q = tmp_path / "h.gr"
    shutil.copy(DATA / "rome99.gr", q)
    load_graph(q)
    load_graph(q)
    assert len(hashed) == 3
    assert sum(f.name.endswith(".settled") for f in cache.iterdir()) == 2


def test_a_copy_with_no_recorded_digest_is_not_trusted_while_unsettled(tmp_path, frozen_times):
    import pyarrow.parquet as pq

    p = tmp_path / "g.gr"
    p.write_text(ROME)
    load_graph(p)
    cache = tmp_path / ".sssp-cache"
    (copy,) = _copies(cache)
    # a copy whose metadata names no digest (as the input changes, it cannot be checked)
    t = pq.read_table(cache / copy)
    import json

    meta = json.loads(t.schema.metadata[b"sssp"])
    meta["source_sha256"] = None
    pq.write_table(t.replace_schema_metadata({**t.schema.metadata, b"sssp": json.dumps(meta).encode()}), cache / copy)
    for f in cache.iterdir():
        if f.name.endswith(".csr.npz"):
            f.unlink()
    edited, new_w = _edited()
    with open(p, "r+") as f:
        f.write(edited)
    assert new_w in _weights(load_graph(p))


def test_an_input_changing_while_it_is_read_is_read_again(tmp_path, monkeypatch):
    from gpu_sssp.pipeline import ingest as _ingest

    p = tmp_path / "g.gr"
    p.write_text(ROME)
    edited, new_w = _edited()
    real = _ingest.ingest
    calls = []

    def ingest(path, out, **kw):
        meta = real(path, out, **kw)
        calls.append(path)
        if len(calls) == 1:  # another writer replaces the file as the first read ends
            tmp = tmp_path / "new.gr"
            tmp.write_text(edited)
            os.replace(tmp, p)
        return meta

    monkeypatch.setattr(_ingest, "ingest", ingest)
    g = load_graph(p)
    assert len(calls) == 2 and new_w in _weights(g)
    assert len(_copies(tmp_path / ".sssp-cache")) == 1


def test_an_input_that_never_stops_changing_is_one_clear_error(tmp_path, monkeypatch):
    from gpu_sssp.pipeline import ingest as _ingest
    from gpu_sssp.pipeline.errors import InputError

    p = tmp_path / "g.gr"
    p.write_text(ROME)
    real = _ingest.ingest

    def ingest(path, out, **kw):
        meta = real(path, out, **kw)
        tmp = tmp_path / "new.gr"
        tmp.write_text(ROME)
        os.replace(tmp, p)  # another inode each time
        return meta

    monkeypatch.setattr(_ingest, "ingest", ingest)
    with pytest.raises(InputError) as ei:
        load_graph(p)
    assert str(ei.value).startswith(f"{p}: the file changed while it was read")
    assert not _copies(tmp_path / ".sssp-cache") if (tmp_path / ".sssp-cache").exists() else True


# ------------------------------------------------------------------------------ links
def _pair(tmp_path):
    """Two inputs of the same size and mtime, other content."""
    a = tmp_path / "data-a" / "g.gr"
    b = tmp_path / "data-b" / "g.gr"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text(ROME)
    edited, new_w = _edited()
    b.write_text(edited)
    st = a.stat()
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    return a, b, new_w


def test_two_links_of_one_name_to_two_files_get_their_own_graphs(tmp_path):
    a, b, new_w = _pair(tmp_path)
    la = tmp_path / "x" / "graph.gr"
    lb = tmp_path / "y" / "graph.gr"
    la.parent.mkdir()
    lb.parent.mkdir()
    la.symlink_to(a)
    lb.symlink_to(b)
    cache = tmp_path / "cache"  # one cache folder for both: the names alone would collide
    ga = load_graph(la, cache_dir=cache)
    gb = load_graph(lb, cache_dir=cache)
    assert new_w not in _weights(ga) and new_w in _weights(gb)
    assert load_graph(la, cache_dir=cache).fingerprint == ga.fingerprint
    assert load_graph(lb, cache_dir=cache).fingerprint == gb.fingerprint
    assert load_graph(a).fingerprint == ga.fingerprint and load_graph(b).fingerprint == gb.fingerprint


@pytest.mark.parametrize("cache_dir", [None, "cache"])
def test_a_link_pointed_elsewhere_gets_the_new_files_graph(tmp_path, cache_dir):
    a, b, new_w = _pair(tmp_path)
    link = tmp_path / "graph.gr"
    cache = tmp_path / cache_dir if cache_dir else None
    link.symlink_to(a)
    ga = load_graph(link, cache_dir=cache)
    link.unlink()
    link.symlink_to(b)
    gb = load_graph(link, cache_dir=cache)
    assert new_w not in _weights(ga) and new_w in _weights(gb)
    link.unlink()
    link.symlink_to(a)
    assert load_graph(link, cache_dir=cache).fingerprint == ga.fingerprint


def test_a_link_pointed_elsewhere_while_it_is_read_leaves_no_wrong_copy(tmp_path, monkeypatch):
    # the copy is keyed by the link's target and that target's state, taken before the
    # read: a link pointed at another file during the read left a copy of that other
    # file under the first one's key, served when the link pointed back
    from gpu_sssp.pipeline import ingest as _ingest

    a, b, new_w = _pair(tmp_path)
    link = tmp_path / "graph.gr"
    link.symlink_to(a)
    real = _ingest.ingest
    calls = []

    def ingest(path, out, **kw):
        calls.append(path)
        if len(calls) == 1:
            link.unlink()
            link.symlink_to(b)
        return real(path, out, **kw)

    monkeypatch.setattr(_ingest, "ingest", ingest)
    g = load_graph(link)
    assert new_w in _weights(g)  # what the link points to now
    monkeypatch.setattr(_ingest, "ingest", real)
    link.unlink()
    link.symlink_to(a)
    assert new_w not in _weights(load_graph(link))
