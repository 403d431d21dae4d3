#include "tools/Repl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "backend/interp/Binding.h"
#include "frontend/KernelCache.h"
#include "ir/Printer.h"
#include "support/Float.h"
#include "support/Npy.h"
#include "tools/LineReader.h"
#ifdef FNK_HAVE_GPU
#include "backend/cubin/Cubin.h"
#include "backend/nvptx/Codegen.h"
#include "tools/GpuRun.h"
#endif

namespace fnk {

namespace {

const char* kHelp = R"(commands (one per line; errors never end the session):
  load FILE.fnk                 load a module; its kernels become runnable
  kernel ... { ... }            type a kernel (or fn/import) over several lines
  X = randn D0 D1.. [DTYPE]      make a tensor: randn, rand, zeros, ones (f32 by default)
  X = arange N | X = load F.npy | X = Y
  save X F.npy                  write a tensor as .npy
  run K ARGS.. [NAME=V..] [@gpu] run kernel K: tensors and numbers positionally
                                or by parameter name; NAME=V also sets const
                                generics; missing outputs are created and named
                                after their parameter
  time K ARGS.. [reps=N]        run K N times (default 5), print the median
  print X[SLICE]                print values, e.g. print y[0:2, 0:8]
  stats X                       shape, dtype, min/max/mean/std, NaN and Inf counts
  compare X Y                   largest absolute and relative difference
  ir K [NAME=V..]               the kernel's tile IR after the pass pipeline
  ptx K [NAME=V..]              PTX and its resource use (registers, shared memory, spills)
  kernels | vars | del X        list kernels, list tensors, drop a tensor
  help | quit
)";

struct Module {
  std::string name;
  std::unique_ptr<SourceManager> sm;
  std::unique_ptr<DiagEngine> diags;
  std::unique_ptr<Program> program;
  std::unique_ptr<KernelCache> cache;
};

std::vector<std::string> tokenize(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : line) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (std::isspace(static_cast<unsigned char>(c)) && depth <= 0) {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string describe(const HostArray& a) {
  std::string s = std::string(ir::dtypeName(a.dtype)) + "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(a.shape[i]);
  return s + "]";
}

void roundInPlaceForDType(HostArray& a) { roundInPlace(a.data.data(), static_cast<int64_t>(a.data.size()), a.dtype); }

bool parseNumber(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

class Session {
public:
  Session(const ReplOptions& o, std::ostream& out) : opts_(o), out_(out), rng_(std::random_device{}()) {}

  /// Executes one command; false when it failed (reported already).
  bool execute(const std::string& line);
  bool wantsMore(const std::string& line);  // a typed kernel still open
  bool quit = false;

private:
  bool error(const std::string& msg) {
    out_ << "error: " << msg << "\n";
    return false;
  }
  bool loadFile(const std::string& path);
  bool compileTyped(const std::string& chunk);
  bool addModule(std::unique_ptr<Module> m, bool ok);
  Module* findKernel(const std::string& name, const ast::FuncDecl** decl);
  bool assign(const std::vector<std::string>& t);
  bool run(const std::vector<std::string>& t, bool timed);
  bool print(const std::string& what);
  bool stats(const std::string& name);
  bool compare(const std::string& a, const std::string& b);
  bool showIR(const std::vector<std::string>& t);
  HostArray* tensor(const std::string& name) {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

  const ReplOptions& opts_;
  std::ostream& out_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::map<std::string, HostArray> tensors_;
  std::string typed_;   // every kernel typed so far, recompiled as one module
  std::string pending_; // lines of a kernel being typed
  int typedCount_ = 0;
};

bool Session::addModule(std::unique_ptr<Module> m, bool ok) {
  if (!ok) {
    out_ << m->diags->str();
    return false;
  }
  m->cache = std::make_unique<KernelCache>(*m->program);
  int n = 0;
  for (const auto& d : m->program->root()->decls) n += d->isKernel;
  out_ << "loaded " << m->name << " (" << n << " kernel" << (n == 1 ? "" : "s") << ")\n";
  modules_.push_back(std::move(m));
  return true;
}

std::unique_ptr<Module> newModule(const std::string& name, const ReplOptions& o) {
  auto m = std::make_unique<Module>();
  m->name = name;
  m->sm = std::make_unique<SourceManager>();
  m->diags = std::make_unique<DiagEngine>(*m->sm);
  FrontendOptions fo;
  fo.includeDirs = o.includeDirs;
  m->program = std::make_unique<Program>(*m->sm, *m->diags, fo);
  return m;
}

bool Session::loadFile(const std::string& path) {
  auto m = newModule(path, opts_);
  bool ok = m->program->loadFile(path) && checkKernelsWithDefaults(*m->program, *m->diags);
  return addModule(std::move(m), ok);
}

bool Session::compileTyped(const std::string& chunk) {
  // Everything typed so far is compiled as one module; a chunk with errors is dropped.
  auto m = newModule("<repl-" + std::to_string(++typedCount_) + ">", opts_);
  bool ok = m->program->loadBuffer(m->name, typed_ + chunk) && checkKernelsWithDefaults(*m->program, *m->diags);
  if (ok) typed_ += chunk;
  return addModule(std::move(m), ok);
}

Module* Session::findKernel(const std::string& name, const ast::FuncDecl** decl) {
  for (auto it = modules_.rbegin(); it != modules_.rend(); ++it)
    for (const auto& d : (*it)->program->root()->decls)
      if (d->isKernel && d->name == name) {
        *decl = d.get();
        return it->get();
      }
  return nullptr;
}

bool Session::wantsMore(const std::string& line) {
  bool starts = pending_.empty() && (line.rfind("kernel ", 0) == 0 || line.rfind("fn ", 0) == 0 ||
                                     line.rfind("import ", 0) == 0);
  if (!starts && pending_.empty()) return false;
  pending_ += line + "\n";
  int depth = 0;
  bool sawBrace = false;
  for (char c : pending_) {
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    sawBrace |= c == '{';
  }
  bool done = (sawBrace && depth <= 0) || (pending_.rfind("import ", 0) == 0 && pending_.find(';') != std::string::npos);
  if (!done) return true;
  std::string chunk = pending_;
  pending_.clear();
  compileTyped(chunk);
  return true;
}

bool Session::assign(const std::vector<std::string>& t) {
  const std::string& name = t[0];
  if (t.size() < 3) return error("expected NAME = EXPR");
  const std::string& f = t[2];
  HostArray a;
  if (f == "load") {
    if (t.size() != 4) return error("usage: X = load FILE.npy");
    if (Status s = readNpy(t[3], a); !s) return error(s.message());
  } else if (f == "randn" || f == "rand" || f == "zeros" || f == "ones" || f == "arange") {
    std::vector<int64_t> shape;
    a.dtype = f == "arange" ? ir::DType::I32 : ir::DType::F32;
    for (size_t i = 3; i < t.size(); ++i) {
      double d;
      if (parseNumber(t[i], d)) {
        if (d < 0 || d != std::floor(d) || d > (1 << 30)) return error("bad dimension '" + t[i] + "'");
        shape.push_back(static_cast<int64_t>(d));
      } else if (auto dt = ir::parseDType(t[i]); dt && i + 1 == t.size()) {
        a.dtype = *dt;
      } else {
        return error("expected a dimension or a final dtype, got '" + t[i] + "'");
      }
    }
    if (shape.empty()) return error(f + " needs at least one dimension");
    a.shape = shape;
    int64_t n = a.numElements();
    if (n > (int64_t(1) << 28)) return error("tensor too large for the REPL");
    a.data.resize(static_cast<size_t>(n));
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform;
    for (int64_t i = 0; i < n; ++i)
      a.data[i] = f == "randn" ? normal(rng_) : f == "rand" ? uniform(rng_) : f == "ones" ? 1 : f == "arange" ? double(i) : 0;
    roundInPlaceForDType(a);
  } else if (HostArray* src = tensor(f); src && t.size() == 3) {
    a = *src;
  } else {
    return error("unknown tensor or constructor '" + f + "' (randn, rand, zeros, ones, arange, load)");
  }
  tensors_[name] = std::move(a);
  const HostArray& r = tensors_[name];
  out_ << name << ": " << describe(r) << "\n";
  return true;
}

bool Session::run(const std::vector<std::string>& t, bool timed) {
  if (t.size() < 2) return error(std::string("usage: ") + (timed ? "time" : "run") + " KERNEL ARGS..");
  const ast::FuncDecl* decl = nullptr;
  Module* m = findKernel(t[1], &decl);
  if (!m) return error("no kernel named '" + t[1] + "' (see: kernels)");
  std::vector<std::string> positional;
  std::map<std::string, std::string> named;
  ConstOverrides consts;
  bool gpu = false;
  int reps = 5;
  for (size_t i = 2; i < t.size(); ++i) {
    if (t[i] == "@gpu") {
      gpu = true;
      continue;
    }
    if (t[i] == "@cpu") continue;
    auto eq = t[i].find('=');
    if (eq == std::string::npos) {
      positional.push_back(t[i]);
      continue;
    }
    std::string k = t[i].substr(0, eq), v = t[i].substr(eq + 1);
    bool isConst = false;
    for (const auto& g : decl->generics) isConst |= g.name == k;
    if (timed && k == "reps") {
      double r;
      if (!parseNumber(v, r) || r < 1 || r > 1000) return error("reps must be between 1 and 1000");
      reps = static_cast<int>(r);
    } else if (isConst) consts[k] = v;
    else named[k] = v;
  }
#ifndef FNK_HAVE_GPU
  if (gpu) return error("@gpu needs the GPU backend, which this build does not include");
#endif
  // Map positional arguments onto parameters in declaration order.
  if (positional.size() > decl->params.size())
    return error(t[1] + " takes " + std::to_string(decl->params.size()) + " arguments, got " + std::to_string(positional.size()));
  for (size_t i = 0; i < positional.size(); ++i) {
    if (named.count(decl->params[i].name)) return error("'" + decl->params[i].name + "' given twice");
    named[decl->params[i].name] = positional[i];
  }
  // An unset dtype const follows the tensors passed for parameters of that type.
  for (const auto& g : decl->generics) {
    if (g.kind != "dtype" || consts.count(g.name)) continue;
    for (const auto& p : decl->params)
      if (p.type.dtype == g.name && named.count(p.name))
        if (HostArray* a = tensor(named[p.name])) {
          consts[g.name] = std::string(ir::dtypeName(a->dtype));
          break;
        }
  }
  m->diags->clear();
  const ir::Function* fn = m->cache->get(t[1], consts, *m->diags);
  if (!fn) {
    out_ << m->diags->str();
    return false;
  }
  // Inputs are copied so a kernel that rounds them to its dtype leaves the session's tensors alone.
  interp::ArgBinder binder(*fn);
  std::vector<HostArray> arrays(fn->params.size());
  std::vector<std::string> created;
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const ir::Param& p = fn->params[i];
    auto it = named.find(p.name);
    if (p.type.isScalar()) {
      double v;
      if (it == named.end()) return error("missing scalar '" + p.name + "' (" + p.type.str() + "): pass " + p.name + "=VALUE");
      if (!parseNumber(it->second, v)) return error("'" + p.name + "' needs a number, got '" + it->second + "'");
      if (Status s = binder.bindScalar(p.name, v); !s) return error(s.message());
      continue;
    }
    if (it == named.end()) {
      if (!p.type.isOut) return error("missing input tensor '" + p.name + "' (" + p.type.str() + ")");
      continue;  // created below, once the inputs have bound the dims
    }
    HostArray* src = tensor(it->second);
    if (!src) return error("'" + p.name + "': no tensor named '" + it->second + "' (see: vars)");
    arrays[i] = *src;
    if (Status s = binder.bindTensor(p.name, arrays[i]); !s) return error(s.message());
  }
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const ir::Param& p = fn->params[i];
    if (!p.type.isOut || named.count(p.name)) continue;
    if (Status s = binder.allocateOutput(p.name, arrays[i]); !s) return error(s.message());
    named[p.name] = p.name;
    created.push_back(p.name);
  }
  std::vector<interp::Arg> args;
  if (Status s = binder.finish(args); !s) return error(s.message());
  interp::RunOptions ro;
  ro.poisonOutputs = true;
  std::vector<double> ms;
#ifdef FNK_HAVE_GPU
  if (gpu) {
    tools::GpuRunOptions go;
    go.bench = timed;
    go.iters = reps;
    if (Status s = tools::runGpu(*fn, args, go, out_); !s) return error(s.message());
  }
#endif
  const int cpuRuns = gpu ? 0 : timed ? reps : 1;  // the GPU path ran above
  for (int r = 0; r < cpuRuns; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (Status s = interp::run(*fn, args, ro); !s) return error("kernel '" + fn->name + "': " + s.message());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (size_t i = 0; i < fn->params.size(); ++i) {
    const ir::Param& p = fn->params[i];
    if (!p.type.isOut) continue;
    tensors_[named[p.name]] = std::move(arrays[i]);
    const HostArray& r = tensors_[named[p.name]];
    bool fresh = std::find(created.begin(), created.end(), p.name) != created.end();
    out_ << named[p.name] << ": " << describe(r) << (fresh ? " (new)" : "") << "\n";
  }
  if (timed && !gpu) {
    std::sort(ms.begin(), ms.end());
    out_ << fn->name << " on cpu (interpreter): median " << std::fixed << std::setprecision(3) << ms[ms.size() / 2]
         << " ms over " << ms.size() << " runs\n";
    out_.unsetf(std::ios::fixed);
  }
  return true;
}

/// "y[0:2, 3]" → name and per-axis [begin, end) ranges clamped to the shape.
bool parseSlice(const std::string& what, std::string& name, std::vector<std::pair<int64_t, int64_t>>& ranges,
                std::string& err) {
  auto lb = what.find('[');
  name = what.substr(0, lb);
  if (lb == std::string::npos) return true;
  if (what.back() != ']') {
    err = "expected ']' at the end of '" + what + "'";
    return false;
  }
  std::stringstream ss(what.substr(lb + 1, what.size() - lb - 2));
  std::string part;
  while (std::getline(ss, part, ',')) {
    part.erase(std::remove_if(part.begin(), part.end(), ::isspace), part.end());
    auto colon = part.find(':');
    double a = 0, b = -1;
    bool ok = true;
    if (colon == std::string::npos) {
      ok = parseNumber(part, a);
      b = a + 1;
    } else {
      std::string lo = part.substr(0, colon), hi = part.substr(colon + 1);
      if (!lo.empty()) ok &= parseNumber(lo, a);
      if (!hi.empty()) ok &= parseNumber(hi, b);
    }
    if (!ok) {
      err = "bad index '" + part + "'";
      return false;
    }
    ranges.emplace_back(static_cast<int64_t>(a), static_cast<int64_t>(b));
  }
  return true;
}

bool Session::print(const std::string& what) {
  std::string name, err;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (!parseSlice(what, name, ranges, err)) return error(err);
  HostArray* a = tensor(name);
  if (!a) return error("no tensor named '" + name + "'");
  if (ranges.size() > a->shape.size()) return error("'" + name + "' has " + std::to_string(a->shape.size()) + " dimensions");
  std::vector<int64_t> lo(a->shape.size(), 0), hi = a->shape;
  for (size_t i = 0; i < ranges.size(); ++i) {
    int64_t d = a->shape[i];
    int64_t b = ranges[i].first < 0 ? ranges[i].first + d : ranges[i].first;
    int64_t e = ranges[i].second == -1 ? d : ranges[i].second < 0 ? ranges[i].second + d : ranges[i].second;
    lo[i] = std::clamp<int64_t>(b, 0, d);
    hi[i] = std::clamp<int64_t>(e, lo[i], d);
  }
  out_ << name << ": " << describe(*a) << "\n";
  // Rows along the last axis, at most 8 values each and 16 rows.
  std::vector<int64_t> idx = lo;
  int rows = 0;
  int64_t n = 1;
  for (size_t i = 0; i < lo.size(); ++i) n *= hi[i] - lo[i];
  if (n == 0) return out_ << "(empty)\n", true;
  while (rows < 16) {
    if (idx.size() > 1) {
      out_ << "  [";
      for (size_t i = 0; i + 1 < idx.size(); ++i) out_ << idx[i] << (i + 2 < idx.size() ? "," : "");
      out_ << "] ";
    } else {
      out_ << "  ";
    }
    int64_t last = idx.empty() ? 0 : idx.size() - 1;
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off = off * a->shape[i] + (i == size_t(last) ? 0 : idx[i]);
    int64_t b = idx.empty() ? 0 : lo[last], e = idx.empty() ? 1 : hi[last];
    for (int64_t j = b; j < e && j < b + 8; ++j) out_ << std::setw(11) << std::setprecision(5) << a->data[off + j];
    if (e - b > 8) out_ << "  ... (" << e - b << " values)";
    out_ << "\n";
    ++rows;
    // Advance every axis but the last.
    int64_t k = static_cast<int64_t>(idx.size()) - 2;
    for (; k >= 0; --k) {
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
    }
    if (k < 0) break;
  }
  if (rows == 16) out_ << "  ...\n";
  return true;
}

bool Session::stats(const std::string& name) {
  HostArray* a = tensor(name);
  if (!a) return error("no tensor named '" + name + "'");
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  int64_t nan = 0, inf = 0, n = 0;
  for (double v : a->data) {
    if (std::isnan(v)) ++nan;
    else if (std::isinf(v)) ++inf;
    else mn = std::min(mn, v), mx = std::max(mx, v), sum += v, sq += v * v, ++n;
  }
  double mean = n ? sum / n : NAN;
  out_ << name << ": " << describe(*a) << "  min " << mn << "  max " << mx << "  mean "
       << mean << "  std " << (n ? std::sqrt(std::max(0.0, sq / n - mean * mean)) : NAN) << "  nan " << nan << "  inf "
       << inf << "\n";
  return true;
}

bool Session::compare(const std::string& x, const std::string& y) {
  HostArray *a = tensor(x), *b = tensor(y);
  if (!a || !b) return error("no tensor named '" + (a ? y : x) + "'");
  if (a->shape != b->shape)
    return error("shapes differ: " + ir::shapeStr(a->shape) + " and " + ir::shapeStr(b->shape));
  double maxAbs = 0, maxRel = 0;
  size_t at = 0;
  for (size_t i = 0; i < a->data.size(); ++i) {
    double d = std::abs(a->data[i] - b->data[i]);
    if (std::isnan(d)) d = INFINITY;
    if (d > maxAbs) maxAbs = d, at = i;
    maxRel = std::max(maxRel, d / std::max(std::abs(b->data[i]), 1e-30));
  }
  out_ << "max |" << x << " - " << y << "| = " << maxAbs << " at flat index " << at << ";  max relative " << maxRel << "\n";
  return true;
}

bool Session::showIR(const std::vector<std::string>& t) {
  if (t.size() < 2) return error("usage: " + t[0] + " KERNEL [NAME=VALUE..]");
#ifndef FNK_HAVE_GPU
  if (t[0] == "ptx") return error("ptx needs the GPU backend, which this build does not include");
#endif
  const ast::FuncDecl* decl = nullptr;
  Module* m = findKernel(t[1], &decl);
  if (!m) return error("no kernel named '" + t[1] + "'");
  ConstOverrides consts;
  for (size_t i = 2; i < t.size(); ++i) {
    auto eq = t[i].find('=');
    if (eq == std::string::npos) return error("expected NAME=VALUE, got '" + t[i] + "'");
    consts[t[i].substr(0, eq)] = t[i].substr(eq + 1);
  }
  m->diags->clear();
  const ir::Function* fn = m->cache->get(t[1], consts, *m->diags);
  if (!fn) {
    out_ << m->diags->str();
    return false;
  }
#ifdef FNK_HAVE_GPU
  if (t[0] == "ptx") {
    // The PTX, then what ptxas says of it: registers, shared memory, spills.
    std::string ptx, cubin, log;
    const nvptx::TargetOptions topts;
    if (Status s = nvptx::emitPTX(*fn, topts, ptx); !s) return error(s.message());
    out_ << ptx;
    if (!cubin::haveAssembler()) return out_ << "(no ptxas or nvJitLink here: no resource report)\n", true;
    if (Status s = cubin::assemble(ptx, topts.arch, fn->name, cubin, &log); !s) return error(s.message());
    out_ << (log.empty() ? "(the assembler gave no resource report)\n" : "resources (ptxas -v):\n" + log);
    return true;
  }
#endif
  ir::print(out_, *fn);
  return true;
}

bool Session::execute(const std::string& line) {
  auto t = tokenize(line);
  if (t.empty() || t[0].rfind("#", 0) == 0 || t[0].rfind("//", 0) == 0) return true;
  const std::string& c = t[0];
  if (c == "help" || c == ":help" || c == "?") return out_ << kHelp, true;
  if (c == "quit" || c == "exit" || c == ":q") return quit = true, true;
  if (t.size() >= 2 && t[1] == "=") return assign(t);
  if (c == "load") return t.size() == 2 ? loadFile(t[1]) : error("usage: load FILE.fnk");
  if (c == "run" || c == "time") return run(t, c == "time");
  if (c == "print") return t.size() == 2 ? print(t[1]) : error("usage: print X[SLICE]");
  if (c == "stats") return t.size() == 2 ? stats(t[1]) : error("usage: stats X");
  if (c == "compare") return t.size() == 3 ? compare(t[1], t[2]) : error("usage: compare X Y");
  if (c == "ir" || c == "ptx") return showIR(t);
  if (c == "save") {
    if (t.size() != 3) return error("usage: save X FILE.npy");
    HostArray* a = tensor(t[1]);
    if (!a) return error("no tensor named '" + t[1] + "'");
    ir::DType dt = ir::isFloat(a->dtype) ? ir::DType::F32 : a->dtype;
    if (Status s = writeNpy(t[2], dt, a->shape, a->data); !s) return error(s.message());
    return true;
  }
  if (c == "del") return t.size() == 2 && tensors_.erase(t[1]) ? true : error("no tensor named '" + (t.size() > 1 ? t[1] : "") + "'");
  if (c == "vars") {
    for (const auto& [n, a] : tensors_) out_ << "  " << n << ": " << describe(a) << "\n";
    return true;
  }
  if (c == "kernels") {
    for (const auto& m : modules_)
      for (const auto& d : m->program->root()->decls)
        if (d->isKernel) out_ << "  " << d->name << "  (" << m->name << ")\n";
    return true;
  }
  return error("unknown command '" + c + "' (try: help)");
}

}  // namespace

int runRepl(const ReplOptions& opts, std::istream& in, std::ostream& out) {
  Session s(opts, out);
  LineReader reader(in);
  bool failed = false;
  if (reader.interactive()) out << "fnk " FNK_VERSION " repl — type help for commands\n";
  for (const auto& f : opts.preload) failed |= !s.execute("load " + f);
  while (!s.quit) {
    auto line = reader.read(reader.interactive() ? "fnk> " : "");
    if (!line) break;
    if (opts.echo) out << "fnk> " << *line << "\n";
    if (s.wantsMore(*line)) continue;
    try {
      failed |= !s.execute(*line);
    } catch (const std::exception& e) {  // a bug, but never the end of a session
      out << "internal error: " << e.what() << "\n";
      failed = true;
    }
  }
  return failed && !reader.interactive() ? 1 : 0;
}

}  // namespace fnk
