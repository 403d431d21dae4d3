// fnkc: the ahead-of-time compiler driver. Checks a .fnk (or .fnkir) file and
// prints its AST or IR, runs one named pass for golden tests, and (with the GPU
// backend) emits LLVM IR, PTX, cubins and launch headers.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "frontend/AstPrinter.h"
#include "ir/Pass.h"
#include "ir/Printer.h"
#include "support/Stack.h"
#include "tools/Cli.h"
#include "tools/Main.h"
#ifdef FNK_HAVE_GPU
#include "tools/GpuEmit.h"
#endif

using namespace fnk;

namespace {

const char* kUsage = R"(usage: fnkc FILE [options]

Checks a fnk source file (.fnk) or IR file (.fnkir) and prints what --emit asks for.
Errors are printed as file:line:col with the source line; the exit code is 1 on
any user error.

options:
  -k, --kernel NAME      only this kernel (default: every kernel in FILE)
  -D NAME=VALUE          set a const-generic parameter (repeatable)
  -I DIR                 add an import search directory (repeatable)
  --stdlib DIR           use DIR as the standard library (default: built in)
  --emit=KIND            ast | ir | ir-raw (before passes) | none (default: none);
                         with the GPU backend also llvm | ptx | cubin | header
                         (one kernel: -k; header: a C/C++ launch header)
  --arch ARCH            with a GPU --emit: the target, sm_90a (the default and
                         the only one: clusters, distributed shared memory and
                         bulk copies are Hopper's)
  -O0                    skip the optimization pipeline (-O1, -O2, -O3: run it,
                         the default)
  --pass=NAME            run only the named pass on the input and print the IR
  --print-after=NAME     print the IR after pass NAME
  --time-passes          print the time each pass took
  --body=BODY            with --emit=llvm, ptx or cubin, of a kernel the version
                         pass gave two bodies: full (the full tile's: right
                         only for launches whose masked width fills the tile),
                         partial (the other: right for any) or both (the
                         default, behind a run-time test). The JIT picks one
                         per launch (FNK_JIT_ONE_BODY=0: both).
  --unaligned            with a GPU --emit: code for tensors off 16-byte
                         alignment (rows whose width is not a multiple of 16
                         bytes): stores joined across lanes into whole 16-byte
                         stores, and whole chunks read and written element by
                         element without per-element bounds tests (16-bit
                         loads by the 4-byte words that cover them); costs
                         registers where rows are aligned. The JIT picks it
                         per launch. No effect on a kernel that asks for the
                         aligned code (launch(aligned_code = true)).
  --resource-usage       with a GPU --emit: print the assembler's report of the
                         kernel's registers, spills and shared memory (stderr)
  --list-passes          list the passes of the pipeline
  -o FILE                write the output to FILE instead of stdout (- for stdout)
  -h, --help             show this help
  --version              show the version
)";

struct Options {
  std::string input, emit = "none", pass, printAfter, output, arch, body;
  bool timePasses = false, optimize = true, listPasses = false, resourceUsage = false, unaligned = false;
  cli::LoadOptions load;
};

int usageError(const std::string& msg) {
  std::cerr << "fnkc: error: " << msg << "\n(run fnkc --help for usage)\n";
  return 1;
}

/// The --emit kinds the GPU backend writes (tools/GpuEmit.h).
bool isGpuEmit(const std::string& kind) {
  return kind == "llvm" || kind == "ptx" || kind == "cubin" || kind == "header";
}

int parseArgs(int argc, char** argv, Options& o, bool& exitNow) {
  cli::ArgReader r(argc, argv, 1);
  std::string v, err;
  while (!r.done()) {
    if (r.takeFlag("-h") || r.takeFlag("--help")) {
      std::cout << kUsage;
      exitNow = true;
      return 0;
    }
    if (r.takeFlag("--version")) {
      std::cout << "fnkc " FNK_VERSION "\n";
      exitNow = true;
      return 0;
    }
    if (r.takeFlag("--time-passes")) o.timePasses = true;
    else if (r.takeFlag("--resource-usage")) o.resourceUsage = true;
    else if (r.takeFlag("--unaligned")) o.unaligned = true;
    else if (r.takeFlag("--list-passes")) o.listPasses = true;
    else if (r.takeFlag("-O0")) o.optimize = false;
    else if (r.takeFlag("-O1") || r.takeFlag("-O2") || r.takeFlag("-O3")) o.optimize = true;
    else if (r.take("-k", v, err) || r.take("--kernel", v, err)) o.load.kernel = v;
    else if (r.take("-D", v, err)) {
      std::string n, val;
      if (err.empty() && !cli::splitAssignment(v, n, val)) return usageError("-D needs NAME=VALUE, got '" + v + "'");
      o.load.consts[n] = val;
    } else if (r.take("-I", v, err)) o.load.frontend.includeDirs.push_back(v);
    else if (r.take("--stdlib", v, err)) o.load.frontend.stdlibDir = v;
    else if (r.take("--emit", v, err)) o.emit = v;
    else if (r.take("--pass", v, err)) o.pass = v;
    else if (r.take("--print-after", v, err)) o.printAfter = v;
    else if (r.take("-o", v, err)) o.output = v;
    else if (r.take("--arch", v, err)) o.arch = v;
    else if (r.take("--body", v, err)) o.body = v;
    else if (!r.peek().empty() && r.peek()[0] == '-' && r.peek() != "-") return usageError("unknown option '" + r.peek() + "'");
    else if (o.input.empty()) o.input = r.next();
    else return usageError("more than one input file ('" + o.input + "' and '" + r.peek() + "')");
    if (!err.empty()) return usageError(err);
  }
  if (o.listPasses) return 0;
  if (o.input.empty()) return usageError("no input file");
  static const char* kEmits[] = {"none", "ast", "ir", "ir-raw"};
  bool known = false;
  for (const char* e : kEmits) known |= o.emit == e;
#ifdef FNK_HAVE_GPU
  known |= isGpuEmit(o.emit);
#endif
  if (!known && isGpuEmit(o.emit))
    return usageError("--emit=" + o.emit + " needs the GPU backend, which this build does not include");
  if (!known) return usageError("unknown --emit kind '" + o.emit + "' (expected ast, ir, ir-raw or none)");
  if (o.resourceUsage && !isGpuEmit(o.emit))
    return usageError("--resource-usage goes with --emit=llvm, ptx, cubin or header");
  if (!o.arch.empty() && !isGpuEmit(o.emit))
    return usageError("--arch goes with --emit=llvm, ptx, cubin or header");
  if (!o.body.empty() && o.body != "full" && o.body != "partial" && o.body != "both")
    return usageError("--body is full, partial or both, got '" + o.body + "'");
  if (!o.body.empty() && !isGpuEmit(o.emit)) return usageError("--body goes with --emit=llvm, ptx or cubin");
  if (o.unaligned && !isGpuEmit(o.emit)) return usageError("--unaligned goes with --emit=llvm, ptx, cubin or header");
#ifdef FNK_HAVE_GPU  // (a GPU --emit without the backend was refused above)
  if (!o.arch.empty() && o.arch != tools::gpuArch())
    return usageError("unsupported --arch '" + o.arch + "': the GPU backend targets Hopper, " + tools::gpuArch() +
                      " (clusters, distributed shared memory, bulk copies)");
#endif
  if (!o.pass.empty() && !ir::findPass(o.pass)) return usageError("unknown pass '" + o.pass + "' (see --list-passes)");
  if (!o.printAfter.empty() && !ir::findPass(o.printAfter))
    return usageError("unknown pass '" + o.printAfter + "' (see --list-passes)");
  return 0;
}

/// Writes `text` to `path`. A regular file (or a new one) is written to a
/// temporary of its own beside it and renamed over it, so that a failed run
/// never leaves half a file and two runs writing the same path never share a
/// temporary; anything else (-o /dev/null, a FIFO, a terminal) is written in
/// place and never replaced.
bool writeOutput(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (f) return true;
    std::cerr << "fnkc: error: cannot write '" << path << "'\n";
    return false;
  }
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(std::random_device{}());
  std::ofstream f(tmp, std::ios::binary);
  f << text;
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    std::cerr << "fnkc: error: cannot write '" << path << "'\n";
    return false;
  }
  return true;
}

int compile(Options& o) {
  SourceManager sm;
  DiagEngine diags(sm);
  std::ostringstream out;
  auto finish = [&](bool ok) {
    diags.print(std::cerr);
    if (!ok || diags.hasErrors()) return 1;
    if (o.output.empty() || o.output == "-") {
      std::cout << out.str();
      return 0;
    }
    return writeOutput(o.output, out.str()) ? 0 : 1;
  };
  std::unique_ptr<Program> program;
  auto m = cli::loadModule(o.input, o.load, sm, diags, &program);
  if (!m) return finish(false);
  if (o.emit == "ast") {
    if (!program) {
      diags.error({}, "--emit=ast needs a .fnk source file");
      return finish(false);
    }
    printAst(out, *program->root(), sm);
    return finish(true);
  }
  if (o.emit == "ir-raw") {
    ir::print(out, *m);
    return finish(true);
  }
  if (!o.pass.empty()) {
    if (!ir::runPass(*m, o.pass, diags)) return finish(false);
  } else if (o.optimize) {
    ir::PipelineOptions po;
    po.printAfter = o.printAfter;
    po.timePasses = o.timePasses;
    po.dump = &std::cerr;
    po.layouts = isGpuEmit(o.emit);
    if (!ir::runPipeline(*m, diags, po)) return finish(false);
  }
  if (o.emit == "ir" || !o.pass.empty()) ir::print(out, *m);
#ifdef FNK_HAVE_GPU
  if (isGpuEmit(o.emit)) {
    std::string text, usage;
    const int body = o.body == "full" ? 1 : o.body == "partial" ? 0 : -1;
    if (Status s = tools::emitGpu(*m, o.emit, text, o.input, o.resourceUsage ? &usage : nullptr, body, o.unaligned);
        !s) {
      diags.error({}, s.message());
      return finish(false);
    }
    std::cerr << usage;
    out << text;
  }
#endif
  return finish(true);
}

}  // namespace

int fnk::tools::fnkcMain(int argc, char** argv) {
  Options o;
  bool exitNow = false;
  if (int rc = parseArgs(argc, argv, o, exitNow); rc || exitNow) return rc;
  if (o.listPasses) {
    for (const auto& p : ir::allPasses()) std::cout << p.name << "\t" << p.summary << "\n";
    return 0;
  }
  int rc = 1;
  runWithLargeStack([&] { rc = compile(o); });
  return rc;
}
