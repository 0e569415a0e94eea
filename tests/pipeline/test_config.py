"""The ``sssp.*`` settings (dask config): every key declared, values checked and
converted in one place (``pipeline.config``), a bad one refused as a usage error of one
line that names the key, where it came from, the value and what is expected, before any
study folder or cluster exists; unknown keys warned about, wrong shapes refused."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import dask.config
import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline import config
from gpu_sssp.pipeline.config import setting
from tests.pipeline.test_study_support import grid_parquet

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(monkeypatch):
    """Set ``DASK_*`` environment variables and have dask read them again, as a new
    process would; the configuration is read again without them afterwards."""
    def put(**variables):
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        dask.config.refresh()

    yield put
    monkeypatch.undo()
    dask.config.refresh()


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


# ---------------------------------------------------------------- declarations
def test_every_key_read_or_shipped_is_declared():
    shipped = set(config._flat(config.DEFAULTS["sssp"]))
    assert set(config.SPECS) == shipped
    read = set()
    for folder in ("kernels", "pipeline", "workflows", "gpu_sssp"):
        for path in (REPO / folder).rglob("*.py"):
            read |= set(re.findall(r"""\bsetting\(\s*["']([a-z.-]+)["']""", path.read_text()))
            for section in re.findall(r"""\bsetting\(\s*f["']([a-z]+)\.\{""", path.read_text()):
                read |= {k for k in config.SPECS if k.startswith(section + ".")}
    assert read and read <= set(config.SPECS), read - set(config.SPECS)
    # the shipped defaults pass their own checks
    assert config.check_settings()["study.batch-size"] == "auto"
    with pytest.raises(KeyError, match="not a declared setting"):
        setting("study.no-such-key")


# ---------------------------------------------------------------- bad values
@pytest.mark.parametrize("key, value, expected", [
    ("study.batch-size", "abc", "auto or a whole number >= 1"),
    ("study.batch-size", 7.5, "whole number"),
    ("study.batch-size", 0, ">= 1"),
    ("study.batch-size", True, "whole number"),
    ("study.retries", "abc", "whole number >= 0"),
    ("study.retries", -1, ">= 0"),
    ("study.max-distance-bytes", "lots", "byte size"),
    ("study.max-distance-bytes", -5, "byte size >= 0"),
    ("study.chunk-bytes", "big", "byte size"),
    ("study.ready-wait", "soon", "seconds"),
    ("study.ready-wait", -1, "seconds >= 0"),
    ("study.stream-interval", "soon", "seconds"),
    ("study.fsync", "maybe", "true or false"),
    ("study.keep-graph", "maybe", "true or false"),
    ("study.prompt-streams", "maybe", "true or false"),
    ("study.fsync", 2, "true or false"),
    ("study.schedule", "bogus", "guided or batch"),
    ("study.distance-form", "tall", "long or wide"),
    ("study.stats-over", "some", "targets or all"),
    ("study.matrix-form", "square", "wide or long"),
    ("study.order", "random", "locality or given"),
    ("cluster.cpu-workers", "zero", "whole number >= 1"),
    ("cluster.cpu-workers", 0, ">= 1"),
    ("cluster.threads-per-gpu", 0, ">= 1"),
    ("cluster.host", "999.1.1.1", "interface address"),
    ("cluster.host", "tcp://0.0.0.0", "interface address"),
    ("cluster.host", "my host", "interface address"),
    ("cluster.dashboard-address", "8787", "HOST:PORT"),
    ("cluster.dashboard-address", ":99999", "HOST:PORT"),
    ("cluster.dashboard-address", "999.1.1.1:8787", "HOST:PORT"),
    ("ingest.max-vertices", "many", "whole number >= 0, or null"),
    ("ingest.max-arcs", -1, ">= 0"),
    ("ingest.max-isolated-vertices", 1.5, "whole number"),
])
def test_a_bad_value_is_one_usage_error_naming_key_value_and_expectation(key, value, expected):
    with dask.config.set({f"sssp.{key}": value}):
        with pytest.raises(UsageError) as err:
            setting(key)
    line = _one_line(err)
    assert line.startswith(f"setting sssp.{key}: expected ") and expected in line, line
    assert f"got {value!r}" in line and "(from dask config)" in line, line
    assert err.value.exit_code == 2
    assert " --" not in line  # no command-line option the user did not pass


@pytest.mark.parametrize("key, value, want", [
    ("study.batch-size", "128", 128),
    ("study.batch-size", 64.0, 64),
    ("study.batch-size", "AUTO", "auto"),
    ("study.batch-size", None, "auto"),
    ("study.max-distance-bytes", "20GB", 20_000_000_000),
    ("study.max-distance-bytes", "1.5TiB", int(1.5 * 1024**4)),
    ("study.max-distance-bytes", 2e9, 2_000_000_000),
    ("study.chunk-bytes", "500MB", 500_000_000),
    ("study.ready-wait", "2m", 120.0),
    ("study.ready-wait", 0, 0.0),
    ("study.stream-interval", "500us", 0.0005),
    ("study.fsync", "no", False),
    ("study.fsync", "No", False),
    ("study.fsync", "YES", True),
    ("study.fsync", 0, False),
    ("study.fsync", "1", True),
    ("study.keep-graph", "true", True),
    ("study.prompt-streams", "off", False),
    ("study.schedule", "Batch", "batch"),
    ("cluster.cpu-workers", "3", 3),
    ("cluster.cpu-workers", None, None),
    ("cluster.host", "0.0.0.0", "0.0.0.0"),
    ("cluster.host", "::1", "::1"),
    ("cluster.host", "node-3.cluster.local", "node-3.cluster.local"),
    ("cluster.dashboard-address", ":8787", ":8787"),
    ("cluster.dashboard-address", "[::1]:8787", "[::1]:8787"),
    ("ingest.max-arcs", "null", None),
    ("ingest.max-vertices", 1e6, 1_000_000),
])
def test_good_values_are_converted(key, value, want):
    with dask.config.set({f"sssp.{key}": value}):
        got = setting(key)
    assert got == want and type(got) is type(want)


def test_explicit_values_are_returned_as_given():
    """Command-line options and function arguments keep their callers' checks and
    messages (which name the option)."""
    with dask.config.set({"sssp.study.batch-size": "abc"}):
        assert setting("study.batch-size", 0) == 0


# ---------------------------------------------------------------- where it came from
@pytest.mark.parametrize("name, text, key", [
    ("DASK_SSSP__STUDY__BATCH_SIZE", "abc", "study.batch-size"),
    ("DASK_SSSP__STUDY__BATCH_SIZE", "7.5", "study.batch-size"),
    ("DASK_SSSP__STUDY__MAX_DISTANCE_BYTES", "lots", "study.max-distance-bytes"),
    ("DASK_SSSP__STUDY__FSYNC", "maybe", "study.fsync"),
    ("DASK_SSSP__CLUSTER__HOST", "999.1.1.1", "cluster.host"),
])
def test_a_value_from_the_environment_names_its_variable(env, name, text, key):
    env(**{name: text})
    with pytest.raises(UsageError) as err:
        config.check_settings()
    line = _one_line(err)
    assert f"setting sssp.{key}:" in line and f"got {text!r}" in line
    assert f"from the environment variable {name}" in line, line


def test_environment_strings_are_read_as_environments_give_them(env):
    env(DASK_SSSP__STUDY__FSYNC="no", DASK_SSSP__STUDY__MAX_DISTANCE_BYTES="20GB",
        DASK_SSSP__STUDY__KEEP_GRAPH="yes", DASK_SSSP__STUDY__BATCH_SIZE="32")
    got = config.check_settings()
    assert got["study.fsync"] is False and got["study.keep-graph"] is True
    assert got["study.max-distance-bytes"] == 20_000_000_000 and got["study.batch-size"] == 32
    assert setting("study.fsync") is False  # what run.py's bool(setting(...)) sees


def test_a_value_from_a_config_file_names_the_file(tmp_path, monkeypatch):
    cfg = tmp_path / "sssp-test.yaml"
    cfg.write_text("sssp:\n  study:\n    ready-wait: soon\n")
    monkeypatch.setattr(dask.config, "paths", [str(tmp_path)])
    try:
        dask.config.refresh(paths=[str(tmp_path)])
        with pytest.raises(UsageError) as err:
            config.check_settings()
    finally:
        monkeypatch.undo()
        dask.config.refresh()
    line = _one_line(err)
    assert "setting sssp.study.ready-wait:" in line and "got 'soon'" in line
    assert f"from the dask config file {cfg}" in line, line


# ---------------------------------------------------------------- shapes and unknown keys
@pytest.mark.parametrize("where, value, named", [
    ("sssp.study", 5, "setting sssp.study: expected a mapping of settings"),
    ("sssp.cluster", "x", "setting sssp.cluster: expected a mapping of settings"),
])
def test_a_section_that_is_not_a_mapping_is_refused(where, value, named):
    with dask.config.set({where: value}):
        with pytest.raises(UsageError, match=re.escape(named)):
            setting(where.split(".", 1)[1] + ".order" if "study" in where else "cluster.host")
        with pytest.raises(UsageError, match=re.escape(named)):
            config.check_settings()


def test_a_wrong_shape_hidden_by_the_merge_is_refused(env):
    """At import dask puts the shipped section back over ``DASK_SSSP__STUDY=5``: the
    sources are checked too."""
    env(DASK_SSSP__STUDY="5")
    with pytest.raises(UsageError, match="setting sssp.study: expected a mapping.*"
                       "from the environment variable DASK_SSSP__STUDY"):
        config.check_settings()


def test_unknown_keys_are_warned_about_with_the_closest_known_one(caplog, monkeypatch):
    monkeypatch.setattr(config, "_warned", set())
    with dask.config.set({"sssp.study.batchsize": 5, "sssp.study.host": "x", "sssp.studdy.order": "given"}):
        with caplog.at_level(logging.WARNING, logger="gpu_sssp.pipeline.config"):
            got = config.check_settings()
            config.check_settings()  # once each
    assert got["study.batch-size"] == "auto"  # ignored, not an error
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert any("unknown setting sssp.study.batchsize" in m and "did you mean sssp.study.batch-size?" in m
               for m in lines), lines
    assert any("sssp.study.host" in m and "did you mean sssp.cluster.host?" in m for m in lines), lines
    assert any("sssp.studdy.order" in m and "did you mean sssp.study.order?" in m for m in lines), lines


# ---------------------------------------------------------------- before anything is made
@pytest.mark.parametrize("key, value", [
    ("study.schedule", "bogus"),
    ("study.retries", "abc"),
    ("study.ready-wait", "soon"),
    ("study.stream-interval", "soon"),
    ("study.chunk-bytes", "big"),
    ("cluster.host", "999.1.1.1"),
])
def test_study_refuses_a_bad_setting_before_its_folder_exists(tmp_path, key, value):
    import gpu_sssp

    g = grid_parquet(tmp_path, 3, 3)
    out = tmp_path / "s"
    with dask.config.set({f"sssp.{key}": value}):
        with pytest.raises(UsageError, match=f"setting sssp.{key}: expected"):
            gpu_sssp.study(g, out=out, cpu_workers=1, outputs="stats,distances")
    assert not out.exists()


def test_plan_blames_the_setting_not_the_option(tmp_path):
    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import StudyError, plan_study

    g = read_parquet(grid_parquet(tmp_path, 3, 3))
    sp = plan_sources(g, sources="all")
    with dask.config.set({"sssp.study.batch-size": 0}):
        with pytest.raises(UsageError) as err:
            plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o")
    assert "sssp.study.batch-size" in str(err.value) and "--batch-size" not in str(err.value)
    # an explicit value keeps the option's message
    with pytest.raises(StudyError, match="batch_size= must be at least 1, got 0"):
        plan_study(g, tmp_path / "g.parquet", sp, out=tmp_path / "o", batch_size=0)


def test_explicit_host_of_no_valid_form_is_a_usage_error():
    from gpu_sssp.pipeline.cluster import start_cluster

    with pytest.raises(UsageError, match="host= takes an interface address"):
        start_cluster(cpu_workers=1, host="999.1.1.1")
    with pytest.raises(UsageError, match="dashboard_address="):
        start_cluster(cpu_workers=1, dashboard_address="127.0.0.1:70000")


def test_the_byte_sizes_of_the_option_and_of_the_setting_are_one_parser():
    import argparse

    from gpu_sssp.kernels.memory import parse_bytes
    from gpu_sssp.workflows.cmd_study import parse_bytes as option

    for text, n in (("20e9", 20 * 10**9), ("300GB", 300 * 10**9), ("1.5T", 1_500_000_000_000),
                    ("64GiB", 64 * 2**30), ("7", 7)):
        assert parse_bytes(text) == option(text) == n
    with pytest.raises(ValueError):
        parse_bytes("lots")
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        option("lots")
    # exact decimal arithmetic: 1.1K is 1100 (float made it 1100.0000000000002)
    assert parse_bytes("1.1K") == option("1.1K") == 1100 and parse_bytes(2.0) == 2
    # a fraction of a byte was truncated (1.5 -> 1, 0.5 -> 0): refused
    for text in ("1.5", 1.5, "0.5", "1.0001K"):
        with pytest.raises(ValueError, match="not a whole number of bytes"):
            parse_bytes(text)
        with pytest.raises(argparse.ArgumentTypeError, match="not a whole number of bytes"):
            option(str(text))


def test_byte_sizes_with_extreme_exponents_are_answered_at_once():
    """The exact arithmetic grows with the exponent ("1e-20000000" took 20 s): far
    exponents are answered before it, a size past 1e300 bytes is out of range."""
    import time

    from gpu_sssp.kernels.memory import parse_bytes

    t = time.perf_counter()
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        parse_bytes("1e-20000000")
    for text in ("1e20000000", "1e400", "1e308K"):
        with pytest.raises(OverflowError):
            parse_bytes(text)
    assert parse_bytes("0e-99999") == 0 and parse_bytes("0e99999") == 0 and parse_bytes("1e300") == 10**300
    assert time.perf_counter() - t < 10  # a hang guard (the unbounded form ran for minutes), not a speed claim
