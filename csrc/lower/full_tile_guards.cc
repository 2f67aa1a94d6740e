#include "lower/full_tile_guards.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "lower/value_set.h"

namespace ptb {

namespace {

// A loop `for (var, 0, floordiv(rows, tile))`: var * tile + r < rows for 0 <= r < tile.
struct WholeTiles {
  Expr var;
  Expr rows;
  int64_t tile;
};

class DropFullTileGuards : public IRMutator {
 protected:
  using IRMutator::mutate_node;

  Stmt mutate_node(const For* op, const Stmt& self) override {
    std::optional<WholeTiles> whole = whole_tiles(op);
    if (whole) whole_.push_back(*whole);
    // The constant loops inside, in scope while their bodies are visited (a row of the tile).
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    std::optional<LoopRange> shadowed;
    bool ranged = min && extent && *extent >= 1;
    if (ranged) {
      auto it = ranges_.find(op->var.get());
      if (it != ranges_.end()) shadowed = it->second;
      ranges_[op->var.get()] = {op->var, *min, *extent};
    }
    Stmt out = IRMutator::mutate_node(op, self);
    if (ranged) {
      if (shadowed) {
        ranges_[op->var.get()] = *shadowed;
      } else {
        ranges_.erase(op->var.get());
      }
    }
    if (whole) whole_.pop_back();
    return out;
  }

  Stmt mutate_node(const IfThenElse* op, const Stmt& self) override {
    Stmt out = IRMutator::mutate_node(op, self);
    const auto* branch = out.as<IfThenElse>();
    if (branch && !branch->else_case.defined() && is_const_int(branch->condition, 1)) {
      return branch->then_case;
    }
    return out;
  }

  Expr mutate_node(const And* op, const Expr& self) override {
    Expr out = IRMutator::mutate_node(op, self);
    const auto* both = out.as<And>();
    if (!both) return out;
    if (is_const_int(both->a, 1)) return both->b;
    if (is_const_int(both->b, 1)) return both->a;
    return out;
  }

  Expr mutate_node(const LT* op, const Expr& self) override {
    if (!whole_.empty() && implied(op->a, op->b)) {
      return make_const(DataType::Bool(), int64_t{1});
    }
    return IRMutator::mutate_node(op, self);
  }

 private:
  static std::optional<WholeTiles> whole_tiles(const For* op) {
    if (!is_const_int(op->min, 0)) return std::nullopt;
    const auto* div = op->extent.as<FloorDiv>();
    if (!div) return std::nullopt;
    auto tile = as_const_int(div->b);
    if (!tile || *tile < 1) return std::nullopt;
    return WholeTiles{op->var, div->a, *tile};
  }

  // Whether `a < b` holds in an enclosing loop over whole tiles: b is that loop's row count and
  // a - var * tile ranges, over the constant loops around the comparison, below the tile.
  bool implied(const Expr& a, const Expr& b) const {
    if (!a.dtype().is_scalar() || !a.dtype().is_integer()) return false;
    for (const WholeTiles& w : whole_) {
      if (!bounded_by(w.rows, b) || a.dtype() != w.var.dtype()) continue;
      Expr rest = simplify(Sub::make(a, Mul::make(w.var, make_const(a.dtype(), w.tile))));
      auto values = value_set(rest, ranges_);
      if (values && values->lo >= 0 && values->hi < w.tile) return true;
    }
    return false;
  }

  // Whether rows <= b: b itself, or a minimum with b among its terms (a region that
  // bound inference stopped at the end of its domain, min(region, extent)).
  static bool bounded_by(const Expr& rows, const Expr& b) {
    if (rows.same_as(b)) return true;
    const auto* m = rows.as<Min>();
    return m && (bounded_by(m->a, b) || bounded_by(m->b, b));
  }

  std::vector<WholeTiles> whole_;
  LoopRanges ranges_;
};

}  // namespace

Stmt drop_full_tile_guards(const Stmt& s) { return DropFullTileGuards().mutate(s); }

}  // namespace ptb
