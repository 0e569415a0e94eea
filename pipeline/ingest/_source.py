"""Opening inputs: compression, tarballs, hashing while reading, line-aligned chunks."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import queue
import tarfile
import threading
from pathlib import Path

from ..errors import InputError

COMPRESSION_SUFFIXES = (".gz", ".xz", ".bz2", ".zst", ".zstd", ".lzma")


class _HashingReader(io.RawIOBase):
    """Raw reader that feeds every byte it hands out to a sha256 (one pass, no copy)."""

    def __init__(self, f):
        self._f = f
        self.hash = hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, b):
        n = self._f.readinto(b)
        if n:
            self.hash.update(memoryview(b)[:n])
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

    ``stream`` yields the text; ``sha256()`` (after reading) is the digest of the file
    on disk. Tarballs (SuiteSparse ``.tar.gz``) are opened at their main member.
    """

    def __init__(self, path):
        self.path = Path(path)
        self.display = str(path)
        if not self.path.exists():
            raise InputError(self.display, None, "no such file")
        if self.path.is_dir():
            raise InputError(self.display, None, "is a directory, expected a graph file")
        with open(self.path, "rb") as f:
            magic = f.read(8)
        self.compression = compression_of(self.path, magic)
        self.member = None
        self._tar = None
        self._raw = None
        self._digest = None
        self._closers = []
        # bytes of text, when known before reading (not for compressed streams)
        self.text_size = None if self.compression else self.path.stat().st_size
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
        if c == "xz":
            return lzma.LZMAFile(buffered, mode="rb")
        if c == "bz2":
            return bz2.BZ2File(buffered, mode="rb")
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
        return len(head) >= 262 and head[257:262] == b"ustar"

    def _open_tar(self):
        try:
            tar = tarfile.open(self.path, "r:*")
            members = [m for m in tar.getmembers() if m.isfile()]
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise InputError(self.display, None, f"unreadable tar archive: {exc}") from None
        if not members:
            raise InputError(self.display, None, "tar archive holds no files")
        stem = strip_compression(self.path.name)
        for suf in (".tar", ".tgz"):
            if stem.lower().endswith(suf):
                stem = stem[: -len(suf)]
        mtx = [m for m in members if m.name.lower().endswith(".mtx")]
        pick = None
        for m in mtx:
            if Path(m.name).stem == stem:
                pick = m
        if pick is None:
            # SuiteSparse extras (_gcs, _nodename, ...) have longer names than the matrix
            pool = mtx or members
            pick = min(pool, key=lambda m: (len(Path(m.name).name), m.name))
        self._tar = tar
        self.member = pick.name
        self.inner_name = Path(pick.name).name
        self.display = f"{self.path}[{pick.name}]"
        self.text_size = int(pick.size)
        self.stream = io.BufferedReader(tar.extractfile(pick), buffer_size=1 << 20)

    def sha256(self) -> str:
        if self._digest is None:
            if self._raw is not None:
                self._raw.drain()
                self._digest = self._raw.hash.hexdigest()
            else:
                self._digest = sha256_file(self.path)
        return self._digest

    def close(self):
        for stop in list(self._closers):  # read-ahead threads first, then the stream
            stop()
        try:
            self.stream.close()
        finally:
            if self._tar is not None:
                self._tar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def readinto_exact(self, mv) -> int:
        """Fill ``mv`` as far as the stream allows; returns the byte count (0 at end)."""
        total = 0
        n = len(mv)
        while total < n:
            got = self.stream.readinto(mv[total:])
            if not got:
                break
            total += got
        return total

    def read_exact(self, n: int) -> bytes:
        """Read up to ``n`` bytes, looping over short reads of decompressors."""
        parts = []
        left = n
        while left > 0:
            b = self.stream.read(left)
            if not b:
                break
            parts.append(b)
            left -= len(b)
        return b"".join(parts)


def peek_text(path, nbytes: int = 1 << 16) -> tuple[bytes, str]:
    """First ``nbytes`` of decompressed text and the inner file name (for detection)."""
    with Source(path) as src:
        return src.read_exact(nbytes), src.inner_name


class LineCursor:
    """Reads a stream line by line (for headers), then hands out line-aligned chunks.

    ``lineno`` is the 1-based number of the next line to be returned.
    """

    def __init__(self, source: Source, chunk_bytes: int):
        self.source = source
        self.chunk_bytes = max(int(chunk_bytes), 1 << 12)
        self._buf = b""
        self._eof = False
        self.lineno = 1

    def _fill(self, n):
        while len(self._buf) < n and not self._eof:
            b = self.source.read_exact(max(n - len(self._buf), 1 << 16))
            if not b:
                self._eof = True
            else:
                self._buf += b

    def readline(self) -> bytes | None:
        """Next line without its end-of-line (``None`` at end of file)."""
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line = self._buf[:i]
                self._buf = self._buf[i + 1 :]
                self.lineno += 1
                return line.rstrip(b"\r")
            if self._eof:
                if self._buf:
                    line, self._buf = self._buf, b""
                    self.lineno += 1
                    return line.rstrip(b"\r")
                return None
            self._fill(len(self._buf) + (1 << 16))

    def unread(self, line: bytes):
        """Put one line back (the first record after a header)."""
        self._buf = line + b"\n" + self._buf
        self.lineno -= 1

    def chunks(self):
        """Yield ``(buf, end, first_line, nlines)``: ``buf[:end]`` holds whole lines.

        A background thread reads ahead (``readinto`` into a small pool of reused
        ``bytearray`` buffers, so no per-chunk allocation), feeding the sha256 and
        counting the newlines as it goes; decompression, hashing and counting thus
        overlap the parsing on the calling thread (all of them release the GIL).
        ``buf`` is valid until the next chunk is requested, so the consumer parses it
        (``pyarrow.py_buffer(buf)[:end]`` is free) or copies it.
        """
        reader = _ChunkReader(self.source, self.chunk_bytes, self._buf, self._eof)
        self._buf = b""
        self.source._closers.append(reader.stop)
        try:
            while True:
                item = reader.next()
                if item is None:
                    self._eof = True
                    return
                ba, end, nlines = item
                first = self.lineno
                self.lineno += nlines
                try:
                    yield ba, end, first, nlines
                finally:
                    reader.release(ba)
        finally:
            reader.stop()
            try:
                self.source._closers.remove(reader.stop)
            except ValueError:
                pass


class _Stopped(Exception):
    pass


class _ChunkReader:
    """Read-ahead thread behind :meth:`LineCursor.chunks`.

    Three buffers circulate: one held by the consumer, one ready in the queue, one
    being filled, so memory stays at ~3 chunks. The newline count uses NumPy on a
    reused mask (GIL released) rather than ``bytes.count`` (GIL held).
    """

    _POLL = 0.2

    def __init__(self, source, size, carry: bytes, eof: bool):
        self.source = source
        self.size = size
        self._carry = bytes(carry)
        self._eof = eof
        self._free = queue.Queue()
        for _ in range(3):
            self._free.put(None)  # allocated lazily, on first use
        self._ready = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._mask = None
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

    def _count_lines(self, ba, end) -> int:
        import numpy as np

        if end < (1 << 16):
            return ba.count(b"\n", 0, end)
        if self._mask is None or len(self._mask) < end:
            self._mask = np.empty(max(end, self.size + (1 << 20)), dtype=bool)
        m = self._mask[:end]
        np.equal(np.frombuffer(ba, dtype=np.uint8, count=end), 10, out=m)
        return int(np.count_nonzero(m))

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
            while True:
                if self._stop.is_set():
                    raise _Stopped
                if not eof:
                    want = size - filled if filled < size else (1 << 20)
                    if filled + want > len(ba):
                        nb = bytearray(2 * (filled + want))
                        nb[:filled] = ba[:filled]
                        ba = nb
                    got = self.source.readinto_exact(memoryview(ba)[filled : filled + want])
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
                i = ba.rfind(b"\n", 0, filled)
                if i >= 0:
                    end = i + 1
                    break
                # one line longer than a chunk: keep reading into this buffer
            carry = bytes(ba[end:filled])
            nlines = self._count_lines(ba, end)
            self._put((ba, end, nlines))
            if eof and not carry:
                return
