"""Error messages name the option in the caller's words: ``--zero-based`` on the command
line, ``zero_based=True`` from Python (``kernels.errors.opt``).  Before, about 45
messages raised from the Python API named command-line options (``--batch-size``,
``--resume``, ``--zero-based``), which a Python caller has no way to pass; and a study's
report path was checked twice (by the command line, then by ``study()``)."""
from __future__ import annotations

import pickle

import pytest

import gpu_sssp as sssp
from gpu_sssp.kernels import errors
from gpu_sssp.kernels.errors import UsageError, opt, python_phrase, raw, render, speaking
from gpu_sssp.pipeline.errors import InputError
from gpu_sssp.workflows.cli import main

MARKS = ("\u2063", "\u2064")


@pytest.mark.parametrize("phrase, python", [
    ("--zero-based", "zero_based=True"),
    ("--resume", "resume=True"),
    ("--no-dashboard", "dashboard=False"),
    ("--batch-size", "batch_size="),
    ("--random K", "random=K"),
    ("--seed 3", "seed=3"),
    ("--weight-type float64", "weight_type='float64'"),
    ("--format metis", "format='metis'"),
    ("--scheduler 'tcp://h:1'", "scheduler='tcp://h:1'"),
    ("--scheduler-file /a b/s.json", "scheduler_file='/a b/s.json'"),
    ("sssp ingest", "sssp ingest"),
    ("--out 2024", "out='2024'"),  # a user's text, however it looks, is quoted
    ("--weights RANDOM:1:2:3", "weights='RANDOM:1:2:3'"),
    ("--weights 5", "weights='5'"),
    ("--cpu-workers 9", "cpu_workers=9"),
    ("--scheduler-file FILE", "scheduler_file=FILE"),
])
def test_python_phrase(phrase, python):
    assert python_phrase(phrase) == python
    assert render(opt(phrase), "cli") == phrase
    assert render(opt(phrase), "python") == python


def test_rendering_follows_the_audience_and_survives_pickling():
    exc = InputError("f.gr", 3, f"vertex id 0: pass {opt('--zero-based')}")
    assert str(exc) == "f.gr:3: vertex id 0: pass zero_based=True"
    assert "zero_based=True" in repr(exc) and not any(m in repr(exc) for m in MARKS)
    back = pickle.loads(pickle.dumps(exc))  # raised on a worker, shown by the client
    with speaking("cli"):
        assert str(back) == "f.gr:3: vertex id 0: pass --zero-based"
        assert errors._audience() == "cli"
    assert errors._audience() == "python"  # restored
    # a message embedded in another (a worker's load failure) keeps its marks
    outer = UsageError(f"worker w: {raw(back)}")
    with speaking("cli"):
        assert str(outer).endswith("pass --zero-based")
    assert str(outer).endswith("pass zero_based=True")
    # a given Python phrase is used as it is
    assert render(opt("--max-arcs N (sssp ingest)", python="max_arcs=N"), "python") == "max_arcs=N"
    assert render(opt("--max-arcs N (sssp ingest)", python="max_arcs=N"), "cli") == "--max-arcs N (sssp ingest)"


def _zero_based_file(tmp_path):
    p = tmp_path / "z.gr"
    p.write_text("p sp 3 2\na 0 1 5\na 1 2 5\n")
    return p


def test_input_error_in_each_callers_words(tmp_path, capsys):
    p = _zero_based_file(tmp_path)
    with pytest.raises(InputError) as got:
        sssp.load_graph(p)
    assert "zero_based=True" in str(got.value) and "--zero-based" not in str(got.value)
    assert main(["ingest", str(p), "-o", str(tmp_path / "z.parquet")]) == 2
    err = capsys.readouterr().err
    assert "--zero-based" in err and "zero_based" not in err and not any(m in err for m in MARKS)


def test_study_refusals_in_each_callers_words(tmp_path, capsys):
    g = tmp_path / "g.gr"
    g.write_text("p sp 2 1\na 1 2 5\n")
    out = tmp_path / "out"
    with pytest.raises(errors.OptionError, match=r"^seed= goes with random=K"):
        sssp.study(g, seed=3, out=out, cpu_workers=1)
    assert main(["study", str(g), "--seed", "3", "-o", str(out), "--cpu-workers", "1"]) == 2
    assert "error: --seed goes with --random K" in capsys.readouterr().err
    # the report path: checked once (by study()), named as the caller gave it
    with pytest.raises(UsageError, match=r"^report='"):
        sssp.study(g, report=tmp_path, out=out, cpu_workers=1)
    assert main(["study", str(g), "--report", str(tmp_path), "-o", str(out), "--cpu-workers", "1"]) == 2
    assert "error: --report " in capsys.readouterr().err
    with pytest.raises(UsageError, match=r"^cpu_workers= must be at least 1"):
        sssp.study(g, out=out, cpu_workers=0)
    with pytest.raises(UsageError, match=r"^scheduler_file='.*': is a folder"):
        sssp.study(g, out=out, scheduler_file=tmp_path)
    assert main(["study", str(g), "-o", str(out), "--scheduler-file", str(tmp_path)]) == 2
    assert "error: --scheduler-file " in capsys.readouterr().err
    assert not out.exists()  # every refusal before a folder or a cluster


def test_weights_spec_in_each_callers_words(tmp_path, capsys):
    g = tmp_path / "g.gr"
    g.write_text("p sp 2 1\na 1 2 5\n")
    with pytest.raises(UsageError, match=r"^weights='random:1:2': expected random:LO:HI:SEED"):
        sssp.load_graph(g, weights="random:1:2")
    assert main(["ingest", str(g), "--weights", "random:1:2", "-o", str(tmp_path / "x.parquet")]) == 2
    assert "error: --weights random:1:2: expected" in capsys.readouterr().err


def test_no_mark_is_left_in_what_a_caller_reads(tmp_path, caplog):
    """``exc.args`` (``warnings.warn(exc.args[0])``), ``WorkerGraphError.failures`` and the
    log lines of a failed load carried the invisible marks (a review found them)."""
    from gpu_sssp.pipeline.plugins import WorkerGraphError

    g = tmp_path / "g.gr"
    g.write_text("p sp 2 1\na 1 2 5\n")
    with pytest.raises(UsageError) as got:
        sssp.load_graph(g, weights="bogus")
    assert got.value.args[0].startswith("weights='bogus': ") and not any(m in got.value.args[0] for m in MARKS)
    back = pickle.loads(pickle.dumps(got.value))  # the pickle keeps them for the client
    with speaking("cli"):
        assert back.args[0].startswith("--weights bogus: ")
    reason = raw(InputError("g.gr", None, f"raise it with {opt('--max-vertices N (sssp ingest)', python='max_vertices=N')}"))
    err = WorkerGraphError([("w1", reason)], path="g.parquet")
    assert err.failures == [("w1", "g.gr: raise it with max_vertices=N")]
    with speaking("cli"):
        assert err.failures[0][1].endswith("--max-vertices N (sssp ingest)") and "--max-vertices N" in str(err)
    from gpu_sssp.pipeline.study.run import _log_load_traceback

    with caplog.at_level("INFO", logger="gpu_sssp.pipeline.study.run"):
        _log_load_traceback("w1", reason, "Traceback ...")
    assert caplog.records and not any(m in caplog.records[-1].getMessage() for m in MARKS)


def test_resume_refusals_name_options_as_the_caller_gives_them(tmp_path, capsys):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    out = tmp_path / "s"
    argv = ["study", str(g), "--random", "3", "--cpu-workers", "1", "--no-dashboard", "--out", str(out)]
    assert main(argv + ["--batch-size", "2"]) == 0
    capsys.readouterr()
    assert main(argv + ["--batch-size", "1", "--resume"]) == 2
    assert "(--batch-size: folder has 2, asked 1" in capsys.readouterr().err
    with pytest.raises(errors.SsspError, match=r"\(batch_size=: folder has 2, asked 1"):
        sssp.study(g, random=3, cpu_workers=1, out=out, batch_size=1, resume=True)


def test_matrix_names_ingest_options_as_its_ingest_dict(tmp_path, capsys):
    """``gpu_sssp.matrix(path)`` takes load_graph's options in ``ingest={...}``; its
    refusals told the caller ``zero_based=True`` and ``max_vertices=N``, keywords that
    ``matrix`` refuses with a TypeError."""
    p = _zero_based_file(tmp_path)
    with pytest.raises(InputError) as got:
        sssp.matrix(p)
    text = str(got.value)
    assert "pass ingest={'zero_based': True} to accept" in text and " zero_based=True" not in text
    assert "ingest={'zero_based': True}" in got.value.message and "ingest={" in got.value.args[0]
    assert "ingest={'zero_based': True}" in str(pickle.loads(pickle.dumps(got.value)))
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    with pytest.raises(InputError, match=r"raise the limit with ingest=\{'max_vertices': N\}, the setting"):
        sssp.matrix(g, ingest={"max_vertices": 2})
    assert sssp.matrix(g, [1], [3], ingest={"max_vertices": 3}).tolist() == [[10.0]]  # the advice works
    # load_graph itself still names its own keyword, and the command line its option
    with pytest.raises(InputError, match=r"raise the limit with max_vertices=N, the setting"):
        sssp.load_graph(g, max_vertices=2)
    with speaking("cli"):
        with pytest.raises(InputError, match=r"pass --zero-based to accept"):
            sssp.matrix(p)


def test_a_parquet_edge_lists_limit_names_only_the_setting(tmp_path, capsys):
    """An ingested edge list is read as it is: ``load_graph`` refuses ingest options for
    it, and ``sssp ingest --max-vertices`` had already been used to write it; the refusal
    advised both."""
    import dask

    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    pq = tmp_path / "g.parquet"
    assert main(["ingest", str(g), "-o", str(pq)]) == 0
    with dask.config.set({"sssp.ingest.max-vertices": 2}):
        for call in (lambda: sssp.read_parquet(pq), lambda: sssp.load_graph(pq)):
            with pytest.raises(InputError) as got:
                call()
            text = str(got.value)
            assert ("raise the limit with the setting sssp.ingest.max-vertices or "
                    "DASK_SSSP__INGEST__MAX_VERTICES=N where the edge list is read") in text, text
            assert "max_vertices=N" not in text and "--max-vertices" not in text
        assert main(["solve", str(pq), "--source", "1"]) == 2
    err = capsys.readouterr().err
    assert "the setting sssp.ingest.max-vertices" in err and "--max-vertices N" not in err


def test_an_option_refused_by_the_method_auto_chose_names_the_choice(tmp_path):
    """``solve(method="auto", bogus=1)`` said "dijkstra takes no options": a method the
    caller never named."""
    import gpu_sssp

    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    graph = gpu_sssp.load_graph(str(g))
    with pytest.raises(gpu_sssp.OptionError) as err:
        gpu_sssp.solve(graph, [1], method="auto", backend="cpu", bogus=1)
    msg = str(err.value)
    assert msg.startswith("method='auto' chose 'dijkstra' on the cpu for this graph, and dijkstra takes no "
                          "options, got ['bogus']"), msg
    assert "method='dijkstra'" in msg
    with pytest.raises(gpu_sssp.OptionError) as err:  # a method named: its own words only
        gpu_sssp.solve(graph, [1], method="dijkstra", bogus=1)
    assert str(err.value) == "dijkstra takes no options, got ['bogus']"


def test_a_study_of_negative_weights_names_methods_its_workers_can_run(tmp_path, capsys):
    """``study --algorithm phast`` of a graph with a negative arc suggested ``hbf``, a GPU
    method, to every study (CPU workers too)."""
    g = tmp_path / "neg.gr"
    g.write_text("p sp 3 3\na 1 2 5\na 2 3 -2\na 1 3 9\n")
    code = main(["study", str(g), "--algorithm", "phast", "--cpu-workers", "1", "--no-dashboard",
                 "--out", str(tmp_path / "st")])
    err = capsys.readouterr().err
    assert code == 2 and "(use bellman-ford, hbf on GPU workers, or auto)" in err, err
    assert not (tmp_path / "st").exists()
    code = main(["solve", str(g), "-s", "1", "-m", "phast@cpu"])
    err = capsys.readouterr().err
    assert code == 2 and "(use bellman-ford or auto)" in err, err


def test_a_mistyped_option_is_named_by_the_function_called(tmp_path):
    """``study(path, batchsize=5)`` said "load_graph: unknown option 'batchsize'"; and
    ``matrix(path, zero_based=True)`` took zero_based for a method option ("phast takes the
    options lanes, ...") where it goes in ``ingest=``."""
    import gpu_sssp

    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    for typo, meant in (("batchsize", "batch_size"), ("targetz", "targets"), ("zero_basd", "zero_based")):
        with pytest.raises(gpu_sssp.OptionError) as err:
            gpu_sssp.study(str(g), sources=[1], out=str(tmp_path / "st"), cpu_workers=1, **{typo: 5})
        assert str(err.value).startswith(f"study() got an unknown option {typo!r} (did you mean {meant}=?)"), err.value
    assert not (tmp_path / "st").exists()
    for graph, end in ((str(g), ""), (gpu_sssp.load_graph(str(g)), " (they apply to a graph given as a path)")):
        with pytest.raises(gpu_sssp.OptionError) as err:
            gpu_sssp.matrix(graph, [1], [2], zero_based=True)
        assert str(err.value) == ("matrix() takes load_graph's options in ingest=, not as its own: "
                                  "ingest={'zero_based': True}" + end)
    assert gpu_sssp.matrix(str(g), [1], [3], ingest={"weights": "unit"}).tolist() == [[2.0]]
