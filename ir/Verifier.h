// Checks that a module is well formed, so that passes, the interpreter and
// the backends may assume it instead of re-checking: every op has the arity
// Ops.def gives it, operand and result types obey the op's rule (stated once,
// in one function per op family in VerifyOps.cpp, reached through a switch over
// OpKind that has no default so a new op without a rule does not compile),
// values are defined before use in an enclosing block, regions end in the
// right terminator, a kernel's launch/body blocks take its parameters, and
// every CTA of a cluster reaches its cluster barriers alike (ClusterUniform.h).
//
// Each error is reported at the op's location and names the concrete types,
// e.g. "tile.add operands have different types: tile<f32>[128] and
// tile<bf16>[128]". Values are named as ir::print numbers them.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

/// Returns true when `m` is well formed; otherwise reports every problem found
/// (at most one per op) and returns false.
bool verify(const Module& m, DiagEngine& diags);

}  // namespace fnk::ir
