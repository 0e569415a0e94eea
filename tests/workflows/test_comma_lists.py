"""Comma lists with an empty item (``--methods dijkstra,,phast``): refused in one line
naming the option, before any graph is read.  They were skipped without a word, so a
list that lost an item to a typo (``stats,,distances`` where ``stats,dist,distances``
was meant) ran without telling."""
import pytest

from gpu_sssp.kernels.errors import UsageError, comma_items
from gpu_sssp.workflows.cli import main


@pytest.mark.parametrize("text, items", [("a", ["a"]), ("a, b", ["a", "b"]), (" a ,b ", ["a", "b"]),
                                         ("", []), ("  ", [])])
def test_items_and_lists_of_nothing(text, items):
    assert comma_items(text, "--methods") == items


# (',' and ' , ': a list of empty items, refused as 'hbf,' is: --ablation ',' ran with no
# ablation without a word)
@pytest.mark.parametrize("text", ["a,,b", "a,", ",a", "a, ,b", ",", " , "])
def test_an_empty_item_is_refused(text):
    with pytest.raises(UsageError, match=r"an empty item in the list") as exc:
        comma_items(text, "--methods")
    assert repr(text) in str(exc.value)


@pytest.mark.parametrize("argv, option", [
    (["study", "{g}", "--out", "{o}", "--outputs", "stats,,distances"], "--outputs"),
    (["study", "{g}", "--out", "{o}", "--outputs", "distances,"], "--outputs"),
    (["verify", "{g}", "--methods", "dijkstra,,bellman-ford"], "--methods"),
    (["bench", "{g}", "--out", "{o}", "--algorithms", "dijkstra,"], "--algorithms"),
    (["bench", "{g}", "--out", "{o}", "--algorithms", "cpu", "--exclude", ",dijkstra"], "--exclude"),
    (["bench", "{g}", "--out", "{o}", "--algorithms", "cpu", "--baselines", "scipy,,networkit"], "--baselines"),
    (["bench", "{g}", "--out", "{o}", "--algorithms", "cpu", "--locality-k", "1,,4"], "--locality-k"),
])
def test_the_commands_refuse_it_before_the_graph_is_read(tmp_path, capsys, argv, option):
    graph = tmp_path / "missing.gr"  # never read: the list's line comes first
    out = tmp_path / "o"
    rc = main([a.format(g=graph, o=out) for a in argv])
    cap = capsys.readouterr()
    assert rc == 2, cap
    assert cap.err.startswith(f"error: {option} ") and "an empty item in the list" in cap.err, cap.err
    assert len(cap.err.splitlines()) == 1 and "missing.gr" not in cap.err
    assert not out.exists()


def test_python_callers_read_their_keyword(tmp_path):
    from gpu_sssp.pipeline.cluster import parse_gpus
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.plan import parse_outputs

    with pytest.raises(StudyError, match=r"^outputs= 'stats,,distances': an empty item"):
        parse_outputs("stats,,distances")
    with pytest.raises(UsageError, match=r"^gpus= '0,,1': an empty item"):
        parse_gpus("0,,1")
    assert parse_gpus("0, 1") == "0,1" and parse_outputs("distances, stats") == ("stats", "distances")
