"""ATen converters: Elementwise mathematics beyond ops.py's table: rounding, log1p/expm1, elu, sign, powers and remainders with tensor operands, logical operators.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported.
"""

from __future__ import annotations
