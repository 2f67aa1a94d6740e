#include "tc/to_te.h"

#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "ir/math.h"
#include "ir/op.h"
#include "tc/index_type.h"
#include "tc/range_inference.h"
#include "tc/sym.h"
#include "tc/typing.h"

namespace ptb::tc {

namespace {

// What is known about a TC tensor while statements are translated in order.
struct TensorState {
  const TensorInfo* info = nullptr;
  Tensor current;             // the placeholder, or the newest stage written
  std::vector<SymInt> shape;  // of `current`
  TypeClass type;             // weak for a temporary filled with constants only
  bool written = false;       // inputs count as written
  int writes_left = 0;        // statements still to write it (the last one names the stage)
};

// One read in a statement: for range inference and the bounds checks.
struct ReadRecord {
  const TensorState* tensor;
  Access access;
  std::vector<SourcePos> index_pos;
};

// Whether `v` is positive for every value of the sizes: a positive constant plus sizes (Vars,
// never negative) with positive coefficients. Opaque atoms (min, floordiv) are not reasoned about.
bool provably_positive(const SymInt& v) {
  if (v.constant() < 1) return false;
  for (const auto& [atom, coef] : v.terms()) {
    if (!atom.as<Var>() || coef < 0) return false;
  }
  return true;
}

ReduceKind reduce_kind(Tok op) {
  switch (op) {
    case Tok::kStarEq:
      return ReduceKind::kProd;
    case Tok::kMinEq:
      return ReduceKind::kMin;
    case Tok::kMaxEq:
      return ReduceKind::kMax;
    default:
      return ReduceKind::kSum;
  }
}

const char* assign_text(const AstStmt& s) {
  switch (s.op) {
    case Tok::kPlusEq:
      return s.bang ? "+=!" : "+=";
    case Tok::kStarEq:
      return s.bang ? "*=!" : "*=";
    case Tok::kMinEq:
      return s.bang ? "min=!" : "min=";
    case Tok::kMaxEq:
      return s.bang ? "max=!" : "max=";
    default:
      return "=";
  }
}

bool literal_fits(int64_t v, DataType t) {
  if (t.is_float()) return true;
  if (t.is_bool()) return v == 0 || v == 1;
  int bits = t.bits();
  if (t.is_int())
    return bits >= 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
  return v >= 0 && (bits >= 64 || v < (int64_t{1} << bits));
}

std::string param_text(const AstParam& p) {
  std::string s;
  if (p.typed) {
    s = p.dtype.str();
    if (!p.dims.empty()) {
      s += "(";
      for (size_t d = 0; d < p.dims.size(); ++d) {
        s += (d ? "," : "") +
             (p.dims[d].name.empty() ? std::to_string(p.dims[d].value) : p.dims[d].name);
      }
      s += ")";
    }
    s += " ";
  }
  return s + p.name;
}

class Translator {
 public:
  Translator(const SourceText& source, const DefInfo& def) : src_(source), def_(def) {}

  TcFunction run() {
    const AstDef& ast = *def_.ast;
    fn_.name = ast.name;
    fn_.sizes = def_.sizes;
    fn_.signature = ast.name + "(";
    for (size_t i = 0; i < ast.inputs.size(); ++i) {
      fn_.signature += (i ? ", " : "") + param_text(ast.inputs[i]);
    }
    fn_.signature += ") -> (";
    for (size_t i = 0; i < ast.outputs.size(); ++i) {
      fn_.signature += (i ? ", " : "") + param_text(ast.outputs[i]);
    }
    fn_.signature += ")";

    for (const TensorInfo& t : def_.tensors) used_names_.insert(t.name);
    for (const SizeInfo& s : def_.sizes) used_names_.insert(s.name);
    tensors_.resize(def_.tensors.size());
    for (size_t i = 0; i < def_.tensors.size(); ++i) {
      const TensorInfo& info = def_.tensors[i];
      TensorState& t = tensors_[i];
      t.info = &info;
      if (info.is_input) {
        try {
          declare_input(t);
        } catch (const UserError& e) {
          src_.fail(info.param->pos, e.what());
        }
      }
      if (!info.is_input && info.param->typed) t.type = TypeClass::strong(info.param->dtype);
    }
    for (const AstStmt& s : ast.stmts) tensors_[def_.tensor_id.at(s.tensor)].writes_left++;

    for (size_t s = 0; s < ast.stmts.size(); ++s) {
      try {
        translate(static_cast<int>(s));
      } catch (const TCError&) {
        throw;
      } catch (const UserError& e) {
        // A rule of the te layer this statement broke; point at the statement.
        src_.fail(ast.stmts[s].op_pos, e.what());
      }
    }

    for (const TensorState& t : tensors_) {
      const AstParam& p = *t.info->param;
      if (t.info->is_input) continue;
      fn_.output_names.push_back(t.info->name);
      fn_.outputs.push_back(t.current);
      std::vector<std::pair<int, int64_t>> declared;
      if (p.typed) {
        for (const AstDim& d : p.dims) {
          declared.push_back({d.name.empty() ? -1 : def_.size_id.at(d.name), d.value});
        }
      }
      fn_.output_declared.push_back(std::move(declared));
    }
    return std::move(fn_);
  }

 private:
  [[noreturn]] void fail(SourcePos pos, const std::string& msg) const { src_.fail(pos, msg); }

  void declare_input(TensorState& t) {
    const AstParam& p = *t.info->param;
    std::vector<Expr> shape;
    std::vector<int> ids;
    for (const AstDim& d : p.dims) {
      if (d.name.empty()) {
        shape.push_back(IntImm::make(tc_index_type(), d.value));
        t.shape.push_back(SymInt(d.value));
        ids.push_back(-1);
      } else {
        int id = def_.size_id.at(d.name);
        shape.push_back(def_.sizes[id].var);
        t.shape.push_back(SymInt::atom(def_.sizes[id].var));
        ids.push_back(id);
      }
    }
    t.current = placeholder(shape, p.dtype, p.name);
    t.type = TypeClass::strong(p.dtype);
    t.written = true;
    fn_.inputs.push_back(t.current);
    fn_.input_names.push_back(p.name);
    fn_.input_size_ids.push_back(std::move(ids));
  }

  std::string unique_name(const std::string& base) {
    std::string name = base;
    for (int k = 1; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_names_.insert(name);
    return name;
  }

  TensorState& tensor(const std::string& name) { return tensors_[def_.tensor_id.at(name)]; }

  // ---- index expressions ------------------------------------------------------------------

  // Tensor indices (and range bounds) must be affine in the index variables with constant
  // coefficients: that is what range inference and the bounds checks reason about.
  IndexForm index_form(const AstExpr& e) {
    IndexForm f;
    switch (e.kind) {
      case AstKind::kIntLit:
        f.offset = SymInt(e.int_value);
        return f;
      case AstKind::kSize:
        f.offset = tensor(e.name).shape.at(e.int_value);
        return f;
      case AstKind::kIdent:
        switch (def_.kind_of(*si_, e.name)) {
          case NameKind::kLet:
            return index_form(*si_->lets.at(e.name)->value);
          case NameKind::kSize:
            f.offset = SymInt::atom(def_.sizes[def_.size_id.at(e.name)].var);
            return f;
          case NameKind::kIndex:
            f.add_term(si_->index_id.at(e.name), 1);
            return f;
          default:
            fail(e.pos, "a tensor value cannot be used as a tensor index");
        }
      case AstKind::kUnary:
        if (e.op == Tok::kBang) break;
        f = index_form(*e.args[0]);
        return e.op == Tok::kMinus ? scaled(f, -1) : f;
      case AstKind::kBinary: {
        if (e.op != Tok::kPlus && e.op != Tok::kMinus && e.op != Tok::kStar &&
            e.op != Tok::kSlash) {
          fail(e.pos, "comparisons and logic cannot appear in a tensor index");
        }
        IndexForm a = index_form(*e.args[0]);
        IndexForm b = index_form(*e.args[1]);
        bool a_const = a.terms.empty() && a.offset.is_const();
        bool b_const = b.terms.empty() && b.offset.is_const();
        switch (e.op) {
          case Tok::kPlus:
          case Tok::kMinus: {
            if (e.op == Tok::kMinus) b = scaled(b, -1);
            a.offset = a.offset + b.offset;
            for (const auto& [v, c] : b.terms) a.add_term(v, c);
            return a;
          }
          case Tok::kStar:
            if (a_const) return scaled(b, a.offset.constant());
            if (b_const) return scaled(a, b.offset.constant());
            if (a.terms.empty() && b.terms.empty()) {
              f.offset = SymInt::mul(a.offset, b.offset);
              return f;
            }
            fail(e.pos,
                 "index variables may only be multiplied by integer constants in a tensor "
                 "index (like 2*h + kh)");
          default: {
            if (!b_const) fail(e.pos, "a tensor index may only be divided by an integer constant");
            int64_t c = b.offset.constant();
            if (c <= 0) fail(e.pos, "a tensor index may only be divided by a positive constant");
            for (auto& [v, k] : a.terms) {
              if (k % c != 0) {
                fail(e.pos,
                     "an index variable in a tensor index must divide exactly (2*i/2 is "
                     "fine, i/2 is not supported)");
              }
              k /= c;
            }
            a.offset = a.offset.floordiv(c);
            return a;
          }
        }
      }
      case AstKind::kFloatLit:
        fail(e.pos, "tensor indices must be integers, not floats");
      default:
        break;
    }
    fail(e.pos,
         "a tensor index must be an affine expression of index variables, sizes and "
         "integer constants (like 2*h + kh)");
  }

  static IndexForm scaled(IndexForm f, int64_t c) {
    if (c == 0) return IndexForm();  // no zero coefficients: each term's variable really occurs
    f.offset = f.offset * c;
    for (auto& t : f.terms) t.second = checked_mul(t.second, c);
    return f;
  }

  Expr index_expr(const IndexForm& f) const {
    Expr e;
    for (const auto& [v, c] : f.terms) {
      Expr term = idx_mul(SymInt(c).to_expr(), var_values_[v]);
      e = e.defined() ? idx_add(e, term) : term;
    }
    Expr off = f.offset.to_expr();
    return e.defined() ? idx_add(e, off) : off;
  }

  // Whether `e` reads a tensor value (through where bindings too): as a tensor index, it makes
  // a gather (TC's `O(i) = T(I(i))`).
  bool reads_tensor(const AstExpr& e) const {
    switch (e.kind) {
      case AstKind::kIdent: {
        NameKind k = def_.kind_of(*si_, e.name);
        if (k == NameKind::kLet) return reads_tensor(*si_->lets.at(e.name)->value);
        return k == NameKind::kTensor;
      }
      case AstKind::kCall:
        if (def_.kind_of(*si_, e.name) == NameKind::kTensor) return true;
        break;
      default:
        break;
    }
    for (const auto& a : e.args) {
      if (reads_tensor(*a)) return true;
    }
    return false;
  }

  // A gathered index: the integer value of `e`, clamped into [0, size - 1]. Clamping costs a
  // min and a max per read and keeps an out-of-range index from reading outside the tensor
  // (embedding tables are commonly indexed with ids that are assumed valid). A size of 0 is
  // refused at call time (add_bounds_checks), so the clamped range is never empty.
  Expr gathered_index(const AstExpr& e, const SymInt& size) {
    TypeClass c = classify(e);
    if (c.is_bool() || c.weak == Weak::kFloat || (!c.is_weak() && !c.dtype.is_integer())) {
      fail(e.start, "a tensor index read from a tensor must be an integer, found " + c.str());
    }
    // Clamped in 64 bits, so a wide id cannot wrap into range first.
    const DataType source = c.is_weak() ? tc_index_type() : c.dtype;
    Expr raw = lower(e, source);
    Expr last = idx_sub(size.to_expr(), IntImm::make(tc_index_type(), 1));
    if (source.is_uint() && source.bits() == 64) {
      // uint64 ids of 2**63 and more would be negative in int64: clamped in uint64 (no lower
      // bound to apply), then narrowed
      return cast(tc_index_type(), Min::make(raw, cast(source, last)));
    }
    const DataType wide = DataType::Int(64);
    Expr v = cast(wide, raw);
    Expr hi = cast(wide, last);
    return cast(tc_index_type(), Max::make(Min::make(v, hi), make_zero(wide)));
  }

  void collect_reads(const AstExpr& e, std::vector<ReadRecord>* out) {
    if (e.kind == AstKind::kIdent && def_.kind_of(*si_, e.name) == NameKind::kLet) {
      return collect_reads(*si_->lets.at(e.name)->value, out);
    }
    if (e.kind == AstKind::kCall && def_.kind_of(*si_, e.name) == NameKind::kTensor) {
      ReadRecord r;
      r.tensor = &tensor(e.name);
      r.access.shape = r.tensor->shape;
      for (const auto& a : e.args) {
        if (reads_tensor(*a)) {
          IndexForm gathered;
          gathered.gathered = true;
          r.access.indices.push_back(gathered);
          collect_reads(*a, out);  // the index tensor's own reads constrain the variables
        } else {
          r.access.indices.push_back(index_form(*a));
        }
        r.index_pos.push_back(a->start);
      }
      out->push_back(std::move(r));
      return;
    }
    for (const auto& a : e.args) collect_reads(*a, out);
  }

  // ---- types ------------------------------------------------------------------------------

  TypeClass join(const TypeClass& a, const TypeClass& b, SourcePos pos) const {
    std::string why;
    std::optional<TypeClass> j = join_types(a, b, &why);
    if (!j) fail(pos, why);
    return *j;
  }

  TypeClass classify(const AstExpr& e) {
    auto memo = class_memo_.find(&e);
    if (memo != class_memo_.end()) return memo->second;
    TypeClass c = classify_uncached(e);
    class_memo_[&e] = c;
    return c;
  }

  TypeClass classify_uncached(const AstExpr& e) {
    switch (e.kind) {
      case AstKind::kIntLit:
      case AstKind::kSize:
        return TypeClass::weak_int();
      case AstKind::kFloatLit:
        return TypeClass::weak_float();
      case AstKind::kIdent:
        switch (def_.kind_of(*si_, e.name)) {
          case NameKind::kLet:
            return classify(*si_->lets.at(e.name)->value);
          case NameKind::kTensor:
            return tensor(e.name).type;
          default:
            return TypeClass::weak_int();
        }
      case AstKind::kCall: {
        if (def_.kind_of(*si_, e.name) == NameKind::kTensor) return tensor(e.name).type;
        const BuiltinInfo& b = *lookup_builtin(e.name);
        TypeClass c = classify(*e.args[0]);
        for (size_t i = 1; i < e.args.size(); ++i) c = join(c, classify(*e.args[i]), e.pos);
        if (c.is_bool()) fail(e.pos, e.name + "() of a bool value");
        if (b.kind == BuiltinKind::kFloatMath || b.kind == BuiltinKind::kPow ||
            b.kind == BuiltinKind::kLibrary) {
          if (!c.is_weak() && !c.dtype.is_float()) {
            fail(e.pos, str_cat(e.name, "() needs a float argument, found ", c.dtype.str(),
                                "; convert it with float32(...)"));
          }
          if (c.is_weak()) return TypeClass::weak_float();
        }
        return c;
      }
      case AstKind::kUnary: {
        TypeClass c = classify(*e.args[0]);
        if (e.op == Tok::kBang) {
          if (!c.is_bool())
            fail(e.pos, "'!' needs a bool operand (a comparison), found " + c.str());
          return c;
        }
        if (c.is_bool()) fail(e.pos, "arithmetic on a bool value");
        return c;
      }
      case AstKind::kBinary: {
        TypeClass a = classify(*e.args[0]);
        TypeClass b = classify(*e.args[1]);
        switch (e.op) {
          case Tok::kAndAnd:
          case Tok::kOrOr:
            if (!a.is_bool() || !b.is_bool()) {
              fail(e.pos, "the operands of && and || must be bool (comparisons), found " +
                              (a.is_bool() ? b : a).str());
            }
            return a;
          case Tok::kEq:
          case Tok::kNe:
          case Tok::kLt:
          case Tok::kLe:
          case Tok::kGt:
          case Tok::kGe:
            join(a, b, e.pos);
            return TypeClass::strong(DataType::Bool());
          default: {
            TypeClass j = join(a, b, e.pos);
            if (j.is_bool()) fail(e.pos, "arithmetic on bool values");
            return j;
          }
        }
      }
      case AstKind::kTernary: {
        TypeClass c = classify(*e.args[0]);
        if (!c.is_bool()) {
          fail(e.args[0]->pos, "the condition of ?: must be bool (a comparison), found " + c.str());
        }
        return join(classify(*e.args[1]), classify(*e.args[2]), e.pos);
      }
      case AstKind::kCast:
        classify(*e.args[0]);
        return TypeClass::strong(e.dtype);
    }
    return TypeClass::weak_int();
  }

  // ---- values -----------------------------------------------------------------------------

  Expr read(const TensorState& t, std::vector<Expr> indices, DataType target) const {
    Expr r = t.current(std::move(indices));
    return r.dtype() == target ? r : cast(target, r);
  }

  // `e` as an expression of dtype `target` (bool for conditions); classify(e) allows it.
  Expr lower(const AstExpr& e, DataType target) {
    switch (e.kind) {
      case AstKind::kIntLit:
        return literal(e, e.int_value, target);
      case AstKind::kFloatLit:
        if (!target.is_float()) fail(e.pos, "a float constant cannot be used as " + target.str());
        return FloatImm::make(target, e.float_value);
      case AstKind::kSize:
        return cast(target, tensor(e.name).shape.at(e.int_value).to_expr());
      case AstKind::kIdent:
        switch (def_.kind_of(*si_, e.name)) {
          case NameKind::kLet:
            return lower(*si_->lets.at(e.name)->value, target);
          case NameKind::kTensor:
            return read(tensor(e.name), {}, target);
          case NameKind::kSize:
            return cast(target, def_.sizes[def_.size_id.at(e.name)].var);
          default:
            return cast(target, var_values_[si_->index_id.at(e.name)]);
        }
      case AstKind::kCall:
        return lower_call(e, target);
      case AstKind::kUnary: {
        if (e.op == Tok::kBang) return Not::make(lower(*e.args[0], target));
        if (e.op == Tok::kPlus) return lower(*e.args[0], target);
        if (e.args[0]->kind == AstKind::kIntLit) return literal(e, -e.args[0]->int_value, target);
        Expr x = lower(*e.args[0], target);
        // x * -1 rather than 0 - x keeps the sign of a float zero, as C's -x does.
        return target.is_float() ? Mul::make(x, make_const(target, int64_t{-1}))
                                 : Sub::make(make_zero(target), x);
      }
      case AstKind::kBinary:
        return lower_binary(e, target);
      case AstKind::kTernary:
        return Select::make(lower(*e.args[0], DataType::Bool()), lower(*e.args[1], target),
                            lower(*e.args[2], target));
      case AstKind::kCast: {
        TypeClass c = classify(*e.args[0]);
        DataType inner = c.dtype;
        if (c.weak == Weak::kInt && !e.dtype.is_bool()) inner = e.dtype;
        if (c.weak == Weak::kFloat && e.dtype.is_float()) inner = e.dtype;
        Expr v = lower(*e.args[0], inner);
        if (e.dtype.is_bool() && !v.dtype().is_bool()) return NE::make(v, make_zero(v.dtype()));
        return cast(e.dtype, v);
      }
    }
    fail(e.pos, "unsupported expression");
  }

  Expr literal(const AstExpr& e, int64_t v, DataType target) const {
    if (!literal_fits(v, target)) {
      fail(e.pos, str_cat("the constant ", v, " does not fit ", target.str()));
    }
    return make_const(target, v);
  }

  Expr lower_call(const AstExpr& e, DataType target) {
    if (def_.kind_of(*si_, e.name) == NameKind::kTensor) {
      const TensorState& t = tensor(e.name);
      std::vector<Expr> idx;
      for (size_t d = 0; d < e.args.size(); ++d) {
        const AstExpr& a = *e.args[d];
        idx.push_back(reads_tensor(a) ? gathered_index(a, t.shape.at(d))
                                      : index_expr(index_form(a)));
      }
      return read(t, std::move(idx), target);
    }
    const BuiltinInfo& b = *lookup_builtin(e.name);
    std::vector<Expr> args;
    for (const auto& a : e.args) args.push_back(lower(*a, target));
    if (b.kind == BuiltinKind::kMinMax) {
      Expr picked = b.is_max ? Max::make(args[0], args[1]) : Min::make(args[0], args[1]);
      const bool same = args[0].dtype() == picked.dtype() && args[1].dtype() == picked.dtype();
      if (b.name[0] == 'f' && picked.dtype().is_float() && same) {
        // fmax/fmin are C's (CUDA's, np.fmax): a NaN operand is ignored, the other returned;
        // max/min propagate it as torch.maximum does.
        Expr a_nan = Call::make(Intrinsic::kIsNan, {args[0]});
        Expr b_nan = Call::make(Intrinsic::kIsNan, {args[1]});
        picked = Select::make(a_nan, args[1], Select::make(b_nan, args[0], picked));
      }
      return picked;
    }
    if (b.kind == BuiltinKind::kLibrary) {
      // TC's round is CUDA's (and C's): halves away from zero; te.round rounds them to even.
      std::string name = b.name == std::string("round") ? "round_half_away" : b.name;
      return math_function(name, std::move(args));
    }
    return Call::make(b.intrinsic, std::move(args));
  }

  Expr lower_binary(const AstExpr& e, DataType target) {
    switch (e.op) {
      case Tok::kAndAnd:
        return And::make(lower(*e.args[0], target), lower(*e.args[1], target));
      case Tok::kOrOr:
        return Or::make(lower(*e.args[0], target), lower(*e.args[1], target));
      case Tok::kEq:
      case Tok::kNe:
      case Tok::kLt:
      case Tok::kLe:
      case Tok::kGt:
      case Tok::kGe: {
        DataType t = join(classify(*e.args[0]), classify(*e.args[1]), e.pos).dtype;
        Expr a = lower(*e.args[0], t), b = lower(*e.args[1], t);
        switch (e.op) {
          case Tok::kEq:
            return EQ::make(a, b);
          case Tok::kNe:
            return NE::make(a, b);
          case Tok::kLt:
            return LT::make(a, b);
          case Tok::kLe:
            return LE::make(a, b);
          case Tok::kGt:
            return GT::make(a, b);
          default:
            return GE::make(a, b);
        }
      }
      default:
        break;
    }
    Expr a = lower(*e.args[0], target), b = lower(*e.args[1], target);
    switch (e.op) {
      case Tok::kPlus:
        return Add::make(a, b);
      case Tok::kMinus:
        return Sub::make(a, b);
      case Tok::kStar:
        return Mul::make(a, b);
      default:
        return target.is_float() ? Div::make(a, b) : int_div(e, a, b);
    }
  }

  // Integer division rounds down, as Halide's (TC's) does. A divisor of 0 gives 0 and -1 gives
  // -a rather than the hardware trap a plain division would raise on x86.
  Expr int_div(const AstExpr& e, Expr a, Expr b) const {
    DataType t = a.dtype();
    if (auto c = as_const_int(b)) {
      if (*c == 0) fail(e.pos, "integer division by zero");
      if (*c != -1 || t.is_uint()) return floordiv(a, b);
    }
    Expr zero = make_zero(t);
    Expr is_zero = EQ::make(b, zero);
    if (t.is_uint())
      return Select::make(is_zero, zero, floordiv(a, Select::make(is_zero, make_one(t), b)));
    Expr minus_one = make_const(t, int64_t{-1});
    Expr is_minus_one = EQ::make(b, minus_one);
    Expr safe = Select::make(Or::make(is_zero, is_minus_one), make_one(t), b);
    return Select::make(is_zero, zero,
                        Select::make(is_minus_one, Sub::make(zero, a), floordiv(a, safe)));
  }

  // ---- statements -------------------------------------------------------------------------

  void translate(int s) {
    const AstStmt& st = def_.ast->stmts[s];
    const StmtInfo& si = def_.stmts[s];
    si_ = &si;
    class_memo_.clear();
    TensorState& out = tensor(st.tensor);
    const size_t nvars = si.index_names.size();
    const size_t nlhs = si.num_lhs;
    const bool has_prev = out.written;

    // Ranges: where clauses first, then inference from the reads (and, for a tensor written
    // before, from its shape: the statement updates that tensor in place).
    std::vector<std::optional<VarRange>> ranges(nvars);
    for (const auto& [name, w] : si.ranges) {
      ranges[si.index_id.at(name)] = VarRange{index_form(*w->lo).offset, index_form(*w->hi).offset};
    }
    std::vector<ReadRecord> reads;
    collect_reads(*st.rhs, &reads);
    std::vector<Access> accesses;
    for (const ReadRecord& r : reads) accesses.push_back(r.access);
    // `where exists T(...)`: constrains the ranges like a read, but nothing is read.
    std::vector<ReadRecord> exists_reads;
    for (const AstExpr* e : si.exists) collect_reads(*e, &exists_reads);
    for (const ReadRecord& r : exists_reads) accesses.push_back(r.access);
    if (has_prev) {
      Access self;
      self.shape = out.shape;
      for (size_t d = 0; d < nlhs; ++d) {
        IndexForm f;
        f.add_term(static_cast<int>(d), 1);
        self.indices.push_back(f);
      }
      accesses.push_back(std::move(self));
    }
    infer_ranges(accesses, &ranges);
    for (size_t v = 0; v < nvars; ++v) {
      if (!ranges[v]) {
        const std::string& n = si.index_names[v];
        fail(si.index_pos[v], "cannot infer the range of index '" + n +
                                  "'; add a where clause such as 'where " + n + " in 0:N'");
      }
    }

    check_written_ranges(si, out, ranges, has_prev);
    // Output indices start at 0; the shape is set by the first write.
    std::vector<SymInt> shape;
    for (size_t d = 0; d < nlhs; ++d) {
      VarRange& r = *ranges[d];
      if (!SymInt(0).provably_le(r.lo)) r.lo = SymInt::max(r.lo, 0);
      if (has_prev) {
        r.hi = SymInt::min(r.hi, out.shape[d]);
        shape.push_back(out.shape[d]);
      } else {
        shape.push_back(r.hi);
      }
    }
    add_bounds_checks(reads, ranges);

    // Types: the right-hand side's, joined with the tensor's own when it has one.
    TypeClass cls = classify(*st.rhs);
    if (has_prev || out.info->param->typed) {
      std::string why;
      std::optional<TypeClass> j = join_types(out.type, cls, &why);
      if (!j) {
        std::string held =
            out.type.is_weak() ? out.type.dtype.str() + " (from constants)" : out.type.dtype.str();
        fail(st.op_pos, str_cat("type mismatch: '", out.info->name, "' is ", held,
                                " but the right-hand side is ", cls.str()));
      }
      cls = *j;
    }
    const bool reduces = st.op != Tok::kAssign;
    if (reduces && cls.is_bool()) {
      fail(st.op_pos, std::string("cannot reduce bool values with ") + assign_text(st));
    }
    const DataType dtype = cls.dtype;
    const ReduceKind kind = reduce_kind(st.op);

    // Stages.
    out.writes_left--;
    std::string final_name = out.writes_left == 0 ? out.info->name : unique_name(out.info->name);
    std::vector<std::string> axis_names(si.index_names.begin(), si.index_names.begin() + nlhs);
    auto prev_at = [&](const std::vector<Expr>& vars) { return read(out, vars, dtype); };
    auto guard = [&](const std::vector<Expr>& vars) {
      std::vector<Expr> conds;
      for (size_t d = 0; d < nlhs; ++d) {
        const VarRange& r = *ranges[d];
        if (!r.lo.provably_le(0)) conds.push_back(GE::make(vars[d], r.lo.to_expr()));
        if (!shape[d].provably_le(r.hi)) conds.push_back(LT::make(vars[d], r.hi.to_expr()));
      }
      return conds.empty() ? Expr() : all_of(conds);
    };
    // Outside the statement's ranges: the previous value, or 0 on a first write.
    auto outside = [&](const std::vector<Expr>& vars) {
      return has_prev ? prev_at(vars) : make_zero(dtype);
    };
    auto if_then_else = [](Expr c, Expr a, Expr b) {
      return Call::make(Intrinsic::kIfThenElse, {std::move(c), std::move(a), std::move(b)});
    };
    const bool accumulate = reduces && !st.bang && has_prev;

    Tensor result;
    if (!si.has_reduction()) {
      result = make_stage(final_name, shape, axis_names, [&](const std::vector<Expr>& vars) {
        bind_lhs(vars);
        Expr v = lower(*st.rhs, dtype);
        if (accumulate) v = reduce_combine(kind, prev_at(vars), v);
        Expr g = guard(vars);
        return g.defined() ? if_then_else(g, v, outside(vars)) : v;
      });
    } else {
      auto reduction = [&](const std::vector<Expr>& vars, bool guarded) {
        bind_lhs(vars);
        std::vector<IterVar> raxes;
        for (size_t v = nlhs; v < nvars; ++v) {
          const VarRange& r = *ranges[v];
          raxes.push_back(make_iter_var(
              Range::from_min_extent(IntImm::make(tc_index_type(), 0), r.extent().to_expr()),
              si.index_names[v], IterKind::kReduce));
          // Reduce axes run from 0: the variable of the source is the axis plus the range's min.
          var_values_[v] = idx_add(raxes.back()->var, r.lo.to_expr());
        }
        Expr src = lower(*st.rhs, dtype);
        Expr g = guarded ? guard(vars) : Expr();
        if (g.defined()) src = if_then_else(g, src, reduce_identity(kind, dtype));
        return Reduce::make(kind, src, raxes, Expr());
      };
      bool guarded = false;
      for (size_t d = 0; d < nlhs; ++d) {
        guarded = guarded || !ranges[d]->lo.provably_le(0) || !shape[d].provably_le(ranges[d]->hi);
      }
      if (!accumulate && !guarded) {
        result = make_stage(final_name, shape, axis_names,
                            [&](const std::vector<Expr>& vars) { return reduction(vars, false); });
      } else {
        // A reduction must be a whole stage, so combining it with earlier values (or keeping
        // them outside the statement's ranges) takes a second one.
        Tensor red =
            make_stage(unique_name(out.info->name + "_red"), shape, axis_names,
                       [&](const std::vector<Expr>& vars) { return reduction(vars, true); });
        result = make_stage(final_name, shape, axis_names, [&](const std::vector<Expr>& vars) {
          Expr v = red(vars);
          if (accumulate) v = reduce_combine(kind, prev_at(vars), v);
          Expr g = guard(vars);
          return g.defined() ? if_then_else(g, v, outside(vars)) : v;
        });
      }
    }
    out.current = result;
    out.shape = shape;
    out.type = out.info->param->typed ? TypeClass::strong(out.info->param->dtype) : cls;
    out.written = true;
  }

  void bind_lhs(const std::vector<Expr>& vars) {
    var_values_.assign(si_->index_names.size(), Expr());
    for (size_t d = 0; d < vars.size(); ++d) var_values_[d] = vars[d];
  }

  template <typename F>
  Tensor make_stage(const std::string& name, const std::vector<SymInt>& shape,
                    const std::vector<std::string>& axis_names, F body) {
    std::vector<Expr> dims;
    std::vector<IterVar> axes;
    std::vector<Expr> vars;
    for (size_t d = 0; d < shape.size(); ++d) {
      dims.push_back(shape[d].to_expr());
      axes.push_back(
          make_iter_var(Range::from_min_extent(IntImm::make(tc_index_type(), 0), dims[d]),
                        axis_names[d], IterKind::kDataPar));
      vars.push_back(axes.back()->var);
    }
    Expr b = body(vars);
    return Tensor(make_compute(name, dims, axes, {b}), 0);
  }

  // Every read gets 0 <= index <= size - 1 for the ranges of its statement: settled here when
  // the sizes cancel out, checked when the kernel is called otherwise.
  // A where clause that ranges a left-hand side index below 0 (or, for a tensor written before,
  // past its size) asks for writes outside the tensor: an error at definition time where the
  // sizes decide it, else a check at each call. Ranges inferred from the reads are clipped to
  // the tensor instead (nothing asked for those writes).
  void check_written_ranges(const StmtInfo& si, const TensorState& out,
                            const std::vector<std::optional<VarRange>>& ranges, bool has_prev) {
    for (size_t d = 0; d < si.num_lhs; ++d) {
      auto given = si.ranges.find(si.index_names[d]);
      if (given == si.ranges.end()) continue;
      const VarRange& r = *ranges[d];
      const SourcePos& pos = given->second->pos;
      const std::string& n = si.index_names[d];
      const bool runs = provably_positive(r.extent());
      if (runs || !r.extent().is_const()) {
        if (!SymInt(0).provably_le(r.lo)) {
          if (r.lo.is_const() && runs) {
            fail(pos, str_cat("'", n, "' starts at ", r.lo.str(), ": the statement would write '",
                              out.info->name, "' at a negative index"));
          }
          add_write_check(r, d, r.lo, IntImm::make(tc_index_type(), 0), true, out, pos);
        }
        if (has_prev && !r.hi.provably_le(out.shape[d])) {
          const SymInt past = r.hi - out.shape[d];
          if (past.is_const() && runs) {
            fail(pos, str_cat("'", n, "' reaches ", (r.hi - 1).str(), " but '", out.info->name,
                              "' has size ", out.shape[d].str(), " in dimension ", d,
                              ": the statement would write past its end"));
          }
          add_write_check(r, d, r.hi - 1, out.shape[d].to_expr(), false, out, pos);
        }
      }
    }
  }

  void add_write_check(const VarRange& r, size_t dim, const SymInt& value, Expr size, bool is_lower,
                       const TensorState& out, const SourcePos& pos) {
    BoundsCheck c;
    if (!provably_positive(r.extent())) c.extents.push_back(r.extent().to_expr());
    c.value = value.to_expr();
    c.size = std::move(size);
    c.is_lower = is_lower;
    c.is_write = true;
    c.tensor = out.info->name;
    c.dim = static_cast<int>(dim);
    c.location = src_.make_error(pos, "the where clause is here").what();
    fn_.checks.push_back(std::move(c));
  }

  void add_bounds_checks(const std::vector<ReadRecord>& reads,
                         const std::vector<std::optional<VarRange>>& ranges) {
    std::vector<Expr> extents;
    bool surely_runs = true;
    for (const auto& r : ranges) {
      SymInt ext = r->extent();
      if (provably_positive(ext)) continue;
      if (ext.is_const()) return;  // the statement never runs: no read happens
      extents.push_back(ext.to_expr());
      surely_runs = false;
    }
    for (const ReadRecord& read : reads) {
      for (size_t d = 0; d < read.access.indices.size(); ++d) {
        const SymInt& size = read.access.shape[d];
        if (read.access.indices[d].gathered) {
          // A gathered index is clamped into the dimension, which therefore must not be empty.
          if (provably_positive(size)) continue;
          if (size.is_const() && surely_runs) {
            fail(read.index_pos[d], str_cat("dimension ", d, " of '", read.tensor->info->name,
                                            "' is empty but read with an index from a tensor"));
          }
          BoundsCheck c;
          c.extents = extents;
          c.value = IntImm::make(tc_index_type(), 0);
          c.size = size.to_expr();
          c.tensor = read.tensor->info->name;
          c.dim = static_cast<int>(d);
          c.location = src_.make_error(read.index_pos[d], "the read is here").what();
          fn_.checks.push_back(std::move(c));
          continue;
        }
        auto [lo, hi] = index_bounds(read.access.indices[d], ranges);
        for (bool is_lower : {true, false}) {
          // The check is lhs <= rhs.
          SymInt slack = is_lower ? lo : (size - 1) - hi;
          if (slack.is_const() && slack.constant() >= 0) continue;
          if (slack.is_const() && surely_runs) {
            fail(read.index_pos[d],
                 str_cat("index ", d, " of '", read.tensor->info->name, "' goes out of bounds: it ",
                         is_lower ? "goes down to " : "reaches ", (is_lower ? lo : hi).str(),
                         " but the size is ", size.str(),
                         "; check the where clauses of this statement"));
          }
          BoundsCheck c;
          c.extents = extents;
          c.value = (is_lower ? lo : hi).to_expr();
          c.size = size.to_expr();
          c.is_lower = is_lower;
          c.tensor = read.tensor->info->name;
          c.dim = static_cast<int>(d);
          c.location = src_.make_error(read.index_pos[d], "the read is here").what();
          fn_.checks.push_back(std::move(c));
        }
      }
    }
  }

  const SourceText& src_;
  const DefInfo& def_;
  TcFunction fn_;
  std::vector<TensorState> tensors_;
  std::set<std::string> used_names_;
  const StmtInfo* si_ = nullptr;
  std::vector<Expr> var_values_;
  std::unordered_map<const AstExpr*, TypeClass> class_memo_;
};

}  // namespace

TcFunction to_te(const SourceText& source, const DefInfo& def) {
  TcFunction f = Translator(source, def).run();
  f.index_type = tc_index_type();
  return f;
}

}  // namespace ptb::tc
