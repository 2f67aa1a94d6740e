"""pytvmbridge in one page: the TVM DLPack blog post's example with one changed import.

Run it with `make demo`. It defines a 56x56 matrix multiplication in the tensor-expression
language, compiles it with LLVM for this CPU, runs it on PyTorch tensors and on NumPy arrays
without copying them, and checks both against the frameworks' own matmul. Then it shows one
buffer shared by PyTorch, NumPy, JAX and pytvmbridge.
"""

import runpy
import time
from pathlib import Path

import numpy as np
import torch

import pytvmbridge as tvm
from pytvmbridge.contrib.dlpack import to_pytorch_func as to_pytorch

# --- The seed, verbatim but for the import: a reference result in PyTorch ...
x = torch.rand(56, 56)
y = torch.rand(56, 56)
z = x.mm(y)

# ... the kernel, declared and built with the default schedule ...
start = time.perf_counter()
n = tvm.convert(56)
X = tvm.placeholder((n, n), name="X")
Y = tvm.placeholder((n, n), name="Y")

k = tvm.reduce_axis((0, n), name="k")
Z = tvm.compute((n, n), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k))
s = tvm.create_schedule(Z.op)
fadd = tvm.build(s, [X, Y, Z], target_host="llvm", name="fadd")
compile_ms = (time.perf_counter() - start) * 1e3

# ... and run on PyTorch tensors, in place.
fadd_pytorch = to_pytorch(fadd)
z2 = torch.empty(56, 56)
fadd_pytorch(x, y, z2)
np.testing.assert_allclose(z.numpy(), z2.numpy(), rtol=1e-5)
print(f"PyTorch: 56x56 matmul matches torch.mm (compiled in {compile_ms:.1f} ms)")

# The same module takes NumPy arrays (or anything else with __dlpack__).
a = np.random.rand(56, 56).astype("float32")
b = np.random.rand(56, 56).astype("float32")
c = np.empty((56, 56), dtype="float32")
fadd(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-5)
print("NumPy:   the same kernel matches a @ b")

print("\nThe loop nest it compiled:")
print(tvm.lower(s, [X, Y, Z], name="fadd"))

# One buffer, four frameworks.
runpy.run_path(str(Path(__file__).with_name("shared_buffer.py")), run_name="__main__")
