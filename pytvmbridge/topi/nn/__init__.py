"""Neural-network operators (TVM's ``topi.nn``): convolution, pooling, dense and batched
matrix products, normalisation, softmax, activations and padding.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 3, 8, 8), name="X")
    >>> W = tvm.placeholder((4, 3, 3, 3), name="W")
    >>> Y = topi.nn.relu(topi.nn.conv2d(X, W, 1, 1))
    >>> Y.shape
    (1, 4, 8, 8)
"""

from ..transform import flatten
from .activation import (
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    leaky_relu,
    prelu,
    relu,
    sigmoid,
    silu,
    softplus,
    tanh,
)
from .bias_add import bias_add
from .conv2d import conv2d, conv2d_nchw, depthwise_conv2d_nchw, group_conv2d_nchw
from .conv2d_nchwc import conv2d_NCHWc, pack_nchwc, pack_oihwio, unpack_nchwc
from .conv2d_transpose import conv2d_transpose_nchw
from .dense import batch_matmul, dense, dense_pack, matmul, pack_dense_weight
from .norm import batch_norm, group_norm, layer_norm
from .pad import get_pad_tuple, pad
from .pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    adaptive_pool,
    avg_pool2d,
    global_pool,
    max_pool2d,
    pool,
    pool2d,
)
from .softmax import log_softmax, softmax
from .upsampling import upsample_bilinear2d, upsample_nearest2d
from .winograd import (
    conv2d_winograd_nchw,
    conv2d_winograd_nchwc,
    conv2d_winograd_weight_transform,
    winograd_tile_size,
    winograd_transform_matrices,
)

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_pool",
    "avg_pool2d",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "conv2d",
    "conv2d_NCHWc",
    "conv2d_nchw",
    "conv2d_transpose_nchw",
    "conv2d_winograd_nchw",
    "conv2d_winograd_nchwc",
    "conv2d_winograd_weight_transform",
    "dense",
    "dense_pack",
    "depthwise_conv2d_nchw",
    "elu",
    "flatten",
    "gelu",
    "get_pad_tuple",
    "global_pool",
    "group_conv2d_nchw",
    "group_norm",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "max_pool2d",
    "pack_dense_weight",
    "pack_nchwc",
    "pack_oihwio",
    "pad",
    "pool",
    "pool2d",
    "prelu",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
    "unpack_nchwc",
    "upsample_bilinear2d",
    "upsample_nearest2d",
    "winograd_tile_size",
    "winograd_transform_matrices",
]
