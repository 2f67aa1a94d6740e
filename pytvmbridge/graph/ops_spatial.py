"""ATen converters: Spatial operators beyond ops.py's: 1-D and transposed convolutions, group norm, upsampling, adaptive max pooling, constant padding.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported.
"""

from __future__ import annotations
