"""Helpers shared by the file I/O end-to-end tests."""
from __future__ import annotations

import os
import re

from ctharness import BUILD, dump, parse_dump_line

_RECORDS_H = os.path.join(os.path.dirname(__file__), "..", "..", "include", "colabtrace",
                          "format", "records.h")


def io_api_codes() -> dict[str, int]:
    """IoApi name (as libc spells it) -> code, read from records.h."""
    text = open(_RECORDS_H, encoding="utf-8").read()
    block = text[text.index("#define COLABTRACE_IO_APIS(X)"):]
    block = block[:block.index("enum class IoApi")]
    return {name: int(code) for code, _, name in re.findall(r'X\((\d+), (\w+), "([^"]+)"\)', block)}


API = io_api_codes()
API_NAME = {v: k for k, v in API.items()}


def io_records(trace: str) -> list[dict]:
    """Every io_* and mount record of a trace, in dump order, as dicts (type in 'rec')."""
    out = []
    for line in dump(trace):
        parsed = parse_dump_line(line)
        if parsed is None or not (parsed[0].startswith("io_") or parsed[0] == "mount"):
            continue
        rec = {"rec": parsed[0], **parsed[1]}
        if "api" in rec:
            rec["api_name"] = API_NAME.get(int(rec["api"]), rec["api"])
        out.append(rec)
    return out


def file_rows(rep: dict, prefix: str) -> dict[str, dict]:
    """io.files[] rows whose path starts with prefix, by path."""
    return {f["path"]: f for f in rep["io"]["files"] if f["path"].startswith(prefix)}


# io.files[] fields that are sums of calls, exact in a rolled or compacted trace.
SUMMED = ("opens", "reads", "bytes_read", "stats", "open_errors", "read_errors", "zero_byte_reads",
          "stat_errors", "size", "passes", "read_sizes", "kind", "fs_type", "mount")
# Evidence fields that measure time (they differ run to run).
TIMED = ("io_ns", "slow_io_ns", "total_io_ns", "metadata_ns", "share", "median_ns", "p90_ns",
         "wall_ns", "read_ns", "open_ns", "stat_ns", "mounts")


def assert_same_io(test, full: dict, small: dict, data: str) -> list[str]:
    """The JSON reports full and small give the same io findings (id, severity, every
    evidence figure but times) and the same io.files[] rows under data (every summed
    field); returns the io finding ids."""
    def io(rep):
        return sorted((f for f in rep["findings"] if f["id"].startswith("io.")), key=lambda f: f["id"])

    def counts(f):
        return {k: v for k, v in f["evidence"].items() if k not in TIMED}

    got, want = io(small), io(full)
    test.assertEqual([(f["id"], f["severity"]) for f in got], [(f["id"], f["severity"]) for f in want])
    for g, w in zip(got, want):
        test.assertEqual(counts(g), counts(w), w["id"])
    rows_full, rows_small = file_rows(full, data + "/"), file_rows(small, data + "/")
    test.assertEqual(sorted(rows_small), sorted(rows_full))
    for path, w in rows_full.items():
        test.assertEqual({k: rows_small[path].get(k) for k in SUMMED}, {k: w.get(k) for k in SUMMED}, path)
    return [f["id"] for f in want]


def make_files(directory: str, n: int, size: int, prefix: str = "f") -> list[str]:
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(directory, f"{prefix}{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(bytes([i % 251]) * size)
        paths.append(p)
    return paths
