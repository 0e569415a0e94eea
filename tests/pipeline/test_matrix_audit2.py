"""Found by an adversarial audit of matrix studies (``--targets``), as a user of OSRM's
table service would test them: resuming with other targets is refused in the user's
terms (the option that differs, or a targets file whose content changed under the same
name), not by two digests; ``stats_over`` / ``matrix_form`` that only compare equal to
a value (a NumPy array of one string) are refused, not written into the manifest."""
from __future__ import annotations


import pytest

from tests.pipeline.test_study_support import cpu_client, rome_parquet

# the messages in the command line's words (--stats-over), as sssp shows them
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.usefixtures("cli_words")]


@pytest.fixture(scope="module")
def client():
    yield from cpu_client(1)


@pytest.fixture(scope="module")
def rome(tmp_path_factory):
    return rome_parquet(tmp_path_factory.mktemp("matrix-audit2-data"))


def _refusal(path, **kw):
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    with pytest.raises(StudyError) as e:
        study(path, resume=True, **kw)
    return str(e.value)


def test_resume_with_a_changed_targets_file_says_so(client, rome, tmp_path):
    """The targets file edited between the run and its resume (same name): the refusal
    said only ``targets_digest: folder has 'a7d24c40ec30c438', asked '82ededf5793b80ca'``
    - nothing a user gave.  It names the file, says its content changed, and how to go
    on with the study's own targets."""
    from gpu_sssp.pipeline.study.run import study

    tfile = tmp_path / "tg.txt"
    tfile.write_text("5\n3\n5\n1\n")
    out = tmp_path / "m"
    kw = dict(ids=[3, 10], targets=str(tfile), out=out)
    study(rome, client=client, **kw)
    tfile.write_text("5\n3\n5\n2\n")  # same name, same count, another target
    msg = _refusal(rome, client=client, **kw)
    assert "targets_digest" not in msg, msg
    assert f"did the targets file {tfile} change?" in msg and "resume without --targets" in msg, msg
    assert str(out / "targets.parquet") in msg, msg
    # and without the targets the study goes on with its own (targets.parquet)
    s = study(rome, client=client, resume=True, ids=[3, 10], out=out)
    assert s["complete"] and s["targets"] == 4


def test_resume_with_other_random_targets_names_the_option(client, rome, tmp_path):
    """``--random-targets 20`` given again without the study's ``--target-seed 5`` (the
    default seed 1 draws others): the refusal named two digests; it names the seed, and
    the count where that differs, as a resume with other sources names ``--seed``."""
    from gpu_sssp.pipeline.study.run import study

    out = tmp_path / "r"
    study(rome, client=client, random=4, random_targets=20, target_seed=5, out=out)
    msg = _refusal(rome, client=client, random=4, random_targets=20, out=out)
    assert "--target-seed: folder has 5, asked 1" in msg and "targets_digest" not in msg, msg
    msg = _refusal(rome, client=client, random=4, random_targets=21, target_seed=5, out=out)
    assert "number of targets: folder has 20, asked 21" in msg and "targets_digest" not in msg, msg
    assert "targets_count" not in msg, msg
    # another kind of targets: each side said whole (it said "--targets: folder has None,
    # asked 't.txt'; --target-seed: folder has 5, asked None")
    tfile = tmp_path / "t.txt"
    tfile.write_text("5\n3\n")
    msg = _refusal(rome, client=client, random=4, targets=str(tfile), out=out)
    assert (f"targets: the folder's study has 20 targets (random, seed 5), asked 2 targets (file {tfile}) "
            "(resume without --targets and --random-targets to go on with the study's own") in msg, msg
    assert "None" not in msg, msg


@pytest.mark.parametrize("option", ["stats_over", "matrix_form"])
def test_an_array_for_stats_over_or_matrix_form_is_refused(rome, tmp_path, option):
    """``study(..., stats_over=np.array(["all"]))`` passed the check (``in`` compares
    with ``==``: NumPy's ``[True]``), then the manifest could not be written: a JSON
    traceback ("Object of type ndarray is not JSON serializable").  A NumPy ``str_``
    is a string and is taken, as a plain one."""
    import numpy as np

    from gpu_sssp.pipeline.graph import read_parquet
    from gpu_sssp.pipeline.sources import plan_sources
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.plan import plan_study
    from gpu_sssp.pipeline.targets import plan_targets

    g = read_parquet(rome)
    sp, tp = plan_sources(g, ids=[1, 2]), plan_targets(g, targets=[1, 2])
    value = "all" if option == "stats_over" else "long"
    with pytest.raises(StudyError, match=f"--{option.replace('_', '-')} must be"):
        plan_study(g, str(rome), sp, out=tmp_path / "o", targets=tp, **{option: np.array([value])})
    plan = plan_study(g, str(rome), sp, out=tmp_path / "o", targets=tp, **{option: np.str_(value)})
    assert type(getattr(plan, option)) is str and getattr(plan, option) == value
    assert type(plan.identity[option]) is str


@pytest.mark.parametrize("targets", [["--targets", "all"], ["--random-targets", "5"]])
def test_distance_form_in_a_matrix_study_points_to_matrix_form(rome, tmp_path, capsys, targets):
    """``--targets all --distance-form long`` (the matrix's form meant) was refused as
    "a study of statistics only writes no distance files": not what the study was, nor
    the option wanted.  It names ``--matrix-form``; nothing is left behind."""
    from gpu_sssp.workflows.cli import main

    out = tmp_path / "o"
    rc = main(["study", str(rome), "--source", "1", *targets, "--distance-form", "long", "--out", str(out),
               "--cpu-workers", "1", "--no-dashboard"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "--matrix-form wide|long" in err[0] and "statistics only" not in err[0], err
    assert not out.exists()


@pytest.mark.parametrize("kw, said", [
    ({"ids": [1, 2], "targets": [1, 2]}, "its form is --matrix-form wide|long"),
    ({"ids": [1, 2]}, "a study of statistics only writes no distance files"),
])
def test_the_python_study_refuses_a_distance_form_it_would_not_use(tmp_path, rome, client, kw, said):
    """``study(distance_form="wide")`` without distance outputs was taken without a word
    (the command line refused it; one rule now, ``plan.refuse_idle_distance_form``)."""
    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    with pytest.raises(StudyError, match="--distance-form goes with --outputs distances or predecessors") as e:
        study(rome, distance_form="wide", out=tmp_path / "s", client=client, **kw)
    assert said in str(e.value)
    assert not (tmp_path / "s" / "manifest.json").exists()


@pytest.mark.parametrize("option", ["stats_over", "matrix_form"])
def test_an_array_of_two_values_is_refused_in_the_options_words(tmp_path, rome, client, option):
    """``study(stats_over=np.array(["all", "targets"]))``: NumPy's "truth value of an
    array ... is ambiguous" (``stats_over or <the folder's>``), not the option's refusal."""
    import numpy as np

    from gpu_sssp.pipeline.study import StudyError
    from gpu_sssp.pipeline.study.run import study

    value = np.array(["all", "targets"] if option == "stats_over" else ["wide", "long"])
    with pytest.raises(StudyError) as e:
        study(rome, ids=[1, 2], targets=[1, 2], out=tmp_path / "s", client=client, **{option: value})
    assert "ambiguous" not in str(e.value)
