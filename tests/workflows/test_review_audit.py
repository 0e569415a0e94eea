"""Interactions between the audits merged together (review of 658dc5a..): rules that
two changes each made for the same thing, checked where they meet."""
from __future__ import annotations

import io
import logging
import types

import pytest


def _cli_log(logger: str):
    """A handler with the CLI's log formatter on ``logger``; returns (stream, remove)."""
    from gpu_sssp.workflows.cli import _OneLineFormatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    lg = logging.getLogger(logger)
    old = lg.level
    lg.setLevel(logging.INFO)
    lg.addHandler(handler)

    def remove():
        lg.removeHandler(handler)
        lg.setLevel(old)

    return stream, remove


def test_worker_tracebacks_with_verbose_keep_their_lines():
    """``sssp -v`` logs the traceback of a worker whose graph plugin failed (sent as text):
    the one-line log formatter wrote it as one line of literal ``\\n``; a name's line
    break in another message is still escaped."""
    from gpu_sssp.pipeline.plugins import WorkerGraphError
    from gpu_sssp.pipeline.study import run

    class Client:  # the scheduler cannot be asked: its workers from scheduler_info
        def run_on_scheduler(self, *a, **k):
            raise OSError("not asked")

        def scheduler_info(self):
            return {"workers": {"tcp://a:1": {}}}

    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad'
    stream, remove = _cli_log("gpu_sssp.pipeline.study.run")
    try:
        with pytest.raises(WorkerGraphError):
            run._set_aside(Client(), {"tcp://a:1": {"worker": "0 (tcp://a:1)", "reason": "ValueError: bad",
                                                    "traceback": tb}},
                           types.SimpleNamespace(graph_path="g.parquet"), {})
        logging.getLogger("gpu_sssp.pipeline.study.run").info("could not write %s", "new\nline.parquet")
    finally:
        remove()
    lines = stream.getvalue().splitlines()
    assert "Traceback (most recent call last):" in lines, lines
    assert '  File "x.py", line 1, in <module>' in lines, lines
    assert lines[-1].endswith("could not write new\\nline.parquet"), lines


def test_workers_that_cannot_load_a_graph_name_its_file_escaped():
    """WorkerGraphError (the plugin-failure change) named the graph and hierarchy files
    raw; the CLI's one line folded a line break in them into a space, naming another
    folder (``/tmp/s x``), where every other message shows such a name escaped
    (``fsnames.shown``, the odd-names change)."""
    from gpu_sssp.pipeline.plugins import WorkerGraphError
    from gpu_sssp.workflows.common import one_line

    e = WorkerGraphError([("0 (tcp://a:1)", "ValueError: bad")], "/tmp/s\nx/graph.parquet",
                         "/tmp/s\nx/graph.parquet.ch.npz")
    line = one_line(e)
    assert "'/tmp/s\\nx/graph.parquet'" in line and "'/tmp/s\\nx/graph.parquet.ch.npz'" in line, line
    assert "/tmp/s x" not in line
    assert str(WorkerGraphError([("w", "r")], "/tmp/g.parquet")).endswith("graph /tmp/g.parquet: w: r")


@pytest.mark.parametrize("pad", [0, 1, 2, 3])
def test_a_long_utf8_names_temporaries_are_utf8(tmp_path, pad):
    """The writers' and the caches' temporary names (two rules added the same day:
    writers._owned_base, graph._cache_temp_base) cut a long name at a byte count,
    inside a character: the temporary of a valid UTF-8 name was not UTF-8, which
    macOS or ZFS utf8only refuse (safe_name kept whole characters).  Now one rule,
    fsnames.shortened; the next run's clean-up still finds a killed writer's file."""
    import os
    import time

    from gpu_sssp.pipeline.graph import cache_temp_for, remove_dead_temps
    from gpu_sssp.pipeline.writers import owned_temp_for, remove_abandoned_temporaries

    name = "a" * pad + "\u00e9" * 70 + "\U0001d11e" * 25 + ".parquet"  # 2- and 4-byte characters
    assert 230 < len(name.encode()) <= 255
    for temp, clean in ((owned_temp_for, remove_abandoned_temporaries), (cache_temp_for, remove_dead_temps)):
        t = temp(tmp_path / (name if temp is owned_temp_for else name[:-8] + ".csr.npz"))
        raw = os.fsencode(t.name)
        assert len(raw) <= 255
        raw.decode("utf-8")  # (UnicodeDecodeError before)
        # a killed writer's (no such process, untouched for an hour): found and removed
        # the pid field itself, not the pid's digits wherever they first occur: CI's
        # pid 1106 was in the long name's digest too ("~4104969c6831106f")
        pid = os.getpid()
        field = f".{pid}." if temp is owned_temp_for else f".tmp{pid}-"
        assert t.name.count(field) == 1, t.name
        head, _, tail = t.name.rpartition(field)
        dead = t.with_name(head + field.replace(str(pid), "4194303") + tail)
        dead.write_bytes(b"x")
        os.utime(dead, (time.time() - 3600, time.time() - 3600))
        clean(t.with_name(name if temp is owned_temp_for else name[:-8] + ".csr.npz"))
        assert not dead.exists()


@pytest.mark.parametrize("name, label", [(".parquet", ".parquet"), ("g.Parquet", "g"), ("p.parquet", "p")])
def test_a_parquet_graphs_bench_label_is_never_empty(tmp_path, name, label):
    """bench labels a Parquet graph by its name less ``.parquet`` (is_parquet_name, any
    case): a file named ``.parquet`` (which the same change made a Parquet name) was
    labelled '', the heading of nothing that the raw inputs' labels no longer give."""
    from gpu_sssp.pipeline.ingest import ingest
    from gpu_sssp.workflows.cmd_bench import _load_graph
    from tests.conftest import DATA

    out = tmp_path / name
    ingest(DATA / "gapbs" / "4.gr", out)
    assert _load_graph(str(out), {}, set()).name == label


def test_a_loose_scheduler_files_note_names_it_escaped(tmp_path):
    """The note on a scheduler file every user may rewrite (the network audit) named the
    file raw, where read_scheduler_file's messages (the odd-names audit) escape it: a
    line break in the name broke the note in two."""
    import os

    from gpu_sssp.pipeline.cluster import _writable_by_others

    f = tmp_path / "sched\nuler.json"
    f.write_text("{}")
    os.chmod(f, 0o666)
    (note,) = _writable_by_others(f)
    assert "\n" not in note and "sched\\nuler.json'" in note, note


def test_sssp_study_leaves_the_network_warnings_on_for_the_process(tmp_path):
    """``sssp study`` prints what a local cluster exposes as ``note:`` lines and so
    ignores NetworkExposureWarning while it runs (the network audit): it set that
    filter for the whole process, for good, so a study started from Python later in
    the same process (``cli.main`` called from a script, a notebook) warned nothing."""
    import shutil
    import warnings

    from gpu_sssp.pipeline.cluster import NetworkExposureWarning
    from gpu_sssp.workflows.cli import main
    from tests.conftest import DATA

    graph = tmp_path / "4.gr"
    shutil.copy(DATA / "gapbs" / "4.gr", graph)
    with warnings.catch_warnings():  # (the test's own filters put back after it)
        assert main(["study", str(graph), "--out", str(tmp_path / "s"), "--cpu-workers", "1",
                     "--no-dashboard"]) == 0
        left = [f for f in warnings.filters if f[2] is NetworkExposureWarning]
    assert left == []


@pytest.mark.parametrize("given", [False, True])
def test_an_output_name_past_the_limit_is_refused_by_the_name_check(tmp_path, monkeypatch, capsys, given):
    """refuse_name_too_long (the odd-names audit) checks the output's temporary name,
    which owned_temp_for (the writers audit) now shortens: a name past 255 bytes itself
    was no longer caught there and stopped at ``Path.is_dir`` with "[Errno 36] File
    name too long" (ingest's default output, input name + .parquet; an -o)."""
    import shutil

    from gpu_sssp.workflows.cli import main
    from tests.conftest import DATA

    monkeypatch.chdir(tmp_path)
    graph = tmp_path / ("a" * 250 + ".gr")
    shutil.copy(DATA / "gapbs" / "4.gr", graph)
    args = ["ingest", graph.name, "-q"] + (["-o", "b" * 256 + ".parquet"] if given else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Errno" not in err and "bytes, beyond the folder's" in err and len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [graph.name]


def test_the_hierarchy_files_messages_name_them_escaped(tmp_path, monkeypatch):
    """The hierarchy's new messages (the plugin-failure and cache audits: a file a worker
    cannot use, no place for the workers' file) named their files raw; the CLI's one
    line folded a line break into a space, naming another folder."""
    import shutil
    import types

    from gpu_sssp.pipeline import graph as pgraph
    from gpu_sssp.pipeline import hierarchy as ph
    from gpu_sssp.pipeline.ingest import ingest
    from tests.conftest import DATA
    from gpu_sssp.workflows.common import one_line

    pytest.importorskip("routingkit_ch")
    folder = tmp_path / "a\nb"
    folder.mkdir()
    shutil.copy(DATA / "gapbs" / "4.gr", folder / "4.gr")
    ingest(folder / "4.gr", folder / "4.parquet")
    g = pgraph.read_parquet(folder / "4.parquet")
    (folder / "4.parquet.ch.npz").write_bytes(b"not a hierarchy")
    with pytest.raises(ph.HierarchyFileError) as got:
        ph.load_hierarchy(g, build=False)
    assert "a\\nb" in one_line(got.value) and "a b" not in one_line(got.value), one_line(got.value)

    (tmp_path / "f").write_text("a file where a folder goes")
    monkeypatch.setattr(pgraph, "user_cache_folder", lambda: tmp_path / "f" / "c\nd")
    with pytest.raises(OSError) as got:
        ph._place_in_user_cache(None, types.SimpleNamespace(fingerprint="0" * 16),
                                folder / "4.parquet.ch.npz", "read-only")
    line = one_line(got.value)
    assert "a\\nb" in line and "c\\nd" in line and "a b" not in line and "c d" not in line, line


def test_an_output_below_a_folder_name_past_the_limit_is_one_line(tmp_path, capsys):
    """`-o <300-byte folder>/x.parquet`: the name check's own `exists()` met
    "[Errno 36] File name too long", naming no option."""
    from gpu_sssp.workflows.cli import main

    g = tmp_path / "g.gr"
    g.write_text("p sp 2 1\na 1 2 3\n")
    out = tmp_path / ("d" * 300) / "x.parquet"
    assert main(["ingest", str(g), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its folder name" in err and "300 bytes" in err
