"""An ingested or generated Parquet file is written only under a name ending in
``.parquet``: every reader takes a file as Parquet only under that name, so
``sssp generate grid ... -o grid.gr`` wrote a file that ``sssp study grid.gr`` then refused
("is a Parquet file (it starts with PAR1) ... rename it")."""
from __future__ import annotations

import os

import pytest

from gpu_sssp.kernels.errors import UsageError
from gpu_sssp.pipeline.generate import generate
from gpu_sssp.pipeline.ingest import ingest
from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("name, better", [("g.gr", "g.parquet"), ("g", "g.parquet"), ("s.ss", "s.ss.parquet"),
                                          ("g.parquet.tmp", "g.parquet.parquet")])
def test_the_cli_refuses_a_parquet_output_not_named_so(tmp_path, capsys, name, better):
    g = tmp_path / "in.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    out = tmp_path / name
    for argv in (["ingest", str(g), "-o", str(out), "-q"],
                 ["generate", "grid", "--rows", "2", "--cols", "2", "-o", str(out), "-q"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"-o {out}: the output is a Parquet file" in err, err
        assert f"give e.g. {tmp_path / better}" in err, err
        assert sorted(os.listdir(tmp_path)) == ["in.gr"]


def test_the_python_functions_refuse_it_in_their_words(tmp_path):
    g = tmp_path / "in.gr"
    g.write_text("p sp 3 2\na 1 2 5\na 2 3 5\n")
    with pytest.raises(UsageError, match=r"^out='.*x\.gr': the output is a Parquet file"):
        ingest(g, tmp_path / "x.gr")
    with pytest.raises(UsageError, match=r"^out='.*x\.gr': the output is a Parquet file"):
        generate("grid", tmp_path / "x.gr", rows=2, cols=2)
    assert sorted(os.listdir(tmp_path)) == ["in.gr"]
    assert ingest(g, tmp_path / "x.PARQUET")["vertices"] == 3  # any case, as the readers
