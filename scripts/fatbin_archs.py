"""Which GPU architectures a CUDA shared library carries code for, read without cuobjdump.

    python scripts/fatbin_archs.py faiss/libfaiss.so
    ELF  sm_90: 182      (cubins: native code)
    PTX  sm_90: 182      (PTX: the driver compiles it for sm_90 and newer)

How the pinned faiss-gpu wheel was checked for Hopper (compute capability 9.0; docker/README.md):
``pip download --no-deps faiss-gpu==<pin>``, unzip, run this on ``faiss/libfaiss.so``.

A CUDA library keeps its device code in the ELF section ``.nv_fatbin``: fat binaries (magic 0xBA55ED50,
a 16-byte header whose size field gives the length of the entries that follow), each entry with a header
holding its kind (1 PTX, 2 ELF cubin), its header and payload sizes, and at offset 28 the SM number.
"""

from __future__ import annotations

import collections
import struct
import sys
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "PTX", 2: "ELF"}


def section(data: bytes, wanted: str) -> tuple[int, int] | None:
    """(offset, size) of an ELF64 little-endian file's section by name."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple:
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    names_offset = header(shstrndx)[4]
    for i in range(shnum):
        h = header(i)
        start = names_offset + h[0]
        if data[start:data.index(b"\0", start)].decode() == wanted:
            return h[4], h[5]
    return None


def fatbin_entries(data: bytes) -> collections.Counter:
    """Counter of (kind, sm) over every entry of every fat binary in ``.nv_fatbin``."""
    found = section(data, ".nv_fatbin")
    counts: collections.Counter = collections.Counter()
    if found is None:
        return counts
    pos, end = found[0], found[0] + found[1]
    while pos + 16 <= end:
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:   # fat binaries are 8-byte aligned; skip padding
            pos += 8
            continue
        entry, stop = pos + header_size, pos + header_size + fat_size
        while entry < stop:
            kind, _flags, entry_header_size, payload_size = struct.unpack_from("<HHIQ", data, entry)
            sm, = struct.unpack_from("<I", data, entry + 28)
            counts[(KINDS.get(kind, f"kind{kind}"), sm)] += 1
            entry += entry_header_size + payload_size
        pos = stop
    return counts


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], "\nusage: fatbin_archs.py LIBRARY.so", file=sys.stderr)
        return 2
    counts = fatbin_entries(Path(argv[0]).read_bytes())
    if not counts:
        print("no .nv_fatbin section: no CUDA device code", file=sys.stderr)
        return 1
    for (kind, sm), n in sorted(counts.items(), key=lambda item: (item[0][1], item[0][0])):
        print(f"{kind:4} sm_{sm}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
