// Cluster barriers every CTA of a cluster reaches alike. On the GPU a
// cluster.sync or cluster.reduce waits for all CTAs of the cluster; one that
// some CTAs skip, or reach a different number of times, leaves the others
// waiting forever (the interpreter stops with an error at run time). This
// check finds, before any launch, the barriers that sit under control flow
// that can differ between the CTAs of a cluster.
#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

/// Reports each cluster.sync or cluster.reduce of kernel `f` that lies in an
/// scf.if whose condition, or an scf.for whose bounds, depend on the CTA's
/// place in its cluster: on cluster.rank(), on program_id along an axis the
/// cluster spans, or on values computed or loaded from those. A
/// cluster.reduce's result is the same in every CTA, so it ends that
/// dependence. Assumes `f` is well formed (ir::verify); returns false when it
/// reported anything.
bool checkClusterUniform(const Function& f, DiagEngine& diags);

}  // namespace fnk::ir
