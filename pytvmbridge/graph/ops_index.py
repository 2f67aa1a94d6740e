"""ATen converters: Indexing, dtype casts and constructed tensors: advanced indexing, gather, index_select, embedding, flip, repeat, arange, full, _to_copy.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported.
"""

from __future__ import annotations
