"""`sssp study --targets ... --stats-over all`: the summary table names the targets too."""
from __future__ import annotations

import pytest

from tests.pipeline.test_study_support import grid_parquet
from tests.workflows.test_cli_study import main


@pytest.mark.parametrize("over, note", [("targets", "stats below over them"), ("all", "stats below over every vertex")])
def test_the_summary_table_names_the_targets_whatever_the_statistics_are_over(tmp_path, capsys, over, note):
    # with --stats-over all the table had no targets row at all
    graph = grid_parquet(tmp_path, 8, 8)
    argv = ["study", str(graph), "--random", "6", "--seed", "3", "--random-targets", "5", "--target-seed", "2",
            "--stats-over", over, "--cpu-workers", "1", "--no-dashboard", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [" ".join(x.replace("│", " ").split()) for x in out.splitlines() if x.startswith("│")]
    # the row (its note wraps in a narrow table)
    assert any(x.startswith("targets 5 5 distinct; stats") for x in rows), out
    assert note.split()[-1] in " ".join(rows), out


def test_an_empty_targets_name_names_the_option(tmp_path, capsys):
    """`sssp study G --targets ""` said 'targets: an empty name ...' (the Python
    parameter's word, since plan_targets shares id_choice) where it said '--targets:'."""
    g = grid_parquet(tmp_path)
    assert main(["study", str(g), "--random", "2", "--targets", "", "--cpu-workers", "1",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error: --targets: an empty name is neither 'all' nor a targets file" in err, err
    assert not (tmp_path / "out").exists()
