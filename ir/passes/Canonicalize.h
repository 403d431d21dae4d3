// canonicalize: brings equivalent computations to one form, so that later
// passes (and the fusion planner) see the same IR however the math was written.
//
// Does, to a fixed point, in every block including nested regions:
//   - folds elementwise ops and casts whose operands are all scalar or splat
//     constants into a constant, computing exactly what the interpreter
//     (docs/ir.md) computes: integer arithmetic wraps at the dtype's width,
//     floats compute in double from operands rounded to the dtype and round
//     once. Folds only what is exactly defined and cheap to get right: no
//     integer division by zero, INT_MIN / -1, abs(INT_MIN) or out-of-range
//     shifts; no float min/max with NaN or two zeros; no rem, pow or
//     transcendental functions (libm and GPU results differ in the last bit)
//   - x*1, 1*x, x/1, x-0 -> x; x+0, 0+x -> x for integers (for floats only
//     when the zero is -0.0, because -0.0 + 0.0 is +0.0)
//   - tile.cast / tile.broadcast / tile.reshape to the operand's own type -> x
//   - neg(neg(x)), not(not(x)) -> x
//   - tile.broadcast of a constant -> a constant of the broadcast type
// Replaced ops are erased; constants left without users stay for dce.
//
// Expects verified IR. Guarantees verified IR with the same semantics.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

bool runCanonicalize(Module& m, DiagEngine& diags);

}  // namespace fnk::ir
