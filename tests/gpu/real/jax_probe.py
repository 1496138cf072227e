"""JAX on a real GPU: a healthy run (its CPU and CUDA plugins each ship an extension module
of the same file name). Expect no warning or error (gpu.allocator-config-ignored aside:
JAX preallocates 75% unless told otherwise, which is reported only when contradicted)."""
import jax.numpy as jnp
print("sum", float(jnp.ones(1000).sum()))
