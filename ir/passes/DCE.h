// dce: dead code elimination. Erases pure ops (Pass.h: isPure) none of whose
// results are used, in every block including nested regions, until nothing
// more can go; an scf.for or scf.if whose results are unused goes too when
// everything inside it is pure. Ops with effects (stores, barriers, cluster
// collectives, allocations, loads) stay even when unused.
//
// Expects verified IR. Guarantees verified IR with the same effects and no
// unused pure op.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

bool runDCE(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
