#!/usr/bin/env python3
"""Generates the shim's linker version script from shim/hooks.def.

Every X(name) entry in hooks.def is exported; everything else in the shim is local.
Usage: gen_version_script.py OUT.map TABLE.def [TABLE.def ...]
"""
import re
import sys


def main() -> int:
    out, sources = sys.argv[1], sys.argv[2:]
    names = []
    for src in sources:
        for line in open(src, encoding="utf-8"):
            line = line.split("//", 1)[0]
            for m in re.finditer(r"\bX\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", line):
                if m.group(1) not in names:
                    names.append(m.group(1))
    if not names:
        print("no X(name) entries in " + " ".join(sources), file=sys.stderr)
        return 1
    body = "".join(f"    {n};\n" for n in names)
    text = f"/* generated from the shim's hook tables; do not edit */\n{{\n  global:\n{body}  local:\n    *;\n}};\n"
    try:
        if open(out, encoding="utf-8").read() == text:
            return 0
    except OSError:
        pass
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
