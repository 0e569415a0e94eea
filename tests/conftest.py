"""Shared test configuration: GPU tests skip without a device; paths to real data."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


def _shared_data() -> Path:
    """Real graph files: $SSSP_SHARED_DATA, else ./shared/data (the copy that travels to
    the GPU machine), else ../shared/data beside the checkout (CI)."""
    import os

    for cand in (os.environ.get("SSSP_SHARED_DATA"), REPO / "shared" / "data", REPO.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand).resolve()
    return (REPO.parent / "shared" / "data").resolve()


SHARED_DATA = _shared_data()


def pytest_collection_modifyitems(config, items):
    try:
        from gpu_sssp import kernels

        have_gpu = kernels.device_count() > 0
    except Exception:
        have_gpu = False
    if have_gpu:
        return
    skip = pytest.mark.skip(reason="no CUDA device visible")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def shared_data():
    """The real graph files beside the checkout (../shared/data); skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _sigint_reaches_the_commands():
    """The commands tests start get Ctrl-C's default disposition.  A test run
    started with SIGINT ignored (a background job of a non-interactive shell: ``(pytest
    &)``, ``nohup pytest &``) passes SIG_IGN on to every command, which then rightly keeps
    ignoring it, and the Ctrl-C tests (the study faults', the API's import-time
    interrupt) failed with status 0.  A handler set here (any
    handler: a caught signal is reset to the default at exec) gives them the default."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def cli_words():
    """The product's messages in the command line's words (``--zero-based``), as ``sssp``
    shows them: for modules that check the messages of pipeline functions the command
    line calls.  A Python caller reads Python's (``zero_based=True``): checked in
    tests/test_option_words.py and by the tests of the Python API."""
    from gpu_sssp.kernels.errors import speaking

    with speaking("cli"):
        yield
