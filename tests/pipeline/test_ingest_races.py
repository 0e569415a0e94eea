"""Ingestion under concurrent use (found by a review with real processes):

- ``sssp ingest IN -o OUT`` while IN was edited in place (same size, mtime put back)
  wrote a graph of old and new lines, recorded under a SHA-256 of neither, exit 0;
- a second run that ingested the same input and options at the same moment renamed its
  copy over the one a running study held: the study's lease stayed on a file no name
  reached, and later evictions (or that run's own "changed while read" clean-up) removed
  the copy under the study; a worker that restarted then could not load its graph.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from gpu_sssp.pipeline import graph as pgraph
from gpu_sssp.pipeline import ingest as ping
from gpu_sssp.pipeline.ingest import _sink
from tests.conftest import DATA

GR = "p sp 4 3\na 1 2 5\na 2 3 5\na 3 4 5\n"


def _edit_during_first_add(monkeypatch, path, new_text):
    """Rewrite ``path`` in place (same size, its times put back) as the first batch of
    arcs reaches the sink: an edit that lands while the file is read."""
    real = _sink.EdgeSink.add
    done = []

    def add(self, *args, **kwargs):
        if not done:
            done.append(1)
            st = os.stat(path)
            with open(path, "r+b") as fh:
                fh.write(new_text.encode())
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_sink.EdgeSink, "add", add)
    return done


def test_an_edit_during_the_read_writes_nothing(tmp_path, monkeypatch):
    src = tmp_path / "g.gr"
    src.write_text(GR)
    out = tmp_path / "g.parquet"
    done = _edit_during_first_add(monkeypatch, src, GR.replace("5", "7"))
    with pytest.raises(ping.ChangedWhileRead, match="changed while it was read"):
        ping.ingest(src, out)
    assert done and not out.exists()
    assert [f.name for f in tmp_path.iterdir()] == ["g.gr"]  # no temporary left


def test_the_cli_reads_it_again_and_says_so(tmp_path, monkeypatch, capsys):
    import pyarrow.parquet as pq

    from gpu_sssp.workflows.cli import main

    src = tmp_path / "g.gr"
    src.write_text(GR)
    _edit_during_first_add(monkeypatch, src, GR.replace("5", "7"))
    out = tmp_path / "g.parquet"
    assert main(["ingest", str(src), "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"note: {src} changed while it was read: reading it again"], err
    assert pq.read_table(out).column("weight").to_pylist() == [7, 7, 7]  # the new content, whole


def test_the_cli_gives_up_in_one_line_on_a_file_that_keeps_changing(tmp_path, monkeypatch, capsys):
    from gpu_sssp.workflows.cli import main

    src = tmp_path / "g.gr"
    src.write_text(GR)
    real = _sink.EdgeSink.add
    flip = ["5", "7"]

    def add(self, *args, **kwargs):  # every read meets an edit
        flip.reverse()
        st = os.stat(src)
        src.write_text(GR.replace("5", flip[0]))
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_sink.EdgeSink, "add", add)
    assert main(["ingest", str(src), "-o", str(tmp_path / "g.parquet"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and err[-1].startswith(f"error: {src}: the file changed while it was read, 3 times"), err
    assert not (tmp_path / "g.parquet").exists()


def test_load_graph_reads_an_edited_input_again(tmp_path, monkeypatch):
    src = tmp_path / "g.gr"
    src.write_text(GR)
    _edit_during_first_add(monkeypatch, src, GR.replace("5", "7"))
    g = pgraph.load_graph(src)
    assert np.asarray(g.weights).tolist() == [7, 7, 7]  # the new content, read again


def test_replace_false_keeps_an_existing_output(tmp_path):
    src = tmp_path / "g.gr"
    src.write_text(GR)
    out = tmp_path / "g.parquet"
    ping.ingest(src, out)
    ino = os.stat(out).st_ino
    src.write_text(GR.replace("5", "7"))
    with pytest.raises(FileExistsError):
        ping.ingest(src, out, replace=False)
    assert os.stat(out).st_ino == ino
    assert sorted(f.name for f in tmp_path.iterdir()) == ["g.gr", "g.parquet"]
    ping.ingest(src, out)  # the default replaces, as `sssp ingest -o` does
    assert os.stat(out).st_ino != ino


def test_a_copy_made_meanwhile_by_another_run_is_taken_not_replaced(tmp_path, monkeypatch):
    """Another process finishes the same copy while this one reads the input: this one's
    copy is dropped and the other's (which that process may hold in use) is loaded."""
    src = tmp_path / "rome99.gr"
    shutil.copy(DATA / "rome99.gr", src)
    real = ping.ingest
    made = {}

    def racing(path, out, **kwargs):
        if not made:  # "the other process" publishes first
            real(path, out, **{k: v for k, v in kwargs.items() if k != "replace"})
            made["ino"] = os.stat(out).st_ino
            made["out"] = out
        return real(path, out, **kwargs)

    monkeypatch.setattr(ping, "ingest", racing)
    g = pgraph.load_graph(src)
    assert g.n == 3353
    assert os.stat(made["out"]).st_ino == made["ino"]  # never renamed over
    leftovers = [f.name for f in made["out"].parent.iterdir() if f.name.endswith(".tmp")]
    assert not leftovers
