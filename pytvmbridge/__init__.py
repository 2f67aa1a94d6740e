"""pytvmbridge: tensor kernels written once, compiled with LLVM, run on any DLPack framework.

Example:
    >>> import pytvmbridge as tvm
    >>> a = tvm.nd.array([1.0, 2.0, 3.0])
    >>> a.shape
    (3,)
"""

from . import _core, nd

__version__ = "0.1.0"

__all__ = ["nd"]
