"""Reading a split cache (.npz) with its large arrays memory-mapped instead of copied.

``np.savez`` stores each array as an uncompressed ``.npy`` member of a zip file, so a member's
data sits contiguously in the file: mapping it read-only lets every job (and every grid
candidate) reading the same split share the page cache's copy instead of holding its own, and
lets the OS drop pages under pressure instead of the job running out of memory. ``np.load``
cannot do this for .npz (its ``mmap_mode`` applies to .npy only), hence the offsets here."""

from __future__ import annotations

import os
import struct
import zipfile

import numpy as np
from numpy.lib import format as npy_format

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra field length


def load_npz(path: str | os.PathLike, mmap: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Every array of ``path``; those named in ``mmap`` are read-only views of the file when they
    are stored uncompressed with a plain dtype (else they are read as usual)."""
    arrays: dict[str, np.ndarray] = {}
    if mmap:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as f:
            for info in archive.infolist():
                name = info.filename.removesuffix(".npy")
                if name in mmap and info.compress_type == zipfile.ZIP_STORED:
                    mapped = _map_member(path, f, info)
                    if mapped is not None:
                        arrays[name] = mapped
    with np.load(path, allow_pickle=False) as z:
        for name in z.files:
            if name not in arrays:
                arrays[name] = z[name]
    return arrays


def _map_member(path, f, info: zipfile.ZipInfo) -> np.ndarray | None:
    f.seek(info.header_offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        return None
    f.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    version = npy_format.read_magic(f)
    if version == (1, 0):
        shape, fortran_order, dtype = npy_format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran_order, dtype = npy_format.read_array_header_2_0(f)
    else:
        return None
    if dtype.hasobject or 0 in shape:
        return None
    mapped = np.memmap(path, dtype=dtype, mode="r", offset=f.tell(), shape=shape,
                       order="F" if fortran_order else "C")
    return np.asarray(mapped)  # a plain ndarray view of the mapping
