// cse: common subexpression elimination. When a pure op (Pass.h: isPure) has
// the same kind, operands, attributes and result types as one before it in
// the same block or in an enclosing block, its results are replaced by the
// earlier op's and it is erased. Ops in sibling regions (the two arms of an
// scf.if, or an op after a loop and one inside it) are never merged: the
// earlier one does not dominate the later.
//
// Loads are not merged (a store may come between them), nor allocations,
// barriers, cluster collectives or ops with regions.
//
// Expects verified IR. Guarantees verified IR with the same semantics and no
// two equal pure ops where the first dominates the second.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

bool runCSE(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
