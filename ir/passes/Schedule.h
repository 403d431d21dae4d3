// schedule: pure computations that do not need a reduction's result are moved
// above it when that leaves fewer tile elements live across it.
//
// A reduction that folds across threads is a barrier on the GPU, and what is
// live across it holds registers while the warps wait (or, for a cluster
// reduction, while the whole cluster does). The textbook order of a norm's
// backward computes a row sum, then dx from it, then the partial column sums
// (dw += dy * xhat): dy stays live across the sum only to update dw after it.
// For each reduction (tile.reduce, cluster.reduce) in a block, the pure ops
// after it whose operands are all available before it (defined earlier in the
// block, or outside it) are candidates; connected candidates move together,
// and of the subsets of those groups the one that leaves the fewest tile
// elements live across the reduction is moved, in block order, to just before
// it (none when nothing improves). Other reductions, loads, stores and ops
// with regions never move. A block's ops are visited in order, nested blocks
// too, so a later reduction sees the result of an earlier one's moves.
//
// Expects verified IR. Guarantees verified IR with the same semantics: only
// pure ops move, and only above ops none of their operands depend on.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

bool runSchedule(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
