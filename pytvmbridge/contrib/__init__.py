"""TVM-compatible names: ``tvm.contrib.dlpack.to_pytorch_func`` and
``tvm.contrib.mxnet.to_mxnet_func``, so code written for TVM runs with one changed import.

Example:
    >>> from pytvmbridge.contrib import dlpack
    >>> dlpack.to_pytorch_func.__name__
    'to_pytorch_func'
"""

__all__ = ["dlpack", "mxnet"]


def __getattr__(name: str):  # the submodules on demand (mxnet is imported only when used)
    if name in __all__:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
