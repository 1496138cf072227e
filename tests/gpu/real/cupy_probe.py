"""CuPy on a real GPU: a healthy run (CuPy probes optional libraries such as cuTENSOR and
goes on without them). Expect no warning or error."""
import cupy as cp
a = cp.arange(1 << 20, dtype=cp.float32)
print("sum", float((a * 2).sum()))
