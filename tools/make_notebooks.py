"""Writes examples/notebooks/*.ipynb from the cells below, without outputs.

The notebooks are generated so that they stay clean (no stored outputs, stable cell ids) and
reviewable as Python; tests/python/test_notebooks.py checks that the files match this script and
executes every one of them.

    .venv/bin/python tools/make_notebooks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

OUT = Path(__file__).resolve().parents[1] / "examples" / "notebooks"

# A notebook is a list of cells: ("md", text) or ("code", text), with ("code!", text) for a cell
# that raises on purpose (tagged raises-exception: shown, and the run goes on).
Cells = list[tuple[str, str]]

DLPACK_TOUR: Cells = [
    (
        "md",
        """# The DLPack bridge: one kernel, one buffer, three frameworks

DLPack is a small, common description of an array in memory (data pointer, shape, strides,
dtype, device). Every framework that speaks it can hand its arrays to a compiled kernel, and
take the kernel's arrays back, **without copying**. This notebook follows TVM's *Building
Support for Deep Learning Frameworks via DLPack*: declare and compile a matrix multiplication,
call it on PyTorch tensors, then on NumPy and JAX arrays, and finally run it on one buffer
that PyTorch, NumPy and JAX all view at once.""",
    ),
    (
        "code",
        """import jax
import jax.numpy as jnp
import numpy as np
import torch

import pytvmbridge as tvm
from pytvmbridge.contrib.dlpack import to_pytorch_func as to_pytorch""",
    ),
    (
        "md",
        """## Declare and build the operator

The seed's 56x56 matmul with the default schedule. A tensor shows its compute expression,
and the built `Module` its signature, target and compile time (with the assembly and LLVM IR
folded away).""",
    ),
    (
        "code",
        """n = tvm.convert(56)
X = tvm.placeholder((n, n), name="X")
Y = tvm.placeholder((n, n), name="Y")
k = tvm.reduce_axis((0, n), name="k")
Z = tvm.compute((n, n), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k), name="Z")
Z""",
    ),
    (
        "code",
        """s = tvm.create_schedule(Z.op)
fmm = tvm.build(s, [X, Y, Z], target_host="llvm", name="fmm")
fmm""",
    ),
    (
        "md",
        """## PyTorch

First a reference in PyTorch, then the compiled kernel through `to_pytorch`: called with
every array it writes `z2` in place (the seed's form); called with the inputs only it
allocates the output as a PyTorch tensor.""",
    ),
    (
        "code",
        """x = torch.rand(56, 56)
y = torch.rand(56, 56)
z = x.mm(y)

fmm_pytorch = to_pytorch(fmm)
z2 = torch.empty(56, 56)
fmm_pytorch(x, y, z2)
np.testing.assert_allclose(z.numpy(), z2.numpy(), rtol=1e-5)

z3 = fmm_pytorch(x, y)
assert isinstance(z3, torch.Tensor)
np.testing.assert_allclose(z.numpy(), z3.numpy(), rtol=1e-5)
print("PyTorch: matches x.mm(y)")""",
    ),
    (
        "md",
        """## NumPy and JAX

The same `Module`, wrapped for each framework; outputs come back as that framework's arrays.""",
    ),
    (
        "code",
        """a, b = x.numpy(), y.numpy()
z_np = tvm.to_numpy(fmm)(a, b)
np.testing.assert_allclose(z_np, a @ b, rtol=1e-5)

z_jax = tvm.to_jax(fmm)(jnp.asarray(a), jnp.asarray(b))
np.testing.assert_allclose(np.asarray(z_jax), a @ b, rtol=1e-5)
print(type(z_np).__name__, type(z_jax).__name__, "both match a @ b")""",
    ),
    (
        "md",
        """## One buffer, three views

`tvm.nd.empty` allocates a 64-byte aligned array; PyTorch, NumPy and JAX import it through
DLPack. All four share one data pointer, so when the kernel writes its result into the
PyTorch view, NumPy and JAX read it from the same memory. (JAX arrays are immutable by
contract: JAX only reads.)""",
    ),
    (
        "code",
        """buf = tvm.nd.empty((56, 56), "float32")
as_torch = torch.from_dlpack(buf)
as_numpy = np.from_dlpack(buf)
as_jax = jax.dlpack.from_dlpack(buf)

pointers = {
    "pytvmbridge": buf.data_ptr,
    "torch": as_torch.data_ptr(),
    "numpy": as_numpy.ctypes.data,
    "jax": as_jax.unsafe_buffer_pointer(),
}
for name, ptr in pointers.items():
    print(f"{name:12s} 0x{ptr:x}")
assert len(set(pointers.values())) == 1, "one buffer, no copies"

fmm(x, y, as_torch)  # the kernel writes through the PyTorch view...
np.testing.assert_allclose(as_numpy, z.numpy(), rtol=1e-5)  # ...NumPy sees it
np.testing.assert_allclose(np.asarray(as_jax), z.numpy(), rtol=1e-5)  # ...and so does JAX
print("the kernel's result is visible in all three frameworks")""",
    ),
    (
        "md",
        """A strided view travels too: `as_torch[8:, 8:]` is a window into the buffer with a
storage offset, and the kernel reads it in place (no contiguous copy is made).""",
    ),
    (
        "code",
        """W = tvm.placeholder((48, 48), name="W")
total = tvm.compute((48, 48), lambda i, j: W[i, j] * 2.0, name="twice")
twice = tvm.build(tvm.create_schedule(total.op), [W, total], name="twice")
window = as_torch[8:, 8:]
out = torch.empty(48, 48)
twice(window, out)
np.testing.assert_allclose(out.numpy(), 2 * as_numpy[8:, 8:], rtol=1e-6)
print("window strides:", window.stride(), "offset:", window.storage_offset())""",
    ),
]

GEMM: Cells = [
    (
        "md",
        """# Optimising GEMM, one schedule at a time

TVM's *How to optimize GEMM on CPU*, step by step: each schedule is shown as the loop tree
it describes, built, checked against NumPy and timed; a bar chart compares them with
`torch.matmul` on the same number of threads.

The size is 256 so that the notebook runs in seconds (the test suite executes it); set
`PYTVMBRIDGE_NOTEBOOK_FULL=1` for the tutorial's 1024.""",
    ),
    (
        "code",
        """import os
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

import pytvmbridge as tvm
from pytvmbridge import progress

N = 1024 if os.environ.get("PYTVMBRIDGE_NOTEBOOK_FULL") == "1" else 256
M = K = N
torch.set_num_threads(tvm.get_num_threads())
rng = np.random.default_rng(0)
a = rng.random((M, K), dtype=np.float32)
b = rng.random((K, N), dtype=np.float32)
expected = a @ b
print(f"{M}x{K} @ {K}x{N}, {tvm.get_num_threads()} thread(s)")""",
    ),
    (
        "md",
        """Every step starts from the same declaration: `C = A @ B`, and for array packing a copy
of `B` rearranged into 32-column panels so that the inner loop reads it contiguously.""",
    ),
    (
        "code",
        """BN, KF = 32, 4  # the tile and the k split


def matmul(packed=False):
    A = tvm.placeholder((M, K), name="A")
    B = tvm.placeholder((K, N), name="B")
    k = tvm.reduce_axis((0, K), name="k")
    if not packed:
        C = tvm.compute((M, N), lambda x, y: tvm.sum(A[x, k] * B[k, y], axis=k), name="C")
        return A, B, C, None
    P = tvm.compute((N // BN, K, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    C = tvm.compute((M, N), lambda x, y: tvm.sum(A[x, k] * P[y // BN, k, y % BN], axis=k), name="C")
    return A, B, C, P


def default():
    A, B, C, _ = matmul()
    return tvm.create_schedule(C.op), [A, B, C]


def blocked(vectorize=False, permute=False, packed=False):
    A, B, C, P = matmul(packed)
    s = tvm.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=KF)
    if permute:  # k's inner part outside the row loop: B's rows are reused across rows of C
        s[C].reorder(xo, yo, ko, xi, ki, yi)
    else:
        s[C].reorder(xo, yo, ko, ki, xi, yi)
    if vectorize:
        s[C].vectorize(yi)
    if packed:
        x, _, z = s[P].op.axis
        s[P].vectorize(z)
        s[P].parallel(x)
    return s, [A, B, C]


def write_cache(parallel=False):
    A, B, C, P = matmul(packed=True)
    s = tvm.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, _, _ = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=KF)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    if parallel:
        s[C].parallel(xo)
    x, _, z = s[P].op.axis
    s[P].vectorize(z)
    s[P].parallel(x)
    return s, [A, B, C]


STEPS = {
    "default": default,
    "blocking": lambda: blocked(),
    "vectorize": lambda: blocked(vectorize=True),
    "loop permutation": lambda: blocked(vectorize=True, permute=True),
    "array packing": lambda: blocked(vectorize=True, permute=True, packed=True),
    "write cache": lambda: write_cache(),
    "parallel": lambda: write_cache(parallel=True),
}""",
    ),
    (
        "md",
        """A schedule displays as the loop tree it describes: splits and fuses, the loop order,
and marks for parallel, vectorized and unrolled loops. Here is the blocked one, and the last
one, where a write cache is computed inside each 32x32 tile:""",
    ),
    ("code", """STEPS["vectorize"]()[0]"""),
    (
        "code",
        """s_final, args_final = STEPS["parallel"]()
s_final""",
    ),
    (
        "md",
        """`lower()` shows the loop nest that code is generated from; parallel loops and vector
statements are marked.""",
    ),
    ("code", """tvm.lower(s_final, args_final, name="gemm")"""),
    (
        "md",
        """Build and time every step (a progress bar appears if the sweep takes more than a
second). Each result is checked against NumPy before it is timed; times are medians.""",
    ),
    (
        "code",
        """def median_seconds(fn, repeat=3, budget=0.03):
    fn()
    start = time.perf_counter()
    fn()
    number = max(1, int(budget / max(time.perf_counter() - start, 1e-9)))
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return float(np.median(rounds))


flops = 2.0 * M * N * K
gflops, modules = {}, {}
for name, make in progress.track(STEPS.items(), desc="schedules", unit="schedule"):
    s, args = make()
    f = tvm.build(s, args, name=name.replace(" ", "_"))
    c = np.zeros((M, N), dtype=np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)
    gflops[name] = flops / median_seconds(lambda f=f, c=c: f(a, b, c)) / 1e9
    modules[name] = f

ta, tb = torch.from_numpy(a), torch.from_numpy(b)
gflops["torch.matmul"] = flops / median_seconds(lambda: torch.matmul(ta, tb)) / 1e9
for name, g in gflops.items():
    print(f"{name:18s} {g:8.1f} GFLOPS")""",
    ),
    (
        "code",
        """fig, ax = plt.subplots(figsize=(8, 3.2))
names = list(gflops)
colors = ["tab:blue"] * (len(names) - 1) + ["tab:gray"]
ax.bar(names, [gflops[n] for n in names], color=colors)
ax.set_ylabel("GFLOPS (higher is better)")
ax.set_title(f"GEMM {M}x{N}x{K}, {tvm.get_num_threads()} thread(s)")
ax.tick_params(axis="x", rotation=30)
fig.tight_layout()
plt.show()""",
    ),
    (
        "md",
        """The fastest module, with its signature, target and compile time; its assembly and
LLVM IR are in the folded blocks.""",
    ),
    (
        "code",
        """best = max((n for n in modules), key=gflops.get)
print("fastest schedule:", best)
modules[best]""",
    ),
    (
        "md",
        """Where the parallel schedule's time goes: `tvm.profile_loops()` times each call of the
kernels run inside it and each parallel loop of the call. Loop 0 packs B into panels, loop 1
computes the tiles (numbered in the order `lower()` printed them above); the last row is the
whole call.""",
    ),
    (
        "code",
        """c = np.zeros((M, N), dtype=np.float32)
with tvm.profile_loops() as prof:
    for _ in range(10):
        modules["parallel"](a, b, c)
np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)
prof""",
    ),
]

TC: Cells = [
    (
        "md",
        """# Tensor Comprehensions

Kernels written in TC's Einstein notation: the output shapes are inferred from the inputs,
outputs are allocated in the caller's framework, and every statement becomes a stage of the
same tensor expressions the Python DSL builds, so schedules apply to them too.""",
    ),
    (
        "code",
        """import numpy as np
import torch

from pytvmbridge import tc""",
    ),
    (
        "md",
        """A definition displays its signature, the inferred shapes of its tensors and the tensor
expression each statement became.""",
    ),
    (
        "code",
        '''matmul = tc.define("""
def matmul(float(M, K) A, float(K, N) B) -> (C) {
    C(m, n) +=! A(m, r_k) * B(r_k, n)
}""")
matmul''',
    ),
    (
        "code",
        """a, b = torch.randn(64, 32), torch.randn(32, 48)
c = matmul(a, b)  # compiled on this first call; the output is a torch.Tensor
torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
c_np = matmul(a.numpy(), b.numpy())  # the same compiled kernel, NumPy arrays
np.testing.assert_allclose(c_np, a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)
print(tuple(c.shape), type(c_np).__name__)""",
    ),
    (
        "md",
        """Several statements: a fully connected layer with bias and ReLU, written as TC's
documentation writes it. The output is updated in place by each statement.""",
    ),
    (
        "code",
        '''fcrelu = tc.define("""
def fcrelu(float(B, M) I, float(N, M) W1, float(N) B1) -> (O1) {
    O1(b, n) +=! I(b, r_m) * W1(n, r_m)
    O1(b, n) = O1(b, n) + B1(n)
    O1(b, n) = fmax(O1(b, n), 0)
}""")
x, w, bias = torch.randn(16, 40), torch.randn(24, 40), torch.randn(24)
torch.testing.assert_close(fcrelu(x, w, bias), torch.relu(x @ w.T + bias), rtol=1e-4, atol=1e-4)
fcrelu''',
    ),
    (
        "md",
        """A def can be scheduled like any tensor expression: take its default schedule, transform
it, and build. The `Module` shows what was compiled.""",
    ),
    (
        "code",
        """s = matmul.create_schedule()
C = matmul.outputs[0]
m, n = C.op.axis
(r_k,) = C.op.reduce_axis
no, ni = s[C].split(n, factor=16)
s[C].reorder(m, no, r_k, ni)  # one row of B feeds 16 columns of C at once
s[C].vectorize(ni)
s[C].parallel(m)
module = matmul.build(s)
torch.testing.assert_close(matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
module""",
    ),
    (
        "md",
        """Errors in TC source point at the source: the next cell has a typo (`+*`), and the
notebook shows the line with a caret under it instead of a Python traceback.""",
    ),
    (
        "code!",
        '''tc.define("""
def broken(float(N) A) -> (B) {
    B(i) = A(i) +* 2
}""")''',
    ),
    (
        "md",
        """The error is a `ValueError` subclass with the position as attributes, for code that
handles it:""",
    ),
    (
        "code",
        """try:
    tc.define("def broken(float(N) A) -> (B) { B(i) = A(j) }")
except tc.TCError as err:
    print(err.line, err.column, err.message)
    assert err.line == 1 and err.source_line.startswith("def broken")""",
    ),
]

TUNING: Cells = [
    (
        "md",
        """# Autotuning a kernel

`auto_schedule` picks a schedule analytically, in milliseconds. `pytvmbridge.autotvm` measures
real candidates around it: the automatic scheduler's decisions (tile rows and vectors, packing,
loop order, parallel depth, unrolling) are knobs, a tuner proposes points, each candidate is
compiled in a worker process, checked against the analytical schedule's output and timed, and
every trial goes to a JSON-lines log. `apply_history_best(log)` then builds with the best.

A few trials of a small matrix product here, so that the notebook runs in seconds.""",
    ),
    (
        "code",
        """import os
import tempfile

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import autotvm


@tvm.kernel
def matmul(A, B):
    k = tvm.reduce_axis((0, A.shape[1]), name="k")
    return tvm.compute((A.shape[0], B.shape[1]),
                       lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")

a = np.random.default_rng(0).standard_normal((128, 128)).astype("float32")
b = np.random.default_rng(1).standard_normal((128, 128)).astype("float32")
[task] = autotvm.extract_tasks(matmul, a, b)
print(task.description)
{knob: values for knob, values in task.space.knobs.items() if len(values) > 1}""",
    ),
    (
        "md",
        """Tune: the evolutionary tuner starts at random, then an XGBoost model trained on the
measurements ranks the candidates it breeds. The bar shows trials and the best GFLOPS so far.""",
    ),
    (
        "code",
        """log = os.path.join(tempfile.mkdtemp(), "matmul.json")
best = autotvm.tune(matmul, a, b, n_trial=8, log_file=log, n_parallel=2)
print(f"best: {best['flop'] / np.median(best['costs']) / 1e9:.1f} GFLOPS with {best['config']}")
assert best["error"] == 0""",
    ),
    (
        "md",
        """Replay: under `apply_history_best`, the kernel is compiled with the log's best record for
these shapes (a workload without a record warns once and keeps the analytical schedule).""",
    ),
    (
        "code",
        """matmul.cache_clear()
with autotvm.apply_history_best(log):
    c = matmul(a, b)
    module = matmul.module_for(a, b)
np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
module""",
    ),
    (
        "code",
        """ax = autotvm.plot(log)  # best GFLOPS so far against trials""",
    ),
]

NOTEBOOKS = {
    "01_dlpack_bridge_tour.ipynb": DLPACK_TOUR,
    "02_gemm_schedules.ipynb": GEMM,
    "03_tensor_comprehensions.ipynb": TC,
    "04_autotuning.ipynb": TUNING,
}


def build_notebook(cells: Cells, stem: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(cells):
        cell_id = f"{stem[:2]}-{i:02d}"
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(source, id=cell_id))
        else:
            cell = nbformat.v4.new_code_cell(source, id=cell_id)
            if kind == "code!":
                cell.metadata["tags"] = ["raises-exception"]
            nb.cells.append(cell)
    return nb


def render(name: str) -> str:
    """The text of notebook `name` as this script writes it."""
    nb = build_notebook(NOTEBOOKS[name], name)
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in NOTEBOOKS:
        (OUT / name).write_text(render(name))
        print(f"wrote {OUT / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
