"""The command line's errors: one hierarchy caught once, one line whatever the
terminal, an exit status per kind, and a traceback for anything else (a bug)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from gpu_sssp.kernels.errors import GPUUnavailableError, OptionError, SsspError, UsageError
from gpu_sssp.kernels.result import NegativeCycleError
from gpu_sssp.pipeline.errors import BatchError, InputError, StudyError
from gpu_sssp.workflows.cli import main
from tests.pipeline.test_study_support import grid_parquet, write_edge_parquet


@pytest.fixture
def grid(tmp_path):
    return grid_parquet(tmp_path, 6, 6)


@pytest.mark.parametrize("exc, code, builtin", [
    (UsageError("x"), 2, ValueError),
    (OptionError("x"), 2, TypeError),
    (InputError("f.gr", 3, "bad"), 2, ValueError),
    (StudyError("x"), 2, ValueError),
    (NegativeCycleError(4, 1, 1, [4, 5]), 3, ValueError),
    (GPUUnavailableError("x"), 4, RuntimeError),
    (BatchError("batch 3: x"), 1, RuntimeError),
])
def test_one_hierarchy_that_pickles(exc, code, builtin):
    assert isinstance(exc, SsspError) and isinstance(exc, builtin)
    assert exc.exit_code == code
    back = pickle.loads(pickle.dumps(exc))  # errors cross Dask workers as themselves
    assert type(back) is type(exc) and str(back) == str(exc) and back.exit_code == code


def test_gpu_unavailable_error_is_the_one_kernels_raise():
    from gpu_sssp.kernels import _gpu

    assert _gpu.GPUUnavailableError is GPUUnavailableError


def test_errors_stay_on_one_line_with_long_paths(grid, tmp_path, capsys):
    """Rich wraps at 80 columns when stderr is not a terminal: a long path used to
    break the message (and a test's `in` check) over several lines."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    deep.mkdir(parents=True)
    empty = deep / "[bold]empty-sources-file.ss"  # markup in a name is text, not style
    empty.write_text("")
    rc = main(["solve", str(grid), "--sources-file", str(empty)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(empty) in lines[0] and lines[0].startswith("error: ")


def test_multi_line_messages_are_folded(capsys, monkeypatch):
    from gpu_sssp.workflows import cmd_solve

    def boom(args):
        raise UsageError("first part\n  second part\r\nthird")

    monkeypatch.setattr(cmd_solve, "run", boom)
    assert main(["solve", "g.parquet", "-s", "1"]) == 2
    assert capsys.readouterr().err == "error: first part second part third\n"


@pytest.mark.parametrize("bug", [ValueError("a bug"), TypeError("a bug"), KeyError("a bug")])
def test_an_unexpected_exception_keeps_its_traceback(bug, monkeypatch):
    """Only the product's errors become one line; a plain ValueError is a bug."""
    from gpu_sssp.workflows import cmd_solve

    def boom(args):
        raise bug

    monkeypatch.setattr(cmd_solve, "run", boom)
    with pytest.raises(type(bug)):
        main(["solve", "g.parquet", "-s", "1"])


def test_negative_cycle_exits_3(tmp_path, capsys):
    g = write_edge_parquet(tmp_path / "neg.parquet", [1, 2, 3, 3], [2, 3, 1, 4], np.array([1, -3, 1, 2]),
                           n=4, id_base=1)
    assert main(["solve", str(g), "-s", "1", "-m", "bellman-ford"]) == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "negative cycle" in err


def test_no_gpu_exits_4(grid, capsys):
    from gpu_sssp import kernels

    if kernels.device_count() > 0:
        pytest.skip("a GPU is visible here")
    assert main(["solve", str(grid), "-s", "1", "-m", "hbf"]) == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "needs a CUDA device" in err


@pytest.mark.parametrize("argv, code, message", [
    (["-m", "no-such"], 2, "unknown method 'no-such'"),
    (["-m", "dijkstra", "--backend", "gpu"], 2, "runs on the cpu backend"),
    (["-s", "99"], 2, "source 99 does not exist"),
    # beyond 64 bits: was an OverflowError traceback, exit 1
    (["-s", "99999999999999999999999"], 2, "source 99999999999999999999999 does not exist in "),
    (["-s", "-99999999999999999999999"], 2, "ids run from 0 to 35"),  # (a 0-based graph)
    (["-s", "-1"], 2, "source -1 does not exist"),
])
def test_solve_usage_errors(grid, capsys, argv, code, message):
    argv = ["solve", str(grid), *(["-s", "1"] if "-s" not in argv else []), *argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_method_on_both_backends_is_accepted_on_either(grid, capsys):
    """phast is registered on the CPU and the GPU: --backend cpu is not refused."""
    from gpu_sssp import kernels
    from gpu_sssp.kernels.registry import backends_of

    if "phast" not in kernels.available_methods() or len(backends_of("phast")) < 2:
        pytest.skip("phast is not registered on both backends here")
    assert main(["solve", str(grid), "-s", "1", "-m", "phast", "--backend", "cpu"]) == 0


def test_dijkstra_on_negative_weights_is_a_usage_error(tmp_path, capsys):
    g = write_edge_parquet(tmp_path / "neg.parquet", [1, 2], [2, 3], np.array([1, -3]), n=3, id_base=1)
    assert main(["solve", str(g), "-s", "1", "-m", "dijkstra"]) == 2
    err = capsys.readouterr().err
    # a CPU method's refusal names CPU ways on (hbf, a GPU method, was named on machines without one)
    assert "needs non-negative weights" in err and "(use bellman-ford or auto)" in err and "hbf" not in err


def test_verify_list_needs_no_graph(capsys):
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    assert "dijkstra" in out and "bellman-ford" in out


def test_verify_without_graph_or_list(capsys):
    assert main(["verify"]) == 2
    assert "verify needs a GRAPH" in capsys.readouterr().err


def test_verify_unknown_method(grid, capsys):
    assert main(["verify", str(grid), "--methods", "dijkstra,nope"]) == 2
    assert "unknown method(s) nope" in capsys.readouterr().err


def test_weights_too_large_for_exact_distances_are_one_line(tmp_path, capsys):
    g = write_edge_parquet(tmp_path / "heavy.parquet", [1, 2], [2, 3], np.array([2**52, 2**52], dtype=np.int64),
                           n=3, id_base=1)
    assert main(["solve", str(g), "-s", "1"]) == 2
    err = capsys.readouterr().err
    assert "too large for exact distances" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, option", [
    (["study", "{g}", "--random", "3", "--seed", "-1", "--out", "{o}"], "--seed"),
    (["study", "{g}", "--random", "3", "--random-targets", "3", "--target-seed", "-1", "--out", "{o}"],
     "--target-seed"),
    (["verify", "{g}", "--random", "3", "--seed", "-1"], "--seed"),
    (["bench", "{g}", "--algorithms", "dijkstra", "--sources", "3", "--min-component", "10", "--seed", "-1",
      "--out", "{o}"], "--seed"),
])
def test_a_negative_seed_is_one_usage_error_naming_the_option(grid, tmp_path, capsys, argv, option):
    """It was NumPy's "expected non-negative integer" traceback (exit 1).  Refused before
    the graph is read (here: a graph file that is not there)."""
    for graph in (grid, tmp_path / "missing.parquet"):
        rc = main([a.format(g=graph, o=tmp_path / "o") for a in argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and err == [f"error: {option} must be 0 or more, got -1"], err
        assert not (tmp_path / "o").exists()


def test_one_seed_rule_for_the_python_functions(grid, tmp_path):
    import gpu_sssp
    from gpu_sssp.pipeline.bench_protocol import draw_sources
    from gpu_sssp.pipeline.sources import check_seed, draw_vertices, plan_sources
    from gpu_sssp.pipeline.targets import plan_targets

    g = gpu_sssp.load_graph(grid)
    with pytest.raises(UsageError, match=r"^seed= must be 0 or more, got -1$"):
        gpu_sssp.study(grid, random=3, seed=-1, out=tmp_path / "z", cpu_workers=1)
    assert not (tmp_path / "z").exists()
    with pytest.raises(UsageError, match=r"^seed= must be 0 or more"):
        plan_sources(g, random=3, seed=-5)
    with pytest.raises(UsageError, match=r"^target_seed= must be 0 or more"):
        plan_targets(g, random=3, seed=-5)
    with pytest.raises(UsageError, match=r"^--seed must be 0 or more"):
        draw_sources(g, 3, min_component=2, seed=-1)
    for bad in (1.5, True, "3", None):
        with pytest.raises(UsageError, match=r"takes a whole number from 0 up"):
            check_seed(bad)
    # any whole number from 0 up, as NumPy's default_rng takes it
    assert check_seed(np.int64(7)) == 7 and check_seed(2**70) == 2**70
    assert len(draw_vertices(g.n, 3, 2**70)) == 3
    assert plan_sources(g, random=3, seed=0).how["seed"] == 0


@pytest.mark.parametrize("argv", [
    ["solve", "{g}", "-s", "1", "--out", "{f}/x.parquet"],
    ["solve", "{g}", "-s", "1", "--out", "{f}/a/b/x.parquet"],
    ["ingest", "{raw}", "-o", "{f}/x.parquet"],
    ["study", "{g}", "--random", "3", "--cpu-workers", "1", "--out", "{f}/sub"],
    ["bench", "{g}", "--algorithms", "dijkstra", "--sources", "3", "--min-component", "10", "--out", "{f}/sub"],
])
def test_an_output_below_a_file_is_one_line_naming_the_file(grid, tmp_path, capsys, argv):
    """It was the OS's "[Errno 17] File exists: 'ok.gr'" or "[Errno 20] Not a directory",
    naming neither the option nor that the parent is a file; refused before any work."""
    f = tmp_path / "ok.gr"
    f.write_text("p sp 2 1\na 1 2 3\n")
    argv = [a.format(g=grid, f=f, raw=f) for a in argv]
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    opt = argv[-2]
    assert rc == 2 and err == [f"error: {opt} {argv[-1]}: {f} is a file, not a folder"], err
    assert f.read_text() == "p sp 2 1\na 1 2 3\n"


@pytest.mark.parametrize("command", ["study", "bench"])
def test_an_output_folder_that_is_a_file_is_one_line(grid, tmp_path, capsys, command):
    f = tmp_path / "ok.gr"
    f.write_text("x")
    extra = ["--random", "3", "--cpu-workers", "1"] if command == "study" else [
        "--algorithms", "dijkstra", "--sources", "3", "--min-component", "10"]
    rc = main([command, str(grid), *extra, "--out", str(f)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: --out {f}: is a file, not a folder; give a folder name"], err


def test_ctrl_c_while_the_subcommands_are_imported_is_one_line(monkeypatch, capsys):
    """``main`` imports every subcommand first (rich, NumPy: a few tenths of a second);
    a Ctrl-C then was a KeyboardInterrupt traceback of the import."""
    import importlib

    from gpu_sssp.workflows import cli

    real = importlib.import_module

    def interrupted(name, *args, **kwargs):
        if name == "gpu_sssp.workflows.cmd_study":
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert cli.main(["study", "g.parquet"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["stopped: interrupted"]


def _wrapped(stop):
    """What a Numba kernel's call raises when Ctrl-C or SIGTERM is handled inside it."""
    try:
        raise stop
    except KeyboardInterrupt as inner:
        try:
            raise SystemError("CPUDispatcher(<function _kahn_smallest_first at 0x7f>) returned a result with an "
                              "exception set") from inner
        except SystemError as outer:
            return outer


def test_an_interrupt_inside_compiled_code_stops_in_one_line(monkeypatch, capsys):
    """Ctrl-C or SIGTERM during a long CPU ``phast`` call (a Numba kernel: its
    hierarchy's build on 100M vertices) ended ``sssp solve`` in a traceback of
    ``SystemError: CPUDispatcher(...) returned a result with an exception set``, status
    1 (found by a review, 4 runs of 5).  It is the interrupt it wraps: one ``stopped:``
    line, 130 (143 for SIGTERM); a SystemError that wraps no interrupt is a bug and
    keeps its traceback."""
    import signal

    from gpu_sssp.workflows.cli import Terminated
    from tests.workflows.test_memory_audit import _main_raising  # a command whose work raises exc

    assert _main_raising(monkeypatch, _wrapped(KeyboardInterrupt())) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["stopped: interrupted"], err
    assert _main_raising(monkeypatch, _wrapped(Terminated(signal.SIGTERM))) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stopped: ") and "SystemError" not in err[0], err
    with pytest.raises(SystemError, match="a bug"):
        _main_raising(monkeypatch, SystemError("a bug"))
