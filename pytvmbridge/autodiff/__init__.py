"""Automatic differentiation of tensor expressions (``te.gradient``) and the framework glue
that makes kernels differentiable in PyTorch and JAX.

Example:
    >>> from pytvmbridge import te
    >>> A = te.placeholder((4,), name="A")
    >>> B = te.compute((4,), lambda i: te.exp(A[i]), name="B")
    >>> te.gradient(B, A).shape
    (4,)
"""

from .derivative import NotDifferentiable
from .gradient import gradient

__all__ = ["NotDifferentiable", "gradient"]
