// The CPU interpreter of tile IR: the reference semantics of fnk. It runs every
// CTA of the grid; the CTAs of one cluster run as cooperating threads so that
// cluster.sync and cluster.reduce mean what they mean on the GPU. Values are
// computed in double and rounded to their dtype after every op, so bf16/f16/f32
// results carry the rounding the GPU would apply.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ir/IR.h"
#include "support/HostArray.h"
#include "support/Status.h"

namespace fnk::interp {

/// A dense row-major host array (support/HostArray.h). Elements are held as
/// double, each already representable in `dtype` (integers exactly up to 2^53).
using HostTensor = HostArray;

/// One launch argument, in the order of Function::params: a tensor for tensor
/// parameters (outputs are written in place), a number for scalars.
using Arg = std::variant<HostTensor*, double>;

struct RunOptions {
  /// Fill `out` tensors with NaN (ints with a pattern) before running, so a
  /// kernel that forgets to write an element is caught by the caller's check.
  bool poisonOutputs = false;
};

/// Binds symbolic dims from the tensors' shapes (a dim named twice must agree),
/// checks dtypes and ranks, evaluates the launch region, and runs the grid.
/// Errors name the parameter (shape/dtype mismatches) or the CTA and the op
/// (runtime faults such as an integer division by zero or a cluster barrier
/// some CTA never reaches); they do not name the kernel, which callers add.
/// The semantics of each op are in docs/ir.md.
Status run(const ir::Function& fn, const std::vector<Arg>& args, const RunOptions& opts = {});

/// The grid of a launch: the launch region (grid and `requires`) evaluated on
/// the host. Tensors supply their shapes only (data may be empty, as for
/// device tensors); arguments are checked as run() checks them.
Status launchGrid(const ir::Function& fn, const std::vector<Arg>& args, int64_t grid[3]);

/// "M = 3, N = 1000": the symbolic dims `args` bind, for messages about a
/// launch (a failed `requires`, a bad grid).
std::string describeDims(const ir::Function& fn, const std::vector<Arg>& args);

}  // namespace fnk::interp
