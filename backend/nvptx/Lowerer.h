// Internals of the tile IR -> LLVM IR lowering (backend/nvptx). Not a public
// header: Codegen.h is the API.
//
// Every tile value becomes, in each thread, the list of elements that thread
// holds under its layout (ir/passes/Layout.h): `TV::regs[c * V + v]` is element
// (c * T + tid) * V + v of the row-major tile (blocked), or the layout's
// element for rows in warps (`elemIndex` maps both), or the one value of a
// uniform tile. Elementwise ops work register by register; ops that move
// elements between threads (broadcast of a held tile, transpose, reductions,
// cluster reductions) go through shared-memory scratch buffers, each use
// fenced by bar.sync after its writes and, unless the previous use went to
// the other buffer (scratchBegin), before them; or through warp shuffles.
// Index-like values (arange, broadcasts and arithmetic of them with uniform
// values) are recomputed at any element instead of moved ("remat"), and so
// are row totals that stay in the lanes of their rows' warps (laneFolds).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "ir/IR.h"
#include "ir/passes/Layout.h"
#include "support/Status.h"

namespace fnk::nvptx::detail {

/// A lowered tile: its layout and the registers this thread holds.
/// Static shared memory a kernel may declare (ptxas's limit); past it the
/// lowering uses dynamic shared memory, up to Hopper's 227 KiB per CTA.
constexpr int64_t kMaxStaticShared = 48 * 1024;
constexpr int64_t kMaxDynamicShared = 227 * 1024;

struct TV {
  ir::TileLayout layout;
  std::vector<int64_t> shape;
  ir::DType dtype = ir::DType::F32;
  std::vector<llvm::Value*> regs;
};

/// A lowered memory operand: a global tensor or a shared buffer.
struct Mem {
  llvm::Value* base = nullptr;          // ptr addrspace(1) or (3)
  std::vector<llvm::Value*> dims;       // i64
  std::vector<llvm::Value*> strides;    // i64, row-major
  ir::DType dtype = ir::DType::F32;
  unsigned addrSpace = 1;
  /// A shared buffer of 4-byte elements whose 16-byte pieces are swizzled
  /// (Lowerer::elemPtr): element offset e lives at e ^ ((e >> 3) & 4).
  bool swizzle = false;
};

/// Along the innermost axis, a value's elements come in runs of `contig`
/// consecutive integers and runs of `constant` equal values, each run starting
/// at a multiple of its length (powers of two or the whole axis).
struct AxisInfo {
  int64_t contig = 1;
  int64_t constant = 1;
};

/// The elementwise ops and casts: pure, one result element from the operands'
/// elements at the same index, so recomputable anywhere (Lowerer::arith).
bool isArith(ir::OpKind k);
/// Maps the multi-index `dst` of a broadcast result to the source multi-index
/// of a source of shape `srcShape` (NumPy broadcasting, innermost dims aligned).
std::vector<llvm::Value*> broadcastSource(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& dst,
                                          const std::vector<int64_t>& srcShape);

class Lowerer {
public:
  Lowerer(llvm::Module& mod, const ir::Function& fn);
  /// Builds the kernel; the error names the kernel and the op.
  Status run();

  // --- shared state -------------------------------------------------------
  llvm::LLVMContext& ctx;
  llvm::Module& mod;
  const ir::Function& fn;
  llvm::IRBuilder<> b;
  llvm::Function* kernel = nullptr;
  llvm::Value* tid = nullptr;  // i32
  int64_t T = 0;               // threads per CTA
  /// The versioned kernel's `if n == C` (ir::launchBranch) when the launch
  /// decided it (TargetOptions::body): only its `decidedThen` branch is lowered.
  const ir::Operation* decidedIf = nullptr;
  bool decidedThen = false;
  /// TargetOptions::unaligned (after FNK_UNALIGNED): code for tensors off
  /// 16-byte alignment (joinedStore, elementsOf, wordsOf).
  bool unaligned = false;
  /// Global loads read a partly valid chunk whole, as one vector, where its
  /// address is aligned and its first or last element is in bounds, and
  /// select its valid elements after (loadAt, Keep). FNK_PARTIAL_CHUNKS, or
  /// else the kernel's launch(aligned_code = true).
  bool partialChunks = false;

  // --- types and small helpers (Lowerer.cpp) --------------------------------
  llvm::Type* regType(ir::DType t);  // in registers (i1 as i1)
  llvm::Type* memType(ir::DType t);  // in memory (i1 as i8)
  llvm::Type* accType(ir::DType t);  // arithmetic: f16/bf16 widen to f32
  ir::TileLayout layoutOf(const std::vector<int64_t>& shape) const { return ir::tileLayout(shape, T); }
  llvm::Value* i32(int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); }
  llvm::Value* i64(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }
  /// Row-major element index (i32) of register `r` of this thread.
  llvm::Value* elemIndex(const ir::TileLayout& l, int64_t r);
  /// Whether register `r` holds a real element (not padding); null when always.
  llvm::Value* elemValid(const ir::TileLayout& l, int64_t r);
  /// Rows in warps: element index of this thread's first register (computed once, at entry).
  llvm::Value* rowBase(const ir::TileLayout& l);
  /// Multi-index (i32 each) of row-major element `e` of `shape`.
  std::vector<llvm::Value*> coordsOf(llvm::Value* e, const std::vector<int64_t>& shape);
  llvm::Value* linearize(const std::vector<llvm::Value*>& coords, const std::vector<int64_t>& shape);
  llvm::Value* intrinsic(unsigned id, llvm::ArrayRef<llvm::Type*> types, llvm::ArrayRef<llvm::Value*> args);
  void barrier();
  /// Attaches one llvm.loop hint (e.g. "llvm.loop.unroll.disable") to a loop's back edge.
  void loopHint(llvm::Instruction* backEdge, llvm::ArrayRef<llvm::Metadata*> hint);
  /// The scratch buffer in shared memory, at least `bytes` long (16-aligned).
  llvm::Value* scratch(int64_t bytes, int which = 0);
  /// Starts one use of scratch memory (the caller writes it, bar.sync, reads
  /// it): returns the buffer and emits the leading bar.sync only when an
  /// earlier use's readers may still be reading it. Small uses alternate
  /// between two buffers, so in straight-line code the previous use's trailing
  /// bar.sync (which every thread passes after its reads of the use before)
  /// already protects the buffer; after a loop or branch that used scratch,
  /// or for large uses, the leading bar.sync stays.
  llvm::Value* scratchBegin(int64_t bytes);
  enum class ScratchState { None, A, B, Unknown };
  ScratchState scratchState = ScratchState::None;  // the last use, as seen here
  int64_t scratchUses = 0;
  llvm::Value* andAll(llvm::Value* a, llvm::Value* c);  // either may be null (true)
  /// Runs `body` only when `cond` holds (a branch; no values flow out).
  void emitIf(llvm::Value* cond, const std::function<void()>& body);
  TV makeTV(const ir::Type& t);
  const TV& tile(const ir::Value* v);
  Status fail(const ir::Operation& op, const std::string& msg);

  // --- regions and control flow (Lowerer.cpp) ---------------------------------
  Status lowerBlock(const ir::Block& blk, std::vector<TV>* yielded);
  Status lowerBlockOps(const ir::Block& blk, std::vector<TV>* yielded);
  Status lowerOp(const ir::Operation& op);
  Status lowerFor(const ir::Operation& op);
  Status lowerIf(const ir::Operation& op);

  // --- elementwise (Arith.cpp) -----------------------------------------------
  Status lowerElementwise(const ir::Operation& op);
  /// One element of `op` (elementwise or cast) applied to `in` (register types).
  llvm::Value* arith(const ir::Operation& op, const std::vector<llvm::Value*>& in);
  /// Integer x / d (div) or x % d as the interpreter defines them: a zero d traps.
  llvm::Value* intDivRem(bool div, bool sgn, llvm::Value* x, llvm::Value* d);
  llvm::Value* cast(llvm::Value* v, ir::DType from, ir::DType to);
  llvm::Value* toAcc(llvm::Value* v, ir::DType t);    // widen f16/bf16 to f32
  llvm::Value* bf16ToF32(llvm::Value* v);              // exact: the bits, 16 places up
  // A 16-bit tile as 32-bit words of two elements each (the form its loads
  // produced), for values that cross a loop's phis; unpackPairs undoes it
  // given the element count. Other tiles pass through.
  TV packPairs(TV t);
  TV unpackPairs(TV t, size_t count);
  llvm::Value* fromAcc(llvm::Value* v, ir::DType t);  // narrow back
  std::string unsupported_;  // set by arith() for ops the GPU path lacks

  // --- layouts, broadcasts, reductions (Layout.cpp) ------------------------------
  Status lowerShape(const ir::Operation& op);
  Status lowerReduce(const ir::Operation& op);
  /// Lowers reductions together: those that fold across warps share one
  /// scratch buffer and one bar.sync (sibling reductions, see lowerBlockOps).
  Status lowerReduces(const std::vector<const ir::Operation*>& ops);
  /// Whether `op` is a reduction whose fold crosses warps through scratch.
  bool foldsAcrossWarps(const ir::Operation& op);
  /// The accumulator a reduction of `dt` folds in.
  struct ReduceAcc {
    llvm::Type* ty = nullptr;
    ir::DType dt = ir::DType::F32;
    llvm::Value* id = nullptr;  // the identity of the reduction's kind
    int64_t bytes = 4;
  };
  ReduceAcc reduceAcc(const std::string& kind, ir::DType dt);
  llvm::Value* toReduceAcc(llvm::Value* v, ir::DType dt);
  /// Reductions off the inner-axis fast path (outer axes, non-power-of-two rows).
  Status lowerReduceOther(const ir::Operation& op, TV out, const ReduceAcc& ra);
  void finishReduce(const ir::Operation& op, TV out, const std::vector<llvm::Value*>& acc);
  /// A reduction's accumulator value in its result dtype.
  llvm::Value* fromReduceAcc(const ir::Operation& op, llvm::Value* v);
  /// `v` as a tile of `shape` (NumPy broadcast), in that shape's layout.
  TV broadcastTo(const ir::Value* v, const std::vector<int64_t>& shape);
  /// Moves `src` into the layout of `dstShape`; `srcIndex` maps a destination
  /// element index (i32) to the source element index it takes.
  TV relayout(const TV& src, const std::vector<int64_t>& dstShape,
              const std::function<llvm::Value*(llvm::Value*)>& srcIndex);
  /// Recomputes `v` at the element with multi-index `coords` of `v`'s shape;
  /// null when `v` is not a pure function of its coordinates and uniform values.
  llvm::Value* remat(const ir::Value* v, const std::vector<llvm::Value*>& coords, int depth = 0);
  /// `v` broadcast to `shape`, each element recomputed by remat (once per
  /// V-element chunk when `perChunk`: the value is constant along the
  /// innermost axis); nullopt when some element cannot be.
  std::optional<TV> rematElems(const ir::Value* v, const std::vector<int64_t>& shape, bool perChunk);
  /// `v` broadcast to `shape`, recomputed op by op at that shape (loads of
  /// read-only tensors issued again as tiles of it); nullopt when it cannot be.
  std::optional<TV> rematTile(const ir::Value* v, const std::vector<int64_t>& shape, int depth = 0);
  bool rematLoads_ = false;  // remat may read a tensor again (rematElems with perChunk)
  /// The loads of a loop body that lowerFor issues ahead of their iteration
  /// (`init`: the loop-carried values, for the register estimate); empty when
  /// none qualify or, without `launch(prefetch = D)`, the registers do not allow.
  std::vector<const ir::Operation*> prefetchLoads(const ir::Block& body, const std::vector<TV>& init);
  /// A load of `op`'s tensor at `shape` (its index operands broadcast to it).
  TV loadAt(const ir::Operation& op, const std::vector<int64_t>& shape);
  /// Loads of values every thread holds (uniform layout) are issued by lane 0
  /// of each warp only (lowerFor's prefetch of a row's statistics, which the
  /// next iteration shuffles to every lane).
  bool laneZeroScalarLoads_ = false;
  /// Which elements of a load read in whole chunks (partialChunks) are its
  /// own: per chunk an i32 with bit e set where element e is valid (bounds,
  /// padding, mask); the others take `dflt` (constants: the load's `other`,
  /// or zeros). Applied by applyKeep where the values are taken: at once for
  /// a plain load, and for a load lowerFor issues rows ahead when its row
  /// comes (the bits travel the queue beside the values), so that nothing
  /// waits on the load where it is issued.
  struct Keep {
    std::vector<llvm::Value*> bits;
    int64_t vec = 1;
    std::vector<llvm::Value*> dflt;  // one, or one per register
  };
  TV applyKeep(TV t, const Keep& k);
  /// Set by lowerFor around a prefetched load: loadAt leaves its Keep in keep_
  /// instead of applying it.
  bool deferKeep_ = false;
  std::optional<Keep> keep_;
  /// A reduction's per-row partials left in scratch after its bar.sync: while
  /// no later scratch use has begun, any thread can fold any row's total from
  /// them, so a broadcast of the result back along the reduced axis (norms'
  /// x * rstd[:, None]) is a remat, not a trip through scratch.
  struct ScratchFold {
    llvm::Value* buf = nullptr;
    llvm::Type* accTy = nullptr;
    ir::DType accDt = ir::DType::F32;
    std::string kind;
    int64_t groupsPerRow = 1, rows = 1, bytes = 4, use = -1;
  };
  std::unordered_map<const ir::Value*, ScratchFold> scratchFolds;
  /// Rows in warps: a reduction along the rows whose every use can take the
  /// row totals from the lanes that hold them (laneReduce) keeps them there,
  /// one value per row of this thread (in its result dtype), and goes through
  /// no scratch and no bar.sync; its tile's registers are poison.
  std::unordered_map<const ir::Value*, std::vector<llvm::Value*>> laneFolds;
  /// A whole-tile CTA reduction whose one use is a scalar cluster.reduce of
  /// the same kind (warpPushes): left at each warp's partial (the butterfly's
  /// total, in every lane of the warp, in the accumulator's type), which the
  /// cluster.reduce pushes itself, so the CTA's scratch and bar.sync are
  /// skipped. The reduction has no entry in `tiles`.
  std::unordered_map<const ir::Value*, llvm::Value*> warpPartials;
  /// Whether reduction `op`, folded by the inner-axis fast path into one
  /// partial per warp (butterfly width `w`, `parts` values per thread), goes
  /// to its cluster.reduce as warp partials (FNK_WARP_PUSH, default on).
  bool warpPushes(const ir::Operation& op, int64_t w, size_t parts);
  /// Which of this thread's rows remat() is computing an element of (rows in
  /// warps: set by rematElems and lane stores), or -1.
  int64_t laneRow_ = -1;
  /// Whether reduction `op` is lane-held: its source is laid out in rows in
  /// warps, it folds along the rows, and each use of its result (through
  /// elementwise ops and expand_dims) is a broadcast back over the rows or a
  /// store, whose other operands remat() recomputes. Cached per op.
  bool laneReduce(const ir::Operation& op);
  /// Whether remat() can recompute `v` from lane-held row totals, constants,
  /// uniform values, aranges and loads of read-only tensors.
  bool laneRematable(const ir::Value* v, int depth = 0);
  /// Whether `v` is computed from a lane-held reduction (its registers are poison).
  bool laneDerived(const ir::Value* v, int depth = 0);
  /// Whether every use of `v` (a row total or a value computed from one, of
  /// the reduction's row count) is one laneReduce accepts; `rowsShape` is the
  /// reduced tile's shape, the only one a broadcast back may have.
  bool laneUsesOk(const ir::Value* v, const std::vector<int64_t>& rowsShape, int depth = 0);
  enum class LaneState { Pending, Yes, No };
  std::unordered_map<const ir::Operation*, LaneState> laneCache_;
  std::vector<const ir::Operation*> laneOrder_;  // laneReduce's ops in the order it began them
  /// A store of a lane-derived value: lane 0 of each row's warp stores the row's element.
  Status lowerLaneStore(const ir::Operation& op, const Mem& mem);
  /// The row total `row` (i32) of a recorded fold, in the reduction's result dtype:
  /// its partials pairwise (log2(G) dependent steps), or one after another
  /// with FNK_TREE_FOLD=0 (lowering v1.19 and before).
  llvm::Value* foldRow(const ScratchFold& f, llvm::Value* row);
  /// xs folded pairwise: (x0 + x1) + (x2 + x3) ..., log2(n) dependent steps.
  llvm::Value* foldPairwise(const std::string& kind, ir::DType t, std::vector<llvm::Value*> xs);
  /// One element of a global tensor: loaded when `valid`, else `dflt`.
  llvm::Value* guardedLoad(const Mem& m, ir::DType dt, llvm::Value* valid, llvm::Value* offset, llvm::Value* dflt);
  llvm::Value* combine(const std::string& kind, ir::DType t, llvm::Value* a, llvm::Value* c);
  llvm::Value* identity(const std::string& kind, ir::DType t);
  /// Warp shuffles (shfl.sync over the full warp) of a scalar of up to 64 bits.
  enum class Shfl { Bfly, Idx, Up, Down };
  llvm::Value* shuffleXor(llvm::Value* v, int offset);
  llvm::Value* shuffleIdx(llvm::Value* v, int lane);  // lane `lane`'s v, for every lane
  llvm::Value* shuffleUp(llvm::Value* v, int delta);  // lane - delta's v (the first delta lanes: their own)
  llvm::Value* shuffleDown(llvm::Value* v, int delta);  // lane + delta's v (the last delta lanes: their own)
  llvm::Value* shuffle(llvm::Value* v, int offset, Shfl mode);
  AxisInfo axisInfo(const ir::Value* v, int depth = 0);

  // --- memory (Memory.cpp) ------------------------------------------------------
  /// The address of element offset `off` (i64) of `m`, swizzled where m is.
  llvm::Value* elemPtr(const Mem& m, llvm::Type* ty, llvm::Value* off);
  Status lowerLoad(const ir::Operation& op);
  Status lowerStore(const ir::Operation& op);
  Status lowerPrefetch(const ir::Operation& op);
  /// tile.atomic: atom.add per valid element, the old values as the result;
  /// of a uniform tile, by thread 0, its result broadcast through scratch.
  Status lowerAtomic(const ir::Operation& op);
  Status lowerWaitGe(const ir::Operation& op);
  Status lowerCopyAsync(const ir::Operation& op);
  Status lowerCopyBulk(const ir::Operation& op);
  Status lowerBulkWait(const ir::Operation& op);
  Status lowerStoreBulk(const ir::Operation& op);
  Status lowerBulkStoreWait(const ir::Operation& op);
  /// A shared buffer that copy_bulk fills: one mbarrier per slot, and this
  /// thread's parity bits (bit s: the phase its next wait on slot s waits for).
  struct BulkState {
    llvm::GlobalVariable* bars = nullptr;
    llvm::AllocaInst* phase = nullptr;
    int64_t slots = 1;
  };
  BulkState& bulkState(const ir::Value* buffer);
  /// At the kernel's entry: the mbarriers of every buffer a copy_bulk fills.
  void initBulkBarriers(const ir::Block& body);
  Status lowerSharedAlloc(const ir::Operation& op);
  // --- cluster (Cluster.cpp) ------------------------------------------------------
  Status lowerCluster(const ir::Operation& op);

  std::unordered_map<const ir::Value*, TV> tiles;
  std::unordered_map<const ir::Value*, Mem> mems;
  /// Tensor parameters some tile.store writes (the others are read-only).
  std::unordered_set<const ir::Value*> written;
  /// Loads lowered ahead of their position (hoistLoads).
  std::unordered_set<const ir::Operation*> early;
  /// Lowers, now, the loads after `pos` in `blk` that read a read-only global
  /// tensor and whose operands are all lowered: issued before a reduction's
  /// barriers, their latency overlaps it instead of following it.
  Status hoistLoads(const ir::Block& blk, const ir::Operation* pos);
  /// Lowers `first`, a reduction that folds across warps, together with its
  /// siblings: the later reductions of `blk` that fold across warps and do not
  /// depend on it. Their pure operand chains are lowered ahead, and all share
  /// one bar.sync (LayerNorm's backward: sum(g) and sum(g * xhat)).
  /// FNK_NO_SIBLING_REDUCE=1 lowers each on its own.
  Status lowerWithSiblings(const ir::Block& blk, const ir::Operation& first);
  /// The lowering's own rule for CTAs per SM to request from ptxas
  /// (.minnctapersm), or 0 for none.
  int64_t fullOccupancyCtas();
  /// Whether a loop step depends on a scalar argument, memory or another
  /// loop's values, rather than only on constants, shapes and the launch: the
  /// loop then traps on a step below 1 instead of running forever.
  static bool stepFromData(const ir::Value* v);
  /// CTAs per SM requested from ptxas: FNK_MINCTAS, else the kernel's
  /// launch(ctas_per_sm = K), else fullOccupancyCtas(); 0 for none.
  int64_t residentCtas();
  /// residentCtas(), as run() asked ptxas for it (the prefetch rule's cap).
  int64_t minCtas = 0;
  /// The block being lowered (innermost).
  const ir::Block* curBlock = nullptr;
  /// The block whose cluster.reduce issued a barrier.cluster.arrive whose wait
  /// is still to come (see Cluster.cpp); null when none.
  const ir::Block* clusterWaitPending = nullptr;
  /// Issues the pending barrier.cluster.wait, if any.
  void flushClusterWait();
  /// The st.async push (FNK_CLUSTER_ASYNC, default on): two mbarriers per
  /// scalar cluster.reduce of the kernel, initialized at entry; the next
  /// reduce lowered takes pair clusterMbarNext.
  llvm::GlobalVariable* clusterMbar = nullptr;
  int64_t clusterMbarNext = 0;
  /// Lays out the module's shared arrays: static when they fit 48 KiB, else
  /// one dynamic array (see Lowerer.cpp). Runs once, after the kernel body.
  Status placeShared();
  /// An inline-asm statement; with side effects (the default) it is never
  /// moved, merged or dropped, without it LLVM may treat it as a pure value.
  llvm::Value* ptx(const std::string& text, const std::string& constraints, llvm::Type* ret,
                   const std::vector<llvm::Value*>& args, bool sideEffects = true);
  /// This thread's memory accesses before it seen device-wide before those
  /// after (fence.acq_rel.gpu): the fence op, and a release atomic's.
  void fenceGpu();
  /// The 32-bit shared::cta address of a shared-memory pointer.
  llvm::Value* sharedAddr(llvm::Value* p);
  /// The st.async push of a scalar cluster.reduce and its siblings
  /// (Cluster.cpp): `vs` into this CTA's slot `rank` (its place in its rank
  /// group) of `width` values (1, 2 or 4; padded) at each of the group's n
  /// CTAs, from rank `first` (null: the whole cluster, from 0); the mbarrier
  /// its wait waits on, and the phase.
  std::pair<llvm::Value*, llvm::Value*> asyncPush(llvm::GlobalVariable* buf, llvm::Type* accTy, int64_t bytes,
                                                  llvm::Value* execs, llvm::Value* base, llvm::Value* rank,
                                                  llvm::Value* first, const std::vector<llvm::Value*>& vs,
                                                  int64_t width, int64_t n, int64_t perRank = 1);
  /// A scalar cluster.reduce of warp partials (warpPartials) over rank
  /// groups of G, with its ready siblings: every warp pushes its own, and
  /// every thread folds the G * warps values.
  Status lowerWarpPush(const ir::Operation& op, int64_t G);
  /// A shared array of `slots` accumulators for a cluster.reduce's pushes.
  llvm::GlobalVariable* clusterBuf(llvm::Type* accTy, int64_t slots);
  /// How many times this point ran before, in this thread: a counter in a
  /// private variable (a register, loop-carried in loops), bumped here.
  llvm::Value* executionCount();
  /// For a reduction over rank groups of G: the rank this CTA's group starts
  /// at (null when G is the whole cluster) and this CTA's place in it.
  std::pair<llvm::Value*, llvm::Value*> groupRanks(int64_t G);
  /// A load's or store's `stream = true` (evict_first) or `keep = true`
  /// (evict_last) on 4-, 8- and 16-byte global accesses (Memory.cpp): the
  /// priority (null for none) and its L2 policy, made once per access (null
  /// for L1 alone: FNK_KEEP_L2=0), and the load and store that carry both.
  struct Eviction {
    const char* priority = nullptr;
    llvm::Value* policy = nullptr;
  };
  Eviction evictionOf(const ir::Operation& op, const Mem& mem, const struct ChunkPlan& plan);
  llvm::Value* hintedLoad(llvm::FixedVectorType* vty, llvm::Value* addr, const Eviction& e);
  void hintedStore(llvm::Value* v, llvm::Value* addr, const Eviction& e);
  /// The scalar cluster.reduce `first` and the later ones of its block whose
  /// values are lowered already, to push together (at most 4).
  /// With `warp`, siblings of a warp-partial reduce (warpPartials) instead.
  std::vector<const ir::Operation*> clusterSiblings(const ir::Operation& first, bool warp = false);
  /// Every thread waits for phase `phase` of the mbarrier at `mbar` (trapping
  /// after `trapAfter` tries when that is not 0).
  void mbarWait(llvm::Value* mbar, llvm::Value* phase, uint32_t trapAfter = 0);
  /// Closes a spin loop whose try failed (mbarWait with a trap bound, as the
  /// bulk copies' waits; wait_ge's poll): in `retry`, one more try counted on `tries`
  /// (the phi at the loop's head, `again`), back to `again` while fewer than
  /// `limit` were made, else to `stuck`, which traps, so that a wait nothing
  /// ends fails the launch with the kernel's name instead of hanging the GPU.
  /// `rolled` keeps LLVM from unrolling the loop. The caller creates the
  /// blocks, so each loop keeps its own block order (and PTX).
  void closeSpinLoop(llvm::PHINode* tries, llvm::BasicBlock* retry, llvm::BasicBlock* again,
                     llvm::BasicBlock* stuck, uint32_t limit, bool rolled);
  /// A scalar cluster.reduce whose wait and fold are deferred
  /// (FNK_CLUSTER_DEFER=1) to the first op of its block that uses the result,
  /// or to the block's end; `finish` emits them and binds the result.
  struct PendingFold {
    const ir::Value* result;
    const ir::Block* block;
    std::function<void()> finish;
  };
  std::vector<PendingFold> pendingFolds;
  /// Emits the pending folds of `blk` that `user` (or an op in its regions)
  /// needs; all of them when `user` is null.
  void flushFolds(const ir::Block& blk, const ir::Operation* user);

private:
  std::map<const ir::Value*, BulkState> bulk_;
  std::vector<const ir::Value*> bulkOrder_;  // bulk_'s buffers in program order, to emit them in it
  llvm::GlobalVariable* scratch_[2] = {nullptr, nullptr};
  int64_t scratchBytes_[2] = {0, 0};
  std::unordered_map<int64_t, llvm::Value*> tidTimes_;
  std::map<std::pair<int64_t, int64_t>, llvm::Value*> rowBase_;  // (row length, V) -> rowBase
  Status error_ = Status::ok();
  void finishScratch();
};

/// Cluster barriers: cluster.sync, and those of cluster.reduce (reading the
/// rank or size needs none).
bool isClusterBarrier(const ir::Operation& op);
/// The mbarrier pairs of fn's st.async cluster.reduce push: one per scalar
/// cluster.reduce of a cluster kernel, 0 with FNK_CLUSTER_ASYNC=0 or none.
/// PTX ISA 8.1 (st.async) only when this is nonzero.
int64_t asyncPushPairs(const ir::Function& fn);

/// Whether fn needs PTX ISA 8.1: the st.async push (asyncPushPairs), or an
/// atomic add, whose vector form (red.global.add.v4.f32) is 8.1. Other kernels
/// stay at 8.0, so that their PTX does not change.
bool needsPtx81(const ir::Function& fn);

}  // namespace fnk::nvptx::detail
