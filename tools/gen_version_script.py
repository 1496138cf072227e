#!/usr/bin/env python3
"""Generates the shim's linker version script from its hook tables (shim/**/*.def).

Every X(name) entry is exported; everything else in the shim is local.

Some hooks only work on some architectures, and a hook that is exported but wrong is
worse than no hook: on an architecture not listed for it, a hook is left out (it stays a
local symbol of the shim, so the program binds to libc's function as without us).

  vfork                          needs the assembly stub (shim/vfork_x86_64.S): vfork
                                 must tail-call the real one without a frame of its own.
  dlopen, dlmopen, dlsym, dlvsym need the caller trampoline (shim/libs): the loader
                                 resolves RUNPATH, $ORIGIN and RTLD_NEXT from the return
                                 address, which must still be the program's.

Usage: gen_version_script.py [--arch ARCH] OUT.map TABLE.def [TABLE.def ...]
ARCH is CMAKE_SYSTEM_PROCESSOR (x86_64, AMD64, aarch64, arm64, ...); default x86_64.
"""
import re
import sys

# hook -> architectures it is exported on (hooks not listed here: every architecture).
ARCH_ONLY_HOOKS = {
    "vfork": {"x86_64"},
    "syscall": {"x86_64"},
    "dlopen": {"x86_64"},
    "dlmopen": {"x86_64"},
    "dlsym": {"x86_64"},
    "dlvsym": {"x86_64"},
}

ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def normalize_arch(arch: str) -> str:
    a = arch.strip().lower()
    return ARCH_ALIASES.get(a, a)


def hook_names(sources):
    """Every X(name) in the tables, in order, once each (comments ignored)."""
    names = []
    for src in sources:
        with open(src, encoding="utf-8") as f:
            for line in f:
                line = line.split("//", 1)[0]
                for m in re.finditer(r"\bX\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", line):
                    if m.group(1) not in names:
                        names.append(m.group(1))
    return names


def exported_names(sources, arch: str):
    arch = normalize_arch(arch)
    return [n for n in hook_names(sources)
            if n not in ARCH_ONLY_HOOKS or arch in ARCH_ONLY_HOOKS[n]]


def main(argv) -> int:
    args = list(argv[1:])
    arch = "x86_64"
    if len(args) >= 2 and args[0] == "--arch":
        arch = args[1]
        args = args[2:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, sources = args[0], args[1:]
    names = exported_names(sources, arch)
    if not names:
        print("no X(name) entries in " + " ".join(sources), file=sys.stderr)
        return 1
    body = "".join(f"    {n};\n" for n in names)
    text = (f"/* generated from the shim's hook tables for {normalize_arch(arch)}; do not edit */\n"
            f"{{\n  global:\n{body}  local:\n    *;\n}};\n")
    try:
        with open(out, encoding="utf-8") as f:
            if f.read() == text:
                return 0
    except OSError:
        pass
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
