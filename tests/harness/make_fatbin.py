"""Writes a CUDA fatbin blob (containers of cubin / PTX entries) without nvcc, for test
fixtures that objcopy adds to a plain library (.nv_fatbin, or another section such as
.ldata where cuFFT keeps the device code it loads itself). Layout: docs/elf-inspection.md.

    make_fatbin.py OUT ENTRY... [-- ENTRY...]   ("--" starts a new container)
    ENTRY: cubin:SM (an EM_CUDA ELF header for sm_SM), ptx:SM:ISA (".version ISA" and
    ".target sm_SM" text) or other:SM (an entry of kind 8, neither cubin nor PTX, as the
    LTO IR cuFFT keeps beside its cubins), stored uncompressed.
"""
import struct
import sys

MAGIC = 0xBA55ED50
FLAGS = 0x11  # 64-bit | Linux


def cubin(sm):
    # 64-byte ELF header: EM_CUDA (190), ABI version 8 (the SM in e_flags bits 8-15).
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x33, 8]) + bytes(7)
    return ident + struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 64, 0, sm << 8, 64, 56, 0, 64, 0, 0)


def entry(spec):
    parts = spec.split(":")
    kind, sm = parts[0], int(parts[1])
    if kind == "cubin":
        code, raw_kind, (major, minor) = cubin(sm), 2, (1, 8)
    elif kind == "ptx":
        major, minor = (int(x) for x in parts[2].split("."))
        code = f".version {major}.{minor}\n.target sm_{sm}\n.address_size 64\n".encode() + b"\0"
        raw_kind = 1
    elif kind == "other":
        code, raw_kind, (major, minor) = b"LTO IR\0", 8, (0, 0)
    else:
        raise SystemExit(f"make_fatbin.py: unknown entry kind in {spec!r}")
    code += bytes(-len(code) % 8)
    header = struct.pack("<HHIQIIHHIIIQQQ", raw_kind, 0x0101, 64, len(code), 0, 0, minor, major, sm, 0, 0,
                         FLAGS, 0, 0)
    assert len(header) == 64
    return header + code


def container(specs):
    body = b"".join(entry(s) for s in specs)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def main(argv):
    out, rest = argv[1], argv[2:]
    groups, cur = [], []
    for a in rest:
        if a == "--":
            groups.append(cur)
            cur = []
        else:
            cur.append(a)
    groups.append(cur)
    with open(out, "wb") as f:
        f.write(b"".join(container(g) for g in groups if g))


if __name__ == "__main__":
    main(sys.argv)
