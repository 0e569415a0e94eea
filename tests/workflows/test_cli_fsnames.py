"""File names that are not valid UTF-8 (Linux allows them; Python holds them as str with
surrogates): pyarrow cannot encode such a name, so the tool must never hand it one."""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from gpu_sssp.pipeline.fsnames import safe_name, shown
from gpu_sssp.pipeline.ingest import read_meta
from gpu_sssp.workflows.cli import main
from tests.conftest import DATA

BAD = os.fsdecode(b"na\xffme.gr")  # "na\udcffme.gr"


def _bad_names_allowed(tmp_path) -> bool:
    try:
        (tmp_path / os.fsdecode(b"probe\xff")).touch()
    except (OSError, UnicodeError):
        return False
    (tmp_path / os.fsdecode(b"probe\xff")).unlink()
    return True


@pytest.fixture
def bad_input(tmp_path):
    if not _bad_names_allowed(tmp_path):
        pytest.skip("this file system refuses names that are not UTF-8")
    p = tmp_path / BAD
    shutil.copy(DATA / "rome99.gr", p)
    return p


def test_safe_name_and_shown():
    assert safe_name("rome99.gr") == "rome99.gr"
    assert safe_name(BAD) == "input-" + hashlib.sha256(b"na\xffme.gr").hexdigest()[:8]
    safe_name(BAD).encode("utf-8")
    assert shown(BAD) == "na\ufffdme.gr" and shown("rome99.gr") == "rome99.gr"


def test_arrow_gets_a_name_it_can_open_not_a_python_file(tmp_path):
    """pyarrow is handed a name it can encode (``/proc/self/fd/N`` for the file opened
    here), never a Python file object (whose reads on Arrow's threads need the GIL):
    a Parquet file written and read back under a name that is not UTF-8."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpu_sssp.pipeline.fsnames import arrow_file, read_metadata, read_table

    if not _bad_names_allowed(tmp_path) or not os.path.isdir("/proc/self/fd"):
        pytest.skip("names that are not UTF-8, or /proc, not available here")
    path = tmp_path / os.fsdecode(b"t\xffable.parquet")
    table = pa.table({"x": list(range(1000))})
    with arrow_file(path, "wb") as sink:
        assert isinstance(sink, str) and sink.startswith("/proc/self/fd/")
        pq.write_table(table, sink)
    assert read_table(path).equals(table) and read_metadata(path).num_rows == 1000
    with arrow_file(path) as src:
        assert isinstance(src, str)
    assert os.listdir(tmp_path) == [path.name]


def test_solve_on_a_non_utf8_input_name(bad_input, tmp_path, capsys):
    out = tmp_path / os.fsdecode(b"r\xffes.parquet")
    assert main(["solve", str(bad_input), "-s", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3,353" in text
    cached = [f.name for f in (tmp_path / ".sssp-cache").iterdir() if f.name.endswith(".parquet")]
    assert len(cached) == 1 and cached[0].startswith(safe_name(BAD) + ".")
    assert read_meta(out)["method"]
    # a second run loads the cached copy (and its CSR cache) by the same safe name
    assert main(["solve", str(bad_input), "-s", "1"]) == 0
    assert [f.name for f in (tmp_path / ".sssp-cache").iterdir() if f.name.endswith(".parquet")] == cached


def test_solve_on_a_non_utf8_parquet_name(bad_input, tmp_path, capsys):
    pq_in = tmp_path / os.fsdecode(b"g\xff.parquet")
    assert main(["ingest", str(bad_input), "-o", str(pq_in), "-q"]) == 0
    assert main(["solve", str(pq_in), "-s", "1"]) == 0
    assert "3,353" in capsys.readouterr().out


def test_ingest_to_a_non_utf8_output(bad_input, tmp_path, monkeypatch, capsys):
    out = tmp_path / os.fsdecode(b"o\xff.parquet")
    assert main(["ingest", str(DATA / "rome99.gr"), "-o", str(out)]) == 0
    assert read_meta(out)["arcs"] == 8870
    assert "\ufffd" in capsys.readouterr().out  # the name printed, U+FFFD for its odd byte
    # the default output for such an input is such a name too
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", str(bad_input), "-q"]) == 0
    assert read_meta(tmp_path / os.fsdecode(b"na\xffme.parquet"))["vertices"] == 3353
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".tmp")]


def test_generate_to_a_non_utf8_output(tmp_path):
    if not _bad_names_allowed(tmp_path):
        pytest.skip("this file system refuses names that are not UTF-8")
    out = tmp_path / os.fsdecode(b"g\xff.parquet")
    assert main(["generate", "grid", "--rows", "4", "--cols", "5", "-o", str(out), "-q"]) == 0
    assert read_meta(out)["vertices"] == 20


def test_error_naming_a_non_utf8_file_prints_a_replacement_character(bad_input, tmp_path, capsys):
    junk = tmp_path / os.fsdecode(b"bad\xff.gr")
    junk.write_text("junk\n")
    assert main(["solve", str(junk), "-s", "1"]) == 2
    err = capsys.readouterr().err
    assert "bad\ufffd.gr" in err and "\\udcff" not in err and len(err.strip().splitlines()) == 1


def test_study_with_non_utf8_input_and_output_folder(bad_input, tmp_path, capsys):
    out = tmp_path / os.fsdecode(b"o\xffut")
    argv = ["study", str(bad_input), "--random", "10", "--cpu-workers", "1", "--no-dashboard",
            "--out", str(out), "--outputs", "stats,distances"]
    assert main(argv) == 0
    assert "o\ufffdut" in capsys.readouterr().out
    assert (out / "stats" / "batch-000000.parquet").is_file()
    assert (out / "distances" / "batch-000000.parquet").is_file()
    assert (out / "summary.json").is_file()
    # a resume reads the folder's Parquet files back
    assert main([*argv, "--resume"]) == 0
    assert "already done" in capsys.readouterr().out
