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


def make_files(directory: str, n: int, size: int, prefix: str = "f") -> list[str]:
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(directory, f"{prefix}{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(bytes([i % 251]) * size)
        paths.append(p)
    return paths
