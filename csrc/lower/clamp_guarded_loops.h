// Splits a loop at the iteration where a guard on its variable turns false, instead of testing
// the guard on every iteration. A split whose factor does not divide a symbolic extent leaves
//
//   for (k.inner, 0, 256) { if (k.outer * 256 + k.inner < n) { body } }
//
// (cascade_sum's blocks of 4096 elements over a row of n / 16 vectors): for rows of 128, 8
// iterations do work and 248 only test and skip, once per row. And a reduction over a symbolic
// row split into vectors (a factored reduction's condition, which the loop nest's own partition
// in schedule_ops does not see) tests `k * 16 + lane < n` on every vector, its masked form
// keeping the accumulator in memory.
//
// When a loop's body is, through loops nested in it, an `if` without else, and one conjunct of
// its condition is `var * c + g + rest < bound` (c > 0 constant, g an expression of the nested
// loops' variables with constant ranges, rest and bound free of both), the iterations fall in
// three parts: those where the conjunct holds for every nested iteration (the loop without it),
// those where it holds for some (the loop as it was: the tail), and those where it holds for
// none (dropped):
//
//   for (k, 0, P_all) { body without the conjunct }
//   for (k, P_all, P_none - P_all) { body }
//
// with each end clamped to the loop's range (a loop of negative extent runs no iteration). Only
// a guard whose body holds no loop is split, so that the copies stay two per loop.
// Runs after full_tile_guards (on simplified, flattened statements), before partition_loops.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt clamp_guarded_loops(const Stmt& s);

}  // namespace ptb
