"""The study folder: its checks, manifest, journal of finished batches and summary file."""
from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from gpu_sssp.kernels.errors import counted, opt
from gpu_sssp.pipeline import fsnames as _fs
from gpu_sssp.pipeline.study import matrix as _matrix
from gpu_sssp.pipeline.study.plan import StudyError, StudyPlan, describe_batches
from gpu_sssp.pipeline.study.summary import summarize
from gpu_sssp.pipeline.fsnames import is_parquet_name
from gpu_sssp.pipeline.study.versions import versions
from gpu_sssp.pipeline.writers import (Journal, batch_name, fsync_file, fsync_folder, is_batch_name,
                                       refuse_file_as_folder, remove_temporaries, write_json_atomic,
                                       write_parquet_atomic)

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
SUMMARY = "summary.json"
GRAPH_FILE = "graph.parquet"
#: the files a study writes atomically at the top of its folder (the journal is appended)
_TOP_FILES = (MANIFEST, SUMMARY, GRAPH_FILE, _matrix.TARGETS_FILE)


def graph_parquet_path(graph, input_path, out_dir, *, shared: bool = False) -> str:
    """A Parquet file holding ``graph`` that the workers can read.

    The input itself when it is Parquet.  Otherwise, on a cluster started here, the
    ingestion cache file (``graph.path``, on this machine); on an attached cluster
    (``shared``), or when there is no cache file, the graph is written once to
    ``<out_dir>/graph.parquet``: the study folder is the one place every worker is
    known to read (the ingestion cache may be in this machine's ``~/.cache``).

    Parameters
    ----------
    graph : kernels.graph.Graph
    input_path : str or os.PathLike or None
        The input the graph was loaded from.
    out_dir : str or os.PathLike
        The study folder.  An existing ``graph.parquet`` there is reused when its
        fingerprint matches (a resumed study does not rewrite it), rewritten when a
        study wrote it (its metadata's ``written_by``), and refused otherwise: a
        user's own file is not replaced.
    shared : bool
        The workers run elsewhere (an attached cluster).

    Returns
    -------
    str
        Absolute path of the Parquet file.

    Raises
    ------
    StudyError
        ``graph.parquet`` holds another graph that no study wrote.
    RuntimeError
        The written file does not load back to the same graph (fingerprint
        mismatch), which would make the workers solve a different graph.
    OSError
        ``graph.parquet`` cannot be written.
    """
    from gpu_sssp.pipeline.graph import read_parquet

    input_path = Path(input_path or "")
    if is_parquet_name(input_path):
        return os.fspath(input_path.resolve())
    cached = _parquet_in_place(graph, shared)
    if cached is not None:
        return os.fspath(cached.resolve())
    target = Path(out_dir) / GRAPH_FILE
    if target.exists() and _same_graph_file(graph, target):
        return os.fspath(target.resolve())
    tails = graph.tails().astype(np.int64) + graph.id_base
    meta = dict(graph.meta)
    meta.update(vertices=graph.n, arcs=graph.m, directed=graph.directed, id_base=graph.id_base,
                weight_type=graph.weight_type, written_by="sssp study")
    table = pa.table({"src": tails, "dst": graph.indices.astype(np.int64) + graph.id_base,
                      "weight": graph.weights})
    write_parquet_atomic(table, target, metadata=meta)
    written = read_parquet(target)
    if written.fingerprint != graph.fingerprint:  # should not happen: CSR round trip
        raise RuntimeError(f"{_fs.shown(target)}: rewritten graph differs from the input (fingerprint)")
    return os.fspath(target.resolve())


def _parquet_in_place(graph, shared: bool | None) -> Path | None:
    """The Parquet file ``graph`` was loaded from (its ingestion cache file), where the
    workers may read it in place: a local cluster (not ``shared``) and a file that exists."""
    p = getattr(graph, "path", None)
    if not shared and p and is_parquet_name(p) and Path(p).exists():
        return Path(p)
    return None


def _same_graph_file(graph, target: Path, *, ours: bool | None = None) -> bool:
    """Whether the existing ``target`` (a folder's ``graph.parquet``) holds ``graph``
    (False: a study wrote it, and it is to be rewritten).

    Raises :class:`StudyError` when it holds another graph (or cannot be read) and no
    study wrote it: a user's own file, which is not replaced.  ``ours``: whether a study
    wrote it, when already known (:func:`_written_by_study`)."""
    from gpu_sssp.pipeline.graph import read_parquet

    if ours is None:
        ours = _written_by_study(target)
    try:
        # a user's file is only looked at: no CSR cache (<file>.csr.npz) is left beside it
        if read_parquet(target, cache=ours).fingerprint == graph.fingerprint:
            return True
    except Exception:  # rewritten, when a study wrote it
        pass
    if not ours:
        # a folder holding only a graph.parquet is taken as empty (a run stopped
        # before its manifest leaves one): one that is not a study's is the user's
        raise StudyError(f"{_fs.shown(target)}: a different graph, not written by sssp study; not replaced "
                         f"(move it, or choose another {opt('--out')})")
    return False


def _written_by_study(path: Path) -> bool:
    """Whether the Parquet file ``path`` is a ``graph.parquet`` that a study wrote (its
    ``sssp`` metadata says ``written_by: sssp study``); False for any other file,
    unreadable ones included."""
    from gpu_sssp.pipeline.ingest import read_meta

    try:
        return read_meta(path).get("written_by") == "sssp study"
    except Exception:
        return False


class FolderLock:
    """An exclusive lock on a study folder, held by one run from its checks to its end.

    ``fcntl.flock`` on ``DIR/.lock``: the kernel drops it when the process ends, however
    it ends (a killed run never leaves a stale lock), and Linux NFS clients map it to
    a lock the server sees.  The file holds the holder's pid, host and start time so
    that a refusal can name them.  The file stays (removing a lock file races with a
    run that has just opened it).
    """

    NAME = ".lock"

    def __init__(self, folder):
        self.path = Path(folder) / self.NAME
        self._fh = None
        #: the lock file was made by this :meth:`acquire` (none was there before)
        self.made = False

    def acquire(self) -> None:
        """Take the lock or raise :class:`StudyError` naming its holder."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no locking (studies target Linux clusters)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            made = not self.path.exists()
            fh = open(self.path, "a+")
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                holder = " ".join(fh.read().split()) or "holder unknown"
                fh.close()
                raise StudyError(f"{_fs.shown(self.path.parent)} is in use by another study run ({holder}); "
                                 f"wait for it to end (or stop it), then {opt('--resume')}") from None
            # the file may have been removed by its last holder (see release) between
            # our open and our lock: then this lock guards nothing; take the new file's
            try:
                same = os.stat(self.path).st_ino == os.fstat(fh.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
            self.path.parent.mkdir(parents=True, exist_ok=True)
        import platform

        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on host {platform.node()} since {_now()}\n")
        fh.flush()
        self._fh = fh
        self.made = made

    def release(self, *, remove: bool = False) -> None:
        """Give the lock up; ``remove`` deletes the lock file first (while still held,
        so that a run waiting on the old file notices, see :meth:`acquire`)."""
        if self._fh is not None:
            import fcntl

            try:
                if remove:
                    self.path.unlink(missing_ok=True)
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            finally:
                self._fh.close()
                self._fh = None

    @property
    def held(self) -> bool:
        return self._fh is not None


def _first_record(old, new: dict) -> dict:
    """The manifest's record of where the sources (or targets) came from: the first run's
    where a resume has the same ones (the same digest), given another way (the folder's
    own ``targets.parquet``, a sources file by another path): the record of the file the
    study was made from was replaced by the study's own output."""
    return old if isinstance(old, dict) and old.get("digest") == new.get("digest") else new


_SOURCE_FIELDS = {"kind": "sources", "seed": opt("--seed"), "count": "number of sources",
                  "file": opt("--sources-file"), "order": opt("--order")}
#: a matrix study's targets as the user gave them (``pipeline.targets.TargetPlan.how``)
_TARGET_FIELDS = {"kind": "targets", "file": opt("--targets"), "seed": opt("--target-seed"),
                  "count": "number of targets"}

#: identity keys written only where they differ from a default, and that default: an
#: identity without ``batch_workers`` (older folders; any plain split) means 1
_ABSENT_MEANS = {"batch_workers": 1}
#: the keys a matrix study adds to the identity (``pipeline.study.matrix.identity``)
_MATRIX_KEYS = ("targets_digest", "targets_count", "stats_over", "matrix_form")


def _key(identity: dict, k: str):
    return identity.get(k, _ABSENT_MEANS.get(k))


def identity_difference(theirs: dict, mine: dict) -> list[str]:
    """The identity keys whose values differ between the folder's study (``theirs``)
    and the one asked (``mine``), over the keys of both: a key on one side only is a
    difference (a matrix study's targets, or a key this version does not know), unless
    its absence means the other side's value (:data:`_ABSENT_MEANS`)."""
    keys = list(mine) + [k for k in theirs if k not in mine]
    if not (_uses_distance_form(theirs) or _uses_distance_form(mine)):
        keys = [k for k in keys if k != "distance_form"]
    return [k for k in keys if _key(theirs, k) != _key(mine, k)]


def _uses_distance_form(identity: dict) -> bool:
    """Whether a study's files depend on its ``distance_form``: distance outputs of a
    study without targets (``pipeline.study.plan.batch_folders``).  A statistics-only
    or matrix study writes the same files in either form, so a resume that names
    another form is the same study."""
    return (not any(k in identity for k in _MATRIX_KEYS)
            and bool({"distances", "predecessors"} & set(identity.get("outputs") or ())))


def _shown(identity: dict, k: str) -> str:
    return "none" if _key(identity, k) is None else repr(_key(identity, k))


def _sources_said(how: dict) -> str:
    """``2 sources from --sources-file s.txt``, ``all 3 sources``, ``5 random sources
    (--seed 0)``, ``2 sources given by id``: a study's sources as it was asked for them."""
    count = how.get("count")
    n = f"{count:,}" if isinstance(count, int) else "?"
    s = "source" if count == 1 else "sources"
    kind = how.get("kind")
    if kind == "all":
        return f"all {n} {s}"
    if kind == "file":
        return f"{n} {s} from {_sources_again(how)}"
    if kind == "random":
        seed = how.get("seed")
        return f"{n} random {s} ({opt(f'--seed {seed}')})"
    if kind == "list":
        return f"{n} {s} given by id"
    return f"{n} {s} ({kind})"


def _sources_again(how: dict) -> str:
    """The options that ask for a study's sources again (``--sources-file s.txt``,
    ``--random 5 --seed 0``), in the caller's words."""
    kind = how.get("kind")
    if kind == "file":
        return opt(f"--sources-file {_fs.shown(str(how.get('file')))}")
    if kind == "random":
        count, seed = how.get("count"), how.get("seed")
        return f"{opt(f'--random {count}')} {opt(f'--seed {seed}')}"
    if kind == "list":
        return f"its {opt('--source')} ids"
    return opt("--sources all")


def _targets_said(count, how: dict) -> str:
    """``300 targets (random, seed 5)``."""
    seed, kind = how.get("seed"), how.get("kind")
    detail = ", ".join(x for x in (f"file {_fs.shown(str(how['file']))}" if kind == "file" and how.get("file") else kind,
                                   None if seed is None else f"seed {seed}") if x)
    return (f"{count:,}" if isinstance(count, int) else "?") + " targets" + (f" ({detail})" if detail else "")


def _explain_difference(diff: list[str], old: dict, plan: StudyPlan, *, batch_given: bool = True) -> str:
    """What differs between the folder's study and the one asked, in the user's terms
    (the options given, not the digests that summarise them).  ``batch_given``: the
    batch size was given as an argument (else it is the folder's)."""
    theirs = old.get("identity", {})
    mine = plan.identity
    parts = []
    if "graph_fingerprint" in diff:  # first: it changes the sources drawn or read too
        g = old.get("graph", {})
        parts.append(f"graph: folder has {g.get('input') or g.get('name')!r} (fingerprint "
                     f"{theirs.get('graph_fingerprint')}), asked {plan.input_path or plan.graph.name!r} "
                     f"(fingerprint {mine['graph_fingerprint']})")
    if "sources_digest" in diff:
        was = old.get("sources", {})
        asked = plan.sources.how
        fields = [f for f in _SOURCE_FIELDS if was.get(f) != asked.get(f) and (f in was or f in asked)]
        if "kind" in fields:  # other kinds: each side said whole ('asked None' for a file not given)
            parts.append(f"sources: the folder's study has {_sources_said(was)}, asked {_sources_said(asked)} "
                         f"(give {_sources_again(was)} to resume it)")
        else:
            parts += [f"{_SOURCE_FIELDS[f]}: folder has {_shown(was, f)}, asked {_shown(asked, f)}" for f in fields]
        if not fields and "graph_fingerprint" not in diff:
            # (with another graph the same options give other sources: the graph says why)
            parts.append("the source list differs with the same options (did the sources file change?)")
    said = {"sources_digest", "graph_fingerprint"} | ({"sources_count"} if "sources_digest" in diff else set())
    one_side = ("targets_digest" in theirs) != ("targets_digest" in mine)
    if "targets_digest" in diff and one_side:
        # a matrix study and one without targets: said once, not key by key
        if "targets_digest" in theirs:
            was = _targets_said(theirs.get("targets_count"), (old.get("matrix") or {}).get("targets") or {})
            parts.append(f"targets: the folder's study has {was} (a travel-time matrix), asked none")
        else:
            asked = _targets_said(mine.get("targets_count"), plan.targets.how if plan.targets is not None else {})
            parts.append(f"targets: the folder's study has none, asked {asked}")
        said |= {k for k in _MATRIX_KEYS if (k in theirs) != (k in mine)}
    elif "targets_digest" in diff:
        # both matrix studies, other targets: the options that differ, or (the same
        # options) a targets file whose content changed - not the two digests alone
        was = (old.get("matrix") or {}).get("targets") or {}
        asked = plan.targets.how if plan.targets is not None else {}
        fields = [f for f in _TARGET_FIELDS if was.get(f) != asked.get(f) and (f in was or f in asked)]
        if set(fields) <= {"file"}:
            # two files of as many targets (or one file): its content changed, or the file
            # named is another - a name given relative to another folder may be the same file
            files = (f"the folder's from {was.get('file')!r}, " if "file" in fields else "")
            changed = f"did the targets file {asked['file']} change? " if asked.get("file") else ""
            parts.append(f"targets: the target list differs ({files}{changed}resume without {opt('--targets')} to go "
                         f"on with the study's own, {plan.out / _matrix.TARGETS_FILE})")
        elif "kind" in fields:  # other kinds: each side said whole ('folder has None' for a file not given)
            parts.append(f"targets: the folder's study has {_targets_said(was.get('count'), was)}, asked "
                         f"{_targets_said(asked.get('count'), asked)} (resume without {opt('--targets')} and "
                         f"{opt('--random-targets')} to go on with the study's own, {plan.out / _matrix.TARGETS_FILE})")
        else:
            parts += [f"{_TARGET_FIELDS[f]}: folder has {_shown(was, f)}, asked {_shown(asked, f)}" for f in fields]
        said |= {"targets_digest", "targets_count"}
    batching = [k for k in ("batch_size", "batch_workers") if k in diff]
    if batching:
        # (the layout for the workers follows from the batch size: said only where the
        # batch size is the same)
        shown_keys = ["batch_size"] if "batch_size" in batching else batching
        bits = [f"{_option_named(k)}: folder has {_shown(theirs, k)}, asked {_shown(mine, k)}" for k in shown_keys]
        notes = []
        try:  # the two layouts, where they are of the same sources and outputs
            if not {"sources_digest", "outputs", "targets_digest"} & set(diff) and plan.batches:
                was = plan.sources.batches(int(theirs["batch_size"]), int(_key(theirs, "batch_workers")),
                                           plan.merge_tail)
                notes.append(f"the folder's {describe_batches(was)}, asked {describe_batches(plan.batches)}")
        except (KeyError, TypeError, ValueError):
            pass
        if batch_given:  # (a batch size from dask config is never compared: the folder's is kept)
            notes.append(f"resume without {opt('--batch-size')} to keep the folder's")
        parts.append("; ".join(bits) + (f" ({'; '.join(notes)})" if notes else ""))
        said |= set(batching)
    for k in diff:
        if k not in said:
            parts.append(f"{_option_named(k)}: folder has {_shown(theirs, k)}, asked {_shown(mine, k)}")
    return "; ".join(parts)


#: identity keys that are options of the caller (named as it gives them); the others
#: (digests, counts, batch_workers) are the study's own and keep their names
_IDENTITY_OPTIONS = {"batch_size", "stats_over", "matrix_form", "algorithm", "outputs", "distance_form", "order"}


def _option_named(key: str) -> str:
    return opt("--" + key.replace("_", "-")) if key in _IDENTITY_OPTIONS else key


def _run_ids(manifest: dict) -> list[str]:
    """The study ids a folder's runs wrote into its batch files (``study_ids``; a
    manifest of an earlier version: its ``study_id``)."""
    ids = manifest.get("study_ids")
    ids = [x for x in ids if isinstance(x, str)] if isinstance(ids, list) else []
    one = manifest.get("study_id")
    return ids + ([one] if isinstance(one, str) and one not in ids else [])


def _enclosing_study(out: Path) -> Path | None:
    """The study folder whose batch folders ``out`` is in (or is: ``S/stats``,
    ``S/distances/x``), or None.  Elsewhere in a study's folder (``S/sub``) a study
    harms none of S's files.  A ``manifest.json`` of another tool (not a JSON object with
    a study's ``identity`` and ``graph``) is no study."""
    try:
        out = Path(os.path.abspath(out))
    except (OSError, ValueError):
        return None
    folders = {"stats", "distances", "predecessors", _matrix.MATRIX_DIR}
    for parent in out.parents:
        if out.relative_to(parent).parts[0] not in folders:
            continue
        mpath = parent / MANIFEST
        try:
            if not mpath.is_file() or mpath.stat().st_size > 64 << 20:
                continue
            old = json.loads(mpath.read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(old, dict) and isinstance(old.get("identity"), dict) and isinstance(old.get("graph"), dict):
            return parent
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def resumed_settings(out) -> dict:
    """Settings of the study in ``out`` that a resume takes when not given again:
    ``algorithm``, ``outputs``, ``distance_form``, ``order``, and a matrix study's ``stats_over``, ``matrix_form`` and
    ``targets`` (``{"digest", "how", "id_base"}``: read from ``targets.parquet`` by
    ``pipeline.study.matrix.resumed_targets``).  Empty when there is no readable
    manifest; the batch size is adopted by :class:`Study` itself."""
    try:
        m = json.loads((Path(out) / MANIFEST).read_text())
        ident = m.get("identity", {})
        got = {"algorithm": ident.get("algorithm") if isinstance(ident.get("algorithm"), str) else None,
               "outputs": ident.get("outputs") if isinstance(ident.get("outputs"), list) else None,
               "distance_form": ident.get("distance_form"), "order": m.get("sources", {}).get("order"),
               "stats_over": ident.get("stats_over"), "matrix_form": ident.get("matrix_form")}
        if ident.get("targets_digest"):
            how = dict((m.get("matrix") or {}).get("targets") or {})
            how.pop("digest", None)
            got["targets"] = {"digest": ident["targets_digest"], "how": how,
                              "id_base": (m.get("graph") or {}).get("id_base")}
    except (OSError, ValueError, AttributeError, TypeError):  # unreadable: Study names what is wrong
        return {}
    return {k: v for k, v in got.items() if v}


class Study:
    """A study folder: validation, the journal of finished batches, the manifest.

    Parameters
    ----------
    plan : StudyPlan
    resume : bool
        Continue the study already in ``plan.out`` (it must be the same study).

    Raises
    ------
    StudyError
        Without ``resume``: the folder holds a study or other files.  With it: the
        folder holds a different study (the message names what differs).
    """

    def __init__(self, plan: StudyPlan, *, resume: bool = False, shared: bool | None = None):
        self.plan = plan
        self.out = plan.out
        self.journal = Journal(self.out / JOURNAL)
        self.manifest: dict = {}
        if self.out.exists() and not self.out.is_dir():
            raise StudyError(f"{_fs.shown(self.out)}: exists and is not a folder")
        refuse_file_as_folder(self.out, "--out")  # below a file: the OS's "Not a directory" named neither
        self._created = not self.out.exists()
        # one run per folder: the checks and the journal read below are under the lock
        self.lock = FolderLock(self.out)
        self.lock.acquire()
        try:
            self._check_folder(resume)
            self._check_graph_file(shared)
            # a resume that finds no study recorded (a run stopped while it started, before
            # its manifest): the study is started as given, with none of a recorded study's
            # settings taken over (a matrix study's targets among them): said by the caller
            self.nothing_to_resume = bool(resume and not self.manifest)
            if resume:
                self.journal.repair()  # a line torn by the crash that stopped the last run
                self._refuse_foreign_files()
            # journaled batches whose files are missing or incomplete: solved again (why)
            self.redone: dict[int, str] = {}
            self.done: dict[int, dict] = self._finished_batches() if resume else {}
            # batches whose files a stopped run wrote completely but never journaled
            # (a chunk is journaled once all of its batches are written): kept, not redone
            self.adopted: list[int] = self._adopt_written() if resume else []
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the folder's lock (also released when the process ends).  A folder
        this run created and never started a study in (the cluster would not start,
        ...) is removed again rather than left holding only the lock file; in a folder
        that holds no study (a user's folder, refused) the lock file this run made is
        removed: the folder is left as it was found."""
        no_study = not self.manifest and self.lock.held
        unused = self._created and no_study
        self.lock.release(remove=no_study and (self._created or self.lock.made))
        if unused:
            try:
                self.out.rmdir()  # only if empty
            except OSError:
                pass

    # .................................................................. folder checks
    def _check_graph_file(self, shared: bool | None) -> None:
        """Refuse now, before any cluster starts, a ``graph.parquet`` in the folder that
        :meth:`start` would have to use (:func:`graph_parquet_path`) and that holds
        another graph no study wrote: a non-Parquet input whose graph is in no Parquet
        file here (an in-memory graph), or any non-Parquet input when the workers are
        elsewhere (``shared``: an attached cluster; None: not known yet, then checked by
        :meth:`start`)."""
        plan = self.plan
        target = self.out / GRAPH_FILE
        if plan.graph_path or not target.is_file() or _written_by_study(target):
            return  # a Parquet input is read in place; a study's own file is rewritten if stale
        if _parquet_in_place(plan.graph, shared) is not None:
            return  # the workers may read the ingestion cache file (a local cluster)
        _same_graph_file(plan.graph, target, ours=False)

    def _check_folder(self, resume: bool) -> None:
        out = self.out
        mpath = out / MANIFEST
        outer = _enclosing_study(out)
        if outer is not None:
            # (--out S/stats/sub: readers of S/stats then read this study's files as S's,
            # and S's resume refused its folder)
            raise StudyError(f"{_fs.shown(out)}: is inside the batch files of the study in {_fs.shown(outer)} "
                             f"(whose readers would take this study's files as its own); choose another {opt('--out')}")
        if out.exists() and not out.is_dir():
            raise StudyError(f"{_fs.shown(out)}: exists and is not a folder")
        if mpath.exists():
            try:
                old = json.loads(mpath.read_text())
            except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise StudyError(f"{_fs.shown(mpath)}: unreadable study manifest ({exc}); remove the folder or choose another "
                                 f"{opt('--out')}") from None
            if not isinstance(old, dict) or not all(isinstance(old.get(k, {}), dict)
                                                    for k in ("identity", "graph", "sources")):
                raise StudyError(f"{_fs.shown(mpath)}: unreadable study manifest (JSON, but not a study's manifest); remove "
                                 f"the folder or choose another {opt('--out')}")
            if not resume:
                raise StudyError(
                    f"{out} already holds a study ({old.get('status', 'unknown')}, graph "
                    f"{old.get('graph', {}).get('name', '?')}); use {opt('--resume')} to continue it or choose another "
                    f"{opt('--out')}"
                )
            theirs = old.get("identity", {})
            # a batch size from dask config (sssp.study.batch-size) is for new studies: it
            # yields to the folder's, as no batch size does; only an argument is compared
            batch_given = self.plan.batch_size_given
            if theirs.get("batch_size") and (not batch_given or theirs["batch_size"] == self.plan.batch_size):
                # not given again, or given as the folder's own: the folder's batches, laid
                # out for the folder's workers (its own --batch-size was refused, naming
                # the internal "batch_workers" that the user never gave)
                self.plan.set_batch_size(theirs["batch_size"], workers=_key(theirs, "batch_workers"))
            # every key of both identities: one on a side only differs too (a matrix
            # study's targets, the layout of batches for several workers)
            diff = identity_difference(theirs, self.plan.identity)
            if diff:
                raise StudyError(f"{_fs.shown(out)} holds a different study, cannot resume "
                                 f"({_explain_difference(diff, old, self.plan, batch_given=batch_given)})")
            self.manifest = old
        elif out.exists() and any(p.name not in (GRAPH_FILE,) and not p.name.startswith(".")
                                  for p in out.iterdir()):
            if resume:
                raise StudyError(f"{_fs.shown(out)}: no study to resume here (no {MANIFEST})")
            raise StudyError(f"{_fs.shown(out)}: folder is not empty and holds no study; choose another "
                             f"{opt('--out')}")

    def _foreign_files(self) -> list[Path]:
        """Files in the study's batch folders that are no batch file of this study (a file
        of another study copied in, a batch name beyond this study's batches): a reader of
        the folder (``pyarrow.parquet.read_table("DIR/stats")``) would read them with the
        study's.  Hidden names (``.``, ``_``: temporaries, which readers skip) are not
        looked at."""
        ours = {batch_name(i) for i in range(len(self.plan.batches))}
        found = []
        for sub in self.plan.batch_folders:
            try:
                names = sorted(os.listdir(self.out / sub))
            except OSError:  # missing (or not a folder: the writers say so)
                continue
            found += [self.out / sub / n for n in names if n not in ours and not n.startswith((".", "_"))]
        return found

    def _foreign_error(self, found: list[Path]) -> StudyError:
        sub = found[0].parent
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return StudyError(f"{_fs.shown(found[0])}{more}: not a batch file of this study ({len(self.plan.batches)} batches, "
                          f"{batch_name(0)} to {batch_name(len(self.plan.batches) - 1)}); a reader of {_fs.shown(sub)} "
                          f"would take its rows for the study's: move it out of the folder, then {opt('--resume')}")

    def _refuse_foreign_files(self) -> None:
        """Refuse a resume where :meth:`_foreign_files` finds any (one line naming one),
        or where a batch folder is a file (no batch could be written there)."""
        for sub in self.plan.batch_folders:
            if (self.out / sub).exists() and not (self.out / sub).is_dir():
                raise StudyError(f"{_fs.shown(self.out / sub)}: a file, where the study keeps its {sub} batch files; move it "
                                 f"out of the folder, then {opt('--resume')}")
        found = self._foreign_files()
        if found:
            raise self._foreign_error(found)

    def _finished_batches(self) -> dict[int, dict]:
        """The journaled batches whose files are all complete (:meth:`_batch_files`);
        the others are solved again, each with the reason in :attr:`redone`."""
        latest = {}  # a batch solved again has several lines: its last
        nb = len(self.plan.batches)
        for e in self.journal.entries():
            i = e.get("batch")
            if isinstance(i, int) and 0 <= i < nb:
                latest[i] = e
        done = {}
        for i, e in latest.items():
            problem = self._batch_files(i, journaled=e)[2]
            if problem is None:
                done[i] = e
            else:
                self.redone[i] = problem
        return done

    def _expected_rows(self, rel: str, i: int, reached=None) -> tuple[int, list | None]:
        """The rows of batch ``i``'s file ``rel`` (one of ``plan.batch_files(i)``) and its
        columns when they name the sources; ``reached``: the statistics file's column
        (the long form's rows are the reachable pairs, Result.to_table)."""
        import pyarrow.compute as pc

        plan = self.plan
        batch = np.asarray(plan.batches[i], dtype=np.int64)
        folder = rel.split("/", 1)[0]
        if folder == "stats":
            return len(batch), None
        if folder == _matrix.MATRIX_DIR:
            per = 1 if plan.matrix_form == "wide" else int(plan.targets.count)
            return len(batch) * per, None
        if plan.distance_form == "long":
            if reached is None:
                reached = _fs.read_table(self.out / "stats" / batch_name(i), columns=["reached"]).column("reached")
            return int(pc.sum(reached).as_py() or 0), None
        # a row per vertex, a column per distinct source (wide_distance_table)
        cols = ["vertex"] + [str(int(v)) for v in dict.fromkeys((batch + plan.graph.id_base).tolist())]
        return plan.graph.n, cols

    def _study_named(self, meta) -> str | None:
        """The problem with a batch file's study id (its footer's
        ``pipeline.study.task.STUDY_KEY``), None when it names this study: this run's
        id or one the folder's manifest recorded for an earlier run (``study_ids``: a
        resume by another version whose identity differs only where an absent key
        means the same).  A file
        naming none (an older version's, or one no study wrote) is ``"none"``."""
        from gpu_sssp.pipeline.study.task import STUDY_KEY

        named = (meta.metadata or {}).get(STUDY_KEY.encode())
        if named is None:
            return "none"
        named = named.decode("utf-8", "replace")
        if named == self.plan.study_id or named in _run_ids(self.manifest):
            return None
        return named

    def _batch_files(self, i: int, reached=None, journaled: dict | None = None) -> tuple[list[str], int, str | None]:
        """Check every file batch ``i`` writes (``plan.batch_files``: statistics,
        distances, predecessors or matrix) from its Parquet footer: there, readable
        (a file renamed but left empty by a power loss has no footer), the batch's row
        count, the sources' columns in the wide form (the long form's row count is the
        statistics file's ``reached`` column summed: that column is read, or given).
        Unless ``reached`` is given (:meth:`_written_batch` read the file's sources
        already), the statistics file's ``source`` column is read too and must be the
        batch's sources in order: a statistics file of another batch or another study
        (copied in) is not this batch's, whatever its row count.  ``journaled``: the
        batch's journal entry; files whose sizes do not add up to its ``bytes`` are not
        the files journaled (replaced since: another study's of the same sources).
        Each file must name this study in its footer (:meth:`_study_named`: another
        study's file with the same sources and shape is not this batch's); an unjournaled
        batch's files (``journaled`` None: adopted) must name it, a journaled batch's
        may name none (written by a version before the ids).
        ``(files, bytes, problem)``: the files in writing order; ``problem`` names the
        first file wrong (``"distances/batch-000005.parquet missing"``), None when all
        are complete."""
        nbytes = 0
        written = self.plan.batch_files(i)
        for rel in written[-1:] + written[:-1]:  # stats first: the long form's rows are counted there
            path = self.out / rel
            try:
                if rel == written[-1] and reached is None:  # stats: its footer, sources and reached
                    meta, reached = self._check_sources(path, i)
                    if isinstance(reached, str):
                        return written, nbytes, reached
                else:
                    meta = _fs.read_metadata(path)
                rows, cols = self._expected_rows(rel, i, reached)
            except FileNotFoundError:
                return written, nbytes, f"{rel} missing"
            except (OSError, ValueError, KeyError, pa.ArrowException):
                return written, nbytes, f"{rel} unreadable (no Parquet footer)"
            if meta.num_rows != rows:
                return written, nbytes, f"{rel} has {meta.num_rows:,} rows, not {rows:,}"
            other = self._study_named(meta)
            if other == "none" and journaled is None:
                return written, nbytes, f"{rel} names no study (an older gpu-sssp's file, or no study's)"
            if other is not None and other != "none":
                return written, nbytes, f"{rel} was written by another study ({other})"
            if cols is not None and meta.schema.to_arrow_schema().names != cols:
                return written, nbytes, f"{rel} has other columns than the batch's sources"
            try:
                nbytes += path.stat().st_size
            except OSError:
                return written, nbytes, f"{rel} missing"
        want = (journaled or {}).get("bytes")
        if (isinstance(want, int) and not isinstance(want, bool) and nbytes != want
                and sorted(journaled.get("files") or ()) == sorted(written)):
            return written, nbytes, (f"{', '.join(written)}: {nbytes:,} bytes, not the {want:,} journaled "
                                     "(replaced since the batch was journaled)")
        return written, nbytes, None  # in writing order, stats last

    def _check_sources(self, path: Path, i: int):
        """The statistics file ``path`` of batch ``i``, opened once: ``(footer, reached)``,
        its ``reached`` column where its ``source`` column is the batch's sources (file
        ids) in order, else the problem in its place (``"stats/batch-000005.parquet holds
        other sources than batch 5's"``).  One open of the file, not a footer read and
        then ``read_table`` (a dataset per file: ten times the footer's cost, for every
        journaled batch of a resume)."""
        batch = np.asarray(self.plan.batches[i], dtype=np.int64) + self.plan.graph.id_base
        with _fs.open_parquet(path) as pf:
            meta = pf.metadata
            t = pf.read(columns=["source", "reached"])
        if not np.array_equal(t.column("source").to_numpy(), batch):
            return meta, f"stats/{path.name} holds other sources than batch {i}'s (another batch's or study's file)"
        return meta, t.column("reached")

    def _written_batch(self, i: int) -> dict | None:
        """The journal entry for batch ``i`` if its files in the folder are those of
        this study's batch ``i``, complete; None when anything is doubtful (the batch is
        then solved again, its files overwritten).

        The statistics file is written last (``pipeline.study.task._write_batch``), so a
        complete one means the batch's distance or matrix files were renamed in place
        before it; those are checked too.  Complete: a readable footer (a file renamed
        but left empty by a power loss has none), the batch's row count, its sources
        (file ids) equal to the planned batch's in order, one algorithm - the study's
        when it names one.  The folder's study is this one already (:meth:`_check_folder`
        compared the identities: graph, sources, algorithm, batching, outputs)."""
        import pyarrow.compute as pc

        plan = self.plan
        batch = np.asarray(plan.batches[i], dtype=np.int64)
        f = self.out / "stats" / batch_name(i)
        try:
            if _fs.read_metadata(f).num_rows != len(batch):
                return None
            t = _fs.read_table(f, columns=["source", "reached", "algorithm"])
            if not np.array_equal(t.column("source").to_numpy(), batch + plan.graph.id_base):
                return None
            algos = pc.unique(t.column("algorithm").cast(pa.string())).to_pylist()
            if len(algos) != 1 or (plan.algorithm != "auto" and algos[0] != plan.algorithm):
                return None
        except (OSError, ValueError, KeyError, pa.ArrowException):
            return None
        # every file of the batch (distances, predecessors or matrix, then stats again)
        files, nbytes, problem = self._batch_files(i, reached=t.column("reached"))
        if problem is not None:
            return None
        return {"batch": i, "rows": len(batch), "bytes": int(nbytes), "files": files, "algorithm": algos[0],
                "adopted": True}

    def _adopt_written(self) -> list[int]:
        """Journal the batches a stopped run wrote but did not journal (see
        :meth:`_written_batch`), marked ``"adopted": true`` and without times; return
        their indices.  Their files are flushed first (a stopped run's tasks may not have
        flushed their statistics files), so that a journal line never outlives its
        batch's files on a power loss."""
        entries = [e for e in map(self._written_batch, self._unjournaled_written()) if e is not None]
        if not entries:
            return []
        folders = set()
        for e in entries:
            for rel in e["files"]:
                fsync_file(self.out / rel)
                folders.add((self.out / rel).parent)
        for folder in folders:
            fsync_folder(folder)
        self.record_many(entries)
        return [e["batch"] for e in entries]

    def _unjournaled_written(self) -> list[int]:
        """The batches not journaled whose statistics file is in the folder (one listing
        of ``stats/``).  Not those journaled whose files were found wrong (:attr:`redone`):
        a file that is not the one journaled is not adopted either."""
        try:
            names = set(os.listdir(self.out / "stats"))
        except OSError:
            return []
        redone = getattr(self, "redone", {})
        return [i for i in range(len(self.plan.batches))
                if i not in self.done and i not in redone and batch_name(i) in names]

    def redone_note(self, shown: int = 3) -> str | None:
        """What a resume says of the journaled batches solved again (:attr:`redone`):
        ``"2 journaled batches will be solved again, their files missing, incomplete or not the
        batch's: distances/batch-000005.parquet missing, ..."``; None when there are none."""
        if not self.redone:
            return None
        why = [self.redone[i] for i in sorted(self.redone)]
        more = f", and {len(why) - shown} more" if len(why) > shown else ""
        return (f"{counted(len(why), 'journaled batch', 'journaled batches')} will be solved again, their files missing, incomplete or not the "
                f"batch's: {', '.join(why[:shown])}{more}")

    def unjournaled_files(self) -> int:
        """Statistics files in the folder of batches not journaled (a stopped run's
        written batches: a resume keeps those that are complete, :meth:`_written_batch`)."""
        return len(self._unjournaled_written())

    def remove_temporaries(self) -> int:
        """Delete the temporary files that killed writers of this study left in its folder
        (``pipeline.writers.remove_temporaries``); return how many.  Only the study's own:
        those of its top-level files (manifest, summary, ``graph.parquet``,
        ``targets.parquet``) and of the batch files in its batch folders
        (``plan.batch_folders``).  Nothing else in the folder is looked at: not a user's
        files (a folder of hidden files or a ``graph.parquet`` is taken as empty), not
        another study run with its ``--out`` inside this folder, whose writers' temporaries
        are live, not another program writing here."""
        count = remove_temporaries(self.out, _TOP_FILES)
        for sub in self.plan.batch_folders:
            count += remove_temporaries(self.out / sub, is_batch_name)
        return count

    # .................................................................. state
    @property
    def pending(self) -> list[int]:
        return [i for i in range(len(self.plan.batches)) if i not in self.done]

    @property
    def sources_done(self) -> int:
        return sum(len(self.plan.batches[i]) for i in self.done)

    def tidy_after_stop(self) -> int:
        """Remove the temporary files of a stopped run once its workers are gone (a local
        cluster it started, closed): they were left to the next run, which may never come.
        The folder's lock is taken again for it; a run that holds it already (it started
        meanwhile) removes them itself.  Returns how many were removed."""
        if self.lock.held or not self.out.is_dir():
            return 0
        try:
            self.lock.acquire()
        except StudyError:
            return 0
        try:
            return self.remove_temporaries()
        except OSError:
            return 0
        finally:
            self.lock.release()

    def stop(self, exc: BaseException, batch: int | None = None) -> None:
        """Record in the manifest why the run stopped: status ``interrupted`` (a
        ``KeyboardInterrupt``) or ``failed`` with the reason, instead of leaving
        ``running``; then release the folder.  Does nothing before :meth:`start` wrote a
        manifest.

        The reason is the exception's message: an interruption that carries one (the
        command line's SIGTERM handler raises ``workflows.cli.Terminated``, "terminated
        by SIGTERM") is recorded with it, a bare Ctrl-C as "interrupted by the user", a
        failure without a message by its exception's name."""
        try:
            # a folder removed during the run is not made again for its manifest
            if self.manifest.get("status") == "running" and not self.removed():
                interrupted = isinstance(exc, KeyboardInterrupt)
                reason = " ".join(str(exc).split()) or ("interrupted by the user" if interrupted
                                                         else type(exc).__name__)
                self.manifest["status"] = "interrupted" if interrupted else "failed"
                self.manifest["failure"] = {"reason": reason, "error": type(exc).__name__, "batch": batch,
                                            "at": _now()}
                run = self.manifest["runs"][-1]
                run.update(end=_now(), status=self.manifest["status"], batches_done=len(self.done),
                           batch_files_unjournaled=self.unjournaled_files())
                try:
                    write_json_atomic(self.manifest, self.out / MANIFEST)
                except OSError as wexc:
                    # the folder cannot be written (read-only, full, ...): the error that
                    # stopped the run is the one to report, not this one (the manifest
                    # stays "running", which a resume handles)
                    log.debug("%s not updated with the stop: %s", self.out / MANIFEST, wexc)
        finally:
            self.close()

    def start(self, cluster_info: dict | None = None) -> None:
        """Create the folder and write the manifest (status ``running``).

        Leftover temporary files of a killed run are removed, and when the plan has
        no Parquet file for the workers yet, one is found or written (see
        :func:`graph_parquet_path`).  On a resume the manifest's ``created`` time
        and earlier ``runs`` are kept, and a new run entry is appended.

        Parameters
        ----------
        cluster_info : dict, optional
            Stored in the manifest and in this run's entry
            (``pipeline.cluster.describe_cluster``).

        Raises
        ------
        RuntimeError
            The graph written for the workers does not load back identical (see
            :func:`graph_parquet_path`).
        OSError
            The folder or its files cannot be written.
        """
        self.out.mkdir(parents=True, exist_ok=True)
        self.remove_temporaries()
        g = self.plan.graph
        if not self.plan.graph_path:
            shared = (cluster_info or {}).get("mode") == "attached"  # workers may be elsewhere
            self.plan.graph_path = graph_parquet_path(g, self.plan.input_path, self.out, shared=shared)
        runs = list(self.manifest.get("runs", []))
        if self.manifest.get("status") == "running" and runs and "end" not in runs[-1]:
            # the folder's lock is ours: the run that left "running" ended without a word
            # (SIGKILL, a crash, a power loss); its entry said only when it started
            runs[-1] = dict(runs[-1], status="killed", end=None,
                            note="ended without recording its end (killed, crashed, the machine stopped, or the folder "
                                 "could not be written)")
        runs.append({"start": _now(), "batches_before": len(self.done), "batches_adopted": len(self.adopted),
                     # journaled, but a file missing or incomplete: solved again
                     **({"batches_redone": len(self.redone)} if self.redone else {}),
                     "cluster": cluster_info or {}})
        before = self.manifest or {}  # (a resume: the folder's manifest)
        self.manifest = {
            "study_id": self.plan.study_id,
            # every id the folder's runs wrote into batch files (kept over resumes)
            "study_ids": list(dict.fromkeys([*_run_ids(self.manifest), self.plan.study_id])),
            "status": "running",
            "identity": self.plan.identity,
            "graph": {"name": g.name, "input": self.plan.input_path, "path": self.plan.graph_path, "fingerprint": g.fingerprint,
                      "vertices": g.n, "arcs": g.m, "directed": g.directed, "id_base": g.id_base,
                      "weight_type": g.weight_type, "meta": g.meta},
            "sources": _first_record(before.get("sources"),
                                     dict(self.plan.sources.how, digest=self.plan.sources.digest())),
            "algorithm": self.plan.algorithm,
            "batch_size": self.plan.batch_size,
            "batch_workers": self.plan.batch_workers,
            "batches": len(self.plan.batches),
            "outputs": list(self.plan.outputs),
            "distance_form": self.plan.distance_form,
            "distance_estimate_bytes": self.plan.distance_estimate,
            "versions": versions(),
            # the cluster of the last run that had one (a resume with nothing to solve has
            # none: its run entry says so, the study's record stays)
            "cluster": (self.manifest.get("cluster") or {} if (cluster_info or {}).get("mode") == "none"
                        else cluster_info or {}),
            "runs": runs,
            "created": self.manifest.get("created", _now()),
        }
        if self.plan.targets is not None:
            targets = _first_record((before.get("matrix") or {}).get("targets"),
                                    dict(self.plan.targets.how, digest=self.plan.targets.digest()))
            self.manifest["matrix"] = {"targets": targets,
                                       "stats_over": self.plan.stats_over, "form": self.plan.matrix_form,
                                       "files": f"{_matrix.MATRIX_DIR}/", "columns": _matrix.TARGETS_FILE}
        write_json_atomic(self.manifest, self.out / MANIFEST)
        # the folders and targets.parquet after the manifest: a run stopped before it
        # (kill -9, Ctrl-C) leaves nothing but files a fresh start or --resume accepts
        # (a folder with stats/ or targets.parquet and no manifest was refused by both)
        for sub in self.plan.batch_folders:  # matrix/ too: made by _matrix.start_folder as well
            (self.out / sub).mkdir(exist_ok=True)
        _matrix.start_folder(self.plan, self.out)

    def record(self, meta: dict) -> None:
        """Journal a finished batch (after its files exist).

        The journal line is what marks the batch done on resume, so it must be
        written only once the batch's files are complete.

        Parameters
        ----------
        meta : dict
            The metadata :func:`solve_batch` returned; ``meta["batch"]`` is the batch
            index.  It is stored with a ``done`` timestamp added.

        Raises
        ------
        KeyError
            ``meta`` has no ``batch``.  It is raised after the line is journaled;
            a resume ignores such a line, as it has no batch index.
        TypeError
            ``meta`` holds something that cannot be serialised to JSON.
        OSError
            The journal cannot be written.
        """
        self.record_many([meta])

    def removed(self) -> bool:
        """Whether the folder of this started run lost its manifest: removed (or
        replaced) while the study ran."""
        return bool(self.manifest) and not (self.out / MANIFEST).exists()

    def removed_error(self) -> StudyError:
        """The one line for a folder removed during the run (:meth:`removed`)."""
        return StudyError(f"{_fs.shown(self.out)}: the study folder was removed during the run ({MANIFEST} is gone); "
                          "nothing more is recorded there: remove what is left of it and start the study again")

    def record_many(self, metas: list[dict]) -> None:
        """Journal several finished batches with one disk flush (see :meth:`record`).

        Raises :class:`StudyError` when the folder was removed during the run: the
        journal is not made again alone (a folder holding a journal of batches whose
        files are gone, and no manifest, which no resume accepts)."""
        if self.manifest.get("status") == "running" and self.removed():
            raise self.removed_error()
        now = _now()
        entries = [dict(meta, done=now) for meta in metas]
        self.journal.extend(entries)
        for entry in entries:
            self.done[int(entry["batch"])] = entry

    # .................................................................. tables
    def stats_table(self) -> pa.Table:
        """Every finished batch's stats, in plan order."""
        from gpu_sssp.kernels.result import STATS_SCHEMA

        parts = [_fs.read_table(self.out / "stats" / batch_name(i), schema=STATS_SCHEMA) for i in sorted(self.done)]
        if not parts:
            return STATS_SCHEMA.empty_table()
        return pa.concat_tables(parts)

    def _misplaced(self, stats: pa.Table) -> int | None:
        """The first finished batch whose rows in ``stats`` (:meth:`stats_table`) are not
        its sources in order (its statistics file replaced during the run, after the
        resume's checks), or None."""
        base = self.plan.graph.id_base
        got = stats.column("source").to_numpy()
        at = 0
        for i in sorted(self.done):
            want = np.asarray(self.plan.batches[i], dtype=np.int64) + base
            if not np.array_equal(got[at:at + len(want)], want):
                return i
            at += len(want)
        return None if at == len(got) else max(self.done)

    def finish(self, *, wall_s: float, run_sources: int, run_meta: list[dict], workers: int,
               clock: tuple[float, float] | None = None, extra_timings: dict | None = None,
               late_workers: list | None = None) -> dict:
        """Summarise, write ``summary.json`` and the final manifest; return the summary.

        ``late_workers``: the workers that joined during the run and solved batches
        (``pipeline.cluster.describe_late_workers``), added to the manifest's and the
        run's ``cluster.worker_list`` (and its counts), which held the start's only.

        The statistics folder is flushed first: its files' renames were not flushed one
        by one (:func:`pipeline.study.task._write_batch`), and the summary must not
        outlive them on a power loss.

        Temporary files are removed here too, not only when a run starts: every task of
        the run has ended by now, so one left is a writer's that died mid-write (a worker
        killed while it wrote a batch, which Dask then ran again elsewhere), and a
        finished folder holds none."""
        self.remove_temporaries()
        fsync_folder(self.out / "stats")
        stats = self.stats_table()
        wrong = self._misplaced(stats)
        foreign = self._foreign_files()
        if wrong is not None or foreign:  # never a summary of other sources than the study's
            exc = (self._foreign_error(foreign) if wrong is None else
                   StudyError(f"{_fs.shown(self.out / 'stats' / batch_name(wrong))}: holds other sources than batch {wrong}'s "
                              f"(the file was replaced during the run); {opt('--resume')} solves it again"))
            self.stop(exc, batch=wrong)
            raise exc
        summary = summarize(stats, self.plan, wall_s=wall_s, run_sources=run_sources,
                            run_meta=run_meta, workers=workers, clock=clock, extra_timings=extra_timings)
        write_json_atomic(summary, self.out / SUMMARY)
        complete = not self.pending
        self.manifest["status"] = "complete" if complete else "incomplete"
        run = self.manifest["runs"][-1]
        run.update(end=_now(), wall_s=wall_s, sources=run_sources, batches=len(run_meta),
                   kernel_ms=sum(m.get("kernel_ms", 0.0) for m in run_meta))
        if late_workers:
            cluster = dict(run.get("cluster") or {})
            listed = [*(cluster.get("worker_list") or []), *late_workers]
            cluster.update(worker_list=listed, workers=len(listed),
                           threads=sum(int(w.get("nthreads") or 0) for w in listed),
                           devices=sorted({w["device"] for w in listed if w.get("device")}),
                           joined_during_run=len(late_workers))
            run["cluster"] = self.manifest["cluster"] = cluster
        self.manifest["timings"] = summary["timings"]
        self.manifest["summary"] = {k: v for k, v in summary.items() if k != "timings"}
        self.manifest.pop("failure", None)  # of an earlier run, now resumed
        try:
            write_json_atomic(self.manifest, self.out / MANIFEST)
        except BaseException:
            # (a full disk: the small summary fitted, the manifest did not) no summary
            # beside a manifest that still says "running": a resume finds every batch
            # done and writes both
            (self.out / SUMMARY).unlink(missing_ok=True)
            raise
        self.close()
        return summary
