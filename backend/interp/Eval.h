// Internals of the interpreter: runtime values, the per-CTA evaluator and the
// elementwise rules. Not a public header; Interpreter.h is the API.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/IR.h"
#include "support/Status.h"

namespace fnk::interp::detail {

class ClusterBarrier;
class GridTurns;

/// The runtime value of a tile: row-major elements, already rounded to the
/// value's dtype.
struct Tile {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Memory a tile op reads or writes: a tensor argument (data owned by the
/// caller's HostTensor) or a CTA's shared buffer (owned by the evaluator).
struct Memory {
  std::string name;  // for messages: "tensor 'x'" or "shared buffer"
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  double* data = nullptr;
};

/// Numbers every value of a function once, so that each CTA's frame is a flat
/// vector instead of a hash map of its own.
class SlotMap {
public:
  explicit SlotMap(const ir::Function& fn);
  /// One region's values only (the launch region: launchGrid needs no body).
  explicit SlotMap(const ir::Region& r) { addRegion(r); }
  /// -1 for a value the function does not define (malformed IR).
  int64_t find(const ir::Value* v) const {
    auto it = index_.find(v);
    return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
  }
  size_t size() const { return index_.size(); }

private:
  void addRegion(const ir::Region& r);
  std::unordered_map<const ir::Value*, uint32_t> index_;
};

/// Where a CTA sits in the grid and its cluster. The launch region runs with
/// none (it runs on the host, before any CTA exists).
struct CtaInfo {
  int64_t pid[3] = {0, 0, 0};
  int64_t grid[3] = {1, 1, 1};
  int64_t clusterRank = 0, clusterSize = 1;
  ClusterBarrier* cluster = nullptr;  // null when the cluster is one CTA
  GridTurns* turns = nullptr;         // set when the kernel waits on other CTAs (gpu.wait_ge)
  int turnRank = 0;                   // this CTA's place in `turns` (launch order)
};

/// Runs the ops of one region tree for one CTA (or the launch region).
class Evaluator {
public:
  Evaluator(const SlotMap& slots, const CtaInfo* cta) : slots_(slots), cta_(cta), frame_(slots.size()) {}

  Status bindMemory(const ir::Value* v, Memory* mem);
  Status bindTile(const ir::Value* v, Tile t);
  /// Runs `b`; on its terminator (scf.yield, func.launch_grid), stores the
  /// terminator's operands in `results`. func.return stops the whole body.
  Status runBlock(const ir::Block& b, std::vector<Tile>* results);
  /// After the body: an error when a bulk copy was never waited for.
  Status finish() const;

private:
  struct Slot {
    Tile tile;
    Memory* mem = nullptr;
    bool defined = false;
  };
  struct SharedBuffer {
    Memory mem;
    std::vector<double> storage;
  };

  Status execOp(const ir::Operation& op);
  Status execFor(const ir::Operation& op);
  Status execIf(const ir::Operation& op);
  Status execLoad(const ir::Operation& op);
  Status execPrefetch(const ir::Operation& op);
  /// Operands 1.. of a memory op as tiles (t[i] for operand i) and the shape
  /// they broadcast to, or an error naming the two that do not.
  Status broadcastOperands(const ir::Operation& op, std::vector<const Tile*>& t, std::vector<int64_t>& shape);
  Status execStore(const ir::Operation& op);
  Status execReduce(const ir::Operation& op);
  Status execShape(const ir::Operation& op);
  Status execElementwise(const ir::Operation& op);
  Status execSharedAlloc(const ir::Operation& op);
  Status execCopyAsync(const ir::Operation& op);
  Status execAsyncWait(const ir::Operation& op);
  Status execCopyBulk(const ir::Operation& op);
  Status execBulkWait(const ir::Operation& op);
  Status execStoreBulk(const ir::Operation& op);
  Status execBulkStoreWait(const ir::Operation& op);
  Status execCluster(const ir::Operation& op);
  Status execWaitGe(const ir::Operation& op);
  Status execIndex(const ir::Operation& op);

  Status tileOf(const ir::Operation& op, unsigned i, const Tile*& out);
  Status memOf(const ir::Operation& op, unsigned i, Memory*& out);
  Status setResult(const ir::Operation& op, unsigned i, Tile t);
  Status needCta(const ir::Operation& op) const;

  const SlotMap& slots_;
  const CtaInfo* cta_;
  std::vector<Slot> frame_;
  std::unordered_map<const ir::Operation*, std::unique_ptr<SharedBuffer>> shared_;
  /// tile.copy_async in flight, oldest first: each reads its source when it
  /// runs and writes its destination at the gpu.async_wait that retires it
  /// (the latest point the GPU may complete it), so a kernel that reads the
  /// buffer before waiting sees the old contents here too.
  struct PendingWrite {
    Memory* mem;
    int64_t offset;
    double value;
    int64_t from = -1;  // the source element's offset (-1: zero for a masked or out-of-bounds one)
  };
  std::deque<std::vector<PendingWrite>> copies_;
  /// tile.copy_bulk in flight by (buffer, slot), retired by gpu.bulk_wait.
  std::map<std::pair<const Memory*, int64_t>, std::vector<PendingWrite>> bulk_;
  /// tile.store_bulk not yet retired by gpu.bulk_store_wait, oldest first:
  /// the shared elements each still reads (sorted offsets), which no op may
  /// write until then.
  struct StoreRead {
    const Memory* buf;
    int64_t slot;
    std::vector<int64_t> offsets;
  };
  std::deque<StoreRead> storeReads_;
  /// Whether a store_bulk still reads part of `mem` (checked once per op, so
  /// that the per-element check below runs only then).
  bool lockedByStores(const Memory* mem) const;
  /// An error when `op` writes element `offset` of `mem` while a store_bulk reads it.
  Status checkStoreReads(const ir::Operation& op, const Memory* mem, int64_t offset) const;
  Status readCopy(const ir::Operation& op, std::vector<PendingWrite>& writes);
  Status bulkSlot(const ir::Operation& op, unsigned memOperand, unsigned first, Memory*& buf, int64_t& slot);
  std::vector<Tile>* results_ = nullptr;  // where the current block's terminator puts its operands
  bool atTerminator_ = false;
  bool returned_ = false;
};

/// Expands `src` to `shape` under NumPy broadcasting into `out`; false when
/// the shapes are incompatible.
bool broadcastInto(const Tile& src, const std::vector<int64_t>& shape, std::vector<double>& out);
/// out[i] = src[offset of i's multi-index under `strides`], for i over `shape` in row-major order.
void gather(const double* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, double* out);
int64_t numElements(const std::vector<int64_t>& shape);
/// A value for messages, exactly (%.17g: 3, 0.5, 1e+20).
std::string fmtNumber(double v);

/// Elementwise rules (Elementwise.cpp). Operands are already broadcast to n
/// elements; results are rounded to `out`. `in` is the operands' dtype, which
/// chooses integer or float semantics. Errors name the op.
Status evalUnary(const ir::Operation& op, ir::DType in, ir::DType out, const double* a, double* r, int64_t n);
Status evalBinary(const ir::Operation& op, ir::DType in, ir::DType out, const double* a, const double* b, double* r,
                  int64_t n);
Status evalFma(ir::DType in, ir::DType out, const double* a, const double* b, const double* c, double* r, int64_t n);
void evalCast(ir::DType in, ir::DType out, const double* a, double* r, int64_t n);

}  // namespace fnk::interp::detail
