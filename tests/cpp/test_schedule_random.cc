// Random schedules over random computes give the same values as the default schedule (checked
// with the reference interpreter, so every primitive and the vectorizer are covered without
// codegen). Illegal random requests must fail with a ValueError, never anything else.
#include <random>

#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

struct Pipeline {
  std::vector<Tensor> inputs, stages;  // stages: producers first, the last is the output
};

// 1-3 dimensional input, then 1-3 stages: elementwise with shifted (clamped) reads, and maybe a
// reduction over the last dimension.
Pipeline random_pipeline(std::mt19937* rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng); };
  int ndim = pick(1, 3);
  std::vector<Expr> shape;
  for (int d = 0; d < ndim; ++d) shape.push_back(ci(pick(1, 13)));
  Pipeline p;
  p.inputs.push_back(placeholder(shape, kF32, "A"));
  Tensor prev = p.inputs[0];
  int nstages = pick(1, 3);
  for (int s = 0; s < nstages; ++s) {
    std::string name = std::string(1, static_cast<char>('B' + s));
    bool reduce = s == nstages - 1 && prev.ndim() > 1 && pick(0, 2) == 0;
    if (reduce) {
      std::vector<Expr> out_shape(prev.shape().begin(), prev.shape().end() - 1);
      IterVar r =
          make_iter_var(Range::from_min_extent(ci(0), prev.shape().back()), "r", IterKind::kReduce);
      p.stages.push_back(compute(
          out_shape,
          [&](const std::vector<Expr>& i) {
            std::vector<Expr> idx = i;
            idx.push_back(r->var);
            return sum(Mul::make(prev(idx), cf(2)), {r});
          },
          name));
    } else {
      int shift = pick(0, 2);
      p.stages.push_back(compute(
          prev.shape(),
          [&](const std::vector<Expr>& i) {
            std::vector<Expr> shifted = i;
            Expr last = prev.shape().back();
            shifted.back() = Min::make(idx_add(i.back(), ci(shift)), idx_sub(last, ci(1)));
            return Add::make(prev(i), prev(shifted));
          },
          name));
    }
    prev = p.stages.back();
  }
  return p;
}

// Data flow rewrites first (cache_write needs an unscheduled stage): new stages join `tensors`.
void random_rewrites(const Schedule& s, const Pipeline& p, std::vector<Tensor>* tensors,
                     std::mt19937* rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng); };
  const Tensor& out = p.stages.back();
  try {
    if (pick(0, 3) == 0) tensors->push_back(cache_write(s, out, "local"));
    if (pick(0, 3) == 0) {
      tensors->push_back(cache_read(s, p.inputs[0], "shared", {p.stages[0].op()}));
    }
    const auto* c = static_cast<const ComputeOpNode*>(stage_of(s, out)->op.get());
    if (c->is_reduction() && pick(0, 2) == 0) {
      Stage st = stage_of(s, out);
      IterVar r = c->reduce_axis[0];
      if (pick(0, 1)) {
        auto [ro, ri] = split(st, r, ci(pick(1, 5)), Expr());
        r = pick(0, 1) ? ro : ri;
      }
      tensors->push_back(rfactor(s, out, r, pick(0, 1) ? 0 : -1));
    }
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue) << e.what();
  }
}

void random_schedule(const Schedule& s, const std::vector<Tensor>& tensors, std::mt19937* rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng); };
  auto any_of = [&](const std::vector<IterVar>& v) {
    return v[pick(0, static_cast<int>(v.size()) - 1)];
  };
  for (int step = 0; step < 8; ++step) {
    Stage st = stage_of(s, tensors[pick(0, static_cast<int>(tensors.size()) - 1)]);
    auto& leaves = st->leaf_iter_vars;
    if (leaves.empty()) continue;
    IterVar leaf = any_of(leaves);
    try {
      switch (pick(0, 9)) {
        case 0:
        case 1:
          split(st, leaf, ci(pick(1, 6)), Expr());
          break;
        case 2:
          split(st, leaf, Expr(), ci(pick(1, 4)));
          break;
        case 3: {
          size_t i = static_cast<size_t>(pick(0, static_cast<int>(leaves.size()) - 1));
          if (i + 1 < leaves.size()) fuse(st, {leaves[i], leaves[i + 1]});
          break;
        }
        case 4: {
          std::vector<IterVar> perm = leaves;
          std::shuffle(perm.begin(), perm.end(), *rng);
          reorder(st, perm);
          break;
        }
        case 5:
          vectorize(st, leaf);
          break;
        case 6:
          unroll(st, leaf);
          break;
        case 7:
          parallel(st, leaf);
          break;
        case 8: {
          // At a leaf of a random stage: most are not consumers, which must be a ValueError.
          Stage target = stage_of(s, tensors[pick(0, static_cast<int>(tensors.size()) - 1)]);
          if (!target->leaf_iter_vars.empty())
            compute_at(st, target, any_of(target->leaf_iter_vars));
          break;
        }
        case 9:
          if (pick(0, 1)) {
            compute_inline(st);
          } else {
            compute_root(st);
          }
          break;
      }
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kValue) << e.what();
      EXPECT_NE(std::string(e.what()).find("stage '"), std::string::npos) << e.what();
    }
  }
}

TEST(ScheduleRandom, SameValuesAsDefault) {
  std::mt19937 rng(1234);
  int lowered = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Pipeline p = random_pipeline(&rng);
    Schedule s = create_schedule({p.stages.back().op()});
    std::vector<Tensor> tensors = p.stages;
    random_rewrites(s, p, &tensors, &rng);
    random_schedule(s, tensors, &rng);
    std::vector<Tensor> args = p.inputs;
    args.push_back(p.stages.back());
    std::vector<std::vector<double>> actual;
    try {
      actual = run_schedule(s, args);
    } catch (const UserError& e) {
      // A combination that is only checked at lowering (compute_at whose axis was later fused
      // as a fuse's outer operand, or into an inlined stage): a ValueError naming the stage.
      EXPECT_EQ(e.kind(), ErrorKind::kValue) << e.what();
      EXPECT_NE(std::string(e.what()).find("stage '"), std::string::npos) << e.what();
      continue;
    } catch (const std::exception& e) {
      FAIL() << "trial " << trial << ": " << e.what() << "\n" << lowered_text(s, args);
    }
    ++lowered;
    auto expected = run_schedule(create_schedule({p.stages.back().op()}), args);
    const auto& out = actual.back();
    for (size_t k = 0; k < out.size(); ++k) {
      ASSERT_EQ(expected.back()[k], out[k]) << "trial " << trial << " element " << k << "\n"
                                            << lowered_text(s, args);
    }
  }
  EXPECT_GT(lowered, 900);
}

}  // namespace
}  // namespace ptb::testing
