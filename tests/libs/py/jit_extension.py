"""What a JIT-compiled extension does: compile a shared object into a temporary
directory, load it with ctypes, call it, and (mode "cleanup") delete the directory while
the object stays loaded, or (mode "rebuild") rebuild it in place with new code and call
the still-loaded copy again. argv: SOURCE_DIR MODE. Prints the calls' results."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

src_dir, mode = sys.argv[1], sys.argv[2]
build = tempfile.mkdtemp(prefix="jit-", dir=src_dir)
so = os.path.join(build, "libjit_ext.so")


def compile_answer(n):
    src = os.path.join(src_dir, f"answer{n}.c")
    with open(src, "w") as f:
        f.write(f"int answer(void) {{ return {n}; }}\n")
    tmp = so + ".tmp"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", tmp, src], check=True)
    os.replace(tmp, so)  # a new file at the path, as a build writes it


compile_answer(42)
lib = ctypes.CDLL(so)
out = [lib.answer()]
if mode == "cleanup":
    shutil.rmtree(build)
else:
    compile_answer(43)
out.append(lib.answer())  # the loaded copy either way
print(out)
