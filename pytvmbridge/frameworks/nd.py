"""pytvmbridge's own NDArray as a framework: outputs are NDArrays, nothing to convert.

Example:
    >>> from pytvmbridge import nd
    >>> from pytvmbridge.frameworks import framework_of
    >>> framework_of(nd.empty((3,), "float32")).name
    'nd'
"""

from __future__ import annotations

from typing import Any

from ._base import Framework


class NDArrayFramework(Framework):
    """pytvmbridge.nd.NDArray: taken by the kernel as it is."""

    name = "nd"

    def view(self, x: Any) -> Any:
        return x

    def dtype(self, x: Any) -> str:
        return x.dtype

    def shape(self, x: Any) -> tuple[int, ...]:
        return x.shape


FRAMEWORK = NDArrayFramework()
