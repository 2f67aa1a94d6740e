"""Any other DLPack producer (CuPy on the host, TensorFlow, PaddlePaddle...): arrays are viewed
through ``__dlpack__`` and outputs are pytvmbridge NDArrays.

Example:
    >>> from pytvmbridge.frameworks import get
    >>> get("dlpack").empty((2,), "int8").dtype
    'int8'
"""

from __future__ import annotations

from ._base import Framework

FRAMEWORK = Framework()
