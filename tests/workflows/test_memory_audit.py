"""Memory pressure: the limits a process really runs under (a memory cgroup, ``ulimit -v``)
bound the memory checks, the checks count what the solvers really hold, and running out
is one line, never a traceback (kernels.memory, kernels.registry, the CLI)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpu_sssp.kernels import memory

ROOT = Path(__file__).resolve().parents[2]


def _fake_cgroup(tmp_path, monkeypatch, *, v2: bool, limit, usage: int, inactive: int = 0,
                 parent_limit=None):
    """A made-up cgroup tree: this process in /job/step, the limit at /job/step (and
    ``parent_limit`` at /job), its files where the mount table says."""
    point = tmp_path / "cg"
    leaf = point / "job" / "step"
    leaf.mkdir(parents=True)
    if v2:
        (leaf / "memory.max").write_text("max\n" if limit is None else f"{limit}\n")
        (leaf / "memory.current").write_text(f"{usage}\n")
        (leaf / "memory.stat").write_text(f"anon {usage}\ninactive_file {inactive}\n")
        (point / "job" / "memory.max").write_text("max\n" if parent_limit is None else f"{parent_limit}\n")
        (point / "job" / "memory.current").write_text(f"{usage}\n")
        (tmp_path / "cgroup").write_text("0::/job/step\n")
        mount = f"41 31 0:38 / {point} rw,relatime - cgroup2 cgroup2 rw\n"
    else:
        (leaf / "memory.limit_in_bytes").write_text(f"{9223372036854771712 if limit is None else limit}\n")
        (leaf / "memory.usage_in_bytes").write_text(f"{usage}\n")
        (leaf / "memory.stat").write_text(f"cache 0\ntotal_inactive_file {inactive}\n")
        (point / "job" / "memory.limit_in_bytes").write_text(
            f"{9223372036854771712 if parent_limit is None else parent_limit}\n")
        (point / "job" / "memory.usage_in_bytes").write_text(f"{usage}\n")
        (tmp_path / "cgroup").write_text("5:devices:/job/step\n4:memory:/job/step\n0::/\n")
        mount = (f"32 31 0:29 / {tmp_path / 'cpu'} rw,relatime - cgroup cgroup rw,cpu\n"
                 f"35 31 0:32 / {point} rw,relatime - cgroup cgroup rw,memory\n")
    (tmp_path / "mountinfo").write_text("23 1 0:22 / / rw - ext4 /dev/vda rw\n" + mount)
    monkeypatch.setattr(memory, "_SELF_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(memory, "_SELF_MOUNTINFO", str(tmp_path / "mountinfo"))
    # the machine's memory and the test run's own limits out of the way
    monkeypatch.setattr(memory, "_machine_headroom", lambda: (10**12, "the machine's available memory"))
    monkeypatch.setattr(memory, "_rlimit_headroom", lambda: None)


@pytest.mark.parametrize("v2", [True, False], ids=["cgroup-v2", "cgroup-v1"])
def test_available_memory_is_bounded_by_the_memory_cgroup(tmp_path, monkeypatch, v2):
    """In a container or a batch job's cgroup /proc/meminfo shows the whole machine: a
    solve of 200 NY sources with predecessors passed the check under a 1.2 GB cgroup
    limit and was killed by the OOM killer (SIGKILL, no line, exit 137)."""
    _fake_cgroup(tmp_path, monkeypatch, v2=v2, limit=1_500_000_000, usage=400_000_000, inactive=100_000_000)
    room, why = memory.memory_headroom()
    assert room == 1_500_000_000 - 300_000_000
    assert "cgroup /job/step" in why and "1.5 GB" in why
    assert memory.available_memory() == room
    with pytest.raises(memory.OutputTooLargeError, match=r"more than the 1\.2 GB of memory available here "
                                                          r"\(the memory cgroup /job/step's limit of 1\.5 GB\); x$"):
        memory.check_host_memory(1_300_000_000, "distances", "x")
    memory.check_host_memory(1_100_000_000, "distances", "x")  # fits


def test_the_bound_is_named_while_the_cgroups_usage_moves(tmp_path, monkeypatch):
    """The refusal read the memory twice (the number, then what bounds it) and named the
    bound only where the two readings were equal; a cgroup's usage moves between any
    two readings (every page the group touches), so under a real limit the bound was
    mostly left out.  One reading gives both now."""
    _fake_cgroup(tmp_path, monkeypatch, v2=True, limit=1_500_000_000, usage=400_000_000, inactive=100_000_000)
    real = memory._cgroup_headroom
    calls = []

    def moving():
        got = real()
        calls.append(got)
        return None if got is None else (got[0] - 4096 * len(calls), got[1])  # a page more each time

    monkeypatch.setattr(memory, "_cgroup_headroom", moving)
    with pytest.raises(memory.OutputTooLargeError, match=r"available here \(the memory cgroup /job/step's limit "
                                                          r"of 1\.5 GB\); x$"):
        memory.check_host_memory(1_300_000_000, "distances", "x")


@pytest.mark.parametrize("v2", [True, False], ids=["cgroup-v2", "cgroup-v1"])
def test_a_parent_cgroups_limit_counts_too(tmp_path, monkeypatch, v2):
    _fake_cgroup(tmp_path, monkeypatch, v2=v2, limit=None, usage=200_000_000, parent_limit=700_000_000)
    room, why = memory.memory_headroom()
    assert room == 500_000_000 and "cgroup /job's limit" in why


def test_no_cgroup_limit_leaves_the_machines_memory(tmp_path, monkeypatch):
    _fake_cgroup(tmp_path, monkeypatch, v2=True, limit=None, usage=200_000_000)
    assert memory.memory_headroom() == (10**12, "the machine's available memory")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status: Linux")
def test_available_memory_is_bounded_by_the_address_space_limit():
    """``ulimit -v``: NY's 200 sources with predecessors passed the check (the machine's
    23 GB) and failed in NumPy; the check now sees the limit.  The limit is set 300 MB
    above what the child has mapped, so nothing it does here comes near it."""
    code = textwrap.dedent("""
        import resource
        from gpu_sssp.kernels import memory
        from gpu_sssp.kernels.errors import OutputTooLargeError
        size = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS, (size + 300_000_000, resource.RLIM_INFINITY))
        room = memory.available_memory()
        assert 200_000_000 < room <= 300_000_000, room
        try:
            memory.check_host_memory(1_000_000_000, "the distances", "solve fewer sources")
        except OutputTooLargeError as exc:
            print(exc)
        else:
            print("passed")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ulimit -v" in out.stdout and "solve fewer sources" in out.stdout, out.stdout


def _chain(n: int):
    from gpu_sssp.kernels.graph import Graph

    return Graph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, dtype=np.int64), n=n)


@pytest.fixture
def memory_of(monkeypatch):
    """``memory_of(b)``: ``b`` bytes available, and every array checked."""
    def set_to(nbytes):
        monkeypatch.setattr(memory, "available_memory", lambda: nbytes)
        monkeypatch.setattr(memory, "SMALL_BYTES", 0)
    return set_to


@pytest.mark.parametrize("distances", [True, False])
def test_scipy_solvers_working_memory_is_counted(memory_of, distances):
    """SciPy's Dijkstra holds about 34 bytes a (source, vertex) cell at its peak (its
    full float64 rows, their copy in the asked order, the reduction's temporaries), the
    statistics alone included: the check counted the result's 8 (0 with
    distances=False), so 200 NY sources passed a check of 423 MB and peaked at 1.8 GB."""
    from gpu_sssp.kernels import solve
    from gpu_sssp.kernels.errors import OutputTooLargeError

    g = _chain(10_000)
    src = np.arange(100)
    memory_of(100 * 10_000 * 20)  # above the result's 8 bytes a cell, below SciPy's peak
    with pytest.raises(OutputTooLargeError, match=r"working arrays of dijkstra on the CPU .*36 bytes a source and "
                                                  r"vertex.* would take 36\.0 MB, more than the 20\.0 MB"):
        solve(g, src, method="dijkstra", backend="cpu", distances=distances)
    memory_of(100 * 10_000 * 40)
    res = solve(g, src, method="dijkstra", backend="cpu", distances=distances)
    assert int(res.reached[0]) == 10_000


def test_scipy_advice_does_not_offer_statistics_only(memory_of):
    """distances=False does not shrink SciPy's rows: it is not offered as the way on."""
    from gpu_sssp.kernels import solve
    from gpu_sssp.kernels.errors import OutputTooLargeError

    memory_of(30_000_000)  # the result's 16 MB fit, not SciPy's 44
    with pytest.raises(OutputTooLargeError) as err:
        solve(_chain(10_000), np.arange(100), method="dijkstra", backend="cpu", predecessors=True)
    assert "distances=False" not in str(err.value) and "predecessors=False" in str(err.value)


def test_cpu_phast_trees_without_distances_count_the_rows_it_makes(memory_of):
    """The CPU phast sweep makes the float64 rows for the trees (``distances=False,
    predecessors=True``) as for the distances: the check counted 8 bytes a (source,
    vertex) cell, the trees alone, and passed work that held about 17."""
    from gpu_sssp.kernels import solve
    from gpu_sssp.kernels.errors import OutputTooLargeError

    g = _chain(10_000)
    solve(g, np.arange(2), method="phast", backend="cpu", force=True, predecessors=True)  # its hierarchy, once
    memory_of(100 * 10_000 * 15)  # above the trees' 8 bytes a cell, below the sweep's 20
    with pytest.raises(OutputTooLargeError, match=r"phast on the CPU .*20 bytes a source and vertex"):
        solve(g, np.arange(100), method="phast", backend="cpu", force=True, distances=False, predecessors=True)
    memory_of(100 * 10_000 * 30)
    res = solve(g, np.arange(100), method="phast", backend="cpu", force=True, distances=False, predecessors=True)
    assert res.predecessors.shape == (100, 10_000)


def _main_raising(monkeypatch, exc):
    """``sssp ingest x.gr`` whose work raises ``exc``: (status, stderr lines)."""
    from gpu_sssp.workflows import cli, cmd_ingest

    def run(args):
        raise exc

    monkeypatch.setattr(cmd_ingest, "run", run)
    return cli.main(["ingest", "x.gr"])


def test_a_thread_pyarrow_cannot_start_is_one_line(monkeypatch, capsys):
    """Under ``ulimit -v`` (rome99's ingest at 600 MB and at 1.5 GB, by chance) pyarrow's
    CSV reader could not start its threads: a traceback ending in ``ArrowException:
    Unknown error: Failed to launch worker thread``, status 1."""
    import pyarrow.lib

    code = _main_raising(monkeypatch, pyarrow.lib.ArrowException(
        "Unknown error: Failed to launch worker thread: Resource temporarily unavailable"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: could not start a thread (Unknown error: Failed to launch worker thread")
    assert "Traceback" not in err[0]


def test_other_arrow_errors_keep_their_traceback(monkeypatch):
    import pyarrow.lib

    with pytest.raises(pyarrow.lib.ArrowException):
        _main_raising(monkeypatch, pyarrow.lib.ArrowException("Unknown error: something else"))


def test_a_bare_memory_error_says_what_ran_short(monkeypatch, capsys):
    """``error: MemoryError`` was the whole line (rome99's ingest under ulimit -v 500 MB)."""
    code = _main_raising(monkeypatch, MemoryError())
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: out of memory (MemoryError)") and "more memory" in err[0]


def test_a_study_batch_whose_workers_died_is_one_line(monkeypatch, capsys):
    """A CPU study of NY distances in a 1.5 GB cgroup: its workers were OOM-killed, the
    nanny restarted them, and after 4 deaths the study ended on Dask's KilledWorker
    traceback (status 1, the folder resumable but not a word about memory or --resume
    in the last line)."""
    from distributed.scheduler import KilledWorker

    class Where:
        address = "tcp://127.0.0.1:42457"

    code = _main_raising(monkeypatch, KilledWorker("phast-batch-000000-000003-1475c0b0", Where(), 3))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "phast-batch-000000-000003" in err[0] and "4 times" in err[0] and "tcp://127.0.0.1:42457" in err[0]
    assert "memory" in err[0] and "--batch-size" in err[0] and "--resume" in err[0]


@pytest.mark.parametrize("family, kw, arcs", [
    ("rmat", dict(scale=10, edge_factor=16), 16_384),
    ("random", dict(n=10_000, m=16_384), 16_384),
])
def test_generate_counts_what_generation_holds(tmp_path, monkeypatch, family, kw, arcs):
    """generate checked the ids and weights alone (16 bytes an arc) and then used 26
    (rmat, grid) to 78 (random) bytes an arc: ``generate random -n 1000000 -m 16000000``
    peaked at 1.36 GB against a check of 256 MB, and ran out of memory past the check."""
    from gpu_sssp.kernels.errors import UsageError
    from gpu_sssp.pipeline import generate as G

    monkeypatch.setattr(memory, "available_memory", lambda: arcs * 16 * 3 // 2)  # the ids and weights fit
    with pytest.raises(UsageError, match=r"arcs need at least .* GB of memory to generate \(their ids and "
                                         r"weights are .* GB\), more than"):
        G.generate(family, tmp_path / "g.parquet", **kw)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(memory, "available_memory", lambda: arcs * 16 * 7)
    assert G.generate(family, tmp_path / "g.parquet", **kw)["arcs"] == arcs


def test_sizes_just_below_a_unit_are_written_in_the_next():
    """A 1 GB cgroup limit (999,999,488 bytes, page-rounded) was named "1,000.0 MB"."""
    assert memory.fmt_bytes(999_999_488) == "1.0 GB"
    assert memory.fmt_bytes(999_949_999) == "999.9 MB"


def test_verify_checks_its_sources_a_part_at_a_time(rome99, monkeypatch, capsys):
    """``sssp verify --random 200`` on NY held the reference's and each method's full
    rows with their trees and the checks' temporaries at once: 7.1 GB (about 133 bytes a
    source and vertex), where solve's check counted 44.  It now solves and checks a part
    of the sources at a time (1.2 GB), and a wrong distance in a later part is still
    found."""
    from gpu_sssp import kernels
    from gpu_sssp.workflows import cli, cmd_verify

    n = 3353  # rome99
    monkeypatch.setattr(cmd_verify, "VERIFY_PART_BYTES", cmd_verify.VERIFY_CELL_BYTES * n * 3)
    real, calls = kernels.solve, []

    def solve(graph, sources, **kw):
        calls.append(len(sources))
        res = real(graph, sources, **kw)
        if len(calls) == 4:  # the method's result of the second part: one distance off
            res.distances[0, 5] += 1
        return res

    monkeypatch.setattr(kernels, "solve", solve)
    from rich.console import Console

    monkeypatch.setattr(cmd_verify, "console", Console(width=1000, soft_wrap=True))  # (table cells whole)
    code = cli.main(["verify", str(rome99), "--random", "8", "--methods", "dijkstra"])
    out = capsys.readouterr().out
    assert calls == [3, 3, 3, 3, 2, 2], calls
    assert code == 1 and "sources 4-6 of 8: 1 distances differ" in out, out


def test_the_refusal_names_the_study_s_way_on(memory_of, tmp_path):
    """A CPU study of 300 NY sources with distances in a 1.1 GB cgroup: a worker's batch
    was refused with solve's advice alone ("solve fewer sources at a time, pass
    distances=False ..., or run a study"), in a study.  Then with "in a study: a smaller
    --batch-size, then --resume", which a resume refuses (a folder's batches are fixed),
    and still "distances=False", which a study does not take (its way is --outputs
    stats).  A study's batch now names the study's own way on; solve keeps its own."""
    from gpu_sssp.kernels import solve
    from gpu_sssp.kernels.errors import OutputTooLargeError, speaking
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.ingest import ingest
    from gpu_sssp.pipeline.study.task import solve_batch

    memory_of(1_000_000)
    with pytest.raises(OutputTooLargeError) as got:
        solve(_chain(10_000), np.arange(100), method="dijkstra", backend="cpu")
    assert "solve fewer sources at a time, pass distances=False for the per-source statistics only" in str(got.value)
    assert "resume" not in str(got.value)
    gr = tmp_path / "chain.gr"
    gr.write_text("p sp 10000 9999\n" + "".join(f"a {i} {i + 1} 1\n" for i in range(1, 10_000)))
    ingest(gr, tmp_path / "chain.parquet")
    fp = read_parquet(tmp_path / "chain.parquet").fingerprint

    def batch(outputs, **kw):
        got = solve_batch(fingerprint=fp, graph_path=str(tmp_path / "chain.parquet"), index=0,
                          sources=np.arange(100), method="dijkstra", backend="cpu", outputs=outputs,
                          distance_form="wide", out=str(tmp_path / "s"), **kw)
        assert isinstance(got.get("error"), OutputTooLargeError), got
        return got["error"]

    err = batch(("stats", "distances"))
    assert str(err).endswith("start the study again with a smaller batch_size= (in a new out= folder, or this one "
                             "removed: a folder's batches are fixed, resume=True keeps them), or outputs='stats' "
                             "for the per-source statistics only"), str(err)
    with speaking("cli"):
        assert "a smaller --batch-size (in a new --out folder" in str(err) and "--outputs stats" in str(err)
    # statistics only: a smaller batch is the way (SciPy's rows are held for them too)
    err = batch(("stats",))
    assert str(err).endswith("resume=True keeps them)") and "outputs=" not in str(err), str(err)


def test_ingest_refuses_a_chunk_that_cannot_be_parsed_in_memory(tmp_path, monkeypatch, capsys):
    """``sssp ingest --chunk-mb 1024`` took 2.3 GB for a 155 MB DIMACS file read as one
    chunk (about 14 bytes a byte of the chunk), whatever memory the machine had; it is
    refused in one line before the input is read."""
    from gpu_sssp.workflows import cli

    gr = tmp_path / "g.gr"
    arcs = 1_500_000
    i = np.arange(arcs)
    body = np.char.add(np.char.add(np.char.add("a ", (i % 1000 + 1).astype(str)), " "),
                       np.char.add(((i * 7) % 1000 + 1).astype(str), " 5\n"))
    gr.write_text(f"p sp 1000 {arcs}\n" + "".join(body.tolist()))
    size = gr.stat().st_size
    assert size > 16 << 20  # above the default chunk
    monkeypatch.setattr(memory, "available_memory", lambda: size * 8)
    out = tmp_path / "g.parquet"
    code = cli.main(["ingest", str(gr), "-o", str(out), "--chunk-mb", "64", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: --chunk-mb 64: reading ") and "takes about" in err[0], err
    assert "give --chunk-mb 8 or less" in err[0] and not out.exists()  # (141 MB / 16, in MiB)
    monkeypatch.setattr(memory, "available_memory", lambda: size * 20)  # a chunk that fits is read
    assert cli.main(["ingest", str(gr), "-o", str(out), "--chunk-mb", "64", "-q"]) == 0 and out.exists()


def test_ingest_chunk_check_bounds_a_chunk_by_the_text_the_file_holds(tmp_path, monkeypatch, capsys):
    """A compressed input was taken to give a whole --chunk-mb chunk whatever its size:
    a 52 KB rome99.gr.gz with --chunk-mb 1024 was refused as 17 GB of work.  A gzip
    stream stands for at most 1032 times its bytes; and the compression is told from the
    file's first bytes, as ingest tells it: a gzip file named .gr was bounded by its
    compressed size."""
    import gzip

    from gpu_sssp.kernels.errors import OptionError
    from gpu_sssp.pipeline.ingest import check_chunk_memory
    from gpu_sssp.workflows import cli
    from tests.conftest import DATA

    raw = (DATA / "rome99.gr").read_bytes()
    small = tmp_path / "rome99.gr.gz"
    small.write_bytes(gzip.compress(raw))
    monkeypatch.setattr(memory, "available_memory", lambda: 2 << 30)  # 2 GiB: a 1 GiB chunk's work does not fit
    out = tmp_path / "r.parquet"
    assert cli.main(["ingest", str(small), "-o", str(out), "--chunk-mb", "1024", "-q"]) == 0, capsys.readouterr().err
    # a gzip file whose name does not say so, holding far more text than its size
    hidden = tmp_path / "big.gr"
    text = b"c " + b"x" * (200 << 20) + b"\n"  # 200 MB of text in a few hundred KB
    hidden.write_bytes(gzip.compress(text, compresslevel=1))
    assert hidden.stat().st_size < (4 << 20)
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)
    with pytest.raises(OptionError, match=r"^--chunk-mb 1024: reading .*big\.gr .* at a time takes about"):
        check_chunk_memory(hidden, 1024 << 20, option="--chunk-mb", scale=1 << 20)


def test_ingest_from_python_refuses_a_chunk_that_cannot_be_parsed_in_memory(tmp_path, monkeypatch):
    """The chunk check was the CLI's alone: ``gpu_sssp.pipeline.ingest.ingest(path, out,
    chunk_bytes=1 << 30)`` read a large file as one 1 GiB chunk whatever memory there
    was.  ingest() refuses it now, in its own option's words, before anything is read
    or written; the default chunk is never refused."""
    from gpu_sssp.kernels.errors import OptionError
    from gpu_sssp.pipeline.ingest import ingest

    gr = tmp_path / "g.gr"
    line = b"a 1 2 5\n"
    n = (40 << 20) // len(line)  # 40 MB of text: above the default chunk
    gr.write_bytes(b"p sp 2 %d\n" % n + line * n)
    out = tmp_path / "g.parquet"
    monkeypatch.setattr(memory, "available_memory", lambda: 100 << 20)  # 40 MB x 16 does not fit
    with pytest.raises(OptionError, match=r"^chunk_bytes 1073741824: reading .*g\.gr 41\.9 MB at a time takes about "
                                          r".*; give chunk_bytes 6553600 or less \(the default is 16777216\)$"):
        ingest(gr, out, chunk_bytes=1 << 30)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["g.gr"]
    meta = ingest(gr, out)  # the default chunk is read (16 MiB at a time: not refused)
    assert meta["arcs"] == n and out.exists()


def test_a_library_that_cannot_be_mapped_under_a_limit_names_it(monkeypatch, capsys):
    """``solve -m phast@cpu`` under ``ulimit -v 2000000``: "error: Could not find/load
    shared object file 'libllvmlite.so' ..." - the library is there; the address space
    is not.  The line names the bound the process runs under (and says nothing more
    without one)."""
    text = ("Could not find/load shared object file 'libllvmlite.so' from resource location: "
            "'llvmlite.binding'.")
    monkeypatch.setattr(memory, "memory_headroom", lambda: (10_000_000, "the address-space limit (ulimit -v) of "
                                                                        "2.0 GB"))
    assert _main_raising(monkeypatch, OSError(text)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "libllvmlite.so" in err[0]
    assert "(this process runs under the address-space limit (ulimit -v) of 2.0 GB); give the command more " \
           "memory" in err[0]
    monkeypatch.setattr(memory, "memory_headroom", lambda: (10**12, "the machine's available memory"))
    assert _main_raising(monkeypatch, OSError(text)) == 2
    assert capsys.readouterr().err.strip().endswith("'llvmlite.binding'.")


def test_solve_counts_the_writer_beside_the_result(rome99, memory_of, capsys, tmp_path):
    """``solve -o``: the solve's check counted the result, not the writer's parts beside
    it (about 550 MB more): 200 NY sources with predecessors passed in a 1.3 GB cgroup,
    solved, and were killed while writing.  Refused before anything is solved now."""
    from gpu_sssp.workflows import cli

    out = tmp_path / "d.parquet"
    memory_of(2_000_000)  # SciPy's 1.2 MB for 10 rome99 sources fit; with the writer's parts, not
    argv = ["solve", str(rome99), "-m", "dijkstra", "-o", str(out)] + [a for s in range(1, 11) for a in ("-s", str(s))]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the -o writer's parts beside them would take" in err[0], err
    assert not out.exists()
    memory_of(20_000_000)
    assert cli.main(argv) == 0 and out.exists()


def test_a_library_import_that_cannot_be_mapped_under_a_limit_is_one_line(monkeypatch, capsys):
    """``solve`` under ``ulimit -v 1400000``: SciPy's import ended in a 38-line traceback,
    "ImportError: libgfortran-....so.5.0.0: failed to map segment from shared object",
    status 1.  One line naming the bound now, status 2; another ImportError stays a bug."""
    monkeypatch.setattr(memory, "memory_headroom", lambda: (10_000_000, "the address-space limit (ulimit -v) of "
                                                                        "1.4 GB"))
    text = "libgfortran-8f1e9814.so.5.0.0: failed to map segment from shared object"
    assert _main_raising(monkeypatch, ImportError(text)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and text in err[0] and "ulimit -v) of 1.4 GB" in err[0], err
    with pytest.raises(ImportError, match="No module named"):
        _main_raising(monkeypatch, ImportError("No module named 'nothere'"))


def test_one_blas_thread_under_an_address_space_limit():
    """OpenBLAS maps a buffer per thread as NumPy and SciPy load: ``ulimit -v 1500000``
    hung at 100% CPU in its retries (SIGTERM unheard).  Under a limit the command line
    asks for one thread before NumPy loads (``gpu_sssp.kernels`` loads it: the setting
    came after it), unless the user chose; without a limit it leaves it alone."""
    code = textwrap.dedent("""
        import os, resource, sys
        if sys.argv[1] == "limit":
            resource.setrlimit(resource.RLIMIT_AS, (64 << 30, resource.RLIM_INFINITY))
        from gpu_sssp.workflows import cli
        assert "numpy" not in sys.modules
        try:
            cli.main(["verify", "--list"])
        except SystemExit:
            pass
        assert "numpy" in sys.modules
        print(os.environ.get("OPENBLAS_NUM_THREADS"))
    """)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    for how, want in (("limit", "1"), ("none", "None")):
        out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().splitlines()[-1] == want, (how, out.stdout)
    out = subprocess.run([sys.executable, "-c", code, "limit"], capture_output=True, text=True,
                         env={**env, "OPENBLAS_NUM_THREADS": "3"}, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "3", out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS: Linux")
@pytest.mark.parametrize("kb", [1_500_000, 1_600_000, 1_800_000])
def test_solve_under_an_address_space_limit_ends(tmp_path, kb):
    """``solve rome99.gr -s 1`` under ``ulimit -v 1600000`` hung at 95% CPU for good
    (SIGTERM unheard) with one BLAS thread too: SciPy's OpenBLAS, loaded after numba's
    LLVM had taken the address space, retried its buffer's map without end (found by the
    2026-12-07 audit).  Under a limit the command line loads it first.  The command
    ends: solved, or one line naming the limit."""
    import resource

    g = tmp_path / "rome99.gr"
    g.write_bytes((ROOT / "data" / "rome99.gr").read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    code = ("import sys\nfrom gpu_sssp.workflows.cli import main\n"
            f"sys.exit(main(['solve', {str(g)!r}, '-s', '1']))\n")

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (kb * 1024, resource.RLIM_INFINITY))

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240,
                         preexec_fn=limit, cwd=tmp_path)
    if out.returncode == 0:
        assert "1 source in" in out.stdout, out.stdout
    else:
        err = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(err) == 1 and "ulimit -v" in err[0], (out.returncode, out.stderr[-2000:])
