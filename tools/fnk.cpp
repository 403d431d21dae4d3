// fnk: runs kernels at once. `fnk run` executes one kernel on NumPy arrays, in
// the CPU interpreter (the reference semantics) or, with the GPU backend, on
// the device.
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "backend/interp/Interpreter.h"
#include "ir/Pass.h"
#include "support/Float.h"
#include "support/Npy.h"
#include "tools/Cli.h"

using namespace fnk;

namespace {

const char* kUsage = R"(usage: fnk COMMAND [options]

commands:
  run FILE --kernel NAME [options]   run one kernel on .npy arrays
  help                               show this help
  version                            show the version

fnk run options:
  -k, --kernel NAME        the kernel to run (required when FILE has several)
  --const NAME=VALUE       set a const-generic parameter (repeatable; also -D)
  --arg NAME=VALUE         a scalar parameter (repeatable)
  --in NAME=PATH.npy       an input tensor (repeatable); bf16/f16 parameters read
                           float32 files, rounding to nearest even
  --out NAME=PATH.npy      an output tensor (repeatable); floats are written as
                           float32, integers as their own type
  --dim NAME=VALUE         a symbolic dim that only output tensors carry (such
                           as the partial-sum count P of a backward kernel)
  --device cpu|gpu         where to run (default cpu, the interpreter)
  -I DIR                   add an import search directory
  --stdlib DIR             use DIR as the standard library

Symbolic dims (M, N, ...) are bound from the input arrays' shapes; output
shapes follow from them.
)";

int fail(const std::string& msg) {
  std::cerr << "fnk: error: " << msg << "\n";
  return 1;
}

struct RunOptions {
  std::string file, device = "cpu";
  cli::LoadOptions load;
  std::map<std::string, std::string> ins, outs, scalars, dims;
};

bool addPair(std::map<std::string, std::string>& into, const std::string& opt, const std::string& v, std::string& err) {
  std::string n, val;
  if (!cli::splitAssignment(v, n, val)) {
    err = opt + " needs NAME=VALUE, got '" + v + "'";
    return false;
  }
  if (!into.emplace(n, val).second) {
    err = opt + " " + n + " given twice";
    return false;
  }
  return true;
}

/// Checks that an .npy array fits a tensor parameter and converts it.
bool bindInput(const ir::Param& p, const std::string& path, HostArray& a, std::string& err) {
  if (Status s = readNpy(path, a); !s) {
    err = "input '" + p.name + "': " + s.message();
    return false;
  }
  ir::DType want = p.type.dtype;
  bool ok = a.dtype == want || (ir::isFloat(want) && a.dtype == ir::DType::F32) ||
            (want == ir::DType::F32 && a.dtype == ir::DType::F64);
  if (!ok) {
    err = "input '" + p.name + "' is " + std::string(ir::dtypeName(a.dtype)) + " data (" + path + ") but the parameter is " +
          p.type.str() + (ir::isFloat(want) ? "; pass float32 data" : "");
    return false;
  }
  if (a.shape.size() != p.type.dims.size()) {
    err = "input '" + p.name + "' has " + std::to_string(a.shape.size()) + " dimensions (" + path +
          ") but the parameter is " + p.type.str();
    return false;
  }
  if (a.dtype != want) {
    roundInPlace(a.data.data(), static_cast<int64_t>(a.data.size()), want);
    a.dtype = want;
  }
  return true;
}

int run(RunOptions& o) {
  SourceManager sm;
  DiagEngine diags(sm);
  auto m = cli::loadModule(o.file, o.load, sm, diags);
  if (m && !ir::runPipeline(*m, diags, ir::PipelineOptions{})) m.reset();
  diags.print(std::cerr);
  if (!m) return 1;
  if (m->functions.size() != 1) {
    std::string names;
    for (const auto& f : m->functions) names += (names.empty() ? "" : ", ") + f->name;
    return fail("choose a kernel with --kernel (" + o.file + " has: " + names + ")");
  }
  const ir::Function& fn = *m->functions.front();
  if (o.device == "gpu") return fail("--device gpu needs the GPU backend, which this build does not include");
  if (o.device != "cpu") return fail("unknown device '" + o.device + "' (expected cpu or gpu)");

  // Every name given must be a parameter of the right kind, and every parameter given.
  for (const auto& [n, _] : o.ins) {
    int i = fn.paramIndex(n);
    if (i < 0) return fail("--in " + n + ": kernel '" + fn.name + "' has no parameter '" + n + "'");
    if (!fn.params[i].type.isTensor() || fn.params[i].type.isOut)
      return fail("--in " + n + ": '" + n + "' is " + fn.params[i].type.str() +
                  (fn.params[i].type.isOut ? "; pass it with --out" : "; pass it with --arg"));
  }
  for (const auto& [n, _] : o.outs) {
    int i = fn.paramIndex(n);
    if (i < 0) return fail("--out " + n + ": kernel '" + fn.name + "' has no parameter '" + n + "'");
    if (!fn.params[i].type.isOut) return fail("--out " + n + ": '" + n + "' is not an out tensor");
  }
  for (const auto& [n, _] : o.scalars) {
    int i = fn.paramIndex(n);
    if (i < 0) return fail("--arg " + n + ": kernel '" + fn.name + "' has no parameter '" + n + "'");
    if (!fn.params[i].type.isScalar()) return fail("--arg " + n + ": '" + n + "' is a tensor; pass it with --in");
  }

  std::vector<HostArray> arrays(fn.params.size());
  std::vector<interp::Arg> args(fn.params.size());
  std::map<std::string, std::pair<int64_t, std::string>> dims;  // symbol -> (size, from)
  std::string err;
  for (const auto& [n, v] : o.dims) {
    char* end = nullptr;
    long long size = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || size < 0 || size > (1ll << 40)) return fail("--dim " + n + ": '" + v + "' is not a size");
    dims[n] = {size, "--dim"};
  }
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    if (!p.type.isTensor() || p.type.isOut) continue;
    auto it = o.ins.find(p.name);
    if (it == o.ins.end()) return fail("missing input for parameter '" + p.name + "' (" + p.type.str() + "): --in " + p.name + "=PATH.npy");
    if (!bindInput(p, it->second, arrays[i], err)) return fail(err);
    for (size_t d = 0; d < p.type.dims.size(); ++d) {
      const std::string& sym = p.type.dims[d];
      int64_t size = arrays[i].shape[d];
      if (std::isdigit(static_cast<unsigned char>(sym[0]))) {
        if (std::to_string(size) != sym)
          return fail("input '" + p.name + "': dim " + std::to_string(d) + " is " + std::to_string(size) + " but the parameter fixes it at " + sym);
        continue;
      }
      auto [pos, fresh] = dims.emplace(sym, std::make_pair(size, p.name));
      if (!fresh && pos->second.first != size)
        return fail("input '" + p.name + "': dim " + sym + " is " + std::to_string(size) + " here but " +
                    std::to_string(pos->second.first) + " from '" + pos->second.second + "'");
    }
    args[i] = &arrays[i];
  }
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    if (p.type.isScalar()) {
      auto it = o.scalars.find(p.name);
      if (it == o.scalars.end()) return fail("missing scalar parameter '" + p.name + "' (" + p.type.str() + "): --arg " + p.name + "=VALUE");
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(it->second.c_str(), &end);
      if (it->second.empty() || *end || errno == ERANGE) return fail("--arg " + p.name + ": '" + it->second + "' is not a number");
      args[i] = v;
    } else if (p.type.isOut) {
      auto it = o.outs.find(p.name);
      if (it == o.outs.end()) return fail("missing output for parameter '" + p.name + "' (" + p.type.str() + "): --out " + p.name + "=PATH.npy");
      HostArray& a = arrays[i];
      a.dtype = p.type.dtype;
      for (const std::string& sym : p.type.dims) {
        if (std::isdigit(static_cast<unsigned char>(sym[0]))) {
          a.shape.push_back(std::strtoll(sym.c_str(), nullptr, 10));
          continue;
        }
        auto d = dims.find(sym);
        if (d == dims.end())
          return fail("output '" + p.name + "': dim " + sym + " is not set by any input tensor; give it with --dim " + sym + "=SIZE");
        a.shape.push_back(d->second.first);
      }
      int64_t n = a.numElements();
      if (n > (int64_t(1) << 31)) return fail("output '" + p.name + "' would have " + std::to_string(n) + " elements");
      a.data.assign(static_cast<size_t>(n), 0.0);
      args[i] = &a;
    }
  }
  interp::RunOptions ro;
  ro.poisonOutputs = true;
  if (Status s = interp::run(fn, args, ro); !s) return fail("kernel '" + fn.name + "': " + s.message());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    if (!p.type.isOut) continue;
    ir::DType outType = ir::isFloat(p.type.dtype) ? ir::DType::F32 : p.type.dtype;
    if (Status s = writeNpy(o.outs[p.name], outType, arrays[i].shape, arrays[i].data); !s)
      return fail("output '" + p.name + "': " + s.message());
  }
  return 0;
}

int runThunk(void* p) { return run(*static_cast<RunOptions*>(p)); }

int runCommand(int argc, char** argv) {
  RunOptions o;
  cli::ArgReader r(argc, argv, 2);
  std::string v, err;
  while (!r.done()) {
    if (r.takeFlag("-h") || r.takeFlag("--help")) {
      std::cout << kUsage;
      return 0;
    }
    if (r.take("-k", v, err) || r.take("--kernel", v, err)) o.load.kernel = v;
    else if (r.take("--const", v, err) || r.take("-D", v, err)) {
      if (err.empty()) addPair(o.load.consts, "--const", v, err);
    } else if (r.take("--arg", v, err)) {
      if (err.empty()) addPair(o.scalars, "--arg", v, err);
    } else if (r.take("--in", v, err)) {
      if (err.empty()) addPair(o.ins, "--in", v, err);
    } else if (r.take("--out", v, err)) {
      if (err.empty()) addPair(o.outs, "--out", v, err);
    } else if (r.take("--dim", v, err)) {
      if (err.empty()) addPair(o.dims, "--dim", v, err);
    } else if (r.take("--device", v, err)) o.device = v;
    else if (r.take("-I", v, err)) o.load.frontend.includeDirs.push_back(v);
    else if (r.take("--stdlib", v, err)) o.load.frontend.stdlibDir = v;
    else if (!r.peek().empty() && r.peek()[0] == '-') return fail("unknown option '" + r.peek() + "' (see fnk help)");
    else if (o.file.empty()) o.file = r.next();
    else return fail("more than one input file");
    if (!err.empty()) return fail(err);
  }
  if (o.file.empty()) return fail("fnk run needs a FILE (see fnk help)");
  return cli::runWithLargeStack(runThunk, &o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 1;
  }
  std::string cmd = argv[1];
  if (cmd == "help" || cmd == "-h" || cmd == "--help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    std::cout << "fnk " FNK_VERSION "\n";
    return 0;
  }
  if (cmd == "run") return runCommand(argc, argv);
  return fail("unknown command '" + cmd + "' (see fnk help)");
}
