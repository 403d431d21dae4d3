// version: a kernel whose body masks its tiles to a run-time width (`cols <
// N` with cols = arange(0, C), as masked_center does for a row's padding)
// gets a second copy of its body for the full tile, N == C, where those
// compares are true and fold away with the selects they feed.
//
// Norm kernels hold a row of N elements in a tile of BLOCK_N >= N and mask
// the padding out of their variances per element: a compare, a select and the
// mask's bits kept across the reductions, a third of the instructions of the
// LayerNorm forward at 8192 columns on the H200 (docs/perf-notes.md, backend
// v9), all of them for nothing when the row fills the tile, as it does at the
// widths that matter. The JIT cannot fold them, since N is a run-time value,
// but one uniform branch can choose between the two bodies.
//
// For the kernel's body: the compares `a < n` (pred "lt") where `a` is
// arange(0, C), possibly broadcast or expanded, and `n` a scalar, possibly
// broadcast, defined in the body's entry block (a tile.dim of a parameter, or
// a parameter); the (n, C) with the most such compares is chosen. The ops
// after n's definition move into the else branch of `scf.if n == C`, and a
// copy of them, with those compares replaced by constant true, becomes the
// then branch. Nothing changes without such a compare, or when the body has
// an early return (its ops could not move into a branch).
//
// Expects verified IR. Guarantees verified IR with the same results: the then
// branch runs only where its compares are true. Canonicalize then folds the
// constant masks (selects on a constant condition, and-ing with true).
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

bool runVersion(Module& m, DiagEngine& diags);

/// The version pass's branch as a launch can decide it: the body's top-level
/// `if n == C` whose n is a dim of a tensor parameter or an integer
/// parameter, so that a JIT that knows the launch's shapes and scalars can
/// compile only the body the launch runs (half the PTX of a versioned
/// kernel) instead of both behind the run-time test (the JIT's default;
/// FNK_JIT_ONE_BODY=0: both).
struct LaunchBranch {
  const Operation* iff = nullptr;  // null: the kernel has no such branch
  size_t param = 0;                // the parameter n comes from
  int64_t axis = -1;               // n is dim `axis` of that tensor; -1: the scalar parameter itself
  int64_t full = 0;                // C: the then branch (the full tile) runs when n == C
};
LaunchBranch launchBranch(const Function& f);

}  // namespace fnk::ir
