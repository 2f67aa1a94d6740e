// Reductions without data reuse: sums and means over axes, softmax's and the norms' statistics,
// pooling windows. A scalar accumulator is latency-bound (one add every few cycles), so the
// rule gets vector accumulators: through rfactor when the reduced axis is the contiguous one,
// by moving the reduce loops outside a contiguous data axis otherwise.
#include <algorithm>
#include <limits>
#include <variant>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "schedule/interval.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// Windows at most this large (pooling) are unrolled inside a vectorized data loop.
constexpr int64_t kMaxUnrolledWindow = 32;
constexpr int64_t kMaxUnrolledAxis = 8;
// A reduction with no parallel axis is split into this many parallel parts by default.
constexpr int64_t kParallelParts = 16;

std::optional<int64_t> tensor_size(const TensorRead* r) {
  int64_t n = 1;
  for (const Expr& e : r->op->output_shape(r->value_index)) {
    auto v = as_const_int(e);
    if (!v) return std::nullopt;
    n *= *v;
  }
  return n;
}

// The read that moves the most data (symbolic sizes count as largest).
// (Every value of a tuple reduction's bodies: argmax's index value reads nothing.)
const TensorRead* main_read(const ComputeOpNode* c) {
  std::vector<const TensorRead*> reads;
  for (const Expr& body : c->body) {
    for (const TensorRead* r : tensor_reads(body.as<Reduce>()->source)) reads.push_back(r);
  }
  const TensorRead* best = nullptr;
  std::optional<int64_t> best_size = 0;
  for (const TensorRead* r : reads) {
    if (r->indices.empty()) continue;
    auto size = tensor_size(r);
    bool larger = best == nullptr || (best_size && (!size || *size > *best_size));
    if (larger) {
      best = r;
      best_size = size;
    }
  }
  return best;
}

std::optional<int64_t> times(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return *a * *b;
}

// A stage accumulating in lanes (its last data axis): its loops become the other data axes, the
// reductions, then the lanes, vectorized. Returns the loop over its output element (the data
// axis before the lanes; undefined when there is none).
IterVar lanes_innermost(const Stage& s) {
  std::vector<IterVar> data_axes, red_axes;
  for (const IterVar& iv : s->leaf_iter_vars) {
    (iv->kind == IterKind::kReduce ? red_axes : data_axes).push_back(iv);
  }
  IterVar lanes_axis = data_axes.back();
  std::vector<IterVar> order(data_axes.begin(), data_axes.end() - 1);
  order.insert(order.end(), red_axes.begin(), red_axes.end());
  order.push_back(lanes_axis);
  reorder(s, order);
  vectorize(s, lanes_axis);
  return data_axes.size() >= 2 ? data_axes[data_axes.size() - 2] : IterVar();
}

// How much `index` grows when `iv` grows by one, when that is a constant.
std::optional<int64_t> index_step(const Expr& index, const IterVar& iv) {
  VarMap next;
  next[iv->var.get()] = idx_add(iv->var, make_one(iv->var.dtype()));
  return as_const_int(simplify(idx_sub(substitute(index, next), index)));
}

// Steps each accumulator vector adds into a fresh vector before adding that block's sum to its
// running total, in long float sums (below).
constexpr int64_t kCascadeBlock = 256;

// A long float sum accumulated in vectors (`rf`: the data axes, the lanes, one reduce axis of
// the steps): each lane's chain of steps is cut into blocks summed in a fresh vector, each
// block's sum then added to the lane's total, a two-level cascade as Inductor's CPU sums and
// close to NumPy's pairwise ones. The rounding error grows with block + steps / block instead
// of steps: the sum of 2**24 floats in [0, 1) went from 1e-5 to 1e-7 relative (NumPy 7e-9,
// PyTorch 5e-8), for one more vector add per block. Short rows (softmax's, a norm's) have a
// constant extent below two blocks and are left alone; a symbolic one is cut (its length is not
// known to be short). Returns the new stage, computed in `rf`'s loop over the blocks.
Stage cascade_accumulators(Context& ctx, const Stage& rf, const Stage& named_after) {
  const ComputeOpNode* c = as_compute(rf->op);
  const auto* red = c != nullptr && c->body.size() == 1 ? c->body[0].as<Reduce>() : nullptr;
  if (red == nullptr || red->combiner != ReduceKind::kSum || !red->dtype.is_float()) {
    return nullptr;
  }
  std::vector<IterVar> reds;
  for (const IterVar& iv : rf->leaf_iter_vars) {
    if (iv->kind == IterKind::kReduce) reds.push_back(iv);
  }
  if (reds.size() != 1) return nullptr;
  auto extent = const_extent(reds[0]);
  int64_t block = kCascadeBlock;
  if (extent && *extent <= 2 * block) block = 0;
  block = ctx.knob(rf, "cascade_block", block, {0, 64, 256, 1024});
  if (block == 0) return nullptr;
  auto [blocks, steps] = split(rf, reds[0], make_const(reds[0]->var.dtype(), block), Expr());
  (void)steps;
  Tensor part = rfactor(ctx.sch, Tensor(rf->op, 0), blocks, 0);
  Stage s = ctx.sch->stage(part.op());
  ctx.name_new(s, named_after, ".block");
  ctx.rule(s, "cascade_sum");
  // Its loops: the block (one iteration where it is computed), the other data axes, the steps,
  // then the lanes, vectorized; computed in rf's loop over the blocks.
  lanes_innermost(s);
  IterVar block_loop;
  for (const IterVar& iv : rf->leaf_iter_vars) {
    if (iv->kind == IterKind::kReduce) block_loop = iv;
  }
  compute_at(s, rf, block_loop);
  return s;
}

}  // namespace

bool relax_max_nan(Context& ctx, const Stage& st) {
  const ComputeOpNode* c = as_compute(st->op);
  if (c == nullptr || c->body.size() != 1 || st->op != st->origin_op) return false;
  const auto* red = c->body[0].as<Reduce>();
  if (red == nullptr || (red->combiner != ReduceKind::kMax && red->combiner != ReduceKind::kMin) ||
      !red->dtype.is_float()) {
    return false;
  }
  auto it = c->attrs.find("nan_insensitive");
  if (it == c->attrs.end() || !std::holds_alternative<int64_t>(it->second) ||
      std::get<int64_t>(it->second) != 1) {
    return false;
  }
  if (ctx.knob(st, "plain_max", 1, {0, 1}) == 0) return false;
  // acc > x ? acc : x is x86's vmaxps(acc, x) exactly (x when either is NaN): one instruction,
  // where the built-in max also puts a NaN back (vfixupimmps, or two compares per tree level).
  bool is_max = red->combiner == ReduceKind::kMax;
  Expr acc = Var::make(red->dtype, "acc");
  Expr x = Var::make(red->dtype, "x");
  Expr beyond = is_max ? GT::make(acc, x) : LT::make(acc, x);
  // Identity -inf (+inf for min), not the built-in's lowest finite value: acc > x is then false
  // for every x, so LLVM drops each combine with the identity (a row's first vectors, every
  // level of the lane tree: 11 of softmax's 26 max instructions per 128-float row). Only a row
  // of -inf alone sees it, whose softmax is NaN either way (-inf - -inf there, 0 / 0 before).
  double inf = std::numeric_limits<double>::infinity();
  CommReducer plain = make_comm_reducer(is_max ? "max_nan_free" : "min_nan_free", {acc}, {x},
                                        {Select::make(beyond, acc, x)},
                                        {make_const(red->dtype, is_max ? -inf : inf)});
  Expr body = Reduce::make(ReduceKind::kCustom, red->source, red->axis, red->condition, plain, 0);
  st->op = make_compute(c->name, c->shape, c->axis, {body}, c->tag, c->attrs);
  ctx.sch->stage_of_op[st->op.get()] = st;
  return true;
}

namespace {

// A fresh stage's loops for a rewritten op (its axes, then its reduce axes).
void reset_op(Context& ctx, const Stage& st, const Operation& op) {
  st->op = op;
  ctx.sch->stage_of_op[op.get()] = st;
  const ComputeOpNode* c = as_compute(op);
  st->root_iter_vars = c->axis;
  st->root_iter_vars.insert(st->root_iter_vars.end(), c->reduce_axis.begin(), c->reduce_axis.end());
  st->all_iter_vars = st->root_iter_vars;
  st->leaf_iter_vars = st->root_iter_vars;
}

// The sum `s` of the values `a` (a read indexed by q's axes and reduce axes) reads: a single
// sum over the same extents whose read, q's axes and reduce axes put for its own, is `a`.
bool sums_the_same(const ComputeOpNode* q, const Expr& a, const ComputeOpNode* s) {
  if (s == nullptr || s->body.size() != 1 || s->axis.size() != q->axis.size() ||
      s->reduce_axis.size() != q->reduce_axis.size()) {
    return false;
  }
  const auto* r = s->body[0].as<Reduce>();
  if (r == nullptr || r->combiner != ReduceKind::kSum || r->dtype != a.dtype() ||
      (r->condition.defined() && !is_const_int(r->condition, 1)) ||
      r->source.as<TensorRead>() == nullptr) {
    return false;
  }
  VarMap vmap;
  for (size_t d = 0; d < s->axis.size(); ++d) {
    if (!same_extent(s->shape[d], q->shape[d])) return false;
    vmap[s->axis[d]->var.get()] = q->axis[d]->var;
  }
  for (size_t d = 0; d < s->reduce_axis.size(); ++d) {
    const Range& sd = s->reduce_axis[d]->dom;
    const Range& qd = q->reduce_axis[d]->dom;
    if (!structurally_equal(sd.min, qd.min) || !structurally_equal(sd.extent, qd.extent)) {
      return false;
    }
    vmap[s->reduce_axis[d]->var.get()] = q->reduce_axis[d]->var;
  }
  return structurally_equal(substitute(r->source, vmap), a);
}

}  // namespace

bool one_pass_moments(Context& ctx, const Stage& q) {
  const ComputeOpNode* qc = as_compute(q->op);
  if (qc == nullptr || qc->body.size() != 1 || q->op != q->origin_op || q->is_output) return false;
  auto attr = qc->attrs.find("moments");
  if (attr == qc->attrs.end() || !std::holds_alternative<int64_t>(attr->second) ||
      std::get<int64_t>(attr->second) != 1) {
    return false;
  }
  const auto* qr = qc->body[0].as<Reduce>();
  DataType t = qr != nullptr ? qr->dtype : DataType::Float(32);
  if (qr == nullptr || qr->combiner != ReduceKind::kSum ||
      (qr->condition.defined() && !is_const_int(qr->condition, 1)) || t.lanes() != 1 ||
      (t != DataType::Float(32) && t != DataType::Float(64))) {
    return false;
  }
  // The source: (a - m) * (a - m), a read that the reduce axes index, m free of them.
  const auto* mul = qr->source.as<Mul>();
  const auto* dev = mul != nullptr ? mul->a.as<Sub>() : nullptr;
  if (dev == nullptr || !structurally_equal(mul->a, mul->b) || dev->a.as<TensorRead>() == nullptr) {
    return false;
  }
  Expr a = dev->a, m = dev->b;
  for (const IterVar& r : qc->reduce_axis) {
    if (uses_var(m, r->var)) return false;
  }
  // The sum of the same values: one pass can give both.
  Stage s;
  for (const Stage& st : ctx.sch->stages) {
    if (st == q || st->is_output || st->op != st->origin_op || !st->relations.empty()) continue;
    if (sums_the_same(qc, a, as_compute(st->op))) {
      s = st;
      break;
    }
  }
  if (!s || ctx.knob(q, "one_pass_moments", 1, {0, 1}) == 0) return false;
  const ComputeOpNode* sc = as_compute(s->op);

  // The moments about a shift k (a - k and its square, in one tuple of sums): the variance is
  // then m1 / count - (m0 / count)^2, which loses log2(1 + (k - mean)^2 / variance) bits. k is
  // the mean of w of the values, so (k - mean)^2 is at most count / w times the variance: at
  // most log2(count / w) bits lost (7 for group_norm's groups of 6272, 4 for BERT's 768-wide
  // rows, with w = 64), ~0 on typical data; unshifted sums of squares lose everything for data
  // with a large mean.
  std::vector<IterVar> axes, raxes;
  VarMap to_m, first;
  for (const IterVar& iv : qc->axis) {
    axes.push_back(make_iter_var(iv->dom, "ax" + std::to_string(axes.size()), IterKind::kDataPar,
                                 iv->var.dtype()));
    to_m[iv->var.get()] = axes.back()->var;
  }
  Expr count;
  for (const IterVar& r : qc->reduce_axis) {
    raxes.push_back(
        make_iter_var(r->dom, r->var.as<Var>()->name + "_m", IterKind::kReduce, r->var.dtype()));
    to_m[r->var.get()] = raxes.back()->var;
    first[r->var.get()] = r->dom.min;
    Expr extent = cast(t, r->dom.extent);
    count = count.defined() ? Mul::make(count, extent) : extent;
  }
  std::vector<Expr> q_at;
  for (const IterVar& iv : qc->axis) q_at.push_back(iv->var);
  // The shift k (at q's axes): the mean of the first w values along the last reduce axis (up
  // to 64, whole 16-float vectors from 16 on), the other reduce axes at their first value,
  // stored by a stage of its own; the first value alone when that axis is symbolic.
  const IterVar& last = qc->reduce_axis.back();
  auto last_extent = const_extent(last);
  int64_t w = 1;
  if (last_extent && *last_extent >= 2) {
    w = *last_extent < 16 ? *last_extent : std::min<int64_t>(64, *last_extent - *last_extent % 16);
  }
  Expr k;
  Operation shift;
  if (w == 1) {
    k = substitute(a, first);
  } else {
    std::vector<IterVar> kaxes;
    VarMap at = first;
    for (const IterVar& iv : qc->axis) {
      kaxes.push_back(make_iter_var(iv->dom, "ax" + std::to_string(kaxes.size()),
                                    IterKind::kDataPar, iv->var.dtype()));
      at[iv->var.get()] = kaxes.back()->var;
    }
    DataType it = last->var.dtype();
    IterVar j = make_iter_var(Range::from_min_extent(make_zero(it), make_const(it, w)),
                              last->var.as<Var>()->name + "_k", IterKind::kReduce, it);
    at[last->var.get()] = idx_add(last->dom.min, j->var);
    shift = make_compute(qc->name + ".shift", qc->shape, kaxes,
                         {Reduce::make(ReduceKind::kSum, substitute(a, at), {j}, Expr())});
    k = Mul::make(TensorRead::make(shift, 0, q_at), make_const(t, 1.0 / static_cast<double>(w)));
  }
  Expr d = Sub::make(substitute(a, to_m), substitute(k, to_m));
  Expr x0 = Var::make(t, "x0"), x1 = Var::make(t, "x1");
  Expr y0 = Var::make(t, "y0"), y1 = Var::make(t, "y1");
  CommReducer sums =
      make_comm_reducer("moments", {x0, x1}, {y0, y1}, {Add::make(x0, y0), Add::make(x1, y1)},
                        {make_zero(t), make_zero(t)});
  Operation moments =
      make_compute(qc->name + ".moments", qc->shape, axes,
                   {Reduce::make(ReduceKind::kCustom, d, raxes, Expr(), sums, 0),
                    Reduce::make(ReduceKind::kCustom, Mul::make(d, d), raxes, Expr(), sums, 1)});
  size_t at = std::min(ctx.sch->position(s), ctx.sch->position(q));
  if (shift) {
    Stage kst = make_stage(shift);
    ctx.sch->insert_stage(at++, kst);
    ctx.name_new(kst, q, ".shift");
  }
  Stage mst = make_stage(moments);
  ctx.sch->insert_stage(at, mst);
  ctx.name_new(mst, q, ".moments");

  // The sum: count * k + the sum of a - k.
  std::vector<Expr> s_at;
  VarMap s_to_q;
  for (size_t i = 0; i < sc->axis.size(); ++i) {
    s_at.push_back(sc->axis[i]->var);
    s_to_q[qc->axis[i]->var.get()] = sc->axis[i]->var;
  }
  Expr sum = Add::make(TensorRead::make(moments, 0, s_at), Mul::make(count, substitute(k, s_to_q)));
  reset_op(ctx, s, make_compute(sc->name, sc->shape, sc->axis, {sum}, sc->tag, sc->attrs));
  // The squared deviations from m: with e = m - k, the sum of (a - k - e)^2 is
  // m1 - m0^2 / count + count * (e - m0 / count)^2 (the last term: how far m is from the exact
  // mean, rounding); at least 0.
  Expr m0 = TensorRead::make(moments, 0, q_at), m1 = TensorRead::make(moments, 1, q_at);
  Expr mean_off = Div::make(m0, count);
  Expr off = Sub::make(Sub::make(m, k), mean_off);
  Expr sq =
      Add::make(Sub::make(m1, Mul::make(m0, mean_off)), Mul::make(count, Mul::make(off, off)));
  sq = Max::make(sq, make_zero(t));
  reset_op(ctx, q, make_compute(qc->name, qc->shape, qc->axis, {sq}, qc->tag, qc->attrs));
  return true;
}

std::optional<RowSite> schedule_reduction(Context& ctx, const Stage& st, bool attached,
                                          int64_t row_block, std::optional<int64_t> work_hint) {
  // Held: rfactor below replaces st->op, which may be the only owner of this op (one a rule
  // rewrote, rule_row_attach.cc's share_summand).
  Operation op = st->op;
  const ComputeOpNode* c = as_compute(op);
  std::vector<IterVar> data, reds;
  for (const IterVar& iv : st->leaf_iter_vars) {
    (iv->kind == IterKind::kReduce ? reds : data).push_back(iv);
  }
  int64_t lanes = ctx.lanes(c->output_dtype(0));
  auto out_size = output_size(c);
  auto red_size = const_product(reds);
  auto work = work_hint ? work_hint : times(out_size, red_size);
  const TensorRead* read = main_read(c);
  Expr last = read != nullptr ? read->indices.back() : Expr();
  // A data axis the last index uses with a step of one runs over the contiguous data; one with
  // a longer or a symbolic step does not (the parts of a whole-tensor sum read a vector at
  // A[part * chunk + k], contiguous in k: it takes the vector accumulators below).
  bool last_uses_data = false;
  for (const IterVar& iv : data) {
    if (!last.defined() || !uses_var(last, iv->var)) continue;
    auto step = index_step(last, iv);
    last_uses_data |= step && (*step == 1 || *step == -1);
  }
  // The reduce axis the contiguous index runs over goes innermost (rfactor leaves the inner
  // part of its split last, an axis of one iteration for a whole-tensor sum's parts).
  if (last.defined() && !last_uses_data) {
    auto it = std::find_if(reds.begin(), reds.end(),
                           [&](const IterVar& r) { return uses_var(last, r->var); });
    if (it != reds.end() && it + 1 != reds.end()) {
      IterVar contiguous = *it;
      reds.erase(it);
      reds.push_back(contiguous);
      std::vector<IterVar> order = data;
      order.insert(order.end(), reds.begin(), reds.end());
      reorder(st, order);
    }
  }
  bool contiguous_reduce = last.defined() && !last_uses_data && uses_var(last, reds.back()->var);
  bool data_contiguous = last.defined() && !data.empty() && uses_var(last, data.back()->var) &&
                         std::none_of(reds.begin(), reds.end(),
                                      [&](const IterVar& r) { return uses_var(last, r->var); });

  // Nothing to run in parallel (the sum of a whole tensor): split the reduction into parts,
  // each reduced in parallel by a new stage (rfactor); this stage adds the parts up.
  bool whole = !attached && (data.empty() || out_size == 1);
  auto first_extent = const_extent(reds.front());
  bool big = !red_size || *red_size >= kMinParallelWork;
  if (whole && big && (!first_extent || *first_extent >= 2)) {
    int64_t parts = ctx.knob(st, "rfactor_parts", kParallelParts, {0, 4, 8, 16, 32, 64});
    if (parts > 0) {
      ctx.rule(st, "reduction_parts");
      auto [kp, kr] = split(st, reds.front(), Expr(), make_const(reds.front()->var.dtype(), parts));
      (void)kr;
      Tensor rf = rfactor(ctx.sch, Tensor(st->op, 0), kp, 0);
      Stage rf_stage = ctx.sch->stage(rf.op());
      ctx.name_new(rf_stage, st, ".rf");
      schedule_reduction(ctx, rf_stage);
      return std::nullopt;
    }
  }
  ctx.rule(st, "reduction");

  // Small windows (pooling): unrolled, so the data loop around them can be vectorized.
  bool small_window = red_size && *red_size <= kMaxUnrolledWindow && !contiguous_reduce &&
                      std::all_of(reds.begin(), reds.end(), [](const IterVar& r) {
                        auto e = const_extent(r);
                        return e && *e <= kMaxUnrolledAxis;
                      });
  if (small_window && !data.empty() && ctx.knob(st, "unroll_window", 1, {0, 1}) == 1) {
    for (const IterVar& r : reds) unroll(st, r);
    // A single elementwise consumer (a depthwise convolution's bias and activation) takes the
    // window's vector of results in its own loop: one pass over the output, not two.
    auto last_extent = const_extent(data.back());
    Stage epilogue = attached || !last_extent || *last_extent > 4 * lanes || *last_extent < 4
                         ? nullptr
                         : fusable_epilogue(ctx, st);
    if (epilogue && ctx.knob(st, "fuse_epilogue", 1, {0, 1}) == 1) {
      ctx.rule(epilogue, "epilogue");
      ctx.settled.insert(epilogue.get());
      std::vector<IterVar> axes = epilogue->leaf_iter_vars;
      std::vector<IterVar> outer(axes.begin(), axes.end() - 1);
      vectorize(epilogue, axes.back());
      vectorize(st, data.back());
      if (!outer.empty()) {
        outer = parallelize(ctx, epilogue, outer, work, st);
        compute_at(st, epilogue, outer.back());
      }
      return std::nullopt;
    }
    std::vector<IterVar> outer(data.begin(), data.end() - 1);
    IterVar inner = data.back();
    auto extent = const_extent(inner);
    if (!extent || *extent >= 4) {
      if (!extent || *extent > 4 * lanes) {
        auto [io, ii] = split(st, inner, make_const(inner->var.dtype(), lanes), Expr());
        outer.push_back(io);
        inner = ii;
      }
      vectorize(st, inner);
    }
    if (!attached) parallelize(ctx, st, outer, work);
    return std::nullopt;
  }

  // The reduced axis is the contiguous one (row sums, softmax over the last axis): lanes of it
  // become a data axis of a new stage accumulated in one vector register per output element.
  // Short rows that whole vectors do not divide (56-wide images), read at [..., h, w] by the
  // last two reduce axes, of a whole number of four-vector steps together: those two axes
  // fused, so that the lanes are four whole vectors of contiguous data (compact images) rather
  // than rows of three and a half, every other one across cache lines.
  if (contiguous_reduce && reds.size() >= 2 && read != nullptr && read->indices.size() >= 2) {
    const IterVar& h = reds[reds.size() - 2];
    const IterVar& w = reds.back();
    auto e1 = const_extent(h), e2 = const_extent(w);
    const Expr& ih = read->indices[read->indices.size() - 2];
    bool rows = e1 && e2 && *e2 % lanes != 0 && *e2 <= 4 * lanes &&
                (*e1 * *e2) % (4 * lanes) == 0 && ih.get() == h->var.get() &&
                last.get() == w->var.get() && st->relations.empty();
    if (rows && ctx.knob(st, "fuse_rows", 1, {0, 1}) == 1) {
      IterVar f = fuse(st, std::vector<IterVar>{h, w});
      reds.pop_back();
      reds.back() = f;
    }
  }
  auto inner_extent = const_extent(reds.back());
  // Short rows under other reduce axes (a global pool's 7-wide image rows, 7 of them per
  // channel) qualify when the whole reduction is long: each row is then one vector added to
  // the channel's accumulator (below), instead of a chain of 49 scalar adds.
  bool long_enough = !inner_extent || *inner_extent >= 2 * lanes ||
                     (reds.size() > 1 && *inner_extent >= 4 && red_size && *red_size >= 2 * lanes);
  if (contiguous_reduce && long_enough && ctx.knob(st, "vector_rfactor", 1, {0, 1}) == 1) {
    // Several accumulator vectors when the axis divides into them, at least two steps each:
    // one add every cycle or two instead of one per add latency. A short row is latency-bound
    // (softmax's 128-element rows, each a chain of max, sum of exponentials, output): four
    // chains of two steps took its time from 1.22 to 1.0 ms, one thread.
    // A float max or min that puts NaN back takes two dependent instructions a step (vmaxps,
    // then vfixupimmps): eight chains where the row has room, for the same issue rate as an add's
    // four. Two threads, (8, 128, 768) rows of 768, interleaved: max 26.5 -> 25.5 us (the copy
    // of its bytes 26.7).
    const auto* combine = c->body.size() == 1 ? c->body[0].as<Reduce>() : nullptr;
    bool two_step =
        combine && combine->dtype.is_float() &&
        (combine->combiner == ReduceKind::kMax || combine->combiner == ReduceKind::kMin);
    int64_t vectors = 1;
    std::vector<int64_t> widths = {4, 2};
    if (two_step) widths.insert(widths.begin(), 8);
    for (int64_t v : widths) {
      if (inner_extent && *inner_extent % (v * lanes) == 0 && *inner_extent >= 2 * v * lanes) {
        vectors = v;
        break;
      }
    }
    // A short contiguous axis under other reduce axes (group_norm's 56-wide image rows, two
    // channels by 56 rows per group) that whole vectors do not divide: the whole axis becomes
    // the lanes (56 = three vectors and a half, no mask), so each vector accumulates once per
    // step of the outer axes instead of one vector taking all 448 steps in a chain.
    bool whole_axis =
        inner_extent && reds.size() > 1 && *inner_extent % lanes != 0 && *inner_extent <= 4 * lanes;
    if (ctx.knob(st, "whole_axis_lanes", whole_axis ? 1 : 0, {0, 1}) == 0) whole_axis = false;
    vectors = ctx.knob(st, "accumulator_vectors", vectors, {1, 2, 4, 8});
    IterVar lanes_leaf = reds.back();
    if (!whole_axis) {
      auto [ko, ki] =
          split(st, reds.back(), make_const(reds.back()->var.dtype(), lanes * vectors), Expr());
      (void)ko;
      lanes_leaf = ki;
    }
    Tensor rf = rfactor(ctx.sch, Tensor(st->op, 0), lanes_leaf, static_cast<int>(c->axis.size()));
    Stage rf_stage = ctx.sch->stage(rf.op());
    ctx.name_new(rf_stage, st, ".rf");
    ctx.rule(rf_stage, "reduction_lanes");
    cascade_accumulators(ctx, rf_stage, st);
    bool per_element = st->leaf_iter_vars.size() > 1;
    // The lanes are then combined as a tree, halving them at each step (rfactor of the lower
    // half: one vector operation per level), instead of one chain of lanes * vectors dependent
    // scalar operations per output element (64 for a float row: a max is 4-6 cycles of latency
    // each, most of the time of a max over 768-element rows).
    std::vector<Stage> tree;
    IterVar block_loop;
    int64_t width = whole_axis ? *inner_extent : lanes * vectors;
    if (per_element && width >= 4 && width % 2 == 0 && ctx.knob(st, "lanes_tree", 1, {0, 1}) == 1) {
      for (; width >= 4 && width % 2 == 0; width /= 2) {
        IterVar kv = st->leaf_iter_vars.back();
        auto [to, ti] = split(st, kv, make_const(kv->var.dtype(), width / 2), Expr());
        (void)to;
        Tensor half = rfactor(ctx.sch, Tensor(st->op, 0), ti, static_cast<int>(c->axis.size()));
        Stage half_stage = ctx.sch->stage(half.op());
        ctx.name_new(half_stage, st, ".lanes" + std::to_string(width / 2));
        ctx.rule(half_stage, "reduction_tree");
        tree.push_back(half_stage);
      }
    }
    std::vector<IterVar> outer =
        per_element ? std::vector<IterVar>(st->leaf_iter_vars.begin(), st->leaf_iter_vars.end() - 1)
                    : std::vector<IterVar>{};
    // A single elementwise consumer (a global average pool's division by the count) computes
    // each sum just before it reads it, in its own parallel loop over the elements: no stored
    // intermediate (malloc'ed per call) and no second, serial pass.
    Stage epilogue = attached || !per_element ? nullptr : fusable_epilogue(ctx, st);
    if (epilogue && ctx.knob(st, "fuse_epilogue", 1, {0, 1}) == 1) {
      ctx.rule(epilogue, "epilogue");
      // A copy: parallelize's fuse rewrites the stage's leaves.
      std::vector<IterVar> loops = epilogue->leaf_iter_vars;
      loops = parallelize(ctx, epilogue, loops, work, st);
      compute_at(st, epilogue, loops.back());
    } else if (!attached) {
      auto last_extent = outer.empty() ? std::nullopt : const_extent(outer.back());
      if (row_block > 1 && last_extent && *last_extent % row_block == 0 &&
          *last_extent > row_block) {
        auto [bo, bi] =
            split(st, outer.back(), make_const(outer.back()->var.dtype(), row_block), Expr());
        outer.back() = bo;
        outer = parallelize(ctx, st, outer, work);
        block_loop = outer.back();
        outer.push_back(bi);
      } else {
        outer = parallelize(ctx, st, outer, work);
      }
    }
    // rf, then each level of the tree, each computed in its reader's loop over the element.
    std::vector<Stage> chain = {rf_stage};
    chain.insert(chain.end(), tree.begin(), tree.end());
    std::vector<IterVar> element_loop;
    for (const Stage& s : chain) element_loop.push_back(lanes_innermost(s));
    // In blocks, each stage computes the block's elements before the next stage reads them: it
    // is attached outside its reader's loop over the elements (that loop split by the block:
    // one iteration).
    if (block_loop) {
      for (size_t i = 0; i < chain.size() && element_loop[i]; ++i) {
        const IterVar& e = element_loop[i];
        auto [eo, ei] = split(chain[i], e, make_const(e->var.dtype(), row_block), Expr());
        (void)ei;
        element_loop[i] = eo;
      }
    }
    if (!outer.empty()) compute_at(chain.back(), st, block_loop ? block_loop : outer.back());
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      compute_at(chain[i], chain[i + 1], element_loop[i + 1]);
    }
    // One output element per iteration of st's loop: a statistic read per row can be computed
    // in rf's loop over that element, right before its lanes read it.
    if (!outer.empty() && element_loop[0]) return RowSite{rf_stage, element_loop[0]};
    return std::nullopt;
  }

  // A data axis is the contiguous one (sums over an outer axis): reduce loops go outside it and
  // it is vectorized; the accumulators are the output's own elements.
  if (data_contiguous && ctx.knob(st, "reduce_outside", 1, {0, 1}) == 1) {
    std::vector<IterVar> outer(data.begin(), data.end() - 1);
    IterVar inner = data.back();
    auto extent = const_extent(inner);
    int64_t factor = 0;
    if (!extent || *extent > 4 * lanes) {
      // Four vectors of the row when they divide it: each step of the reduce loops then reads
      // four whole cache lines of a row (hardware prefetch follows them) into four independent
      // accumulators, instead of one line per row on a stride.
      factor = extent && *extent % (4 * lanes) == 0 ? 4 * lanes : lanes;
      auto [io, ii] = split(st, inner, make_const(inner->var.dtype(), factor), Expr());
      outer.push_back(io);
      inner = ii;
    }
    std::vector<IterVar> order = outer;
    order.insert(order.end(), reds.begin(), reds.end());
    order.push_back(inner);
    reorder(st, order);
    vectorize(st, inner);
    if (attached) return std::nullopt;
    // A single elementwise consumer (a mean's division by the count) is split the same way and
    // computes each block of sums in its own parallel loop, just before it reads them: the sums
    // stay in registers instead of a stored intermediate (malloc'ed per call) and a second
    // pass (a 24 KB malloc and a serial loop for the (8, 128, 768) mean over axis 1).
    Stage epilogue = outer.empty() ? nullptr : fusable_epilogue(ctx, st);
    if (epilogue && ctx.knob(st, "fuse_epilogue", 1, {0, 1}) == 1) {
      ctx.rule(epilogue, "epilogue");
      std::vector<IterVar> axes = epilogue->leaf_iter_vars;
      std::vector<IterVar> e_outer(axes.begin(), axes.end() - 1);
      IterVar e_inner = axes.back();
      if (factor > 0) {
        auto [eo, ei] = split(epilogue, e_inner, make_const(e_inner->var.dtype(), factor), Expr());
        e_outer.push_back(eo);
        e_inner = ei;
      }
      vectorize(epilogue, e_inner);
      e_outer = parallelize(ctx, epilogue, e_outer, work, st);
      compute_at(st, epilogue, e_outer.back());
      return std::nullopt;
    }
    parallelize(ctx, st, outer, work);
    return std::nullopt;
  }

  if (!attached) parallelize(ctx, st, data, work);
  return std::nullopt;
}

}  // namespace ptb::autoschedule
