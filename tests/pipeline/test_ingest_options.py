"""Bad ingestion options (``--weights``): one line naming the option and the expected
form, exit status 2, never a traceback."""
from __future__ import annotations

import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline.graph import load_graph
from gpu_sssp.pipeline.ingest import ingest, parse_weights_spec
from gpu_sssp.workflows.cli import main

# the messages of the pipeline functions the command line calls, in its words (--zero-based)
pytestmark = pytest.mark.usefixtures("cli_words")

BAD_SPECS = [
    ("bogus", "expected file, unit, random:LO:HI:SEED"),
    ("random:5:1:1", "HI 1 is below LO 5"),
    ("random:1:10", "3 values after 'random:', found 2"),
    ("random:a:b:c", "LO 'a' is not an integer"),
    ("random:1:99999999999999999999999:7", "HI 99999999999999999999999 does not fit in 64 bits"),
    ("random-float:0:nan:1", "HI 'nan' is not a finite number"),
    ("random-float:0:inf:1", "HI 'inf' is not a finite number"),
    ("random-float:-1e308:1e308:1", "HI - LO overflows float64"),
    ("random:1:10:-1", "SEED -1 is negative"),
    ("random:1:10:x", "SEED 'x' is not a whole number"),
]


@pytest.mark.parametrize("spec,why", BAD_SPECS)
def test_bad_weights_spec_is_one_line(tmp_path, capsys, spec, why):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    with pytest.raises(UsageError) as ei:
        parse_weights_spec(spec)
    msg = str(ei.value)
    assert msg.startswith(f"--weights {spec}: ") and why in msg and "\n" not in msg
    assert "LO:HI:SEED" in msg
    with pytest.raises(UsageError, match=f"--weights {spec}: "):
        ingest(g, tmp_path / "out.parquet", weights=spec)
    with pytest.raises(UsageError):
        load_graph(g, weights=spec)
    assert not (tmp_path / ".sssp-cache").exists()
    for argv in (["ingest", str(g), "-o", str(tmp_path / "o.parquet"), "--weights", spec],
                 ["solve", str(g), "-s", "1", "--weights", spec]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and f"--weights {spec}: " in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.gr"]


def test_good_weights_specs():
    assert parse_weights_spec(None) == ("file", None, None)
    assert parse_weights_spec("unit") == ("unit", None, None)
    assert parse_weights_spec("random:1:10:7") == ("random", (1, 10), 7)
    assert parse_weights_spec("random-float:0.5:2:7") == ("random-float", (0.5, 2.0), 7)


def test_random_weights_up_to_int64_max(tmp_path):
    g = tmp_path / "g.gr"
    g.write_text("p sp 1 1\na 1 1 1\n")  # one vertex: any int64 weight is exact
    meta = ingest(g, tmp_path / "o.parquet", weights=f"random:{2**63 - 2}:{2**63 - 1}:1")
    assert meta["weight_min"] >= 2**63 - 2


# -- the text chunk size (audit 3, C7: --chunk-mb 0 and -1 were accepted) ------------------
@pytest.mark.parametrize("mb", ["0", "-1", "1025", "99999999999"])
def test_bad_chunk_mb_is_a_usage_error(tmp_path, capsys, mb):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    assert main(["ingest", str(g), "-o", str(tmp_path / "o.parquet"), "--chunk-mb", mb]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"--chunk-mb {mb}: expected a whole number from 1 to 1,024" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.gr"]


@pytest.mark.parametrize("chunk", [0, -1, (1 << 30) + 1, 2.5, True, "16"])
def test_bad_chunk_bytes_refused_by_the_api(tmp_path, chunk):
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    with pytest.raises(UsageError, match=r"^chunk_bytes .*: expected a whole number from 1 to 1,073,741,824"):
        ingest(g, tmp_path / "o.parquet", chunk_bytes=chunk)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.gr"]


def test_chunk_sizes_at_the_bounds_accepted(tmp_path):
    from gpu_sssp.pipeline.ingest import check_chunk_bytes

    check_chunk_bytes(1 << 30)  # (not ingested: a chunk buffer of 1 GiB would be allocated)
    check_chunk_bytes(1024, "--chunk-mb", 1 << 20)
    g = tmp_path / "g.gr"
    g.write_text("p sp 3 2\na 1 2 1\na 2 3 1\n")
    assert ingest(g, tmp_path / "o.parquet", chunk_bytes=1)["arcs"] == 2
    assert main(["ingest", str(g), "-o", str(tmp_path / "o.parquet"), "--chunk-mb", "1", "-q"]) == 0
