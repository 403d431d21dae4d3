// Memory and cluster ops of the evaluator: tile.load / tile.store on global
// tensors and shared buffers, gpu.shared_alloc, and the cluster collectives.
#include <algorithm>
#include <mutex>

#include "backend/interp/Cluster.h"
#include "backend/interp/Eval.h"
#include "backend/interp/Grid.h"
#include "support/Float.h"

namespace fnk::interp::detail {

namespace {

Status opError(const ir::Operation& op, const std::string& m) { return Status::error(std::string(op.name()) + ": " + m); }

/// The row-major offset of element `e` of an access whose index operands are
/// `idx[0..rank)`; false when an index falls outside its dim (the automatic
/// bounds mask of tile.load and tile.store).
bool elementOffset(const Memory& m, const double* const* idx, int64_t e, int64_t& off) {
  off = 0;
  for (size_t d = 0; d < m.shape.size(); ++d) {
    double x = idx[d][e];
    if (!(x >= 0 && x < static_cast<double>(m.shape[d]))) return false;
    off = off * m.shape[d] + static_cast<int64_t>(x);
  }
  return true;
}

}  // namespace

// Index, mask and `other` operands broadcast to the access shape; an element
// is valid when every index lies in [0, dim) and the mask is true.
Status Evaluator::execLoad(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  Memory* m;
  if (Status s = memOf(op, 0, m); !s) return s;
  const size_t r = m->shape.size();
  const bool hasMask = op.attrs().getBool("mask"), hasOther = op.attrs().getBool("other");
  const size_t expected = 1 + r + hasMask + hasOther;
  if (op.numOperands() != expected)
    return opError(op, "has " + std::to_string(op.numOperands()) + " operands but a load from rank-" + std::to_string(r) +
                           " memory" + (hasMask ? " with a mask" : "") + (hasOther ? " with other" : "") + " takes " +
                           std::to_string(expected));
  const ir::Type& rt = op.result()->type();
  const int64_t n = numElements(rt.shape);
  std::vector<std::vector<double>> scratch(expected);
  std::vector<const double*> p(expected, nullptr);
  for (unsigned i = 1; i < expected; ++i) {
    const Tile* t;
    if (Status s = tileOf(op, i, t); !s) return s;
    if (t->shape == rt.shape) p[i] = t->data.data();
    else if (broadcastInto(*t, rt.shape, scratch[i])) p[i] = scratch[i].data();
    else return opError(op, "operand " + std::to_string(i) + " of shape " + ir::shapeStr(t->shape) +
                                " does not broadcast to the result shape " + ir::shapeStr(rt.shape));
  }
  const double* mask = hasMask ? p[1 + r] : nullptr;
  const double* other = hasOther ? p[1 + r + hasMask] : nullptr;
  Tile out{rt.shape, std::vector<double>(static_cast<size_t>(n))};
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    bool valid = (!mask || mask[e] != 0) && elementOffset(*m, &p[1], e, off);
    out.data[e] = valid ? m->data[off] : other ? other[e] : 0.0;
  }
  roundInPlace(out.data.data(), n, rt.dtype);
  return setResult(op, 0, std::move(out));
}

// A hint for the GPU's caches: no effect on any value. Its operands are
// checked as a load's (they must exist and broadcast together), so that a
// prefetch the GPU would take is one the interpreter takes.
Status Evaluator::execPrefetch(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  Memory* m;
  if (Status s = memOf(op, 0, m); !s) return s;
  const size_t expected = 1 + m->shape.size() + op.attrs().getBool("mask");
  if (op.numOperands() != expected)
    return opError(op, "has " + std::to_string(op.numOperands()) + " operands but a prefetch of rank-" +
                           std::to_string(m->shape.size()) + " memory takes " + std::to_string(expected));
  std::vector<const Tile*> t;
  std::vector<int64_t> shape;
  return broadcastOperands(op, t, shape);
}

// gpu.wait_ge: while the element holds less than the value, the CTA passes
// its turn to the others (the kernel's CTAs run as threads, one at a time).
Status Evaluator::execWaitGe(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  if (!cta_->turns) return opError(op, "internal error: the kernel waits on other CTAs but its grid does not run at once");
  Memory* m;
  if (Status s = memOf(op, 0, m); !s) return s;
  const size_t rank = m->shape.size();
  if (op.numOperands() != rank + 2)
    return opError(op, "has " + std::to_string(op.numOperands()) + " operands but a wait on rank-" + std::to_string(rank) +
                           " memory takes " + std::to_string(rank + 2));
  std::vector<const double*> idx(rank);
  for (size_t d = 0; d < rank; ++d) {
    const Tile* t;
    if (Status s = tileOf(op, static_cast<unsigned>(1 + d), t); !s) return s;
    if (t->data.size() != 1) return opError(op, "index " + std::to_string(d) + " is not a scalar");
    idx[d] = t->data.data();
  }
  const Tile* want;
  if (Status s = tileOf(op, static_cast<unsigned>(1 + rank), want); !s) return s;
  if (want->data.size() != 1) return opError(op, "the value waited for is not a scalar");
  std::string at;
  for (size_t d = 0; d < rank; ++d) at += (d ? ", " : "") + fmtNumber(*idx[d]);
  int64_t off = 0;
  if (!elementOffset(*m, idx.data(), 0, off)) {
    std::string dims;
    for (size_t d = 0; d < rank; ++d) dims += (d ? ", " : "") + std::to_string(m->shape[d]);
    return opError(op, "waits on " + m->name + "[" + at + "], outside its shape [" + dims + "]");
  }
  auto waiting = [&] {
    return "CTA (" + std::to_string(cta_->pid[0]) + ", " + std::to_string(cta_->pid[1]) + ", " +
           std::to_string(cta_->pid[2]) + ") waits for " + m->name + "[" + at + "] >= " + fmtNumber(want->data[0]) +
           ", which holds " + fmtNumber(m->data[off]);
  };
  for (bool fruitless = false; m->data[off] < want->data[0]; fruitless = true)
    if (Status s = cta_->turns->pass(cta_->turnRank, fruitless, waiting); !s) return s;
  return Status::ok();
}

Status Evaluator::broadcastOperands(const ir::Operation& op, std::vector<const Tile*>& t, std::vector<int64_t>& shape) {
  t.assign(op.numOperands(), nullptr);
  shape.clear();
  for (unsigned i = 1; i < op.numOperands(); ++i) {
    if (Status s = tileOf(op, i, t[i]); !s) return s;
    auto b = ir::broadcastShapes(shape, t[i]->shape);
    if (!b) return opError(op, "operand shapes " + ir::shapeStr(shape) + " and " + ir::shapeStr(t[i]->shape) + " do not broadcast");
    shape = *b;
  }
  return Status::ok();
}

// Invalid elements (out of bounds or masked off) are skipped, so a store
// needs no explicit bounds mask. tile.atomic is a store that adds the value
// to what the memory holds, element by element in row-major order (repeated
// indices add up), and returns the values it found there (0 where invalid);
// the CTAs of a cluster, which run as threads, take turns.
Status Evaluator::execStore(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  Memory* m;
  if (Status s = memOf(op, 0, m); !s) return s;
  const size_t r = m->shape.size();
  const bool hasMask = op.attrs().getBool("mask");
  const size_t expected = 2 + r + hasMask;
  if (op.numOperands() != expected)
    return opError(op, "has " + std::to_string(op.numOperands()) + " operands but a store to rank-" + std::to_string(r) +
                           " memory" + (hasMask ? " with a mask" : "") + " takes " + std::to_string(expected));
  std::vector<const Tile*> t;
  std::vector<int64_t> shape;
  if (Status s = broadcastOperands(op, t, shape); !s) return s;
  const int64_t n = numElements(shape);
  std::vector<std::vector<double>> scratch(expected);
  std::vector<const double*> p(expected, nullptr);
  for (unsigned i = 1; i < expected; ++i) {
    if (t[i]->shape == shape) p[i] = t[i]->data.data();
    else {
      (void)broadcastInto(*t[i], shape, scratch[i]);  // cannot fail: shape is their broadcast
      p[i] = scratch[i].data();
    }
  }
  const double* value = p[1 + r];
  const double* mask = hasMask ? p[2 + r] : nullptr;
  const ir::DType dt = m->dtype;
  if (op.kind() == ir::OpKind::Store) {
    const bool locked = lockedByStores(m);
    for (int64_t e = 0; e < n; ++e) {
      int64_t off = 0;
      bool valid = (!mask || mask[e] != 0) && elementOffset(*m, &p[1], e, off);
      if (!valid) continue;
      if (locked)
        if (Status s = checkStoreReads(op, m, off); !s) return s;
      m->data[off] = roundToDType(value[e], dt);
    }
    return Status::ok();
  }
  if (op.attrs().getStr("kind") != "add") return opError(op, "unknown kind '" + op.attrs().getStr("kind") + "'");
  Tile old{shape, std::vector<double>(static_cast<size_t>(n), 0.0)};
  {
    static std::mutex turns;
    std::lock_guard<std::mutex> lock(turns);
    for (int64_t e = 0; e < n; ++e) {
      int64_t off = 0;
      if (!(!mask || mask[e] != 0) || !elementOffset(*m, &p[1], e, off)) continue;
      old.data[e] = m->data[off];
      m->data[off] = roundToDType(m->data[off] + value[e], dt);
    }
  }
  return setResult(op, 0, std::move(old));
}

// The source elements of a copy (tile.copy_async, tile.copy_bulk) are read
// when it runs (zero where masked off or out of bounds); its writes wait until
// the op that retires them. A destination index outside the buffer drops its
// element.
Status Evaluator::readCopy(const ir::Operation& op, std::vector<PendingWrite>& writes) {
  if (Status s = needCta(op); !s) return s;
  Memory *dst, *src;
  if (Status s = memOf(op, 0, dst); !s) return s;
  if (Status s = memOf(op, 1, src); !s) return s;
  const size_t rd = dst->shape.size(), rs = src->shape.size();
  const bool hasMask = op.attrs().getBool("mask");
  const size_t expected = 2 + rd + rs + hasMask;
  if (op.numOperands() != expected)
    return opError(op, "has " + std::to_string(op.numOperands()) + " operands, expected " + std::to_string(expected));
  std::vector<const double*> p(expected, nullptr);
  std::vector<int64_t> shape;
  for (unsigned i = 2; i < expected; ++i) {
    const Tile* t;
    if (Status s = tileOf(op, i, t); !s) return s;
    if (i > 2 && t->shape != shape) return opError(op, "operands must share one shape");
    shape = t->shape;
    p[i] = t->data.data();
  }
  const int64_t n = numElements(shape);
  const double* mask = hasMask ? p[2 + rd + rs] : nullptr;
  const bool locked = lockedByStores(dst);
  for (int64_t e = 0; e < n; ++e) {
    int64_t to = 0, from = 0;
    if (!elementOffset(*dst, &p[2], e, to)) continue;
    const bool valid = (!mask || mask[e] != 0) && elementOffset(*src, &p[2 + rd], e, from);
    if (locked)  // a copy may land as soon as it is issued
      if (Status s = checkStoreReads(op, dst, to); !s) return s;
    writes.push_back({dst, to, valid ? src->data[from] : 0.0, valid ? from : -1});
  }
  return Status::ok();
}

Status Evaluator::execCopyAsync(const ir::Operation& op) {
  std::vector<PendingWrite> writes;
  if (Status s = readCopy(op, writes); !s) return s;
  copies_.push_back(std::move(writes));
  return Status::ok();
}

Status Evaluator::execAsyncWait(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  const auto pending = static_cast<size_t>(std::max<int64_t>(0, op.attrs().getInt("pending", 0)));
  while (copies_.size() > pending) {
    for (const PendingWrite& w : copies_.front()) w.mem->data[w.offset] = w.value;
    copies_.pop_front();
  }
  return Status::ok();
}

// The slot of a shared buffer that a bulk copy or wait names: its leading
// indices, operands first..first + rank - 2 (element 0 of each: the copy's
// are broadcast scalars), as one row-major number; an error when out of range.
Status Evaluator::bulkSlot(const ir::Operation& op, unsigned memOperand, unsigned first, Memory*& buf, int64_t& slot) {
  if (Status s = memOf(op, memOperand, buf); !s) return s;
  slot = 0;
  for (size_t d = 0; d + 1 < buf->shape.size(); ++d) {
    const Tile* t;
    if (Status s = tileOf(op, first + static_cast<unsigned>(d), t); !s) return s;
    const int64_t i = t->data.empty() ? 0 : static_cast<int64_t>(t->data[0]);
    if (i < 0 || i >= buf->shape[d])
      return opError(op, "slot index " + std::to_string(i) + " is out of range for dim " + std::to_string(d) +
                             " of the " + buf->name + " (size " + std::to_string(buf->shape[d]) + ")");
    slot = slot * buf->shape[d] + i;
  }
  return Status::ok();
}

// A bulk copy's writes wait in bulk_ for the gpu.bulk_wait on its slot. One
// copy per slot may be in flight (on the GPU the slot's mbarrier counts one).
Status Evaluator::execCopyBulk(const ir::Operation& op) {
  std::vector<PendingWrite> writes;
  if (Status s = readCopy(op, writes); !s) return s;
  Memory* buf;
  int64_t slot;
  if (Status s = bulkSlot(op, 0, 2, buf, slot); !s) return s;
  auto [it, fresh] = bulk_.try_emplace({buf, slot}, std::move(writes));
  if (!fresh)
    return opError(op, "copies into slot " + std::to_string(slot) + " of the " + buf->name +
                           " while its previous copy_bulk is in flight; wait_bulk on the slot first");
  return Status::ok();
}

Status Evaluator::execBulkWait(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  Memory* buf;
  int64_t slot;
  if (Status s = bulkSlot(op, 0, 1, buf, slot); !s) return s;
  auto it = bulk_.find({buf, slot});
  if (it == bulk_.end())
    return opError(op, "waits on slot " + std::to_string(slot) + " of the " + buf->name +
                           ", which has no copy_bulk in flight (on the GPU this wait would never end)");
  for (const PendingWrite& w : it->second) w.mem->data[w.offset] = w.value;
  bulk_.erase(it);
  return Status::ok();
}

// tile.store_bulk: one run out of a shared slot into a tensor row. Its
// elements are read and written when it runs (the GPU's copy reads the slot
// at some point before the gpu.bulk_store_wait that retires it, so a kernel
// that leaves the slot alone until then stores these same bytes; elements
// past the tensor's bounds are dropped), and the slot's elements stay locked
// against writes until that wait. A slot with a copy into it in flight would
// be read before or after the copy lands: an error too.
Status Evaluator::execStoreBulk(const ir::Operation& op) {
  std::vector<PendingWrite> writes;
  if (Status s = readCopy(op, writes); !s) return s;
  Memory* buf;
  int64_t slot;
  const auto rd = static_cast<unsigned>(op.operand(0)->type().rank());
  if (Status s = bulkSlot(op, 1, 2 + rd, buf, slot); !s) return s;
  if (bulk_.count({buf, slot}))
    return opError(op, "reads slot " + std::to_string(slot) + " of the " + buf->name +
                           " while a copy_bulk into it is in flight; wait_bulk on the slot first");
  StoreRead read{buf, slot, {}};
  for (const PendingWrite& w : writes)
    if (w.from >= 0) read.offsets.push_back(w.from);
  std::sort(read.offsets.begin(), read.offsets.end());
  for (const auto& pending : copies_)
    for (const PendingWrite& w : pending)
      if (w.mem == buf && std::binary_search(read.offsets.begin(), read.offsets.end(), w.offset))
        return opError(op, "reads the " + buf->name + " while a copy_async into it is in flight; wait_async first");
  for (const PendingWrite& w : writes) w.mem->data[w.offset] = w.value;
  storeReads_.push_back(std::move(read));
  return Status::ok();
}

Status Evaluator::execBulkStoreWait(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  const auto pending = static_cast<size_t>(std::max<int64_t>(0, op.attrs().getInt("pending", 0)));
  while (storeReads_.size() > pending) storeReads_.pop_front();
  return Status::ok();
}

bool Evaluator::lockedByStores(const Memory* mem) const {
  return std::any_of(storeReads_.begin(), storeReads_.end(), [&](const StoreRead& r) { return r.buf == mem; });
}

Status Evaluator::checkStoreReads(const ir::Operation& op, const Memory* mem, int64_t offset) const {
  for (const StoreRead& r : storeReads_)
    if (r.buf == mem && std::binary_search(r.offsets.begin(), r.offsets.end(), offset))
      return opError(op, "writes slot " + std::to_string(r.slot) + " of the " + mem->name +
                             " while a store_bulk still reads it; wait_bulk_stores first");
  return Status::ok();
}

Status Evaluator::finish() const {
  if (!storeReads_.empty())
    return Status::error("the kernel ended with a store_bulk from slot " + std::to_string(storeReads_.front().slot) +
                         " of the " + storeReads_.front().buf->name +
                         " still reading it (wait_bulk_stores() first: the CTA's shared memory ends with it)");
  if (bulk_.empty()) return Status::ok();
  const auto& [key, writes] = *bulk_.begin();
  return Status::error("the kernel ended with a copy_bulk into slot " + std::to_string(key.second) + " of the " +
                       key.first->name + " never waited for (wait_bulk)");
}

// A buffer is allocated (and poisoned) the first time its op runs in a CTA
// and reused after, as the GPU's shared memory is laid out once per kernel.
Status Evaluator::execSharedAlloc(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  const ir::Type& rt = op.result()->type();
  if (!rt.isShared()) return opError(op, "result type " + rt.str() + " is not a shared buffer");
  auto& buf = shared_[&op];
  if (!buf) {
    buf = std::make_unique<SharedBuffer>();
    buf->mem.name = "shared buffer " + rt.str();
    buf->mem.dtype = rt.dtype;
    buf->mem.shape = rt.shape;
    buf->storage.assign(static_cast<size_t>(numElements(rt.shape)), poisonValue(rt.dtype));
    buf->mem.data = buf->storage.data();
  }
  return bindMemory(op.result(), &buf->mem);
}

Status Evaluator::execCluster(const ir::Operation& op) {
  if (Status s = needCta(op); !s) return s;
  const int rank = static_cast<int>(cta_->clusterRank);
  if (op.kind() == ir::OpKind::ClusterSync) {
    if (!cta_->cluster) return Status::ok();
    return cta_->cluster->arrive(rank, op, nullptr, nullptr, ir::DType::F32);
  }
  const Tile* a;
  if (Status s = tileOf(op, 0, a); !s) return s;
  std::string kind = op.attrs().getStr("kind");
  if (kind != "sum" && kind != "max" && kind != "min") return opError(op, "unknown kind '" + kind + "'");
  const ir::DType dt = op.result()->type().dtype;
  Tile out;
  if (cta_->cluster) {
    if (Status s = cta_->cluster->arrive(rank, op, a, &out, dt); !s) return s;
  } else {
    out = *a;
    roundInPlace(out.data.data(), static_cast<int64_t>(out.data.size()), dt);
  }
  return setResult(op, 0, std::move(out));
}

}  // namespace fnk::interp::detail
