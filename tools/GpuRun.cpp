#include "tools/GpuRun.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "backend/runtime/Launch.h"
#include "support/Elements.h"

namespace fnk::tools {

namespace {

void toDevice(const HostArray& a, std::vector<uint8_t>& out) {
  size_t w = static_cast<size_t>(elementBytes(a.dtype));
  out.resize(a.data.size() * w);
  for (size_t i = 0; i < a.data.size(); ++i) storeElement(&out[i * w], a.dtype, a.data[i]);
}

void fromDevice(const std::vector<uint8_t>& in, HostArray& a) {
  size_t w = static_cast<size_t>(elementBytes(a.dtype));
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = loadElement(&in[i * w], a.dtype);
}

// Tolerance for --check, relative to max(1, max |ref|) of the output.
double tolerance(ir::DType t) {
  switch (t) {
    case ir::DType::BF16: return 2e-2;
    case ir::DType::F16: return 4e-3;
    case ir::DType::F32: return 1e-4;
    case ir::DType::F64: return 1e-4;  // transcendentals go through f32 approximations
    default: return 0;
  }
}

// What limits how many CTAs of the kernel run at once, as the driver reports
// it: "occupancy K: 117 registers, 0 B local per thread, 1 CTAs/SM (16
// warps), 7 clusters of 16 resident = 112 CTAs, where 132 SMs hold 132": a
// cluster's CTAs must find room on the SMs of one GPC at once.
std::string occupancyLine(const std::string& name, const rt::LaunchPlan& plan, const rt::Occupancy& o) {
  std::ostringstream os;
  os << "occupancy " << name << ": " << o.registers << " registers, " << o.localBytes << " B local per thread";
  if (o.ctasPerSm > 0) os << ", " << o.ctasPerSm << " CTAs/SM (" << o.ctasPerSm * plan.threads / 32 << " warps)";
  const unsigned ctas = plan.cluster[0] * plan.cluster[1] * plan.cluster[2];
  if (ctas > 1 && o.clusters > 0) {
    os << ", " << o.clusters << " clusters of " << ctas << " resident = " << int64_t(o.clusters) * ctas << " CTAs";
    if (o.sms > 0 && o.ctasPerSm > 0) os << ", where " << o.sms << " SMs hold " << int64_t(o.sms) * o.ctasPerSm;
  }
  os << "\n";
  return os.str();
}

}  // namespace

Status runGpu(const ir::Function& fn, std::vector<interp::Arg>& args, const GpuRunOptions& opts, std::ostream& out) {
  rt::Device* dev = nullptr;
  if (Status s = rt::Device::open(dev); !s) return s;
  rt::Kernel k;
  rt::CompileInfo ci;
  if (Status s = rt::compileAndLoad(fn, *dev, k, &ci, rt::launchVariant(fn, args)); !s) return s;
  double compileMs = ci.ms;

  // Device buffers and the parameter block.
  std::vector<rt::DevPtr> bufs(fn.params.size(), 0);
  std::vector<size_t> bytes(fn.params.size(), 0);
  auto release = [&] {
    for (rt::DevPtr p : bufs)
      if (p) (void)dev->free(p);
  };
  double traffic = 0;
  std::vector<uint8_t> host;
  // Outputs start poisoned, but those the kernel adds to atomically start as
  // given (zeros from `fnk run`, or its --in); --check runs the interpreter from the same.
  std::vector<HostArray> initial(fn.params.size());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (!fn.params[i].type.isTensor()) continue;
    HostArray* a = std::get<HostArray*>(args[i]);
    const bool poison = fn.params[i].type.isOut && !fn.addsAtomically(i);
    if (fn.params[i].type.isOut && !poison) initial[i] = *a;
    bytes[i] = a->data.size() * static_cast<size_t>(elementBytes(a->dtype));
    traffic += static_cast<double>(bytes[i]);
    Status s = dev->alloc(bytes[i], bufs[i]);
    if (s && poison) s = dev->fill(bufs[i], 0xFF, bytes[i]);  // NaN / -1
    if (s && !poison) {
      toDevice(*a, host);
      s = dev->copyToDevice(bufs[i], host.data(), bytes[i]);
    }
    if (!s) {
      release();
      return s;
    }
  }
  rt::LaunchPlan plan;
  Status st = rt::planLaunch(fn, args, bufs, plan);
  if (st) st = rt::launch(*dev, k, plan);
  if (st) st = dev->sync(fn.name);
  for (size_t i = 0; st && i < fn.params.size(); ++i) {
    if (!fn.params[i].type.isOut) continue;
    HostArray* a = std::get<HostArray*>(args[i]);
    host.resize(bytes[i]);
    st = dev->copyToHost(host.data(), bufs[i], bytes[i]);
    if (st) fromDevice(host, *a);
  }
  if (st && opts.bench) {
    std::vector<float> ms;
    auto once = [&] { return rt::launch(*dev, k, plan); };  // planned once: only the launch is timed
    for (int i = 0; st && i < opts.warmup; ++i) st = once();
    if (st) st = dev->time(fn.name, opts.iters, once, ms);
    const unsigned* grid = plan.grid;
    if (st && !ms.empty()) {
      std::sort(ms.begin(), ms.end());
      double med = ms[ms.size() / 2] * 1e3, mn = ms.front() * 1e3;
      std::ostringstream os;
      os << std::fixed << std::setprecision(1) << "bench " << fn.name << ": median " << med << " us, min " << mn
         << " us, " << std::setprecision(0) << traffic / (med * 1e-6) / 1e9 << " GB/s (" << std::setprecision(1)
         << traffic / 1e6 << " MB moved), grid " << grid[0] << "x" << grid[1] << "x" << grid[2] << ", "
         << plan.threads << " threads, compile " << compileMs << " ms" << (ci.fromDisk ? " (disk cache)" : "")
         << ", " << dev->name() << "\n";
      out << os.str();
    }
    // Informational: a driver that cannot say does not fail the run.
    rt::Occupancy occ;
    if (st) {
      if (Status os = dev->occupancy(k, plan.grid, plan.threads, plan.cluster, occ))
        out << occupancyLine(fn.name, plan, occ);
      else
        out << "occupancy " << fn.name << ": unavailable (" << os.message() << ")\n";
    }
  }
  release();
  if (!st) return st;

  if (opts.check) {
    std::vector<HostArray> refs(fn.params.size());
    std::vector<interp::Arg> refArgs = args;
    for (size_t i = 0; i < fn.params.size(); ++i)
      if (fn.params[i].type.isOut) {
        refs[i] = fn.addsAtomically(i) ? initial[i] : *std::get<HostArray*>(args[i]);
        refArgs[i] = &refs[i];
      }
    interp::RunOptions ro;
    ro.poisonOutputs = true;
    if (Status s = interp::run(fn, refArgs, ro); !s) return Status::error("--check: the interpreter failed: " + s.message());
    bool ok = true;
    for (size_t i = 0; i < fn.params.size(); ++i) {
      if (!fn.params[i].type.isOut) continue;
      const HostArray& gpu = *std::get<HostArray*>(args[i]);
      const HostArray& ref = refs[i];
      double maxErr = 0, scale = 1;
      int64_t bad = 0;
      for (size_t e = 0; e < ref.data.size(); ++e) {
        double r = ref.data[e], x = gpu.data[e];
        if (std::isnan(r) != std::isnan(x)) ++bad;
        else if (!std::isnan(r)) maxErr = std::max(maxErr, std::fabs(r - x));
        if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
      }
      double tol = tolerance(ref.dtype) * scale;
      bool pass = bad == 0 && maxErr <= tol;
      ok &= pass;
      std::ostringstream os;
      os << "check " << fn.params[i].name << ": max_abs_err " << std::scientific << std::setprecision(3) << maxErr
         << " (tol " << tol << ", " << ref.data.size() << " elements" << (bad ? ", " + std::to_string(bad) + " NaN mismatches" : "")
         << ") " << (pass ? "ok" : "MISMATCH") << "\n";
      out << os.str();
    }
    if (!ok) return Status::error("kernel '" + fn.name + "': --check found outputs that differ from the interpreter");
  }
  return Status::ok();
}

}  // namespace fnk::tools
