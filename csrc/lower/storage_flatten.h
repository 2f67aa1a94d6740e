// Lowers tensor accesses to flat memory: Provide -> Store, TensorRead -> Load, Realize ->
// Allocate. Argument tensors use the buffers the caller made (with run-time strides);
// intermediates get compact row-major buffers covering their realized region.
#pragma once

#include <map>
#include <utility>

#include "ir/stmt.h"
#include "te/operation.h"

namespace ptb {

using TensorKey = std::pair<const OperationNode*, int>;  // (operation, value_index)
using BufferMap = std::map<TensorKey, Buffer>;

Stmt storage_flatten(const Stmt& s, const BufferMap& arg_buffers);

// The flat element offset of `indices` in `buffer` (int64), from its strides.
Expr flat_index(const Buffer& buffer, const std::vector<Expr>& indices);

// Compact row-major strides (in elements, int64) for `shape`.
std::vector<Expr> compact_strides(const std::vector<Expr>& shape);

}  // namespace ptb
