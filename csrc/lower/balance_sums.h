// Regroups long chains of additions, such as Python's sum() over many reads writes
// (((a0 + a1) + a2) + ... + aN), into blocks of at most kSumBlock consecutive terms added left
// to right, and adds the blocks pairwise. LLVM's instruction selection is quadratic in the
// length of one dependency chain (folding each load into its add walks the whole chain below
// it: a 4000-term sum took 5 s to select, 20 000 terms minutes); blocks keep every walk short.
//
// This changes the rounding of floating-point sums of more than kSumBlock terms the way NumPy's
// pairwise summation does (its error grows with log N instead of N). Signed integers of 32 bits
// or more are left alone (their additions are `nsw`: a regrouped sum could overflow where the
// written one does not); other integers wrap, and their regrouped sums are exact.
#pragma once

#include "ir/stmt.h"

namespace ptb {

// Chains of at most this many terms are left as written.
constexpr int kSumBlock = 128;

Stmt balance_sums(const Stmt& s);

}  // namespace ptb
