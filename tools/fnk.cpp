// fnk: runs kernels at once. `fnk run` executes one kernel on NumPy arrays, in
// the CPU interpreter (the reference semantics) or, with the GPU backend, on
// the device.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <vector>

#include "backend/interp/Binding.h"
#include "ir/Pass.h"
#include "support/Float.h"
#include "support/Npy.h"
#include "support/Stack.h"
#include "tools/Cli.h"
#include "tools/Main.h"
#include "tools/Repl.h"
#ifdef FNK_HAVE_GPU
#include "tools/GpuRun.h"
#endif

using namespace fnk;

namespace {

const char* kUsage = R"(usage: fnk COMMAND [options]

commands:
  run FILE --kernel NAME [options]   run one kernel on .npy arrays
  batch FILE                         run each line of FILE as the options of one
                                     `fnk run` (# comments, blank lines skipped), in
                                     one process: the GPU context and the compiled
                                     kernels are kept from case to case; words split
                                     as in a shell ('a b', "a b", a\ b), with no
                                     expansions
  repl [FILE..] [-I DIR] [--echo]    interactive session (reads a script from stdin)
  help                               show this help
  version                            show the version

fnk run options:
  -k, --kernel NAME        the kernel to run (required when FILE has several)
  --const NAME=VALUE       set a const-generic parameter (repeatable; also -D)
  --arg NAME=VALUE         a scalar parameter (repeatable)
  --in NAME=PATH.npy       an input tensor (repeatable); bf16/f16 parameters read
                           float32 files, rounding to nearest even
  --out NAME=PATH.npy      an output tensor (repeatable); floats are written as
                           float32, integers as their own type. An output the
                           kernel adds to atomically starts at zero, or at what
                           --in NAME=PATH.npy gives
  --dim NAME=VALUE         a symbolic dim that only output tensors carry (such
                           as the partial-sum count P of a backward kernel)
  --device cpu|gpu         where to run (default cpu, the interpreter)
  --check                  (gpu) also run the interpreter; print the max abs
                           error per output, fail when over tolerance
  --bench                  (gpu) print the median of 100 event-timed launches
                           and GB/s (each tensor argument counted once), then
                           registers, spills and resident CTAs and clusters;
                           launches run back to back, so a working set that
                           fits in L2 is timed warm
  -I DIR                   add an import search directory
  --stdlib DIR             use DIR as the standard library

Symbolic dims (M, N, ...) are bound from the input arrays' shapes; output
shapes follow from them.

fnk batch prints each case's output (its errors too) on stdout, then a line
"fnk batch: case I rc=R ms=T" (I from 1, R its exit status), and exits 1 when
any case failed.
)";

int fail(const std::string& msg) {
  std::cerr << "fnk: error: " << msg << "\n";
  return 1;
}

struct RunOptions {
  std::string file, device = "cpu";
  bool check = false, bench = false;  // --device gpu only
  cli::LoadOptions load;
  std::map<std::string, std::string> ins, outs, scalars, dims;  // NAME -> text
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
#ifndef FNK_HAVE_GPU
  if (o.device == "gpu") return fail("--device gpu needs the GPU backend, which this build does not include");
#endif
  if (o.device != "cpu" && o.device != "gpu") return fail("unknown device '" + o.device + "' (expected cpu or gpu)");
  if ((o.check || o.bench) && o.device != "gpu") return fail("--check and --bench need --device gpu");

  // Inputs first (they bind the dims), then dims given by hand, then outputs.
  interp::ArgBinder binder(fn);
  std::vector<HostArray> arrays(fn.params.size());
  Status err;
  // Inputs bind in parameter order, so a dim conflict names the later parameter.
  std::vector<std::pair<std::string, std::string>> ins(o.ins.begin(), o.ins.end());
  std::stable_sort(ins.begin(), ins.end(), [&](const auto& a, const auto& b) {
    return static_cast<unsigned>(fn.paramIndex(a.first)) < static_cast<unsigned>(fn.paramIndex(b.first));
  });
  for (const auto& [name, path] : ins) {
    int i = binder.paramIndex(name, err);
    if (i < 0) return fail("--in " + name + ": " + err.message());
    // An output the kernel adds to atomically is read as well as written: --in
    // gives its contents on entry (zeros otherwise), --out its result.
    if (fn.params[i].type.isOut && !fn.addsAtomically(static_cast<size_t>(i)))
      return fail("--in " + name + ": '" + name + "' is an output; pass it with --out (--in gives an output's "
                  "contents on entry only where the kernel adds to it atomically)");
    if (fn.params[i].type.isOut && !o.outs.count(name))
      return fail("--in " + name + " gives the output's contents on entry; pass --out " + name + "=PATH for its result");
    if (!fn.params[i].type.isTensor()) return fail("--in " + name + ": '" + name + "' is a scalar; pass it with --arg");
    if (Status s = readNpy(path, arrays[i]); !s) return fail("input '" + name + "': " + s.message());
    if (Status s = binder.bindTensor(name, arrays[i]); !s) return fail("input " + s.message() + " (" + path + ")");
  }
  for (const auto& [name, value] : o.dims) {
    char* end = nullptr;
    long long size = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end || size < 0) return fail("--dim " + name + ": '" + value + "' is not a size");
    if (Status s = binder.setDim(name, size); !s) return fail("--dim " + s.message());
  }
  for (const auto& [name, value] : o.scalars) {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || errno == ERANGE) return fail("--arg " + name + ": '" + value + "' is not a number");
    if (Status s = binder.bindScalar(name, v); !s) return fail("--arg " + name + ": " + s.message());
  }
  for (const auto& [name, path] : o.outs) {
    int i = binder.paramIndex(name, err);
    if (i < 0) return fail("--out " + name + ": " + err.message());
    if (!fn.params[i].type.isOut) return fail("--out " + name + ": '" + name + "' is not an out tensor");
    if (o.ins.count(name)) continue;  // bound above with its contents on entry
    if (Status s = binder.allocateOutput(name, arrays[i]); !s) return fail(s.message());
  }
  std::vector<interp::Arg> args;
  if (Status s = binder.finish(args); !s) {
    const ir::Type& t = fn.params[static_cast<size_t>(binder.firstUnbound())].type;
    return fail(s.message() + "; pass it with " + (t.isOut ? "--out" : t.isTensor() ? "--in" : "--arg"));
  }
  interp::RunOptions ro;
  ro.poisonOutputs = true;
#ifdef FNK_HAVE_GPU
  if (o.device == "gpu") {
    if (Status s = tools::runGpu(fn, args, {o.check, o.bench}, std::cout); !s) return fail(s.message());
  } else
#endif
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
    else if (r.takeFlag("--check")) o.check = true;
    else if (r.takeFlag("--bench")) o.bench = true;
    else if (r.take("-I", v, err)) o.load.frontend.includeDirs.push_back(v);
    else if (r.take("--stdlib", v, err)) o.load.frontend.stdlibDir = v;
    else if (!r.peek().empty() && r.peek()[0] == '-') return fail("unknown option '" + r.peek() + "' (see fnk help)");
    else if (o.file.empty()) o.file = r.next();
    else return fail("more than one input file");
    if (!err.empty()) return fail(err);
  }
  if (o.file.empty()) return fail("fnk run needs a FILE (see fnk help)");
  int rc = 1;
  runWithLargeStack([&] { rc = run(o); });
  return rc;
}

/// `fnk batch FILE`: each line, split into words as a shell would
/// (cli::splitWords: quotes and backslashes, no expansions), is the options
/// of one `fnk run`; a line that does not split is a failed case, and blank
/// lines and `#` comments (whatever quotes they hold) are skipped. Errors go
/// to stdout beside the case's output, so that a reader of the one stream
/// can tell the cases apart by their closing lines.
int batchCommand(int argc, char** argv) {
  if (argc != 3) return fail("fnk batch needs one FILE of `fnk run` option lines (see fnk help)");
  std::ifstream in(argv[2]);
  if (!in) return fail("cannot read '" + std::string(argv[2]) + "'");
  std::streambuf* err = std::cerr.rdbuf(std::cout.rdbuf());
  int worst = 0, index = 0, lineNo = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lineNo;
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    std::vector<std::string> words;
    std::string splitError;
    const bool split = cli::splitWords(line, words, splitError);
    std::vector<std::string> args = {"fnk", "run"};
    args.insert(args.end(), words.begin(), words.end());
    std::vector<char*> argvCase;
    for (std::string& a : args) argvCase.push_back(a.data());
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = split ? runCommand(static_cast<int>(argvCase.size()), argvCase.data())
                         : fail("line " + std::to_string(lineNo) + " of '" + argv[2] + "': " + splitError);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "fnk batch: case " << ++index << " rc=" << rc << " ms=" << static_cast<int64_t>(ms) << std::endl;
    worst = std::max(worst, rc);
  }
  std::cerr.rdbuf(err);
  return worst;
}

int replCommand(int argc, char** argv) {
  ReplOptions o;
  cli::ArgReader r(argc, argv, 2);
  std::string v, err;
  while (!r.done()) {
    if (r.takeFlag("--echo")) o.echo = true;
    else if (r.take("-I", v, err)) o.includeDirs.push_back(v);
    else if (!r.peek().empty() && r.peek()[0] == '-') return fail("unknown option '" + r.peek() + "' (see fnk help)");
    else o.preload.push_back(r.next());
    if (!err.empty()) return fail(err);
  }
  int rc = 1;
  runWithLargeStack([&] { rc = runRepl(o, std::cin, std::cout); });
  return rc;
}

}  // namespace

int fnk::tools::fnkMain(int argc, char** argv) {
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
  if (cmd == "batch") return batchCommand(argc, argv);
  if (cmd == "repl") return replCommand(argc, argv);
  return fail("unknown command '" + cmd + "' (see fnk help)");
}
