#include "lower/balance_sums.h"

#include <vector>

#include "ir/mutator.h"

namespace ptb {

namespace {

bool regroupable(DataType t) {
  if (t.is_float()) return true;
  if (t.is_uint()) return true;
  return t.is_int() && t.bits() < 32;  // wraps like unsigned; wider signed adds are nsw
}

class SumBalancer : public IRMutator {
 protected:
  using IRMutator::mutate_node;

  Expr mutate_node(const Add* op, const Expr& self) override {
    if (!regroupable(op->dtype)) return IRMutator::mutate_node(op, self);
    // The terms of the chain, last first: walk down the left operands while they are additions
    // used only by this chain (a partial sum shared elsewhere stays one term, so that no shared
    // node is copied). Iterative: chains can be tens of thousands long.
    std::vector<Expr> terms;
    const Add* node = op;
    while (true) {
      terms.push_back(node->b);
      const Add* left = node->a.as<Add>();
      if (left == nullptr || left->dtype != op->dtype || node->a.node().use_count() > 1) {
        terms.push_back(node->a);
        break;
      }
      node = left;
    }
    if (static_cast<int>(terms.size()) <= kSumBlock) return IRMutator::mutate_node(op, self);
    std::vector<Expr> blocks;
    for (size_t end = terms.size(); end > 0;) {
      size_t begin = end > static_cast<size_t>(kSumBlock) ? end - kSumBlock : 0;
      // terms[end - 1] is the earliest term of this block: add left to right from there.
      Expr sum = mutate(terms[end - 1]);
      for (size_t k = end - 1; k > begin; --k) sum = Add::make(sum, mutate(terms[k - 1]));
      blocks.push_back(sum);
      end = begin;
    }
    // Pairwise, keeping the order of the blocks (first block leftmost).
    while (blocks.size() > 1) {
      std::vector<Expr> next;
      for (size_t i = 0; i + 1 < blocks.size(); i += 2) {
        next.push_back(Add::make(blocks[i], blocks[i + 1]));
      }
      if (blocks.size() % 2) next.push_back(blocks.back());
      blocks.swap(next);
    }
    return blocks[0];
  }
};

}  // namespace

Stmt balance_sums(const Stmt& s) { return SumBalancer().mutate(s); }

}  // namespace ptb
