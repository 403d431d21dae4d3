// tile.load / tile.store on global tensors and shared buffers, and
// gpu.shared_alloc. Every element is bounds-checked (0 <= idx < dim on every
// axis) and masked; a store of a uniform tile is done by thread 0 alone.
// Each group of V consecutive held elements becomes one vector access when
// the innermost index is contiguous over the group and the others constant
// (axisInfo), all V elements are valid and the address is aligned. That is
// checked at run time once for the whole access (every chunk valid, every
// address aligned: all C vector accesses in one block); when it fails, per
// chunk, with per-element accesses as the chunk's fallback. In the code for
// tensors off alignment (TargetOptions::unaligned) a global store joins its
// pieces across lanes instead (joinedStore), and a wholly valid chunk's
// fallback skips the per-element bounds tests (elementsOf), a load reading
// its 16-bit elements as the 4-byte words that cover them (wordsOf). A load or store
// with `stream = true` or `keep = true` of a global tensor issues its vector
// accesses with an evict_first or evict_last priority in L1 and L2 (evictionOf).
#include <algorithm>
#include <functional>
#include <numeric>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backend/nvptx/Codegen.h"
#include "backend/nvptx/Lowerer.h"

namespace fnk::nvptx::detail {

namespace {
constexpr int64_t kWhole = int64_t{1} << 40;  // "the whole axis" for run lengths
int64_t gcd(int64_t a, int64_t c) { return std::gcd(a, c); }
}  // namespace

AxisInfo Lowerer::axisInfo(const ir::Value* v, int depth) {
  const ir::Type& t = v->type();
  if (!t.isTile()) return {};
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  if (n == 1) return {1, kWhole};
  const ir::Operation* op = v->definingOp();
  if (!op || depth > 16) return {};
  using K = ir::OpKind;
  switch (op->kind()) {
    case K::Constant: return {1, kWhole};
    case K::Arange: return {kWhole, 1};
    case K::Broadcast: {
      const auto& s = op->operand(0)->type().shape;
      if (s.empty() || s.back() == 1) return {1, kWhole};
      return axisInfo(op->operand(0), depth + 1);
    }
    case K::ExpandDims:
      if (op->attrs().getInt("axis") == static_cast<int64_t>(t.shape.size()) - 1) return {};
      return axisInfo(op->operand(0), depth + 1);
    case K::Reshape:
      if (op->operand(0)->type().shape.empty() || op->operand(0)->type().shape.back() != t.shape.back()) return {};
      return axisInfo(op->operand(0), depth + 1);
    case K::Cast:
      if (!ir::isInt(op->operand(0)->type().dtype) || !ir::isInt(t.dtype)) return {};
      return axisInfo(op->operand(0), depth + 1);
    case K::Add:
    case K::Sub: {
      AxisInfo a = axisInfo(op->operand(0), depth + 1), c = axisInfo(op->operand(1), depth + 1);
      AxisInfo r;
      r.constant = gcd(a.constant, c.constant);
      r.contig = gcd(a.contig, c.constant);
      if (op->kind() == K::Add) r.contig = std::max(r.contig, gcd(a.constant, c.contig));
      return r;
    }
    case K::Mul: case K::Div: case K::And: case K::Or: case K::Min: case K::Max: {
      AxisInfo a = axisInfo(op->operand(0), depth + 1), c = axisInfo(op->operand(1), depth + 1);
      return {1, gcd(a.constant, c.constant)};
    }
    default: return {};
  }
}

namespace {

struct Access {
  const Mem* mem = nullptr;
  std::vector<TV> idx;  // broadcast to the access shape
  const TV* mask = nullptr;
  const TV* other = nullptr;
  bool vectorizable = false;
};

}  // namespace

// The access of a load, store, atomic or prefetch: its index operands (op[1]
// to op[rank]) and, when the op has a mask, op[maskAt], broadcast to the
// access shape; the mask's registers live in `maskTV`.
static Access accessOf(Lowerer& L, const ir::Operation& op, const Mem& mem, const std::vector<int64_t>& shape,
                       size_t maskAt, TV& maskTV) {
  Access a;
  a.mem = &mem;
  for (size_t d = 0; d < mem.dims.size(); ++d) a.idx.push_back(L.broadcastTo(op.operand(static_cast<unsigned>(1 + d)), shape));
  if (op.attrs().getBool("mask")) maskTV = L.broadcastTo(op.operand(static_cast<unsigned>(maskAt)), shape), a.mask = &maskTV;
  return a;
}

// Axis info of an index operand as it is broadcast to the access shape: an
// operand whose innermost dim is 1 (or missing) is constant along the access's.
static AxisInfo accessInfo(Lowerer& L, const ir::Value* idx, const std::vector<int64_t>& access) {
  const auto& s = idx->type().shape;  // broadcasting aligns the innermost dims
  if (!access.empty() && access.back() > 1 && (s.empty() || s.back() == 1)) return {1, kWhole};
  return L.axisInfo(idx);
}

// Bounds check and element offset of register r of an access. With `lastAdd`
// = k, the element k places after register r along the innermost axis (inside
// one vector chunk, whose innermost indices are contiguous): the indices are
// derived from register r's, so that the per-element index registers of a
// wide tile are not kept live for the fallback paths.
static void elementAddress(Lowerer& L, const Access& a, size_t r, llvm::Value*& valid, llvm::Value*& offset,
                           int64_t lastAdd = 0, llvm::Value* lastBase = nullptr) {
  auto& b = L.b;
  valid = nullptr;
  offset = b.getInt64(0);
  for (size_t d = 0; d < a.idx.size(); ++d) {
    llvm::Value* x = a.idx[d].regs[a.idx[d].layout.uniform ? 0 : r];
    x = b.CreateSExt(x, b.getInt64Ty());
    if (lastBase && d + 1 == a.idx.size()) x = lastBase;
    if (lastAdd != 0 && d + 1 == a.idx.size()) x = b.CreateAdd(x, b.getInt64(static_cast<uint64_t>(lastAdd)));
    // one unsigned compare covers 0 <= x < dim
    valid = L.andAll(valid, b.CreateICmpULT(x, a.mem->dims[d]));
    offset = b.CreateAdd(offset, b.CreateMul(x, a.mem->strides[d]));
  }
}

// Element r of an access laid out as `lay`: its offset, and whether it is
// accessed (in bounds, not layout padding, mask on). With k > 0 its indices
// are register r - k's plus k (see elementAddress), from `lastBase`.
static void elementAt(Lowerer& L, const Access& a, const ir::TileLayout& lay, size_t r, llvm::Value*& valid,
                      llvm::Value*& offset, int64_t k = 0, llvm::Value* lastBase = nullptr) {
  elementAddress(L, a, r - static_cast<size_t>(k), valid, offset, k, lastBase);
  valid = L.andAll(valid, L.elemValid(lay, static_cast<int64_t>(r)));
  if (a.mask) valid = L.andAll(valid, a.mask->regs[a.mask->layout.uniform ? 0 : r]);
}

// The innermost index (i64) of register r, behind an opaque copy: emitted at
// the top of a chunk's element-by-element fallback, it keeps the V per-element
// indices, compares and addresses derived from it inside that cold block
// (LICM would otherwise hoist them out of row loops, where they stay live
// across the whole loop: 24 64-bit registers for a 4-chunk tile).
static llvm::Value* lastIndexBase(Lowerer& L, const Access& a, size_t r) {
  auto& b = L.b;
  const TV& t = a.idx.back();
  llvm::Value* x = b.CreateSExt(t.regs[t.layout.uniform ? 0 : r], b.getInt64Ty());
  return L.ptx("mov.b64 $0, $1;", "=l,l", b.getInt64Ty(), {x});
}

// Whether an access of `shape` through the index values `idx` (one per memory
// dim) can use V-element vectors: the innermost index contiguous in runs of V,
// the others constant across them. The second form takes a load's, store's or
// atomic's index operands op[1..1+rank).
static bool vectorizable(Lowerer& L, const std::vector<const ir::Value*>& idx, const std::vector<int64_t>& shape,
                         int64_t V) {
  if (idx.empty() || accessInfo(L, idx.back(), shape).contig % V != 0) return false;
  for (size_t d = 0; d + 1 < idx.size(); ++d)
    if (accessInfo(L, idx[d], shape).constant % V != 0) return false;
  return true;
}

static bool vectorizable(Lowerer& L, const ir::Operation& op, size_t rank, const std::vector<int64_t>& shape,
                         int64_t V) {
  std::vector<const ir::Value*> idx;
  for (size_t d = 0; d < rank; ++d) idx.push_back(op.operand(static_cast<unsigned>(1 + d)));
  return vectorizable(L, idx, shape, V);
}

// The chunks of a vector access: per chunk, whether its V elements are all
// valid (bounds, layout padding, mask) and the address of its first element;
// over all chunks, whether every one is valid and the OR of their addresses
// (for one alignment test). Loads and stores share it.
struct ChunkPlan {
  int64_t piece = 0, perPiece = 0, chunks = 0;  // bytes per vector access, elements per access, chunks
  llvm::FixedVectorType* vty = nullptr;
  std::vector<llvm::Value*> ok, addr, off;  // per chunk: valid, its first element's address and offset
  std::vector<llvm::Value*> anyIn;  // per chunk: its first or last element in bounds (not mask or padding)
  llvm::Value* allAnyIn = nullptr;
  /// Set by a load that reads partly valid chunks whole (loadAt): the vector
  /// way goes where anyIn holds instead of ok.
  bool wholeReads = false;
  llvm::Value* vectorOk(int64_t c) const { return wholeReads ? anyIn[c] : ok[c]; }
  llvm::Value* allVectorOk() const { return wholeReads ? allAnyIn : allOk; }
  const Mem* mem = nullptr;
  llvm::Type* ty = nullptr;
  /// The address of vector access p of chunk c (each swizzled on its own:
  /// the swizzle keeps a 16-byte piece whole, not a chunk).
  llvm::Value* piecePtr(Lowerer& L, int64_t c, int64_t p) const {
    if (p == 0) return addr[c];
    if (!mem->swizzle) return L.b.CreateGEP(ty, addr[c], L.i64(p * perPiece));
    return L.elemPtr(*mem, ty, L.b.CreateAdd(off[c], L.i64(p * perPiece)));
  }
  /// The address of element e of chunk c of a global tensor (no swizzle: its
  /// elements follow the chunk's first; elementsOf).
  llvm::Value* elementPtr(Lowerer& L, int64_t c, int64_t e) const { return L.b.CreateGEP(ty, addr[c], L.i64(e)); }
  llvm::Value* allOk = nullptr;
  llvm::Value* addrBits = nullptr;

  llvm::Value* allAligned(Lowerer& L) const {
    return L.b.CreateICmpEQ(L.b.CreateAnd(addrBits, L.i64(piece - 1)), L.i64(0));
  }
  llvm::Value* aligned(Lowerer& L, int64_t c) const {
    llvm::Value* bits = L.b.CreatePtrToInt(addr[c], L.b.getInt64Ty());
    if (!alsoAligned.empty()) bits = L.b.CreateOr(bits, L.b.CreatePtrToInt(alsoAligned[c], L.b.getInt64Ty()));
    return L.b.CreateICmpEQ(L.b.CreateAnd(bits, L.i64(piece - 1)), L.i64(0));
  }
  /// A copy's other side (its destination): chunk c takes the vector path
  /// only where both addresses are aligned (merged in by `andAlso`).
  std::vector<llvm::Value*> alsoAligned;
  void andAlso(Lowerer& L, const ChunkPlan& other) {
    alsoAligned = other.addr;
    for (int64_t c = 0; c < chunks; ++c) ok[c] = L.andAll(ok[c], other.ok[c]);
    allOk = L.andAll(allOk, other.allOk);
    addrBits = L.b.CreateOr(addrBits, other.addrBits);
  }
};

static ChunkPlan planChunks(Lowerer& L, const Access& a, const ir::TileLayout& lay, llvm::Type* ty, int64_t bytes) {
  auto& b = L.b;
  const int64_t V = lay.vec;
  ChunkPlan p;
  p.piece = std::min<int64_t>(16, V * bytes);
  p.perPiece = p.piece / bytes;
  p.chunks = lay.chunks;
  p.vty = llvm::FixedVectorType::get(ty, static_cast<unsigned>(p.perPiece));
  p.ok.resize(static_cast<size_t>(p.chunks));
  p.addr.resize(static_cast<size_t>(p.chunks));
  p.off.resize(static_cast<size_t>(p.chunks));
  p.anyIn.resize(static_cast<size_t>(p.chunks));
  p.mem = a.mem;
  p.ty = ty;
  for (int64_t c = 0; c < p.chunks; ++c) {
    size_t r0 = static_cast<size_t>(c * V), r1 = r0 + V - 1;
    llvm::Value *valid, *off, *validLast, *offLast;
    elementAddress(L, a, r0, valid, off);
    elementAddress(L, a, r0, validLast, offLast, V - 1);
    p.anyIn[c] = valid && validLast ? b.CreateOr(valid, validLast) : b.getTrue();
    p.allAnyIn = L.andAll(p.allAnyIn, p.anyIn[c]);
    valid = L.andAll(L.andAll(valid, validLast), L.elemValid(lay, static_cast<int64_t>(r0)));
    if (a.mask && !a.mask->layout.uniform)
      for (size_t r = r0; r <= r1; ++r) valid = L.andAll(valid, a.mask->regs[r]);
    else if (a.mask) valid = L.andAll(valid, a.mask->regs[0]);
    p.addr[c] = L.elemPtr(*a.mem, ty, off);
    p.off[c] = off;
    p.ok[c] = valid;
    p.allOk = L.andAll(p.allOk, valid);
    llvm::Value* bits = b.CreatePtrToInt(p.addr[c], b.getInt64Ty());
    p.addrBits = p.addrBits ? b.CreateOr(p.addrBits, bits) : bits;
  }
  return p;
}

// Which of chunk c's V elements are valid, as the bits of an i32 (bit e for
// element e): the innermost index's elements in [0, dim) (the chunk's indices
// are contiguous there, so a window), the other indices in bounds (constant
// over a chunk), the layout's padding and the mask. For a load that reads
// partly valid chunks whole (Lowerer::Keep).
static llvm::Value* keepBits(Lowerer& L, const Access& a, const ir::TileLayout& lay, int64_t c) {
  auto& b = L.b;
  const int64_t V = lay.vec;
  const size_t r0 = static_cast<size_t>(c * V), last = a.idx.size() - 1;
  auto index = [&](size_t d) {
    const TV& t = a.idx[d];
    return b.CreateSExt(t.regs[t.layout.uniform ? 0 : r0], b.getInt64Ty());
  };
  llvm::Value* rest = L.elemValid(lay, static_cast<int64_t>(r0));
  for (size_t d = 0; d < last; ++d) rest = L.andAll(rest, b.CreateICmpULT(index(d), a.mem->dims[d]));
  // The window, in 32 bits where the index is (index tiles are i32): x0
  // clamped below to -V (a chunk wholly before 0 stays so) and the dim to
  // INT32_MAX, so that dim - x0, where x0 < dim, is exact as an unsigned
  // 32-bit value. (Only an index of INT32_MAX itself, in a dim past it,
  // would count as out of bounds: past what i32 indices address.)
  const TV& inner = a.idx[last];
  llvm::Value* x0 = inner.regs[inner.layout.uniform ? 0 : r0];
  llvm::Value* dim = a.mem->dims[last];
  const bool narrow = x0->getType()->isIntegerTy(32);
  llvm::Type* ity = narrow ? b.getInt32Ty() : b.getInt64Ty();
  auto k = [&](int64_t v) { return llvm::ConstantInt::get(ity, static_cast<uint64_t>(v), true); };
  if (narrow) {
    dim = b.CreateTrunc(b.CreateSelect(b.CreateICmpUGT(dim, L.i64(INT32_MAX)), L.i64(INT32_MAX), dim), ity);
  } else {
    x0 = b.CreateSExt(x0, ity);
  }
  x0 = b.CreateSelect(b.CreateICmpSLT(x0, k(-V)), k(-V), x0);
  auto upToV = [&](llvm::Value* n) { return b.CreateSelect(b.CreateICmpULT(n, k(V)), n, k(V)); };  // unsigned
  llvm::Value* neg = b.CreateSub(k(0), x0);  // -V .. V
  llvm::Value* before0 = b.CreateSelect(b.CreateICmpSGT(neg, k(0)), neg, k(0));  // elements at negative indices
  llvm::Value* beforeEnd =  // elements before the end
      b.CreateSelect(b.CreateICmpSGE(x0, dim), k(0), upToV(b.CreateSub(dim, x0)));
  before0 = b.CreateZExtOrTrunc(before0, b.getInt32Ty());
  beforeEnd = b.CreateZExtOrTrunc(beforeEnd, b.getInt32Ty());
  auto lowBits = [&](llvm::Value* n) { return b.CreateSub(b.CreateShl(L.i32(1), n), L.i32(1)); };  // bits 0 .. n-1
  llvm::Value* bits = b.CreateAnd(lowBits(beforeEnd), b.CreateNot(lowBits(before0)));
  if (rest) bits = b.CreateSelect(rest, bits, L.i32(0));
  if (a.mask && a.mask->layout.uniform) bits = b.CreateSelect(a.mask->regs[0], bits, L.i32(0));
  if (a.mask && !a.mask->layout.uniform) {
    llvm::Value* m = L.i32(0);
    for (int64_t e = 0; e < V; ++e)
      m = b.CreateOr(m, b.CreateShl(b.CreateZExt(a.mask->regs[r0 + static_cast<size_t>(e)], b.getInt32Ty()), L.i32(e)));
    bits = b.CreateAnd(bits, m);
  }
  return bits;
}

// Elements of 16 bits are kept or replaced two at a time, in the 32-bit word
// they were loaded in (an AND with a mask of their bits, OR the defaults'
// rest): a select per element would unpack the words into one register per
// element (ptxas spilled the 16384-column splits).
TV Lowerer::applyKeep(TV t, const Keep& k) {
  auto bit = [&](size_t r) {  // 0 or 1: whether register r is kept
    const int64_t c = static_cast<int64_t>(r) / k.vec, e = static_cast<int64_t>(r) % k.vec;
    return b.CreateAnd(b.CreateLShr(k.bits[static_cast<size_t>(c)], i32(e)), i32(1));
  };
  TV d = t;  // the defaults
  for (size_t r = 0; r < d.regs.size(); ++r) d.regs[r] = k.dflt[k.dflt.size() == 1 ? 0 : r];
  if (!((t.dtype == ir::DType::BF16 || t.dtype == ir::DType::F16) && k.vec % 2 == 0)) {
    for (size_t r = 0; r < t.regs.size(); ++r)
      t.regs[r] = b.CreateSelect(b.CreateICmpNE(bit(r), i32(0)), t.regs[r], d.regs[r]);
    return t;
  }
  const size_t count = t.regs.size();
  TV w = packPairs(std::move(t)), dw = packPairs(std::move(d));
  for (size_t i = 0; i < w.regs.size(); ++i) {
    // 0xffff per kept half: (bit(2i) | bit(2i + 1) << 16) * 0xffff
    llvm::Value* mask = b.CreateMul(b.CreateOr(bit(2 * i), b.CreateShl(bit(2 * i + 1), i32(16))), i32(0xffff));
    w.regs[i] = b.CreateOr(b.CreateAnd(w.regs[i], mask), b.CreateAnd(dw.regs[i], b.CreateNot(mask)));
  }
  return unpackPairs(std::move(w), count);
}

// The branches every vector access takes, loads and stores alike. With two or
// more chunks: one test for the whole access (every chunk valid, every
// address aligned) and, when it passes, all C vector accesses in one block, so
// that they issue back to back; otherwise, and always for one chunk, per
// chunk a vector access where that chunk is valid and aligned and element
// accesses where not. `vector(c)` and `elements(c)` emit chunk c's two forms
// and return its values as 16-byte vectors (a load) or nothing (a store); the
// values are joined with one phi per vector, so a load's elements cross the
// branches packed (a chunk of 8 bf16 is 4 registers, not 8).
using ChunkEmitter = std::function<std::vector<llvm::Value*>(int64_t chunk)>;

namespace {
// A way into a join block: its values and the block it leaves from.
using Way = std::pair<std::vector<llvm::Value*>, llvm::BasicBlock*>;

// One phi per value over the ways in, appended to `into`.
void joinWays(Lowerer& L, const std::vector<Way>& ways, std::vector<llvm::Value*>& into) {
  for (size_t k = 0; k < ways[0].first.size(); ++k) {
    llvm::PHINode* p = L.b.CreatePHI(ways[0].first[k]->getType(), static_cast<unsigned>(ways.size()));
    for (const Way& w : ways) p->addIncoming(w.first[k], w.second);
    into.push_back(p);
  }
}

// values() emitted in `bb`, which then branches to `to`: the way out of it.
Way wayTo(Lowerer& L, llvm::BasicBlock* bb, llvm::BasicBlock* to,
          const std::function<std::vector<llvm::Value*>()>& values) {
  L.b.SetInsertPoint(bb);
  std::vector<llvm::Value*> v = values();
  llvm::BasicBlock* end = L.b.GetInsertBlock();
  L.b.CreateBr(to);
  return Way{std::move(v), end};
}

// Every chunk's `vector(c)`, one after another (the fast path's block), and
// their values in chunk order.
std::vector<llvm::Value*> everyChunk(const ChunkPlan& plan, const ChunkEmitter& vector) {
  std::vector<llvm::Value*> v;
  for (int64_t c = 0; c < plan.chunks; ++c)
    for (llvm::Value* x : vector(c)) v.push_back(x);
  return v;
}
}  // namespace

static std::vector<llvm::Value*> emitChunked(Lowerer& L, const ChunkPlan& plan, const std::string& tag,
                                             const ChunkEmitter& vector, const ChunkEmitter& elements) {
  auto& b = L.b;
  auto block = [&](const std::string& name) { return llvm::BasicBlock::Create(L.ctx, tag + name, L.kernel); };
  std::vector<Way> whole;  // the ways past the per-chunk tests
  llvm::BasicBlock* joinBB = nullptr;
  if (plan.chunks > 1) {
    llvm::BasicBlock* fastBB = block("t.fast");
    llvm::BasicBlock* slowBB = block("t.slow");
    joinBB = block("t.done");
    b.CreateCondBr(L.andAll(plan.allVectorOk(), plan.allAligned(L)), fastBB, slowBB);
    whole.push_back(wayTo(L, fastBB, joinBB, [&] { return everyChunk(plan, vector); }));
    b.SetInsertPoint(slowBB);
  }
  std::vector<llvm::Value*> slowAll;
  for (int64_t c = 0; c < plan.chunks; ++c) {
    llvm::BasicBlock* vb = block("v");
    llvm::BasicBlock* sb = block("s");
    llvm::BasicBlock* done = block("v.done");
    b.CreateCondBr(L.andAll(plan.vectorOk(c), plan.aligned(L, c)), vb, sb);
    std::vector<Way> ways;
    ways.push_back(wayTo(L, vb, done, [&] { return vector(c); }));
    ways.push_back(wayTo(L, sb, done, [&] { return elements(c); }));
    b.SetInsertPoint(done);
    joinWays(L, ways, slowAll);
  }
  if (!joinBB) return slowAll;
  llvm::BasicBlock* slowEnd = b.GetInsertBlock();
  b.CreateBr(joinBB);
  b.SetInsertPoint(joinBB);
  whole.push_back({slowAll, slowEnd});
  std::vector<llvm::Value*> out;
  joinWays(L, whole, out);
  return out;
}

// Chunk c's element-by-element form: `unchecked(c)` where the chunk is
// wholly valid (plan.ok[c]) -- a global chunk off alignment, whose elements
// lie at its address + 0..V-1 -- and `checked(c)`, which tests every
// element's bounds and mask, where it is not. The tests were most of the
// work of a row off alignment (a bf16 row of odd width): a 64-bit compare
// per index and bound, per element (perf-notes v34). Only in the code for
// launches off alignment (TargetOptions::unaligned): the valid chunk's
// loads cost registers (rmsnorm_fwd_row at 8192: 64 -> 80, 79 in words).
static std::vector<llvm::Value*> elementsOf(Lowerer& L, const ChunkPlan& plan, int64_t c,
                                            const ChunkEmitter& unchecked, const ChunkEmitter& checked) {
  if (plan.mem->addrSpace != 1 || !L.unaligned) return checked(c);
  if (!plan.ok[c]) return unchecked(c);
  llvm::BasicBlock* u = llvm::BasicBlock::Create(L.ctx, "e.valid", L.kernel);
  llvm::BasicBlock* k = llvm::BasicBlock::Create(L.ctx, "e.checked", L.kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(L.ctx, "e.done", L.kernel);
  L.b.CreateCondBr(plan.ok[c], u, k);
  std::vector<Way> ways;
  ways.push_back(wayTo(L, u, done, [&] { return unchecked(c); }));
  ways.push_back(wayTo(L, k, done, [&] { return checked(c); }));
  L.b.SetInsertPoint(done);
  std::vector<llvm::Value*> out;
  joinWays(L, ways, out);
  return out;
}

// A store's branches where its chunks may be joined across lanes
// (joinedStore): every chunk's vector store when all of the warp's chunks
// are valid and aligned, else `joined(c)` for each chunk, by the whole warp.
// The test is the warp's (vote.sync.all), so that no lane leaves the others'
// shuffles: a per-thread test, as emitChunked's, hung the GPU (backend v33).
static void emitWarpChunked(Lowerer& L, const ChunkPlan& plan, const std::string& tag, const ChunkEmitter& vector,
                            const ChunkEmitter& joined) {
  auto& b = L.b;
  auto block = [&](const std::string& name) { return llvm::BasicBlock::Create(L.ctx, tag + name, L.kernel); };
  llvm::Value* fast = L.intrinsic(llvm::Intrinsic::nvvm_vote_all_sync, {},
                                  {b.getInt32(-1), L.andAll(plan.allOk, plan.allAligned(L))});
  llvm::BasicBlock* fastBB = block("t.fast");
  llvm::BasicBlock* joinedBB = block("t.joined");
  llvm::BasicBlock* doneBB = block("t.done");
  b.CreateCondBr(fast, fastBB, joinedBB);
  b.SetInsertPoint(fastBB);
  everyChunk(plan, vector);
  b.CreateBr(doneBB);
  b.SetInsertPoint(joinedBB);
  for (int64_t c = 0; c < plan.chunks; ++c) joined(c);
  b.CreateBr(doneBB);
  b.SetInsertPoint(doneBB);
}

// Bytes s..s+15 (s an i32 in 0..15) of the 32 bytes lo, hi (each <4 x i32>):
// their words picked from the eight by s / 4 and funnel-shifted by s % 4 bytes.
static llvm::Value* bytesAt(Lowerer& L, llvm::Value* lo, llvm::Value* hi, llvm::Value* s) {
  auto& b = L.b;
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* w[8];
  for (unsigned k = 0; k < 4; ++k) {
    w[k] = b.CreateExtractElement(lo, uint64_t{k});
    w[k + 4] = b.CreateExtractElement(hi, uint64_t{k});
  }
  llvm::Value* q = b.CreateLShr(s, b.getInt32(2));
  llvm::Value* bits = b.CreateShl(b.CreateAnd(s, b.getInt32(3)), b.getInt32(3));
  llvm::Value* t[5];  // t[k] = w[k + q]
  for (unsigned k = 0; k < 5; ++k) {
    t[k] = w[k];
    for (unsigned d = 1; d < 4; ++d) t[k] = b.CreateSelect(b.CreateICmpEQ(q, b.getInt32(d)), w[k + d], t[k]);
  }
  llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(i32, 4));
  for (unsigned j = 0; j < 4; ++j)
    v = b.CreateInsertElement(v, L.intrinsic(llvm::Intrinsic::fshr, {i32}, {t[j + 1], t[j], bits}), uint64_t{j});
  return v;
}

// A piece of `piece` bytes (a multiple of 4) of a wholly valid global chunk
// whose elements are narrower than 4 bytes, at `at` off alignment: loaded as
// the 4-byte words that cover it -- piece / 4 of them from `at` rounded down
// to 4, and the one holding its last byte (that same last word again where
// `at` is 4-aligned) -- each pair funnel-shifted by at % 4 bytes. Every word
// holds a byte of the piece, so none can fault where the piece does not.
// Against one load per element (elementsOf's first form): a bf16 piece of 16
// bytes takes 5 loads and 5 registers in flight where it took 8 and 8, and a
// warp's load touches 16 sectors each time (perf-notes v35).
static llvm::Value* wordsOf(Lowerer& L, llvm::Value* at, int64_t piece, llvm::Type* vty) {
  auto& b = L.b;
  llvm::Type* i32 = b.getInt32Ty();
  const int64_t W = piece / 4;
  llvm::Value* r = b.CreateAnd(b.CreatePtrToInt(at, b.getInt64Ty()), L.i64(3));
  llvm::Value* base = b.CreateGEP(b.getInt8Ty(), at, b.CreateNeg(r));
  auto word = [&](llvm::Value* off) {
    return b.CreateAlignedLoad(i32, b.CreateGEP(b.getInt8Ty(), base, off), llvm::Align(4));
  };
  std::vector<llvm::Value*> w;
  for (int64_t i = 0; i < W; ++i) w.push_back(word(L.i64(4 * i)));
  w.push_back(word(b.CreateAnd(b.CreateAdd(r, L.i64(piece - 1)), L.i64(~int64_t{3}))));
  llvm::Value* bits = b.CreateTrunc(b.CreateShl(r, L.i64(3)), i32);
  llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(i32, static_cast<unsigned>(W)));
  for (int64_t i = 0; i < W; ++i)
    v = b.CreateInsertElement(v, L.intrinsic(llvm::Intrinsic::fshr, {i32}, {w[i + 1], w[i], bits}),
                              static_cast<uint64_t>(i));
  return b.CreateBitCast(v, vty);
}

// Chunk c of a global store of one 16-byte piece per chunk, by the whole warp
// at once (every lane shuffles, so no branch may part the warp before it). An
// aligned valid chunk is one vector store. A valid chunk s bytes off
// alignment whose previous lane holds the valid chunk just before it (the
// blocked layout's lanes are consecutive) stores the aligned 16-byte block
// that starts in that lane's chunk -- its last s bytes (shfl.up) and this
// chunk's first 16 - s -- as one vector store. What no block covers (the head
// of a warp's first chunk, the tail of its last, a chunk not wholly valid)
// goes element by element through `elements(covered)`, which stores each
// element e where covered[e] is false. Against the element fallback (a bf16 row of odd
// width): a warp's 31 whole blocks and at most 16 scalar stores of one lane
// each, where each of 8 scalar stores spread 64 bytes over 512, so that L2
// merged 8 partial writes per sector. Only where TargetOptions::unaligned
// asks: the shuffles and the shift cost registers (ptxas spills layernorm_bwd
// at 8192 columns, and its aligned launch at 32768x8192 ran 432 us against 388).
static void joinedStore(Lowerer& L, const ChunkPlan& plan, int64_t c, llvm::Value* value,
                        const Lowerer::Eviction& ev,
                        const std::function<void(const std::vector<llvm::Value*>&)>& elements) {
  auto& b = L.b;
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Type* i64 = b.getInt64Ty();
  auto* words = llvm::FixedVectorType::get(i32, 4);
  llvm::Value* own = b.CreateBitCast(value, words);
  llvm::Value* lane = b.CreateAnd(L.tid, b.getInt32(31));
  llvm::Value* ok = plan.ok[c] ? plan.ok[c] : b.getTrue();
  llvm::Value* at = b.CreatePtrToInt(plan.addr[c], i64);
  llvm::Value* s = b.CreateTrunc(b.CreateAnd(at, L.i64(15)), i32);
  llvm::Value* prev = llvm::PoisonValue::get(words);  // the previous lane's chunk, address and validity
  for (unsigned k = 0; k < 4; ++k)
    prev = b.CreateInsertElement(prev, L.shuffleUp(b.CreateExtractElement(own, uint64_t{k}), 1), uint64_t{k});
  llvm::Value* prevAt = L.shuffleUp(at, 1);
  llvm::Value* prevOk = L.shuffleUp(ok, 1);
  llvm::Value* offAligned = b.CreateICmpNE(s, b.getInt32(0));
  llvm::Value* aligned = b.CreateAnd(ok, b.CreateNot(offAligned));
  llvm::Value* joinPrev = b.CreateAnd(b.CreateAnd(b.CreateAnd(ok, prevOk), offAligned),
                                      b.CreateAnd(b.CreateICmpNE(lane, b.getInt32(0)),
                                                  b.CreateICmpEQ(b.CreateAdd(prevAt, L.i64(16)), at)));
  llvm::Value* joinNext = b.CreateAnd(L.shuffleDown(joinPrev, 1), b.CreateICmpNE(lane, b.getInt32(31)));
  llvm::Value* head = b.CreateSub(b.getInt32(16), s);  // this chunk's bytes in the block that starts before it
  llvm::Value* block = b.CreateSelect(aligned, own, bytesAt(L, prev, own, b.CreateAnd(head, b.getInt32(15))));
  llvm::Value* to = b.CreateGEP(b.getInt8Ty(), plan.addr[c], b.CreateNeg(b.CreateZExt(s, i64)));
  L.emitIf(b.CreateOr(aligned, joinPrev), [&] {
    llvm::Value* v = b.CreateBitCast(block, plan.vty);
    if (ev.priority) L.hintedStore(v, to, ev);
    else b.CreateAlignedStore(v, to, llvm::Align(16));
  });
  const int64_t bytes = 16 / plan.perPiece;
  std::vector<llvm::Value*> covered;
  for (int64_t e = 0; e < plan.perPiece; ++e) {
    llvm::Value* inHead = b.CreateICmpULT(b.getInt32(static_cast<uint32_t>(e * bytes)), head);
    covered.push_back(b.CreateOr(aligned, b.CreateSelect(inHead, joinPrev, joinNext)));
  }
  elements(covered);
}

llvm::Value* Lowerer::guardedLoad(const Mem& m, ir::DType dt, llvm::Value* valid, llvm::Value* offset, llvm::Value* dflt) {
  llvm::Type* ty = memType(dt);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* ld = llvm::BasicBlock::Create(ctx, "ld", kernel);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "ld.done", kernel);
  b.CreateCondBr(valid ? valid : b.getTrue(), ld, done);
  b.SetInsertPoint(ld);
  llvm::Value* v = b.CreateAlignedLoad(ty, elemPtr(m, ty, offset), llvm::Align(bytes));
  if (dt == ir::DType::I1) v = b.CreateICmpNE(v, b.getInt8(0));
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode* p = b.CreatePHI(v->getType(), 2);
  p->addIncoming(dflt, pre);
  p->addIncoming(v, ld);
  return p;
}

Status Lowerer::lowerLoad(const ir::Operation& op) {
  if (mems.find(op.operand(0)) == mems.end()) return fail(op, "memory operand is not lowered");
  tiles[op.result()] = loadAt(op, op.result()->type().shape);
  return Status::ok();
}

TV Lowerer::loadAt(const ir::Operation& op, const std::vector<int64_t>& shape) {
  const Mem& mem = mems.at(op.operand(0));
  const ir::Type rt = ir::Type::tile(op.result()->type().dtype, shape);
  const size_t rank = mem.dims.size();
  const bool hasMask = op.attrs().getBool("mask"), hasOther = op.attrs().getBool("other");
  TV maskTV, otherTV;
  Access a = accessOf(*this, op, mem, rt.shape, 1 + rank, maskTV);
  if (hasOther) otherTV = broadcastTo(op.operand(1 + rank + hasMask), rt.shape), a.other = &otherTV;
  TV out = makeTV(rt);
  llvm::Type* ty = memType(rt.dtype);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  const int64_t V = out.layout.vec;
  const bool vec = !out.layout.uniform && V > 1 && rank > 0 && rt.dtype != ir::DType::I1 &&
                   vectorizable(*this, op, rank, rt.shape, V);
  auto zero = [&]() -> llvm::Value* { return llvm::Constant::getNullValue(regType(rt.dtype)); };
  // Element r; with k > 0, its indices are register r - k's plus k (see elementAddress).
  auto scalarLoad = [&](size_t r, int64_t k = 0, llvm::Value* lastBase = nullptr) -> llvm::Value* {
    llvm::Value *valid, *off;
    elementAt(*this, a, out.layout, r, valid, off, k, lastBase);
    if (laneZeroScalarLoads_ && out.layout.uniform)
      valid = andAll(valid, b.CreateICmpEQ(b.CreateAnd(tid, i32(31)), i32(0)));
    llvm::Value* dflt = a.other ? a.other->regs[a.other->layout.uniform ? 0 : r] : zero();
    return guardedLoad(mem, rt.dtype, valid, off, dflt);
  };
  if (!vec) {
    for (size_t r = 0; r < out.regs.size(); ++r) out.regs[r] = scalarLoad(r);
  } else {
    ChunkPlan plan = planChunks(*this, a, out.layout, ty, bytes);
    const int64_t pieces = V / plan.perPiece;
    // A partly valid chunk read whole: safe where its 16-byte piece (one per
    // chunk) is aligned and holds an element in bounds, since such a piece
    // lies in that element's page. Its other elements are garbage until
    // applyKeep. It spares the element-by-element way, whose values must
    // arrive before they are packed: in a row loop that loads rows ahead,
    // the one lane holding a row's partial chunk (rows of odd width shifted
    // onto 16-byte boundaries) stalled its warp, and its cluster, a memory
    // round trip per row (docs/perf-notes.md, backend v38).
    bool constOther = true;
    if (a.other)
      for (llvm::Value* r : a.other->regs) constOther = constOther && llvm::isa<llvm::Constant>(r);
    const bool partial = partialChunks && mem.addrSpace == 1 && pieces == 1 && constOther;
    plan.wholeReads = partial;
    const Eviction ev = evictionOf(op, mem, plan);
    auto vectorChunk = [&](int64_t c) {
      std::vector<llvm::Value*> vecs;
      for (int64_t p = 0; p < pieces; ++p) {
        llvm::Value* pa = plan.piecePtr(*this, c, p);
        vecs.push_back(ev.priority ? hintedLoad(plan.vty, pa, ev)
                              : b.CreateAlignedLoad(plan.vty, pa, llvm::Align(plan.piece)));
      }
      return vecs;
    };
    auto elementChunk = [&](int64_t c) {
      const size_t r0 = static_cast<size_t>(c * V);
      llvm::Value* base = lastIndexBase(*this, a, r0);
      std::vector<llvm::Value*> vecs;
      for (int64_t p = 0; p < pieces; ++p) {
        llvm::Value* vv = llvm::PoisonValue::get(plan.vty);
        for (int64_t k = 0; k < plan.perPiece; ++k) {
          const int64_t e = p * plan.perPiece + k;
          vv = b.CreateInsertElement(vv, scalarLoad(r0 + static_cast<size_t>(e), e, base), static_cast<uint64_t>(k));
        }
        vecs.push_back(vv);
      }
      return vecs;
    };
    auto validChunk = [&](int64_t c) {  // a wholly valid chunk off alignment (elementsOf)
      std::vector<llvm::Value*> vecs;
      for (int64_t p = 0; p < pieces; ++p) {
        if (bytes < 4 && plan.piece % 4 == 0) {
          vecs.push_back(wordsOf(*this, plan.elementPtr(*this, c, p * plan.perPiece), plan.piece, plan.vty));
          continue;
        }
        llvm::Value* vv = llvm::PoisonValue::get(plan.vty);
        for (int64_t k = 0; k < plan.perPiece; ++k) {
          llvm::Value* at = plan.elementPtr(*this, c, p * plan.perPiece + k);
          vv = b.CreateInsertElement(vv, b.CreateAlignedLoad(ty, at, llvm::Align(bytes)), static_cast<uint64_t>(k));
        }
        vecs.push_back(vv);
      }
      return vecs;
    };
    const std::vector<llvm::Value*> vecs = emitChunked(*this, plan, "ld", vectorChunk, [&](int64_t c) {
      return elementsOf(*this, plan, c, validChunk, elementChunk);
    });
    for (size_t r = 0; r < out.regs.size(); ++r)
      out.regs[r] = b.CreateExtractElement(vecs[r / static_cast<size_t>(plan.perPiece)],
                                           static_cast<uint64_t>(r % static_cast<size_t>(plan.perPiece)));
    if (partial) {
      Keep k;
      k.vec = V;
      for (int64_t c = 0; c < plan.chunks; ++c) k.bits.push_back(keepBits(*this, a, out.layout, c));
      if (a.other) k.dflt = a.other->regs;
      else k.dflt = {zero()};
      if (deferKeep_) keep_ = std::move(k);
      else out = applyKeep(std::move(out), k);
    }
  }
  return out;
}

// `stream = true` / `keep = true`: the vector accesses of a global tensor (4,
// 8 or 16 bytes) go with an evict_first / evict_last priority in L1 and an L2
// cache policy of the same priority, as Triton lowers eviction_policy=
// 'evict_first' / 'evict_last': data used once leaves the caches before data
// used again. The policy is made once per access, not per piece. Narrower
// pieces and the element-by-element fallbacks keep the default priority.
// FNK_NO_STREAM=1 ignores both attributes; FNK_KEEP_L2=0 leaves keep's L2
// policy out (an experiment: the RMSNorm forward's gain is the L2 policy's).
Lowerer::Eviction Lowerer::evictionOf(const ir::Operation& op, const Mem& mem, const ChunkPlan& plan) {
  const bool stream = op.attrs().getBool("stream"), keep = op.attrs().getBool("keep");
  if (!(stream || keep) || mem.addrSpace != 1 || plan.piece < 4 || knob(Knob::NoStream) != 0) return {};
  const char* priority = stream ? "evict_first" : "evict_last";
  if (keep && knob(Knob::KeepL2, 1) == 0) return {priority, nullptr};
  const std::string make = std::string("createpolicy.fractional.L2::") + priority + ".b64 $0, 1.0;";
  return {priority, ptx(make, "=l", b.getInt64Ty(), {}, false)};
}

namespace {
// The PTX vector suffix and operand list of a piece of `words` 32-bit words
// whose registers are numbered from `first`: ".v4.b32", "{$0, $1, $2, $3}".
std::pair<std::string, std::string> wordsOperand(unsigned words, unsigned first) {
  std::string regs;
  for (unsigned i = 0; i < words; ++i) regs += (i ? ", $" : "$") + std::to_string(first + i);
  if (words == 1) return {".b32", regs};
  return {".v" + std::to_string(words) + ".b32", "{" + regs + "}"};
}
}  // namespace

llvm::Value* Lowerer::hintedLoad(llvm::FixedVectorType* vty, llvm::Value* addr, const Eviction& e) {
  const unsigned words = static_cast<unsigned>(mod.getDataLayout().getTypeAllocSize(vty)) / 4;
  llvm::Type* i32 = b.getInt32Ty();
  const auto [suffix, regs] = wordsOperand(words, 0);
  const std::string l2 = e.policy ? ".L2::cache_hint" : "";
  const std::string ld = std::string("ld.global.L1::") + e.priority + l2 + suffix + " " + regs + ", [$" +
                         std::to_string(words) + "]" + (e.policy ? ", $" + std::to_string(words + 1) : "") + ";";
  std::string constraints;
  for (unsigned i = 0; i < words; ++i) constraints += "=r,";
  std::vector<llvm::Value*> args{addr};
  if (e.policy) args.push_back(e.policy);
  std::vector<llvm::Type*> fields(words, i32);
  llvm::Value* r = ptx(ld, constraints + (e.policy ? "l,l,~{memory}" : "l,~{memory}"),
                       words == 1 ? i32 : llvm::StructType::get(ctx, fields), args);
  llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(i32, words));
  for (unsigned i = 0; i < words; ++i)
    v = b.CreateInsertElement(v, words == 1 ? r : b.CreateExtractValue(r, i), uint64_t{i});
  return b.CreateBitCast(v, vty);
}

void Lowerer::hintedStore(llvm::Value* v, llvm::Value* addr, const Eviction& e) {
  const unsigned words = static_cast<unsigned>(mod.getDataLayout().getTypeAllocSize(v->getType())) / 4;
  llvm::Value* w = b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), words));
  std::vector<llvm::Value*> args{addr};
  for (unsigned i = 0; i < words; ++i) args.push_back(b.CreateExtractElement(w, uint64_t{i}));
  if (e.policy) args.push_back(e.policy);
  const auto [suffix, regs] = wordsOperand(words, 1);
  const std::string st = std::string("st.global.L1::") + e.priority + (e.policy ? ".L2::cache_hint" : "") + suffix +
                         " [$0], " + regs + (e.policy ? ", $" + std::to_string(words + 1) : "") + ";";
  std::string constraints = "l,";
  for (unsigned i = 0; i < words; ++i) constraints += "r,";
  ptx(st, constraints + (e.policy ? "l,~{memory}" : "~{memory}"), b.getVoidTy(), args);
}

Status Lowerer::lowerStore(const ir::Operation& op) {
  auto mit = mems.find(op.operand(0));
  if (mit == mems.end()) return fail(op, "memory operand is not lowered");
  const Mem& mem = mit->second;
  const size_t rank = mem.dims.size();
  const ir::Value* valueV = op.operand(1 + rank);
  if (laneDerived(valueV)) return lowerLaneStore(op, mem);
  const std::vector<int64_t> shape = valueV->type().shape;
  TV maskTV;
  const Access a = accessOf(*this, op, mem, shape, 2 + rank, maskTV);
  const TV& val = tile(valueV);
  llvm::Type* ty = memType(mem.dtype);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  const ir::TileLayout& lay = val.layout;
  const int64_t V = lay.vec;
  auto memVal = [&](size_t r) {
    llvm::Value* v = val.regs[r];
    return mem.dtype == ir::DType::I1 ? b.CreateZExt(v, ty) : v;
  };
  llvm::Value* only0 = lay.uniform ? b.CreateICmpEQ(tid, i32(0)) : nullptr;
  auto scalarStore = [&](size_t r, int64_t k = 0, llvm::Value* lastBase = nullptr, llvm::Value* skip = nullptr) {
    llvm::Value *valid, *off;
    elementAt(*this, a, lay, r, valid, off, k, lastBase);
    valid = andAll(valid, only0);
    if (skip) valid = andAll(valid, b.CreateNot(skip));
    llvm::Value* v = memVal(r);
    emitIf(valid, [&] { b.CreateAlignedStore(v, elemPtr(mem, ty, off), llvm::Align(bytes)); });
  };
  const bool vec = !lay.uniform && V > 1 && rank > 0 && mem.dtype != ir::DType::I1 &&
                   vectorizable(*this, op, rank, shape, V);
  if (!vec) {
    for (size_t r = 0; r < val.regs.size(); ++r) scalarStore(r);
    return Status::ok();
  }
  const ChunkPlan plan = planChunks(*this, a, lay, ty, bytes);
  const Eviction ev = evictionOf(op, mem, plan);
  // Piece p of chunk c as a vector.
  auto pieceValue = [&](int64_t c, int64_t p) {
    const size_t r0 = static_cast<size_t>(c * V + p * plan.perPiece);
    llvm::Value* vv = llvm::PoisonValue::get(plan.vty);
    for (int64_t k = 0; k < plan.perPiece; ++k)
      vv = b.CreateInsertElement(vv, memVal(r0 + static_cast<size_t>(k)), static_cast<uint64_t>(k));
    return vv;
  };
  auto vectorChunk = [&](int64_t c) {
    for (int64_t p = 0; p < V / plan.perPiece; ++p) {
      llvm::Value* vv = pieceValue(c, p);
      if (ev.priority) hintedStore(vv, plan.piecePtr(*this, c, p), ev);
      else b.CreateAlignedStore(vv, plan.piecePtr(*this, c, p), llvm::Align(plan.piece));
    }
    return std::vector<llvm::Value*>{};
  };
  // Chunk c element by element, each element e where skip[e] is not true
  // (none skipped when `skip` is empty): wholly valid chunks at their
  // address, the others with every element's bounds checked (elementsOf).
  auto elementChunk = [&](int64_t c, const std::vector<llvm::Value*>& skip) {
    const size_t r0 = static_cast<size_t>(c * V);
    auto skipped = [&](int64_t e) { return skip.empty() ? nullptr : skip[static_cast<size_t>(e)]; };
    return elementsOf(
        *this, plan, c,
        [&](int64_t) {
          for (int64_t e = 0; e < V; ++e) {
            llvm::Value* v = memVal(r0 + static_cast<size_t>(e));
            llvm::Value* at = plan.elementPtr(*this, c, e);
            llvm::Value* s = skipped(e);
            emitIf(s ? b.CreateNot(s) : nullptr, [&] { b.CreateAlignedStore(v, at, llvm::Align(bytes)); });
          }
          return std::vector<llvm::Value*>{};
        },
        [&](int64_t) {
          llvm::Value* base = lastIndexBase(*this, a, r0);
          for (int64_t e = 0; e < V; ++e) scalarStore(r0 + static_cast<size_t>(e), e, base, skipped(e));
          return std::vector<llvm::Value*>{};
        });
  };
  // Off alignment, 16-byte pieces of a global tensor joined across lanes (TargetOptions::unaligned).
  if (mem.addrSpace == 1 && plan.piece == 16 && V == plan.perPiece && unaligned) {
    emitWarpChunked(*this, plan, "st", vectorChunk, [&](int64_t c) {
      joinedStore(*this, plan, c, pieceValue(c, 0), ev,
                  [&](const std::vector<llvm::Value*>& covered) { elementChunk(c, covered); });
      return std::vector<llvm::Value*>{};
    });
    return Status::ok();
  }
  emitChunked(*this, plan, "st", vectorChunk, [&](int64_t c) { return elementChunk(c, {}); });
  return Status::ok();
}

// `prefetch.global.L2::evict_last` of each valid vector chunk's first address
// (a chunk's V elements lie in one line when the access is vectorizable and
// aligned; the hint needs no alignment; a ragged chunk at a row's end goes
// without), else of each valid element; a uniform tile by thread 0. No value,
// no wait: the thread goes on at once, and later loads of those lines hit L2
// instead of DRAM. evict_last keeps the lines from being pushed out by the
// kernel's own output before their loads come (the DiT backward two rows
// ahead: 101.1 us with the plain hint, 100.0 with it; backend v13).
Status Lowerer::lowerPrefetch(const ir::Operation& op) {
  auto mit = mems.find(op.operand(0));
  if (mit == mems.end()) return fail(op, "memory operand is not lowered");
  const Mem& mem = mit->second;
  const size_t rank = mem.dims.size();
  std::vector<int64_t> shape;
  for (unsigned i = 1; i < op.numOperands(); ++i)
    shape = ir::broadcastShapes(shape, op.operand(i)->type().shape).value_or(shape);
  TV maskTV;
  const Access a = accessOf(*this, op, mem, shape, 1 + rank, maskTV);
  const ir::TileLayout lay = layoutOf(shape);
  llvm::Type* ty = memType(mem.dtype);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  auto hint = [&](llvm::Value* addr) { ptx("prefetch.global.L2::evict_last [$0];", "l", b.getVoidTy(), {addr}, true); };
  const int64_t V = lay.vec;
  if (!lay.uniform && V > 1 && rank > 0 && vectorizable(*this, op, rank, shape, V)) {
    const ChunkPlan plan = planChunks(*this, a, lay, ty, bytes);
    for (int64_t c = 0; c < plan.chunks; ++c) emitIf(plan.ok[c], [&] { hint(plan.addr[c]); });
    return Status::ok();
  }
  llvm::Value* only0 = lay.uniform ? b.CreateICmpEQ(tid, i32(0)) : nullptr;
  for (size_t r = 0; r < static_cast<size_t>(lay.perThread()); ++r) {
    llvm::Value *valid, *off;
    elementAt(*this, a, lay, r, valid, off);
    emitIf(andAll(valid, only0), [&] { hint(elemPtr(mem, ty, off)); });
  }
  return Status::ok();
}

// Element r of a copy through registers (global to shared, or shared to
// global for store_bulk): a source element out of bounds or masked off
// writes 0, a destination out of bounds nothing (k, dBase, sBase: as
// elementAt's).
static void copyElement(Lowerer& L, const Access& ad, const Access& as, const ir::TileLayout& lay, size_t r,
                        int64_t k = 0, llvm::Value* dBase = nullptr, llvm::Value* sBase = nullptr) {
  auto& b = L.b;
  llvm::Type* ty = L.memType(as.mem->dtype);
  const auto align = llvm::Align(L.mod.getDataLayout().getTypeAllocSize(ty));
  llvm::Value *dValid, *dOff, *sValid, *sOff;
  elementAt(L, ad, lay, r, dValid, dOff, k, dBase);
  elementAt(L, as, lay, r, sValid, sOff, k, sBase);
  llvm::Value* v = L.guardedLoad(*as.mem, as.mem->dtype, sValid, sOff, llvm::Constant::getNullValue(ty));
  L.emitIf(dValid, [&] { b.CreateAlignedStore(v, L.elemPtr(*ad.mem, ty, dOff), align); });
}

// The two sides of a copy (tile.copy_async, tile.copy_bulk: a shared
// destination and a tensor source; tile.store_bulk: the other way): the
// destination's access and the source's, their index operands and those
// broadcast to the copy's shape; false when a memory is not lowered.
static bool copySides(Lowerer& L, const ir::Operation& op, Access& ad, Access& as, std::vector<const ir::Value*>& dIdx,
                      std::vector<const ir::Value*>& sIdx) {
  auto dit = L.mems.find(op.operand(0)), sit = L.mems.find(op.operand(1));
  if (dit == L.mems.end() || sit == L.mems.end()) return false;
  ad.mem = &dit->second;
  as.mem = &sit->second;
  const size_t rd = ad.mem->dims.size(), rs = as.mem->dims.size();
  const std::vector<int64_t>& shape = op.operand(2)->type().shape;
  for (size_t d = 0; d < rd; ++d) dIdx.push_back(op.operand(static_cast<unsigned>(2 + d)));
  for (size_t d = 0; d < rs; ++d) sIdx.push_back(op.operand(static_cast<unsigned>(2 + rd + d)));
  for (const ir::Value* v : dIdx) ad.idx.push_back(L.broadcastTo(v, shape));
  for (const ir::Value* v : sIdx) as.idx.push_back(L.broadcastTo(v, shape));
  return true;
}

// Global to shared, each thread its own chunks: `cp.async` of 16 bytes per
// piece (.cg: through L2 only; 4- or 8-byte pieces .ca) where a chunk is in
// bounds, unmasked and aligned on both sides, else element by element through
// registers (a masked or out-of-bounds source element writes 0). The
// element path completes at once; the asynchronous pieces are one group
// (cp.async.commit_group), retired by gpu.async_wait.
Status Lowerer::lowerCopyAsync(const ir::Operation& op) {
  Access ad, as;
  std::vector<const ir::Value*> dIdx, sIdx;
  if (!copySides(*this, op, ad, as, dIdx, sIdx)) return fail(op, "memory operand is not lowered");
  const Mem& dst = *ad.mem;
  const Mem& src = *as.mem;
  const size_t rd = dst.dims.size(), rs = src.dims.size();
  const std::vector<int64_t> shape = op.operand(2)->type().shape;
  TV maskTV;
  if (op.attrs().getBool("mask")) maskTV = broadcastTo(op.operand(static_cast<unsigned>(2 + rd + rs)), shape), as.mask = &maskTV;
  const ir::TileLayout lay = ad.idx.front().layout;
  llvm::Type* ty = memType(src.dtype);
  const int64_t bytes = static_cast<int64_t>(mod.getDataLayout().getTypeAllocSize(ty));
  const int64_t V = lay.vec;
  auto elementCopy = [&](size_t r, int64_t k = 0, llvm::Value* dBase = nullptr, llvm::Value* sBase = nullptr) {
    copyElement(*this, ad, as, lay, r, k, dBase, sBase);
  };
  const bool vec = !lay.uniform && V > 1 && V * bytes >= 4 && vectorizable(*this, dIdx, shape, V) &&
                   vectorizable(*this, sIdx, shape, V);
  if (!vec) {
    for (size_t r = 0; r < static_cast<size_t>(lay.perThread()); ++r) elementCopy(r);
  } else {
    ChunkPlan plan = planChunks(*this, as, lay, ty, bytes);
    const ChunkPlan dplan = planChunks(*this, ad, lay, ty, bytes);
    plan.andAlso(*this, dplan);
    const std::string cp = "cp.async." + std::string(plan.piece == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                           std::to_string(plan.piece) + ";";
    auto vectorChunk = [&](int64_t c) {
      for (int64_t p = 0; p < V / plan.perPiece; ++p) {
        llvm::Value* d = sharedAddr(dplan.piecePtr(*this, c, p));
        llvm::Value* s = plan.piecePtr(*this, c, p);
        ptx(cp, "r,l,~{memory}", b.getVoidTy(), {d, s}, true);
      }
      return std::vector<llvm::Value*>{};
    };
    auto elementChunk = [&](int64_t c) {
      const size_t r0 = static_cast<size_t>(c * V);
      llvm::Value* dBase = lastIndexBase(*this, ad, r0);
      llvm::Value* sBase = lastIndexBase(*this, as, r0);
      for (size_t r = r0; r < r0 + static_cast<size_t>(V); ++r) elementCopy(r, static_cast<int64_t>(r - r0), dBase, sBase);
      return std::vector<llvm::Value*>{};
    };
    emitChunked(*this, plan, "cp", vectorChunk, elementChunk);
  }
  ptx("cp.async.commit_group;", "~{memory}", b.getVoidTy(), {}, true);
  return Status::ok();
}

// --- bulk copies (tile.copy_bulk, gpu.bulk_wait) ------------------------------
//
// A copy_bulk moves one 1-D run into one slot of a shared buffer. Each slot
// has an mbarrier (initialized at the kernel's entry, one arrival per phase)
// and each thread a bit per slot in `phase`: the parity of the phase its next
// wait waits for. The copy: a CTA barrier (every thread is done with the
// slot's old contents), then thread 0 arrives on the slot's mbarrier
// expecting the bulk part's bytes and issues one cp.async.bulk for them. The
// bulk part is the in-bounds prefix of the run rounded down to 16 bytes when
// both ends are 16-byte aligned; the rest (a ragged tail, a misaligned or
// out-of-range run: all of it) is copied element by element through
// registers by the threads, with a second CTA barrier before the arrival, so
// that the wait orders those writes too.

// The slot a copy or wait names (its leading scalar indices, row-major) and
// whether it is in range.
static llvm::Value* bulkSlot(Lowerer& L, const Mem& buf, const std::vector<llvm::Value*>& lead, llvm::Value*& inRange) {
  auto& b = L.b;
  llvm::Value* slot = b.getInt64(0);
  inRange = nullptr;
  for (size_t d = 0; d < lead.size(); ++d) {
    llvm::Value* i = b.CreateSExt(lead[d], b.getInt64Ty());
    inRange = L.andAll(inRange, b.CreateICmpULT(i, buf.dims[d]));
    slot = b.CreateAdd(b.CreateMul(slot, buf.dims[d]), i);
  }
  return slot;
}

// Traps unless `ok` (null: always holds): a slot out of range would address
// another slot's mbarrier or memory past the buffer.
static void trapUnless(Lowerer& L, llvm::Value* ok) {
  if (!ok) return;
  L.emitIf(L.b.CreateNot(ok), [&] { L.intrinsic(llvm::Intrinsic::trap, {}, {}); });
}

Lowerer::BulkState& Lowerer::bulkState(const ir::Value* buffer) {
  auto [it, fresh] = bulk_.try_emplace(buffer);
  if (fresh) {
    bulkOrder_.push_back(buffer);
    const ir::Type& t = buffer->type();
    int64_t slots = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) slots *= t.shape[d];
    auto* aty = llvm::ArrayType::get(b.getInt64Ty(), static_cast<uint64_t>(slots));
    it->second.bars = new llvm::GlobalVariable(mod, aty, false, llvm::GlobalValue::InternalLinkage,
                                               llvm::UndefValue::get(aty), "fnk_bulk_mbar", nullptr,
                                               llvm::GlobalValue::NotThreadLocal, 3);
    it->second.bars->setAlignment(llvm::Align(8));
    it->second.slots = slots;
  }
  return it->second;
}

void Lowerer::initBulkBarriers(const ir::Block& body) {
  ir::forEachOp(body, [&](const ir::Operation& op) {
    if (op.kind() == ir::OpKind::CopyBulk || op.kind() == ir::OpKind::BulkWait) bulkState(op.operand(0));
  });
  if (bulk_.empty()) return;
  // In program order, not bulk_'s (pointer) order: the same kernel then
  // compiles to the same PTX whatever else its file holds.
  emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
    for (const ir::Value* buffer : bulkOrder_) {
      const BulkState& st = bulk_[buffer];
      for (int64_t k = 0; k < st.slots; ++k)
        ptx("mbarrier.init.shared::cta.b64 [$0], 1;", "r", b.getVoidTy(),
            {sharedAddr(b.CreateConstGEP2_32(st.bars->getValueType(), st.bars, 0, static_cast<unsigned>(k)))});
    }
    ptx("fence.mbarrier_init.release.cluster;", "", b.getVoidTy(), {});
  });
  llvm::IRBuilder<> entry(&kernel->getEntryBlock(), kernel->getEntryBlock().begin());
  for (const ir::Value* buffer : bulkOrder_) {
    BulkState& st = bulk_[buffer];
    st.phase = entry.CreateAlloca(b.getInt64Ty(), nullptr, "bulk_phase");  // in the entry block: promoted to registers
    b.CreateStore(b.getInt64(0), st.phase);
  }
  barrier();
}

static llvm::Value* barAddr(Lowerer& L, Lowerer::BulkState& st, llvm::Value* slot) {
  return L.sharedAddr(L.b.CreateGEP(st.bars->getValueType(), st.bars, {L.b.getInt64(0), slot}));
}

namespace {
// One run of a bulk copy (copy_bulk: tensor to shared; store_bulk: shared to
// tensor), from its index operands: every index but the last one value along
// the run, and the last start + 0, 1, ... (axisInfo: whole-axis runs); the
// front end guarantees the first, the second holds for c0 + arange(0, L) and
// its like. Register 0 of each then gives the scalars and, less its element
// index, the start (`run`). `runs` is false when it does not hold: the copy
// then goes element by element.
struct RunSide {
  std::vector<llvm::Value*> lead;
  llvm::Value* run = nullptr;
};
struct BulkRun {
  bool toShared = true;  // copy_bulk; false for store_bulk
  Access dst, src;  // copySides'
  int64_t len = 0;  // elements
  llvm::Type* ty = nullptr;
  int64_t esz = 0;  // bytes per element
  bool runs = false;
  RunSide tensor, shared;
  llvm::Value* slot = nullptr;  // the shared side's slot (row-major over its leading indices)
  llvm::Value* rowOk = nullptr;  // the tensor side's row in range
  llvm::Value* tStart = nullptr;  // element offsets of the run's start
  llvm::Value* sStart = nullptr;
  llvm::Value* tPtr = nullptr;  // and its addresses (the shared one 32-bit)
  llvm::Value* sAddr = nullptr;
  llvm::Value* bytes = nullptr;  // the bulk part: 0 unless one aligned contiguous range in bounds on both sides
};

// The run of tile.copy_bulk or tile.store_bulk `op`; nullopt when a memory
// operand is not lowered.
std::optional<BulkRun> bulkRun(Lowerer& L, const ir::Operation& op) {
  auto& b = L.b;
  BulkRun r;
  r.toShared = op.kind() == ir::OpKind::CopyBulk;
  std::vector<const ir::Value*> dIdx, sIdx;
  if (!copySides(L, op, r.dst, r.src, dIdx, sIdx)) return std::nullopt;
  const Access& tensor = r.toShared ? r.src : r.dst;
  const Access& shared = r.toShared ? r.dst : r.src;
  const std::vector<const ir::Value*>& tIdx = r.toShared ? sIdx : dIdx;
  const std::vector<const ir::Value*>& shIdx = r.toShared ? dIdx : sIdx;
  const int64_t len = r.len = op.operand(2)->type().shape.at(0);
  llvm::Type* ty = r.ty = L.memType(tensor.mem->dtype);
  const int64_t esz = r.esz = static_cast<int64_t>(L.mod.getDataLayout().getTypeAllocSize(ty));
  const ir::TileLayout lay = shared.idx.back().layout;
  r.runs = !lay.uniform;
  auto side = [&](const Access& a, const std::vector<const ir::Value*>& idx, RunSide& out) {
    for (size_t d = 0; d + 1 < idx.size(); ++d) {
      r.runs = r.runs && L.axisInfo(idx[d]).constant >= len;
      out.lead.push_back(a.idx[d].regs[0]);
    }
    r.runs = r.runs && L.axisInfo(idx.back()).contig >= len;
    out.run = b.CreateSub(b.CreateSExt(a.idx.back().regs[0], b.getInt64Ty()),
                          b.CreateZExt(L.elemIndex(lay, 0), b.getInt64Ty()));
  };
  side(tensor, tIdx, r.tensor);
  side(shared, shIdx, r.shared);
  const Mem& tm = *tensor.mem;
  const Mem& sm = *shared.mem;
  llvm::Value* slotOk;
  r.slot = bulkSlot(L, sm, r.shared.lead, slotOk);
  trapUnless(L, slotOk);
  r.bytes = L.i32(0);
  if (!r.runs) return r;
  r.tStart = bulkSlot(L, tm, r.tensor.lead, r.rowOk);  // the row's index; times the row length below
  r.tStart = b.CreateAdd(b.CreateMul(r.tStart, tm.dims.back()), r.tensor.run);
  r.sStart = b.CreateAdd(b.CreateMul(r.slot, sm.dims.back()), r.shared.run);
  llvm::Value* ok = L.andAll(r.rowOk, b.CreateICmpSGE(r.tensor.run, b.getInt64(0)));
  ok = b.CreateAnd(ok, b.CreateICmpSGE(r.shared.run, b.getInt64(0)));
  ok = b.CreateAnd(ok, b.CreateICmpSLE(b.CreateAdd(r.shared.run, b.getInt64(len)), sm.dims.back()));
  llvm::Value* avail = b.CreateSub(tm.dims.back(), r.tensor.run);
  llvm::Value* nIn = b.CreateSelect(b.CreateICmpSLT(avail, b.getInt64(len)), avail, b.getInt64(len));
  nIn = b.CreateSelect(b.CreateICmpSLT(nIn, b.getInt64(0)), b.getInt64(0), nIn);
  r.tPtr = b.CreateGEP(ty, tm.base, r.tStart);
  r.sAddr = L.sharedAddr(b.CreateGEP(ty, sm.base, r.sStart));
  llvm::Value* misaligned = b.CreateOr(b.CreateAnd(b.CreatePtrToInt(r.tPtr, b.getInt64Ty()), b.getInt64(15)),
                                       b.CreateZExt(b.CreateAnd(r.sAddr, L.i32(15)), b.getInt64Ty()));
  ok = b.CreateAnd(ok, b.CreateICmpEQ(misaligned, b.getInt64(0)));
  llvm::Value* bytes = b.CreateAnd(b.CreateMul(nIn, b.getInt64(esz)), b.getInt64(~int64_t{15}));
  r.bytes = b.CreateTrunc(b.CreateSelect(ok, bytes, b.getInt64(0)), b.getInt32Ty());
  return r;
}

// The elements of a run past its bulk part (all of them when it is empty),
// thread t taking places nBulk + t, nBulk + t + T, ... (a loop: few
// registers, as this path is cold); from the tensor into the slot
// (toShared: zero past the tensor's bounds) or back (nothing stored past
// them). Without a run, each thread its own elements.
void copyRunTail(Lowerer& L, const BulkRun& r, llvm::Value* nBulk) {
  auto& b = L.b;
  const bool toShared = r.toShared;
  const Access& dst = r.dst;
  const Access& src = r.src;
  const int64_t len = r.len, esz = r.esz;
  llvm::Type* ty = r.ty;
  const ir::TileLayout lay = (toShared ? dst : src).idx.back().layout;
  if (!r.runs) {
    for (size_t k = 0; k < static_cast<size_t>(lay.perThread()); ++k)
      L.emitIf(b.CreateICmpUGE(L.elemIndex(lay, static_cast<int64_t>(k)), nBulk),
               [&] { copyElement(L, dst, src, lay, k); });
    return;
  }
  const Mem& tm = toShared ? *src.mem : *dst.mem;
  const Mem& sm = toShared ? *dst.mem : *src.mem;
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* body = llvm::BasicBlock::Create(L.ctx, "bulk.tail", L.kernel);
  llvm::BasicBlock* after = llvm::BasicBlock::Create(L.ctx, "bulk.tail.done", L.kernel);
  llvm::Value* first = b.CreateAdd(nBulk, L.tid);
  b.CreateCondBr(b.CreateICmpULT(first, L.i32(len)), body, after);
  b.SetInsertPoint(body);
  llvm::PHINode* place = b.CreatePHI(b.getInt32Ty(), 2, "place");
  place->addIncoming(first, pre);
  llvm::Value* p = b.CreateZExt(place, b.getInt64Ty());
  llvm::Value* tIn = L.andAll(r.rowOk, b.CreateICmpULT(b.CreateAdd(r.tensor.run, p), tm.dims.back()));
  llvm::Value* sIn = b.CreateICmpULT(b.CreateAdd(r.shared.run, p), sm.dims.back());
  llvm::Value* tOff = b.CreateAdd(r.tStart, p);
  llvm::Value* sOff = b.CreateAdd(r.sStart, p);
  llvm::Value* v = toShared ? L.guardedLoad(tm, tm.dtype, tIn, tOff, llvm::Constant::getNullValue(ty))
                            : L.guardedLoad(sm, sm.dtype, sIn, sOff, llvm::Constant::getNullValue(ty));
  L.emitIf(toShared ? sIn : tIn, [&] {
    b.CreateAlignedStore(v, b.CreateGEP(ty, toShared ? sm.base : tm.base, toShared ? sOff : tOff), llvm::Align(esz));
  });
  llvm::Value* next = b.CreateAdd(place, L.i32(L.T));
  place->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpULT(next, L.i32(len)), body, after);
  b.SetInsertPoint(after);
}
}  // namespace

Status Lowerer::lowerCopyBulk(const ir::Operation& op) {
  const std::optional<BulkRun> run = bulkRun(*this, op);
  if (!run) return fail(op, "memory operand is not lowered");
  const BulkRun& r = *run;
  BulkState& st = bulkState(op.operand(0));
  // Every thread's reads of the slot before the copy overwrites it. Kept
  // even where a barrier since the last access already orders them: leaving
  // that one out measured 2% slower (backend v12, docs/perf-notes.md).
  barrier();
  if (r.runs)
    emitIf(b.CreateICmpNE(r.bytes, i32(0)), [&] {
      emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
        ptx("fence.proxy.async.shared::cta;", "~{memory}", b.getVoidTy(), {});
        ptx("{ .reg .b64 fnk_state; mbarrier.arrive.expect_tx.shared::cta.b64 fnk_state, [$0], $1; }",
            "r,r,~{memory}", b.getVoidTy(), {barAddr(*this, st, r.slot), r.bytes});
        ptx("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
            "r,l,r,r,~{memory}", b.getVoidTy(), {r.sAddr, r.tPtr, r.bytes, barAddr(*this, st, r.slot)});
      });
    });
  // The elements past the bulk part, then a CTA barrier, which every reader
  // passes before its wait: the threads' writes are then ordered before the
  // reads, and with no bulk part thread 0 arrives itself (the slot's one
  // arrival per phase).
  llvm::Value* nBulk = b.CreateUDiv(r.bytes, i32(r.esz));
  emitIf(b.CreateICmpULT(nBulk, i32(r.len)), [&] {
    copyRunTail(*this, r, nBulk);
    barrier();
    emitIf(b.CreateAnd(b.CreateICmpEQ(tid, i32(0)), b.CreateICmpEQ(r.bytes, i32(0))), [&] {
      ptx("{ .reg .b64 fnk_state; mbarrier.arrive.shared::cta.b64 fnk_state, [$0]; }", "r,~{memory}",
          b.getVoidTy(), {barAddr(*this, st, r.slot)});
    });
  });
  return Status::ok();
}

// --- bulk stores (tile.store_bulk, gpu.bulk_store_wait) ------------------------
//
// A store_bulk moves one 1-D run out of a slot of a shared buffer into a
// tensor row. Every thread makes its earlier writes to shared memory visible
// to the bulk copy (fence.proxy.async), a CTA barrier orders them all before
// it, and thread 0 issues one cp.async.bulk for the run's bulk part (as
// copy_bulk's: the in-bounds prefix rounded down to 16 bytes when both ends
// are aligned) and commits one bulk async-group, empty when there is no bulk
// part, so that the groups count the stores. The rest the threads store
// element by element from shared memory, at once (nothing past the tensor's
// bounds). gpu.bulk_store_wait: thread 0 waits until at most `pending` groups
// still read shared memory, then a CTA barrier (the element stores' reads are
// done by then too).
Status Lowerer::lowerStoreBulk(const ir::Operation& op) {
  const std::optional<BulkRun> run = bulkRun(*this, op);
  if (!run) return fail(op, "memory operand is not lowered");
  const BulkRun& r = *run;
  ptx("fence.proxy.async.shared::cta;", "~{memory}", b.getVoidTy(), {});
  barrier();
  emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
    if (r.runs)
      emitIf(b.CreateICmpNE(r.bytes, i32(0)), [&] {
        ptx("cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", "l,r,r,~{memory}", b.getVoidTy(),
            {r.tPtr, r.sAddr, r.bytes});
      });
    ptx("cp.async.bulk.commit_group;", "~{memory}", b.getVoidTy(), {});
  });
  llvm::Value* nBulk = b.CreateUDiv(r.bytes, i32(r.esz));
  emitIf(b.CreateICmpULT(nBulk, i32(r.len)), [&] { copyRunTail(*this, r, nBulk); });
  return Status::ok();
}

Status Lowerer::lowerBulkStoreWait(const ir::Operation& op) {
  emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
    ptx("cp.async.bulk.wait_group.read " + std::to_string(op.attrs().getInt("pending")) + ";", "~{memory}",
        b.getVoidTy(), {});
  });
  barrier();
  return Status::ok();
}

// Waits for the phase of the slot's mbarrier that this thread's bit names,
// then flips the bit. A wait that never ends (a slot with no copy in flight,
// which the interpreter reports) traps after about 2^24 tries instead of
// hanging the GPU.
Status Lowerer::lowerBulkWait(const ir::Operation& op) {
  auto it = mems.find(op.operand(0));
  if (it == mems.end()) return fail(op, "memory operand is not lowered");
  BulkState& st = bulkState(op.operand(0));
  if (!st.phase) return fail(op, "internal error: no mbarriers for this buffer");
  std::vector<llvm::Value*> lead;
  for (unsigned i = 1; i < op.numOperands(); ++i) lead.push_back(tile(op.operand(i)).regs[0]);
  llvm::Value* slotOk;
  llvm::Value* slot = bulkSlot(*this, it->second, lead, slotOk);
  trapUnless(*this, slotOk);
  llvm::Value* bits = b.CreateLoad(b.getInt64Ty(), st.phase);
  llvm::Value* bit = b.CreateShl(b.getInt64(1), slot);
  llvm::Value* parity = b.CreateTrunc(b.CreateLShr(bits, slot), b.getInt32Ty());
  parity = b.CreateAnd(parity, i32(1));
  mbarWait(barAddr(*this, st, slot), parity, /*trapAfter=*/uint32_t{1} << 24);
  b.CreateStore(b.CreateXor(bits, bit), st.phase);
  return Status::ok();
}

// Thread 0 reads the element with ld.acquire.gpu until it holds at least the
// value, then a CTA barrier releases the others: the acquire, then the
// barrier's CTA-scope ordering, so every thread's later loads see what the
// CTAs that raised the counter wrote before their release (the pattern of
// CUDA's grid sync). One poller per CTA: with every thread polling, a grid
// of 512-thread CTAs kept one L2 line busy with tens of thousands of loads
// in flight while the CTAs it waited for still stored their results. An
// index out of bounds traps, and so does a wait no CTA ends: after 2^24
// tries (some seconds) rather than hanging the GPU; the launch then fails
// with the kernel's name. The spin loop is kept rolled (LLVM would unroll it
// 16 times: 16 loads in flight per try, no sooner done).
Status Lowerer::lowerWaitGe(const ir::Operation& op) {
  auto mit = mems.find(op.operand(0));
  if (mit == mems.end()) return fail(op, "memory operand is not lowered");
  const Mem& mem = mit->second;
  const size_t rank = mem.dims.size();
  TV noMask;
  const Access a = accessOf(*this, op, mem, {}, 0, noMask);
  llvm::Value *valid, *off;
  elementAddress(*this, a, 0, valid, off);
  trapUnless(*this, valid);
  llvm::Value* want = tile(op.operand(static_cast<unsigned>(1 + rank))).regs[0];
  llvm::Value* addr = elemPtr(mem, b.getInt32Ty(), off);
  emitIf(b.CreateICmpEQ(tid, i32(0)), [&] {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* look = llvm::BasicBlock::Create(ctx, "wait.look", kernel);
    llvm::BasicBlock* retry = llvm::BasicBlock::Create(ctx, "wait.retry", kernel);
    llvm::BasicBlock* stuck = llvm::BasicBlock::Create(ctx, "wait.stuck", kernel);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "wait.done", kernel);
    b.CreateBr(look);
    b.SetInsertPoint(look);
    llvm::PHINode* tries = b.CreatePHI(b.getInt32Ty(), 2);
    tries->addIncoming(i32(0), pre);
    llvm::Value* held = ptx("ld.acquire.gpu.global.b32 $0, [$1];", "=r,l,~{memory}", b.getInt32Ty(), {addr}, true);
    llvm::Value* ok = mem.dtype == ir::DType::U32 ? b.CreateICmpUGE(held, want) : b.CreateICmpSGE(held, want);
    b.CreateCondBr(ok, done, retry);
    closeSpinLoop(tries, retry, look, stuck, uint32_t{1} << 24, /*rolled=*/true);
    b.SetInsertPoint(done);
  });
  barrier();
  return Status::ok();
}

// One relaxed, device-scope atomic add of v at element offset `off`; its old value.
static llvm::Value* atomicAdd(Lowerer& L, const Mem& mem, llvm::Value* off, llvm::Value* v) {
  llvm::Type* ty = L.memType(mem.dtype);
  const auto align = llvm::Align(L.mod.getDataLayout().getTypeAllocSize(ty));
  return L.b.CreateAtomicRMW(ir::isFloat(mem.dtype) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add,
                             L.elemPtr(mem, ty, off), v, align, llvm::AtomicOrdering::Monotonic);
}

// An f32 atomic add whose old values nobody reads, to global memory along
// contiguous runs: `red.global.add.v4.f32` (sm_90) adds a chunk's 16 bytes in
// one request instead of one per element (132 CTAs adding 8192-column partial
// rows: a quarter of the L2 atomic requests), with element-wise atomics where
// a chunk is ragged, masked or misaligned.
static void emitVectorRed(Lowerer& L, const Access& a, const TV& val) {
  auto& b = L.b;
  llvm::Type* f32 = b.getFloatTy();
  const ChunkPlan plan = planChunks(L, a, val.layout, f32, 4);
  const int64_t V = val.layout.vec;
  const std::string vec = plan.perPiece == 4 ? "v4" : "v2";
  const std::string regs = plan.perPiece == 4 ? "{$1, $2, $3, $4}" : "{$1, $2}";
  const std::string cons = plan.perPiece == 4 ? "l,f,f,f,f,~{memory}" : "l,f,f,~{memory}";
  auto vectorChunk = [&](int64_t c) {
    for (int64_t p = 0; p < V / plan.perPiece; ++p) {
      std::vector<llvm::Value*> args{plan.piecePtr(L, c, p)};
      for (int64_t k = 0; k < plan.perPiece; ++k) args.push_back(val.regs[static_cast<size_t>(c * V + p * plan.perPiece + k)]);
      L.ptx("red.relaxed.gpu.global.add." + vec + ".f32 [$0], " + regs + ";", cons, b.getVoidTy(), args, true);
    }
    return std::vector<llvm::Value*>{};
  };
  auto elementChunk = [&](int64_t c) {
    const size_t r0 = static_cast<size_t>(c * V);
    llvm::Value* base = lastIndexBase(L, a, r0);
    for (size_t r = r0; r < r0 + static_cast<size_t>(V); ++r) {
      llvm::Value *valid, *off;
      elementAt(L, a, val.layout, r, valid, off, static_cast<int64_t>(r - r0), base);
      L.emitIf(valid, [&] { atomicAdd(L, *a.mem, off, val.regs[r]); });
    }
    return std::vector<llvm::Value*>{};
  };
  emitChunked(L, plan, "red", vectorChunk, elementChunk);
}

// Per valid element an atomic add (atom.add, relaxed, device scope: the
// fence op orders it against other accesses) whose old value joins the
// result; an invalid element gives 0. A uniform tile (one element) is added
// by thread 0 and its old value reaches the other threads through scratch
// (when something reads it). With `release`, a CTA barrier and thread 0's
// fence.acq_rel.gpu come first: fences are cumulative, so every write of the
// CTA before the barrier is seen by whoever sees the sum, while only thread
// 0 waits for the fence (the others go on).
Status Lowerer::lowerAtomic(const ir::Operation& op) {
  auto mit = mems.find(op.operand(0));
  if (mit == mems.end()) return fail(op, "memory operand is not lowered");
  if (op.attrs().getStr("kind") != "add") return fail(op, "unknown kind '" + op.attrs().getStr("kind") + "'");
  const Mem& mem = mit->second;
  const size_t rank = mem.dims.size();
  const std::vector<int64_t>& shape = op.result()->type().shape;
  TV maskTV;
  const Access a = accessOf(*this, op, mem, shape, 2 + rank, maskTV);
  const TV val = broadcastTo(op.operand(static_cast<unsigned>(1 + rank)), shape);
  llvm::Type* ty = memType(mem.dtype);
  const auto align = llvm::Align(mod.getDataLayout().getTypeAllocSize(ty));
  TV out = makeTV(op.result()->type());
  const ir::TileLayout& lay = val.layout;
  if (!op.result()->hasUses() && mem.addrSpace == 1 && mem.dtype == ir::DType::F32 && !lay.uniform &&
      lay.vec >= 2 && rank > 0 && vectorizable(*this, op, rank, shape, lay.vec)) {
    emitVectorRed(*this, a, val);
    for (llvm::Value*& r : out.regs) r = llvm::Constant::getNullValue(ty);
    tiles[op.result()] = out;
    return Status::ok();
  }
  llvm::Value* only0 = lay.uniform ? b.CreateICmpEQ(tid, i32(0)) : nullptr;
  const bool release = op.attrs().getBool("release");
  if (release) barrier();  // the CTA's earlier writes, ordered before thread 0's fence (cumulativity)
  for (size_t r = 0; r < out.regs.size(); ++r) {
    llvm::Value *valid, *off;
    elementAt(*this, a, lay, r, valid, off);
    valid = andAll(valid, only0);
    llvm::Value* v = val.regs[lay.uniform ? 0 : r];
    auto add = [&] {
      if (release) fenceGpu();
      return atomicAdd(*this, mem, off, v);
    };
    if (!valid) {
      out.regs[r] = add();
      continue;
    }
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* doBB = llvm::BasicBlock::Create(ctx, "atom", kernel);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "atom.done", kernel);
    b.CreateCondBr(valid, doBB, done);
    b.SetInsertPoint(doBB);
    llvm::Value* old = add();
    llvm::BasicBlock* doEnd = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    llvm::PHINode* phi = b.CreatePHI(ty, 2);
    phi->addIncoming(old, doEnd);
    phi->addIncoming(llvm::Constant::getNullValue(ty), pre);
    out.regs[r] = phi;
  }
  if (only0 && op.result()->hasUses()) {  // thread 0's old value, to every thread
    llvm::Value* buf = scratchBegin(static_cast<int64_t>(align.value()));
    emitIf(only0, [&] { b.CreateAlignedStore(out.regs[0], buf, align); });
    barrier();
    out.regs[0] = b.CreateAlignedLoad(ty, buf, align);
  }
  tiles[op.result()] = out;
  return Status::ok();
}

// Rows in warps: row j * W + warp of the value is in every lane of this
// thread's warp; lane 0 stores it, its indices (and mask) recomputed there.
Status Lowerer::lowerLaneStore(const ir::Operation& op, const Mem& mem) {
  const size_t rank = mem.dims.size();
  const bool hasMask = op.attrs().getBool("mask");
  const ir::Value* valueV = op.operand(static_cast<unsigned>(1 + rank));
  const std::vector<int64_t> shape = valueV->type().shape;
  const int64_t rows = valueV->type().numElements(), W = T / 32;
  llvm::Type* ty = memType(mem.dtype);
  const auto align = llvm::Align(mod.getDataLayout().getTypeAllocSize(ty));
  llvm::Value* warp = b.CreateLShr(tid, i32(5));
  llvm::Value* lane0 = b.CreateICmpEQ(b.CreateAnd(tid, i32(31)), i32(0));
  for (int64_t j = 0; j * W < rows; ++j) {
    llvm::Value* row = b.CreateAdd(warp, i32(j * W));
    const std::vector<llvm::Value*> coords = coordsOf(row, shape);
    auto at = [&](const ir::Value* v) { return remat(v, broadcastSource(b, coords, v->type().shape)); };
    laneRow_ = j;
    rematLoads_ = true;
    llvm::Value* v = at(valueV);
    llvm::Value* valid = andAll(lane0, (j + 1) * W > rows ? b.CreateICmpULT(row, i32(rows)) : nullptr);
    llvm::Value* off = i64(0);
    for (size_t d = 0; v && d < rank; ++d) {
      llvm::Value* x = at(op.operand(static_cast<unsigned>(1 + d)));
      if (!x) v = nullptr;
      if (!v) break;
      x = b.CreateSExt(x, b.getInt64Ty());
      valid = andAll(valid, b.CreateICmpULT(x, mem.dims[d]));  // 0 <= x < dim
      off = b.CreateAdd(off, b.CreateMul(x, mem.strides[d]));
    }
    if (v && hasMask) {
      llvm::Value* m = at(op.operand(static_cast<unsigned>(2 + rank)));
      valid = m ? andAll(valid, m) : nullptr;
      if (!m) v = nullptr;
    }
    laneRow_ = -1;
    rematLoads_ = false;
    if (!v) return fail(op, "internal error: a store of lane-held row totals could not be recomputed");
    if (mem.dtype == ir::DType::I1) v = b.CreateZExt(v, ty);
    emitIf(valid, [&] { b.CreateAlignedStore(v, elemPtr(mem, ty, off), align); });
  }
  return Status::ok();
}

// A shared buffer of 4-byte elements is read and written in 16-byte pieces,
// and where each thread holds 8 consecutive elements (the layout of a tile
// that also meets 16-bit loads: rmsnorm_bwd_split_smem's f32 dw beside its
// bf16 rows) thread t's pieces start 32t bytes apart, so the eight threads of
// a quarter-warp phase hit each bank twice: twice the wavefronts of the ideal
// (ncu, 1024x262144 backward, backend v16). The swizzle flips a piece's 16-byte
// bit when its 128-byte bit is set, which spreads those eight pieces over all
// 32 banks, and within any 128 bytes only permutes whole pieces, so the
// layouts that were conflict-free stay so. Buffers that bulk or asynchronous
// copies fill or drain keep the plain layout (the copies move runs of bytes).
// FNK_NO_SWIZZLE=1 leaves every buffer plain.
llvm::Value* Lowerer::elemPtr(const Mem& m, llvm::Type* ty, llvm::Value* off) {
  if (m.swizzle) off = b.CreateXor(off, b.CreateAnd(b.CreateLShr(off, i64(3)), i64(4)));
  return b.CreateGEP(ty, m.base, off);
}

Status Lowerer::lowerSharedAlloc(const ir::Operation& op) {
  const ir::Type& t = op.result()->type();
  llvm::Type* ty = memType(t.dtype);
  Mem m;
  m.dtype = t.dtype;
  m.addrSpace = 3;
  const ir::Value* buf = op.result();
  m.swizzle = knob(Knob::NoSwizzle) == 0 && mod.getDataLayout().getTypeAllocSize(ty) == 4 &&
              !ir::anyOp(fn.body.front(), [&](const ir::Operation& o) {
                const bool copies = o.kind() == ir::OpKind::CopyAsync || o.kind() == ir::OpKind::CopyBulk ||
                                    o.kind() == ir::OpKind::StoreBulk;
                return copies && std::find(o.operands().begin(), o.operands().end(), buf) != o.operands().end();
              });
  // The swizzle moves an element by 4 within its aligned group of 8 (only
  // past element 31), so a swizzled buffer longer than 32 is allocated in
  // whole groups: element 994 of a 998-element buffer lives at 998.
  const int64_t n = t.numElements(), elems = m.swizzle && n > 32 ? (n + 7) / 8 * 8 : n;
  auto* aty = llvm::ArrayType::get(ty, static_cast<uint64_t>(elems));
  auto* g = new llvm::GlobalVariable(mod, aty, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(aty),
                                     "fnk_shared", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  m.base = g;
  for (int64_t d : t.shape) m.dims.push_back(i64(d));
  m.strides.resize(t.shape.size());
  int64_t s = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    m.strides[d] = i64(s);
    s *= t.shape[d];
  }
  mems[op.result()] = m;
  return Status::ok();
}

}  // namespace fnk::nvptx::detail
