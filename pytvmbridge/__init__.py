"""pytvmbridge: tensor kernels written once, compiled with LLVM, run on any DLPack framework.

Write a kernel in the TVM-style tensor-expression language (or in Tensor Comprehensions with
``pytvmbridge.tc``), schedule it, build it for this CPU, and call it on PyTorch, NumPy, JAX or
MXNet arrays without copies. Code written for classic TVM runs with ``import pytvmbridge as tvm``.

Example:
    >>> import numpy as np
    >>> import pytvmbridge as tvm
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n,), name="A")
    >>> B = tvm.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    >>> f = tvm.build(tvm.create_schedule(B.op), [A, B])
    >>> b = np.empty(3, "float32")
    >>> f(np.arange(3, dtype="float32"), b)
    >>> b.tolist()
    [1.0, 3.0, 5.0]
"""

from . import _core, contrib, display, error, nd, runtime, target, tc, te, testing, tir, topi
from . import cache as cache  # the on-disk compile cache: tvm.cache.disable(), set_dir(...)
from . import nd as ndarray  # TVM 0.6's name
from . import progress as progress  # tvm.progress.track(...): bars for long work
from .autoschedule import auto_schedule, auto_schedule_space
from .bridges import to_jax, to_mxnet, to_numpy, to_pytorch
from .build import LoweredFunc, Module, ProfileResult, build, lower
from .kernel import kernel
from .packed_func import (
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from .profiling import profile_loops
from .runtime import device
from .schedule import Schedule, Stage, create_schedule
from .te import *  # noqa: F403  (the DSL names of API.md section 1; te.__all__ lists them)

display.install()  # rich display in Jupyter and IPython (pytvmbridge/display.py)

# TVM's device helpers at the top level: tvm.cpu(0), tvm.device("llvm", 0), tvm.context (0.6).
cpu = nd.cpu
context = device

# Dtype names, so TVM code can write tvm.float32 where it means "float32".
bool_, int8, int16, int32, int64 = "bool", "int8", "int16", "int32", "int64"
uint8, uint16, uint32, uint64 = "uint8", "uint16", "uint32", "uint64"
float16, bfloat16, float32, float64 = "float16", "bfloat16", "float32", "float64"


def set_num_threads(n: int) -> None:
    """Set how many threads parallel loops use (default: one per core, or
    ``PYTVMBRIDGE_NUM_THREADS``).

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.set_num_threads(1); tvm.get_num_threads()
        1
    """
    import numbers

    from .error import TVMTypeError, TVMValueError

    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TVMTypeError(f"set_num_threads needs an int, got {type(n).__name__} {n!r}")
    if n >= 1 << 31:  # (the C++ check, which says the limit, takes a C int)
        raise TVMValueError(f"set_num_threads({n}): far more threads than this machine runs")
    if n < 1:
        raise TVMValueError(f"set_num_threads({n}): the number of threads must be at least 1")
    _core.set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads parallel loops use.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.get_num_threads() >= 1
        True
    """
    return _core.get_num_threads()


__version__ = "0.1.0"

# display and progress stay out of __all__: `from pytvmbridge import *` in a notebook must not
# hide IPython's display().
__all__ = [
    "LoweredFunc",
    "Module",
    "ProfileResult",
    "Schedule",
    "Stage",
    "auto_schedule",
    "auto_schedule_space",
    "build",
    "bfloat16",
    "bool_",
    "context",
    "contrib",
    "cpu",
    "create_schedule",
    "device",
    "error",
    "float16",
    "float32",
    "float64",
    "get_num_threads",
    "int8",
    "int16",
    "int32",
    "int64",
    "kernel",
    "lower",
    "nd",
    "ndarray",
    "profile_loops",
    "runtime",
    "set_num_threads",
    "target",
    "tc",
    "te",
    "testing",
    "tir",
    "to_jax",
    "to_mxnet",
    "to_numpy",
    "to_pytorch",
    "topi",
    "get_global_func",
    "list_global_func_names",
    "register_func",
    "remove_global_func",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    *te.__all__,
]

# The torch.library op that runs compiled modules inside PyTorch (torch.export.load of a program
# calling it needs it registered); only when torch is already imported, never importing it here.
if "torch" in __import__("sys").modules:
    from . import torch_library as torch_library
