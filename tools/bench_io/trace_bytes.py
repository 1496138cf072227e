"""Counts the records of .ctrace files by type, with their framed bytes (the same
framing the reader counts in ReadStats::record_bytes). Usage: trace_bytes.py FILE..."""
import json
import struct
import sys

CHUNK_MAGIC = 0x4B435443
EVENT_CHUNK_MAGIC = 0x56455443  # event chunks (format 1.3): their records start at 64


def varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            return v, i


def scan(path, out):
    b = open(path, "rb").read()
    chunk = struct.unpack_from("<I", b, 24)[0]
    for off in range(chunk, len(b) - 32 + 1, chunk):
        magic = struct.unpack_from("<I", b, off)[0]
        if magic not in (CHUNK_MAGIC, EVENT_CHUNK_MAGIC):
            continue
        i, end = off + (64 if magic == EVENT_CHUNK_MAGIC else 32), min(off + chunk, len(b))
        while i < end and b[i] != 0:
            t = b[i]
            n, j = varint(b, i + 1)
            size = j + n - i
            c, s = out.get(t, (0, 0))
            out[t] = (c + 1, s + size)
            i = j + n


if __name__ == "__main__":
    counts = {}
    for p in sys.argv[1:]:
        scan(p, counts)
    print(json.dumps({str(k): v for k, v in sorted(counts.items())}))
