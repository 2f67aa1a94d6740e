"""Layout and indexing operators: matmul (TVM keeps it here), reshape, transpose, concatenate,
split, strided_slice, broadcast_to, take, gather, layout_transform...

All but ``matmul`` are injective (``"injective"`` tag): each output element copies one input
element, so automatic schedules inline them into their consumers.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A, B = tvm.placeholder((4, 3), name="A"), tvm.placeholder((4, 5), name="B")
    >>> topi.matmul(A, B, transp_a=True).shape
    (3, 5)
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .. import te
from ..error import TVMNotImplementedError, TVMTypeError, TVMValueError
from . import tag
from .utils import (
    Tensor,
    check_int,
    check_tensor,
    const_int,
    int_list,
    normalize_axes,
    normalize_axis,
    prod,
    same_dim,
    with_nonempty_reads,
)


def matmul(a: Tensor, b: Tensor, transp_a: bool = False, transp_b: bool = False) -> Tensor:
    """``op(a) @ op(b)`` of two matrices (TVM's ``topi.matmul``), where ``op`` transposes when
    ``transp_a``/``transp_b`` is set. Tagged ``"matmul"``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> C = topi.matmul(tvm.placeholder((2, 3)), tvm.placeholder((3, 4)))
        >>> C.shape, C.op.tag
        ((2, 4), 'matmul')
    """
    from .nn.dense import matmul as nn_matmul  # here: nn imports this module

    return nn_matmul(a, b, transpose_a=transp_a, transpose_b=transp_b)


def _shape_list(x: Tensor) -> list:
    return list(x.shape)


def _unravel(flat: Any, shape: Sequence[Any]) -> list:
    """The index of element ``flat`` of a row-major array of ``shape``."""
    index = []
    for d in reversed(range(len(shape))):
        if d == 0:
            index.append(flat)
        elif const_int(shape[d]) == 1:
            index.append(te.const(0, "int32"))
        else:
            index.append(te.floormod(flat, shape[d]))
            flat = te.floordiv(flat, shape[d])
    index.reverse()
    return index


def _ravel(index: Sequence[Any], shape: Sequence[Any]) -> Any:
    """The row-major position of ``index`` in an array of ``shape``."""
    if not index:
        return te.const(0, "int32")
    flat: Any = index[0]
    for i, d in zip(index[1:], shape[1:], strict=True):
        flat = flat * d + i
    return flat


def _dim_factors(dim: Any) -> tuple[int, Counter] | None:
    """``dim`` as a constant times a multiset of symbolic factors (``(s0 * s1) * 4``: 4 and
    {s0, s1}); None for an integer expression that is not a product (its own factor then).

    Two products of the same factors are then seen equal however they are associated, which
    ``same_dim``'s simplifier does not see (``(b * h) * s`` against ``b * (h * s)``).
    """
    c = const_int(dim)
    if c is not None:
        return c, Counter()
    from .. import _core

    parts = _core.expr_parts(dim)
    if parts[0] == "Mul":
        a, b = _dim_factors(parts[1]), _dim_factors(parts[2])
        if a is None or b is None:
            return None
        return a[0] * b[0], a[1] + b[1]
    # A variable is its own identity; any other expression (s + 1) is compared by its text.
    key = ("var", hash(dim)) if parts[0] == "Var" else ("expr", str(dim))
    return 1, Counter([key])


def _divides(p: tuple[int, Counter], q: tuple[int, Counter]) -> bool:
    """Whether product ``p`` provably divides product ``q`` (so ``q`` can still grow to match)."""
    return p[0] != 0 and q[0] % p[0] == 0 and not (p[1] - q[1])


def _reshape_groups(in_shape: Sequence[Any], out_shape: Sequence[Any]) -> list | None:
    """The dimensions of a reshape paired in groups of equal size: ``[(in_dims, out_dims)]``,
    unit dimensions left out; None when the sizes do not allow it.

    Each output index then depends only on its own group's input indices: a reshape that adds or
    drops unit dimensions, or merges two leading dimensions, keeps the other dimensions' indices
    as they are (``a[i, j]``, not ``a[(i * n + j) // n, (i * n + j) % n]``), so a chain of
    reshapes around an elementwise operation simplifies back to plain indices (and such a chain
    after a matrix product can become its epilogue). Symbolic sizes group by their factors:
    attention's ``(b, h, s, 64)`` viewed as ``(b * h, s, 64)`` reads ``a[n // h, n % h, i, j]``,
    where a flat index would divide every element's offset by ``s`` and ``h``.
    """
    ins = [d for d, s in enumerate(in_shape) if const_int(s) != 1]
    outs = [d for d, s in enumerate(out_shape) if const_int(s) != 1]
    groups: list = []
    i = j = 0
    while i < len(ins) and j < len(outs):
        a, b = in_shape[ins[i]], out_shape[outs[j]]
        if same_dim(a, b):
            groups.append(([ins[i]], [outs[j]]))
            i, j = i + 1, j + 1
            continue
        gi, gj = [ins[i]], [outs[j]]
        pi, pj = _dim_factors(a), _dim_factors(b)
        i, j = i + 1, j + 1
        while pi is not None and pj is not None and pi != pj:
            if _divides(pi, pj) and i < len(ins):
                grow = _dim_factors(in_shape[ins[i]])
                gi.append(ins[i])
                i += 1
                pi = None if grow is None else (pi[0] * grow[0], pi[1] + grow[1])
            elif _divides(pj, pi) and j < len(outs):
                grow = _dim_factors(out_shape[outs[j]])
                gj.append(outs[j])
                j += 1
                pj = None if grow is None else (pj[0] * grow[0], pj[1] + grow[1])
            else:
                return None
        if pi is None or pj is None:
            return None
        groups.append((gi, gj))
    if i != len(ins) or j != len(outs):
        return None
    return groups


def _inferred_dim(in_shape: list[Any], others: list[Any]) -> Any:
    """The size of reshape's -1 dimension when some size is symbolic: the input's sizes that the
    other entries do not take one for one (``x.view(x.size(0), -1)`` of ``(n, 8, 2, 2)``: 32,
    not ``floordiv(n * 32, n)``, which the simplifier cannot cancel: n may be 0), divided by
    the entries left over."""
    left = list(in_shape)
    rest = []
    for s in others:
        match = next((k for k, f in enumerate(left) if same_dim(f, s)), None)
        if match is None:
            rest.append(s)
        else:
            left.pop(match)
    den = const_int(prod(rest))
    constant = prod([f for f in left if const_int(f) is not None])
    symbolic = [f for f in left if const_int(f) is None]
    if den is not None and den != 0 and constant % den == 0:
        return prod([constant // den, *symbolic])
    return te.floordiv(prod(left), prod(rest))


def _newshape(newshape: Any) -> list:
    """reshape's ``newshape`` as a list of Python ints (NumPy integers too) and integer
    expressions; TypeError for anything else (a float size)."""
    single = const_int(newshape)
    if single is not None:
        return [single]
    if isinstance(newshape, te.Expr):
        items = [newshape]
    else:
        try:
            items = list(newshape)
        except TypeError:
            items = None
    if items is None or isinstance(newshape, str):
        raise TVMTypeError(
            f"newshape of reshape must be a sequence of ints or integer expressions, found "
            f"{newshape!r} ({type(newshape).__name__})"
        )
    out = []
    for s in items:
        c = const_int(s)
        if c is not None:
            out.append(c)
        elif isinstance(s, te.Expr) and s.dtype.startswith(("int", "uint")):
            out.append(s)
        else:
            raise TVMTypeError(
                f"newshape of reshape must be a sequence of ints or integer expressions, found "
                f"{newshape!r} (entry {s!r} is {type(s).__name__})"
            )
    return out


def reshape(a: Tensor, newshape: Sequence[Any]) -> Tensor:
    """``a`` with the same elements in row-major order and shape ``newshape``; one entry may be
    -1 (inferred). Entries may be symbolic.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.reshape(tvm.placeholder((2, 3, 4)), (4, -1)).shape
        (4, 6)
    """
    check_tensor(a, "a of reshape")
    shape = _newshape(newshape)
    newshape = tuple(shape)  # for the messages: NumPy integers shown as ints
    total = prod(a.shape)
    unknown = [d for d, s in enumerate(shape) if const_int(s) == -1]
    if len(unknown) > 1:
        raise TVMValueError(f"reshape: only one dimension of newshape may be -1, found {newshape}")
    for s in shape:
        if const_int(s) is not None and const_int(s) < -1:
            raise TVMValueError(f"reshape: newshape entries must be >= -1, found {newshape}")
    if unknown:
        known = prod([s for d, s in enumerate(shape) if d != unknown[0]])
        if isinstance(known, int) and isinstance(total, int):
            if known == 0 or total % known:
                raise TVMValueError(
                    f"reshape: cannot reshape {tuple(a.shape)} into {tuple(newshape)}"
                )
            shape[unknown[0]] = total // known
        else:
            others = [s for d, s in enumerate(shape) if d != unknown[0]]
            shape[unknown[0]] = _inferred_dim(list(a.shape), others)
    new_total = prod(shape)
    if isinstance(total, int) and isinstance(new_total, int) and total != new_total:
        raise TVMValueError(
            f"reshape: cannot reshape {tuple(a.shape)} ({total} elements) into {tuple(newshape)} "
            f"({new_total} elements)"
        )
    in_shape = _shape_list(a)

    groups = _reshape_groups(in_shape, shape)

    def fcompute(*i: Any) -> te.Expr:
        if len(in_shape) == len(shape) and all(map(same_dim, in_shape, shape)):
            return a[i]
        if groups is None:
            return a[_unravel(_ravel(i, shape), in_shape)]
        index: list[Any] = [te.const(0, "int32")] * len(in_shape)
        for gi, gj in groups:
            if len(gi) == 1 and len(gj) == 1:
                index[gi[0]] = i[gj[0]]
                continue
            flat = _ravel([i[d] for d in gj], [shape[d] for d in gj])
            for d, v in zip(gi, _unravel(flat, [in_shape[d] for d in gi]), strict=True):
                index[d] = v
        return a[tuple(index)]

    return te.compute(shape, fcompute, name="T_reshape", tag=tag.INJECTIVE)


def transpose(a: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """``a`` with its dimensions permuted: output dimension ``d`` is input dimension
    ``axes[d]`` (reversed when None), as ``np.transpose``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.transpose(tvm.placeholder((2, 3, 4)), (1, 2, 0)).shape
        (3, 4, 2)
    """
    check_tensor(a, "a of transpose")
    if axes is None:
        perm = list(reversed(range(a.ndim)))
    else:
        axes = int_list(axes, "axes of transpose")
        perm = [normalize_axis(x, a.ndim, "transpose") for x in axes]
        if sorted(perm) != list(range(a.ndim)):
            raise TVMValueError(
                f"transpose: axes {tuple(axes)} is not a permutation of {a.ndim} dimensions"
            )
    shape = [a.shape[p] for p in perm]

    def fcompute(*i: Any) -> te.Expr:
        index: list[Any] = [None] * a.ndim
        for d, p in enumerate(perm):
            index[p] = i[d]
        return a[index]

    return te.compute(shape, fcompute, name="T_transpose", tag=tag.INJECTIVE)


def permute(a: Tensor, dims: Sequence[int]) -> Tensor:
    """PyTorch's name for :func:`transpose` with explicit axes.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.permute(tvm.placeholder((2, 3, 4)), (0, 2, 1)).shape
        (2, 4, 3)
    """
    return transpose(a, dims)


def expand_dims(a: Tensor, axis: int, num_newaxis: int = 1) -> Tensor:
    """``a`` with ``num_newaxis`` size-1 dimensions inserted at ``axis`` (which may be
    ``a.ndim``, or negative counted from ``a.ndim + 1``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.expand_dims(tvm.placeholder((2, 3)), -1, 2).shape
        (2, 3, 1, 1)
    """
    check_tensor(a, "a of expand_dims")
    axis = check_int(axis, "axis of expand_dims")
    num_newaxis = check_int(num_newaxis, "num_newaxis of expand_dims")
    if num_newaxis < 0:
        raise TVMValueError(f"num_newaxis of expand_dims must be >= 0, found {num_newaxis}")
    if not -a.ndim - 1 <= axis <= a.ndim:
        raise TVMValueError(f"expand_dims: axis {axis} is out of range for {a.ndim} dimension(s)")
    axis = axis % (a.ndim + 1)
    shape = [*a.shape[:axis], *([1] * num_newaxis), *a.shape[axis:]]
    return te.compute(
        shape,
        lambda *i: a[(*i[:axis], *i[axis + num_newaxis :])],
        name="T_expand_dims",
        tag=tag.INJECTIVE,
    )


def squeeze(a: Tensor, axis: int | Sequence[int] | None = None) -> Tensor:
    """``a`` without size-1 dimensions (all of them, or those in ``axis``, which must be 1).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.squeeze(tvm.placeholder((1, 3, 1))).shape
        (3,)
    """
    check_tensor(a, "a of squeeze")
    if axis is None:
        axes = [d for d in range(a.ndim) if const_int(a.shape[d]) == 1]
    else:
        axes = normalize_axes(axis, a.ndim, "squeeze")
        for d in axes:
            if const_int(a.shape[d]) != 1:
                raise TVMValueError(f"squeeze: dimension {d} of {tuple(a.shape)} is not 1")
    shape = [a.shape[d] for d in range(a.ndim) if d not in axes]

    def fcompute(*i: Any) -> te.Expr:
        it = iter(i)
        return a[[0 if d in axes else next(it) for d in range(a.ndim)]]

    return te.compute(shape, fcompute, name="T_squeeze", tag=tag.INJECTIVE)


def concatenate(a_tuple: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors joined along ``axis``; the other dimensions must agree.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A, B = tvm.placeholder((2, 3)), tvm.placeholder((2, tvm.var("m")))
        >>> topi.concatenate([A, B], axis=1).shape
        (2, (3 + m))
    """
    tensors = list(a_tuple)
    if not tensors:
        raise TVMValueError("concatenate needs at least one tensor")
    for k, t in enumerate(tensors):
        check_tensor(t, f"tensor {k} of concatenate")
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, "concatenate")
    for k, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype:
            raise TVMTypeError(f"concatenate: tensor {k} is {t.dtype}, tensor 0 is {first.dtype}")
        if t.ndim != first.ndim or not all(
            same_dim(t.shape[d], first.shape[d]) for d in range(t.ndim) if d != axis
        ):
            raise TVMValueError(
                f"concatenate: tensor {k} has shape {tuple(t.shape)}, which does not match "
                f"{tuple(first.shape)} outside axis {axis}"
            )
    offsets: list[Any] = [0]
    for t in tensors:
        offsets.append(_add(offsets[-1], t.shape[axis]))
    shape = list(first.shape)
    shape[axis] = offsets[-1]

    def fcompute(*i: Any) -> te.Expr:
        def read(k: int) -> te.Expr:
            index = list(i)
            index[axis] = i[axis] - offsets[k] if const_int(offsets[k]) != 0 else i[axis]
            return tensors[k][index]

        out = read(len(tensors) - 1)
        for k in reversed(range(len(tensors) - 1)):
            out = te.if_then_else(i[axis] < offsets[k + 1], read(k), out)
        return out

    return te.compute(shape, fcompute, name="T_concat", tag=tag.INJECTIVE)


def _add(a: Any, b: Any) -> Any:
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return ca + cb
    if ca == 0:
        return b
    return a + b


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors (of one shape) joined along a new dimension ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.stack([tvm.placeholder((2, 3)), tvm.placeholder((2, 3))], axis=1).shape
        (2, 2, 3)
    """
    tensors = list(tensors)
    if not tensors:
        raise TVMValueError("stack needs at least one tensor")
    for k, t in enumerate(tensors):
        check_tensor(t, f"tensor {k} of stack")
    axis = check_int(axis, "axis of stack")
    ndim = tensors[0].ndim
    if not -ndim - 1 <= axis <= ndim:
        raise TVMValueError(f"stack: axis {axis} is out of range for {ndim + 1} dimension(s)")
    axis = axis % (ndim + 1)
    return concatenate([expand_dims(t, axis) for t in tensors], axis)


def split(ary: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """``ary`` cut along ``axis``: into ``indices_or_sections`` equal parts (an int, which must
    divide the size), or at the given indices (``np.split``'s rule).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> [t.shape for t in topi.split(tvm.placeholder((6, 2)), [1, 4])]
        [(1, 2), (3, 2), (2, 2)]
    """
    check_tensor(ary, "ary of split")
    axis = normalize_axis(axis, ary.ndim, "split")
    size = ary.shape[axis]
    sections = const_int(indices_or_sections)
    if sections is not None:
        if sections < 1:
            raise TVMValueError(f"split: sections must be >= 1, found {sections}")
        c = const_int(size)
        if c is not None:
            if c % sections:
                raise TVMValueError(
                    f"split: {c} elements on axis {axis} do not divide into {sections}"
                )
            part: Any = c // sections
        else:
            part = te.floordiv(size, sections)
        starts = [part * k for k in range(sections)]
        lengths = [part] * sections
    else:
        idx = int_list(
            indices_or_sections, "indices_or_sections of split", "an int or a sequence of ints"
        )
        c = const_int(size)
        if c is None:
            raise TVMValueError("split at indices needs a constant size along the axis")
        bounds = [min(max(x if x >= 0 else x + c, 0), c) for x in idx]
        edges = [0, *bounds, c]
        starts = edges[:-1]
        lengths = [max(edges[k + 1] - edges[k], 0) for k in range(len(edges) - 1)]
    outs = []
    for k, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        shape = list(ary.shape)
        shape[axis] = length

        def fcompute(*i: Any, start: Any = start) -> te.Expr:
            index = list(i)
            index[axis] = i[axis] + start if const_int(start) != 0 else i[axis]
            return ary[index]

        # equal parts of a size variable: checked per call that they are equal (floordiv
        # dropped the remainder: 8 in 3 parts gave three of 2 and lost the last two)
        attrs = {}
        if sections is not None and const_int(size) is None:
            attrs = {"divisible_reads": [0, axis, sections]}
        outs.append(
            te.compute(shape, fcompute, name=f"T_split_{k}", tag=tag.INJECTIVE, attrs=attrs)
        )
    return outs


def strided_slice(
    a: Tensor,
    begin: Sequence[int],
    end: Sequence[int | None],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    slice_mode: str = "end",
) -> Tensor:
    """``a[begin:end:strides]`` per axis with NumPy's rules (negative indices count from the
    end, out-of-range bounds are clamped, negative strides walk backwards). ``axes`` names the
    axes the lists refer to (default: the first ``len(begin)``); ``None`` in ``end`` means to the
    end. On a symbolic dimension the stride must be positive. With ``slice_mode="size"`` (TVM's)
    ``end`` holds sizes instead (-1: to the end) and strides are 1.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.strided_slice(tvm.placeholder((5, 6)), [1, -1], [4, 0], [2, -2]).shape
        (2, 3)
    """
    check_tensor(a, "a of strided_slice")
    begin = int_list(begin, "begin of strided_slice")
    end = int_list(end, "end of strided_slice", "a sequence of ints or None", allow_none=True)
    sizes: list[int | None] | None = None
    if slice_mode == "size":
        if len(end) != len(begin):
            raise TVMValueError("strided_slice: begin and end must have the same length")
        # TVM's rule: a negative begin counts from the end and is clamped into the axis first,
        # then end = begin + size (so it is resolved per axis below, where the size is known)
        sizes, end, strides = end, [None] * len(begin), None
    elif slice_mode != "end":
        raise TVMValueError(
            f"slice_mode of strided_slice must be 'end' or 'size', found {slice_mode!r}"
        )
    strides = [1] * len(begin) if strides is None else int_list(strides, "strides of strided_slice")
    if axes is None:
        # Without axes the lists slice the leading dimensions: no more of them than a has.
        if len(begin) > a.ndim:
            raise TVMValueError(
                f"strided_slice: begin has {len(begin)} entries (end {len(end)}) but a has "
                f"{a.ndim} dimension(s), shape {tuple(a.shape)}; pass axes to pick the axes"
            )
        axes = list(range(len(begin)))
    else:
        axes = [
            normalize_axis(x, a.ndim, "strided_slice")
            for x in int_list(axes, "axes of strided_slice")
        ]
        if len(set(axes)) != len(axes):
            raise TVMValueError(f"strided_slice: axes {axes} repeat an axis")
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise TVMValueError(
            "strided_slice: begin, end, strides (and axes) must have the same length, found "
            f"{len(begin)}, {len(end)}, {len(strides)}, {len(axes)}"
        )
    starts: list[Any] = [0] * a.ndim
    steps: list[int] = [1] * a.ndim
    shape = list(a.shape)
    for k, (b, e, st, ax) in enumerate(zip(begin, end, strides, axes, strict=True)):
        if st == 0:
            raise TVMValueError("strided_slice: strides must be nonzero")
        n = const_int(a.shape[ax])
        if sizes is not None:  # slice_mode="size": strides are 1
            starts[ax], shape[ax] = _sized_slice(b, sizes[k], a.shape[ax] if n is None else n)
            continue
        if n is not None:
            start, stop, step = slice(b, e, st).indices(n)
            starts[ax], steps[ax], shape[ax] = (
                start,
                step,
                len(range(start, stop, step)),
            )
            continue
        if st < 0:
            raise TVMValueError(
                f"strided_slice: axis {ax} is symbolic; its stride must be positive"
            )
        dim = a.shape[ax]

        lo, hi = _bound(b, te.const(0, "int32"), dim), _bound(e, dim, dim)
        starts[ax], steps[ax] = lo, st
        if const_int(lo) == 0 and hi is dim:  # the whole axis: an extent the shape checks know
            shape[ax] = dim if st == 1 else te.floordiv(dim + (st - 1), st)
        else:
            shape[ax] = te.max(te.floordiv(hi - lo + (st - 1), st), 0)

    def fcompute(*i: Any) -> te.Expr:
        index = []
        for d in range(a.ndim):
            v = i[d] * steps[d] if steps[d] != 1 else i[d]
            index.append(v + starts[d] if const_int(starts[d]) != 0 else v)
        return a[index]

    return te.compute(shape, fcompute, name="T_strided_slice", tag=tag.INJECTIVE)


def _bound(x: int | None, default: Any, dim: Any) -> Any:
    """A slice bound on a symbolic axis of size ``dim``, clamped into it (NumPy's rule)."""
    if x is None or x >= sys.maxsize // 2:
        return default
    if x < 0:
        return te.max(dim + x, 0)
    if x == 0:
        return te.const(0, "int32")
    return te.min(te.const(x, "int32"), dim)


def _sized_slice(begin: int, size: int | None, dim: Any) -> tuple[Any, Any]:
    """(start, extent) of TVM's ``slice_mode="size"`` on an axis of size ``dim`` (an int or
    symbolic): a negative begin counts from the end, begin is clamped into the axis, and the
    extent is ``size`` (a negative size: to the end) clamped to what is left."""
    if isinstance(dim, int):
        start = min(max(begin + dim if begin < 0 else begin, 0), dim)
        stop = dim if size is None or size < 0 else min(start + size, dim)
        return start, stop - start
    start = _bound(begin, te.const(0, "int32"), dim)
    if size is None or size < 0:
        return start, dim - start if const_int(start) != 0 else dim
    return start, te.max(te.min(start + size, dim) - start, 0)


def _index_value(idx: te.Expr, size: Any, mode: str) -> te.Expr:
    """An index read from a tensor, made safe to use for a dimension of ``size``."""
    # Clamped or wrapped in a signed type at least as wide as int32: in the index's own narrow
    # type a size of 300 is 44 as uint8 (and uint32's large values would read as negative).
    if mode in ("clip", "wrap") and idx.dtype == "uint64":
        # no signed type holds uint64's upper half: clamp or wrap unsigned (never negative)
        n = size.astype("uint64") if isinstance(size, te.Expr) else te.const(size, "uint64")
        if mode == "clip":
            idx = te.min(idx, n - te.const(1, "uint64"))
        else:
            idx = te.truncmod(idx, n)
        return idx.astype(_position_dtype(size))
    bits = int("".join(ch for ch in idx.dtype if ch.isdigit()) or 32)
    wide = "int64" if bits == 64 or idx.dtype == "uint32" else "int32"
    if idx.dtype != wide:
        idx = idx.astype(wide)
    n = size.astype(wide) if isinstance(size, te.Expr) and size.dtype != wide else size
    if mode == "clip":
        idx = te.min(te.max(idx, te.const(0, idx.dtype)), n - 1)
    elif mode == "wrap":
        idx = te.floormod(idx, n)
    elif mode != "fast":
        raise TVMValueError(f"mode must be 'clip', 'wrap' or 'fast', found {mode!r}")
    position = _position_dtype(size)
    return idx if idx.dtype == position else idx.astype(position)


def _position_dtype(size: Any) -> str:
    """The type of a position along an axis of ``size``: int64 where the size may pass int32's
    largest (an int64 size variable; a constant of 2**31 or more), else int32. (int32 always
    cut an index past 2**31 of a large table: it wrapped negative and read outside it.)"""
    if isinstance(size, te.Expr):
        return "int64" if size.dtype in ("int64", "uint64") else "int32"
    return "int64" if int(size) >= 2**31 else "int32"


def take(
    a: Tensor,
    indices: Tensor | int,
    axis: int | None = None,
    batch_dims: int = 0,
    mode: str = "clip",
) -> Tensor:
    """Elements of ``a`` at integer ``indices`` along ``axis`` (of the flattened ``a`` when
    None), as ``np.take``: the output shape is ``a.shape[:axis] + indices.shape +
    a.shape[axis+1:]``. Out-of-range indices are clamped (``mode="clip"``, TVM's default) or
    wrapped (``"wrap"``); ``"fast"`` trusts them. ``batch_dims`` (TVM's) must be 0.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> E = tvm.placeholder((1000, 64), name="E")
        >>> ids = tvm.placeholder((tvm.var("n"),), "int64", name="ids")
        >>> topi.take(E, ids, axis=0).shape
        (n, 64)
    """
    check_tensor(a, "a of take")
    if batch_dims != 0:
        raise TVMNotImplementedError(f"take supports batch_dims=0 only, found {batch_dims}")
    constant = const_int(indices)
    if constant is not None:
        indices_shape: list[Any] = []

        def get_index(_: Sequence[Any]) -> te.Expr:
            return te.const(constant, "int32")
    else:
        check_tensor(indices, "indices of take")
        if not indices.dtype.startswith(("int", "uint")):
            raise TVMTypeError(f"indices of take must be integers, found {indices.dtype}")
        indices_shape = list(indices.shape)

        def get_index(i: Sequence[Any]) -> te.Expr:
            return indices[list(i)]

    k = len(indices_shape)
    # A clipped or wrapped index into an empty axis is outside it (clip: n - 1 = -1): refused
    # here when the axis is empty by its shape, per call when it is a size variable (the
    # compute's first input, `a`, must have an element along it).
    dims = range(a.ndim) if axis is None else [normalize_axis(axis, a.ndim, "take")]
    if mode != "fast":
        taken = [d for d in dims if const_int(a.shape[d]) == 0]
        if taken and all(const_int(s) not in (None, 0) for s in indices_shape):
            raise TVMValueError(
                f"take: cannot take from an empty axis: dimension {taken[0]} of "
                f"{tuple(a.shape)} has size 0"
            )
    if axis is None:
        flat_size = prod(a.shape)
        in_shape = list(a.shape)

        def flat(*i: Any) -> te.Expr:
            return a[_unravel(_index_value(get_index(i), flat_size, mode), in_shape)]

        out_shape, body = indices_shape, flat
    else:
        axis = normalize_axis(axis, a.ndim, "take")
        out_shape = [*a.shape[:axis], *indices_shape, *a.shape[axis + 1 :]]

        def body(*i: Any) -> te.Expr:
            idx = _index_value(get_index(i[axis : axis + k]), a.shape[axis], mode)
            return a[(*i[:axis], idx, *i[axis + k :])]

    def make(attrs: dict[str, Any]) -> Tensor:
        return te.compute(out_shape, body, name="T_take", tag=tag.INJECTIVE, attrs=attrs)

    return make({}) if mode == "fast" else with_nonempty_reads(make, a, list(dims))


def gather(data: Tensor, axis: int, indices: Tensor) -> Tensor:
    """``out[i][j][k] = data[i][indices[i][j][k]][k]`` for ``axis=1`` and so on
    (``torch.gather``): the output has the shape of ``indices``. Out-of-range indices are
    clamped, so a bad index never reads outside ``data``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> D, I = tvm.placeholder((3, 4)), tvm.placeholder((3, 2), "int32")
        >>> topi.gather(D, 1, I).shape
        (3, 2)
    """
    check_tensor(data, "data of gather")
    check_tensor(indices, "indices of gather")
    if indices.ndim != data.ndim:
        raise TVMValueError(
            f"gather: indices must have as many dimensions as data ({data.ndim}), found "
            f"{indices.ndim}"
        )
    if not indices.dtype.startswith(("int", "uint")):
        raise TVMTypeError(f"indices of gather must be integers, found {indices.dtype}")
    axis = normalize_axis(axis, data.ndim, "gather")

    def fcompute(*i: Any) -> te.Expr:
        index = list(i)
        index[axis] = _index_value(indices[i], data.shape[axis], "clip")
        return data[index]

    return te.compute(indices.shape, fcompute, name="T_gather", tag=tag.INJECTIVE)


def flatten(data: Tensor) -> Tensor:
    """``data`` as (batch, everything else): TVM's ``topi.nn.flatten``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.flatten(tvm.placeholder((tvm.var("n"), 512, 1, 1))).shape
        (n, 512)
    """
    check_tensor(data, "data of flatten")
    if data.ndim < 1:
        raise TVMValueError("flatten needs at least one dimension")
    return reshape(data, [data.shape[0], prod(data.shape[1:])])


_LAYOUT_PART = re.compile(r"(\d*)([A-Za-z])")


def _parse_layout(layout: str) -> list[tuple[str, int]]:
    """``"NCHW8c"`` -> ``[("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 8)]``."""
    parts = _LAYOUT_PART.findall(layout)
    if "".join(n + c for n, c in parts) != layout or not parts:
        raise TVMValueError(f"cannot parse layout {layout!r}")
    out = []
    for number, letter in parts:
        if letter.isupper():
            if number:
                raise TVMValueError(
                    f"layout {layout!r}: a primal axis {letter} cannot have a factor"
                )
            out.append((letter, 0))
        else:
            if not number or int(number) < 1:
                raise TVMValueError(f"layout {layout!r}: sub-axis {letter} needs a factor, e.g. 8c")
            out.append((letter, int(number)))
    letters = [c for c, _ in out]
    if len(set(letters)) != len(letters):
        raise TVMValueError(f"layout {layout!r} repeats an axis")
    for c, f in out:
        if f and c.upper() not in letters:
            raise TVMValueError(f"layout {layout!r} has sub-axis {c} without its axis {c.upper()}")
    return out


def layout_transform(array: Tensor, src_layout: str, dst_layout: str) -> Tensor:
    """``array`` moved from one layout to another, TVM's layout strings: upper-case letters are
    axes, a number and a lower-case letter a block of that axis (``"NCHW8c"``: channels in blocks
    of 8, innermost; ``"OIHW4i8o"``: the packed conv2d_NCHWc kernel). Block factors must divide
    the axis size.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((tvm.var("n"), 32, 7, 7))
        >>> topi.layout_transform(X, "NCHW", "NCHW8c").shape
        (n, 4, 7, 7, 8)
        >>> topi.layout_transform(tvm.placeholder((16, 8, 3, 3)), "OIHW", "OIHW4i8o").shape
        (2, 2, 3, 3, 4, 8)
    """
    check_tensor(array, "array of layout_transform")
    src, dst = _parse_layout(src_layout), _parse_layout(dst_layout)
    if array.ndim != len(src):
        raise TVMValueError(
            f"layout_transform: {src_layout!r} has {len(src)} axes, the array {array.ndim}"
        )
    src_primal = sorted(c for c, f in src if not f)
    dst_primal = sorted(c for c, f in dst if not f)
    if src_primal != dst_primal:
        raise TVMValueError(f"layout_transform: {src_layout!r} and {dst_layout!r} differ in axes")
    if src_layout == dst_layout:
        return te.compute(
            array.shape, lambda *i: array[i], name="T_layout_trans", tag=tag.INJECTIVE
        )
    src_factor = {c.upper(): f for c, f in src if f}
    dst_factor = {c.upper(): f for c, f in dst if f}
    # The full size of each primal axis.
    full: dict[str, Any] = {}
    for (c, f), size in zip(src, array.shape, strict=True):
        if not f:
            full[c] = size if c not in src_factor else size * src_factor[c]
    for c, f in dst_factor.items():
        n = const_int(full[c])
        if n is not None and n % f:
            raise TVMValueError(
                f"layout_transform: axis {c} of size {n} does not divide into blocks of {f}"
            )
    shape = []
    for c, f in dst:
        if f:
            shape.append(f)
        elif c in dst_factor:
            n = const_int(full[c])
            shape.append(
                n // dst_factor[c] if n is not None else te.floordiv(full[c], dst_factor[c])
            )
        else:
            shape.append(full[c])

    def fcompute(*i: Any) -> te.Expr:
        # The primal coordinate of each axis, from the destination index.
        coord: dict[str, Any] = {}
        for (c, f), v in zip(dst, i, strict=True):
            if not f:
                coord[c] = v * dst_factor[c] if c in dst_factor else v
        for (c, f), v in zip(dst, i, strict=True):
            if f:
                coord[c.upper()] = coord[c.upper()] + v
        index = []
        for c, f in src:
            if f:
                index.append(te.floormod(coord[c.upper()], f))
            elif c in src_factor:
                index.append(te.floordiv(coord[c], src_factor[c]))
            else:
                index.append(coord[c])
        return array[index]

    return te.compute(
        shape,
        fcompute,
        name="T_layout_trans",
        tag=tag.INJECTIVE,
        attrs={"src_layout": src_layout, "dst_layout": dst_layout},
    )


def flip(a: Tensor, axis: int = 0) -> Tensor:
    """``a`` reversed along ``axis`` (``np.flip``; TVM's ``flip``/``reverse``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.flip(tvm.placeholder((3, 4), name="A"), 1).op.body
        [A[i0, ((4 - i1) - 1)]]
    """
    check_tensor(a, "a of flip")
    axis = normalize_axis(axis, a.ndim, "flip")

    def fcompute(*i: Any) -> te.Expr:
        index = list(i)
        index[axis] = a.shape[axis] - i[axis] - 1
        return a[index]

    return te.compute(a.shape, fcompute, name="T_reverse", tag=tag.INJECTIVE)


def tile(a: Tensor, reps: Sequence[int]) -> Tensor:
    """``a`` repeated ``reps[d]`` times along each dimension (``np.tile``; ``reps`` longer than
    ``a.ndim`` adds leading dimensions).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.tile(tvm.placeholder((2, 3)), (2, 1, 2)).shape
        (2, 2, 6)
    """
    check_tensor(a, "a of tile")
    single = const_int(reps)
    reps = [single] if single is not None else int_list(reps, "reps of tile")
    if any(r < 1 for r in reps):
        raise TVMValueError(f"reps of tile must be ints >= 1, found {reps}")
    ndim = max(len(reps), a.ndim)
    reps = [1] * (ndim - len(reps)) + reps
    in_shape = [1] * (ndim - a.ndim) + list(a.shape)
    shape = [d * r if r != 1 else d for d, r in zip(in_shape, reps, strict=True)]
    skip = ndim - a.ndim

    def fcompute(*i: Any) -> te.Expr:
        index = []
        for d in range(skip, ndim):
            index.append(te.floormod(i[d], in_shape[d]) if reps[d] != 1 else i[d])
        return a[index]

    return te.compute(shape, fcompute, name="T_tile", tag=tag.INJECTIVE)


def repeat(a: Tensor, repeats: int, axis: int) -> Tensor:
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (``np.repeat``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.repeat(tvm.placeholder((2, 3)), 2, 1).shape
        (2, 6)
    """
    check_tensor(a, "a of repeat")
    repeats = check_int(repeats, "repeats of repeat")
    if repeats < 1:
        raise TVMValueError(f"repeats of repeat must be an int >= 1, found {repeats!r}")
    axis = normalize_axis(axis, a.ndim, "repeat")
    shape = list(a.shape)
    shape[axis] = shape[axis] * repeats

    def fcompute(*i: Any) -> te.Expr:
        index = list(i)
        index[axis] = te.floordiv(i[axis], repeats)
        return a[index]

    return te.compute(shape, fcompute, name="T_repeat", tag=tag.INJECTIVE)
