"""`sssp bench` end to end on CPU: real rome99 and a generated graph, every output file,
a planted wrong answer caught (rows written, exit status non-zero)."""
from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp.kernels import registry
from gpu_sssp.pipeline.bench_protocol import ROW_SCHEMA
from gpu_sssp.workflows.cli import main


def write_edge_parquet(path, src, dst, w, n, *, id_base=0, directed=True):
    """A Parquet edge list in the ingest contract (file ids, `sssp` metadata)."""
    import pyarrow as pa

    t = pa.table({"src": np.asarray(src, dtype=np.int32) + id_base,
                  "dst": np.asarray(dst, dtype=np.int32) + id_base,
                  "weight": np.asarray(w, dtype=np.int64)})
    meta = {"vertices": int(n), "arcs": len(t), "directed": directed, "id_base": id_base,
            "weight_type": "int64"}
    t = t.replace_schema_metadata({b"sssp": json.dumps(meta).encode()})
    pq.write_table(t, path)
    return path


@pytest.fixture
def small_parquet(tmp_path):
    rng = np.random.default_rng(11)
    n = 300
    src = rng.integers(0, n, size=1500)
    dst = rng.integers(0, n, size=1500)
    ring = np.arange(n)
    src = np.r_[src, ring]
    dst = np.r_[dst, (ring + 1) % n]  # strongly connected
    w = rng.integers(1, 50, size=len(src))
    return write_edge_parquet(tmp_path / "rand300.parquet", src, dst, w, n, id_base=1)


def wrong_solver(graph, sources, **kw):
    from tests.pipeline.test_bench import wrong_solver as w

    return w(graph, sources, **kw)


def test_bench_cpu_end_to_end_writes_every_file(rome99, small_parquet, tmp_path, capsys):
    out = tmp_path / "bench"
    rc = main(["bench", str(rome99), str(small_parquet), "--algorithms", "cpu", "--sources", "5",
               "--runs", "2", "--seed", "3", "--out", str(out)])
    assert rc == 0
    import importlib.util

    if importlib.util.find_spec("matplotlib"):  # the 'bench' extra
        pngs = ("time_per_graph.png", "speedup.png")
    else:
        pngs = ()
        assert "plots skipped" in (out / "summary.md").read_text()
    for name in ("rows.parquet", "summary.md", *pngs):
        assert (out / name).stat().st_size > 0, name
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:4] == b"\x89PNG"
    t = pq.read_table(out / "rows.parquet")
    assert set(ROW_SCHEMA.names) <= set(t.schema.names)
    rows = t.to_pylist()
    assert {r["graph"] for r in rows} == {"rome99", "rand300"}
    assert {"dijkstra", "bellman-ford", "scipy"} <= {r["algorithm"] for r in rows}
    assert all(r["ok"] for r in rows)
    assert {r["run"] for r in rows} == {0, 1}
    # 1-based file ids in the rows
    assert min(r["source"] for r in rows) >= 1
    meta = json.loads(t.schema.metadata[b"sssp"])
    assert meta["kind"] == "bench-rows" and meta["settings"]["sources"] == 5
    text = (out / "summary.md").read_text()
    assert "### rome99" in text and "### rand300" in text and "lowered" in text
    assert "rome99" in capsys.readouterr().out

    # summarising existing rows again, into another folder
    again = tmp_path / "again"
    assert main(["bench", "--from-rows", str(out), "--out", str(again), "--no-plots"]) == 0
    assert (again / "summary.md").exists() and (again / "rows.parquet").exists()
    assert not list(again.glob("*.png"))


@pytest.fixture
def scratch_registry():
    """The method registry, put back as it was after the test (which registers its own)."""
    saved = dict(registry._METHODS)
    yield registry
    registry._METHODS.clear()
    registry._METHODS.update(saved)


def test_bench_catches_a_planted_wrong_answer(small_parquet, tmp_path, scratch_registry):
    scratch_registry.register("wrong", "cpu", "tests.workflows.test_cli_bench:wrong_solver")
    out = tmp_path / "bench"
    rc = main(["bench", str(small_parquet), "--algorithms", "dijkstra,wrong", "--sources", "4",
               "--baselines", "scipy", "--out", str(out), "--no-plots"])
    assert rc == 1
    rows = pq.read_table(out / "rows.parquet").to_pylist()
    assert {r["ok"] for r in rows if r["algorithm"] == "wrong"} == {False}
    assert {r["ok"] for r in rows if r["algorithm"] != "wrong"} == {True}
    assert "FAILED" in (out / "summary.md").read_text()


@pytest.mark.parametrize("argv, match", [
    (["--algorithms", "nope"], "unknown method"),
    (["--ablation", "dijkstra"], "no ablation"),
    (["--baselines", "boost"], "unknown baseline"),
    (["--locality-k", "one"], "integers"),
    # a misspelt --exclude left the method in, unnoticed; k=0 or a negative k was timed
    # as a configuration the method then refused
    (["--algorithms", "cpu", "--exclude", "dijsktra"], "--exclude dijsktra: no such method"),
    (["--algorithms", "cpu", "--exclude", "dijkstra@gpu"], "no such method on the gpu backend"),
    # --exclude beside explicit names only did nothing; a method named in both ran
    (["--algorithms", "dijkstra", "--exclude", "bellman-ford"], "--algorithms dijkstra names none"),
    (["--algorithms", "cpu,dijkstra", "--exclude", "dijkstra"],
     "--algorithms names dijkstra and --exclude leaves it out"),
    (["--algorithms", "cpu,phast@cpu", "--exclude", "phast"], "--algorithms names phast@cpu and --exclude"),
    (["--locality-k", "0"], "--locality-k: values must be at least 1"),
    (["--locality-k", "2,-1"], "--locality-k: values must be at least 1"),
])
def test_bench_bad_arguments_are_errors(small_parquet, tmp_path, argv, match, capsys):
    rc = main(["bench", str(small_parquet), "--out", str(tmp_path / "o"), *argv])
    assert rc == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o" / "rows.parquet").exists()


def test_bench_needs_a_graph(tmp_path, capsys):
    assert main(["bench", "--out", str(tmp_path / "o")]) == 2
    assert "GRAPH" in capsys.readouterr().err


def test_bench_help_lists_the_protocol(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    for opt in ("--algorithms", "--sources", "--min-component", "--seed", "--runs", "--ablation",
                "--baselines", "--out", "--warmup", "--from-rows"):
        assert opt in text


@pytest.mark.parametrize("baselines", [[], ["--baselines", ""]])
def test_bench_negative_cycle_exits_3_with_one_line(tmp_path, capsys, baselines):
    """As `sssp solve` and `sssp verify`: exit 3 and one line naming a vertex on the
    cycle (it used to be scipy's NegativeCycleError traceback, exit 1)."""
    wel = tmp_path / "negcyc.wel"
    wel.write_text("0 1 1\n1 2 -5\n2 0 1\n2 3 1\n")
    rc = main(["bench", str(wel), "--algorithms", "cpu", "--sources", "2", "--out", str(tmp_path / "b"),
               "--no-plots", *baselines])
    assert rc == 3
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "negative cycle reachable from source" in errors[0]
    assert "lies on it" in errors[0] and "Traceback" not in err


@pytest.mark.parametrize("argv", [["--algorithms", "hbf"], ["--algorithms", "phast@gpu"],
                                  ["--algorithms", "dijkstra,hbf"], ["--algorithms", "phast", "--backend", "gpu"],
                                  ["--algorithms", "dijkstra", "--ablation", "hbf"]])
def test_bench_a_named_gpu_method_without_a_gpu_exits_4(small_parquet, tmp_path, capsys, monkeypatch, argv):
    """As `sssp verify --methods hbf`: exit 4 before anything is timed (it used to exit 0
    having measured SciPy only)."""
    monkeypatch.setenv("SSSP_DISABLE_GPU", "1")
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--sources", "2", "--out", str(out), "--no-plots", *argv]) == 4
    err = capsys.readouterr().err
    assert "needs a CUDA device" in err and len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1
    assert not (out / "rows.parquet").exists()


@pytest.mark.parametrize("group", ["gpu", "all"])
def test_bench_groups_skip_their_gpu_methods_without_a_gpu(small_parquet, tmp_path, capsys, monkeypatch, group):
    monkeypatch.setenv("SSSP_DISABLE_GPU", "1")
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--algorithms", group, "--sources", "2", "--baselines", "scipy",
                 "--exclude", "phast", "--out", str(out), "--no-plots"]) == 0
    assert "hbf skipped: no CUDA device here" in " ".join(capsys.readouterr().err.split())


def test_bench_notes_stay_whole_in_pipes_and_from_rows_twice_is_noted(small_parquet, tmp_path, capsys):
    """Notes wrapped mid-sentence at 80 columns when stderr was not a terminal; the same
    rows given twice to --from-rows were merged twice without a word."""
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2",
                 "--baselines", "scipy", "--out", str(out), "--no-plots"]) == 0
    err = capsys.readouterr().err
    lowered = [ln for ln in err.splitlines() if "no component has" in ln]
    assert len(lowered) == 1 and len(lowered[0]) > 80 and "min-component lowered to 150" in lowered[0]
    assert any(ln.startswith("device: ") and ln.rstrip().endswith("scipy") for ln in err.splitlines())
    rows = len(pq.read_table(out / "rows.parquet"))
    again = tmp_path / "again"
    assert main(["bench", "--from-rows", str(out), str(out / "rows.parquet"), "--out", str(again),
                 "--no-plots"]) == 0
    assert len(pq.read_table(again / "rows.parquet")) == rows
    err = capsys.readouterr().err
    assert "given 2 times: read once" in err
    assert "given 2 times: read once" in (again / "summary.md").read_text()


def test_bench_from_rows_keeps_two_runs_of_one_graph_apart(tmp_path, capsys):
    """Two rows sets of the same graph, different protocols, summarised together: one
    line per run, and each run's ratios against its own SciPy times."""
    from tests.pipeline.test_bench import _two_runs_of_one_graph

    a, b = _two_runs_of_one_graph(tmp_path)
    out = tmp_path / "ab"
    assert main(["bench", "--from-rows", str(a), str(b), "--out", str(out), "--no-plots"]) == 0
    text = (out / "summary.md").read_text()
    assert "| grid (run 1) | bellman-ford | cpu | 4.00 | - | 0.250x |" in text
    assert "| grid (run 1) | dijkstra | cpu | 2.00 | - | 0.500x |" in text
    assert "| grid (run 2) | dijkstra | cpu | 1.00 | - | 4.00x |" in text
    assert text.count("| grid (run") >= 4  # Graphs table and Speedup table
    shown = capsys.readouterr().out
    assert "grid (run 1)" in shown and "0.250x" in shown and "4.00x" in shown


def test_bench_ablation_of_a_gpu_method_names_the_option(small_parquet, tmp_path, capsys, monkeypatch):
    """`--algorithms cpu --ablation hbf` without a GPU said "hbf: a GPU method needs a CUDA
    device ... (--algorithms cpu times the CPU methods ...)": the hint named what the user
    had already given, not the option at fault.  Now the error names --ablation."""
    monkeypatch.setenv("SSSP_DISABLE_GPU", "1")
    argv = ["bench", str(small_parquet), "--sources", "2", "--out", str(tmp_path / "b"), "--no-plots",
            "--algorithms", "cpu", "--ablation", "hbf"]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "--ablation hbf" in err and "--algorithms cpu times" not in err


@pytest.mark.parametrize("argv, match", [
    (["--slow-sources", "-1", "--slow-ms", "0"], "--slow-sources must be at least 1"),
    (["--slow-sources", "0"], "--slow-sources must be at least 1"),
    (["--baseline-max-arcs", "-5"], "--baseline-max-arcs must be 0 or more"),
    (["--min-component", "-4"], "--min-component must be 0 or more"),
    (["--sources", "0"], "--sources must be at least 1"),
    (["--runs", "0"], "--runs must be at least 1"),
    (["--warmup", "-1"], "--warmup must be 0 or more"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
])
def test_bench_nonsense_numbers_are_refused_before_any_graph_is_read(small_parquet, tmp_path, capsys, argv, match):
    """A negative --slow-sources timed every source but the last, a negative
    --baseline-max-arcs skipped the anchors, a negative --min-component passed unnoticed
    (exit 0); --runs 0 / --warmup -1 / --batch-size 0 were refused only after the graph
    was read (an ingest of a large file first).  Now: one line, exit 2, nothing read."""
    out = tmp_path / "o"
    rc = main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--baselines", "scipy",
               "--out", str(out), "--no-plots", *argv])
    assert rc == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and match in errors[0], err
    assert "loaded" not in err
    assert not (out / "rows.parquet").exists()


def test_bench_names_the_cpu_model_and_the_seeded_weights(tmp_path):
    """The rows named the GPU but the CPU only as platform.processor(), 'x86_64' on
    Linux (BENCHMARKS.md's 'host: vm (x86_64)'), although the anchors' times are that
    CPU's; and a graph given weights by --weights random:LO:HI:SEED was described as
    'int64 1..1000' with no word that the weights were drawn, nor the seed."""
    import shutil

    from gpu_sssp.pipeline import bench_protocol as bm
    from tests.conftest import DATA

    gr = tmp_path / "rome99.gr"
    shutil.copy(DATA / "rome99.gr", gr)
    out = tmp_path / "b"
    assert main(["bench", str(gr), "--weights", "random:1:1000:7", "--algorithms", "dijkstra",
                 "--baselines", "scipy", "--sources", "2", "--out", str(out), "--no-plots"]) == 0
    t = pq.read_table(out / "rows.parquet")
    meta = json.loads(t.schema.metadata[b"sssp"])
    cpu = bm.cpu_model()
    assert meta["env"]["cpu"] == cpu and meta["env"]["cpu_cores"] >= 1
    assert set(t.column("cpu").to_pylist()) == {cpu}
    info = meta["graphs"][0]
    assert info["weight_spec"] == "random:1:1000:7" and info["source_file"] == "rome99.gr"
    assert info["weights"] == "int64 1..1000 (random:1:1000:7)"
    text = (out / "summary.md").read_text()
    assert f"({cpu}, " in text and "int64 1..1000 (random:1:1000:7)" in text


def test_cpu_model_reads_proc_cpuinfo_on_linux():
    import platform
    from pathlib import Path

    from gpu_sssp.pipeline import bench_protocol as bm

    if not Path("/proc/cpuinfo").exists() or "model name" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("no model name in /proc/cpuinfo here")
    assert bm.cpu_model() not in ("", platform.machine())
    assert bm.environment()["cpu"] == bm.cpu_model()


def test_from_rows_reads_rows_written_before_the_cpu_column(small_parquet, tmp_path):
    out = tmp_path / "b"
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--baselines", "scipy",
                 "--sources", "2", "--out", str(out), "--no-plots"]) == 0
    t = pq.read_table(out / "rows.parquet")
    old = t.drop(["cpu", "warmup_ms"])
    meta = json.loads(t.schema.metadata[b"sssp"])
    meta["env"]["cpu"] = "x86_64"
    old = old.replace_schema_metadata({b"sssp": json.dumps(meta).encode()})
    (tmp_path / "old").mkdir()
    pq.write_table(old, tmp_path / "old" / "rows.parquet")
    again = tmp_path / "again"
    assert main(["bench", "--from-rows", str(tmp_path / "old"), "--out", str(again), "--no-plots"]) == 0
    merged = pq.read_table(again / "rows.parquet")
    assert set(merged.column("cpu").to_pylist()) == {"x86_64"}
    assert set(merged.column("warmup_ms").to_pylist()) == {None}


def _parquet_with_meta(path, meta_bytes):
    import pyarrow as pa

    t = pa.table({"graph": ["g"]}).replace_schema_metadata({b"sssp": meta_bytes})
    pq.write_table(t, path)
    return path


@pytest.mark.parametrize("make, match", [
    (lambda d: "/dev/zero", "not a regular file"),
    (lambda d: _parquet_with_meta(d / "badjson.parquet", b"{not json"), "metadata is not valid JSON"),
    (lambda d: _parquet_with_meta(d / "list.parquet", b"[1, 2]"), "not a `sssp bench` rows file"),
    (lambda d: _parquet_with_meta(d / "cols.parquet", json.dumps({"kind": "bench-rows"}).encode()),
     "missing column"),
    (lambda d: d / "nosuch.parquet", "--from-rows: "),  # it named no option
])
def test_bench_from_rows_on_a_wrong_file_is_one_line_naming_it(tmp_path, capsys, make, match):
    """--from-rows /dev/zero said only 'error: /dev/zero'; a Parquet file whose 'sssp'
    metadata was not JSON said only the JSON parser's words (no file), and one whose
    metadata was a JSON list ended in a traceback (exit 1)."""
    path = make(tmp_path)
    out = tmp_path / "o"
    assert main(["bench", "--from-rows", str(path), "--out", str(out), "--no-plots"]) == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and match in errors[0] and str(path) in errors[0], err
    assert "Traceback" not in err
    assert not out.exists()


_CALLS = {"n": 0}


def interrupting_solver(graph, sources, **kw):
    """Ctrl-C on the first timed call (after its warm-up call)."""
    from gpu_sssp.kernels import cpu

    _CALLS["n"] += 1
    if _CALLS["n"] > 1:
        raise KeyboardInterrupt
    return cpu.dijkstra(graph, sources, distances=kw.get("distances", True))


def test_bench_cut_short_keeps_the_methods_it_measured(small_parquet, tmp_path, capsys, scratch_registry):
    """The rows were written after each graph only: Ctrl-C while the first (or only)
    graph was being timed left no rows at all, however many methods were done."""
    _CALLS["n"] = 0
    out = tmp_path / "b"
    (out).mkdir()
    (out / "ablation.png").write_bytes(b"\x89PNG old run")  # a previous run's plot
    scratch_registry.register("stopper", "cpu", "tests.workflows.test_cli_bench:interrupting_solver")
    rc = main(["bench", str(small_parquet), "--algorithms", "dijkstra,stopper", "--sources", "3",
               "--baselines", "scipy", "--out", str(out), "--no-plots"])
    assert rc == 130
    rows = pq.read_table(out / "rows.parquet").to_pylist()
    assert {r["algorithm"] for r in rows} == {"scipy", "dijkstra"}
    assert len(rows) == 6 and all(r["ok"] for r in rows)
    text = (out / "summary.md").read_text()
    assert "### rand300" in text, text
    assert "| dijkstra |" in text, text
    assert "still going" not in text and "- the run stopped: interrupted (Ctrl-C)" in text, text
    assert "stopper" not in text
    assert not (out / "ablation.png").exists()  # no plot of another run beside these rows
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left
    # a run that finishes has no such note
    assert main(["bench", str(small_parquet), "--algorithms", "dijkstra", "--sources", "2",
                 "--baselines", "scipy", "--out", str(out), "--no-plots"]) == 0
    assert "still going" not in (out / "summary.md").read_text()


@pytest.mark.parametrize("bad", ["bad.gr", "bad.parquet"])
def test_bench_a_later_graph_that_fails_ingest_stops_it_before_any_timing(small_parquet, tmp_path, capsys, bad):
    """The graphs were read one by one as they were timed: a malformed second file
    stopped the bench only after the first graph's methods had all been timed."""
    path = tmp_path / bad
    path.write_text("p sp 3 2\na 1 2 x\n" if bad.endswith(".gr") else "not parquet\n")
    out = tmp_path / "b"
    rc = main(["bench", str(small_parquet), str(path), "--algorithms", "dijkstra", "--baselines", "scipy",
               "--sources", "2", "--out", str(out), "--no-plots"])
    assert rc == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and bad in errors[0], err
    assert "Traceback" not in err and "loaded rand300" not in err
    assert not (out / "rows.parquet").exists()


def test_bench_of_a_generated_graph_names_its_generator_and_weight_seed(tmp_path):
    g = tmp_path / "rmat8.parquet"
    assert main(["generate", "rmat", "--scale", "8", "--edge-factor", "4", "--seed", "7", "--weights", "1:1000",
                 "-o", str(g), "-q"]) == 0
    out = tmp_path / "b"
    assert main(["bench", str(g), "--algorithms", "dijkstra", "--baselines", "scipy", "--sources", "2",
                 "--out", str(out), "--no-plots"]) == 0
    info = json.loads(pq.read_table(out / "rows.parquet").schema.metadata[b"sssp"])["graphs"][0]
    assert info["generator"]["family"] == "rmat" and info["generator"]["seed"] == 7
    assert info["weights"] == "int64 1..1000 (uniform:1:1000:7)"
