"""NumPy: arrays go to kernels as they are (the C++ call path reads them, and allocates outputs,
through NumPy's C API; ``__dlpack__`` where that API is missing).

A read-only array (``a.flags.writeable == False``) cannot be an output; the kernel call says so.

Example:
    >>> import numpy as np
    >>> from pytvmbridge.frameworks import get
    >>> fw = get("numpy")
    >>> a = fw.empty((4,), "int64")
    >>> fw.dtype(a), fw.shape(a), a.flags.c_contiguous
    ('int64', (4,), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..error import TVMValueError
from ._base import Framework


class NumpyFramework(Framework):
    """numpy.ndarray (and subclasses)."""

    name = "numpy"

    def dtype(self, x: Any) -> str:
        return x.dtype.name

    def shape(self, x: Any) -> tuple[int, ...]:
        return x.shape

    def as_input(self, x: Any, what: str) -> Any:
        return x

    def as_output(self, x: Any, what: str) -> Any:
        if not x.flags.writeable:
            raise TVMValueError(
                f"{what} is an output but the NumPy array is read-only (flags.writeable is False)"
            )
        return x

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        from ..nd import _np_dtype

        return np.empty(shape, dtype=_np_dtype(dtype))


FRAMEWORK = NumpyFramework()
