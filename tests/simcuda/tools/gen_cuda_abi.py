#!/usr/bin/env python3
"""Regenerates ../cuda_abi/{cuda.h,cudaTypedefs.h,cuda_runtime_api.h} and ../cuda_abi/check.inc.

The simulated libraries and every program built against them (tests/simcuda, tests/gpu,
tests/cli, tests/libs, tools/bench_gpu) include <cuda.h>, <cudaTypedefs.h> and
<cuda_runtime_api.h>. Those names resolve to tests/simcuda/cuda_abi/, a subset of the real
CUDA 13 declarations, so everything builds on a machine without the CUDA Toolkit (issue 13).

The subset is what those sources use (identifiers scanned below) plus the types those
declarations need. Large enums keep only the enumerators the sources use; error enums are
complete. Launch-attribute structs stay opaque (only pointers are passed). check.inc lists
every declared enumerator, struct field, function and PFN typedef for
tests/simcuda/toolkit/cuda_abi_check.cpp, which compares them with the real headers wherever
the toolkit exists (a mismatch fails that target's build).

Usage: tools/gen_cuda_abi.py [/usr/local/cuda]   (then review the diff)
"""
import glob, os, re, subprocess, sys

cuda = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda"
here = os.path.dirname(os.path.abspath(__file__))
simdir = os.path.dirname(here)
root = os.path.dirname(os.path.dirname(simdir))
out_dir = os.path.join(simdir, "cuda_abi")

SOURCES = ["tests/simcuda/*.c", "tests/simcuda/*.h", "tests/simcuda/scenarios/*.c",
           "tests/gpu/scenarios/*.c", "tests/cli/cli_gpu_workload.c", "tests/libs/src/ct_cuda_app.c",
           "tools/bench_gpu/launch_bench.c", "tools/bench_gpu/malloc_bench.c"]
# Types whose contents nobody here reads: declared as incomplete structs.
OPAQUE = {"CUlaunchAttribute_st": "CUlaunchAttribute", "cudaLaunchAttribute_st": "cudaLaunchAttribute"}
# Enums kept whole (error codes are compared, printed and mapped by number).
FULL_ENUMS = {"cudaError_enum", "cudaError"}
# Object-like macros kept (flags and constants), besides the base-name -> variant mappings.
MACROS = re.compile(r"^(CUDAAPI|CUDARTAPI|CUDA_VERSION|CUDART_VERSION|CU_MEMHOSTALLOC_\w+|CU_STREAM_LEGACY|"
                    r"CU_STREAM_PER_THREAD|cudaHostAlloc\w+|cudaMemAttach\w+|cudaStreamLegacy|"
                    r"cudaStreamPerThread|cudaStreamNonBlocking|cudaStreamDefault)$")

ident = re.compile(r"\b[A-Za-z_]\w*\b")
used = set()
for pat in SOURCES:
    for f in glob.glob(os.path.join(root, pat)):
        text = open(f).read()
        used |= set(ident.findall(text))
        # sim_runtime.c builds PFN_<name>_v<version> by token pasting from X(name, version).
        used |= {f"PFN_{n}_v{v}" for n, v in re.findall(r"\bX\((cu\w+), (\d+)\)", text)}

src = "#include <cuda.h>\n#include <cudaTypedefs.h>\n#include <cuda_runtime_api.h>\n"
cc = ["cc", "-x", "c", "-", "-I", f"{cuda}/include"]
pre = subprocess.run(cc + ["-E"], input=src, capture_output=True, text=True, check=True).stdout
macro_text = subprocess.run(cc + ["-E", "-dM"], input=src, capture_output=True, text=True,
                            check=True).stdout
macros = {}
for line in macro_text.splitlines():
    m = re.match(r"#define (\w+)(?: (.*))?$", line)
    if m:
        macros[m.group(1)] = (m.group(2) or "").strip()

# Top-level statements of the preprocessed headers that come from the toolkit's own files.
stmts, depth, cur, in_cuda = [], 0, "", False
for line in pre.splitlines():
    m = re.match(r'# \d+ "([^"]*)"', line)
    if m:
        in_cuda = os.path.realpath(m.group(1)).startswith(os.path.realpath(cuda))
        continue
    for ch in line + "\n":
        cur += ch
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        elif ch == ";" and depth == 0:
            if in_cuda:
                stmts.append(re.sub(r"\s+", " ", cur.strip()))
            cur = ""


def enumerators(s):
    m = re.search(r"\benum\b[^{]*\{(.*)\}", s)
    return [e.strip() for e in m.group(1).split(",") if e.strip()] if m else []


class Decl:
    def __init__(self, s):
        self.s, self.names, self.kind, self.tag = s, set(), None, None
        m = re.match(r"(?:typedef )?(enum|struct|union) (\w+) \{", s)
        if m:
            self.kind, self.tag = m.group(1), m.group(2)
            self.names.add(self.tag)
        for e in enumerators(s):
            self.names.add(e.split("=")[0].strip())
        if s.startswith("typedef"):
            self.kind = self.kind or "typedef"
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", s)
            if m:
                self.kind = "pfn"
                self.names.add(m.group(1))
            else:
                tail = s[s.rindex("}") + 1:] if "}" in s else s
                self.names.add(ident.findall(tail)[-1])
        elif self.kind is None and "(" in s and not s.startswith(("static", "#", "struct", "union")):
            m = re.search(r"(\w+)\s*\(", s)
            if m and "deprecated" not in s:
                self.kind, self.func = "func", m.group(1)
                self.names.add(self.func)
        self.types = self.names - {e.split("=")[0].strip() for e in enumerators(s)} \
            if self.kind not in (None, "func") else set()


decls = [Decl(s) for s in stmts]
by_name = {}
for i, d in enumerate(decls):
    for n in d.names:
        by_name.setdefault(n, []).append(i)
type_names = set().union(*(d.types for d in decls))

need = set(used) | {macros[n] for n in used if n in macros and ident.fullmatch(macros[n])}
chosen, work = set(), list(need)
while work:
    n = work.pop()
    for i in by_name.get(n, []):
        d = decls[i]
        if i in chosen or d.kind is None or (d.tag in OPAQUE):
            continue
        if d.kind == "typedef" and any(t in d.s for t in OPAQUE):
            continue
        chosen.add(i)
        body = d.s
        if d.kind == "enum" and d.tag not in FULL_ENUMS:
            body = body[body.index("}"):]
        for x in ident.findall(body):
            if x in type_names and x not in need:
                need.add(x)
                work.append(x)


def enum_text(d):
    """The enum with the enumerators the sources use (all for FULL_ENUMS, else at least the
    first); an implicit value that trimming would change is written out."""
    values, value, keep = {}, -1, []
    entries = enumerators(d.s)
    for k, e in enumerate(entries):
        name, _, expr = (x.strip() for x in e.partition("="))
        value = eval(re.sub(r"\b(\w+)\b", lambda m: str(values.get(m.group(1), m.group(1))),
                            expr.replace("U", ""))) if expr else value + 1
        values[name] = value
        if d.tag in FULL_ENUMS or name in used or (k == 0 and not any(
                x.partition("=")[0].strip() in used for x in entries)):
            keep.append(f"  {e}," if expr else f"  {name} = {value},")
    head, tail = d.s[:d.s.index("{") + 1], d.s[d.s.rindex("}"):]
    return "\n".join([head] + keep + [tail]), [k.split("=")[0].strip() for k in keep]


def struct_text(s):
    out, ind, line = [], 0, ""
    for ch in s:
        if ch == "{":
            out.append("  " * ind + (line + "{").strip())
            ind, line = ind + 1, ""
        elif ch == "}":
            if line.strip():
                out.append("  " * ind + line.strip())
            ind, line = ind - 1, "}"
        elif ch == ";" and ind > 0:
            out.append("  " * ind + (line + ";").strip())
            line = ""
        else:
            line += ch
    out.append((line).strip())
    return "\n".join(out)


def fields(s):
    body = s[s.index("{") + 1:s.rindex("}")]
    depth, cur, names = 0, "", []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == ";" and depth == 0:
            names.append(ident.findall(re.sub(r"\[.*?\]", "", cur))[-1])
            cur = ""
        else:
            cur += ch
    return names


headers = {"cuda.h": [], "cudaTypedefs.h": [], "cuda_runtime_api.h": []}
check = []
runtime = False
for i, d in enumerate(decls):
    if d.s.startswith(("typedef struct dim3", "struct dim3")):
        runtime = True  # cuda_runtime_api.h's own declarations start after cuda.h's
    if i not in chosen:
        continue
    where = "cudaTypedefs.h" if d.kind == "pfn" else ("cuda_runtime_api.h" if runtime else "cuda.h")
    if d.kind == "enum":
        text, names = enum_text(d)
        check += [f"CT_ENUM({d.tag})"] + [f"CT_ENUMERATOR({n})" for n in names]
    elif d.kind in ("struct", "union"):
        text = struct_text(d.s)
        check += [f"CT_STRUCT({d.tag})"] + [f"CT_FIELD({d.tag}, {f})" for f in fields(d.s)]
    elif d.kind == "func":
        text = d.s.replace("extern ", "")
        check.append(f"CT_FUNCTION({d.func})")
    elif d.kind == "pfn":
        text = d.s.replace("( *", "(*")
        check.append(f"CT_TYPEDEF({sorted(d.names)[0]})")
    else:
        text = d.s
        check.append(f"CT_TYPEDEF({sorted(d.names)[0]})")
    headers[where].append(text)
for tag, name in OPAQUE.items():
    where = "cuda_runtime_api.h" if tag.startswith("cuda") else "cuda.h"
    headers[where].insert(0, f"typedef struct {tag} {name};")

declared_funcs = {d.func for i, d in enumerate(decls) if i in chosen and d.kind == "func"}
# Base name -> the variant it names: "cuMemAlloc_v2", or "__CUDA_API_PTDS(cuMemcpyHtoD_v2)"
# (the legacy-stream variant unless CUDA_API_PER_THREAD_DEFAULT_STREAM is defined).
mapping = sorted(n for n, v in macros.items() if n in used and re.sub(
    r"^__CUDA_API_PT(?:DS|SZ)\((\w+)\)$", r"\1", v) in declared_funcs)
PER_THREAD = """#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define __CUDA_API_PER_THREAD_DEFAULT_STREAM
#define __CUDA_API_PTDS(api) api ## _ptds
#define __CUDA_API_PTSZ(api) api ## _ptsz
#else
#define __CUDA_API_PTDS(api) api
#define __CUDA_API_PTSZ(api) api
#endif"""
consts = sorted(n for n in macros if MACROS.match(n))

guards = {"cuda.h": "SIMCUDA_ABI_CUDA_H", "cudaTypedefs.h": "SIMCUDA_ABI_CUDATYPEDEFS_H",
          "cuda_runtime_api.h": "SIMCUDA_ABI_CUDA_RUNTIME_API_H"}
includes = {"cuda.h": ["<stddef.h>", "<stdint.h>"], "cudaTypedefs.h": ['"cuda.h"'],
            "cuda_runtime_api.h": ["<stddef.h>", '"cuda.h"']}
note = ("/* Generated by tools/gen_cuda_abi.py from the CUDA 13 headers: the subset of the real {name}\n"
        " * that tests/simcuda and the programs built against it use, so they build without the CUDA\n"
        " * Toolkit. toolkit/cuda_abi_check.cpp compares every declaration here with the real header\n"
        " * wherever the toolkit exists. Do not edit: extend the sources, then rerun the generator. */")
os.makedirs(out_dir, exist_ok=True)
for name, body in headers.items():
    g = guards[name]
    lines = [note.format(name=name), f"#ifndef {g}", f"#define {g}", ""]
    lines += [f"#include {h}" for h in includes[name]]
    if name == "cuda.h":
        lines += [""] + [f"#define {n} {macros[n]}".rstrip() for n in consts if not n.startswith("cuda")]
        lines += [PER_THREAD]
        lines += [f"#define {n} {macros[n]}".rstrip() for n in mapping if n.startswith("cu") and
                  not n.startswith("cuda")]
    if name == "cuda_runtime_api.h":
        lines += [""] + [f"#define {n} {macros[n]}".rstrip() for n in consts if n.startswith("cuda")]
    lines += ["", "#if defined(SIMCUDA_ABI_NAMESPACE)", "namespace SIMCUDA_ABI_NAMESPACE {",
              "#elif defined(__cplusplus)", 'extern "C" {', "#endif", ""]
    lines += body
    lines += ["", "#if defined(SIMCUDA_ABI_NAMESPACE) || defined(__cplusplus)", "}", "#endif",
              f"#endif /* {g} */", ""]
    open(os.path.join(out_dir, name), "w").write("\n".join(lines))
open(os.path.join(out_dir, "check.inc"), "w").write(
    "/* Generated by tools/gen_cuda_abi.py: every declaration of the cuda_abi headers, for\n"
    " * toolkit/cuda_abi_check.cpp. */\n" + "\n".join(check) + "\n")
print(f"{sum(map(len, headers.values()))} declarations, {len(mapping)} base-name macros, "
      f"{len(consts)} constants")
