"""TVM's ``topi.generic`` schedule functions, made from :func:`pytvmbridge.auto_schedule`.

Classic TVM code schedules TOPI operators with ``s = topi.generic.schedule_conv2d_nchw([out])``
(often inside ``with tvm.target.create("llvm"):``). Here every one of them returns the automatic
schedule of the given outputs, so that code runs unchanged and fast.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 3, 8, 8), name="X")
    >>> W = tvm.placeholder((4, 3, 3, 3), name="W")
    >>> Y = topi.nn.relu(topi.nn.conv2d_nchw(X, W, 1, 1, 1))
    >>> s = topi.generic.schedule_conv2d_nchw([Y])
    >>> f = tvm.build(s, [X, W, Y])
    >>> y = np.empty((1, 4, 8, 8), "float32")
    >>> f(np.ones((1, 3, 8, 8), "float32"), np.ones((4, 3, 3, 3), "float32"), y)
    >>> float(y[0, 0, 4, 4])
    27.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..autoschedule import auto_schedule
from ..error import TVMTypeError
from ..schedule import Schedule, create_schedule
from .utils import Tensor


def _auto(outs: Tensor | Sequence[Tensor]) -> Schedule:
    items = [outs] if isinstance(outs, Tensor) else list(outs)
    if not items or not all(isinstance(t, Tensor) for t in items):
        raise TVMTypeError(
            f"a schedule function takes an output Tensor or a list of them, got {outs!r}"
        )
    return auto_schedule(create_schedule([t.op for t in items]))


def _make(name: str) -> Callable[[Any], Schedule]:
    def schedule(outs: Tensor | Sequence[Tensor]) -> Schedule:
        return _auto(outs)

    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = (
        f"The automatic schedule of ``outs`` (TVM's ``topi.generic.{name}``).\n\n"
        "    Example:\n"
        "        >>> import pytvmbridge as tvm\n"
        "        >>> from pytvmbridge import topi\n"
        "        >>> B = topi.exp(tvm.placeholder((64,), name='A'))\n"
        f"        >>> type(topi.generic.{name}([B])).__name__\n"
        "        'Schedule'\n"
    )
    return schedule


schedule_injective = _make("schedule_injective")
schedule_elemwise = _make("schedule_elemwise")
schedule_broadcast = _make("schedule_broadcast")
schedule_reduce = _make("schedule_reduce")
schedule_extern = _make("schedule_extern")
schedule_conv2d_nchw = _make("schedule_conv2d_nchw")
schedule_conv2d_NCHWc = _make("schedule_conv2d_NCHWc")
schedule_group_conv2d_nchw = _make("schedule_group_conv2d_nchw")
schedule_depthwise_conv2d_nchw = _make("schedule_depthwise_conv2d_nchw")
schedule_conv2d_transpose_nchw = _make("schedule_conv2d_transpose_nchw")
schedule_dense = _make("schedule_dense")
schedule_matmul = _make("schedule_matmul")
schedule_batch_matmul = _make("schedule_batch_matmul")
schedule_adaptive_pool = _make("schedule_adaptive_pool")
schedule_softmax = _make("schedule_softmax")
schedule_batch_norm = _make("schedule_batch_norm")
schedule_layer_norm = _make("schedule_layer_norm")
schedule_group_norm = _make("schedule_group_norm")


def schedule_pool(outs: Tensor | Sequence[Tensor], layout: str = "NCHW") -> Schedule:
    """The automatic schedule of ``outs`` (TVM's ``topi.generic.schedule_pool(outs, layout)``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> P = topi.nn.max_pool2d(tvm.placeholder((1, 2, 4, 4)), 2)
        >>> type(topi.generic.schedule_pool([P], "NCHW")).__name__
        'Schedule'
    """
    del layout
    return _auto(outs)
