#!/usr/bin/env python
"""Differential / mutation fuzzer of the input readers (``pipeline.ingest``).

Not collected by pytest (the name does not start with ``test_``). Run::

    PYTHONPATH=. python tests/fuzz_ingest.py --seconds 300 --seed 1 --out /tmp/fz
    PYTHONPATH=. python tests/fuzz_ingest.py --replay /tmp/fz/case-000123.gr [--format gr] [--undirected]

1. Random VALID files in every format (DIMACS ``.gr``/``.ss``/``.co``, PACE ``p tw``,
   METIS fmt 0/1/10/11, MatrixMarket pattern/integer/real x general/symmetric, edge
   lists ``.el``/``.wel``), written with comments, blank lines, CRLF, tabs, repeated
   blanks, leading ``+``, optionally compressed (gz/xz/bz2/zst), ingested with a small
   ``chunk_bytes`` (7..200, chunk boundaries everywhere) and compared with what the
   generator wrote: the exact multiset of (src, dst, weight), vertex count, directedness.
2. MUTATIONS of valid files (bytes flipped/inserted/deleted, truncation, duplicated
   lines, huge numbers, negative ids, NUL and non-UTF-8 bytes, very long lines, headers
   whose counts lie; one in ten with ``max_vertices`` and ``max_isolated_vertices``
   raised to 2**63 - 1, so that only the file itself bounds what is allocated). Each ingest runs in a forked child under ``RLIMIT_AS`` (2 GiB) and a
   30 s timeout. The outcome must be either a success that an independent reference
   parser (below; DIMACS ``.gr``, edge lists, MatrixMarket) agrees with, or one
   ``InputError``/``SsspError`` whose text is one line naming the file (and a line
   number where the reference parser places the problem on a line). Never a
   traceback, a signal, a MemoryError, a hang. A sample of refusals is also run through
   the ``sssp ingest`` CLI (exit 2, exactly one stderr line ``error: FILE...``).

Failing inputs are saved under ``--out`` as ``case-N.<ext>`` with ``case-N.json``
(options, what went wrong).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import math
import os
import pickle
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# the script's folder (tests/) holds a 'packaging' test package that would shadow the
# real one dask imports: take it off the path
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

try:
    import zstandard
except ImportError:  # pragma: no cover
    zstandard = None

I64 = 2 ** 63
MAXV = 2 ** 31 - 1
MAX_ISO = 16_777_216
TIMEOUT = 30
MEM = 2 << 30

# --------------------------------------------------------------------------------------
# generation of valid files


def _num(rng, x, plus=True):
    s = repr(x) if isinstance(x, float) else str(x)
    if plus and rng.random() < 0.1 and not s.startswith("-"):
        s = "+" + s
    return s


class Style:
    def __init__(self, rng):
        self.crlf = rng.random() < 0.2
        self.blank = rng.random() < 0.2
        self.multi = rng.random() < 0.2  # repeated blanks / tabs between tokens
        self.plus = rng.random() < 0.3
        self.trail = rng.random() < 0.15
        self.rng = rng

    def join(self, toks, sep=" "):
        r = self.rng
        if self.multi:
            out = toks[0]
            for t in toks[1:]:
                out += r.choice([" ", "  ", "\t", " \t", sep]) + t
        else:
            out = sep.join(toks)
        if self.trail and r.random() < 0.3:
            out += r.choice([" ", "\t", "  "])
        return out

    def lines(self, lines, final_newline=False):
        r = self.rng
        out = []
        for ln in lines:
            if self.blank and r.random() < 0.1:
                out.append(r.choice(["", " ", "\t"]))
            out.append(ln)
        nl = "\r\n" if self.crlf else "\n"
        text = nl.join(out)
        if final_newline or r.random() < 0.85:
            text += nl
        return text.encode()


def gen_graph(rng, *, n_max=25, m_max=40, floats=False, neg=True, loops=True, min_id=1):
    n = rng.randint(1, n_max)
    m = rng.randint(0, m_max)
    arcs = []
    for _ in range(m):
        u = rng.randint(min_id, n + min_id - 1)
        v = rng.randint(min_id, n + min_id - 1)
        if not loops and u == v:
            continue
        if floats:
            w = rng.choice([round(rng.uniform(-5 if neg else 0, 100), rng.randint(0, 6)),
                            rng.uniform(0.001, 1e6), float(rng.randint(0, 50)), 1e-300, 0.5])
        else:
            w = rng.randint(-20 if neg else 0, 1000) if rng.random() < 0.95 else rng.randint(0, 2 ** 40)
        arcs.append((u, v, w))
    return n, arcs


def expand(arcs):
    out = []
    for u, v, w in arcs:
        out.append((u, v, w))
        if u != v:
            out.append((v, u, w))
    return out


def gen_case(rng):
    """(ext, bytes, options, expected) of a random valid file; expected is a dict with
    'arcs' (multiset list), 'vertices', 'directed' or 'table' for .ss/.co."""
    fmt = rng.choice(["gr", "gr", "el", "wel", "mtx", "mtx", "metis", "pace", "ss", "co"])
    st = Style(rng)
    opts = {}
    P = lambda x: _num(rng, x, st.plus)  # noqa: E731
    if fmt == "gr":
        floats = rng.random() < 0.25
        zb = rng.random() < 0.15
        n, arcs = gen_graph(rng, floats=floats, min_id=0 if zb else 1)
        if zb:
            opts["zero_based"] = True
        if floats and arcs:  # the first weight decides the column type: make it real-looking
            u, v, w = arcs[0]
            arcs[0] = (u, v, w + 0.5)
        lines = [f"c random graph {rng.random()}", "c"]
        lines.append(st.join(["p", "sp", P(n), P(len(arcs))]))
        for i, (u, v, w) in enumerate(arcs):
            if rng.random() < 0.05:
                lines.append("c mid comment")
            lines.append(st.join(["a", P(u), P(v), P(w)]))
        und = rng.random() < 0.2
        opts["undirected"] = und
        exp = {"arcs": expand(arcs) if und else arcs, "vertices": n, "directed": not und}
        return ".gr", st.lines(lines), opts, exp
    if fmt in ("el", "wel"):
        weighted = fmt == "wel"
        floats = weighted and rng.random() < 0.25
        n, arcs = gen_graph(rng, floats=floats, min_id=0)
        if not arcs:
            arcs = [(0, 0, 1.5 if floats else 1)]
        if floats:
            u, v, w = arcs[0]
            arcs[0] = (u, v, w + 0.5)
        if not weighted:
            arcs = [(u, v, 1) for u, v, _ in arcs]
        sep = "\t" if rng.random() < 0.3 else " "
        st.multi = st.multi and sep == " " and False  # the first line decides the delimiter
        lines = ["# edge list", "% also a comment"]
        for u, v, w in arcs:
            if rng.random() < 0.05:
                lines.append("# mid")
            toks = [P(u), P(v)] + ([P(w)] if weighted else [])
            lines.append(st.join(toks, sep))
        und = rng.random() < 0.2
        opts["undirected"] = und
        nv = max(max(u, v) for u, v, _ in arcs) + 1
        return "." + fmt, st.lines(lines), opts, {"arcs": expand(arcs) if und else arcs, "vertices": nv,
                                                  "directed": not und}
    if fmt == "mtx":
        field = rng.choice(["pattern", "integer", "real"])
        sym = rng.choice(["general", "symmetric"])
        n, arcs = gen_graph(rng, floats=field == "real")
        rows, cols = n, n
        if sym == "general" and rng.random() < 0.3:
            cols = n + rng.randint(0, 3)
        if sym == "symmetric":
            arcs = [(max(u, v), min(u, v), w) for u, v, w in arcs]
        if field == "pattern":
            arcs = [(u, v, 1) for u, v, _ in arcs]
        lines = [f"%%MatrixMarket matrix coordinate {field} {sym}", "% comment", "%"]
        lines.append(st.join([P(rows), P(cols), P(len(arcs))]))
        for u, v, w in arcs:
            lines.append(st.join([P(u), P(v)] + ([] if field == "pattern" else [P(w)])))
        und = rng.random() < 0.2
        opts["undirected"] = und
        d = sym == "general" and not und
        return ".mtx", st.lines(lines), opts, {"arcs": arcs if d else expand(arcs),
                                               "vertices": max(rows, cols), "directed": d}
    if fmt == "metis":
        n, arcs = gen_graph(rng, neg=False, loops=False)
        f = rng.choice(["", "0", "1", "10", "11", "001", "011"])
        ew = f.endswith("1")
        vw = f in ("10", "11", "011")
        edges = {}
        for u, v, w in arcs:
            edges[(min(u, v), max(u, v))] = w if ew else 1
        adj = {i: [] for i in range(1, n + 1)}
        for (a, b), w in edges.items():
            adj[a].append((b, w))
            adj[b].append((a, w))
        lines = ["% metis"]
        lines.append(st.join([P(n), P(len(edges))] + ([f] if f else [])))
        for i in range(1, n + 1):
            toks = [str(rng.randint(1, 9))] if vw else []
            rng.shuffle(adj[i])
            for b, w in adj[i]:
                toks += [P(b)] + ([P(w)] if ew else [])
            lines.append(st.join(toks) if toks else "")
        st.blank = False  # a blank line is an isolated vertex in METIS
        # and the last vertex's line ends with its newline, else an empty one is not
        # there at all (gpmetis: "premature end of input file")
        out = expand([(a, b, w) for (a, b), w in edges.items()])
        if len(edges) == 0:  # 0 entries == M == 0: the one-end reading, directed, same arcs
            return ".graph", st.lines(lines, True), opts, {"arcs": out, "vertices": n, "directed": None}
        return ".graph", st.lines(lines, True), opts, {"arcs": out, "vertices": n, "directed": False}
    if fmt == "pace":
        n, arcs = gen_graph(rng)
        lines = ["c pace", st.join(["p", "tw", P(n), P(len(arcs))])]
        lines += [st.join([P(u), P(v)]) for u, v, _ in arcs]
        return ".gr" if False else ".tw", st.lines(lines), opts, {
            "arcs": expand([(u, v, 1) for u, v, _ in arcs]), "vertices": n, "directed": False}
    if fmt == "ss":
        n = rng.randint(1, 50)
        ids = [rng.randint(1, n) for _ in range(rng.randint(0, 20))]
        lines = ["c sources", st.join(["p", "aux", "sp", "ss", P(len(ids))])]
        lines += [st.join(["s", P(i)]) for i in ids]
        return ".ss", st.lines(lines), opts, {"table": {"source": ids}}
    # co
    n = rng.randint(0, 20)
    fl = rng.random() < 0.3
    rows = []
    for i in range(n):
        x = rng.uniform(-1e3, 1e3) if fl else rng.randint(-10 ** 9, 10 ** 9)
        y = rng.uniform(-1e3, 1e3) if fl else rng.randint(-10 ** 9, 10 ** 9)
        rows.append((i + 1, x, y))
    if fl and rows:
        rows[0] = (1, rows[0][1] + 0.5, rows[0][2])
    lines = ["c coords", st.join(["p", "aux", "sp", "co", P(n)])]
    lines += [st.join(["v", P(i), P(x), P(y)]) for i, x, y in rows]
    return ".co", st.lines(lines), opts, {"table": {"vertex": [r[0] for r in rows], "x": [r[1] for r in rows],
                                                    "y": [r[2] for r in rows]}}


def gen_case_wt(rng):
    ext, data, opts, exp = gen_case(rng)
    if "arcs" in exp and ext != ".tw" and rng.random() < 0.25:
        real = (any(isinstance(w, float) for _, _, w in exp["arcs"])
                or (ext == ".mtx" and b" real " in data.split(b"\n")[0]))
        wt = rng.choice(["float32", "float64"] if real else ["int32", "int64", "float32", "float64"])
        try:
            exp = dict(exp, arcs=apply_weight_type(exp["arcs"], wt))
            opts["weight_type"] = wt
        except Unsure:
            pass
    return ext, data, opts, exp


def compress(rng, ext, data):
    c = rng.choice([None, None, None, "gz", "xz", "bz2"] + (["zst"] if zstandard else []))
    if c is None:
        return ext, data
    if c == "gz":
        data = gzip.compress(data, compresslevel=1)
    elif c == "xz":
        data = lzma.compress(data)
    elif c == "bz2":
        data = bz2.compress(data)
    else:
        data = zstandard.ZstdCompressor().compress(data)
    return ext + "." + c, data


# --------------------------------------------------------------------------------------
# reference parser (independent of pipeline.ingest): DIMACS .gr, edge lists, MatrixMarket


class RefError(Exception):
    def __init__(self, line, msg):
        super().__init__(f"{line}: {msg}")
        self.line = line


class Unsure(Exception):
    """The reference does not decide this input (rules the README leaves open)."""


_INT = re.compile(rb"[+-]?[0-9]+\Z")
_REAL = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def ref_lines(data):
    if b"\x0b" in data or b"\x0c" in data or any(0x1c <= c <= 0x1f for c in data):
        raise Unsure("exotic whitespace")
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    elif parts and parts[-1] == b"\r":
        # "...\n\r": an empty last line ended by the CR that ends the file (README); it
        # was glued onto the line before, which then held a lone CR (seed 9107, case 2616)
        parts.pop()
    out = []
    for i, ln in enumerate(parts, 1):
        if ln.endswith(b"\r"):
            ln = ln[:-1]
        if b"\r" in ln:
            raise RefError(i, "lone CR")
        out.append((i, ln))
    return out


def ref_int(tok, line, what="id"):
    if not _INT.match(tok):
        raise RefError(line, f"bad int {tok!r}")
    if len(tok.lstrip(b"+-").lstrip(b"0")) > 19:
        raise RefError(line, "more digits than 64 bits")
    v = int(tok)
    if not -I64 <= v < I64:
        raise RefError(line, "int64")
    return v


def ref_real(tok, line):
    if _INT.match(tok):
        return ref_int(tok, line)
    if not _REAL.match(tok):
        raise RefError(line, f"bad real {tok!r}")
    if len(tok) > 4000:
        raise Unsure("very long real")
    v = float(tok)
    if not math.isfinite(v):
        raise RefError(line, "inf")
    if v == 0 and re.search(rb"[1-9]", tok.split(b"e")[0].split(b"E")[0]):
        raise RefError(line, "underflow")
    return v


def _is_float_tok(tok):
    if _INT.match(tok):
        return False
    try:
        float(tok)
        return True
    except ValueError:
        return False


def ref_checks(n, arcs, wfloat, header_line=None):
    if n > MAXV:
        raise RefError(header_line, "max vertices")
    if arcs and not wfloat:
        heavy = {}
        mx = 0
        for u, v, w in arcs:
            a = abs(int(w))
            mx = max(mx, a)
            heavy[v] = max(heavy.get(v, 0), a)
        bound = min((n - 1) * mx, sum(heavy.values()))
        if bound >= 2 ** 53:
            raise RefError(None, "path bound")
    if arcs and wfloat:
        mx = max(abs(float(w)) for _, _, w in arcs)
        heavy = {}
        for u, v, w in arcs:
            heavy[v] = max(heavy.get(v, 0.0), abs(float(w)))
        bound = min((n - 1) * mx, sum(heavy.values()))
        if not math.isfinite(bound) or not math.isfinite((n - 1) * bound):
            raise RefError(None, "path bound")


def ref_gr(data, undirected=False, zero_based=False):
    lines = ref_lines(data)
    hdr = None
    arcs = []
    wfloat = None
    for i, ln in lines:
        s = ln.strip()
        if not s:
            continue
        t = s.split()
        if t[0] == b"c":
            continue
        if t[0].startswith(b"c"):
            raise Unsure("c-prefixed token")
        if t[0] == b"p":
            if hdr is not None:
                raise RefError(i, "second p")
            if len(t) != 4 or t[1] != b"sp":
                raise RefError(i, "bad p")
            n, m = ref_int(t[2], i), ref_int(t[3], i)
            if n < 0 or m < 0:
                raise RefError(i, "negative header")
            if n > MAXV or n - 2 * m > MAX_ISO or 8 * m > len(data):
                raise RefError(i, "header too large")
            hdr = (n, m, i)
            continue
        if hdr is None:
            raise RefError(i, "record before p")
        if t[0] != b"a" or len(t) != 4:
            raise RefError(i, "bad arc")
        u, v = ref_int(t[1], i), ref_int(t[2], i)
        if wfloat is None:
            wfloat = _is_float_tok(t[3])
        w = ref_real(t[3], i) if wfloat else ref_int(t[3], i)
        lo = 0 if zero_based else 1
        if not (lo <= u <= hdr[0] - 1 + lo and lo <= v <= hdr[0] - 1 + lo):
            raise RefError(i, "id range")
        arcs.append((u, v, w))
        if len(arcs) > hdr[1]:
            raise RefError(i, "too many arcs")
    if hdr is None:
        raise RefError(None, "no header")
    if len(arcs) != hdr[1]:
        raise RefError(len(lines) + 1, "too few arcs")
    ref_checks(hdr[0], arcs, wfloat)
    return {"arcs": expand(arcs) if undirected else arcs, "vertices": hdr[0], "directed": not undirected}


def ref_el(data, undirected=False, zero_based=False):
    lines = ref_lines(data)
    arcs = []
    ncol = wfloat = None
    for i, ln in lines:
        s = ln.strip()
        if not s or s.startswith((b"#", b"%")):
            continue
        t = s.split()
        if ncol is None:
            if len(t) not in (2, 3):
                raise RefError(i, "columns")
            ncol = len(t)
            wfloat = ncol == 3 and _is_float_tok(t[2])
        if len(t) != ncol:
            raise RefError(i, "columns")
        u, v = ref_int(t[0], i), ref_int(t[1], i)
        if u < 0 or v < 0:
            raise RefError(i, "negative id")
        w = 1 if ncol == 2 else (ref_real(t[2], i) if wfloat else ref_int(t[2], i))
        arcs.append((u, v, w))
    if not arcs:
        raise RefError(None, "empty")
    n = max(max(u, v) for u, v, _ in arcs) + 1
    if n > MAXV or n - 2 * len(arcs) > MAX_ISO:
        raise RefError(None, "max vertices / isolated vertices")
    ref_checks(n, arcs, wfloat)
    return {"arcs": expand(arcs) if undirected else arcs, "vertices": n, "directed": not undirected}


def ref_mtx(data, undirected=False, zero_based=False):
    lines = ref_lines(data)
    it = iter(ln for ln in lines if ln[1].strip())
    try:
        i, ban = next(it)
    except StopIteration:
        raise RefError(None, "empty") from None
    t = ban.strip().lower().split()
    if len(t) != 5 or t[0] != b"%%matrixmarket" or t[1] != b"matrix" or t[2] != b"coordinate" \
            or t[3] not in (b"pattern", b"integer", b"real", b"double") or t[4] not in (b"general", b"symmetric"):
        raise RefError(i, "banner")
    field, sym = t[3], t[4]
    size = None
    arcs = []
    for i, ln in it:
        s = ln.strip()
        if s.startswith(b"%"):
            continue
        tt = s.split()
        if size is None:
            if len(tt) != 3:
                raise RefError(i, "size")
            size = [ref_int(x, i) for x in tt]
            if min(size) < 0:
                raise RefError(i, "size")
            rows, cols, nnz = size
            nn = max(rows, cols)
            per = 4 if field == b"pattern" else 6
            if nn > MAXV or nn - 2 * nnz > MAX_ISO or per * nnz > len(data):
                raise RefError(i, "header too large")
            continue
        want = 2 if field == b"pattern" else 3
        if len(tt) != want:
            raise RefError(i, "columns")
        u, v = ref_int(tt[0], i), ref_int(tt[1], i)
        if field == b"pattern":
            w = 1
        elif field == b"integer":
            w = ref_int(tt[2], i)
        else:
            w = float(ref_real(tt[2], i))
        if not (1 <= u <= rows and 1 <= v <= cols):
            raise RefError(i, "range")
        arcs.append((u, v, w))
        if len(arcs) > nnz:
            raise RefError(i, "too many")
    if size is None:
        raise RefError(None, "no size")
    if len(arcs) != nnz:
        raise RefError(len(lines) + 1, "too few")
    nn = max(rows, cols)
    d = sym == b"general" and not undirected
    if sym == b"symmetric" and any(u < v for u, v, _ in arcs):
        raise Unsure("upper triangle in symmetric")
    ref_checks(nn, arcs if d else expand(arcs), field in (b"real", b"double"))
    return {"arcs": arcs if d else expand(arcs), "vertices": nn, "directed": d}


def ref_metis(data, undirected=False, zero_based=False):
    lines = ref_lines(data)
    it = iter(lines)
    hdr = None
    for i, ln in it:
        st = ln.strip()
        if st and not st.startswith(b"%"):
            hdr = (i, st.split())
            break
    if hdr is None:
        raise RefError(None, "empty")
    hline, t = hdr
    if len(t) not in (2, 3, 4):
        raise RefError(hline, "header")
    vals = [ref_int(x, hline) for x in t]
    if min(vals) < 0:
        raise RefError(hline, "header")
    n, m = vals[0], vals[1]
    f = t[2].decode() if len(t) > 2 else "0"
    if len(f) > 3 or any(c not in "01" for c in f):
        raise RefError(hline, "fmt")
    f = f.zfill(3)
    sizes, vw, ew = f[0] == "1" and f != "100", f[1] == "1", f[2] == "1"
    ncon = (vals[3] if len(t) > 3 else 1) if vw else 0
    skip = int(sizes) + ncon
    if n > MAXV or n - 2 * m > MAX_ISO:
        raise RefError(hline, "limits")
    if n > len(data) or 2 * (1 + ew) * m > len(data) or skip > 1000:
        raise Unsure("sizes against the file size")
    ent = []
    u = 0
    last = hline
    for i, ln in it:
        last = i
        st = ln.strip()
        if st.startswith(b"%"):
            continue
        u += 1
        if u > n:
            if st:
                raise RefError(i, "extra line")
            continue
        tt = st.split()
        if len(tt) < skip:
            raise RefError(i, "vertex values")
        nums = [ref_int(x, i) for x in tt]
        nums = nums[skip:]
        if ew and len(nums) % 2:
            raise RefError(i, "odd")
        nb = nums[0::2] if ew else nums
        ws = nums[1::2] if ew else [1] * len(nb)
        for x, w in zip(nb, ws):
            if not 1 <= x <= n:
                raise RefError(i, "neighbour range")
            if x == u:
                raise Unsure("METIS self-loop")
            ent.append((u, x, w))
    if u < n:
        raise RefError(last + 1, "too few vertex lines")
    if len(ent) == 2 * m:
        a = Counter((min(x, y), max(x, y), w) for x, y, w in ent if x < y)
        b = Counter((min(x, y), max(x, y), w) for x, y, w in ent if x > y)
        if a != b:
            raise RefError(None, "not symmetric")
        arcs, d = ent, False
        if len(ent) == 0:
            d = None
    elif len(ent) == m:
        arcs, d = (expand(ent), False) if undirected else (ent, True)
    else:
        raise RefError(hline, "entry count")
    ref_checks(n, arcs, False)
    return {"arcs": arcs, "vertices": n, "directed": d}


REF = {".graph": ref_metis, ".gr": ref_gr, ".el": ref_el, ".wel": ref_el, ".mtx": ref_mtx}


def decompress(name, data):
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    if name.endswith(".bz2"):
        return bz2.decompress(data)
    if name.endswith(".zst"):
        import io
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    return data


def reference(name, data, opts):
    base = re.sub(r"\.(gz|xz|bz2|zst)$", "", name)
    ext = "." + base.rsplit(".", 1)[-1]
    if ext not in REF:
        raise Unsure("no reference for " + ext)
    if "max_vertices" in opts:
        raise Unsure("limits raised")
    try:
        text = decompress(name, data)
    except Exception:
        raise RefError(None, "compression") from None
    exp = REF[ext](text, undirected=opts.get("undirected", False), zero_based=opts.get("zero_based", False))
    if opts.get("weight_type"):
        exp["arcs"] = apply_weight_type(exp["arcs"], opts["weight_type"])
    return exp


def apply_weight_type(arcs, wt):
    """The stored weights under ``weight_type`` (Unsure where the README leaves the
    outcome to a rule this reference does not model line by line)."""
    import numpy as np
    out = []
    for u, v, w in arcs:
        if wt in ("int32", "int64"):
            if isinstance(w, float):
                raise Unsure("real weight into an integer type")
            if wt == "int32" and not -2 ** 31 <= w < 2 ** 31:
                raise Unsure("int32 range")
            out.append((u, v, w))
        else:
            bits = 24 if wt == "float32" else 53
            if isinstance(w, int) and abs(w) > 2 ** bits:
                raise Unsure("inexact integer")
            f = np.float32(w) if wt == "float32" else np.float64(w)
            if w != 0 and (f == 0 or abs(f) < np.finfo(f.dtype).tiny or not np.isfinite(f)):
                raise Unsure("float32 zero/subnormal/inf")
            out.append((u, v, float(f)))
    return out


# --------------------------------------------------------------------------------------
# running one ingest in a forked child


def _child(path, out, opts, chunk, wfd):
    resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
    res = {}
    try:
        from gpu_sssp.kernels.errors import SsspError
        from gpu_sssp.pipeline.errors import InputError
        from gpu_sssp.pipeline.ingest import ingest
        import pyarrow.parquet as pq
        try:
            meta = ingest(path, out, chunk_bytes=chunk, **opts)
            t = pq.read_table(out).to_pydict()
            res = {"ok": True, "meta": meta, "table": t}
        except InputError as e:
            res = {"ok": False, "kind": "InputError", "msg": str(e), "line": e.line, "path": e.path}
        except SsspError as e:
            res = {"ok": False, "kind": type(e).__name__, "msg": str(e), "line": None, "path": None}
        except MemoryError as e:
            res = {"ok": False, "kind": "MemoryError", "msg": repr(e)}
        except BaseException as e:  # noqa: BLE001
            import traceback
            res = {"ok": False, "kind": "traceback", "msg": traceback.format_exc()[-3000:]}
    finally:
        try:
            os.write(wfd, pickle.dumps(res))
        finally:
            os._exit(0)


def run_ingest(path, out, opts, chunk):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(path, out, opts, chunk, w)
    os.close(w)
    buf = b""
    t0 = time.monotonic()
    os.set_blocking(r, False)
    status = None
    while True:
        try:
            chunk_ = os.read(r, 1 << 20)
            if chunk_:
                buf += chunk_
        except BlockingIOError:
            pass
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        if time.monotonic() - t0 > TIMEOUT:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"ok": False, "kind": "timeout", "msg": f"> {TIMEOUT}s"}
        time.sleep(0.005)
    os.set_blocking(r, True)
    while True:
        c = os.read(r, 1 << 20)
        if not c:
            break
        buf += c
    os.close(r)
    if os.WIFSIGNALED(status):
        return {"ok": False, "kind": "signal", "msg": f"signal {os.WTERMSIG(status)}"}
    if not buf:
        return {"ok": False, "kind": "no-result", "msg": f"status {status}"}
    return pickle.loads(buf)


def run_cli(path, out, opts):
    cmd = [sys.executable, "-c", "import sys; from gpu_sssp.workflows.cli import main; sys.exit(main())", "ingest", path, "-o", out, "-q"]
    if opts.get("undirected"):
        cmd.append("--undirected")
    if opts.get("zero_based"):
        cmd.append("--zero-based")
    if opts.get("weight_type"):
        cmd += ["--weight-type", opts["weight_type"]]
    for k in ("max_vertices", "max_isolated_vertices"):
        if k in opts:
            cmd += ["--" + k.replace("_", "-"), str(opts[k])]

    def lim():
        resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT + 30, preexec_fn=lim)
    except subprocess.TimeoutExpired:
        return "cli timeout"
    err = p.stderr.decode(errors="replace").strip("\n")
    if p.returncode != 2:
        return f"cli exit {p.returncode}: {err[-500:]}"
    if "\n" in err or not err.startswith("error: "):
        return f"cli stderr not one 'error:' line: {err[-800:]}"
    return None


# --------------------------------------------------------------------------------------
# comparison


def norm_w(w):
    return float(w) if isinstance(w, float) else int(w)


def compare(res, exp):
    if "table" in exp:
        t = res["table"]
        for k, vals in exp["table"].items():
            got = t.get(k)
            if got is None or list(map(norm_w, got)) != list(map(norm_w, vals)):
                return f"column {k}: got {got!r:.300} expected {vals!r:.300}"
        return None
    t = res["table"]
    got = Counter(zip(t["src"], t["dst"], map(norm_w, t["weight"])))
    want = Counter((u, v, norm_w(w)) for u, v, w in exp["arcs"])
    if got != want:
        return f"arcs differ: extra {list((got - want).items())[:5]} missing {list((want - got).items())[:5]}"
    meta = res["meta"]
    if meta["vertices"] != exp["vertices"]:
        return f"vertices {meta['vertices']} != {exp['vertices']}"
    if exp["directed"] is not None and meta["directed"] != exp["directed"]:
        return f"directed {meta['directed']} != {exp['directed']}"
    if meta["arcs"] != sum(want.values()):
        return f"meta arcs {meta['arcs']} != {sum(want.values())}"
    return None


def check_error(res, name, ref_line):
    """None if res is a well-formed refusal."""
    if res["kind"] not in ("InputError",) and res["kind"] in ("traceback", "signal", "timeout", "MemoryError",
                                                            "no-result"):
        return f"{res['kind']}: {res['msg']}"
    msg = res["msg"]
    if "\n" in msg or "\r" in msg:
        return f"multi-line message: {msg[:500]!r}"
    if res["kind"] == "InputError" and os.path.basename(name) not in msg:
        return f"message does not name the file: {msg[:300]}"
    if res["kind"] == "InputError" and ref_line is not None and res.get("line") is None \
            and "compress" not in msg:
        return f"no line number (reference: line {ref_line}): {msg[:300]}"
    return None


# --------------------------------------------------------------------------------------
# mutations


def mutate(rng, data):
    ops = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.choice(["flip", "insert", "delete", "truncate", "dupline", "huge", "neg", "nul", "nonutf8",
                         "longline", "lie", "digit", "swapline", "cr", "sign", "float", "space"])
        ops.append(op)
        lines = data.split(b"\n")
        pos = rng.randrange(len(data) + 1)
        if op == "flip" and data:
            i = rng.randrange(len(data))
            data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
        elif op == "insert":
            data = data[:pos] + bytes([rng.choice(b"0123456789 \t\n-+.eE#%cpa\r\x00\xff")]) + data[pos:]
        elif op == "delete" and data:
            k = rng.randint(1, 4)
            data = data[:pos] + data[pos + k:]
        elif op == "truncate":
            data = data[:pos]
        elif op == "dupline" and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            data = b"\n".join(lines)
        elif op == "swapline" and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif op in ("huge", "neg", "digit", "sign", "float", "lie"):
            nums = list(re.finditer(rb"[0-9]+", data))
            if not nums:
                continue
            mm = rng.choice(nums[:6]) if op == "lie" else rng.choice(nums)
            rep = {
                "huge": lambda: rng.choice([b"9223372036854775807", b"9223372036854775808", b"18446744073709551616",
                                            b"2147483647", b"2147483648", b"4294967296", b"1" + b"0" * 30,
                                            b"9" * 5000, b"4503599627370496", b"9007199254740993"]),
                "neg": lambda: b"-" + mm.group(),
                "digit": lambda: str(rng.randint(0, 99)).encode(),
                "sign": lambda: rng.choice([b"+", b"-", b"--", b"+-"]) + mm.group(),
                "float": lambda: rng.choice([b"1e-400", b"1e400", b"nan", b"inf", b"1.5", b"0x10", b"1_0", b"1e5",
                                             b".5", b"5.", b"-0", b"00007", b"1e308", b"3.4e38"]),
                "lie": lambda: rng.choice([b"0", b"1", b"300000000", b"2147483648", b"99999999999",
                                           str(int(mm.group()[:18]) + 1).encode(),
                                           str(max(0, int(mm.group()[:18]) - 1)).encode()]),
            }[op]()
            data = data[:mm.start()] + rep + data[mm.end():]
        elif op == "nul":
            data = data[:pos] + b"\x00" * rng.randint(1, 3) + data[pos:]
        elif op == "nonutf8":
            data = data[:pos] + rng.choice([b"\xff", b"\xc3\x28", b"\xe9", b"\x80\x80"]) + data[pos:]
        elif op == "longline":
            data = data[:pos] + rng.choice([b" ", b"1", b"#", b"c "]) * rng.choice([5000, 70000, 300000]) + data[pos:]
        elif op == "cr":
            data = data.replace(b"\n", rng.choice([b"\r", b"\r\n", b"\n\r"]), rng.randint(1, 3))
        elif op == "space":
            data = data.replace(b" ", rng.choice([b"\t", b"  ", b" \t "]), rng.randint(1, 3))
    return data, ops


# --------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-ingest-out")
    ap.add_argument("--cli-every", type=int, default=15, help="run the CLI on every Nth refusal")
    ap.add_argument("--replay", help="ingest one saved file and check it (its .json beside it gives options)")
    a = ap.parse_args(argv)
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fuzz-ingest-"))
    if a.replay:
        side = Path(a.replay).with_suffix(".json")
        info = json.loads(side.read_text()) if side.exists() else {}
        opts = info.get("opts", {})
        res = run_ingest(a.replay, str(work / "o.parquet"), opts, info.get("chunk", 64))
        print(json.dumps({k: v for k, v in res.items() if k != "table"}, default=str)[:3000])
        print(run_cli(a.replay, str(work / "o2.parquet"), opts))
        return 0
    # import once here (no threads started yet): each forked child starts warm
    import pyarrow.parquet  # noqa: F401
    from gpu_sssp.pipeline.config import setting  # noqa: F401
    import gpu_sssp.pipeline.ingest  # noqa: F401
    rng = random.Random(a.seed)
    t_end = time.monotonic() + a.seconds
    stats = Counter()
    fails = 0
    case = 0
    while time.monotonic() < t_end:
        case += 1
        ext, raw, opts, exp = gen_case_wt(rng)
        name, data = compress(rng, ext, raw)
        chunk = rng.choice([7, 8, 13, 31, 64, 100, 200, 4096, 1 << 20])
        mutated = rng.random() < 0.7
        ops = []
        if mutated:
            if rng.random() < 0.5 or name == ext:
                raw2, ops = mutate(rng, raw)
                data = raw2 if name == ext else {
                    "gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress,
                    "zst": lambda d: zstandard.ZstdCompressor().compress(d)}[name.rsplit(".", 1)[1]](raw2)
            else:  # damage the compressed bytes themselves
                data, ops = mutate(rng, data)
                ops = ["compressed:" + o for o in ops]
        if mutated and rng.random() < 0.1:  # the limits raised: nothing may be sized by a lying header
            opts = dict(opts, max_vertices=2 ** 63 - 1, max_isolated_vertices=2 ** 63 - 1)
        path = work / f"in-{case}{name}"
        path.write_bytes(data)
        out = work / f"out-{case}.parquet"
        res = run_ingest(str(path), str(out), opts, chunk)
        problem = None
        if not mutated:
            if not res["ok"]:
                problem = f"valid file refused: {res.get('kind')}: {res.get('msg')}"
            else:
                problem = compare(res, exp)
            stats["valid"] += 1
        else:
            try:
                ref = reference(name, data, opts)
                ref_err = None
            except RefError as e:
                ref, ref_err = None, e
            except Unsure:
                ref, ref_err = "unsure", None
                stats["ref-unsure"] += 1
            except Exception as e:  # noqa: BLE001
                ref, ref_err = "unsure", None
                stats["ref-crash"] += 1
                if stats["ref-crash"] <= 3:
                    print(f"reference parser crashed on case {case} ({name}): {e!r}"[:300], flush=True)
            if res["ok"]:
                stats["mut-accepted"] += 1
                if ref_err is not None:
                    problem = f"accepted, but the reference refuses it: {ref_err}"
                elif isinstance(ref, dict):
                    problem = compare(res, ref)
                    if problem:
                        problem = "accepted with different data: " + problem
            else:
                stats["mut-refused"] += 1
                problem = check_error(res, name, ref_err.line if ref_err is not None else None)
                # damaged compressed bytes: Python's decompressors are laxer than the README's
                # rules (trailing garbage is refused there), so only a success is compared
                if problem is None and isinstance(ref, dict) and not ops[0].startswith("compressed:"):
                    problem = f"refused, but the reference reads it: {res.get('msg', '')[:400]}"
                if problem is None and stats["mut-refused"] % a.cli_every == 0:
                    problem = run_cli(str(path), str(work / f"cli-{case}.parquet"), opts)
                    stats["cli-checked"] += 1
        if problem:
            fails += 1
            stats["fail"] += 1
            dst = outdir / f"case-{case:06d}{name}"
            dst.write_bytes(data)
            (outdir / f"case-{case:06d}.json").write_text(json.dumps(
                {"opts": opts, "chunk": chunk, "ops": ops, "problem": problem,
                 "result": {k: v for k, v in res.items() if k not in ("table", "meta")}}, default=str, indent=1))
            print(f"FAIL case {case} {name} chunk={chunk} ops={ops}: {problem[:400]}", flush=True)
        for p in (path, out):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
    print(f"seed {a.seed}: {case} cases, {dict(stats)}", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
