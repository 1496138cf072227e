#!/usr/bin/env python3
"""The simulated libnccl.so.2's dynamic symbols against a real one: the same defined names, each
with the same binding (NCCL 2.28: pnccl<Name> global 'T', nccl<Name> weak 'W'), and the same
soname. Usage: check_exports.py SIM [REAL]; exit 77 (skipped) without a real library."""
import subprocess
import sys


def defined(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3:
            syms[f[2]] = f[1]
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "(SONAME)" in line:
            return line.split("[", 1)[1].rstrip("]")
    return None


def main():
    sim = sys.argv[1]
    real = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
    s = defined(sim)
    if soname(sim) != "libnccl.so.2":
        print(f"simulator soname {soname(sim)!r}")
        return 1
    weak = sorted(n for n, b in s.items() if b == "W")
    strong = sorted(n for n, b in s.items() if b == "T")
    # Every weak nccl<Name> has its global pnccl<Name>.
    bad = [n for n in weak if s.get("p" + n) != "T"]
    if bad:
        print("weak names without a global p-name:", bad)
        return 1
    print(f"simulator: {len(s)} symbols, {len(weak)} weak, {len(strong)} global")
    if real is None:
        print("no real libnccl.so.2 found: exports not compared")
        return 77
    r = defined(real)
    missing = sorted(set(r) - set(s))
    extra = sorted(set(s) - set(r))
    binding = sorted(n for n in set(r) & set(s) if r[n] != s[n])
    for what, names in (("missing", missing), ("not in the real library", extra), ("binding differs", binding)):
        if names:
            print(what + ":", " ".join(names))
    if missing or extra or binding or soname(real) != "libnccl.so.2":
        return 1
    print(f"{real}: {len(r)} symbols, the same names and bindings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
