// The tuner's cost model reads a candidate through a fixed-length vector of loop-structure
// features: how many loops of each kind, how deep, how much parallel work, how vectorized,
// how much code and memory. Computed from the loop nest as lowering leaves it just before
// unrolling and vectorizing (lower_structure), with the copies and lanes those two passes would
// make counted rather than made: the nest of a heavily unrolled candidate is a few dozen nodes
// here and tens of thousands of statements after them, and the tuner ranks several candidates
// for each one it measures.
#pragma once

#include <string>
#include <vector>

#include "ir/stmt.h"

namespace ptb {

// The names of loop_features' entries, in order.
const std::vector<std::string>& loop_feature_names();

// The features of a lowered body. Loops still marked unrolled count once per copy they would
// become (up to the unroller's limit), loops marked vectorized as the lanes of the statements
// inside them; a body already unrolled and vectorized gives about the same vector.
std::vector<double> loop_features(const Stmt& body);

}  // namespace ptb
