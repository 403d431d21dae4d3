// interp::run: checks the launch arguments against the kernel's parameters,
// evaluates the launch region for the grid, and runs every CTA. Clusters run
// one after another; the CTAs of a cluster of more than one run as threads that
// share a ClusterBarrier, so cluster collectives synchronize as on the GPU. A
// kernel that waits on other CTAs (gpu.wait_ge) runs its whole grid as threads
// that take turns (GridTurns).
#include "backend/interp/Interpreter.h"

#include <cctype>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "backend/interp/Cluster.h"
#include "backend/interp/Eval.h"
#include "backend/interp/Grid.h"
#include "support/Float.h"

namespace fnk::interp {


namespace {

using detail::CtaInfo;
using detail::fmtNumber;
using detail::Evaluator;
using detail::Memory;
using detail::SlotMap;
using detail::Tile;

// Hardware clusters hold at most 16 CTAs (sm_90, non-portable size); more
// would also mean more threads than the interpreter should start at once.
constexpr int64_t kMaxClusterSize = 16;
// A kernel whose CTAs wait for each other runs its whole grid as threads; on
// the GPU the grid must be resident at once, a few thousand CTAs at most.
constexpr int64_t kMaxWaitingGrid = 4096;

bool isDecimal(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string shapeList(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// The launch state shared by every CTA: memory views of the tensor arguments
// and the rounded scalar arguments, in parameter order.
struct Bound {
  std::vector<Memory> mems;
  std::vector<double> scalars;
};

// With `needData` false, tensors may carry only their shapes (a launch whose
// data lives on the GPU): everything else is checked the same.
Status bindArgs(const ir::Function& fn, const std::vector<Arg>& args, Bound& out, bool needData = true) {
  if (args.size() != fn.params.size())
    return Status::error("expected " + std::to_string(fn.params.size()) + " arguments, got " +
                         std::to_string(args.size()));
  out.mems.resize(fn.params.size());
  out.scalars.assign(fn.params.size(), 0);
  std::map<std::string, std::pair<int64_t, std::string>> dims;  // symbol -> (size, first parameter using it)
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    const std::string who = "argument '" + p.name + "'";
    if (!p.type.isTensor()) {
      const double* v = std::get_if<double>(&args[i]);
      if (!v) return Status::error(who + ": expected a scalar " + p.type.str() + ", got a tensor");
      out.scalars[i] = roundToDType(*v, p.type.dtype);
      continue;
    }
    HostTensor* const* tp = std::get_if<HostTensor*>(&args[i]);
    if (!tp || !*tp) return Status::error(who + ": expected a " + p.type.str() + ", got a scalar");
    HostTensor& t = **tp;
    if (t.dtype != p.type.dtype)
      return Status::error(who + ": dtype is " + std::string(ir::dtypeName(t.dtype)) + " but the parameter is " +
                           p.type.str());
    if (t.shape.size() != p.type.dims.size())
      return Status::error(who + ": shape " + shapeList(t.shape) + " has rank " + std::to_string(t.shape.size()) +
                           " but the parameter is " + p.type.str());
    int64_t n = detail::numElements(t.shape);
    if (n < 0) return Status::error(who + ": shape " + shapeList(t.shape) + " is invalid");
    if (needData && static_cast<size_t>(n) != t.data.size())
      return Status::error(who + ": shape " + shapeList(t.shape) + " needs " + std::to_string(n) +
                           " elements but the data has " + std::to_string(t.data.size()));
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const std::string& sym = p.type.dims[d];
      int64_t size = t.shape[d];
      if (isDecimal(sym)) {
        if (std::stoll(sym) != size)
          return Status::error(who + ": dim " + std::to_string(d) + " is " + std::to_string(size) +
                               " but the parameter " + p.type.str() + " requires " + sym);
        continue;
      }
      auto [it, fresh] = dims.emplace(sym, std::make_pair(size, p.name));
      if (!fresh && it->second.first != size)
        return Status::error(who + ": dim " + sym + " is " + std::to_string(size) + " here but " +
                             std::to_string(it->second.first) + " from '" + it->second.second + "'");
    }
    out.mems[i] = Memory{"tensor '" + p.name + "'", t.dtype, t.shape, t.data.data()};
  }
  return Status::ok();
}

Status bindEntry(Evaluator& ev, const ir::Block& b, const ir::Function& fn, Bound& bound, const char* region) {
  if (b.numArguments() != fn.params.size())
    return Status::error(std::string("the ") + region + " region takes " +
                         std::to_string(b.numArguments()) + " arguments for " + std::to_string(fn.params.size()) +
                         " parameters");
  for (unsigned i = 0; i < b.numArguments(); ++i) {
    Status s = fn.params[i].type.isTensor() ? ev.bindMemory(b.argument(i), &bound.mems[i])
                                            : ev.bindTile(b.argument(i), Tile{{}, {bound.scalars[i]}});
    if (!s) return s;
  }
  return Status::ok();
}

Status runCta(const ir::Function& fn, const SlotMap& slots, Bound& bound, const CtaInfo& cta) {
  Evaluator ev(slots, &cta);
  Status s = bindEntry(ev, fn.body.front(), fn, bound, "body");
  if (s) s = ev.runBlock(fn.body.front(), nullptr);
  if (s) s = ev.finish();
  if (s) return s;
  return Status::error("CTA (" + std::to_string(cta.pid[0]) + ", " +
                       std::to_string(cta.pid[1]) + ", " + std::to_string(cta.pid[2]) + "): " + s.message());
}

// Runs every CTA of `ctas` on a thread of its own and returns their results.
// `begin(r)` runs on CTA r's thread before it and `stop(r, failed)` after it,
// or at once (failed) for a CTA whose thread cannot start, so that no CTA
// waits for one that is gone.
std::vector<Status> runCtaThreads(const ir::Function& fn, const SlotMap& slots, Bound& bound,
                                  const std::vector<CtaInfo>& ctas, const std::function<void(int)>& begin,
                                  const std::function<void(int, bool)>& stop) {
  const int size = static_cast<int>(ctas.size());
  std::vector<Status> results(size);
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (int r = 0; r < size; ++r) {
    try {
      threads.emplace_back([&, r] {
        begin(r);
        try {
          results[r] = runCta(fn, slots, bound, ctas[r]);
        } catch (const std::exception& e) {
          results[r] = Status::error(std::string("internal error: ") + e.what());
        }
        stop(r, !results[r]);
      });
    } catch (const std::exception& e) {
      for (int q = r; q < size; ++q) {
        results[q] = Status::error(std::string("cannot start a thread for a CTA: ") + e.what());
        stop(q, true);
      }
      break;
    }
  }
  for (auto& t : threads) t.join();
  return results;
}

// Runs the CTAs of one cluster of several CTAs, one thread each. Every thread
// leaves the barrier when it stops, so no CTA waits for one that is gone.
Status runCluster(const ir::Function& fn, const SlotMap& slots, Bound& bound, std::vector<CtaInfo> ctas) {
  detail::ClusterBarrier barrier(static_cast<int>(ctas.size()));
  for (CtaInfo& c : ctas) c.cluster = &barrier;
  const std::vector<Status> results =
      runCtaThreads(fn, slots, bound, ctas, [](int) {}, [&](int r, bool failed) { barrier.leave(r, failed); });
  // Report the cause, not the CTAs that a broken barrier released.
  for (size_t r = 0; r < results.size(); ++r)
    if (!results[r] && !barrier.brokeAtBarrier(static_cast<int>(r))) return results[r];
  for (const Status& s : results)
    if (!s) return s;
  return Status::ok();
}

// Runs every CTA of a grid that waits on its own CTAs (gpu.wait_ge), one
// thread each, taking turns in launch order (GridTurns).
Status runGrid(const ir::Function& fn, const SlotMap& slots, Bound& bound, std::vector<CtaInfo> ctas) {
  detail::GridTurns turns(static_cast<int>(ctas.size()));
  for (size_t r = 0; r < ctas.size(); ++r) ctas[r].turns = &turns, ctas[r].turnRank = static_cast<int>(r);
  const std::vector<Status> results = runCtaThreads(
      fn, slots, bound, ctas, [&](int r) { turns.begin(r); }, [&](int r, bool) { turns.end(r); });
  // Report the cause, not the CTAs that a deadlock released.
  for (size_t r = 0; r < results.size(); ++r)
    if (!results[r] && !turns.deadlocked(static_cast<int>(r))) return results[r];
  if (std::string why = turns.why(); !why.empty()) return Status::error("wait_ge: " + why);
  return Status::ok();
}

}  // namespace

std::string describeDims(const ir::Function& fn, const std::vector<Arg>& args) {
  std::string out;
  std::set<std::string> seen;
  for (size_t i = 0; i < fn.params.size() && i < args.size(); ++i) {
    auto* t = std::get_if<HostTensor*>(&args[i]);
    if (!t || !*t) continue;
    const auto& dims = fn.params[i].type.dims;
    for (size_t d = 0; d < dims.size() && d < (*t)->shape.size(); ++d)
      if (!std::isdigit(static_cast<unsigned char>(dims[d][0])) && seen.insert(dims[d]).second)
        out += (out.empty() ? "" : ", ") + dims[d] + " = " + std::to_string((*t)->shape[d]);
  }
  return out;
}

namespace {

// The launch region runs on the host, before any CTA: no CTA ops, no memory
// access. Gives the grid, or the failed requirement with the bound dims.
Status evalLaunch(const ir::Function& fn, const std::vector<Arg>& args, Bound& bound, const SlotMap& slots,
                  int64_t g[3]) {
  std::vector<Tile> grid;
  Evaluator launch(slots, nullptr);
  if (Status s = bindEntry(launch, fn.launch.front(), fn, bound, "launch"); !s) return s;
  if (Status s = launch.runBlock(fn.launch.front(), &grid); !s) {
    std::string dims = describeDims(fn, args);
    return Status::error("launch region: " + s.message() + (dims.empty() ? "" : " (" + dims + ")"));
  }
  if (grid.size() != 3) return Status::error("the launch region does not end in func.launch_grid");
  for (int i = 0; i < 3; ++i) {
    if (grid[i].data.size() != 1)
      return Status::error("grid dim " + std::to_string(i) + " is not a scalar");
    double v = grid[i].data[0];
    if (!(v >= 0 && v < 9.0e18))
      return Status::error("grid dim " + std::to_string(i) + " is " + fmtNumber(v));
    g[i] = static_cast<int64_t>(v);
  }
  return Status::ok();
}

Status runImpl(const ir::Function& fn, const std::vector<Arg>& args, const RunOptions& opts) {
  Bound bound;
  if (Status s = bindArgs(fn, args, bound); !s) return s;
  if (fn.launch.empty() || fn.body.empty())
    return Status::error("the kernel lacks a launch or a body region");
  SlotMap slots(fn);
  int64_t g[3];
  if (Status s = evalLaunch(fn, args, bound, slots, g); !s) return s;
  std::vector<int64_t> c = fn.cluster();
  c.resize(3, 1);
  int64_t clusterSize = 1;
  for (int i = 0; i < 3; ++i) {
    if (c[i] < 1 || c[i] > kMaxClusterSize)
      return Status::error("cluster dim " + std::to_string(i) + " is " + std::to_string(c[i]));
    clusterSize *= c[i];
  }
  if (clusterSize > kMaxClusterSize)
    return Status::error("a cluster of " + std::to_string(clusterSize) +
                         " CTAs is more than the " + std::to_string(kMaxClusterSize) + " the interpreter supports");
  for (int i = 0; i < 3; ++i)
    if (g[i] % c[i] != 0)
      return Status::error("cluster " + shapeList(c) + " does not divide grid " +
                           shapeList({g[0], g[1], g[2]}));

  if (opts.poisonOutputs)
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].type.isTensor() && fn.params[i].type.isOut && !fn.addsAtomically(i)) {
        HostTensor* t = std::get<HostTensor*>(args[i]);
        std::fill(t->data.begin(), t->data.end(), poisonValue(t->dtype));
      }

  if (fn.waitsOnOtherCtas()) {  // never in clusters: the verifier refuses that
    const int64_t total = g[0] * g[1] * g[2];
    if (total > kMaxWaitingGrid)
      return Status::error("a kernel that waits on other CTAs (wait_ge) runs its whole grid at once: " +
                           shapeList({g[0], g[1], g[2]}) + " is " + std::to_string(total) + " CTAs, more than the " +
                           std::to_string(kMaxWaitingGrid) + " the interpreter runs");
    std::vector<CtaInfo> ctas;
    for (int64_t z = 0; z < g[2]; ++z)
      for (int64_t y = 0; y < g[1]; ++y)
        for (int64_t x = 0; x < g[0]; ++x) {
          CtaInfo cta;
          cta.pid[0] = x, cta.pid[1] = y, cta.pid[2] = z;
          for (int i = 0; i < 3; ++i) cta.grid[i] = g[i];
          ctas.push_back(cta);
        }
    return runGrid(fn, slots, bound, std::move(ctas));
  }
  // Clusters in row-major order with x fastest; inside a cluster the rank is
  // linear with x fastest, as %cluster_ctarank on the GPU.
  for (int64_t z = 0; z < g[2]; z += c[2])
    for (int64_t y = 0; y < g[1]; y += c[1])
      for (int64_t x = 0; x < g[0]; x += c[0]) {
        std::vector<CtaInfo> ctas;
        for (int64_t dz = 0; dz < c[2]; ++dz)
          for (int64_t dy = 0; dy < c[1]; ++dy)
            for (int64_t dx = 0; dx < c[0]; ++dx) {
              CtaInfo cta;
              cta.pid[0] = x + dx, cta.pid[1] = y + dy, cta.pid[2] = z + dz;
              for (int i = 0; i < 3; ++i) cta.grid[i] = g[i];
              cta.clusterRank = dx + dy * c[0] + dz * c[0] * c[1];
              cta.clusterSize = clusterSize;
              ctas.push_back(cta);
            }
        Status s = clusterSize == 1 ? runCta(fn, slots, bound, ctas[0]) : runCluster(fn, slots, bound, ctas);
        if (!s) return s;
      }
  return Status::ok();
}

}  // namespace

Status run(const ir::Function& fn, const std::vector<Arg>& args, const RunOptions& opts) {
  try {
    return runImpl(fn, args, opts);
  } catch (const std::bad_alloc&) {
    return Status::error("the interpreter ran out of memory");
  } catch (const std::exception& e) {
    return Status::error(std::string("internal error: ") + e.what());
  }
}

Status launchGrid(const ir::Function& fn, const std::vector<Arg>& args, int64_t grid[3]) {
  Bound bound;
  if (Status s = bindArgs(fn, args, bound, /*needData=*/false); !s) return s;
  if (fn.launch.empty()) return Status::error("the kernel lacks a launch region");
  return evalLaunch(fn, args, bound, SlotMap(fn.launch), grid);  // called per GPU launch: no map of the body
}

}  // namespace fnk::interp
