"""Fixtures of the command-line tests."""
from __future__ import annotations

import shutil

import pytest

from tests.pipeline.test_study_support import rome_source


@pytest.fixture
def rome99(tmp_path):
    """rome99.gr copied into tmp (so its ingest and hierarchy caches land there, not in
    the repository or the shared data folder)."""
    dst = tmp_path / "in" / "rome99.gr"
    dst.parent.mkdir()
    shutil.copy(rome_source(), dst)
    return dst
