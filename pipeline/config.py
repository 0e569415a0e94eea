"""Settings: explicit argument, then dask config (``sssp.*`` keys), then the default.

The defaults live in ``pipeline/sssp.yaml`` (shipped with the package) and are merged
into ``dask.config`` once, at import, under any user setting.

Every key is declared in :data:`SPECS` with what it takes; :func:`setting` checks and
converts a configured value (``"no"`` from an environment variable is ``False``,
``"20GB"`` is ``20_000_000_000``) and refuses a bad one with a :class:`SettingError`
that names the key, where the value came from (``DASK_SSSP__...`` environment variable,
dask config file, or dask config set at run time), the value and what is expected.
:func:`check_settings` does that for every key at once (the command line at its start,
``study()`` before any folder or cluster exists), refuses a section that is not a
mapping (``sssp: {study: 5}``) and warns about unknown keys (a typo, or a key of another
version), naming the closest known one.  Explicit values (command-line options,
function arguments) are returned as given: their callers check them, with messages that
name the option.
"""
from __future__ import annotations

import ast
import difflib
import ipaddress
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from gpu_sssp.kernels.memory import parse_bytes
from gpu_sssp.pipeline.errors import SettingError

log = logging.getLogger(__name__)

_MISSING = object()
_ABSENT = object()  # a key not configured at all


def _malformed_config_file(exc: ValueError) -> str:
    """One line for dask's refusal of a config file it reads at import: the file, and
    the line and column of a YAML error."""
    text = str(exc)
    m = re.match(r"A dask config file at (['\"])(.*?)\1 is malformed", text)
    if m is None:
        return "dask config: " + text
    try:
        path = ast.literal_eval(m.group(1) + m.group(2) + m.group(1))  # dask shows it with !r
    except (ValueError, SyntaxError):
        path = m.group(2)
    try:
        with open(path) as f:
            tree = yaml.safe_load(f)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else path
        why = err.problem or str(err)
        if err.context:
            cm = err.context_mark
            why += f" ({err.context}" + (f" from line {cm.line + 1}, column {cm.column + 1})" if cm else ")")
        return f"dask config file {where}: not valid YAML: {why}"
    except Exception as err:
        return f"dask config file {path}: cannot be read: {err}"
    return (f"dask config file {path}: a config file holds a mapping of keys at its top level "
            f"(e.g. 'sssp: {{study: {{batch-size: 128}}}}'), got a {type(tree).__name__}")


try:
    import dask.config
except ValueError as _exc:  # dask reads its config files as it is imported: a malformed one stops it
    if "dask config file" not in str(_exc):
        raise
    raise SettingError(_malformed_config_file(_exc)) from None


def _load_defaults() -> dict:
    # a path beside this file: works for namespace and regular packages alike
    text = (Path(__file__).resolve().parent / "sssp.yaml").read_text()
    return yaml.safe_load(text) or {}


DEFAULTS = _load_defaults()
dask.config.update_defaults(DEFAULTS)


# -- what each key takes ---------------------------------------------------------------

_NULLS = ("none", "null", "")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _whole(v) -> int:
    """A whole number: an int, an integral float (``1e3``) or such a string."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        if re.fullmatch(r"[+-]?[0-9]+", s):
            return int(s)
        if not s.isascii():  # float() reads "\u0663" (Arabic-Indic 3) as 3.0
            raise ValueError(v)
        v = float(s)
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    raise ValueError(v)


def _at_least(lo, convert):
    def check(v):
        n = convert(v)
        if n < lo:
            raise ValueError(v)
        return n
    return check


def _size(v) -> int:
    """A byte size: an int as it is, else what ``--max-distance-bytes`` takes (``parse_bytes``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(v)
    return v if isinstance(v, int) else parse_bytes(v)


def _seconds(v) -> float:
    from dask.utils import parse_timedelta

    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, str):
        try:
            v = parse_timedelta(v.strip(), default="seconds")
        except (KeyError, ValueError, TypeError, IndexError):
            raise ValueError(v) from None
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(v)
    return float(v)


def _bool(v) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    raise ValueError(v)


def _choice(*options):
    def check(v):
        if isinstance(v, str) and v.strip().lower() in options:
            return v.strip().lower()
        raise ValueError(v)
    return check


def _optional(convert):
    def check(v):
        if v is None or (isinstance(v, str) and v.strip().lower() in _NULLS):
            return None
        return convert(v)
    return check


def _batch_size(v):
    if v is None or (isinstance(v, str) and v.strip().lower() in ("auto", *_NULLS)):
        return "auto"
    return _at_least(1, _whole)(v)


_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def valid_host(text) -> bool:
    """Whether ``text`` has the form of an interface address: an IPv4 or IPv6 address
    (``[::1]`` too) or a host name (dot-separated labels of letters, digits and ``-``).
    Dotted numbers that are not an IPv4 address (``999.1.1.1``) are neither."""
    if not isinstance(text, str) or not text.strip():
        return False
    h = text.strip()
    bracketed = h.startswith("[") and h.endswith("]")
    try:
        ipaddress.ip_address(h[1:-1] if bracketed else h)
        return True
    except ValueError:
        pass
    if bracketed or len(h) > 253 or re.fullmatch(r"[0-9.]+", h):
        return False
    return all(_LABEL.fullmatch(label) for label in h.removesuffix(".").split("."))


def _host(v) -> str:
    if isinstance(v, str) and valid_host(v):
        return v.strip()
    raise ValueError(v)


def valid_address(text) -> bool:
    """Whether ``text`` is ``HOST:PORT`` or ``:PORT`` (port 0-65535, HOST a
    :func:`valid_host`)."""
    if not isinstance(text, str) or ":" not in text:
        return False
    host, port = text.strip().rsplit(":", 1)
    return port.isdigit() and int(port) <= 65535 and (host == "" or valid_host(host))


def _address(v) -> str:
    if isinstance(v, str) and valid_address(v):
        return v.strip()
    raise ValueError(v)


@dataclass(frozen=True)
class Spec:
    """What one key takes: ``convert`` returns the value to use or raises
    ``ValueError``/``TypeError``; ``expected`` says what it takes, for the message."""

    convert: Callable[[object], object]
    expected: str


_WHOLE = "a whole number"
_BOOL = "true or false (yes/no, on/off, 1/0)"


def _bytes(lo: int, n: int) -> str:
    return f"a byte size >= {lo} such as {n * 10**9}, {n}e9, {n}GB or 1.5GiB"


def _seconds_at_least(note: str = "") -> str:
    return f"seconds >= 0{note}: a number, or a duration such as 500us, 2ms, 2m"


SPECS: dict[str, Spec] = {
    "study.batch-size": Spec(_batch_size, f"auto or {_WHOLE} >= 1"),
    "study.schedule": Spec(_choice("guided", "batch"), "guided or batch"),
    "study.chunk-bytes": Spec(_at_least(1, _size), _bytes(1, 2)),
    "study.max-distance-bytes": Spec(_at_least(0, _size), _bytes(0, 20)),
    "study.distance-form": Spec(_choice("long", "wide"), "long or wide"),
    "study.stats-over": Spec(_choice("targets", "all"), "targets or all"),
    "study.matrix-form": Spec(_choice("wide", "long"), "wide or long"),
    "study.order": Spec(_choice("locality", "given"), "locality or given"),
    "study.retries": Spec(_at_least(0, _whole), f"{_WHOLE} >= 0"),
    "study.fsync": Spec(_bool, _BOOL),
    "study.keep-graph": Spec(_bool, _BOOL),
    "study.prompt-streams": Spec(_bool, _BOOL),
    "study.stream-interval": Spec(_at_least(0, _seconds), _seconds_at_least()),
    "study.ready-wait": Spec(_at_least(0, _seconds), _seconds_at_least(" (0: no wait)")),
    "study.lost-client-grace": Spec(_at_least(0, _seconds), _seconds_at_least()),
    "cluster.cpu-workers": Spec(_optional(_at_least(1, _whole)), f"{_WHOLE} >= 1, or null (one per core)"),
    "cluster.host": Spec(_optional(_host), "an interface address: an IP address such as 127.0.0.1 or "
                         "0.0.0.0, or a host name (null: 127.0.0.1)"),
    "cluster.dashboard-address": Spec(_optional(_address), "HOST:PORT or :PORT (port 0-65535), "
                                      "or null (port 8787 on the cluster's host)"),
    "cluster.threads-per-gpu": Spec(_at_least(1, _whole), f"{_WHOLE} >= 1"),
    "cluster.join-wait": Spec(_at_least(0, _seconds), _seconds_at_least(" (0: no limit)")),
    "ingest.max-vertices": Spec(_optional(_at_least(0, _whole)), f"{_WHOLE} >= 0, or null (no limit)"),
    "ingest.max-arcs": Spec(_optional(_at_least(0, _whole)), f"{_WHOLE} >= 0, or null (no limit)"),
    "ingest.max-isolated-vertices": Spec(_optional(_at_least(0, _whole)), f"{_WHOLE} >= 0, or null (no limit)"),
}
SECTIONS = tuple(dict.fromkeys(k.split(".", 1)[0] for k in SPECS))


def _flat(tree: Mapping, prefix: str = "") -> dict:
    out = {}
    for k, v in tree.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


DEFAULT_VALUES = _flat(DEFAULTS.get("sssp", {}))


# -- where a value came from -------------------------------------------------------------

def _norm(name) -> str:
    return str(name).replace("_", "-")


class _Shape(Exception):
    """A section on the way to a key is not a mapping."""

    def __init__(self, parts, node):
        self.parts, self.node = list(parts), node


def _find(tree, parts):
    """The value at ``parts`` in ``tree`` looked up as dask does (a key written with
    ``-`` or ``_``), :data:`_ABSENT` if not there; :class:`_Shape` for a section that is
    not a mapping (``None`` counts as empty)."""
    node = tree
    for i, part in enumerate(parts):
        if node is None:
            return _ABSENT
        if not isinstance(node, Mapping):
            raise _Shape(parts[:i], node)
        k = dask.config.canonical_name(part, node)
        if k not in node:
            return _ABSENT
        node = node[k]
    return node


def _env_var(parts):
    """``(name, text)`` of the environment variable that sets ``parts``
    (``DASK_SSSP__STUDY__BATCH_SIZE`` for ``sssp.study.batch-size``), or ``None``."""
    want = ".".join(_norm(p) for p in parts)
    for name, text in os.environ.items():
        if name.startswith("DASK_") and _norm(name[5:].lower().replace("__", ".")) == want:
            return name, text
    return None


def _yaml_files():
    try:
        return list(dask.config.collect_yaml(dask.config.paths, return_paths=True))
    except Exception:  # a file that cannot be read again: no attribution from files
        return []


def _origin(parts, value) -> tuple[str, str]:
    """``(where the value at parts came from, the value as shown)``: the environment
    variable that holds it, else the last dask config file that holds it, else dask
    config set at run time."""
    env = _env_var(parts)
    if env is not None and dask.config.interpret_value(env[1]) == value:
        return f"from the environment variable {env[0]}", repr(env[1])
    where = None
    for path, tree in _yaml_files():
        try:
            if _find(tree, parts) == value:
                where = path
        except _Shape:
            pass
    if where is not None:
        return f"from the dask config file {where}", repr(value)
    return "from dask config", repr(value)


def _shape_error(parts, node, origin=None) -> SettingError:
    dotted = ".".join(parts)
    if len(parts) == 1:
        wants = "a mapping of sections (" + ", ".join(f"sssp.{s}" for s in SECTIONS) + ")"
    else:
        section = _norm(parts[1])
        keys = [k.split(".", 1)[1] for k in SPECS if k.startswith(section + ".")]
        wants = f"a mapping of settings ({', '.join(keys)})"
    where, shown = origin or _origin(parts, node)
    return SettingError(f"setting {dotted}: expected {wants}, got {shown} ({where})")


def _configured(key: str):
    parts = ["sssp", *key.split(".")]
    try:
        return _find(dask.config.config, parts)
    except _Shape as s:
        raise _shape_error(s.parts, s.node) from None


def _convert(key: str, value):
    spec = SPECS[key]
    try:
        return spec.convert(value)
    except (ValueError, TypeError):
        where, shown = _origin(["sssp", *key.split(".")], value)
        raise SettingError(f"setting sssp.{key}: expected {spec.expected}, got {shown} ({where})") from None


def refuse_setting(key: str, problem: str) -> SettingError:
    """The :class:`SettingError` for ``sssp.<key>``'s configured value when it has the
    right form but cannot be used here (``problem``: a host name that does not resolve,
    ``pipeline.cluster.listen_addresses``): ``setting sssp.<key>: <value> (<where it came
    from>): <problem>``."""
    value = _configured(key)
    if value is _ABSENT:
        value = DEFAULT_VALUES.get(key)
    where, shown = _origin(["sssp", *key.split(".")], value)
    return SettingError(f"setting sssp.{key}: {shown} ({where}): {problem}")


def describe_setting(key: str) -> str:
    """``setting sssp.<key> <value> (<where it came from>)``: how a message names a value
    that came from dask config, not from an option (the study's note on what a local
    cluster exposes, ``pipeline.cluster``)."""
    value = _configured(key)
    if value is _ABSENT:
        value = DEFAULT_VALUES.get(key)
    where, shown = _origin(["sssp", *key.split(".")], value)
    return f"setting sssp.{key} {shown} {where}"


def setting(key: str, explicit=None, default=_MISSING):
    """The value of ``sssp.<key>``: ``explicit`` when not None, else dask config's,
    checked and converted (:data:`SPECS`).

    Parameters
    ----------
    key : str
        Dotted key below ``sssp``, e.g. ``"study.batch-size"``; one of :data:`SPECS`.
    explicit : object, optional
        A value given by the caller (command-line option, function argument),
        returned as it is: the caller checks it.
    default : object, optional
        Returned when the key is not configured at all (a section replaced by
        ``dask.config.set``); without it, the shipped default.

    Raises
    ------
    SettingError
        The configured value is not what the key takes (or a section on the way is
        not a mapping); the message names the key, the value and where it came from.
    KeyError
        ``key`` is not declared in :data:`SPECS` (a bug).
    """
    if explicit is not None:
        return explicit
    if key not in SPECS:
        raise KeyError(f"sssp.{key} is not a declared setting (pipeline.config.SPECS)")
    value = _configured(key)
    if value is _ABSENT:
        if default is not _MISSING:
            return default
        value = DEFAULT_VALUES[key]
    return _convert(key, value)


# -- every key at once ---------------------------------------------------------------

_warned: set[str] = set()


def _closest(dotted: str) -> str | None:
    """The known key (or section) nearest ``dotted`` (below ``sssp``), or ``None``."""
    dotted = dotted.lower()
    leaf = dotted.rsplit(".", 1)[-1]
    by_leaf = {k.split(".", 1)[1]: k for k in SPECS}
    if "." in dotted and leaf in by_leaf:  # a key put in the wrong section
        return by_leaf[leaf]
    got = difflib.get_close_matches(dotted, list(SPECS) + list(SECTIONS), n=1, cutoff=0.6)
    if got:
        return got[0]
    got = difflib.get_close_matches(leaf, list(by_leaf), n=1, cutoff=0.8)
    return by_leaf[got[0]] if got else None


def _warn_unknown(parts, value) -> None:
    dotted = ".".join(str(p) for p in parts)
    if dotted in _warned:
        return
    _warned.add(dotted)
    where, _ = _origin(parts, value)
    best = _closest(".".join(_norm(p) for p in parts[1:]))
    hint = f"did you mean sssp.{best}?" if best else \
        "known settings: " + ", ".join(f"sssp.{s}.*" for s in SECTIONS)
    log.warning("unknown setting %s (%s) is ignored; %s", dotted, where, hint)


def _unknown_keys(tree) -> None:
    if not isinstance(tree, Mapping):
        return
    for s, section in tree.items():
        if _norm(s) not in SECTIONS:
            leaves = _flat(section) if isinstance(section, Mapping) and section else {"": section}
            for leaf, v in leaves.items():
                _warn_unknown(["sssp", s, *([*leaf.split(".")] if leaf else [])], v)
        elif isinstance(section, Mapping):
            for k, v in section.items():
                if f"{_norm(s)}.{_norm(k)}" not in SPECS:
                    _warn_unknown(["sssp", s, k], v)


def _shapes(tree, origin=None) -> None:
    """Refuse ``sssp`` or a known section of ``tree`` that is not a mapping."""
    if not isinstance(tree, Mapping):
        return
    k = dask.config.canonical_name("sssp", tree)
    if k not in tree or tree[k] is None:
        return
    top = tree[k]
    if not isinstance(top, Mapping):
        raise _shape_error(["sssp"], top, origin and origin(["sssp"], top))
    for s, section in top.items():
        if _norm(s) in SECTIONS and section is not None and not isinstance(section, Mapping):
            raise _shape_error(["sssp", s], section, origin and origin(["sssp", s], section))


def check_settings() -> dict:
    """Check every ``sssp.*`` setting now; return ``{key: value}`` (converted).

    Called by the command line as it starts and by ``study()`` on entry, so that a bad
    setting stops them before any study folder or cluster exists, whichever key it is.
    Unknown keys under ``sssp`` are logged as warnings (once each), naming the closest
    known key: they are ignored, so that a file written for another version still works.

    Raises
    ------
    SettingError
        A value that is not what its key takes, or ``sssp`` or one of its sections that
        is not a mapping, in the dask config or in any of its sources (a YAML file, the
        environment: a merge can put the default section back over a wrong one).
    """
    _shapes(dask.config.config)
    for path, tree in _yaml_files():
        _shapes(tree, lambda parts, node, path=path: (f"from the dask config file {path}", repr(node)))

    def from_env(parts, node):
        env = _env_var(parts)
        return (f"from the environment variable {env[0]}", repr(env[1])) if env else ("from the environment", repr(node))

    _shapes(dask.config.collect_env(), from_env)
    top = dask.config.config.get(dask.config.canonical_name("sssp", dask.config.config))
    _unknown_keys(top)
    return {key: setting(key) for key in SPECS}
