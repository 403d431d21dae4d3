#include "ir/passes/Layout.h"

#include "ir/Knobs.h"

namespace fnk::ir {

TileLayout tileLayout(const std::vector<int64_t>& shape, int64_t threads) {
  TileLayout l;
  l.threads = threads;
  l.elems = 1;
  for (int64_t d : shape) l.elems *= d;
  if (l.elems <= 1) return l;  // uniform
  l.uniform = false;
  const int64_t inner = shape.back();
  int64_t v = 8;
  while (v > 1 && (inner % v != 0 || v * threads > l.elems)) v /= 2;
  l.vec = v;
  l.chunks = (l.elems + threads * v - 1) / (threads * v);
  const int64_t rows = l.elems / inner, groups = threads / 32;
  if (shape.size() >= 2 && groups > 1 && rows >= groups && inner % (32 * v) == 0 && !knob(Knob::NoWarpRows)) {
    l.lanes = 32;
    l.rowLen = inner;
    l.chunks = (rows + groups - 1) / groups * (inner / (32 * v));
  }
  return l;
}

namespace {

void annotate(Block& b, int64_t threads) {
  for (auto& op : b.ops()) {
    if (op->numResults() == 1 && op->result(0)->type().isTile()) {
      TileLayout l = tileLayout(op->result(0)->type().shape, threads);
      if (l.uniform) {
        op->attrs().set("layout", std::string("uniform"));
      } else {
        op->attrs().set("layout", std::string("blocked"));
        op->attrs().set("vec", l.vec);
        op->attrs().set("chunks", l.chunks);
        if (l.lanes) op->attrs().set("lanes", l.lanes);
      }
    }
    for (unsigned r = 0; r < op->numRegions(); ++r)
      for (auto& nb : op->region(r).blocks()) annotate(*nb, threads);
  }
}

}  // namespace

bool runLayout(Module& m, DiagEngine&) {
  for (auto& f : m.functions) {
    if (f->body.empty()) continue;
    for (auto& b : f->body.blocks()) annotate(*b, 32 * f->warps());
  }
  return true;
}

}  // namespace fnk::ir
