"""Line records: a fast vectorised chunk parser (pyarrow CSV) and a precise slow one.

The fast path treats a chunk of whole lines as delimiter-separated columns with a fixed
column set. Anything it cannot take at face value (a comment or ``p`` line in the
middle, a wrong column count, a non-numeric field, tabs or repeated blanks) makes it
give up on that chunk only; the slow path then re-reads the same chunk line by line,
accepts what is valid (comments, irregular blanks) and reports the exact line of what
is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from gpu_sssp.kernels.errors import opt

from ..errors import InputError

_I64_MAX = np.iinfo(np.int64).max
_I64_MIN = np.iinfo(np.int64).min

# the text formats (DIMACS, METIS, MatrixMarket, edge lists) are decimal: an optional
# sign, digits, and for reals a fraction and an exponent. Python's int()/float() would
# also take '1_000', and pyarrow's CSV parser takes '0x10' as 16.
_DEC_INT = re.compile(rb"[+-]?[0-9]+\Z")
# The digits before a point are matched one way only: '[0-9]+\.?[0-9]*' could split a run
# of digits anywhere, quadratic on a long token that then fails (300,000 digits and one
# stray byte took minutes).
_DEC_REAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_HEX = re.compile(rb"[+-]?0[xX]")


# int64's largest magnitude, 9223372036854775808, has 19 digits: a token with more
# significant digits does not fit whatever they are, and never reaches int() (which
# refuses more than 4,300 digits with a ValueError of its own, a traceback here)
I64_DIGITS = 19


def too_many_digits(tok: bytes) -> bool:
    """Whether a decimal integer token has more significant digits than any int64."""
    return len(tok.lstrip(b"+-").lstrip(b"0")) > I64_DIGITS


def show_number(tok: bytes) -> str:
    """A numeric token for a message; a long one shortened, with its digit count."""
    s = tok.decode("ascii", "replace")
    if len(s) <= 40:
        return s
    return f"{s[:20]}... ({len(s.lstrip('+-')):,} digits)"


class RealWeightAfterIntegers(InputError):
    """A real weight ("2.5") in a weight column that the file's first weight made an
    integer one ("1"): ``ingest`` reads the file again with every weight real when a
    real ``weight_type`` was asked for, and otherwise raises it (one line)."""


class RealCoordinateAfterIntegers(InputError):
    """A real coordinate ("1.5") in a ``.co`` file whose first coordinates were integers:
    ``ingest`` reads the file again with real coordinates (it said "non-numeric x
    '1.5'")."""


class NumberTooLarge(InputError):
    """An integer token too long for 64 bits, met where the file and line are not at
    hand (:func:`decimal_int`, under the format readers' header parsing): the
    enclosing :class:`~._source.Source` names them (``Source.__exit__``: its file and
    the line its cursor handed out last, the one being parsed)."""

    def __init__(self, path, line, message):
        super().__init__(path, line, message)
        self.located = path is not None


def decimal_int(tok: bytes) -> int | None:
    """The integer a decimal token spells, or ``None``.

    Raises
    ------
    NumberTooLarge
        More significant digits than any 64-bit integer has, or a value past int64.
    """
    if not _DEC_INT.match(tok):
        return None
    if too_many_digits(tok):
        raise NumberTooLarge(None, None, f"integer {show_number(tok)} does not fit in 64 bits")
    v = int(tok)
    if not _I64_MIN <= v <= _I64_MAX:  # 19 digits can still pass int64 (2**63 = 9223372036854775808)
        raise NumberTooLarge(None, None, f"integer {v} does not fit in 64 bits")
    return v


def hex_note(tok: bytes) -> str:
    """A note for a token written in hexadecimal ('' otherwise)."""
    return "; hexadecimal is not accepted, the formats' numbers are decimal" if _HEX.match(tok) else ""


@dataclass(frozen=True)
class RecordSpec:
    """How one kind of record line looks.

    kind : leading token (``b"a"`` for DIMACS arcs) or ``None`` (plain numbers).
    fields : names of the value fields after the kind token.
    floats : per field, whether it is real-valued (else integer).
    comments : tokens (DIMACS ``b"c"``) or prefixes (``b"#"``, ``b"%"``) of comment lines.
    comment_is_token : DIMACS comments are the token ``c``, others a prefix.
    header : the letter of the header line (``b"p"``), an error if met again.
    delimiter : ``" "`` or ``"\\t"`` for the fast path.
    describe : what a record should look like, for messages.
    """

    kind: bytes | None
    fields: tuple[str, ...]
    floats: tuple[bool, ...]
    comments: tuple[bytes, ...] = ()
    comment_is_token: bool = True
    header: bytes | None = None
    delimiter: str = " "
    describe: str = ""
    allow_extra: bool = False  # extra trailing columns ignored (slow path only)
    # the weight column's type was taken from the first record (DIMACS .gr, edge lists):
    # a real weight after integer ones is RealWeightAfterIntegers, which ingest reads
    # again with real weights when a real weight type is asked for
    weight_from_first: bool = False

    @property
    def ncols(self):
        return len(self.fields) + (1 if self.kind is not None else 0)


class _Fallback(Exception):
    pass


def arrow_copy(view) -> pa.Buffer:
    """The bytes of ``view`` (any bytes-like object) copied into memory Arrow owns.

    pyarrow's threaded CSV reader can drop its last reference to its input on one of
    Arrow's own worker threads *after* ``read_csv`` has returned. For a buffer over
    Python memory (``pa.py_buffer(bytearray)``) that release takes the GIL; when the
    interpreter is already finalizing (an input error ends ``sssp`` at once), Python
    ends the worker thread inside a C++ destructor and the process aborts with
    "terminate called without an active exception" (exit 134 instead of 2). Memory
    Arrow owns is released without the GIL. The copy costs ~1 ms per 16 MiB chunk.
    """
    with memoryview(view) as mv, mv.cast("B") as src:
        out = pa.allocate_buffer(len(src))
        with memoryview(out) as m, m.cast("B") as dst:
            dst[:] = src
    return out


def parse_fast(buf, spec: RecordSpec, id_type=None) -> list[np.ndarray] | None:
    """Parse a chunk of whole lines (any bytes-like object); ``None`` when it needs the
    precise path.

    ``id_type`` (``pa.int32()``) parses the id fields straight to 32 bits; a larger
    id then sends the chunk to the precise path, which reads 64-bit values.

    pyarrow gets a copy in memory it owns (:func:`arrow_copy`) and no Python callback
    (a row with the wrong column count makes ``read_csv`` fail, which is all the fast
    path needs to know): nothing its worker threads may still release after
    ``read_csv`` returns needs the GIL.
    """
    names = (["k"] if spec.kind is not None else []) + [f"f{i}" for i in range(len(spec.fields))]
    types = {f"f{i}": (pa.float64() if fl else pa.int64()) for i, fl in enumerate(spec.floats)}
    if id_type is not None:
        for i, name in enumerate(spec.fields):
            if name.endswith("id") or name in ("row", "column"):
                types[f"f{i}"] = id_type
    extra = {}
    if spec.kind is not None:
        # the kind token parsed as a boolean whose only accepted spelling is the kind
        # itself: any other token ('c', 'p', 'A', '') fails the conversion and sends the
        # chunk to the precise path, with no string column to build and compare
        types["k"] = pa.bool_()
        extra = {"true_values": [spec.kind.decode()], "false_values": []}
    data = arrow_copy(buf)
    try:
        tbl = pacsv.read_csv(
            data,
            read_options=pacsv.ReadOptions(
                column_names=names, block_size=max(1 << 20, data.size // 2 + 1), use_threads=True
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=spec.delimiter,
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False, **extra,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a wrong column count too
        return None
    if spec.kind is not None:
        if tbl.column("k").null_count:
            return None
    out = []
    for i in range(len(spec.fields)):
        col = tbl.column(f"f{i}")
        if col.null_count:
            return None
        out.append(col.to_numpy())
    if spec.floats and any(spec.floats):
        for arr, fl in zip(out, spec.floats):
            if fl and arr.size and not np.isfinite(arr).all():
                return None
            # a real token below float64's range (1e-400) parses to 0.0: a zero with an
            # exponent or a very long token in the chunk may be one, which the precise
            # path tells apart (zeros alone, common weights, stay on this path)
            if fl and arr.size and not arr.all() and _may_underflow(buf):
                return None
    return out


def _may_underflow(buf) -> bool:
    """Whether a chunk may hold a real token that underflows float64 to 0: one with an
    exponent, or one long enough (over 300 characters) to need none."""
    a = np.frombuffer(buf, dtype=np.uint8)
    if ((a | 0x20) == ord("e")).any():  # e or E
        return True
    if a.size <= 300:
        return False
    gaps = np.diff(np.flatnonzero(a <= ord(" ")), prepend=-1, append=a.size)
    return bool(gaps.max() > 301)


def underflows(tok: bytes, value: float) -> bool:
    """Whether a real token spells a non-zero number that float64 reads as 0.0."""
    if value != 0.0:
        return False
    mantissa = re.split(rb"[eE]", tok.lstrip(b"+-"), maxsplit=1)[0]
    return any(c in b"123456789" for c in mantissa)


def lone_cr_note(line: bytes) -> str:
    """The error for a line (LF-delimited, a final CR removed) that holds a carriage
    return: a line break to some readers (pyarrow's CSV parser, classic Mac OS text),
    a blank to others, so the file's lines are ambiguous and it is refused."""
    i = line.find(b"\r")
    before = line[:i].decode("utf-8", "replace")[-30:]
    return (f"carriage return (CR) inside the line, after {before!r}: lines must end with LF or CRLF; "
            "lone CR line endings (classic Mac OS) are not accepted (convert the CRs to LFs)")


def _is_comment(tok0: bytes, line: bytes, spec: RecordSpec) -> bool:
    if not spec.comments:
        return False
    if spec.comment_is_token:
        return tok0 in spec.comments
    return line.startswith(spec.comments)


def parse_slow(buf: bytes, first_line: int, spec: RecordSpec, display: str, header_line=None):
    """Line-by-line parse of a chunk; returns ``(columns, line_numbers)``.

    Raises
    ------
    InputError
        On the first line that is not a comment, a blank line or a valid record.
    """
    nf = len(spec.fields)
    vals = [[] for _ in range(nf)]
    lines = []
    kind = spec.kind
    lineno = first_line - 1
    for raw in buf.split(b"\n"):
        lineno += 1
        if b"\r" in raw:
            if raw.endswith(b"\r"):  # CRLF
                raw = raw[:-1]
            if b"\r" in raw:
                raise InputError(display, lineno, lone_cr_note(raw))
        s = raw.strip()
        if not s:
            continue
        toks = s.split()
        if _is_comment(toks[0], s, spec):
            continue
        if kind is not None:
            if toks[0] != kind:
                if spec.header is not None and toks[0] == spec.header:
                    if not header_line:  # (a sources file: its header is optional)
                        raise InputError(display, lineno, f"'{spec.header.decode()}' line after the first "
                                         f"record: a header comes before the records; expected {spec.describe}")
                    raise InputError(display, lineno, f"repeated '{spec.header.decode()}' line (the first is "
                                     f"at line {header_line}); expected {spec.describe}")
                raise InputError(display, lineno, f"expected {spec.describe}, got {_show(s)}")
            toks = toks[1:]
        if len(toks) != nf and not (spec.allow_extra and len(toks) > nf):
            want, got = nf + (kind is not None), len(toks) + (kind is not None)
            raise InputError(display, lineno, f"expected {want} column{'s' if want != 1 else ''} "
                             f"({spec.describe}), found {got}: {_show(s)}")
        for j in range(nf):
            t = toks[j]
            if spec.floats[j]:
                if not _DEC_REAL.match(t):
                    try:
                        if not np.isfinite(float(t)) and not _HEX.match(t):
                            raise InputError(display, lineno, f"{spec.fields[j]} {_show(t)} is not a finite number")
                    except ValueError:
                        pass
                    raise InputError(display, lineno, f"non-numeric {spec.fields[j]} {_show(t)} "
                                     f"(expected a decimal number; {spec.describe}){hex_note(t)}")
                v = float(t)
                if not np.isfinite(v):
                    raise InputError(display, lineno, f"{spec.fields[j]} {_show(t)} is not a finite number")
                if underflows(t, v):
                    raise InputError(display, lineno, f"{spec.fields[j]} {_show(t)} is below the smallest "
                                     "float64 (about 4.9e-324) and would be read as 0")
            else:
                if not _DEC_INT.match(t):
                    hint = hex_note(t)
                    if spec.fields[j] in ("x", "y") and not hint and _DEC_REAL.match(t):
                        raise RealCoordinateAfterIntegers(display, lineno, f"real {spec.fields[j]} {_show(t)} "
                                                          "after integer coordinates")
                    if spec.fields[j] == "weight" and not hint and spec.weight_from_first and _DEC_REAL.match(t):
                        raise RealWeightAfterIntegers(
                            display, lineno, f"real weight {_show(t)} after integer ones (the first weight "
                            f"decides the column's type): {opt('--weight-type float64')} reads every weight "
                            "as a real number")
                    raise InputError(display, lineno, f"non-numeric {spec.fields[j]} {_show(t)} "
                                     f"(expected a decimal integer; {spec.describe}){hint}")
                if too_many_digits(t):
                    raise InputError(display, lineno, f"{spec.fields[j]} {show_number(t)} does not fit in 64 bits")
                v = int(t)
                if v > _I64_MAX or v < _I64_MIN:
                    raise InputError(display, lineno, f"{spec.fields[j]} {v} does not fit in 64 bits")
            vals[j].append(v)
        lines.append(lineno)
    cols = [np.array(v, dtype=np.float64 if fl else np.int64) for v, fl in zip(vals, spec.floats)]
    return cols, np.array(lines, dtype=np.int64)


def _show(b: bytes, n: int = 60) -> str:
    s = b.decode("utf-8", "replace")
    if len(s) > n:
        s = s[:n] + "..."
    return repr(s)


def float32_midpoints(a: np.ndarray) -> np.ndarray:
    """Mask of the float64 values in ``a`` that lie exactly halfway between two adjacent
    (normal, finite) float32 values.  Only these can be rounded wrongly when a decimal
    weight is read into float64 and then cast to float32 (a midpoint needs 25
    significant bits, so float64 holds it and rounding a decimal to float64 never
    crosses it; it can only land on it): ``1.0000000596046447763`` (above the midpoint
    1 + 2**-24) became 1.0 instead of the nearest float32, 1 + 2**-23."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    # a midpoint has 25 significant bits: float64's last 29 bits are 1 then 28 zeros
    # (one pass over the bits; the few candidates are then checked in full, which also
    # leaves out float32's subnormal range and its overflow)
    out = (a.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    rows = np.flatnonzero(out)
    if not rows.size:
        return out
    c = a[rows]
    with np.errstate(over="ignore", invalid="ignore"):
        f = c.astype(np.float32)
        back = f.astype(np.float64)
        other = np.nextafter(f, np.where(c > back, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
        mid = (back + other.astype(np.float64)) * 0.5
    tiny = float(np.finfo(np.float32).tiny)
    out[rows] = (back != c) & (mid == c) & np.isfinite(f) & np.isfinite(other) & (np.abs(back) >= tiny)
    return out


def _has_midpoints(cols, spec) -> bool:
    """Whether the chunk's text is kept (:meth:`Batch.token`): a real value on a float32
    midpoint (rounded again from its text), or a whole value beyond 2**24 in magnitude,
    which may be an integer written as one that float32 or float64 cannot hold (refused,
    not rounded: ``_sink.EdgeSink._cast_weights``)."""
    return any(fl and c.size and (float32_midpoints(c).any() or bool(big_whole(c).any()))
               for c, fl in zip(cols, spec.floats))


def big_whole(c: np.ndarray, bits: int = 24) -> np.ndarray:
    """Where real values ``c`` (read into float64) are whole numbers that a weight type
    of ``bits`` significant bits (float32: 24, float64: 53) may not hold as written:
    from 2**53 on (float64 itself may have rounded them: 2**53 + 1 reads as 2**53), or
    beyond 2**bits and changed by the cast to that type.  (A whole value a cast keeps is the integer written, or
    a real number read as that integer.)"""
    c = np.asarray(c)
    if c.dtype.kind != "f" or not c.size:
        return np.zeros(c.shape, dtype=bool)
    a = np.abs(c)
    out = ((a > 2.0**bits) | (a >= 2.0**53)) & np.isfinite(c) & (np.floor(c) == c)
    if bits < 53 and out.any():
        with np.errstate(over="ignore"):
            out &= (a >= 2.0**53) | (c.astype(np.float32).astype(np.float64) != c)
    return out


@dataclass
class Batch:
    """Parsed records of one chunk, able to name the line of any row (and give its
    tokens again, where the chunk's text is kept: :meth:`token`)."""

    cols: list
    first_line: int
    buf: bytes | None = None
    spec: RecordSpec | None = None
    display: str = ""
    exact: bool = True
    lines: np.ndarray | None = None
    header_line: int | None = None
    _n: int = field(default=0)
    _ends: np.ndarray | None = field(default=None, repr=False)

    def __len__(self):
        return len(self.cols[0]) if self.cols else 0

    def line_of(self, i: int) -> int:
        if self.lines is not None:
            return int(self.lines[i])
        if self.exact:
            return self.first_line + int(i)
        # comments or blank lines inside: rescan just this chunk for exact numbers
        _, self.lines = parse_slow(self.buf, self.first_line, self.spec, self.display, self.header_line)
        return int(self.lines[i])

    def token(self, i: int, field: str) -> bytes | None:
        """The text of field ``field`` (``"weight"``) in row ``i``, where the chunk's text
        is kept (``None`` otherwise): a weight that float64 read onto a float32
        midpoint is rounded again from it (``_sink.EdgeSink``)."""
        if self.buf is None or self.spec is None or field not in self.spec.fields:
            return None
        if self._ends is None:  # where each line of the chunk ends, found once
            self._ends = np.flatnonzero(np.frombuffer(self.buf, dtype=np.uint8) == ord("\n"))
        k = self.line_of(i) - self.first_line
        start = int(self._ends[k - 1]) + 1 if k > 0 else 0
        end = int(self._ends[k]) if k < len(self._ends) else len(self.buf)
        toks = self.buf[start:end].split()
        if self.spec.kind is not None:
            toks = toks[1:]
        j = self.spec.fields.index(field)
        return toks[j] if j < len(toks) else None


def iter_batches(cursor, spec: RecordSpec, display: str, header_line=None, id_type=None):
    """Yield a :class:`Batch` per chunk of the cursor's remaining text."""
    if id_type is None:
        id_type = getattr(cursor, "id_type", None)
    for buf, end, first, nlines, lone_cr in cursor.chunks():
        # pyarrow reads '0x10' as an integer: a chunk with an 'x' anywhere (records have
        # none) goes to the precise path, which refuses hexadecimal with its line; and
        # it takes a lone CR for a line break, which the precise path refuses
        if lone_cr or buf.find(b"x", 0, end) >= 0 or buf.find(b"X", 0, end) >= 0:
            cols = None
        else:
            cols = parse_fast(memoryview(buf)[:end], spec, id_type)
        if cols is None:
            text = bytes(buf[:end])
            cols, lines = parse_slow(text, first, spec, display, header_line)
            # (the text kept where a real value sits on a float32 midpoint: token())
            yield Batch(cols, first, buf=text if _has_midpoints(cols, spec) else None, spec=spec,
                        display=display, lines=lines, header_line=header_line)
        else:
            exact = len(cols[0]) == nlines
            keep = not exact or _has_midpoints(cols, spec)
            yield Batch(cols, first, buf=bytes(buf[:end]) if keep else None, spec=spec, display=display,
                        exact=exact, header_line=header_line)
