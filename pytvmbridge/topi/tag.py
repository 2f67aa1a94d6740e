"""The tags TOPI operators put on their computes (``op.tag``), TVM's names.

Automatic schedules recognise operators by these: an injective stage (elementwise, broadcast,
layout change, padding) can be inlined into its consumer; a reduction with data reuse
(``conv2d_*``, ``dense``, ``matmul``) gets tiled; the rest keep their structure.

Example:
    >>> from pytvmbridge.topi import tag
    >>> tag.is_injective(tag.BROADCAST), tag.is_injective(tag.PAD), tag.is_injective(tag.DENSE)
    (True, True, False)
"""

from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
PAD = "injective,pad"
# A separable max pool's row buffer (pooling.py): kept stored, computed once per output row.
WINDOW_ROWS = "injective,window_rows"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"
MATMUL = "matmul"
DENSE = "dense"
DENSE_PACK = "dense_pack"
BATCH_MATMUL = "batch_matmul"
CONV2D_NCHW = "conv2d_nchw"
GROUP_CONV2D_NCHW = "group_conv2d_nchw"
DEPTHWISE_CONV2D_NCHW = "depthwise_conv2d_nchw"
CONV2D_NCHWC = "conv2d_NCHWc"
# Winograd convolution (nn/winograd.py): the data transform, the products, the inverse transform.
WINOGRAD_DATA = "winograd_data_transform"
CONV2D_WINOGRAD_NCHWC = "conv2d_winograd_NCHWc"
WINOGRAD_INVERSE = "winograd_inverse_transform"
CONV2D_TRANSPOSE_NCHW = "conv2d_transpose_nchw"
POOL_MAX = "pool_max"
POOL_AVG = "pool_avg"
ADAPTIVE_POOL_AVG = "adaptive_pool_avg"
ADAPTIVE_POOL_MAX = "adaptive_pool_max"
SOFTMAX = "softmax_output"
LOG_SOFTMAX = "log_softmax_output"
NORM = "norm"


def is_elemwise(tag: str) -> bool:
    """True for a one-to-one elementwise stage.

    Example:
        >>> from pytvmbridge.topi import tag
        >>> tag.is_elemwise("elemwise"), tag.is_elemwise("broadcast")
        (True, False)
    """
    return tag == ELEMWISE


def is_broadcast(tag: str) -> bool:
    """True for an elementwise or broadcasting stage.

    Example:
        >>> from pytvmbridge.topi import tag
        >>> tag.is_broadcast("elemwise"), tag.is_broadcast("broadcast"), tag.is_broadcast("pad")
        (True, True, False)
    """
    return tag in (ELEMWISE, BROADCAST)


def is_injective(tag: str) -> bool:
    """True for a stage where each output element reads each input element at most once with no
    reduction (elementwise, broadcast, reshape, transpose, pad...): it can be inlined.

    Example:
        >>> from pytvmbridge.topi import tag
        >>> tag.is_injective("injective"), tag.is_injective("comm_reduce")
        (True, False)
    """
    return is_broadcast(tag) or tag.startswith(INJECTIVE)
