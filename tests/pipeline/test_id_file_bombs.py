"""Sources and targets files that are small on disk and long once read (found by a
review, as a hostile or careless user would hand them over): a 408 KB gzip file of 209
million ``1`` lines given as ``--targets`` with ``--max-distance-bytes 1000`` took 42 s
and 6.7 GB of memory before the matrix's limit refused it; a 445 KB Parquet ``source``
column of 100 million ones took 4.2 GB.  The ids are now counted as they are read: the
matrix's limit and the memory available refuse such a file in one line, naming it,
before its ids are all held."""
from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest

from gpu_sssp.kernels import memory
from tests.pipeline.test_study_support import rome_parquet

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LINES = 10_000_000  # 20 MB of text, about 20 KB of gzip: five chunks of the reader


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    return rome_parquet(tmp_path_factory.mktemp("id-bombs"))


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    path = tmp_path_factory.mktemp("id-bombs-files") / "ones.txt.gz"
    with gzip.open(path, "wb", 6) as f:
        f.write(b"1\n" * LINES)
    assert path.stat().st_size < 200_000
    return path


def _counted(msg: str) -> int:
    import re

    m = re.search(r"at least ([\d,]+) targets", msg) or re.search(r"([\d,]+) \w+ ids or more", msg)
    assert m, msg
    return int(m.group(1).replace(",", ""))


def test_a_study_refuses_a_long_targets_file_before_reading_it_all(rome, bomb, tmp_path):
    """The CLI: one line naming the limit and the file, from the first chunk's count."""
    out = tmp_path / "s"
    r = subprocess.run([sys.executable, "-m", "gpu_sssp.workflows.cli", "study", str(rome), "--source", "1",
                        "--targets", str(bomb), "--max-distance-bytes", "1000", "--out", str(out),
                        "--no-dashboard"], capture_output=True, text=True, timeout=240)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith("error: the matrix would take at least ") and "above the limit of 1.0 KB" in lines[0]
    assert "raise it with --max-distance-bytes N with N above " in lines[0], lines[0]  # (a lower bound: no N given)
    assert f"those of {bomb} to line " in lines[0], lines[0]
    # the count is the file's up to there: said so (the limit it names was not enough)
    assert " (read no further: the whole file may take more), " in lines[0], lines[0]
    assert _counted(lines[0]) < LINES // 2, lines[0]  # stopped early, not after the whole file
    assert not out.exists()


def test_python_matrix_refuses_a_long_targets_file_early(rome, bomb):
    import gpu_sssp
    from gpu_sssp.kernels.errors import OutputTooLargeError

    with pytest.raises(OutputTooLargeError, match=r"^the matrix would take at least .* at least [\d,]+ targets, those "
                                                  r"of .*ones\.txt\.gz to line [\d,]+ \(read no further: the whole "
                                                  r"file may take more\), wide form.*max_distance_bytes=N\) "
                                                  r"with N above \d+"):
        gpu_sssp.matrix(gpu_sssp.load_graph(rome), [1], str(bomb), max_distance_bytes=1000)


def test_a_header_count_past_the_limit_is_refused_at_the_header(rome, tmp_path):
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    f = tmp_path / "t.ss.gz"  # (compressed: its text size is not known, the header's count is checked)
    f.write_bytes(gzip.compress(b"c targets\np aux sp ss 1000000000\ns 1\n"))
    with pytest.raises(StudyError, match=r"at least 1,000,000,000 targets, those of .*t\.ss\.gz \(its header, line 2\)"):
        study(rome, sources=[1], targets=str(f), out=tmp_path / "o", max_distance_bytes="1GB")
    assert not (tmp_path / "o").exists()


def test_a_header_count_the_file_cannot_hold_is_refused_by_its_size(rome, tmp_path):
    """A 27-byte file declaring 3e9 ids was refused by the matrix limit ("raise it
    with --max-distance-bytes") and then by memory ("reading them takes about 144.0
    GB"), neither of which the user can help; graph headers are checked against the file
    size.  Each id line takes 2 bytes or more."""
    import gpu_sssp
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_source_file
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    g = gpu_sssp.load_graph(rome)
    f = tmp_path / "t.ss"
    f.write_text("p aux sp ss 3000000000\ns 1\n")
    line = (r"t\.ss:1: header 'p aux sp ss 3000000000' announces 3,000,000,000 sources, but the file's 27 bytes hold "
            r"at most 14 \(file-size check: each id line takes at least 2 bytes\); the file is truncated or the header is wrong")
    with pytest.raises(InputError, match=line):
        read_source_file(f, g)
    with pytest.raises((InputError, StudyError), match=line.replace("sources", "targets")):
        study(rome, sources=[1], targets=str(f), out=tmp_path / "o", max_distance_bytes="1TB")
    f.write_text("p aux sp ss 14\n" + "1\n" * 14)  # a count the file holds: read as before
    assert len(read_source_file(f, g)) == 14


def test_more_source_ids_than_memory_holds_are_refused_as_they_are_read(rome, bomb, monkeypatch):
    """Also without a matrix: a sources file whose ids cannot be held here is refused
    at the line reached, before the rest is read (repeats are dropped only after)."""
    import gpu_sssp
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_source_file

    g = gpu_sssp.load_graph(rome)
    monkeypatch.setattr(memory, "available_memory", lambda: 150 << 20)  # 3M ids x 48 bytes do not fit
    with pytest.raises(InputError, match=r"^.*ones\.txt\.gz:[\d,]+: [\d,]+ source ids or more: reading them takes "
                                         r"about .* of memory, more than the 157\.3 MB available here") as e:
        read_source_file(bomb, g)
    assert _counted(str(e.value)) < LINES // 2
    monkeypatch.setattr(memory, "available_memory", lambda: 10 << 30)
    assert len(read_source_file(bomb, g)) == LINES  # what fits is read as before


def test_a_parquet_ids_file_is_counted_before_its_column_is_read(rome, tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import gpu_sssp
    from gpu_sssp.pipeline.errors import InputError
    from gpu_sssp.pipeline.sources import read_source_file

    f = tmp_path / "ones.ss.parquet"
    pq.write_table(pa.table({"source": pa.array(np.ones(3_000_000, np.int64))}), f, compression="zstd")
    assert f.stat().st_size < 1_000_000
    g = gpu_sssp.load_graph(rome)
    read = []
    import gpu_sssp.pipeline.fsnames as fsnames

    orig = fsnames.read_table
    monkeypatch.setattr(fsnames, "read_table", lambda *a, **k: read.append(a) or orig(*a, **k))
    monkeypatch.setattr(memory, "available_memory", lambda: 100 << 20)
    with pytest.raises(InputError, match=r"ones\.ss\.parquet: 3,000,000 source ids or more: reading them"):
        read_source_file(f, g)
    assert read == []  # refused from its row count: the column was never read
