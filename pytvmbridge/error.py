"""Error classes, under TVM's names (``tvm.error.TVMError``).

Every error raised by pytvmbridge's core is an instance of ``TVMError`` (a ``RuntimeError``, as
in TVM) and of the standard class that describes it: a bad schedule request is a
``TVMValueError``, which is both a ``TVMError`` and a ``ValueError``. So code written for TVM
(``pytest.raises(tvm.error.TVMError)``) and code written for pytvmbridge's documented classes
(``pytest.raises(ValueError)``) both catch it. ``tc.TCError`` is a ``TVMValueError``.

Example:
    >>> import pytvmbridge as tvm
    >>> A = tvm.placeholder((8,), name="A")
    >>> B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
    >>> s = tvm.create_schedule(B.op)
    >>> try:
    ...     s[B].vectorize(A.op.output(0))
    ... except tvm.error.TVMError as err:
    ...     print(isinstance(err, TypeError), isinstance(err, RuntimeError))
    True True
"""

from __future__ import annotations

from . import _core

TVMError = _core.TVMError
TVMTypeError = _core.TVMTypeError
TVMValueError = _core.TVMValueError
TVMBufferError = _core.TVMBufferError
TVMIndexError = _core.TVMIndexError
TVMNotImplementedError = _core.TVMNotImplementedError
TVMMemoryError = _core.TVMMemoryError

#: TVM raises InternalError for failed internal checks; pytvmbridge raises TVMError itself.
InternalError = TVMError

__all__ = [
    "InternalError",
    "TVMBufferError",
    "TVMError",
    "TVMIndexError",
    "TVMMemoryError",
    "TVMNotImplementedError",
    "TVMTypeError",
    "TVMValueError",
]
