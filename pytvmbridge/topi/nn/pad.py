"""Constant padding, and the padding conventions of conv2d and pooling.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A = tvm.placeholder((tvm.var("n"), 3), name="A")
    >>> P = topi.nn.pad(A, [0, 1], [0, 2])
    >>> P.shape, P.op.tag
    ((n, 6), 'injective,pad')
    >>> topi.nn.get_pad_tuple((1, 2), (3, 3))
    (1, 2, 1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TVMValueError
from .. import tag
from ..utils import Tensor, check_tensor, const_int, int_list

PaddingArg = int | str | Sequence[int]


def get_pad_tuple(padding: PaddingArg, kernel: Sequence[int]) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from TVM's padding forms: an int (all sides), a pair
    ``(h, w)`` (both sides of each), a 4-tuple ``(top, left, bottom, right)``, ``"VALID"`` (none)
    or ``"SAME"`` (keeps the size at stride 1; the extra row/column goes at the top/left, as in
    TVM). ``kernel`` is the (dilated) kernel size, for ``"SAME"``.

    Example:
        >>> from pytvmbridge.topi.nn import get_pad_tuple
        >>> get_pad_tuple(1, (3, 3)), get_pad_tuple("SAME", (4, 4))
        ((1, 1, 1, 1), (2, 2, 1, 1))
    """
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0, 0, 0, 0)
        if padding.upper() == "SAME":
            pad_h, pad_w = kernel[0] - 1, kernel[1] - 1
            top, left = (pad_h + 1) // 2, (pad_w + 1) // 2
            return (top, left, pad_h - top, pad_w - left)
        raise TVMValueError(f"padding must be 'SAME', 'VALID' or ints, found {padding!r}")
    single = const_int(padding)
    expected = "an int, a pair or a 4-tuple of ints, 'SAME' or 'VALID'"
    items = [single] if single is not None else int_list(padding, "padding", expected)
    if len(items) == 1:
        items = items * 4
    elif len(items) == 2:
        items = items * 2
    elif len(items) != 4:
        raise TVMValueError(f"padding must have 1, 2 or 4 entries, found {padding!r}")
    if any(p < 0 for p in items):
        raise TVMValueError(f"padding must be >= 0, found {padding!r}")
    return tuple(items)  # type: ignore[return-value]


def pad(
    data: Tensor,
    pad_before: Sequence[Any],
    pad_after: Sequence[Any] | None = None,
    pad_value: float | int | te.Expr = 0.0,
    name: str = "PadInput",
) -> Tensor:
    """``data`` with ``pad_before[d]`` elements before and ``pad_after[d]`` after dimension
    ``d`` set to ``pad_value`` (NumPy's ``np.pad`` with ``mode="constant"``). ``pad_after``
    defaults to ``pad_before``; pads may be symbolic.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.pad(tvm.placeholder((2, 2), "int32"), [1, 1], pad_value=-1).shape
        (4, 4)
    """
    check_tensor(data, "data of pad")
    pad_after = list(pad_before) if pad_after is None else list(pad_after)
    pad_before = list(pad_before)
    if len(pad_before) != data.ndim or len(pad_after) != data.ndim:
        raise TVMValueError(
            f"pad needs one pad_before and one pad_after per dimension of {data.name!r} "
            f"({data.ndim}), found {len(pad_before)} and {len(pad_after)}"
        )
    for p in (*pad_before, *pad_after):
        if const_int(p) is not None and const_int(p) < 0:
            raise TVMValueError(f"pad amounts must be >= 0, found {pad_before} / {pad_after}")
    shape = [
        data.shape[d] + pad_before[d] + pad_after[d]
        if const_int(pad_before[d]) != 0 or const_int(pad_after[d]) != 0
        else data.shape[d]
        for d in range(data.ndim)
    ]
    if isinstance(pad_value, te.Expr):
        value = pad_value if pad_value.dtype == data.dtype else pad_value.astype(data.dtype)
    else:
        value = te.const(pad_value, data.dtype)

    def fcompute(*i: Any) -> te.Expr:
        conds, index = [], []
        for d in range(data.ndim):
            before, after = const_int(pad_before[d]), const_int(pad_after[d])
            if before == 0 and after == 0:
                index.append(i[d])
                continue
            index.append(i[d] - pad_before[d] if before != 0 else i[d])
            if before != 0:
                conds.append(i[d] >= pad_before[d])
            if after != 0:
                conds.append(i[d] < data.shape[d] + pad_before[d])
        if not conds:
            return data[index]
        return te.if_then_else(te.all(*conds), data[index], value)

    return te.compute(shape, fcompute, name=name, tag=tag.PAD)
