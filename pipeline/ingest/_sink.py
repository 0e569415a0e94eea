"""Validated, streaming, atomic Parquet edge-list writer."""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpu_sssp.kernels.errors import UsageError, opt
from gpu_sssp.kernels.graph import distance_bound_of, in_arc_maxima, is_decimal, path_bound_of, path_bound_ok

from ..errors import InputError
from ..fsnames import is_utf8, open_parquet
from ..writers import OutputWriteError, fsync_folder, owned_temp_for, remove_abandoned_temporaries
from ._limits import Limits, bound_message
from ._records import big_whole, float32_midpoints, show_number

log = logging.getLogger(__name__)

META_KEY = b"sssp"
WEIGHT_TYPES = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}
_PA = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64()}
I32_MAX = int(np.iinfo(np.int32).max)
PARQUET_COMPRESSION = "lz4"  # LZ4_RAW in the file: ~1/3 cheaper to write than snappy, as small


class IdOverflow(Exception):
    """Ids do not fit the id type chosen up front: start again with int64."""


# significand bits of the float weight types: every integer up to 2**bits in magnitude
# is exact, a larger one only when it is a multiple of a large enough power of two
FLOAT_BITS = {"float32": 24, "float64": 53}


def inexact_integers(w: np.ndarray, bits: int) -> np.ndarray:
    """Mask of the integers in ``w`` (an integer array) that a float with ``bits``
    significand bits cannot hold exactly (``float32``: 24, ``float64``: 53).

    Exact on all of int64: ``|v|`` is exact iff its odd part (``|v|`` over its lowest
    set bit) is below ``2**bits``; no float arithmetic is involved.
    """
    limit = 1 << bits
    big = (w > limit) | (w < -limit)
    if not big.any():
        return big
    u = np.abs(w[big]).astype(np.uint64)  # |-2**63| wraps to -2**63, i.e. 2**63 as uint64
    low = u & (~u + np.uint64(1))         # lowest set bit
    out = np.zeros(len(w), dtype=bool)
    out[big] = (u // low) >= np.uint64(limit)
    return out


def _round_midpoints_again(w: np.ndarray, w32: np.ndarray, batch) -> np.ndarray:
    """``w32`` (``w``, weights read into float64, cast to float32) with each weight that
    float64 read onto a float32 midpoint rounded again from its decimal text, so that
    every weight is the float32 nearest to what the file says (the cast of a midpoint
    rounds to even, which is right only where the decimal is the midpoint itself)."""
    from decimal import Decimal, InvalidOperation

    rows = np.flatnonzero(float32_midpoints(w))
    if not rows.size:
        return w32
    w32 = w32.copy()
    for i in rows:
        tok = batch.token(int(i), "weight")
        if tok is None:  # (the text is kept for every chunk with such a weight)
            continue
        try:
            exact = Decimal(tok.decode("ascii"))
        except (InvalidOperation, UnicodeDecodeError):
            continue
        mid = Decimal(float(w[i]))  # exact: a float64 is a finite binary fraction
        if exact == mid:
            continue  # the midpoint itself: ties to even, as the cast did
        lo, hi = sorted((w32[i], np.nextafter(w32[i], np.float32(np.inf if w[i] > w32[i] else -np.inf))))
        w32[i] = hi if exact > mid else lo
    return w32


def fsync_path(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class AtomicParquet:
    """A ParquetWriter on a temporary name next to ``out``, renamed only on success.

    A failure of the file system (a full disk, a file-size limit, the folder removed)
    is raised as ``pipeline.writers.OutputWriteError`` naming ``out``, not the temporary
    file; temporaries of ``out`` that killed writers left are removed first
    (``pipeline.writers.remove_abandoned_temporaries``).  ``replace=False``: an existing
    ``out`` is never replaced (:meth:`publish` raises ``FileExistsError``)."""

    def __init__(self, out, schema: pa.Schema, row_group_size: int = 1 << 20, *, replace: bool = True):
        self.out = Path(out)
        self.replace = bool(replace)
        self.schema = schema
        self.row_group_size = int(row_group_size)
        self._file = None
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            remove_abandoned_temporaries(self.out)
            self.tmp = owned_temp_for(self.out)
            # pyarrow cannot take a name that is not UTF-8: then Python opens the file
            self._file = None if is_utf8(self.tmp) else open(self.tmp, "wb")
            self._w = pq.ParquetWriter(self._file if self._file is not None else str(self.tmp), schema,
                                       compression=PARQUET_COMPRESSION, use_dictionary=False,
                                       write_page_checksum=True)  # verified on read (pipeline.graph)
        except BaseException as exc:
            self._close_file()
            if getattr(self, "tmp", None) is not None:
                with contextlib.suppress(OSError):
                    self.tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError) and not isinstance(exc, OutputWriteError):
                raise OutputWriteError(self.out, exc) from exc
            raise
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sssp-parquet")
        self._pending = None

    def write(self, arrays: list, after=None):
        """Queue one table (and an optional follow-up task for the same thread); at
        most one write is in flight, which bounds memory."""
        tbl = pa.Table.from_arrays([pa.array(a) for a in arrays], schema=self.schema)
        self._wait()

        def task():
            self._w.write_table(tbl, row_group_size=self.row_group_size)
            if after is not None:
                after()

        self._pending = self._pool.submit(task)

    def _wait(self):
        if self._pending is not None:
            p, self._pending = self._pending, None
            with self._naming_out():
                p.result()

    @contextlib.contextmanager
    def _naming_out(self):
        """An ``OSError`` of the file system in the block as an ``OutputWriteError``
        naming ``out`` (pyarrow's named the temporary file, or nothing)."""
        try:
            yield
        except OutputWriteError:
            raise
        except OSError as exc:
            raise OutputWriteError(self.out, exc) from exc

    def commit(self, meta: dict):
        self.close(meta)
        self.publish()

    def close(self, meta: dict):
        """Finish the temporary file (footer and metadata included) without publishing
        it: it can be read back (``self.tmp``) before :meth:`publish` or :meth:`abort`."""
        self._wait()
        self._pool.shutdown()
        text = json.dumps(meta, sort_keys=True)
        full = self.schema.with_metadata({META_KEY: text.encode()})
        # the Arrow schema travels in the footer under ARROW:schema; replace it so that
        # readers see the metadata as the schema's own (it is only known at the end)
        self._w.add_key_value_metadata({
            META_KEY.decode(): text,
            "ARROW:schema": base64.b64encode(full.serialize().to_pybytes()).decode(),
        })
        with self._naming_out():
            self._w.close()
            self._close_file()

    def _close_file(self):
        if self._file is not None:
            f, self._file = self._file, None
            f.close()

    def publish(self):
        with self._naming_out():
            fsync_path(self.tmp)  # on disk before the rename makes it the real file
            if self.replace:
                os.replace(self.tmp, self.out)
        if not self.replace:
            self._publish_new()
        fsync_folder(self.out.parent)  # the rename on disk too (as pipeline.writers.atomic_path)

    def _publish_new(self):
        """Give the file its name only where no file has it: a hard link, which fails on
        an existing name (a rename would replace a cached copy that another process made
        meanwhile and holds in use), then the temporary name goes.  Where the file system
        has no hard links, a rename after a look (a narrow race remains there).

        Raises
        ------
        FileExistsError
            ``out`` exists (the temporary file is removed).
        """
        import errno

        try:
            try:
                os.link(self.tmp, self.out)
            except FileExistsError:
                raise
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK,
                                     errno.ENOSYS, errno.EACCES):
                    raise OutputWriteError(self.out, exc) from exc
                if os.path.lexists(self.out):
                    raise FileExistsError(errno.EEXIST, "exists", str(self.out)) from None
                with self._naming_out():
                    os.replace(self.tmp, self.out)
                return
        except BaseException:
            with contextlib.suppress(OSError):
                self.tmp.unlink(missing_ok=True)
            raise
        with contextlib.suppress(OSError):
            self.tmp.unlink()

    def abort(self):
        try:
            if self._pending is not None:
                try:
                    self._pending.result()
                except Exception:
                    pass
            self._pool.shutdown()
            self._w.close()
        except Exception:  # pragma: no cover - best effort cleanup
            pass
        finally:
            try:
                self._close_file()
            except OSError:  # pragma: no cover - best effort cleanup
                pass
            try:
                self.tmp.unlink()
            except OSError:  # gone (its folder removed), or a read-only mount: nothing to do
                pass


def read_meta(path) -> dict:
    """The ``sssp`` metadata of a Parquet file written by ingest/generate."""
    with open_parquet(path) as pf:
        md = pf.schema_arrow.metadata or {}
        if META_KEY not in md:
            md = pf.metadata.metadata or {}
    if META_KEY not in md:
        raise InputError(path, None, "no 'sssp' metadata: not written by sssp ingest/generate")
    return json.loads(md[META_KEY])


_I64_MIN, _I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)
WEIGHTS_FORMS = "file, unit, random:LO:HI:SEED (integers) or random-float:LO:HI:SEED (reals)"


def _short(spec: str) -> str:
    return spec if len(spec) <= 80 else f"{spec[:60]}... ({len(spec):,} characters)"


def parse_weights_spec(spec: str):
    """``--weights SPEC`` -> ``(kind, (lo, hi) or None, seed or None)``.

    ``kind`` is ``"file"``, ``"unit"``, ``"random"`` or ``"random-float"``. Every bad
    value is a :class:`kernels.errors.UsageError` naming the option and the expected
    form (one line, exit status 2), before anything is read.
    """
    spec = str(spec if spec is not None else "file").strip()
    if spec in ("file", "auto"):
        return "file", None, None
    if spec in ("unit", "one", "1"):
        return "unit", None, None
    head, _, _ = spec.partition(":")
    if head not in ("random", "random-float", "random-int"):
        raise UsageError(f"{opt(f'--weights {spec}')}: expected {WEIGHTS_FORMS}")
    kind = "random-float" if head == "random-float" else "random"
    form = f"{head}:LO:HI:SEED"
    rest = spec.split(":")[1:]
    if len(rest) != 3:
        raise UsageError(f"{opt(f'--weights {spec}')}: expected {form} (3 values after '{head}:', found {len(rest)})")
    lohi = []
    for name, tok in (("LO", rest[0]), ("HI", rest[1])):
        if kind == "random" and re.fullmatch(r"\s*[+-]?0*[1-9][0-9]{19,}\s*", tok):  # int() stops at 4,300 digits
            raise UsageError(f"{opt(f'--weights {_short(spec)}')}: {name} {show_number(tok.strip().encode())} does not "
                             f"fit in 64 bits ({_I64_MIN}..{_I64_MAX}); expected {form}")
        try:
            if not tok.isascii() or (kind == "random" and not is_decimal(tok)):
                raise ValueError(tok)  # int() took the Arabic-Indic "\u0669" as 9
            v = float(tok) if kind == "random-float" else int(tok, 10)
        except ValueError:
            what = "a number" if kind == "random-float" else "an integer"
            raise UsageError(f"{opt(f'--weights {spec}')}: {name} {tok!r} is not {what}; expected {form}") from None
        if kind == "random-float" and not np.isfinite(v):
            raise UsageError(f"{opt(f'--weights {spec}')}: {name} {tok!r} is not a finite number; expected {form}")
        if kind == "random" and not (_I64_MIN <= v <= _I64_MAX):
            raise UsageError(f"{opt(f'--weights {spec}')}: {name} {v} does not fit in 64 bits "
                             f"({_I64_MIN}..{_I64_MAX}); expected {form}")
        lohi.append(v)
    if len(rest[2]) > 4000:  # int() stops at 4,300 digits: no seed needs that many
        raise UsageError(f"{opt(f'--weights {_short(spec)}')}: SEED has {len(rest[2]):,} characters; expected {form} "
                         "with a whole number SEED >= 0 of at most 4,000 digits")
    try:
        if not is_decimal(rest[2]):
            raise ValueError(rest[2])
        seed = int(rest[2], 10)
    except ValueError:
        raise UsageError(f"{opt(f'--weights {spec}')}: SEED {rest[2]!r} is not a whole number; expected {form}") from None
    if seed < 0:
        raise UsageError(f"{opt(f'--weights {spec}')}: SEED {seed} is negative; expected {form} with SEED >= 0")
    lo, hi = lohi
    if hi < lo:
        raise UsageError(f"{opt(f'--weights {spec}')}: HI {rest[1]} is below LO {rest[0]}; expected {form} with LO <= HI")
    if kind == "random-float" and not np.isfinite(hi - lo):
        raise UsageError(f"{opt(f'--weights {spec}')}: HI - LO overflows float64; expected {form} with a "
                         "narrower range")
    return kind, (lo, hi), seed


def _inexact_integer(name: str, bits: int, stored: float) -> str:
    """Why an integer weight is refused in the real type ``name`` (of ``bits``
    significant bits) that would store it as ``stored``: the middle of the line, after
    "weight V" and before what to use instead."""
    return (f"is an integer that {name} cannot hold exactly: it would be stored as {stored:.17g} ({name} holds "
            f"every integer up to 2**{bits} = {1 << bits:,} in magnitude, larger ones only when rounding leaves "
            "them unchanged)")


class WeightPlan:
    """How weights are made: from the file, unit, or seeded random."""

    def __init__(self, spec: str | None, file_weighted: bool, file_float: bool, weight_type: str | None, display):
        spec = (spec or "file").strip()
        self.rng = None
        self.kind, lohi, self.seed = parse_weights_spec(spec)
        if self.kind == "file" and not file_weighted:
            self.kind = "unit"
        if lohi is not None:
            self.lo, self.hi = lohi
            self.rng = np.random.default_rng(self.seed)
        self.is_float = (self.kind == "file" and file_float) or self.kind == "random-float"
        if weight_type is None:
            weight_type = "float64" if self.is_float else "int64"
        if weight_type not in WEIGHT_TYPES:
            raise UsageError(f"{opt(f'--weight-type {weight_type}')}: expected one of {', '.join(WEIGHT_TYPES)}")
        if self.is_float and weight_type.startswith("int"):
            raise InputError(display, None, f"real-valued weights cannot be stored as {weight_type}; "
                             f"use {opt('--weight-type float32')} or {opt('--weight-type float64')}")
        self.weight_type = weight_type
        self.np_type = WEIGHT_TYPES[weight_type]
        if self.kind == "random" and weight_type.startswith("int"):
            info = np.iinfo(self.np_type)
            if self.lo < info.min or self.hi > info.max:
                raise UsageError(f"{opt(f'--weights {spec}')}: the range {self.lo}..{self.hi} does not fit "
                                 f"{weight_type} ({info.min}..{info.max})")
        if self.kind == "random" and weight_type in FLOAT_BITS:
            bits = FLOAT_BITS[weight_type]
            if max(abs(self.lo), abs(self.hi)) > 1 << bits:
                raise UsageError(f"{opt(f'--weights {spec}')}: integers beyond 2**{bits} = {1 << bits:,} in magnitude "
                                 f"are not all exact in {weight_type}; use {opt('--weight-type int64')}, or a range "
                                 f"within -{1 << bits}..{1 << bits}")

    label_override = None

    @property
    def label(self):
        if self.label_override:
            return self.label_override
        if self.kind in ("random", "random-float"):
            return f"{self.kind}:{self.lo}:{self.hi}:{self.seed}"
        return self.kind

    def make(self, n: int, file_w):
        if self.kind == "file":
            return file_w
        if self.kind == "unit":
            return np.ones(n, dtype=self.np_type)
        if self.kind == "random":
            if self.hi == _I64_MAX:  # hi + 1 does not fit int64
                return self.rng.integers(self.lo, self.hi, size=n, endpoint=True)
            return self.rng.integers(self.lo, self.hi + 1, size=n)
        return self.rng.uniform(self.lo, self.hi, size=n)


class EdgeSink:
    """Collects validated edge batches, computes the statistics and writes Parquet.

    Parameters
    ----------
    out : path of the final Parquet file.
    display : file name used in messages.
    vertices : N when the header gives it, else ``None`` (edge lists: max id + 1).
    id_base : 0 or 1.
    expand : emit both arcs for every record (undirected input or ``--undirected``);
        a self-loop is emitted once.
    weights : a :class:`WeightPlan`.
    id_type : "int32" or "int64".
    drawn : the option that drew the weights (``sssp generate``'s ``--weights 1:100``),
        named instead of a file line when a weight is refused; default: ``--weights``
        with the plan's label where the plan draws them (``random:...``).
    """

    def __init__(self, out, display, *, vertices, id_base, expand, weights: WeightPlan,
                 id_type="int32", row_group_size=1 << 20, limits: Limits | None = None,
                 header_line=None, drawn: str | None = None, replace: bool = True, integer_tokens: bool = True):
        self.display = display
        self.limits = limits or Limits()
        self.header_line = header_line
        self._integer = weights.weight_type.startswith("int")
        # weights not from the file: a refusal names the option that drew them
        self._generated = drawn is not None or weights.kind in ("random", "random-float")
        self.integer_tokens = integer_tokens  # (False: the format declares its values real, MatrixMarket)
        self._drawn = drawn
        self._wabs = 0.0        # largest |weight| so far, and where: (batch, row, weight)
        self._wabs_at = None
        self._bound_n = None    # set when the solvers' bound needs the in-arc sum (see commit)
        self._maxid_at = None   # (batch, row) of the largest id (files without a vertex count)
        self.vertices = vertices
        self.id_base = id_base
        self.expand = expand
        self.wp = weights
        self.id_type = id_type
        self.id_np = np.int32 if id_type == "int32" else np.int64
        schema = pa.schema([("src", _PA[id_type]), ("dst", _PA[id_type]), ("weight", _PA[weights.weight_type])])
        self.writer = AtomicParquet(out, schema, row_group_size, replace=replace)
        self.records = 0
        self.arcs = 0
        self.wmin = None
        self.wmax = None
        self.negative = 0
        self.self_loops = 0
        self.max_id = -1
        self.min_id = None
        self._keys = []
        self._keys_ok = True
        # key sorts run on their own thread, beside the Parquet writer's
        self._key_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sssp-keys")
        self._key_pending = None

    # -- per batch ---------------------------------------------------------------
    def add(self, src: np.ndarray, dst: np.ndarray, w, batch):
        n = len(src)
        if n == 0:
            return
        w = self.wp.make(n, w)
        w = self._cast_weights(w, batch)
        self._track_weights(w, batch)
        hi = max(int(src.max()), int(dst.max()))
        if self.vertices is None:
            self._check_ids(src, dst, hi, batch)
        if self.id_type == "int32":
            if hi > I32_MAX:
                raise IdOverflow()
        if self.expand:
            s2 = np.empty(2 * n, dtype=self.id_np)
            d2 = np.empty(2 * n, dtype=self.id_np)
            s2[0::2] = src
            s2[1::2] = dst
            d2[0::2] = dst
            d2[1::2] = src
            w2 = np.repeat(w, 2)
            loops = src == dst
            if loops.any():
                keep = np.ones(2 * n, dtype=bool)
                keep[1::2] = ~loops
                s2, d2, w2 = s2[keep], d2[keep], w2[keep]
            src, dst, w = s2, d2, w2
        else:
            src = src.astype(self.id_np, copy=False)
            dst = dst.astype(self.id_np, copy=False)
        self.records += n
        self.arcs += len(src)
        lo, hi = w.min(), w.max()
        self.wmin = lo if self.wmin is None else min(self.wmin, lo)
        self.wmax = hi if self.wmax is None else max(self.wmax, hi)
        if lo < 0:
            self.negative += int(np.count_nonzero(w < 0))
        self.self_loops += int(np.count_nonzero(src == dst))
        idlo = int(min(src.min(), dst.min()))
        idhi = int(max(src.max(), dst.max()))
        self.max_id = max(self.max_id, idhi)
        self.min_id = idlo if self.min_id is None else min(self.min_id, idlo)
        self._wait_keys()
        # (src << 32 | dst) keys: ids past 2**31 collide, also under a header whose n*n
        # passes int64 (p sp 4294967306 2: arcs 1->4294967301 and 1->5 counted as parallel)
        if self._keys_ok and (self.vertices is None or int(self.vertices) ** 2 >= 2**63) and self.max_id >= 2**31:
            self._keys_ok = False
            self._keys = []
        self.writer.write([src, dst, w])
        if self._keys_ok:
            self._key_pending = self._key_pool.submit(self._add_keys, src, dst)

    def _track_weights(self, w, batch):
        """The largest |weight| so far and where it is, for the path-length bound that
        :meth:`finish_checks` and :meth:`commit` apply (the solvers' rule)."""
        lo, hi = float(w.min()), float(w.max())
        big = max(abs(lo), abs(hi))
        if big > self._wabs or self._wabs_at is None:
            j = int(np.argmax(np.abs(w.astype(np.float64))))
            self._wabs, self._wabs_at = big, (batch, j, w[j].item())

    def _check_ids(self, src, dst, hi, batch):
        """Files without a vertex count (edge lists): ids make the vertex count."""
        if hi <= self.max_id:
            return
        j = int(np.argmax(np.maximum(src, dst)))
        self._maxid_at = (batch, j)
        mv = self.limits.max_vertices
        if mv is not None and hi + 1 - self.id_base > mv:
            line = batch.line_of(j) if batch else None
            self.limits.vertices(hi + 1 - self.id_base, 0, "records", line, None,
                                 what=f"vertex id {hi} makes")

    def finish_checks(self, vertices: int):
        """Checks that need the whole file: for inputs without a vertex count, the
        vertex count the largest id makes, and the weights against it."""
        if self.vertices is not None:
            self._check_bound(int(self.vertices))
            return
        n = int(vertices)
        line = None
        if self._maxid_at is not None and self._maxid_at[0] is not None:
            line = self._maxid_at[0].line_of(self._maxid_at[1])
        self.limits.vertices(n, self.records, "records", line, None,
                             what=f"the largest vertex id {self.max_id} makes")
        self._check_bound(n)

    def _check_bound(self, n: int, bound=None, distance_bound=None):
        """The solvers' rule on path lengths (``kernels.graph.path_bound_of``): integer
        weights must keep every shortest path below 2**53, real ones finite, and their
        per-source sums too. Without ``bound`` only the crude (n - 1) * max|w| is tried;
        when it fails, the in-arc sum is computed from the written arcs in :meth:`commit`,
        which passes the bound on each distance alone (``distance_bound``) as well, so the
        message can tell a path that overflows from a per-source sum that does."""
        if self._wabs_at is None or n < 2:
            return
        if bound is None:
            bound = path_bound_of(n, abs(self._wabs_at[2]), self._integer)
            if path_bound_ok(bound, self._integer):
                return
            self._bound_n = n
            return
        if path_bound_ok(bound, self._integer):
            return
        b, j, wv = self._wabs_at
        if self.vertices is not None:
            where = f" (header at line {self.header_line})" if self.header_line else ""
        else:
            where = f" (its largest vertex id is {self.max_id})"
        if self._generated:
            raise InputError(self.display, None, f"{self._drawn_by()} drew weight {wv}, which "
                             + bound_message(wv, n, bound, self._integer, where, distance_bound))
        raise InputError(self.display, b.line_of(j) if b is not None else None,
                         f"weight {wv} " + bound_message(wv, n, bound, self._integer, where, distance_bound))

    def _drawn_by(self) -> str:
        return self._drawn or opt(f"--weights {self.wp.label}")

    def _in_arc_sum(self, n: int):
        """Sum of each vertex's heaviest |in-arc weight|, read back from the finished
        temporary file (only when the crude bound failed: n values of 8 bytes)."""
        # vertices without an in-arc add 0: where n is larger than the arcs (a header's
        # vertex count raised past the limits, up to 2**63 - 1), count over the heads
        # that occur instead of allocating n values (that was a ValueError traceback
        # or an allocation of 8 n bytes)
        uniq = None
        if n > 2 * max(int(self.arcs), 1):
            with open_parquet(self.writer.tmp) as pf:
                uniq = np.unique(np.concatenate(
                    [np.zeros(0, np.int64)] + [rb.column(0).to_numpy().astype(np.int64)
                                               for rb in pf.iter_batches(columns=["dst"], batch_size=1 << 22)]))
        acc = in_arc_maxima(n if uniq is None else max(len(uniq), 1), integer=self._integer)
        with open_parquet(self.writer.tmp) as pf:
            for rb in pf.iter_batches(columns=["dst", "weight", "src"], batch_size=1 << 22):
                heads = rb.column(0).to_numpy().astype(np.int64)
                loops = rb.column(2).to_numpy().astype(np.int64) == heads  # (as the solvers: not counted)
                if uniq is not None:
                    heads = np.searchsorted(uniq, heads)
                elif self.id_base:
                    heads -= self.id_base
                acc.add(heads, rb.column(1).to_numpy(), loops)
        return acc.sum_bound()

    def _wait_keys(self):
        if self._key_pending is not None:
            p, self._key_pending = self._key_pending, None
            p.result()

    def _add_keys(self, src, dst):
        """One sorted run of (src, dst) keys per batch (on the key thread, one batch in
        flight); the final count merges the runs (:func:`count_repeats`)."""
        if self.vertices is not None and int(self.vertices) ** 2 < 2**63:
            n = int(self.vertices)
            k = src.astype(np.int64)
            if self.id_base:
                k -= self.id_base
            k *= n
            k += dst
            if self.id_base:
                k -= self.id_base
        else:
            k = src.astype(np.int64)
            k <<= 32
            k |= dst.astype(np.int64)
        # inputs grouped by source (road graphs are) leave short runs: timsort is
        # near-linear there, quicksort is faster on shuffled arcs
        m = len(src)
        grouped = m < 2 or np.count_nonzero(src[1:] < src[:-1]) <= m // 64
        k.sort(kind="stable" if grouped else "quicksort")
        self._keys.append(k)

    def _cast_weights(self, w, batch):
        """``w`` as the stored weight type, refusing (file and line named) what the cast
        would change beyond rounding a real number: an int32 overflow, a float32
        overflow, an integer weight that float32 (float64) cannot hold exactly (beyond
        2**24 (2**53) and not a multiple of a large enough power of two), and a nonzero
        real weight that float32 would store as 0 or as a subnormal (below
        1.1754944e-38 in magnitude, where float32 keeps fewer significant bits).
        Rounding a real-valued weight to the nearest float32 is inherent in choosing
        float32 and accepted (as reading a decimal number into float64 rounds it): the
        nearest to its decimal text, a weight read onto a float32 midpoint being
        rounded again from it (:func:`_round_midpoints_again`)."""
        t = self.wp.np_type
        name = self.wp.weight_type

        def refuse(bad, what):
            i = int(np.argmax(bad))
            v = w[i].item()
            if self._generated:
                raise InputError(self.display, None, f"{self._drawn_by()} drew weight {v}, {what(i, v)}")
            raise InputError(self.display, batch.line_of(i) if batch else None, f"weight {v} {what(i, v)}")

        if (w.dtype.kind == "f" and name in FLOAT_BITS and batch is not None and not self._generated
                and self.integer_tokens):
            self._refuse_rounded_integer_tokens(w, batch, name)
        if w.dtype == t:
            if w.dtype.kind == "f" and not np.isfinite(w).all():
                i = int(np.argmin(np.isfinite(w)))
                raise InputError(self.display, batch.line_of(i) if batch else None,
                                 f"weight {w[i]} is not a finite number")
            return w
        if t in (np.int32,):
            info = np.iinfo(t)
            bad = (w < info.min) | (w > info.max)
            if bad.any():
                refuse(bad, lambda i, v: f"overflows int32 (range {info.min}..{info.max}); use {opt('--weight-type int64')}")
            return w.astype(t)
        if w.dtype.kind in "iu" and name in FLOAT_BITS:
            bits = FLOAT_BITS[name]
            bad = inexact_integers(w.astype(np.int64, copy=False), bits)
            if bad.any():
                other = opt("--weight-type int64") + (f" or {opt('--weight-type float64')}" if name == "float32" else "")
                refuse(bad, lambda i, v: f"{_inexact_integer(name, bits, float(t(v)))}; use {other}")
            return w.astype(t)
        if t == np.float32:
            info = np.finfo(np.float32)
            bad = np.abs(w) > info.max
            if bad.any():
                refuse(bad, lambda i, v: f"overflows float32; use {opt('--weight-type float64')}")
            w32 = w.astype(t)
            if not self._generated and batch is not None:
                w32 = _round_midpoints_again(w, w32, batch)
            bad = (w != 0) & (np.abs(w32) < info.tiny)
            if bad.any():
                refuse(bad, lambda i, v: (
                    f"underflows float32: it would be stored as {float(w32[i]):.9g} (nonzero weights below "
                    f"{float(info.tiny):.9g} in magnitude become 0 or lose precision in float32); use "
                    f"{opt('--weight-type float64')}"))
            return w32
        return w.astype(t)

    def _refuse_rounded_integer_tokens(self, w, batch, name: str) -> None:
        """Refuse a weight written as an integer (``16777217``) that the real weight type
        ``name`` cannot hold exactly, in a column read as real numbers (a file with a real
        weight anywhere, or ``--weight-type float32/float64``): it was rounded without a
        word (to 16777216 in float32), where the same token in an integer column is
        refused.  A token written as a real (``16777217.0``, ``1.6777217e7``) is a real
        number, rounded to the type as any other."""
        bits = FLOAT_BITS[name]
        t = np.float32 if name == "float32" else np.float64
        for i in np.flatnonzero(big_whole(w, bits)):
            tok = batch.token(int(i), "weight")
            if tok is None:
                continue
            text = tok.decode("ascii", "replace").lstrip("+-")
            if not text.isdigit():
                continue
            exact = int(tok)
            stored = int(t(w[i]))
            if stored != exact:
                wide = name == "float32" and int(np.float64(exact)) == exact  # (float64 holds it)
                use = (f"{opt('--weight-type float64')} (or {opt('--weight-type int64')} where every weight is an "
                       "integer)" if wide else f"{opt('--weight-type int64')} where every weight is an integer")
                raise InputError(self.display, batch.line_of(int(i)),
                                 f"weight {tok.decode('ascii')} {_inexact_integer(name, bits, float(stored))}; use "
                                 f"{use}, or write it as a real number ({tok.decode('ascii')}.0) to accept the "
                                 "rounding")

    # -- end ----------------------------------------------------------------------
    def parallel_arcs(self):
        if not self._keys_ok:
            return None
        runs, self._keys = self._keys, []
        return count_repeats(runs)

    def commit(self, meta: dict) -> dict:
        self._wait_keys()
        self._key_pool.shutdown()
        par = self.parallel_arcs()  # overlaps the writer thread's last row group
        self.writer._wait()
        py = (lambda v: None if v is None else (float(v) if self.wp.weight_type.startswith("float") else int(v)))
        meta = dict(meta)
        meta.update(
            arcs=int(self.arcs),
            records=int(self.records),
            id_base=int(self.id_base),
            id_type=self.id_type,
            weight_type=self.wp.weight_type,
            weight_min=py(self.wmin),
            weight_max=py(self.wmax),
            negative_weights=int(self.negative),
            self_loops=int(self.self_loops),
            parallel_arcs=par,
            weights=self.wp.label,
        )
        self.writer.close(meta)
        if self._bound_n is not None:
            n = self._bound_n
            w = abs(self._wabs_at[2])
            in_arc_sum = functools.cache(lambda: self._in_arc_sum(n))  # one pass over the arcs for both bounds
            self._check_bound(n, path_bound_of(n, w, self._integer, in_arc_sum),
                              distance_bound_of(n, w, self._integer, in_arc_sum))
        self.writer.publish()
        return meta

    def abort(self):
        try:
            if self._key_pending is not None:
                try:
                    self._key_pending.result()
                except Exception:
                    pass
            self._key_pool.shutdown()
        finally:
            self._keys = []
            self.writer.abort()


def count_repeats(runs: list, threads: int | None = None) -> int:
    """Number of values in the sorted ``runs`` (1-D int64 arrays) that repeat an
    earlier value (``len(all) - len(unique(all))``), without concatenating them all.

    The value range is cut into parts at splitters sampled from the runs; each part
    gathers its slice of every run and timsort merges the slices (near-linear for
    sorted runs). Parts are disjoint in value, so their counts add up, and they run on
    ``threads`` threads (NumPy sorts release the GIL). Extra memory: ~2 parts at a time,
    i.e. 2/16 of the keys for large inputs, on top of the runs themselves.
    """
    runs = [r for r in runs if len(r)]
    total = sum(len(r) for r in runs)
    if total < 2:
        return 0
    if len(runs) == 1:
        r = runs[0]
        return int(np.count_nonzero(r[1:] == r[:-1]))
    parts = int(min(16, max(1, total >> 20)))
    if parts > 1:
        sample = np.concatenate([r[:: max(1, len(r) // 1024)] for r in runs])
        sample.sort()
        cuts = np.unique(sample[(np.arange(1, parts) * len(sample)) // parts])
    else:
        cuts = np.zeros(0, dtype=np.int64)
    pos = [np.concatenate(([0], np.searchsorted(r, cuts, "left"), [len(r)])) for r in runs]

    def one(j):
        pieces = [r[p[j]:p[j + 1]] for r, p in zip(runs, pos) if p[j + 1] > p[j]]
        if not pieces:
            return 0
        if len(pieces) == 1:
            k = pieces[0]
        else:
            k = np.concatenate(pieces)
            k.sort(kind="stable")  # timsort: merges the sorted slices
        return int(np.count_nonzero(k[1:] == k[:-1]))

    n = len(cuts) + 1
    if threads is None:
        threads = min(4, os.cpu_count() or 1)
    if n == 1 or threads <= 1:
        return sum(one(j) for j in range(n))
    with ThreadPoolExecutor(max_workers=min(threads, n), thread_name_prefix="sssp-merge") as ex:
        return sum(ex.map(one, range(n)))

