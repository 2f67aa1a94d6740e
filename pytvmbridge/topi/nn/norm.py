"""Normalisations: ``batch_norm`` (inference), ``layer_norm``, ``group_norm``.

Statistics are defined in two passes (the mean, then the mean of squared deviations), which
stays accurate when the mean is large compared with the spread; ``auto_schedule`` computes them
in one pass over the data, as sums about a shift (rule_reduction.cc's one_pass_moments, keyed
by the ``"moments"`` attribute of the squared deviations), while the graph autodiff sees stays
two-pass. The output is
``x * scale + shift`` with ``scale = rstd * gamma`` and ``shift = beta - mean * scale`` per
channel for group_norm and batch_norm (one fused multiply-add per element, as PyTorch's CPU
kernels compute it; the subtract-multiply-multiply-add form took three vector operations and
made group_norm's output pass compute-bound at batch 1). layer_norm's gamma is per element:
its output is ``(x - mean) * rstd * gamma + beta`` as PyTorch's (exact on constant rows, where
the folded ``x * rstd - mean * rstd`` cancels: 2e-2 off for a row of 1000s; no slower, the
output pass waits on its stores). Each output stage is tagged
``"injective"`` and reads the per-channel or per-group statistics, so an automatic schedule
can fuse it into its consumer. float16 and bfloat16 data have float32 statistics and output
arithmetic, rounded back at the end (as PyTorch's CPU kernels): a float16 sum of squares
overflows at 65504.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 4), name="X")
    >>> g, b = tvm.placeholder((4,), name="g"), tvm.placeholder((4,), name="b")
    >>> Y = topi.nn.layer_norm(X, g, b, axis=[-1])
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, g, b, Y])
    >>> y = np.empty((1, 4), "float32")
    >>> f(np.array([[1, 2, 3, 4]], "float32"), np.ones(4, "float32"), np.zeros(4, "float32"), y)
    >>> [round(float(v), 3) for v in y[0]]
    [-1.342, -0.447, 0.447, 1.342]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TVMNotImplementedError, TVMTypeError, TVMValueError
from .. import tag
from ..utils import (
    Tensor,
    accumulate_dtype,
    cast_to,
    check_int,
    check_ndim,
    check_tensor,
    const_int,
    normalize_axes,
    normalize_axis,
    prod,
    require_float,
    same_dim,
)


def _check_param(p: Tensor | None, size: Any, what: str, dtype: str) -> None:
    if p is None:
        return
    check_tensor(p, what)
    check_ndim(p, 1, what)
    if not same_dim(p.shape[0], size):
        raise TVMValueError(f"{what} must have {size} elements, found shape {tuple(p.shape)}")
    if p.dtype != dtype:
        raise TVMTypeError(f"{what} is {p.dtype}, the data {dtype}; cast one of them")


def batch_norm(
    data: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    moving_mean: Tensor,
    moving_var: Tensor,
    axis: int | None = None,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
    training: bool = False,
    momentum: float | None = None,
) -> list[Tensor]:
    """Inference batch normalisation along the channel ``axis`` (default 1):
    ``(x - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta``. Returns
    ``[out, moving_mean, moving_var]`` as TVM does (the statistics unchanged). ``center=False``
    drops ``beta``, ``scale=False`` drops ``gamma`` (either may then be None).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 3, 4, 4)); p = [tvm.placeholder((3,)) for _ in range(4)]
        >>> out, mean, var = topi.nn.batch_norm(X, *p)
        >>> out.shape, out.op.tag
        ((1, 3, 4, 4), 'injective')
    """
    del momentum
    check_tensor(data, "data of batch_norm")
    require_float(data, "batch_norm")
    if training:
        raise TVMNotImplementedError(
            "batch_norm computes inference mode only (training=False): use topi.mean and "
            "topi.sum for batch statistics"
        )
    axis = normalize_axis(1 if axis is None else axis, data.ndim, "batch_norm")
    channels = data.shape[axis]
    for p, what, used in (
        (gamma, "gamma", scale),
        (beta, "beta", center),
        (moving_mean, "moving_mean", True),
        (moving_var, "moving_var", True),
    ):
        if used and p is None:
            raise TVMTypeError(f"{what} of batch_norm is None but is needed")
        if used:
            _check_param(p, channels, f"{what} of batch_norm", data.dtype)
    eps = te.const(epsilon, data.dtype)

    def fcompute(*i: Any) -> te.Expr:
        c = i[axis]
        factor = te.rsqrt(moving_var[c] + eps)
        if scale:
            factor = factor * gamma[c]
        shift = -moving_mean[c] * factor
        if center:
            shift = beta[c] + shift
        return data[i] * factor + shift

    out = te.compute(
        data.shape,
        fcompute,
        name="T_batch_norm",
        tag=tag.INJECTIVE,
        attrs={"axis": axis, "epsilon": float(epsilon)},
    )
    return [out, moving_mean, moving_var]


def _moments(
    data: Tensor,
    axes: list[int],
    count: Any,
    name: str,
    groups: tuple[int, Any, Any] | None,
) -> tuple[Tensor, Tensor, list]:
    """Mean and sum of squared deviations of ``data`` over ``axes``, kept with size-1
    dimensions, in :func:`accumulate_dtype` (float32 for float16 data). With
    ``groups=(channel_axis, num_groups, group_size)`` the channel axis is reduced in groups:
    the statistics have ``num_groups`` entries along it."""
    stat_shape = [1 if d in axes else data.shape[d] for d in range(data.ndim)]
    if groups is not None:
        stat_shape[groups[0]] = groups[1]
    acc = accumulate_dtype(data.dtype)
    count_expr = te.const(count, acc) if isinstance(count, int) else count.astype(acc)

    def index(i: Sequence[Any], rvs: list) -> list:
        it = iter(rvs)
        out = []
        for d in range(data.ndim):
            if groups is not None and d == groups[0]:
                out.append(i[d] * groups[2] + next(it))
            elif d in axes:
                out.append(next(it))
            else:
                out.append(i[d])
        return out

    def reduce_axes(suffix: str) -> list:
        rvs = []
        for d in range(data.ndim):
            if groups is not None and d == groups[0]:
                rvs.append(te.reduce_axis((0, groups[2]), name=f"kc{suffix}"))
            elif d in axes:
                rvs.append(te.reduce_axis((0, data.shape[d]), name=f"k{d}{suffix}"))
        return rvs

    r1 = reduce_axes("")
    total = te.compute(
        stat_shape,
        lambda *i: te.sum(cast_to(data[index(i, r1)], acc), axis=r1),
        name=f"{name}_sum",
        tag=tag.COMM_REDUCE,
    )
    mean = te.compute(
        stat_shape,
        lambda *i: total[i] / count_expr,
        name=f"{name}_mean",
        tag=tag.ELEMWISE,
    )
    r2 = reduce_axes("_v")

    def squared(*i: Any) -> te.Expr:
        dev = cast_to(data[index(i, r2)], acc) - mean[i]
        return te.sum(dev * dev, axis=r2)

    # attrs "moments": the automatic scheduler may compute this and ``total`` in one pass over
    # the data (rule_reduction.cc, one_pass_moments); the graph itself stays two-pass.
    sq = te.compute(
        stat_shape, squared, name=f"{name}_sqsum", tag=tag.COMM_REDUCE, attrs={"moments": 1}
    )
    return mean, sq, stat_shape


def layer_norm(
    data: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    axis: int | Sequence[int] = -1,
    epsilon: float = 1e-5,
) -> Tensor:
    """Normalise over ``axis`` (the last ones, as ``torch.nn.functional.layer_norm``'s
    ``normalized_shape``), then scale by ``gamma`` and shift by ``beta`` (each of the shape of
    the normalised axes, or None).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((2, 5, 8)); g = tvm.placeholder((8,)); b = tvm.placeholder((8,))
        >>> topi.nn.layer_norm(X, g, b, axis=-1).op.tag
        'injective'
    """
    check_tensor(data, "data of layer_norm")
    require_float(data, "layer_norm")
    axes = normalize_axes(axis, data.ndim, "layer_norm")
    if not axes:
        raise TVMValueError("layer_norm needs at least one axis")
    norm_shape = [data.shape[d] for d in axes]
    for p, what in ((gamma, "gamma"), (beta, "beta")):
        if p is None:
            continue
        check_tensor(p, f"{what} of layer_norm")
        if p.ndim != len(axes) or not all(
            same_dim(x, y) for x, y in zip(p.shape, norm_shape, strict=True)
        ):
            raise TVMValueError(
                f"{what} of layer_norm must have shape {tuple(norm_shape)} (the normalised "
                f"axes), found {tuple(p.shape)}"
            )
        if p.dtype != data.dtype:
            raise TVMTypeError(f"{what} of layer_norm is {p.dtype}, the data {data.dtype}")
    count = prod(norm_shape)
    mean, sq, _ = _moments(data, axes, count, "T_layer_norm", None)
    # float16/bfloat16: the statistics are float32 (_moments); so is the output's arithmetic,
    # rounded once at the end, as PyTorch's CPU kernel computes it.
    acc = accumulate_dtype(data.dtype)
    count_expr = te.const(count, acc) if isinstance(count, int) else count.astype(acc)
    eps = te.const(epsilon, acc)

    def fcompute(*i: Any) -> te.Expr:
        stat = [0 if d in axes else i[d] for d in range(data.ndim)]
        rstd = te.rsqrt(sq[stat] / count_expr + eps)
        out = (cast_to(data[i], acc) - mean[stat]) * rstd
        p_index = [i[d] for d in axes]
        if gamma is not None:
            out = out * cast_to(gamma[p_index], acc)
        if beta is not None:
            out = out + cast_to(beta[p_index], acc)
        return cast_to(out, data.dtype)

    return te.compute(
        data.shape,
        fcompute,
        name="T_layer_norm",
        tag=tag.INJECTIVE,
        attrs={"axis": axes, "epsilon": float(epsilon)},
    )


def group_norm(
    data: Tensor,
    gamma: Tensor | None,
    beta: Tensor | None,
    num_groups: int,
    channel_axis: int = 1,
    axes: Sequence[int] | None = None,
    epsilon: float = 1e-5,
) -> Tensor:
    """Normalise each group of ``channels / num_groups`` consecutive channels over those
    channels and ``axes`` (default: every axis after the channel axis), then scale and shift per
    channel (``torch.nn.functional.group_norm``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((2, 6, 4, 4)); g = tvm.placeholder((6,)); b = tvm.placeholder((6,))
        >>> topi.nn.group_norm(X, g, b, num_groups=3).shape
        (2, 6, 4, 4)
    """
    check_tensor(data, "data of group_norm")
    require_float(data, "group_norm")
    channel_axis = normalize_axis(channel_axis, data.ndim, "group_norm")
    if axes is None:
        axes = list(range(channel_axis + 1, data.ndim))
    red = normalize_axes(axes, data.ndim, "group_norm")
    if channel_axis in red:
        raise TVMValueError("group_norm: axes must not include the channel axis")
    channels = data.shape[channel_axis]
    c = const_int(channels)
    num_groups = check_int(num_groups, "num_groups of group_norm")
    if num_groups < 1:
        raise TVMValueError(f"num_groups of group_norm must be an int >= 1, found {num_groups!r}")
    if c is None:
        raise TVMValueError("group_norm needs a constant number of channels")
    if c % num_groups:
        raise TVMValueError(f"group_norm: {c} channels do not divide into {num_groups} groups")
    group_size = c // num_groups
    for p, what in ((gamma, "gamma"), (beta, "beta")):
        _check_param(p, channels, f"{what} of group_norm", data.dtype)
    count = prod([group_size, *(data.shape[d] for d in red)])
    mean, sq, _ = _moments(data, red, count, "T_group_norm", (channel_axis, num_groups, group_size))
    # As layer_norm: float16/bfloat16 statistics and arithmetic in float32, rounded at the end.
    acc = accumulate_dtype(data.dtype)
    count_expr = te.const(count, acc) if isinstance(count, int) else count.astype(acc)
    eps = te.const(epsilon, acc)

    def fcompute(*i: Any) -> te.Expr:
        stat = [0 if d in red else i[d] for d in range(data.ndim)]
        stat[channel_axis] = te.floordiv(i[channel_axis], group_size)
        scale = te.rsqrt(sq[stat] / count_expr + eps)
        if gamma is not None:
            scale = scale * cast_to(gamma[i[channel_axis]], acc)
        shift = -mean[stat] * scale
        if beta is not None:
            shift = cast_to(beta[i[channel_axis]], acc) + shift
        return cast_to(cast_to(data[i], acc) * scale + shift, data.dtype)

    return te.compute(
        data.shape,
        fcompute,
        name="T_group_norm",
        tag=tag.INJECTIVE,
        attrs={
            "num_groups": num_groups,
            "channel_axis": channel_axis,
            "epsilon": float(epsilon),
        },
    )
