#include "tc/eval.h"

#include <algorithm>

#include "support/error.h"
#include "tc/sym.h"

namespace ptb::tc {

int64_t eval_int(const Expr& e, const SizeEnv& env) {
  PTB_ICHECK(e.defined(), "eval_int of nothing");
  switch (e->kind) {
    case ExprKind::kIntImm:
      return e.as<IntImm>()->value;
    case ExprKind::kVar: {
      auto it = env.find(e.get());
      PTB_ICHECK(it != env.end(), "unbound size variable ", e.as<Var>()->name);
      return it->second;
    }
    case ExprKind::kCast:
      return eval_int(e.as<Cast>()->value, env);
    case ExprKind::kAdd: {
      const auto* n = e.as<Add>();
      return checked_add(eval_int(n->a, env), eval_int(n->b, env));
    }
    case ExprKind::kSub: {
      const auto* n = e.as<Sub>();
      return checked_add(eval_int(n->a, env), checked_neg(eval_int(n->b, env)));
    }
    case ExprKind::kMul: {
      const auto* n = e.as<Mul>();
      return checked_mul(eval_int(n->a, env), eval_int(n->b, env));
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: {
      const auto* d = e.as<FloorDiv>();
      const auto* m = e.as<FloorMod>();
      int64_t a = eval_int(d ? d->a : m->a, env);
      int64_t b = eval_int(d ? d->b : m->b, env);
      if (b == 0) value_error("division by zero in a size expression");
      // floor(a / b) = floor(-a / -b), so a negative divisor reduces to a positive one.
      int64_t q = b > 0 ? floor_div(a, b) : floor_div(checked_neg(a), checked_neg(b));
      return d ? q : checked_add(a, checked_neg(checked_mul(q, b)));
    }
    case ExprKind::kMin: {
      const auto* n = e.as<Min>();
      return std::min(eval_int(n->a, env), eval_int(n->b, env));
    }
    case ExprKind::kMax: {
      const auto* n = e.as<Max>();
      return std::max(eval_int(n->a, env), eval_int(n->b, env));
    }
    default:
      internal_error(__FILE__, __LINE__, "eval_int: unsupported expression node");
  }
}

}  // namespace ptb::tc
