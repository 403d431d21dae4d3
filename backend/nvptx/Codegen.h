// The NVPTX code generator: one specialized kernel (ir::Function after the
// pipeline) -> LLVM IR -> optimized by LLVM's O3 pipeline -> PTX text, for
// sm_90a (PTX 8.0) by default. The parameter ABI is in backend/nvptx/Abi.h.
#pragma once
#include <cstdint>
#include <string>

#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::nvptx {

struct TargetOptions {
  std::string arch = "sm_90a";
  std::string features = "+ptx80";
  bool optimize = true;
  /// Which body of a versioned kernel (ir::launchBranch) to generate: -1
  /// both, behind the run-time test (AOT, where the launch's shapes are not
  /// known, and the JIT with FNK_JIT_ONE_BODY=0 or where one body alone
  /// spills more); 1 the full tile's, 0 the other (the JIT by default, from
  /// the launch's shapes; `fnkc --body`).
  int body = -1;
  /// Code for global tensors off 16-byte alignment (rows of a width that
  /// is not a multiple of 16 bytes, or views): stores whose 16-byte pieces
  /// lie off alignment join them across lanes (joinedStore) instead of
  /// storing them element by element, and the element-by-element form of a
  /// vector access skips the per-element bounds tests in chunks that are
  /// wholly valid (elementsOf; 16-bit loads by the words that cover them:
  /// wordsOf). The JIT sets it for a launch with a tensor
  /// off 16 bytes (rt::launchVariant), since it costs aligned launches
  /// registers. Without effect where alignmentMatters says no (a kernel
  /// with launch(aligned_code = true) gets the aligned code, as the JIT
  /// runs it). FNK_UNALIGNED=1 sets it everywhere (fnkc too), =0 nowhere.
  bool unaligned = false;
};

/// The lowering's A/B knobs: environment variables (docs/language.md lists
/// them), read once, each part of loweringKey() but JitOneBody (the body it
/// picks is in the runtime's key), as are the IR passes' own (ir/Knobs.h).
enum class Knob {
  NoContract,          // FNK_NO_CONTRACT: no fma contraction
  NoHoist,             // FNK_NO_HOIST: loads stay after the reductions they follow
  NoPrefetch,          // FNK_NO_PREFETCH: row loops do not load the next row ahead
  PrefetchMinChunks,   // FNK_PREFETCH_MIN_CHUNKS: prefetch only tiles of this many chunks per thread
  PrefetchMaxThreads,  // FNK_PREFETCH_MAX_THREADS: prefetch past the register budget up to this CTA size
  NoSiblingReduce,     // FNK_NO_SIBLING_REDUCE: each reduction crosses warps on its own
  NoMinCtas,           // FNK_NO_MINCTAS: no occupancy request to ptxas
  MinCtas,             // FNK_MINCTAS: ask ptxas for this many CTAs per SM
  ScratchBarriers,     // FNK_SCRATCH_BARRIERS: a leading bar.sync before every scratch use
  Unroll,              // FNK_UNROLL: unroll loops that load by this factor
  ClusterAsync,        // FNK_CLUSTER_ASYNC (default 1): scalar cluster.reduce by st.async and mbarriers
  UniformPrefetch,     // FNK_UNIFORM_PREFETCH: prefetched scalars loaded by every lane, not lane 0 and a shuffle
  ClusterDefer,        // FNK_CLUSTER_DEFER: a scalar cluster.reduce's wait and fold at the first use of its result
  TreeFold,            // FNK_TREE_FOLD (default 1): a row's warp partials folded pairwise, 0: one after another
  Pdl,                 // FNK_PDL: programmatic dependent launch (nvptx::kPdlSymbol)
  NoSwizzle,           // FNK_NO_SWIZZLE: shared buffers of 4-byte elements in the plain layout
  NoStream,            // FNK_NO_STREAM: loads and stores with stream = true or keep = true take the default priority
  JitOneBody,          // FNK_JIT_ONE_BODY (default 1): the JIT compiles only the body of a versioned kernel a launch runs
  WarpPush,            // FNK_WARP_PUSH (default 1): a CTA sum feeding a scalar cluster.reduce pushed by each warp
  KeepL2,              // FNK_KEEP_L2 (default 1): keep = true also asks L2 for evict_last (0: L1 alone)
  Unaligned,           // FNK_UNALIGNED: 1 always, 0 never, unset as TargetOptions::unaligned says
  PartialChunks,       // FNK_PARTIAL_CHUNKS: 1 always, 0 never, unset in aligned_code kernels (Lowerer::partialChunks)
};
/// The knob's variable as an integer (a non-numeric text counts as 1), or
/// `dflt` when it is unset or empty.
int64_t knob(Knob k, int64_t dflt = 0);
/// A knob that forces a choice either way: =1 true, =0 false, unset `asked`.
bool forcedOr(Knob k, bool asked);

/// Identifies the code this backend generates for a given IR: a revision
/// string bumped with every change to the lowering, plus the values of the
/// knobs. Module caches key on it so that cubins of an older backend, or of
/// another knob setting, are never reused.
std::string loweringKey();

/// Whether the code for tensors off alignment is compiled where a launch
/// (or fnkc) asks for it or not: FNK_UNALIGNED=1 always, =0 never, unset
/// as asked.
bool unalignedCode(bool asked);

/// Whether TargetOptions::unaligned can change `fn`'s code: some load or
/// store of a tile from or to a global tensor may go in vector chunks
/// (joinedStore, elementsOf), and the kernel does not ask for the aligned
/// code alone (launch(aligned_code = true)). Where it cannot, the runtime
/// compiles no variant for it.
bool alignmentMatters(const ir::Function& fn);

/// LLVM IR text of `fn` (before optimization when `opts.optimize` is false).
Status emitLLVM(const ir::Function& fn, const TargetOptions& opts, std::string& out);
/// PTX text of `fn`; the module holds one .entry named after the kernel.
Status emitPTX(const ir::Function& fn, const TargetOptions& opts, std::string& out);

}  // namespace fnk::nvptx
