"""A scheduler file every user may rewrite is said (a client unpickles what its
scheduler sends: whoever rewrites the file could run code in the study's client)."""
from __future__ import annotations

import json
import logging
import os
import stat

import pytest

from gpu_sssp.pipeline.cluster import NetworkExposureWarning, _writable_by_others, start_cluster

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _file(folder, mode):
    f = folder / "sched.json"
    f.write_text(json.dumps({"address": "tcp://127.0.0.1:1"}))
    os.chmod(f, mode)
    return f


@pytest.mark.parametrize("file_mode, folder_mode, said", [
    (0o644, 0o755, None), (0o664, 0o775, None),  # the owner's, or a team's (group) file
    (0o666, 0o755, "can be written by every user"), (0o646, 0o755, "can be written by every user"),
    (0o644, 0o777, "in a folder every user"), (0o644, 0o1777, None),  # /tmp-like: the sticky bit
])
def test_who_may_rewrite_the_scheduler_file(tmp_path, file_mode, folder_mode, said):
    folder = tmp_path / "d"
    folder.mkdir()
    f = _file(folder, file_mode)
    os.chmod(folder, folder_mode)
    try:
        lines = _writable_by_others(f)
    finally:
        os.chmod(folder, 0o755)
    if said is None:
        assert lines == []
    else:
        assert len(lines) == 1 and said in lines[0] and str(f) in lines[0] and "\n" not in lines[0]
        shown = file_mode if "can be written" in said else folder_mode
        assert f"mode {stat.S_IMODE(shown):o}" in lines[0]


def test_attaching_through_a_world_writable_scheduler_file_warns(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.ERROR) as c:
        f = tmp_path / "sched.json"
        f.write_text(json.dumps({"address": c.scheduler_address}))
        os.chmod(f, 0o666)
        with pytest.warns(NetworkExposureWarning, match="can be written by every user"):
            h = start_cluster(scheduler_file=str(f))
        try:
            assert h.mode == "attached" and any("chmod o-w" in x for x in h.info["exposed"])
        finally:
            h.client.close()
        os.chmod(f, 0o644)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error", NetworkExposureWarning)
            h = start_cluster(scheduler_file=str(f))
        h.client.close()
