"""Opening inputs: compression, tarballs, hashing while reading, line-aligned chunks."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import heapq
import io
import lzma
import os
import queue
import tarfile
import threading
import zlib
from pathlib import Path

from ..errors import InputError
from ..fsnames import is_parquet_name, refuse_pipe
from ._records import NumberTooLarge, lone_cr_note

try:  # optional: .zst inputs
    from zstandard import ZstdError as _ZstdError
except ImportError:  # pragma: no cover
    class _ZstdError(Exception):
        pass


def _tar_header(block: bytes) -> bool:
    """Whether ``block`` is a tar header (its checksum holds), not zeros or other data."""
    return _header_info(block) is not None


def _header_info(block: bytes) -> tarfile.TarInfo | None:
    """The tar header ``block`` is (its checksum holds), or None: zeros or other data."""
    if len(block) < tarfile.BLOCKSIZE or not block.strip(b"\0"):
        return None
    try:
        return tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return None


def _main_member(members, stem: str):
    """The member of a tarball named ``<stem>.tar[.*]`` that holds its graph: the one
    named after the archive (``stem``; a ``.mtx`` first), else its one ``.mtx`` matrix
    whose other ``.mtx`` members are SuiteSparse's extras (``<matrix>_gcs.mtx``, ...),
    else its one file.  Any other choice would be a guess: ``ValueError`` listing them."""
    mtx = [m for m in members if m.name.lower().endswith(".mtx")]
    for pool in (mtx, members):
        named = [m for m in pool if Path(m.name).stem == stem]
        if named:
            return named[-1]  # a name given twice: tar extracts the last one over the others
    pool = mtx or members
    main = min(pool, key=lambda m: (len(Path(m.name).name), m.name))
    if all(m is main or Path(m.name).stem.startswith(Path(main.name).stem + "_") for m in pool):
        return main
    shown_names = ", ".join(m.name for m in sorted(pool, key=lambda m: m.name)[:5])
    more = f", ... ({len(pool):,} in all)" if len(pool) > 5 else ""
    raise ValueError(f"tar archive holds {len(pool):,} {'matrices' if mtx else 'files'} and none is named after "
                     f"it ({stem}): {shown_names}{more}; extract the graph file and give it alone")


def _read_through(readinto) -> None:
    """Call ``readinto`` with a 1 MiB buffer until it reads nothing: to the end."""
    buf = bytearray(1 << 20)
    while readinto(buf):
        pass


def _appended_archive(fileobj, pos: int) -> int | None:
    """Read ``fileobj`` (at ``pos``, past an archive's end blocks) to its end; the offset
    where another archive starts, or ``None``.

    ``cat a.tar b.tar`` puts ``b``'s first header at the start of a record
    (``tarfile.RECORDSIZE`` bytes, from the start): tar and tarfile stop at ``a``'s end
    without a word.  Other blocks are looked at only where such a header leads: tar ignores
    what follows the end blocks, and SuiteSparse's tarballs have old buffer contents there.
    A header at a record's start is followed, member by member (its data, the next header): it begins
    another archive when they come to an end block, or to a block that is neither a header
    nor zeros (a damaged one, refused all the same); when the input ends first, it was old
    bytes too.  A writer that reuses its record buffer leaves the previous record's bytes
    after the end blocks (every byte of Lederberg.tar.gz's rest equals the one 10,240
    before it), and in records larger than tar's default (``tar -b 40``: 20 KiB) a header
    among them can sit at a 10 KiB boundary; what follows it is a copy of the archive's
    earlier bytes, cut off by the end of the input before any end block.  Reading stops at
    the end of an archive found (the input is refused)."""
    rec = tarfile.RECORDSIZE
    chains: dict[int, int] = {}  # where a followed header's next header is -> where it began
    # chains' keys, smallest first: a tail of many records each starting with a header of
    # a huge member (old or crafted bytes) keeps one chain per record open, and taking the
    # smallest with min() made the read quadratic in their number (32,000: 10 s)
    ahead: list[int] = []
    while True:
        boundary = -(-pos // rec) * rec  # the next record's start
        at = min(boundary, ahead[0]) if ahead else boundary
        if ahead and ahead[0] == at:
            heapq.heappop(ahead)
        skip = at - pos
        while skip > 0:  # read on (compressed text cannot seek forward any cheaper)
            got = len(fileobj.read(min(skip, 1 << 20)))
            if not got:
                return None
            skip -= got
        block = fileobj.read(tarfile.BLOCKSIZE)
        pos = at + len(block)
        began = chains.pop(at, None)
        info = _header_info(block)
        if began is None:
            if info is None:  # a record's first block, neither a header nor followed
                if not block:
                    return None
                continue
            began = at
        elif len(block) < tarfile.BLOCKSIZE:
            return None  # the input ends where a followed member's next header would be
        elif info is None:
            return began  # an end block (or a damaged archive): another archive
        # the next header after this member's data (a record's start may begin another)
        nxt = pos + -(-info.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        if nxt not in chains:
            heapq.heappush(ahead, nxt)
        chains[nxt] = min(began, chains.get(nxt, began))


# what decompressors and tarfile raise on truncated or corrupt data (gzip's BadGzipFile
# and bz2's "Invalid data stream" are OSErrors)
_STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error, tarfile.TarError, _ZstdError)

_KIND = {"gz": "gzip", "xz": "xz", "bz2": "bzip2", "zst": "zstd"}


class TruncatedInput(InputError):
    """The input's bytes stop (or go bad) before its text ends: a truncated or corrupt
    compressed file or archive. ``text_bytes`` is how much text was read."""

    def __init__(self, path, line, message, text_bytes=0, detail=""):
        super().__init__(path, line, message)
        self.text_bytes = int(text_bytes)
        self.detail = detail
        self.partial = 0  # bytes the failing read had already stored in the caller's buffer
        self.readable = None  # (text bytes, complete lines) decodable from the file's start

    def __reduce__(self):
        return (type(self), (self.path, self.line, self._message, self.text_bytes, self.detail))

    def at_line(self, complete_lines: int) -> "TruncatedInput":
        """The same error placed after ``complete_lines`` whole lines of text, or after
        all the readable text when it was measured (:func:`readable_text`): a
        decompressor that fails drops what it decoded in the failing call, so the
        reader's own count can fall short."""
        text_bytes = self.text_bytes
        if self.readable is not None:
            text_bytes, complete_lines = self.readable
        msg = (f"{self.detail}; {complete_lines:,} complete lines ({text_bytes:,} bytes of "
               "text) were read before it")
        err = TruncatedInput(self.path, complete_lines + 1, msg, text_bytes, self.detail)
        err.readable = self.readable
        return err


_MEASURE_READ = 1 << 16  # compressed bytes per read in readable_text


def readable_text(path, compression: str) -> tuple[int, int] | None:
    """``(bytes, newlines)`` of the text a truncated or corrupt compressed file yields
    from its start, measured with the incremental decompressors (which hand out all
    they can decode, unlike the file readers that drop a failing call's text);
    ``None`` when it cannot be measured."""
    def new():
        if compression == "gz":
            return zlib.decompressobj(wbits=47)
        if compression == "xz":
            return lzma.LZMADecompressor()
        if compression == "bz2":
            return bz2.BZ2Decompressor()
        if compression == "zst":
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj()
        return None

    d = new()
    if d is None:
        return None
    nbytes = nlines = 0
    try:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(_MEASURE_READ)
                if not chunk:
                    break
                while chunk:
                    if getattr(d, "eof", False):
                        # another stream (concatenated gzip members, xz/bzip2 streams),
                        # also when the last one ended with the previous read
                        if compression == "xz":
                            chunk = chunk.lstrip(b"\0")  # stream padding
                            if not chunk:
                                break
                        if compression == "gz" and not chunk.startswith(b"\x1f\x8b"):
                            break
                        d = new()
                    out = d.decompress(chunk)
                    nbytes += len(out)
                    nlines += out.count(b"\n")
                    chunk = d.unused_data if getattr(d, "eof", False) else b""
    except Exception:  # corrupt data: what came out before it is the readable text
        pass
    return nbytes, nlines


def zstd_incomplete(path) -> str | None:
    """Why a .zst file does not end on a frame boundary (``None`` when it does).

    zstandard's stream reader returns the text it could decode and then end-of-file for
    a truncated frame, without an error, so the frames are walked here: frame headers
    and 3-byte block headers only (a seek per block of at most 128 KiB).
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = 0
        frame = 0
        while pos < size:
            frame += 1
            f.seek(pos)
            head = f.read(5)
            if len(head) < 4:
                return f"the data ends inside the header of frame {frame} (byte {pos:,} of {size:,})"
            magic = int.from_bytes(head[:4], "little")
            if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
                ln = f.read(3)
                if len(head) < 5 or len(ln) < 3:
                    return f"the data ends inside skippable frame {frame} (byte {pos:,} of {size:,})"
                pos += 8 + int.from_bytes(head[4:5] + ln, "little")
                if pos > size:
                    return f"the data ends inside skippable frame {frame} ({size:,} bytes, frame ends at {pos:,})"
                continue
            if magic != 0xFD2FB528:
                return f"no zstd frame at byte {pos:,} of {size:,} (trailing garbage?)"
            if len(head) < 5:
                return f"the data ends inside the header of frame {frame} (byte {pos:,} of {size:,})"
            d = head[4]
            single = (d >> 5) & 1
            hlen = 1 + (0 if single else 1) + (0, 1, 2, 4)[d & 3] + ((1 if single else 0), 2, 4, 8)[d >> 6]
            pos += 4 + hlen
            while True:
                f.seek(pos)
                b = f.read(3)
                if len(b) < 3:
                    return (f"the data ends inside frame {frame} (byte {min(pos, size):,} of {size:,}, "
                            "before its last block)")
                v = int.from_bytes(b, "little")
                btype = (v >> 1) & 3
                if btype == 3:
                    return f"corrupt block header in frame {frame} at byte {pos:,}"
                pos += 3 + (1 if btype == 1 else v >> 3)
                if pos > size:
                    return (f"the data ends inside frame {frame} ({size:,} bytes, its block ends "
                            f"at byte {pos:,})")
                if v & 1:
                    break
            if (d >> 2) & 1:
                pos += 4
                if pos > size:
                    return f"the data ends inside the checksum of frame {frame}"
    return None

COMPRESSION_SUFFIXES = (".gz", ".xz", ".bz2", ".zst", ".zstd", ".lzma")

_STREAM_MAGIC = {"xz": b"\xfd7zXZ\x00", "bz2": b"BZh"}


class StreamError(OSError):
    """What follows an xz/bzip2 stream is neither another stream nor the end of the
    file (trailing garbage, a damaged later stream's header)."""


class _Streams(io.RawIOBase):
    """The text of concatenated ``.xz`` or ``.bz2`` streams (``xz``/``pbzip2``/``cat``).

    ``lzma.LZMAFile`` and ``bz2.BZ2File`` end the text quietly at data after a stream
    that does not decode: a damaged later stream or trailing garbage, and with it the
    rest of the input, would be dropped without an error. Here whatever follows a
    stream must be another stream of the same kind (its magic bytes, then data that
    decodes) or the end of the file; xz stream padding (zero bytes, a multiple of 4,
    as ``xz -d`` accepts) is skipped. Anything else raises, as ``.gz`` and ``.zst``
    inputs do: ``EOFError`` for a stream that ends early, :class:`StreamError` for
    bytes that are not a stream, the decompressor's error for corrupt data.
    """

    _READ = 1 << 16

    def __init__(self, fp, kind: str):
        self._fp = fp
        self._kind = kind
        self._what = _KIND[kind]
        self._magic = _STREAM_MAGIC[kind]
        self._d = self._new()
        self._pending = b""   # compressed bytes read but not yet given to self._d
        self._offset = 0      # compressed bytes read from fp
        self._stream = 1
        self._done = False

    def _new(self):
        return lzma.LZMADecompressor(lzma.FORMAT_XZ) if self._kind == "xz" else bz2.BZ2Decompressor()

    def readable(self):
        return True

    def readinto(self, b):
        with memoryview(b) as view, view.cast("B") as out:
            data = self._read(len(out))
            out[: len(data)] = data
        return len(data)

    def _more(self) -> bytes:
        b = self._fp.read(self._READ)
        self._offset += len(b)
        return b

    def _next_stream(self, tail: bytes) -> bool:
        """After the end of a stream (``tail``: its unused bytes): start the next one,
        or return False at the end of the file."""
        start = self._offset - len(tail)  # where the bytes after the stream begin
        if self._kind == "xz":
            pad = 0
            while True:
                stripped = tail.lstrip(b"\0")
                pad += len(tail) - len(stripped)
                tail = stripped
                if tail:
                    break
                tail = self._more()
                if not tail:
                    break
            if pad % 4:
                raise StreamError(f"{pad} zero bytes after xz stream {self._stream} (at compressed byte "
                                  f"{start:,}): stream padding must be a multiple of 4 bytes")
            start += pad
        while len(tail) < len(self._magic):
            more = self._more()
            if not more:
                break
            tail += more
        if not tail:
            return False
        if not tail.startswith(self._magic):
            rest = len(tail) + self._remaining()
            raise StreamError(f"{rest:,} bytes after {self._what} stream {self._stream} (from compressed byte "
                              f"{start:,}) are not {self._what} data (trailing garbage?)")
        self._stream += 1
        self._d = self._new()
        self._pending = tail
        return True

    def _remaining(self) -> int:
        n = 0
        while True:
            b = self._more()
            if not b:
                return n
            n += len(b)

    def _read(self, size: int) -> bytes:
        while not self._done and size > 0:
            d = self._d
            if d.eof:
                if not self._next_stream(d.unused_data):
                    self._done = True
                    break
                continue
            if self._pending:
                raw, self._pending = self._pending, b""
            elif d.needs_input:
                raw = self._more()
                if not raw:
                    raise EOFError(f"the data ends inside {self._what} stream {self._stream} (truncated file)")
            else:
                raw = b""
            data = d.decompress(raw, size)
            if data:
                return data
        return b""

    def close(self):
        try:
            self._fp.close()
        finally:
            super().close()



class _TarText(io.RawIOBase):
    """The text of a (compressed) tarball as a seekable file for :mod:`tarfile`.

    ``tarfile.open(path, "r:*")`` reads through ``gzip.GzipFile``, ``lzma.LZMAFile`` and
    ``bz2.BZ2File``, which end quietly at data after a stream that does not decode
    (``.xz``, ``.bz2``), and stops at the archive's end block without ever reading
    what follows it (every kind): trailing garbage after a tarball was accepted. This
    reads through :meth:`Source._decompressor`'s streams, which refuse it as they do
    for a plain compressed file. Forward seeks read on; a backward seek starts again
    from the file's start (as ``GzipFile`` does).

    The raw file under each opening is opened here and closed here, on a backward
    seek and on :meth:`close`: ``GzipFile(fileobj=...)`` (and the other readers) do
    not close a file they were given, which left a descriptor per opening to the
    garbage collector.

    The file's bytes are hashed as they are read (:class:`_CheckedReader`), and each
    opening checks them against what the openings before it read: the archive is read
    once for its headers and again for its member, and :meth:`digest` is the SHA-256
    of the bytes both read, or :class:`ChangedWhileRead` when they differ.
    """

    _SKIP = 1 << 20

    def __init__(self, path, opener):
        self._path = path
        self._opener = opener  # (raw file at its start) -> the text stream over it
        self._raw = None
        self._reader = None
        self._s = None
        self._skip = None
        self._marks = []  # (bytes read, their sha256, whether that was the end) per opening closed
        self.changed = None  # why the file's bytes differed between openings
        self._open()

    def _open(self):
        raw = io.FileIO(self._path, "rb")
        try:
            reader = _CheckedReader(raw, self)
            s = self._opener(reader)
        except BaseException:
            raw.close()
            raise
        self._raw, self._reader, self._s, self._pos = raw, reader, s, 0

    def _close_stream(self):
        s, raw, reader = self._s, self._raw, self._reader
        self._s = self._raw = self._reader = None
        if reader is not None and reader.count:
            self._marks.append((reader.count, reader.hash.digest(), reader.eof))
            self._marks.sort(key=lambda m: m[0])
        try:
            if s is not None:
                s.close()
        finally:
            if raw is not None:
                raw.close()

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def readinto(self, b):
        n = self._s.readinto(b)
        self._pos += n
        return n

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence == io.SEEK_END:
            self._read_to_end()
            offset += self._pos
        elif whence != io.SEEK_SET:
            raise ValueError(f"invalid whence {whence}")
        if offset < 0:
            raise ValueError(f"negative seek position {offset}")
        if offset < self._pos:
            self._close_stream()
            self._open()
        if self._skip is None and offset > self._pos:
            self._skip = bytearray(self._SKIP)
        while self._pos < offset:
            n = self.readinto(memoryview(self._skip)[: min(self._SKIP, offset - self._pos)])
            if not n:
                break
        return self._pos

    def _read_to_end(self):
        _read_through(self.readinto)

    def check(self, display=None):
        """Raise :class:`ChangedWhileRead` (naming the file ``display``) when an opening
        read other bytes than one before it."""
        if self.changed:
            raise ChangedWhileRead(display or self._path, None, f"the file changed while it was read "
                                   f"({self.changed}): read it again once it is no longer being written")

    def digest(self, display=None) -> str:
        """SHA-256 of the file as the current opening read it, read on to its end (under
        the decompressor, which has used what it needed), once it is checked against
        every opening before (:meth:`check`)."""
        self._reader.drain()
        self.check(display)
        return self._reader.hash.hexdigest()

    def close(self):
        try:
            self._close_stream()
        finally:
            super().close()


class ChangedWhileRead(InputError):
    """The input's bytes differ between two reads of it (a tarball is read once for its
    headers and again for its member): an edit landed while it was read, which its
    stat need not show (a timestamp tick that did not move).  Read it again."""


class _CheckedReader(io.RawIOBase):
    """One opening of a file for :class:`_TarText`: hashes what it hands out and, as
    its reads pass the end of what an earlier opening read, compares the two hashes;
    at the end of the file, it must end where an earlier opening found the end."""

    def __init__(self, f, owner):
        self._f = f
        self._owner = owner
        self.hash = hashlib.sha256()
        self.count = 0  # bytes of the file read so far
        self.eof = False

    def readable(self):
        return True

    def readinto(self, b):
        n = self._f.readinto(b)
        if n:
            with memoryview(b) as view, view.cast("B") as got:
                start, done = self.count, 0
                for end, digest, _ in self._owner._marks:
                    if start < end <= start + n:  # an earlier opening stopped here
                        self.hash.update(got[done : end - start])
                        done = end - start
                        if self.hash.digest() != digest:
                            self._changed(f"its first {end:,} bytes differ between two reads")
                self.hash.update(got[done:n])
            self.count += n
        elif n == 0 and len(b) and not self.eof:
            self.eof = True
            for end, _, at_eof in self._owner._marks:
                if end > self.count:
                    self._changed(f"it ended at byte {self.count:,}, after {end:,} bytes an earlier read found")
                elif at_eof and end < self.count:
                    self._changed(f"it ended at byte {end:,} when read first, at byte {self.count:,} later")
        return n

    def _changed(self, why):
        if not self._owner.changed:
            self._owner.changed = why

    def drain(self):
        """Read (and hash) what the decompressor left unread, to the file's end."""
        _read_through(self.readinto)

    def close(self):
        self._f.close()
        super().close()


class _HashingReader(io.RawIOBase):
    """Raw reader that feeds every byte it hands out to a sha256 (one pass, no copy)."""

    def __init__(self, f):
        self._f = f
        self.hash = hashlib.sha256()
        self.count = 0  # bytes of the file read so far

    def readable(self):
        return True

    def readinto(self, b):
        n = self._f.readinto(b)
        if n:
            self.hash.update(memoryview(b)[:n])
            self.count += n
        return n

    def drain(self):
        """Hash whatever the decompressor left unread (trailing bytes)."""
        while True:
            chunk = self._f.read(1 << 20)
            if not chunk:
                break
            self.hash.update(chunk)

    def close(self):
        self._f.close()
        super().close()


def compression_of(path: Path, magic: bytes) -> str | None:
    if magic.startswith(b"\x1f\x8b"):
        return "gz"
    if magic.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if magic.startswith(b"BZh"):
        return "bz2"
    if magic.startswith(b"\x28\xb5\x2f\xfd"):
        return "zst"
    return None


_NAMED = {".gz": "gz", ".tgz": "gz", ".xz": "xz", ".bz2": "bz2", ".zst": "zst", ".zstd": "zst"}


def named_compression(name: str) -> str | None:
    """The compression a file's name announces (``.gz`` ...), or ``None``."""
    low = name.lower()
    for suf, kind in _NAMED.items():
        if low.endswith(suf):
            return kind
    return None


def strip_compression(name: str) -> str:
    low = name.lower()
    for suf in COMPRESSION_SUFFIXES:
        if low.endswith(suf):
            return name[: -len(suf)]
    return name


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


class Source:
    """A decompressed binary text stream over an input file.

    ``stream`` yields the text; ``sha256()`` (after reading) is the digest of the file's
    bytes as they were read. Tarballs (SuiteSparse ``.tar.gz``) are opened at their main member.
    """

    def __init__(self, path, what: str = "a graph file"):
        self.path = Path(path)
        self.display = str(path)
        if not self.path.exists():
            raise InputError(self.display, None, "no such file")
        if self.path.is_dir():
            raise InputError(self.display, None, f"is a directory, expected {what}")
        if self.path.is_char_device() or self.path.is_block_device():
            # /dev/zero, /dev/urandom, a disk: endless or not a file of text (it read for ever)
            raise InputError(self.display, None, f"is a device, expected {what}")
        # a pipe (`<(zcat g.gr)`, a mkfifo) is read more than once here (its first bytes
        # for the format, then the text): the second read found it empty ("empty
        # file" of a pipe that was not) or, for a named FIFO, waited for ever
        refuse_pipe(self.path, "an input is read more than once (its format, then its text)", self.display)
        with open(self.path, "rb") as f:
            magic = f.read(8)
        if magic[:4] == b"PAR1":
            # a Parquet file under another name was read as text: "non-numeric source id
            # 'PAR1\x15...'" (an edge list's first line, or a sources file's)
            if is_parquet_name(self.path):
                # (`sssp ingest g.parquet`: told to rename it to end in .parquet, as it did)
                tail = (" (`sssp ingest` converts text formats; a Parquet edge list is given to solve, study, "
                        "bench and verify as it is)") if what == "a graph file" else ""
                raise InputError(self.display, None, f"is a Parquet file, where {what} in a text format is "
                                 f"read here{tail}")
            raise InputError(self.display, None, "is a Parquet file (it starts with PAR1), which is read as one "
                             "only under a name ending in .parquet: rename it (or link it) to end in .parquet")
        self.compression = compression_of(self.path, magic)
        if self.path.name.lower().endswith(".lzma") and self.compression is None:
            # (its name's suffix was dropped, its data read as text: "carriage return inside
            # the line, after 'U\ufffd(W...'")
            raise InputError(self.display, None, "legacy LZMA data (.lzma) is not read: decompress it first "
                             "(unlzma, xz -d), or compress the text again as .xz")
        named = named_compression(self.path.name)
        if named is not None and named != self.compression:
            suffix = self.path.name[len(strip_compression(self.path.name)):]
            stem = strip_compression(self.path.name)
            if not magic:
                why = "the file is empty"
            elif self.compression is None:
                why = f"the file is not compressed (plain text?): rename it to {stem}"
            else:
                why = f"the file holds {_KIND[self.compression]} data: rename it to {stem}.{self.compression}"
            raise InputError(self.display, None, f"not {_KIND[named]} data, though its name ends in {suffix}; {why}")
        self.member = None
        self._tar = None
        self._tar_file = None
        self._raw = None
        self._digest = None
        self._closers = []
        # bytes of text, when known before reading (not for compressed streams)
        self.text_size = None if self.compression else self.path.stat().st_size
        self.text_read = 0  # bytes of text handed out
        self.last_line = None  # number of the line a LineCursor handed out last
        self._checked_end = False
        name = strip_compression(self.path.name)
        self.inner_name = name
        if name.lower().endswith((".tar", ".tgz")) or self._looks_like_tar():
            self._open_tar()
        else:
            self._raw = _HashingReader(open(self.path, "rb"))
            self.stream = self._decompressor(self._raw)

    def _decompressor(self, raw):
        c = self.compression
        buffered = io.BufferedReader(raw, buffer_size=1 << 20)
        if c is None:
            return buffered
        if c == "gz":
            return gzip.GzipFile(fileobj=buffered, mode="rb")
        if c in ("xz", "bz2"):  # not LZMAFile/BZ2File: they drop what follows a bad stream
            return io.BufferedReader(_Streams(buffered, c), buffer_size=1 << 20)
        if c == "zst":
            import zstandard

            return zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)
        raise AssertionError(c)

    def _looks_like_tar(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                s = self._decompressor(f.raw if hasattr(f, "raw") else f)
                head = s.read(512)
        except Exception:
            return False
        # the magic alone is text a comment can hold at byte 257: the header's checksum too
        return len(head) >= 262 and head[257:262] == b"ustar" and _tar_header(head)

    def _open_text(self, raw):
        """The decompressed text of ``raw``, the file from its start (for :class:`_TarText`,
        which closes ``raw``)."""
        return self._decompressor(raw)

    def _open_tar(self):
        """Open the archive and pick its main member. The whole archive is read once here
        (its headers): the member list must end at the end-of-archive block, not at a
        block that is not a header (tarfile ends the list there quietly), and the
        compressed data must end where its last stream ends (or in gzip's zero
        padding, or xz's stream padding), as for a plain compressed file: trailing
        garbage is refused, not dropped. What follows the end block inside the text
        (the rest of the last record) is ignored, as ``tar`` does."""
        # also a plain tar: its bytes are hashed as they are read (a forward seek reads
        # on), so that sha256() is that of the bytes the member was read from
        fileobj = io.BufferedReader(_TarText(self.path, self._open_text), buffer_size=1 << 20)
        kind = _KIND.get(self.compression)
        try:
            try:
                tar = tarfile.open(fileobj=fileobj, mode="r:")
                members = [m for m in tar.getmembers() if m.isfile()]
                end = tar.offset  # where the member list stopped
                fileobj.seek(end)
                # the end-of-archive block (zeros), or nothing; what follows it up to the end
                # of the record is ignored, as tar does (SuiteSparse's tarballs have old
                # buffer contents there), but a block that is neither a header nor zeros
                # also ends tarfile's member list, without a word
                stop = fileobj.read(tarfile.BLOCKSIZE)
                after = fileobj.read(tarfile.BLOCKSIZE)  # the end is two zero blocks
                # the rest is read through (the compressed data must end cleanly too),
                # looking at each record's first block: another archive there is a
                # concatenated one, which tar (without -i) and tarfile drop quietly
                appended = _appended_archive(fileobj, end + len(stop) + len(after))
                if self.compression == "zst" and (why := zstd_incomplete(self.path)):
                    raise _ZstdError(why)
                fileobj.raw.check(self.display)  # a backward seek of the scan read the file again
            except (tarfile.TarError,) + _STREAM_ERRORS as exc:
                fileobj.raw.check(self.display)  # an edit, not a damaged archive
                if kind and not isinstance(exc, tarfile.TarError):
                    raise InputError(self.display, None, f"unreadable tar archive: its {kind} data ends "
                                     f"early or is corrupt: {exc}") from None
                raise InputError(self.display, None, f"unreadable tar archive: {exc}") from None

            def at(offset: int) -> str:  # where in the archive's text
                return f"byte {offset:,} of its {kind} text" if kind else f"byte {offset:,}"

            if stop.strip(b"\0"):
                raise InputError(self.display, None, f"damaged tar archive: the block at {at(end)} (after "
                                 f"{len(members):,} files) is neither a file's header nor the end of the "
                                 "archive; the files after it cannot be read")
            if _tar_header(after):  # (the block before it is zeros: refused above otherwise)
                # one zero block, then a header: tarfile ends the list at the first zero
                # block, and so does GNU tar (it warns "A lone zero block" and lists only
                # the files before it): the files after it would be dropped
                raise InputError(self.display, None, f"damaged tar archive: a lone zero block at {at(end)} (after "
                                 f"{len(members):,} files) is followed by more files, which tar and tarfile "
                                 "both stop before (tar warns 'A lone zero block'): the archive is damaged")
            if appended is not None:
                raise InputError(self.display, None, f"another tar archive starts at {at(appended)}, after this one's "
                                 f"end ({len(members):,} files): tarballs joined with cat? tar reads the "
                                 "first only (tar -i reads on); extract the graph file and give it alone")
            if not members:
                raise InputError(self.display, None, "tar archive holds no files")
        except BaseException:
            fileobj.close()
            raise
        self._tar_file = fileobj
        stem = strip_compression(self.path.name)
        for suf in (".tar", ".tgz"):
            if stem.lower().endswith(suf):
                stem = stem[: -len(suf)]
        try:
            pick = _main_member(members, stem)
        except ValueError as exc:
            fileobj.close()
            raise InputError(self.display, None, str(exc)) from None
        self._tar = tar
        self.member = pick.name
        self.inner_name = Path(pick.name).name
        self.display = f"{self.path}[{pick.name}]"
        self.text_size = int(pick.size)
        self.stream = io.BufferedReader(tar.extractfile(pick), buffer_size=1 << 20)

    def sha256(self) -> str:
        """SHA-256 of the file's bytes as they were read (read on to the end of the file
        for bytes the text did not need), not of the file as it is now: an ingested
        copy records it, and an edit during the read must not pass for its source.

        Raises
        ------
        ChangedWhileRead
            A tarball whose bytes differ between the read of its headers and that of
            its member.
        """
        if self._digest is None:
            if self._raw is not None:
                self._raw.drain()
                self._digest = self._raw.hash.hexdigest()
            elif self._tar_file is not None:
                self._digest = self._tar_file.raw.digest(self.display)
            else:  # pragma: no cover - every Source reads through one of the above
                self._digest = sha256_file(self.path)
        return self._digest

    def close(self):
        for stop in list(self._closers):  # read-ahead threads first, then the stream
            stop()
        try:
            self.stream.close()
        finally:
            try:
                if self._tar is not None:
                    self._tar.close()
                if self._tar_file is not None:
                    self._tar_file.close()
            finally:
                if self._raw is not None:  # GzipFile & co. leave the file they read open
                    self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if isinstance(exc, InputError) and not isinstance(exc, ChangedWhileRead):
                self._changed_instead(exc)
        finally:
            self.close()
        if isinstance(exc, NumberTooLarge) and not exc.located:
            # raised while a reader parsed the line its cursor handed out last
            exc.path, exc.located = self.display, True
            if exc.line is None:
                exc.line = self.last_line

    def _changed_instead(self, exc):
        """A tarball's text that is found malformed may be an edit that landed between the
        read of its headers and that of its member (what the member's headers said is
        not what is there now): raise :class:`ChangedWhileRead` from ``exc`` then.  The
        file is read on to its end for it, on this error path only."""
        if self._tar_file is None or self._tar_file.closed:
            return
        for stop in list(self._closers):  # no read-ahead thread under the drain
            stop()
        try:
            self._tar_file.raw.digest(self.display)
        except ChangedWhileRead as changed:
            raise changed from exc
        except Exception:  # the file cannot be read on: the error stands as it is
            pass

    def _failed(self, exc, detail=None) -> TruncatedInput:
        what = f"{_KIND[self.compression]} data" if self.compression else "the file"
        if self._tar is not None:
            what = "the archive"
        where = ""
        if self._raw is not None and self.compression:
            where = f" at compressed byte {self._raw.count:,} of {self.path.stat().st_size:,}"
        if detail is None:
            if isinstance(exc, (EOFError, tarfile.TarError)):
                detail = f"{what} ends early or is corrupt{where}: {exc}"
            else:
                detail = f"{what} cannot be read{where} (truncated or corrupt?): {exc}"
        err = TruncatedInput(self.display, None, f"{detail} (after {self.text_read:,} bytes of text)",
                             self.text_read, detail)
        if self._tar is None and self.compression:
            err.readable = readable_text(self.path, self.compression)
        return err

    def _at_end(self):
        """End of the decompressed text: make sure the compressed data ended too."""
        if self._checked_end:
            return
        self._checked_end = True
        if self.compression == "zst" and self._tar is None:
            why = zstd_incomplete(self.path)
            if why:
                raise self._failed(None, f"zstd data ends early (truncated file): {why}")

    def readinto_exact(self, mv) -> int:
        """Fill ``mv`` as far as the stream allows; returns the byte count (0 at end).

        Raises
        ------
        TruncatedInput
            The compressed data (or archive) ends early or is corrupt.
        """
        total = 0
        n = len(mv)
        try:
            while total < n:
                # at most 1 MiB per call: a decompressor that fails drops the text of
                # the failing call, so this bounds how much of it goes unreported
                got = self.stream.readinto(mv[total : min(n, total + (1 << 20))])
                if not got:
                    self._at_end()
                    break
                total += got
                self.text_read += got
        except (TruncatedInput,) + _STREAM_ERRORS as exc:
            err = exc if isinstance(exc, TruncatedInput) else self._failed(exc)
            err.partial = total
            raise err from None
        return total

    def read_exact(self, n: int) -> bytes:
        """Read up to ``n`` bytes, looping over short reads of decompressors."""
        parts = []
        left = n
        try:
            while left > 0:
                b = self.stream.read(left)
                if not b:
                    self._at_end()
                    break
                parts.append(b)
                left -= len(b)
                self.text_read += len(b)
        except _STREAM_ERRORS as exc:
            if isinstance(exc, InputError):
                raise
            raise self._failed(exc) from None
        return b"".join(parts)


def peek_text(path, nbytes: int = 1 << 16) -> tuple[bytes, str]:
    """First ``nbytes`` of decompressed text and the inner file name (for detection).

    A truncated compressed file gives what could be read: the error is raised by the
    full read, which can say on which line the text stops.
    """
    with Source(path) as src:
        buf = bytearray()
        try:
            while len(buf) < nbytes:
                b = src.read_exact(min(1 << 13, nbytes - len(buf)))
                if not b:
                    break
                buf += b
        except TruncatedInput:
            pass
        return bytes(buf), src.inner_name


class LineCursor:
    """Reads a stream line by line (for headers), then hands out line-aligned chunks.

    ``lineno`` is the 1-based number of the next line to be returned.
    """

    def __init__(self, source: Source, chunk_bytes: int):
        self.source = source
        self.chunk_bytes = max(int(chunk_bytes), 1 << 12)
        self._buf = bytearray()
        self._pos = 0  # start of the unread text in _buf (lines handed out are not copied away)
        self._eof = False
        self.lineno = 1

    def _fill(self, n):
        """Read until ``n`` unread bytes are buffered (or the end). The buffer grows
        geometrically and consumed lines are dropped only when they are most of it, so a
        line of L bytes costs O(L), not O(L**2) (a 60 MB comment line took a minute,
        a 100 KB .gz holding one 100 MB line two)."""
        while len(self._buf) - self._pos < n and not self._eof:
            if self._pos and self._pos >= len(self._buf) // 2:
                del self._buf[: self._pos]
                self._pos = 0
            try:
                b = self.source.read_exact(max(n - (len(self._buf) - self._pos), 1 << 16))
            except TruncatedInput as exc:
                raise exc.at_line(self.lineno - 1 + self._buf.count(b"\n", self._pos)) from None
            if not b:
                self._eof = True
            else:
                self._buf += b

    def readline(self) -> bytes | None:
        """Next line without its end-of-line, LF or CRLF (``None`` at end of file).

        Raises
        ------
        InputError
            The line holds a lone CR (:func:`lone_cr_note`).
        """
        scan = self._pos
        while True:
            i = self._buf.find(b"\n", scan)
            if i >= 0:
                line = bytes(self._buf[self._pos : i])
                self._pos = i + 1
            elif self._eof:
                if self._pos >= len(self._buf):
                    return None
                line = bytes(self._buf[self._pos :])
                self._pos = len(self._buf)
            else:
                unread = len(self._buf) - self._pos  # (no newline in it: not searched again)
                if unread > MAX_LINE:  # (a METIS vertex's line may be long; not a gigabyte)
                    raise InputError(self.source.display, self.lineno,
                                     f"line longer than {MAX_LINE:,} bytes (no line break): not a line of a "
                                     "graph file (a damaged or binary file?)")
                self._fill(unread + max(1 << 16, unread))
                scan = self._pos + unread  # (_fill may have moved the unread text to the front)
                continue
            if self.lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                # a UTF-8 byte-order mark (an editor's): the edge list and sources readers
                # took it, the DIMACS and MatrixMarket ones refused "got '\\ufeffp sp 3 2'"
                line = line[3:]
            self.source.last_line = self.lineno
            self.lineno += 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if b"\r" in line:
                raise InputError(self.source.display, self.lineno - 1, lone_cr_note(line))
            return line

    def unread(self, line: bytes):
        """Put one line back (the first record after a header)."""
        self._buf[: self._pos] = line + b"\n"  # (the line just read: what stood before _pos)
        self._pos = 0
        self.lineno -= 1

    def chunks(self):
        """Yield ``(buf, end, first_line, nlines, lone_cr)``: ``buf[:end]`` holds whole
        lines; ``lone_cr`` says whether one of them holds a carriage return that does
        not end it (just before its LF): see :func:`lone_cr_note`.

        A background thread reads ahead (``readinto`` into a small pool of reused
        ``bytearray`` buffers, so no per-chunk allocation), feeding the sha256 and
        counting the newlines as it goes; decompression, hashing and counting thus
        overlap the parsing on the calling thread (all of them release the GIL).
        ``buf`` is valid until the next chunk is requested, so the consumer parses it
        or copies it. It is Python memory: never hand it to a threaded pyarrow reader
        as it is (``pyarrow.py_buffer``), see ``_records.arrow_copy``.
        """
        reader = _ChunkReader(self.source, self.chunk_bytes, bytes(self._buf[self._pos :]), self._eof, self.lineno)
        self._buf = bytearray()
        self._pos = 0
        self.source._closers.append(reader.stop)
        try:
            while True:
                item = reader.next()
                if item is None:
                    self._eof = True
                    return
                ba, end, nlines, lone_cr = item
                first = self.lineno
                self.lineno += nlines
                try:
                    yield ba, end, first, nlines, lone_cr
                finally:
                    reader.release(ba)
        finally:
            reader.stop()
            try:
                self.source._closers.remove(reader.stop)
            except ValueError:
                pass


#: the longest line the chunk reader buffers whole (beyond the chunk size): a record
#: line (an arc, an id) is a few dozen bytes
MAX_RECORD_LINE = 1 << 24
#: the longest line the line reader (headers, comments, METIS's adjacency lines) takes
MAX_LINE = 1 << 28


class _Stopped(Exception):
    pass


class _ChunkReader:
    """Read-ahead thread behind :meth:`LineCursor.chunks`.

    Three buffers circulate: one held by the consumer, one ready in the queue, one
    being filled, so memory stays at ~3 chunks. The newline count uses NumPy on a
    reused mask (GIL released) rather than ``bytes.count`` (GIL held).
    """

    _POLL = 0.2

    def __init__(self, source, size, carry: bytes, eof: bool, first_line: int = 1):
        self.source = source
        self.lines_done = first_line - 1  # complete lines handed out before this buffer
        self.size = size
        self._carry = bytes(carry)
        self._eof = eof
        self._free = queue.Queue()
        for _ in range(3):
            self._free.put(None)  # allocated lazily, on first use
        self._ready = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._mask = None
        self._crmask = None
        self._thread = threading.Thread(target=self._run, name="sssp-ingest-read", daemon=True)
        self._thread.start()

    # -- consumer side -------------------------------------------------------------
    def next(self):
        while True:
            try:
                item = self._ready.get(timeout=self._POLL)
            except queue.Empty:
                if not self._thread.is_alive() and self._ready.empty():
                    raise RuntimeError("ingest reader thread ended unexpectedly")  # pragma: no cover
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def release(self, ba):
        self._free.put(ba)

    def stop(self):
        if self._stop.is_set():
            return
        self._stop.set()
        while self._thread.is_alive():
            try:  # unblock a put() on a full queue
                while True:
                    self._ready.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=self._POLL)

    # -- reader thread -------------------------------------------------------------
    def _put(self, item):
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                self._ready.put(item, timeout=self._POLL)
                return
            except queue.Full:
                continue

    def _take(self):
        while True:
            if self._stop.is_set():
                raise _Stopped
            try:
                return self._free.get(timeout=self._POLL)
            except queue.Empty:
                continue

    def _count_lines(self, ba, end) -> tuple[int, bool]:
        """Newlines in ``ba[:end]`` (which ends with one), and whether a CR stands
        anywhere but just before an LF (a lone CR)."""
        import numpy as np

        has_cr = ba.find(b"\r", 0, end) >= 0  # memchr: CRLF files pay the check below
        if end < (1 << 16):
            lone = has_cr and ba.count(b"\r", 0, end) != ba.count(b"\r\n", 0, end)
            return ba.count(b"\n", 0, end), lone
        if self._mask is None or len(self._mask) < end:
            self._mask = np.empty(max(end, self.size + (1 << 20)), dtype=bool)
        arr = np.frombuffer(ba, dtype=np.uint8, count=end)
        m = self._mask[:end]
        np.equal(arr, 10, out=m)
        nlines = int(np.count_nonzero(m))
        lone = False
        if has_cr:  # vectorised, GIL released: a CR at i and no LF at i + 1
            if self._crmask is None or len(self._crmask) < end:
                self._crmask = np.empty(len(self._mask), dtype=bool)
            c = self._crmask[:end]
            np.equal(arr, 13, out=c)
            np.greater(c[:-1], m[1:], out=c[:-1])
            lone = bool(c[:-1].any())  # (the last byte is the chunk's final LF)
        return nlines, lone

    def _run(self):
        try:
            self._loop()
            self._put(None)
        except _Stopped:
            return
        except BaseException as exc:  # handed to the consumer, raised there
            try:
                self._put(exc)
            except _Stopped:
                return

    def _loop(self):
        size = self.size
        carry = self._carry
        eof = self._eof
        while True:
            ba = self._take()
            if ba is None or len(ba) < max(size + (1 << 20), len(carry) + size):
                ba = bytearray(max(size + (1 << 20), len(carry) + size))
            filled = len(carry)
            ba[:filled] = carry
            searched = 0  # ba[:searched] holds no line break
            while True:
                if self._stop.is_set():
                    raise _Stopped
                if not eof:
                    want = size - filled if filled < size else (1 << 20)
                    if filled + want > len(ba):
                        nb = bytearray(2 * (filled + want))
                        nb[:filled] = ba[:filled]
                        ba = nb
                    try:
                        got = self.source.readinto_exact(memoryview(ba)[filled : filled + want])
                    except TruncatedInput as exc:
                        raise exc.at_line(self.lines_done + ba.count(b"\n", 0, filled + exc.partial)) from None
                    if got == 0:
                        eof = True
                    filled += got
                if filled == 0:
                    return
                if eof:
                    if ba[filled - 1] != 10:
                        if filled + 1 > len(ba):
                            nb = bytearray(filled + 1)
                            nb[:filled] = ba[:filled]
                            ba = nb
                        ba[filled] = 10
                        filled += 1
                    end = filled
                    break
                i = ba.rfind(b"\n", searched, filled)
                if i >= 0:
                    end = i + 1
                    break
                # one line longer than a chunk: keep reading into this buffer, up to a
                # bound (a record line is a few dozen bytes; a 100 KB .gz holding one
                # 100 MB line took 2 GB, and Arrow aborted under ulimit -v)
                searched = filled
                if filled > max(size, MAX_RECORD_LINE):
                    raise InputError(self.source.display, self.lines_done + 1,
                                     f"line longer than {max(size, MAX_RECORD_LINE):,} bytes (no line break): "
                                     "not a record line (a damaged or binary file?)")
            carry = bytes(ba[end:filled])
            nlines, lone_cr = self._count_lines(ba, end)
            self.lines_done += nlines
            self._put((ba, end, nlines, lone_cr))
            if eof and not carry:
                return
