"""Settings: explicit argument, then dask config (``sssp.*`` keys), then the default.

The defaults live in ``pipeline/sssp.yaml`` (shipped with the package) and are merged
into ``dask.config`` once, at import, under any user setting.
"""
from __future__ import annotations

import logging
from pathlib import Path

import dask.config
import yaml

log = logging.getLogger(__name__)

_MISSING = object()


def _load_defaults() -> dict:
    # a path beside this file: works for namespace and regular packages alike
    text = (Path(__file__).resolve().parent / "sssp.yaml").read_text()
    return yaml.safe_load(text) or {}


DEFAULTS = _load_defaults()
dask.config.update_defaults(DEFAULTS)


def setting(key: str, explicit=None, default=_MISSING):
    """The value of ``sssp.<key>``: ``explicit`` when not None, else dask config.

    Parameters
    ----------
    key : str
        Dotted key below ``sssp``, e.g. ``"study.batch-size"``.
    explicit : object, optional
        A value given by the caller (command-line option, function argument).
    default : object, optional
        Returned when the key is not configured at all.

    Raises
    ------
    KeyError
        The key is unknown and no default was given.
    """
    if explicit is not None:
        return explicit
    if default is _MISSING:
        return dask.config.get(f"sssp.{key}")
    return dask.config.get(f"sssp.{key}", default=default)
