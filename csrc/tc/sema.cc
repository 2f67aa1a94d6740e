#include "tc/sema.h"

#include <algorithm>
#include <set>

#include "tc/index_type.h"

namespace ptb::tc {

const BuiltinInfo* lookup_builtin(const std::string& name) {
  static const BuiltinInfo kBuiltins[] = {
      {"exp", 1, BuiltinKind::kFloatMath, Intrinsic::kExp, false},
      {"log", 1, BuiltinKind::kFloatMath, Intrinsic::kLog, false},
      {"tanh", 1, BuiltinKind::kFloatMath, Intrinsic::kTanh, false},
      {"sqrt", 1, BuiltinKind::kFloatMath, Intrinsic::kSqrt, false},
      {"rsqrt", 1, BuiltinKind::kFloatMath, Intrinsic::kRsqrt, false},
      {"erf", 1, BuiltinKind::kFloatMath, Intrinsic::kErf, false},
      {"floor", 1, BuiltinKind::kFloatMath, Intrinsic::kFloor, false},
      {"ceil", 1, BuiltinKind::kFloatMath, Intrinsic::kCeil, false},
      {"sigmoid", 1, BuiltinKind::kFloatMath, Intrinsic::kSigmoid, false},
      {"abs", 1, BuiltinKind::kAbs, Intrinsic::kAbs, false},
      {"pow", 2, BuiltinKind::kPow, Intrinsic::kPow, false},
      {"fmax", 2, BuiltinKind::kMinMax, Intrinsic::kAbs, true},
      {"fmin", 2, BuiltinKind::kMinMax, Intrinsic::kAbs, false},
      {"max", 2, BuiltinKind::kMinMax, Intrinsic::kAbs, true},
      {"min", 2, BuiltinKind::kMinMax, Intrinsic::kAbs, false},
      // The rest of the 64 functions TC documents (CUDA's math library), by name.
      {"acos", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"acosh", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"asin", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"asinh", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"atan2", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"atan", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"atanh", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cbrt", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"copysign", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cos", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cosh", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cospi", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cyl_bessel_i0", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"cyl_bessel_i1", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"erfc", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"erfcinv", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"erfcx", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"erfinv", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"exp10", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"exp2", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"expm1", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"fabs", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"fdim", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"fdivide", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"fma", 3, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"fmod", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"hypot", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"j0", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"j1", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"lgamma", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"log10", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"log1p", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"log2", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"logb", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"nextafter", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"norm3d", 3, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"norm4d", 4, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"normcdf", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"normcdfinv", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"rcbrt", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"remainder", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"rhypot", 2, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"rnorm3d", 3, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"rnorm4d", 4, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"round", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"sin", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"sinh", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"sinpi", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"tan", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"tgamma", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"trunc", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"y0", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
      {"y1", 1, BuiltinKind::kLibrary, Intrinsic::kAbs, false},
  };
  for (const BuiltinInfo& b : kBuiltins) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

NameKind DefInfo::kind_of(const StmtInfo& stmt, const std::string& name) const {
  if (stmt.lets.count(name)) return NameKind::kLet;
  if (size_id.count(name)) return NameKind::kSize;
  if (tensor_id.count(name)) return NameKind::kTensor;
  if (lookup_builtin(name)) return NameKind::kBuiltin;
  return NameKind::kIndex;
}

namespace {

struct Extent {
  int64_t size = 1;  // node count with where bindings substituted (saturating)
  int height = 1;
};

class DefChecker {
 public:
  DefChecker(const SourceText& source, const AstDef& def) : src_(source), def_(def) {
    info_.ast = &def;
  }

  DefInfo run() {
    declare_tensors();
    declare_sizes();
    for (size_t s = 0; s < def_.stmts.size(); ++s) check_stmt(static_cast<int>(s));
    for (const TensorInfo& t : info_.tensors) {
      if (!t.is_input && t.first_write < 0) {
        src_.fail(t.param->pos, "output '" + t.name + "' is never written");
      }
    }
    return std::move(info_);
  }

 private:
  [[noreturn]] void fail(SourcePos pos, const std::string& msg) const { src_.fail(pos, msg); }

  void declare_tensors() {
    auto declare = [&](const AstParam& p, bool is_input) {
      if (lookup_builtin(p.name)) {
        fail(p.pos, "'" + p.name + "' is a builtin function and cannot name a tensor");
      }
      if (info_.tensor_id.count(p.name)) {
        fail(p.pos, "'" + p.name + "' is declared twice in the signature of '" + def_.name + "'");
      }
      TensorInfo t;
      t.name = p.name;
      t.is_input = is_input;
      t.param = &p;
      t.rank = (is_input || p.typed) ? static_cast<int>(p.dims.size()) : -1;
      info_.tensor_id[p.name] = static_cast<int>(info_.tensors.size());
      info_.tensors.push_back(t);
    };
    for (const AstParam& p : def_.inputs) declare(p, true);
    for (const AstParam& p : def_.outputs) declare(p, false);
  }

  void declare_sizes() {
    for (const AstParam& p : def_.inputs) {
      for (const AstDim& d : p.dims) {
        if (d.name.empty() || info_.size_id.count(d.name)) continue;
        if (info_.tensor_id.count(d.name)) {
          fail(d.pos, "'" + d.name + "' names both a tensor and a size");
        }
        if (lookup_builtin(d.name)) {
          fail(d.pos, "'" + d.name + "' is a builtin function and cannot name a size");
        }
        info_.size_id[d.name] = static_cast<int>(info_.sizes.size());
        info_.sizes.push_back({d.name, Var::make(tc_index_type(), d.name)});
      }
    }
    // An output's declared sizes are checked against the inferred shape when called, so they
    // must be sizes of the inputs.
    for (const AstParam& p : def_.outputs) {
      for (const AstDim& d : p.dims) {
        if (!d.name.empty() && !info_.size_id.count(d.name)) {
          fail(d.pos, "size '" + d.name + "' of output '" + p.name +
                          "' is not a size of any input; output sizes are inferred");
        }
      }
    }
  }

  void check_stmt(int index) {
    const AstStmt& s = def_.stmts[index];
    stmt_index_ = index;
    info_.stmts.emplace_back();
    StmtInfo& si = info_.stmts.back();
    si_ = &si;
    lets_done_.clear();
    lets_active_.clear();

    auto tid = info_.tensor_id.find(s.tensor);
    if (tid == info_.tensor_id.end()) {
      if (info_.size_id.count(s.tensor))
        fail(s.pos, "cannot assign to the size '" + s.tensor + "'");
      fail(s.pos, "undefined output '" + s.tensor + "': declare it after '->' in the signature");
    }
    TensorInfo& out = info_.tensors[tid->second];
    if (out.is_input) {
      fail(s.pos,
           "cannot assign to input '" + s.tensor + "'; only outputs (after '->') are written");
    }

    // Where clauses first: a binding changes what its name means in the whole statement.
    for (const AstWhere& w : s.wheres) {
      if (w.is_exists) continue;
      if (si.ranges.count(w.name) || si.lets.count(w.name)) {
        fail(w.pos, "'" + w.name + "' appears twice in the where clauses");
      }
      if (info_.size_id.count(w.name)) fail(w.pos, "'" + w.name + "' is a size, not an index");
      if (info_.tensor_id.count(w.name)) fail(w.pos, "'" + w.name + "' is a tensor, not an index");
      if (lookup_builtin(w.name)) fail(w.pos, "'" + w.name + "' is a builtin function");
      (w.is_range ? si.ranges : si.lets)[w.name] = &w;
    }

    std::set<std::string> lhs;
    for (const AstIndex& idx : s.indices) {
      switch (info_.kind_of(si, idx.name)) {
        case NameKind::kSize:
          fail(idx.pos, "'" + idx.name + "' is a size; left-hand side indices must be new names");
        case NameKind::kTensor:
          fail(idx.pos, "'" + idx.name + "' is a tensor; left-hand side indices must be new names");
        case NameKind::kBuiltin:
          fail(idx.pos, "'" + idx.name + "' is a builtin function");
        case NameKind::kLet:
          fail(idx.pos,
               "'" + idx.name + "' is bound by a where clause; it cannot index the left-hand side");
        case NameKind::kIndex:
          break;
      }
      if (!lhs.insert(idx.name).second) {
        fail(idx.pos, "index '" + idx.name + "' appears twice on the left-hand side");
      }
      note_index(idx.name, idx.pos);
    }
    si.num_lhs = s.indices.size();
    int rank = static_cast<int>(s.indices.size());
    if (out.rank >= 0 && out.rank != rank) {
      fail(s.pos, str_cat("wrong number of indices: '", out.name, "' has ", out.rank,
                          " dimension(s) but is written with ", rank, " index(es)"));
    }

    visit(*s.rhs);
    for (const AstWhere& w : s.wheres) {
      if (!w.is_exists) continue;
      const AstExpr& read = *w.value;
      if (read.kind != AstKind::kCall || info_.kind_of(si, read.name) != NameKind::kTensor) {
        fail(read.start, "'where exists' needs a tensor read, such as 'where exists A(i, k)'");
      }
      visit(read);
      si.exists.push_back(&read);
    }

    for (const AstWhere& w : s.wheres) {
      if (w.is_exists) continue;
      if (w.is_range) {
        if (!si.index_id.count(w.name)) {
          fail(w.pos, "'" + w.name + "' is not an index of this statement");
        }
        check_size_expr(*w.lo);
        check_size_expr(*w.hi);
      } else if (!lets_done_.count(w.name)) {
        fail(w.pos, "where binding '" + w.name + "' is never used");
      }
    }
    if (s.op == Tok::kAssign && si.has_reduction()) {
      const std::string& name = si.index_names[si.num_lhs];
      fail(si.index_pos[si.num_lhs],
           "'" + name + "' is not an index of the left-hand side, so it is a reduction index, " +
               "but '=' does not reduce: use +=!, *=!, min=! or max=! (or index the " +
               "left-hand side with '" + name + "')");
    }
    if (out.rank < 0) out.rank = rank;
    if (out.first_write < 0) out.first_write = index;
  }

  void note_index(const std::string& name, SourcePos pos) {
    if (si_->index_id.count(name)) return;
    si_->index_id[name] = static_cast<int>(si_->index_names.size());
    si_->index_names.push_back(name);
    si_->index_pos.push_back(pos);
  }

  // A tensor read here must be an input or an output written by an earlier statement.
  const TensorInfo& readable(const std::string& name, SourcePos pos) {
    const TensorInfo& t = info_.tensors[info_.tensor_id.at(name)];
    if (!t.is_input && (t.first_write < 0 || t.first_write >= stmt_index_)) {
      fail(pos, "output '" + name + "' is read before any statement writes it");
    }
    return t;
  }

  static Extent combine(const std::vector<Extent>& parts) {
    Extent e;
    int h = 0;
    for (const Extent& p : parts) {
      e.size = std::min(e.size + p.size, kMaxExpandedSize + 1);
      h = std::max(h, p.height);
    }
    e.height = h + 1;
    return e;
  }

  Extent visit(const AstExpr& e) {
    // The walk's own depth, checked on the way down: a chain of where bindings, each using the
    // previous one (x1 = x0 + 1, x2 = x1 + 1, ...), recurses once per binding before any height
    // comes back to be checked, and would overflow the stack first.
    struct Depth {
      int& depth;
      explicit Depth(int& d) : depth(++d) {}
      ~Depth() { --depth; }
    } depth(depth_);
    if (depth_ > kMaxExpandedHeight) {
      fail(e.pos, "expression nested too deeply once where bindings are substituted");
    }
    Extent r;
    switch (e.kind) {
      case AstKind::kIntLit:
      case AstKind::kFloatLit:
        break;
      case AstKind::kIdent:
        r = visit_ident(e);
        break;
      case AstKind::kSize:
        check_size_ref(e);
        break;
      case AstKind::kCall:
        r = visit_call(e);
        break;
      default: {
        std::vector<Extent> parts;
        for (const auto& a : e.args) parts.push_back(visit(*a));
        r = combine(parts);
      }
    }
    if (r.height > kMaxExpandedHeight) {
      fail(e.pos, "expression nested too deeply once where bindings are substituted");
    }
    if (r.size > kMaxExpandedSize) {
      fail(e.pos, "expression too large once where bindings are substituted");
    }
    return r;
  }

  Extent visit_ident(const AstExpr& e) {
    switch (info_.kind_of(*si_, e.name)) {
      case NameKind::kLet:
        return expand_let(e);
      case NameKind::kSize:
        return {};
      case NameKind::kTensor: {
        const TensorInfo& t = readable(e.name, e.pos);
        if (t.rank != 0) {
          fail(e.pos, str_cat("wrong number of indices: '", e.name, "' has ", t.rank,
                              " dimension(s) but is used with none"));
        }
        return {};
      }
      case NameKind::kBuiltin:
        fail(e.pos, "'" + e.name + "' is a function: call it as " + e.name + "(...)");
      case NameKind::kIndex:
        note_index(e.name, e.pos);
        return {};
    }
    return {};
  }

  Extent expand_let(const AstExpr& e) {
    auto done = lets_done_.find(e.name);
    if (done != lets_done_.end()) return done->second;
    if (!lets_active_.insert(e.name).second) {
      fail(e.pos, "where binding '" + e.name + "' refers to itself");
    }
    Extent r = visit(*si_->lets.at(e.name)->value);
    lets_active_.erase(e.name);
    lets_done_[e.name] = r;
    return r;
  }

  Extent visit_call(const AstExpr& e) {
    size_t n = e.args.size();
    switch (info_.kind_of(*si_, e.name)) {
      case NameKind::kTensor: {
        const TensorInfo& t = readable(e.name, e.pos);
        if (static_cast<int>(n) != t.rank) {
          fail(e.pos, str_cat("wrong number of indices: '", e.name, "' has ", t.rank,
                              " dimension(s) but is indexed with ", n));
        }
        break;
      }
      case NameKind::kBuiltin: {
        const BuiltinInfo* b = lookup_builtin(e.name);
        if (static_cast<int>(n) != b->arity) {
          fail(e.pos, str_cat(e.name, "() takes ", b->arity, " argument(s), got ", n));
        }
        break;
      }
      case NameKind::kSize:
        fail(e.pos, "'" + e.name + "' is a size, not a tensor or a function");
      case NameKind::kLet:
        fail(e.pos, "'" + e.name + "' is a where binding, not a tensor or a function");
      case NameKind::kIndex:
        fail(e.pos, "undefined tensor or function '" + e.name + "'");
    }
    std::vector<Extent> parts;
    for (const auto& a : e.args) parts.push_back(visit(*a));
    return combine(parts);
  }

  void check_size_ref(const AstExpr& e) {
    if (!info_.tensor_id.count(e.name)) {
      fail(e.pos, "'" + e.name + "' is not a tensor; " + e.name +
                      ".k is the size of dimension k of a tensor");
    }
    const TensorInfo& t = readable(e.name, e.pos);
    if (e.int_value >= t.rank) {
      fail(e.pos, str_cat("'", e.name, "' has ", t.rank, " dimension(s); there is no dimension ",
                          e.int_value));
    }
  }

  // Range bounds may use sizes, constants and + - * / only: they must not depend on indices.
  void check_size_expr(const AstExpr& e) {
    switch (e.kind) {
      case AstKind::kIntLit:
        return;
      case AstKind::kSize:
        check_size_ref(e);
        return;
      case AstKind::kIdent:
        if (info_.size_id.count(e.name)) return;
        if (si_->index_id.count(e.name)) {
          fail(e.pos,
               "range bounds may only use sizes and constants; '" + e.name + "' is an index");
        }
        fail(e.pos, "undefined name '" + e.name +
                        "' in a range bound (range bounds may use sizes and constants)");
      case AstKind::kUnary:
        if (e.op == Tok::kBang) break;
        check_size_expr(*e.args[0]);
        return;
      case AstKind::kBinary:
        if (e.op != Tok::kPlus && e.op != Tok::kMinus && e.op != Tok::kStar &&
            e.op != Tok::kSlash) {
          break;
        }
        check_size_expr(*e.args[0]);
        check_size_expr(*e.args[1]);
        return;
      default:
        break;
    }
    fail(e.pos, "range bounds may only use sizes, integer constants and + - * /");
  }

  const SourceText& src_;
  const AstDef& def_;
  DefInfo info_;
  StmtInfo* si_ = nullptr;
  int stmt_index_ = 0;
  std::map<std::string, Extent> lets_done_;
  std::set<std::string> lets_active_;
  int depth_ = 0;  // how deep visit() is now
};

}  // namespace

DefInfo check_def(const SourceText& source, const AstDef& def) {
  return DefChecker(source, def).run();
}

}  // namespace ptb::tc
