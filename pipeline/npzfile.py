"""The ``.npz`` cache files (the CSR cache, the hierarchy cache), checked before reading.

Both caches are written by ``np.savez``: a zip of *stored* (uncompressed) ``.npy``
members.  :func:`members` reads only the members' headers and refuses a file that this
writer cannot have made: a compressed member (a few kilobytes that inflate to gigabytes
of zeros before any checksum or shape is compared), a member that is not an array, an
object array (never unpickled: ``np.load(allow_pickle=False)`` refuses it too, but only
when it is read), or a header that declares more or fewer bytes than the member holds.
What the readers then load is bounded by the size of the file on disk, and a reader can
compare every declared dtype and shape with what it expects before any array is read.
"""
from __future__ import annotations

import math
import os
import stat
import zipfile

import numpy as np

__all__ = ["members"]


def members(path) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """``{name: (dtype, shape)}`` of the arrays in the ``.npz`` file ``path``, from their
    headers only.

    Raises
    ------
    ValueError
        The file is not a regular file (a FIFO would block ``open``), or not a zip of
        stored ``.npy`` members whose headers match their sizes (one line, naming the
        member).
    OSError, zipfile.BadZipFile
        The file cannot be read, or is not a zip file.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block open() for ever
        raise ValueError("not a regular file")
    size = st.st_size
    out = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise ValueError(f"member {name!r} is not an array")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                raise ValueError(f"member {name!r} is compressed (the cache is written uncompressed)")
            if info.file_size > size:
                raise ValueError(f"member {name!r} declares {info.file_size:,} bytes, the file has {size:,}")
            with zf.open(info) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
                else:
                    raise ValueError(f"member {name!r}: .npy format version {version}")
                header = f.tell()
            if any(int(x) < 0 for x in shape):  # two negative sizes multiply to a positive count
                raise ValueError(f"member {name!r} declares a negative size {tuple(shape)}")
            if dtype.hasobject:
                raise ValueError(f"member {name!r} holds Python objects ({dtype})")
            nbytes = math.prod(int(x) for x in shape) * dtype.itemsize
            if header + nbytes != info.file_size:
                raise ValueError(f"member {name!r} declares {dtype} {tuple(shape)} ({nbytes:,} bytes), "
                                 f"it holds {info.file_size - header:,}")
            out[name[:-4]] = (dtype, tuple(int(x) for x in shape))
    return out
