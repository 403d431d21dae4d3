// LLVM's NVPTX target: initialization (once), the TargetMachine, the O3
// optimization pipeline and PTX emission.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include "backend/nvptx/Codegen.h"
#include "backend/nvptx/Lowerer.h"
#include "ir/Knobs.h"
#include "ir/passes/Version.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();
extern "C" void LLVMInitializeNVPTXAsmPrinter();

namespace fnk::nvptx {

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

void initOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

Status makeTarget(const TargetOptions& opts, bool ptx81, std::unique_ptr<llvm::TargetMachine>& tm) {
  initOnce();
  std::string err;
  llvm::Triple triple(kTriple);
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) return Status::error("NVPTX target unavailable: " + err);
  llvm::TargetOptions to;
  // PTX ISA 8.1 where the kernel needs it (detail::needsPtx81); other kernels stay at 8.0.
  const std::string features = ptx81 && opts.features == "+ptx80" ? "+ptx81" : opts.features;
  tm.reset(target->createTargetMachine(triple, opts.arch, features, to, llvm::Reloc::Static, std::nullopt,
                                       llvm::CodeGenOptLevel::Aggressive));
  if (!tm) return Status::error("cannot create an NVPTX target machine for " + opts.arch);
  return Status::ok();
}

Status buildModule(const ir::Function& fn, const TargetOptions& opts, llvm::LLVMContext& ctx,
                   std::unique_ptr<llvm::Module>& mod, std::unique_ptr<llvm::TargetMachine>& tm) {
  if (Status s = makeTarget(opts, detail::needsPtx81(fn), tm); !s) return s;
  mod = std::make_unique<llvm::Module>(fn.name, ctx);
  mod->setTargetTriple(llvm::Triple(kTriple));
  mod->setDataLayout(tm->createDataLayout());
  detail::Lowerer lowerer(*mod, fn);
  // A kernel that asks for the aligned code alone gets it when asked for the
  // other (as the JIT would run it); FNK_UNALIGNED=1 still forces it.
  lowerer.unaligned = unalignedCode(opts.unaligned && alignmentMatters(fn));
  lowerer.partialChunks = forcedOr(Knob::PartialChunks, fn.alignedCode());
  if (opts.body >= 0) {
    lowerer.decidedIf = ir::launchBranch(fn).iff;
    lowerer.decidedThen = opts.body == 1;
  }
  if (Status s = lowerer.run(); !s) return s;
  if (opts.optimize) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*mod, mam);
  }
  return Status::ok();
}

}  // namespace

namespace {
constexpr const char* kKnobNames[] = {"FNK_NO_CONTRACT",          "FNK_NO_HOIST",  "FNK_NO_PREFETCH",
                                      "FNK_PREFETCH_MIN_CHUNKS",  "FNK_PREFETCH_MAX_THREADS",
                                      "FNK_NO_SIBLING_REDUCE",    "FNK_NO_MINCTAS", "FNK_MINCTAS",
                                      "FNK_SCRATCH_BARRIERS",     "FNK_UNROLL",    "FNK_CLUSTER_ASYNC",
                                      "FNK_UNIFORM_PREFETCH",     "FNK_CLUSTER_DEFER",
                                      "FNK_TREE_FOLD",
                                      "FNK_PDL",                  "FNK_NO_SWIZZLE",
                                      "FNK_NO_STREAM",            "FNK_JIT_ONE_BODY",
                                      "FNK_WARP_PUSH",            "FNK_KEEP_L2",
                                      "FNK_UNALIGNED",            "FNK_PARTIAL_CHUNKS"};  // in Knob's order
static_assert(std::size(kKnobNames) == static_cast<size_t>(Knob::PartialChunks) + 1, "one name per Knob");

/// Each knob's text ("" when unset), read once.
const std::vector<std::string>& knobTexts() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> t;
    for (const char* name : kKnobNames) {
      const char* e = std::getenv(name);
      t.push_back(e ? e : "");
    }
    return t;
  }();
  return texts;
}
}  // namespace

int64_t knob(Knob k, int64_t dflt) {
  const std::string& t = knobTexts()[static_cast<size_t>(k)];
  if (t.empty()) return dflt;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  return end && *end == '\0' ? static_cast<int64_t>(v) : 1;
}

std::string loweringKey() {
  std::string k = "nvptx-v1.42";  // bump with every change to the lowering
  // FNK_JIT_ONE_BODY picks which body the JIT asks for, and the runtime's
  // key names that body; the code of a given body does not depend on it.
  const std::vector<std::string>& texts = knobTexts();
  for (size_t i = 0; i < texts.size(); ++i)
    if (i != static_cast<size_t>(Knob::JitOneBody)) k += "|" + texts[i];
  return k + ir::knobKey();  // the IR passes' knobs change what is lowered
}

bool forcedOr(Knob k, bool asked) {
  const int64_t forced = knob(k, -1);
  return forced == -1 ? asked : forced == 1;
}

bool unalignedCode(bool asked) { return forcedOr(Knob::Unaligned, asked); }

bool alignmentMatters(const ir::Function& fn) {
  if (fn.alignedCode()) return false;  // launch(aligned_code = true): the aligned code for every launch
  const int64_t T = 32 * fn.warps();
  return ir::anyOp(fn.body.front(), [&](const ir::Operation& op) {
    const bool load = op.kind() == ir::OpKind::Load, store = op.kind() == ir::OpKind::Store;
    if (!(load || store) || !op.operand(0)->type().isTensor()) return false;
    const size_t rank = op.operand(0)->type().dims.size();
    const ir::Type& tile = load ? op.result()->type() : op.operand(static_cast<unsigned>(1 + rank))->type();
    const ir::TileLayout lay = ir::tileLayout(tile.shape, T);
    return !lay.uniform && lay.vec > 1;  // a vector access of a global tensor: joinedStore, elementsOf
  });
}

Status emitLLVM(const ir::Function& fn, const TargetOptions& opts, std::string& out) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
  if (Status s = buildModule(fn, opts, ctx, mod, tm); !s) return s;
  out.clear();
  llvm::raw_string_ostream os(out);
  mod->print(os, nullptr);
  os.flush();
  return Status::ok();
}

Status emitPTX(const ir::Function& fn, const TargetOptions& opts, std::string& out) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
  std::unique_ptr<llvm::TargetMachine> tm;
  if (Status s = buildModule(fn, opts, ctx, mod, tm); !s) return s;
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return Status::error("kernel '" + fn.name + "': the NVPTX target cannot emit PTX");
  pm.run(*mod);
  out.assign(buf.begin(), buf.end());
  return Status::ok();
}

}  // namespace fnk::nvptx
