"""Per-format readers: header parsing, record specs, id checks, record counts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpu_sssp.kernels.errors import counted, opt

from ..errors import InputError
from ._limits import Limits
from ._records import Batch, RecordSpec, _show, decimal_int, hex_note, iter_batches

FORMATS = ("gr", "ss", "co", "mtx", "metis", "edgelist", "pace")
ALIASES = {
    "dimacs": "gr", "dimacs9": "gr", "gr": "gr", "ss": "ss", "co": "co",
    "mtx": "mtx", "mm": "mtx", "matrixmarket": "mtx",
    "metis": "metis", "graph": "metis", "dimacs10": "metis",
    "edgelist": "edgelist", "el": "edgelist", "wel": "edgelist", "snap": "edgelist", "txt": "edgelist",
    "pace": "pace", "tw": "pace",
}


@dataclass
class Header:
    """What a reader learnt before the records."""

    vertices: int | None
    id_base: int
    directed: bool
    weighted: bool
    weight_float: bool
    expected: int | None = None  # records announced by the header
    header_line: int | None = None
    header_text: str = ""
    extra: dict = field(default_factory=dict)


def _int_or_none(tok: bytes):
    return decimal_int(tok)


def _next_content_line(cursor, comments=(b"%",)):
    """The next line that is neither blank nor a comment, unstripped, with its line number;
    ``(None, None)`` at the end of the input."""
    while True:
        line = cursor.readline()
        if line is None:
            return None, None
        s = line.strip()
        if s and not s.startswith(comments):
            return line, cursor.lineno - 1


def _is_float_token(tok: bytes) -> bool:
    if _int_or_none(tok) is not None:
        return False
    try:
        float(tok)
        return True
    except ValueError:
        return False


def dimacs_header(cursor, display, *, problem: tuple, record: bytes | None, what: str):
    """Read ``c`` comments and the single ``p`` line up to the first record.

    ``problem`` are the expected tokens after ``p`` (e.g. ``(b"sp",)``), followed by
    integer fields; ``record`` is the record kind (``b"a"``) or ``None`` for plain
    number lines (PACE). Returns ``(ints, line_number, text, first_record_tokens)``.
    """
    p = None
    seen = False
    nint = what.count(" ") + 1 - 1 - len(problem)  # tokens after 'p problem'
    while True:
        line = cursor.readline()
        if line is None:
            break
        lineno = cursor.lineno - 1
        s = line.strip()
        if not s:
            continue
        seen = True
        toks = s.split()
        if toks[0] == b"c":
            continue
        if toks[0] == b"p":
            if p is not None:
                raise InputError(display, lineno, f"repeated 'p' line (the first is at line {p[1]}); "
                                 f"expected exactly one '{what}'")
            got = tuple(toks[1 : 1 + len(problem)])
            ints = [_int_or_none(t) for t in toks[1 + len(problem) :]]
            if got != problem or len(ints) != nint or any(v is None or v < 0 for v in ints):
                raise InputError(display, lineno, f"expected '{what}', got {_show(s)}")
            p = (ints, lineno, s.decode("utf-8", "replace"))
            continue
        is_record = (toks[0] == record) if record is not None else (_int_or_none(toks[0]) is not None)
        if is_record:
            if p is None:
                raise InputError(display, lineno, f"missing '{what}' line before the first record")
            cursor.unread(line)
            return p[0], p[1], p[2], toks
        kinds = "'c', 'p'" + (f" or '{record.decode()}'" if record else " or number")
        raise InputError(display, lineno, f"expected a {kinds} line, got {_show(s)}")
    if not seen:
        raise InputError(display, None, f"empty file: expected a '{what}' header")
    if p is None:
        raise InputError(display, None, f"missing '{what}' line")
    return p[0], p[1], p[2], None


def check_ids(src, dst, batch, display, lo: int, hi: int | None, *, header_desc: str = "", zero_hint=False):
    """Raise InputError naming the first row whose ids fall outside [lo, hi]."""
    if len(src) == 0:
        return
    mn = min(int(src.min()), int(dst.min()))
    mx = max(int(src.max()), int(dst.max()))
    if mn >= lo and (hi is None or mx <= hi):
        return
    bad = (src < lo) | (dst < lo)
    if hi is not None:
        bad |= (src > hi) | (dst > hi)
    i = int(np.argmax(bad))
    v = int(src[i]) if (src[i] < lo or (hi is not None and src[i] > hi)) else int(dst[i])
    rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
    msg = f"vertex id {v} out of range: expected {rng}{header_desc}"
    if zero_hint and v == 0 and lo == 1:
        msg += f"; the file looks 0-based: pass {opt('--zero-based')} to accept 0-based ids"
    raise InputError(display, batch.line_of(i), msg)


class CountCheck:
    """Compares records with the header's announced count."""

    def __init__(self, display, expected, header_line, header_text, noun):
        self.display = display
        self.expected = expected
        self.header_line = header_line
        self.header_text = header_text
        self.noun = noun
        self.seen = 0

    def add(self, n, batch):
        if self.expected is not None and self.seen + n > self.expected:
            i = self.expected - self.seen
            raise InputError(self.display, batch.line_of(i),
                             f"more {self.noun} than announced: expected {self.expected:,} {self.noun} "
                             f"(from '{self.header_text}' at line {self.header_line}), this is number "
                             f"{self.expected + 1:,}")
        self.seen += n

    def finish(self, end_line=None):
        """After the last record; ``end_line``: the line after the file's last one,
        where the records ran out (named by the error, as for a truncated file)."""
        if self.expected is not None and self.seen != self.expected:
            end = (f": the {self.noun} run out at the end of the file (after line {end_line - 1})"
                   if end_line is not None else "")
            raise InputError(self.display, end_line,
                             f"number of {self.noun} does not match the header: expected {self.expected:,} "
                             f"{self.noun} (from '{self.header_text}' at line {self.header_line}), "
                             f"found {self.seen:,}{end}")


# -- DIMACS .gr -----------------------------------------------------------------------
def _dimacs_batches(cursor, spec, display, hline, htext, m, n, base, zero_based, what):
    """Record batches of a DIMACS-style body (``.gr`` arcs, PACE edges) checked against
    the ``p`` line: ids in ``base .. base + n - 1`` and exactly ``m`` records.
    Yields ``(u, v, w or None, batch)``."""
    cc = CountCheck(display, m, hline, htext, what)
    desc = f" (from '{htext}' at line {hline})"
    for b in iter_batches(cursor, spec, display, hline):
        u, v = b.cols[0], b.cols[1]
        cc.add(len(u), b)
        check_ids(u, v, b, display, base, base + n - 1, header_desc=desc, zero_hint=not zero_based)
        yield u, v, (b.cols[2] if len(b.cols) > 2 else None), b
    cc.finish(cursor.lineno)


def read_gr(cursor, display, *, zero_based=False, undirected=False, limits=None, real_weights=False):
    ints, hline, htext, first = dimacs_header(cursor, display, problem=(b"sp",), record=b"a", what="p sp N M")
    n, m = ints
    (limits or Limits()).header(n, m, "arcs", 8, "'a U V W' line", hline, htext)
    # the first arc's weight decides the column's type, unless real weights are asked for
    wfloat = real_weights or bool(first and len(first) >= 4 and _is_float_token(first[3]))
    base = 0 if zero_based else 1
    hdr = Header(n, base, not undirected, True, wfloat, m, hline, htext)
    spec = RecordSpec(b"a", ("source id", "target id", "weight"), (False, False, wfloat),
                      comments=(b"c",), header=b"p", describe="'a U V W'", weight_from_first=True)
    return hdr, _dimacs_batches(cursor, spec, display, hline, htext, m, n, base, zero_based, "arcs")


# -- PACE p tw -------------------------------------------------------------------------
def read_pace(cursor, display, *, zero_based=False, undirected=True, limits=None):
    ints, hline, htext, first = dimacs_header(cursor, display, problem=(b"tw",), record=None, what="p tw N M")
    n, m = ints
    (limits or Limits()).header(n, m, "edges", 4, "'U V' line", hline, htext)
    base = 0 if zero_based else 1
    hdr = Header(n, base, False, False, False, m, hline, htext)
    spec = RecordSpec(None, ("first id", "second id"), (False, False), comments=(b"c",), header=b"p",
                      describe="'U V' (PACE edge)")
    return hdr, _dimacs_batches(cursor, spec, display, hline, htext, m, n, base, zero_based, "edges")


# -- MatrixMarket ------------------------------------------------------------------------
def read_mtx(cursor, display, *, zero_based=False, undirected=False, limits=None):
    line = cursor.readline()
    while line is not None and not line.strip():
        line = cursor.readline()
    if line is None:
        raise InputError(display, None, "empty file: expected a '%%MatrixMarket matrix coordinate ...' header")
    toks = line.strip().lower().split()
    if not toks or toks[0] != b"%%matrixmarket":
        raise InputError(display, cursor.lineno - 1, f"expected '%%MatrixMarket matrix coordinate FIELD SYMMETRY', got {_show(line)}")
    if len(toks) != 5 or toks[1] != b"matrix":
        raise InputError(display, cursor.lineno - 1, f"expected '%%MatrixMarket matrix coordinate FIELD SYMMETRY', got {_show(line)}")
    # (a byte that is not UTF-8 is shown as the replacement character, never decoded strictly)
    layout, fld, sym = (t.decode(errors="replace") for t in toks[2:5])
    if layout != "coordinate":
        raise InputError(display, cursor.lineno - 1, f"MatrixMarket '{layout}' layout is a dense matrix, expected 'coordinate'")
    if fld not in ("pattern", "integer", "real", "double"):
        raise InputError(display, cursor.lineno - 1, f"MatrixMarket field '{fld}' not supported (expected pattern, integer or real)")
    if sym not in ("general", "symmetric"):
        raise InputError(display, cursor.lineno - 1, f"MatrixMarket symmetry '{sym}' not supported (expected general or symmetric)")
    line, sline = _next_content_line(cursor)
    if line is None:
        raise InputError(display, None, "missing the size line 'ROWS COLS ENTRIES'")
    s = line.strip()
    size = [_int_or_none(t) for t in s.split()]
    if len(size) != 3 or any(v is None or v < 0 for v in size):
        raise InputError(display, sline, f"expected the size line 'ROWS COLS ENTRIES', got {_show(s)}")
    rows, cols, nnz = size
    weighted = fld != "pattern"
    wfloat = fld in ("real", "double")
    symmetric = sym == "symmetric"
    if sym != "general" and rows != cols:  # (symmetric, skew-symmetric, hermitian: square by definition)
        raise InputError(display, sline, f"a {sym} matrix must be square, got {rows:,} x {cols:,} "
                         f"({_show(s)}): a damaged header, or the matrix is general")
    n = max(rows, cols)
    (limits or Limits()).header(n, nnz, "entries", 6 if weighted else 4,
                                "'ROW COL VALUE' line" if weighted else "'ROW COL' line", sline, s.decode())
    hdr = Header(n, 1, not (symmetric or undirected), weighted, wfloat, nnz, sline, s.decode(),
                 extra={"mtx_field": fld, "mtx_symmetry": sym, "mtx_rows": rows, "mtx_cols": cols})
    fields = ("row", "column") + (("weight",) if weighted else ())
    spec = RecordSpec(None, fields, (False, False) + ((wfloat,) if weighted else ()),
                      comments=(b"%",), comment_is_token=False,
                      describe="'ROW COL" + (" VALUE'" if weighted else "'"))

    def batches():
        cc = CountCheck(display, nnz, sline, s.decode(), "entries")
        for b in iter_batches(cursor, spec, display):
            u, v = b.cols[0], b.cols[1]
            w = b.cols[2] if weighted else None
            cc.add(len(u), b)
            if rows == cols:
                check_ids(u, v, b, display, 1, n, header_desc=f" (size line {sline})")
            else:
                check_ids(u, u, b, display, 1, rows, header_desc=f" (rows, size line {sline})")
                check_ids(v, v, b, display, 1, cols, header_desc=f" (columns, size line {sline})")
            yield u, v, w, b
        cc.finish(cursor.lineno)

    return hdr, batches()


# -- edge lists ------------------------------------------------------------------------
def read_edgelist(cursor, display, *, zero_based=True, undirected=False, limits=None, real_weights=False):
    first, lineno = _next_content_line(cursor, (b"#", b"%"))
    if first is None:
        raise InputError(display, None, "empty file: expected lines 'U V' or 'U V W'")
    toks = first.split()
    if len(toks) not in (2, 3):
        raise InputError(display, lineno, f"expected 2 or 3 columns ('U V' or 'U V W'), found {len(toks)}: {_show(first)}")
    weighted = len(toks) == 3
    wfloat = weighted and (real_weights or _is_float_token(toks[2]))
    delim = "\t" if b"\t" in first.strip() else " "
    cursor.unread(first)
    hdr = Header(None, 0, not undirected, weighted, wfloat)
    fields = ("source id", "target id") + (("weight",) if weighted else ())
    spec = RecordSpec(None, fields, (False, False) + ((wfloat,) if weighted else ()),
                      comments=(b"#", b"%"), comment_is_token=False, delimiter=delim,
                      describe="'U V W'" if weighted else "'U V'", weight_from_first=True)

    lim = limits or Limits()
    noun = "edge" if undirected else "arc"

    def batches():
        seen = 0
        for b in iter_batches(cursor, spec, display):
            u, v = b.cols[0], b.cols[1]
            w = b.cols[2] if weighted else None
            lim.records_read(seen, len(u), noun, b)  # no header: max-arcs applies to the records read
            seen += len(u)
            check_ids(u, v, b, display, 0, None, header_desc=" (edge lists use 0-based ids)")
            yield u, v, w, b

    return hdr, batches()


# -- METIS / DIMACS-10 ---------------------------------------------------------------
def read_metis(cursor, display, *, zero_based=False, undirected=False, limits=None):
    """METIS adjacency lists; gapbs's directed variant is recognised by its entry count.

    Standard METIS lists every undirected edge at both ends (``2*M`` entries for the
    header's ``M``); the gapbs test files list each directed arc once (``M`` entries).
    Such a one-end listing is read as directed arcs unless ``undirected`` (then each
    entry is an edge both ways); the header's ``extra`` says which listing it was
    (``metis_listing``: ``both-ends`` or ``one-end``) and, when read as directed, why
    (``directed_reason``, which :func:`pipeline.ingest.ingest` also logs as a warning).
    """
    line, hline = _next_content_line(cursor)
    if line is None:
        raise InputError(display, None, "empty file: expected a METIS header 'N M [FMT [NCON]]'")
    s = line.strip()
    toks = s.split()
    ints = [_int_or_none(t) for t in toks]
    if len(toks) not in (2, 3, 4) or any(v is None or v < 0 for v in ints):
        raise InputError(display, hline, f"expected a METIS header 'N M [FMT [NCON]]', got {_show(s)}")
    n, m = ints[0], ints[1]
    fmt = toks[2].decode() if len(toks) > 2 else "0"
    if len(fmt) > 3 or any(c not in "01" for c in fmt):
        raise InputError(display, hline, f"METIS fmt '{fmt}' not understood (expected digits 0/1, e.g. 0, 1, 10, 11, 100)")
    fmt = fmt.zfill(3)
    sizes, vweights, eweights = fmt[0] == "1", fmt[1] == "1", fmt[2] == "1"
    if fmt == "100":
        # gapbs uses fmt 100 for its plain directed adjacency lists (no vertex sizes)
        sizes = False
    ncon = ints[3] if len(toks) > 3 else (1 if vweights else 0)
    if not vweights:
        ncon = 0
    skip = int(sizes) + ncon
    lim = limits or Limits()
    htext = s.decode(errors="replace")
    lim.vertices(n, m, "edges", hline, htext)
    lim.arcs(m, "edges", hline, htext)
    # one line per vertex (an empty one for an isolated vertex), and at least M
    # neighbour entries (gapbs's directed variant lists each arc once)
    lim.records(n, "vertex lines", 1, "adjacency line (empty for an isolated vertex)", hline, htext)
    lim.records(m, "edges", 2 * (1 + eweights),
                "'NEIGHBOUR WEIGHT ' entry" if eweights else "'NEIGHBOUR ' entry", hline, htext)
    src, dst, ws, lines = [], [], [], []
    u = 0
    lineno = hline
    while True:
        line = cursor.readline()
        if line is None:
            break
        lineno = cursor.lineno - 1
        s = line.strip()
        if s.startswith(b"%"):
            continue
        u += 1
        if u > n:
            if s:
                raise InputError(display, lineno, f"more adjacency lines than the header's {n} vertices (header at line {hline})")
            continue
        t = s.split()
        if len(t) < skip:
            raise InputError(display, lineno, f"expected {skip} vertex size/weight value(s) before the neighbours of vertex {u}")
        for x in t[:skip]:  # vertex size / weights: not used, but numbers like the rest
            if _int_or_none(x) is None:
                raise InputError(display, lineno, f"non-numeric vertex size/weight {_show(x)} of vertex {u} "
                                 f"(expected decimal integers){hex_note(x)}")
        t = t[skip:]
        vals = [_int_or_none(x) for x in t]
        if None in vals:
            bad = t[vals.index(None)]
            raise InputError(display, lineno, f"non-numeric field {_show(bad)} in the adjacency list of vertex {u} "
                             f"(expected decimal integers){hex_note(bad)}")
        if eweights:
            if len(vals) % 2:
                raise InputError(display, lineno, f"expected 'NEIGHBOUR WEIGHT' pairs for vertex {u} (fmt {fmt}), found an odd count {len(vals)}")
            nb, wv = vals[0::2], vals[1::2]
        else:
            nb, wv = vals, []
        for x in nb:
            if x < 1 or x > n:
                raise InputError(display, lineno, f"neighbour id {x} of vertex {u} out of range: expected 1..{n} (header at line {hline})")
        src.extend([u] * len(nb))
        dst.extend(nb)
        ws.extend(wv)
        lines.extend([lineno] * len(nb))
    if u < n:
        # the line after the file's last, where vertex u + 1's line is missing (as the
        # DIMACS readers name where the arcs run out)
        raise InputError(display, cursor.lineno, f"header (line {hline}) says {n} vertices but the file has {u} "
                         f"adjacency lines: the adjacency lines run out at the end of the file "
                         f"(after line {cursor.lineno - 1})")
    src = np.array(src, dtype=np.int64)
    dst = np.array(dst, dtype=np.int64)
    w = np.array(ws, dtype=np.int64) if eweights else None
    entries = len(src)
    if entries == 2 * m:
        one_end = False
    elif entries == m:
        one_end = True
    else:
        raise InputError(display, hline, f"header (line {hline}) says {m} edges: expected {2 * m} adjacency entries "
                         f"(each edge at both ends) or {m} (directed variant), found {entries}")
    if not one_end:
        _check_symmetric(src, dst, w, np.array(lines, dtype=np.int64), display)
    # M entries for M edges: each edge at one end only. Standard METIS never does that;
    # gapbs's test graphs (4.graph, 4w.graph) do, meaning one directed arc per entry.
    # Read so by default, and say so (metadata 'directed_reason', a warning from
    # ingest); --undirected makes each entry an edge in both directions.
    directed = one_end and not undirected
    extra = {"metis_fmt": fmt, "metis_edges": m, "metis_listing": "one-end" if one_end else "both-ends"}
    if directed:
        extra["directed_reason"] = (
            f"METIS header '{htext}' (line {hline}) announces {m:,} edges and the file lists {m:,} "
            f"adjacency entries, so each edge is listed at one end only (METIS lists every edge at both "
            f"ends, {2 * m:,} entries): read as one directed arc per entry (gapbs's directed variant)")
    hdr = Header(n, 1, directed, eweights, False, None, hline, htext, extra=extra)
    hdr.extra["expand"] = one_end and undirected
    batch = Batch([src], hline + 1, lines=np.array(lines, dtype=np.int64), display=display)
    return hdr, iter([(src, dst, w, batch)])


def _check_symmetric(src, dst, w, lines, display):
    """A METIS graph is undirected: every edge u-v is listed at u and at v, with the same
    weight (fmt x1). Names the lines of the first edge whose two ends disagree."""
    if w is None:
        w = np.zeros(len(src), dtype=np.int64)
    fwd = src < dst
    bwd = src > dst
    F = (src[fwd], dst[fwd], w[fwd], lines[fwd])
    B = (dst[bwd], src[bwd], w[bwd], lines[bwd])
    fo = np.lexsort((F[2], F[1], F[0]))
    bo = np.lexsort((B[2], B[1], B[0]))
    F = tuple(a[fo] for a in F)
    B = tuple(a[bo] for a in B)
    k = min(len(fo), len(bo))
    diff = (F[0][:k] != B[0][:k]) | (F[1][:k] != B[1][:k]) | (F[2][:k] != B[2][:k])
    if not diff.any() and len(fo) == len(bo):
        return
    i = int(np.argmax(diff)) if diff.any() else k
    # the first pair (u < v) whose listings differ, in sorted order
    cands = []
    if i < len(fo):
        cands.append((int(F[0][i]), int(F[1][i])))
    if i < len(bo):
        cands.append((int(B[0][i]), int(B[1][i])))
    u, v = min(cands)
    at_u = (F[0] == u) & (F[1] == v)
    at_v = (B[0] == u) & (B[1] == v)
    if at_u.any() and at_v.any() and at_u.sum() == at_v.sum():
        j = int(np.argmax(at_u))
        jb = int(np.argmax(at_v))
        for a, b in zip(np.flatnonzero(at_u), np.flatnonzero(at_v)):
            if F[2][a] != B[2][b]:
                j, jb = int(a), int(b)
                break
        raise InputError(display, int(F[3][j]), f"edge {u}-{v} has weight {int(F[2][j])} at vertex {u} "
                         f"(line {int(F[3][j])}) but {int(B[2][jb])} at vertex {v} (line {int(B[3][jb])}): "
                         "a METIS graph is undirected, each edge is listed at both ends with one weight")
    nu, nv = int(at_u.sum()), int(at_v.sum())
    line = int(F[3][np.argmax(at_u)]) if nu else int(B[3][np.argmax(at_v)])
    raise InputError(display, line, f"edge {u}-{v} is listed {counted(nu, 'time')} at vertex {u} but {counted(nv, 'time')} at "
                     f"vertex {v}: a METIS graph is undirected, each edge is listed at both ends")


def metis_pair_weights(src, dst, draws_for):
    """Same random weight for (u, v) and (v, u) listed at both ends of a METIS file.

    ``draws_for(k)`` draws k weights, one per edge in the order its first end appears.
    Raises ValueError if an entry has no mirror.
    """
    a = np.minimum(src, dst)
    b = np.maximum(src, dst)
    n = int(max(src.max(), dst.max())) + 1 if len(src) else 1
    key = a * n + b
    first = src <= dst
    canon = key[first]
    draws = draws_for(len(canon))
    order = np.argsort(canon, kind="stable")
    sc = canon[order]
    pos = np.searchsorted(sc, key)
    pos = np.minimum(pos, len(sc) - 1) if len(sc) else pos
    if len(sc) == 0 or not (sc[pos] == key).all():
        bad = int(np.argmax(sc[pos] != key)) if len(sc) else 0
        raise ValueError(bad)
    return draws[order][pos]


# -- DIMACS .ss / .co --------------------------------------------------------------------
def read_ss(cursor, display, limits=None):
    ints, hline, htext, first = dimacs_header(cursor, display, problem=(b"aux", b"sp", b"ss"), record=b"s",
                                              what="p aux sp ss K")
    (limits or Limits()).records(ints[0], "sources", 4, "'s ID' line", hline, htext)
    spec = RecordSpec(b"s", ("source id",), (False,), comments=(b"c",), header=b"p", describe="'s ID'")
    return ints[0], hline, htext, spec


def read_co(cursor, display, limits=None, real=False):
    ints, hline, htext, first = dimacs_header(cursor, display, problem=(b"aux", b"sp", b"co"), record=b"v",
                                              what="p aux sp co N")
    (limits or Limits()).records(ints[0], "coordinates", 8, "'v ID X Y' line", hline, htext)
    # the first line decides, unless a real one came later (ingest reads the file again)
    fl = real or bool(first and len(first) >= 4 and (_is_float_token(first[2]) or _is_float_token(first[3])))
    spec = RecordSpec(b"v", ("vertex id", "x", "y"), (False, fl, fl), comments=(b"c",), header=b"p",
                      describe="'v ID X Y'")
    return ints[0], hline, htext, spec


# -- sniffing: what a file names itself, and what one that fails its reader looks like -------
_BOM = b"\xef\xbb\xbf"
_DIMACS_PROBLEMS = {(b"sp",): "gr", (b"tw",): "pace", (b"aux", b"sp", b"ss"): "ss", (b"aux", b"sp", b"co"): "co"}
#: what a file of each format is, in messages
KIND_NAMES = {
    "gr": "a DIMACS graph", "ss": "a DIMACS source list", "co": "a DIMACS coordinate file",
    "pace": "a PACE graph", "mtx": "a MatrixMarket file", "metis": "a METIS graph", "edgelist": "an edge list",
}
READ_DIMACS = ("sssp ingest reads 'p sp N M' graphs (.gr), 'p aux sp ss K' source lists (.ss), "
               "'p aux sp co N' coordinates (.co) and PACE 'p tw N M' graphs")
_DIMACS_NOTES = {b"res": " (a 9th DIMACS challenge solver's results)",
                 b"chk": " (a 9th DIMACS challenge checker's output)"}


def _head_lines(head: bytes, complete: bool) -> list:
    """The lines of the start of a file (without a UTF-8 BOM); the last one only when
    ``head`` is the whole file (else it may be cut)."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    lines = head.split(b"\n")
    if not complete or head.endswith(b"\n"):
        lines = lines[:-1]
    return lines


def file_signature(head: bytes, *, complete: bool = False):
    """The format the start of a file names itself by: ``(line, fmt, text)`` for a
    ``%%MatrixMarket`` banner (``"mtx"``) or a DIMACS-style ``p`` line after any ``c``
    comments (``"gr"``, ``"ss"``, ``"co"``, ``"pace"``; ``None`` for a problem this
    package does not read, such as ``p res`` or ``p chk``). ``None`` when the first
    line that is not blank or a ``c`` comment is neither."""
    for i, raw in enumerate(_head_lines(head, complete), 1):
        s = raw.strip()
        if not s:
            continue
        low = s.lower()
        if low.startswith(b"%%matrixmarket"):
            return i, "mtx", s
        toks = low.split()
        if toks[0] == b"c":
            continue
        if toks[0] != b"p" or len(toks) < 2:
            return None  # (a bare 'p' names no problem: left to the reader's own error)
        kind = _DIMACS_PROBLEMS.get(tuple(toks[1:2])) or _DIMACS_PROBLEMS.get(tuple(toks[1:4]))
        return i, kind, s
    return None


def dimacs_problem_message(text: bytes) -> str:
    """Why a DIMACS file with an unsupported ``p`` line (``file_signature`` gave ``None``)
    is not read."""
    toks = text.split()
    low = [t.lower() for t in toks]
    prob = b" ".join(toks[:4] if low[1:2] == [b"aux"] else toks[:2]).decode("utf-8", "replace")
    note = _DIMACS_NOTES.get(low[1] if len(low) > 1 else b"", "")
    return f"DIMACS problem line {_show(text)}: '{prob}' files{note} are not read; {READ_DIMACS}"


class _BytesCursor:
    """``LineCursor``'s line interface over bytes in memory (a trial parse of a file's start)."""

    def __init__(self, lines):
        self._lines = list(lines)
        self._i = 0
        self.lineno = 1

    def readline(self):
        if self._i >= len(self._lines):
            return None
        line = self._lines[self._i]
        self._i += 1
        self.lineno += 1
        return line.rstrip(b"\r")

    def unread(self, line):
        self._i -= 1
        self.lineno -= 1


def metis_for_edgelist(head: bytes, *, complete: bool):
    """``(line, header, certain)`` when an edge-list read of a file would misread (or
    fail on) a METIS graph; ``None`` otherwise.  ``certain``: the edge-list read would
    fail (lines of several widths); else the whole file reads both ways.

    A METIS header ``N M [FMT [NCON]]`` followed by adjacency lines of ids in ``1..N``
    (:func:`looks_like_metis`) is taken for METIS when an edge-list read would fail
    anyway (lines of other widths than one ``U V`` or ``U V W`` width), or when the
    whole file is at hand and reads as a METIS graph (it has exactly N adjacency lines
    and M or 2M entries): then an edge-list read would take the header for an arc and
    each adjacency line for another. A file whose start is ambiguous (every line two or
    three ids, the rest not seen) is left to the edge-list reader.
    """
    if not looks_like_metis(head):
        return None
    lines = _head_lines(head, complete)
    body = [(i, ln.strip()) for i, ln in enumerate(lines, 1) if not ln.lstrip().startswith(b"%")]
    hline, htext = body[0]
    widths = {len(s.split()) for _, s in body if s}
    if len(widths) > 1 or not widths <= {2, 3}:
        return hline, htext, True
    if complete:
        try:
            read_metis(_BytesCursor(lines), "<head>")
        except InputError:
            return None
        return hline, htext, False
    return None


def _ints(line: bytes):
    toks = line.split()
    try:
        return [int(t) for t in toks]
    except ValueError:
        return None


def looks_like_metis(head: bytes) -> bool:
    """Whether the start of a file reads as a METIS graph: an ``N M [FMT [NCON]]``
    header, then adjacency lines of integers whose neighbour ids lie in ``1..N``."""
    if file_signature(head) is not None:
        return False  # a MatrixMarket banner or a DIMACS 'p' line
    lines = head.split(b"\n")
    if not head.endswith(b"\n"):
        lines = lines[:-1]  # the last one may be cut
    body = [ln for ln in lines if not ln.lstrip().startswith(b"%")]
    hdr = _ints(body[0]) if body else None
    if not hdr or len(hdr) not in (2, 3, 4) or min(hdr) < 0 or hdr[0] < 1:
        return False
    n = hdr[0]
    fmt = body[0].split()[2].decode(errors="replace").zfill(3) if len(hdr) > 2 else "000"
    if len(fmt) != 3 or any(c not in "01" for c in fmt):
        return False
    skip = (fmt[0] == "1" and fmt != "100") + (hdr[3] if len(hdr) > 3 else int(fmt[1] == "1"))
    adj = body[1:]
    if len(adj) > n and any(ln.strip() for ln in adj[n:]):
        return False  # more lines than vertices
    for ln in adj[:2000]:
        vals = _ints(ln)
        if vals is None:
            return False
        nb = vals[skip:][:: 2 if fmt[2] == "1" else 1]
        if any(v < 1 or v > n for v in nb):
            return False
    return bool(adj)


def looks_like_edgelist(head: bytes) -> bool:
    """Whether every complete line reads as ``U V`` or ``U V W`` (``#``/``%`` comments)
    and no MatrixMarket banner or DIMACS ``p`` line names another format."""
    if file_signature(head) is not None:
        return False
    lines = [ln for ln in head.split(b"\n")[:-1] if ln.strip() and not ln.lstrip().startswith((b"#", b"%"))]
    widths = set()
    for ln in lines[:2000]:
        toks = ln.split()
        if len(toks) not in (2, 3) or _ints(b" ".join(toks[:2])) is None:
            return False
        widths.add(len(toks))
    return len(widths) == 1


def format_hint(head: bytes, fmt: str) -> str | None:
    """A ``--format`` suggestion for a file whose ``fmt`` reader refused its header."""
    try:
        return _hint(head, fmt)
    except Exception:  # pragma: no cover - a suggestion must never hide the real error
        return None


def looks_like_own(head: bytes, fmt: str) -> bool:
    """Whether the start of a file is recognisably ``fmt`` itself (its header's first
    word): then the error is that format's, never a hint to read it as another."""
    first = None
    for ln in head.split(b"\n")[:2000]:
        s = ln.strip()
        if not s or (fmt in ("gr", "pace") and s.split()[0] == b"c"):
            continue
        first = s.lower()
        break
    if first is None:
        return False
    if fmt == "mtx":
        return first.startswith(b"%%matrixmarket")
    if fmt in ("gr", "pace"):
        toks = first.split()
        return toks[0] == b"p" and len(toks) > 1 and toks[1] == (b"sp" if fmt == "gr" else b"tw")
    if fmt == "metis":
        return looks_like_metis(head)
    if fmt == "edgelist":
        return looks_like_edgelist(head)
    return False


def _hint(head: bytes, fmt: str) -> str | None:
    if looks_like_own(head, fmt):
        return None
    if fmt != "metis" and looks_like_metis(head):
        return ("the file looks like a METIS graph ('N M [FMT]' header, then one adjacency "
                f"line per vertex): pass {opt('--format metis')}")
    if fmt != "edgelist" and looks_like_edgelist(head):
        return f"the file looks like an edge list ('U V [W]' lines): pass {opt('--format edgelist')}"
    return None


READERS = {"gr": read_gr, "pace": read_pace, "mtx": read_mtx, "edgelist": read_edgelist, "metis": read_metis}
