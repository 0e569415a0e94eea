"""`sssp verify` and `sssp bench` with the CPU phast (registered on both backends): checked
against SciPy and timed where there is no GPU, named explicitly as phast@cpu anywhere."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_sssp import kernels
from gpu_sssp.kernels import registry
from gpu_sssp.workflows.cli import main


def _rows(out: str) -> dict[str, tuple[str, str]]:
    """verify's table rows: {method@backend: (backend, result)}."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 4 and cells[1] in ("cpu", "gpu"):
            rows[f"{cells[0]}@{cells[1]}"] = (cells[1], cells[2])
    return rows


def test_registry_describes_phast_on_both_backends():
    assert registry.backends_of("phast") == ["gpu", "cpu"]
    regs = [(m.name, m.backend) for m in registry.registrations()]
    assert ("phast", "gpu") in regs and ("phast", "cpu") in regs
    assert ("phast", "cpu") in [(m.name, m.backend) for m in registry.registrations("cpu")]
    assert ("phast", "gpu") not in [(m.name, m.backend) for m in registry.registrations("cpu")]
    assert registry.method_spec("phast@cpu") == ("phast", "cpu")
    assert registry.method_spec("phast", "cpu") == ("phast", "cpu")
    assert registry.method_spec("phast") == ("phast", "gpu" if kernels.device_count() else "cpu")
    assert registry.method_label("phast", "cpu") == "phast@cpu"
    assert registry.method_label("phast", "gpu") == "phast"
    assert registry.method_label("dijkstra", "cpu") == "dijkstra"
    for bad, match in (("hbf@cpu", "runs on the gpu backend"), ("phast@tpu", "'gpu' or 'cpu'"),
                       ("nope", "unknown method"), ("auto", "unknown method")):
        with pytest.raises(ValueError, match=match):
            registry.method_spec(bad)


def test_verify_phast_passes_on_the_cpu(rome99, capsys):
    """--methods phast runs the CPU phast where no GPU is visible (exit 0, not 4), and
    phast@cpu names it anywhere; each is checked against SciPy (exact integer distances,
    the predecessor trees)."""
    argv = ["verify", str(rome99), "--methods", "phast" if not kernels.device_count() else "phast@cpu",
            "--random", "16"]
    assert main(argv) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows == {"phast@cpu": ("cpu", "ok")}
    assert main(["verify", str(rome99), "--methods", "phast,dijkstra", "--backend", "cpu"]) == 0
    assert set(_rows(capsys.readouterr().out)) == {"phast@cpu", "dijkstra@cpu"}


def test_verify_all_includes_the_cpu_phast(rome99, capsys):
    assert main(["verify", str(rome99)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert {"dijkstra@cpu", "bellman-ford@cpu", "phast@cpu"} <= set(rows)
    # BFS methods compute hop distances: skipped on rome99's weights (on a GPU machine
    # they used to stop verify with a ValueError traceback); every other one checked
    assert all(r == "ok" or (k.startswith("bfs-") and r.startswith("skipped")) for k, (_b, r) in rows.items()), rows
    if kernels.device_count():
        assert "phast@gpu" in rows and rows["bfs-naive@gpu"][1].startswith("skipped"), rows
    assert main(["verify", str(rome99), "--backend", "cpu"]) == 0
    assert set(_rows(capsys.readouterr().out)) == {"dijkstra@cpu", "bellman-ford@cpu", "phast@cpu"}


def test_verify_catches_a_wrong_cpu_phast(rome99, capsys, monkeypatch):
    """The CPU phast's answer is really compared: a planted wrong distance fails."""
    from gpu_sssp.kernels import cpu_phast

    real = cpu_phast.phast

    def wrong(graph, sources, **kw):
        res = real(graph, sources, **kw)
        import numpy as np

        res.distances = res.distances.copy()
        row = res.distances[0]
        v = int(np.flatnonzero(np.isfinite(row) & (row > 0))[0])
        row[v] += 1
        return res

    monkeypatch.setattr(cpu_phast, "phast", wrong)
    assert main(["verify", str(rome99), "--methods", "phast@cpu"]) == 1
    out = capsys.readouterr().out
    assert "phast" in out and "ok" not in out.split("phast", 1)[1]


def test_verify_list_shows_both_backends_of_phast(capsys):
    assert main(["verify", "--list"]) == 0
    out = capsys.readouterr().out
    backends = {c[1] for c in (
        [x.strip() for x in line.strip().strip("│").split("│")] for line in out.splitlines())
        if len(c) == 4 and c[0] == "phast"}
    assert backends == {"gpu", "cpu"}


def test_verify_backend_errors(rome99, capsys):
    assert main(["verify", str(rome99), "--methods", "hbf", "--backend", "cpu"]) == 2
    assert "runs on the gpu backend, not 'cpu'" in capsys.readouterr().err
    assert main(["verify", str(rome99), "--methods", "phast@x"]) == 2


def test_bench_cpu_includes_phast(rome99, tmp_path, capsys):
    out = tmp_path / "bench"
    rc = main(["bench", str(rome99), "--algorithms", "cpu", "--sources", "4", "--min-component", "100",
               "--baselines", "scipy", "--out", str(out), "--no-plots"])
    assert rc == 0
    rows = pq.read_table(out / "rows.parquet").to_pylist()
    ph = [r for r in rows if r["algorithm"] == "phast"]
    assert len(ph) == 4 and all(r["ok"] and r["kind"] == "cpu" and r["variant"] == "phast@cpu" for r in ph)
    assert {"dijkstra", "bellman-ford", "scipy"} <= {r["algorithm"] for r in rows}
    assert "phast@cpu" in (out / "summary.md").read_text()
    err = capsys.readouterr().err
    assert "no CUDA device" not in err


@pytest.mark.parametrize("spec, backend, want", [
    ("cpu", "auto", ["dijkstra", "bellman-ford", "phast@cpu"]),
    ("all", "cpu", ["dijkstra", "bellman-ford", "phast@cpu"]),
    ("phast,phast@cpu", "auto", ["phast", "phast@cpu"]),
])
def test_bench_expands_phast_per_backend(spec, backend, want):
    from gpu_sssp.workflows.cmd_bench import _expand_algorithms

    assert _expand_algorithms(spec, (), backend) == want
    got = _expand_algorithms("all", ())
    assert "phast@gpu" in got and "phast@cpu" in got
    assert "phast@cpu" not in _expand_algorithms("all", ("phast",))
    assert _expand_algorithms("all", ("phast@cpu",)).count("phast@gpu") == 1


def test_hop_distance_methods_are_unsuitable_for_unequal_weights():
    """The registry's one rule refuses BFS (hop distances) on a weighted graph, before
    any device is needed, so that verify and bench skip it and solve names it."""
    from gpu_sssp.kernels.graph import Graph

    weighted = Graph.from_edges([0, 1], [1, 2], [1, 3], 3, name="w")
    unit = Graph.from_edges([0, 1], [1, 2], [2, 2], 3, name="u")
    for name in ("bfs-naive", "bfs-blocked", "bfs-hierarchical"):
        assert "hop distances" in registry.get(name).unsuitable(weighted)
        assert registry.get(name).unsuitable(unit) is None
    assert registry.get("delta").unsuitable(weighted) is None
    with pytest.raises(ValueError, match="hop distances: it needs every arc weight equal; w has weights 1..3"):
        kernels.solve(weighted, [0], method="bfs-naive")


@pytest.fixture
def not_road_like(tmp_path):
    """A random graph (Erdos-Renyi): integer weights, but a hop depth far below
    0.25 sqrt(n): phast refuses to contract it unless forced."""
    out = tmp_path / "zg.parquet"
    assert main(["generate", "random", "-n", "1000", "-m", "4000", "-o", str(out), "-q"]) == 0
    return out


@pytest.fixture
def float_weights(tmp_path):
    out = tmp_path / "flt.parquet"
    assert main(["generate", "random", "-n", "300", "-m", "1200", "--weight-type", "float64", "-o", str(out),
                 "-q"]) == 0
    return out


@pytest.mark.parametrize("graph, why", [("not_road_like", "hop depth"), ("float_weights", "float64 weights")])
def test_verify_all_skips_phast_with_the_reason(graph, why, request, capsys):
    """verify's default --methods all skipped phast on negative weights but crashed
    (ValueError traceback, exit 1) on a graph phast refuses for another reason."""
    path = request.getfixturevalue(graph)
    assert main(["verify", str(path), "--random", "6"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["dijkstra@cpu"] == ("cpu", "ok")
    assert rows["phast@cpu"][1].startswith("skipped: phast:")
    # phast alone: skipped with the reason, and nothing checked is exit 2, not a pass
    assert main(["verify", str(path), "--methods", "phast@cpu"]) == 2
    got = capsys.readouterr()
    assert why in " ".join(got.out.split()) and "nothing was checked" in got.err


@pytest.mark.parametrize("graph, why", [("not_road_like", "hop depth"), ("float_weights", "float64 weights")])
def test_solve_phast_refusal_is_one_line_exit_2(graph, why, request, capsys):
    path = request.getfixturevalue(graph)
    cpu = ["--backend", "cpu"] if kernels.device_count() else []  # solve's -m takes no NAME@BACKEND
    assert main(["solve", str(path), "-s", "0", "-m", "phast", *cpu]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: phast: ") and why in err and len(err.strip().splitlines()) == 1
    assert "dijkstra" in err and "batched" not in err  # the CPU phast's fallback: the one solve runs


@pytest.mark.parametrize("graph, why", [("not_road_like", "hop depth"), ("float_weights", "float64 weights")])
def test_study_refuses_phast_before_its_folder(graph, why, request, tmp_path, capsys):
    """The study's plan asks the registry (Method.unsuitable, as for dijkstra on negative
    weights): float weights used to fail on the workers and leave a failed folder, and a
    graph that is not road-like used to be contracted on the client, past solve's rule."""
    path = request.getfixturevalue(graph)
    out = tmp_path / "st"
    assert main(["study", str(path), "--random", "5", "--algorithm", "phast", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: phast: ") and why in err and len(err.strip().splitlines()) == 1
    # the study's own advice: it has no force option, and its workers' backend is not known yet
    assert "choose another --algorithm" in err and "force=True" not in err and "method='batched'" not in err
    assert not out.exists()
    assert not list(tmp_path.glob("*.ch.npz"))  # no hierarchy was built


def test_bench_skips_phast_on_a_graph_it_refuses(not_road_like, tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["bench", str(not_road_like), "--algorithms", "dijkstra,phast@cpu", "--sources", "2",
                 "--baselines", "scipy", "--out", str(out), "--no-plots"]) == 0
    rows = pq.read_table(out / "rows.parquet").to_pylist()
    assert {r["algorithm"] for r in rows} == {"dijkstra", "scipy"}
    assert "phast@cpu skipped: phast:" in " ".join(capsys.readouterr().err.split())


def test_verify_random_sources_are_distinct_capped_and_the_seed_is_printed(rome99, capsys, monkeypatch):
    """--random K drew with replacement (rome99 --random 5000: '3353 sources', repeats
    included) and never said which seed; now K distinct vertices, at most n (noted)."""
    from gpu_sssp.kernels import registry as reg

    seen = []
    real = reg.solve

    def spy(graph, sources, **kw):
        seen.append(np.asarray(sources).copy())
        return real(graph, sources, **kw)

    monkeypatch.setattr(kernels, "solve", spy)
    assert main(["verify", str(rome99), "--random", "5000", "--methods", "dijkstra"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--random 5,000 is more than the 3,353 vertices" in out and "seed 0" in out
    # (checked a part of the sources at a time: the reference's calls, every other one, cover them)
    every = np.concatenate(seen[0::2])
    assert len(every) == 3353 and len(np.unique(every)) == 3353
    seen.clear()
    assert main(["verify", str(rome99), "--random", "40", "--seed", "3", "--methods", "dijkstra"]) == 0
    assert "40 distinct random sources (seed 3" in " ".join(capsys.readouterr().out.split())
    first = seen[0]
    assert len(np.unique(first)) == 40
    seen.clear()
    assert main(["verify", str(rome99), "--random", "40", "--methods", "dijkstra"]) == 0
    assert not np.array_equal(seen[0], first)  # another seed, other sources
    assert main(["verify", str(rome99), "--random", "0"]) == 2
    assert "--random K must be at least 1" in capsys.readouterr().err


def test_verify_checks_a_repeated_source_once(rome99, capsys):
    """As solve and study: ``-s 1 -s 5 -s 1`` checks two sources, with a note."""
    assert main(["verify", str(rome99), "--methods", "dijkstra", "--backend", "cpu",
                 "-s", "1", "-s", "5", "-s", "1"]) == 0
    out = capsys.readouterr().out
    assert "note: 1 repeated source checked once (2 distinct)" in out
    assert "2 sources)" in out


def test_methods_are_checked_before_the_graph_is_read(tmp_path, capsys):
    """A misspelt --methods name, ``auto``, a bad @backend or an empty list was refused
    only after the graph had been read (ingested, on first use) and the CPU reference
    solved: on a large graph, minutes for a typo.  A graph that does not exist shows
    it: the method's error comes first."""
    missing = str(tmp_path / "missing.gr")
    for methods, message in (("dijkstr", "unknown method(s) dijkstr"), ("auto", "unknown method(s) auto"),
                             ("phast@tpu", "the backend after '@' must be 'gpu' or 'cpu'"),
                             (" ", "no method named"), (",", "an empty item in the list"), ("dijkstra@gpu", "runs on the cpu backend")):
        assert main(["verify", missing, "--methods", methods]) == 2, methods
        cap = capsys.readouterr()
        assert message in cap.err and "missing.gr" not in cap.err, (methods, cap.err)
        assert len(cap.err.splitlines()) == 1 and cap.out == ""


def test_a_gpu_method_without_a_gpu_exits_4_before_the_graph_is_read(tmp_path, capsys):
    from gpu_sssp import kernels

    if kernels.device_count():
        pytest.skip("a GPU is visible here")
    assert main(["verify", str(tmp_path / "missing.gr"), "--methods", "dijkstra,hbf"]) == 4
    err = capsys.readouterr().err
    assert err == "error: method 'hbf' needs a CUDA device; none is visible here\n"


def test_verify_phast_uses_the_hierarchy_cache_beside_the_graph(tmp_path, capsys, monkeypatch):
    """verify --methods phast checks the hierarchy a study sweeps: the cache file beside
    the graph, written on its first run where there is none, and read (not built again:
    4-5 s on NY every run) on the next."""
    from gpu_sssp.kernels import hierarchy as hmod
    from tests.pipeline.test_study_support import rome_parquet

    path = rome_parquet(tmp_path)
    cache = path.with_name(path.name + ".ch.npz")
    argv = ["verify", str(path), "--methods", "phast@cpu", "--random", "4"]
    assert main(argv) == 0 and _rows(capsys.readouterr().out) == {"phast@cpu": ("cpu", "ok")}
    assert cache.exists()

    def no_build(graph):
        raise AssertionError("the hierarchy was built again")

    monkeypatch.setattr(hmod, "build_hierarchy", no_build)
    assert main(argv) == 0 and _rows(capsys.readouterr().out) == {"phast@cpu": ("cpu", "ok")}
