"""ATen converters: Reductions beyond ops.py's sums and means: variance, vector norms, products, any/all, arg-reductions, max/min with indices, cumulative sums.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported.
"""

from __future__ import annotations
