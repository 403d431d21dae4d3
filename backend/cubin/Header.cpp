#include "backend/cubin/Header.h"

#include <cctype>
#include <map>
#include <sstream>

#include "backend/nvptx/Abi.h"

namespace fnk::cubin {

namespace {

using ir::DType;
using ir::OpKind;

const char* cType(DType t) {
  switch (t) {
    case DType::I1: return "int";
    case DType::I8: case DType::I16: case DType::I32: return "int32_t";
    case DType::U8: case DType::U32: return "uint32_t";
    case DType::I64: return "int64_t";
    default: return "double";
  }
}

/// Rounds a C expression to what the dtype holds, as the interpreter does.
std::string wrap(DType t, const std::string& e) {
  switch (t) {
    case DType::I1: return "((" + e + ") != 0)";
    case DType::I8: return "(int32_t)(int8_t)(" + e + ")";
    case DType::I16: return "(int32_t)(int16_t)(" + e + ")";
    case DType::I32: return "(int32_t)(" + e + ")";
    case DType::U8: return "(uint32_t)(uint8_t)(" + e + ")";
    case DType::U32: return "(uint32_t)(" + e + ")";
    case DType::I64: return "(int64_t)(" + e + ")";
    case DType::F32: case DType::F16: case DType::BF16: return "(double)(float)(" + e + ")";
    default: return "(double)(" + e + ")";
  }
}

class LaunchRegionToC {
public:
  LaunchRegionToC(const ir::Function& fn, std::ostringstream& os, std::map<const ir::Value*, std::string> names)
      : fn_(fn), os_(os), names_(std::move(names)) {}

  Status emit(std::string grid[3]) {
    for (const auto& op : fn_.launch.front().ops()) {
      if (Status s = emitOp(*op, grid); !s) return s;
    }
    return Status::ok();
  }

private:
  std::string name(const ir::Value* v) { return names_.at(v); }
  std::string bind(const ir::Operation& op, const std::string& expr) {
    std::string n = "v" + std::to_string(next_++);
    DType t = op.result()->type().dtype;
    os_ << "  const " << cType(t) << " " << n << " = " << wrap(t, expr) << ";\n";
    names_[op.result()] = n;
    return n;
  }
  Status emitOp(const ir::Operation& op, std::string grid[3]) {
    auto a = [&](unsigned i) { return name(op.operand(i)); };
    static const std::map<OpKind, const char*> infix = {
        {OpKind::Add, "+"}, {OpKind::Sub, "-"}, {OpKind::Mul, "*"}, {OpKind::And, "&"},
        {OpKind::Or, "|"},  {OpKind::Xor, "^"}, {OpKind::Shl, "<<"}, {OpKind::Shr, ">>"}};
    static const std::map<std::string, const char*> cmp = {{"lt", "<"}, {"le", "<="}, {"gt", ">"},
                                                           {"ge", ">="}, {"eq", "=="}, {"ne", "!="}};
    if (op.numResults() == 1 && !op.result()->type().isScalar())
      return Status::error("launch region of '" + fn_.name + "' computes a tile; a header can only hold scalar code");
    switch (op.kind()) {
      case OpKind::Constant: {
        const ir::Attr* v = op.attrs().get("value");
        bind(op, v ? ir::attrStr(*v) == "true" ? "1" : ir::attrStr(*v) == "false" ? "0" : ir::attrStr(*v) : "0");
        return Status::ok();
      }
      case OpKind::Dim: bind(op, a(0) + "_d" + std::to_string(op.attrs().getInt("axis"))); return Status::ok();
      case OpKind::Cast: bind(op, a(0)); return Status::ok();
      case OpKind::Neg: bind(op, "-" + a(0)); return Status::ok();
      case OpKind::Not: bind(op, op.result()->type().dtype == DType::I1 ? "!" + a(0) : "~" + a(0)); return Status::ok();
      case OpKind::Min: bind(op, a(0) + " < " + a(1) + " ? " + a(0) + " : " + a(1)); return Status::ok();
      case OpKind::Max: bind(op, a(0) + " > " + a(1) + " ? " + a(0) + " : " + a(1)); return Status::ok();
      case OpKind::Div:
      case OpKind::Rem: {
        const DType t = op.result()->type().dtype;
        const bool div = op.kind() == OpKind::Div;
        if (!div && ir::isFloat(t)) return Status::error("float remainder in a launch region");
        if (ir::isFloat(t)) {
          bind(op, a(0) + " / " + a(1));
          return Status::ok();
        }
        // As the interpreter: a zero divisor is an error (the launch is
        // refused), and the most negative value divided by -1 wraps to itself
        // with remainder 0, where C's overflow would be undefined (SIGFPE). A
        // constant divisor other than 0 and -1 needs neither check.
        const ir::Operation* d = op.operand(1)->definingOp();
        const ir::Attr* dv = d && d->kind() == OpKind::Constant ? d->attrs().get("value") : nullptr;
        const int64_t* k = dv ? std::get_if<int64_t>(dv) : nullptr;
        if (k && *k != 0 && *k != -1) {
          bind(op, a(0) + (div ? " / " : " % ") + a(1));
          return Status::ok();
        }
        os_ << "  if (" << a(1) << " == 0) return CUDA_ERROR_INVALID_VALUE;  /* integer "
            << (div ? "division" : "remainder") << " by zero */\n";
        if (!ir::isSigned(t)) {
          bind(op, a(0) + (div ? " / " : " % ") + a(1));
          return Status::ok();
        }
        const std::string minusOne = div ? "(int64_t)(0ULL - (uint64_t)" + a(0) + ")" : "0";
        bind(op, a(1) + " == -1 ? " + minusOne + " : " + a(0) + (div ? " / " : " % ") + a(1));
        return Status::ok();
      }
      case OpKind::Select: bind(op, a(0) + " ? " + a(1) + " : " + a(2)); return Status::ok();
      case OpKind::Cmp: bind(op, a(0) + " " + cmp.at(op.attrs().getStr("pred")) + " " + a(1)); return Status::ok();
      case OpKind::LaunchCheck:
        os_ << "  if (!" << a(0) << ") return CUDA_ERROR_INVALID_VALUE;  /* requires "
            << op.attrs().getStr("message") << " */\n";
        return Status::ok();
      case OpKind::LaunchGrid:
        for (int i = 0; i < 3; ++i) grid[i] = a(i);
        return Status::ok();
      default:
        if (auto it = infix.find(op.kind()); it != infix.end()) {
          bind(op, a(0) + " " + it->second + " " + a(1));
          return Status::ok();
        }
        return Status::error(std::string("launch region op ") + op.name() + " cannot be emitted in a header");
    }
  }

  const ir::Function& fn_;
  std::ostringstream& os_;
  std::map<const ir::Value*, std::string> names_;
  int next_ = 0;
};

std::string ident(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

}  // namespace

Status emitHeader(const ir::Function& fn, const std::string& image, bool isPtx, const std::string& source,
                  std::string& out) {
  const std::string k = ident(fn.name);
  // A kernel whose CTAs wait for each other (wait_ge) needs its whole grid
  // resident at once: it is launched cooperatively, and the driver refuses a
  // grid that does not fit (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE; checked
  // on the H200, docs/perf-notes.md v18).
  const bool waits = fn.waitsOnOtherCtas();
  std::ostringstream os;
  os << "/* Generated by fnkc " FNK_VERSION " from " << source << ": kernel " << fn.name;
  if (!fn.consts.empty()) {
    os << "<";
    for (size_t i = 0; i < fn.consts.size(); ++i) os << (i ? ", " : "") << fn.consts[i].first << " = " << ir::attrStr(fn.consts[i].second);
    os << ">";
  }
  os << ".\n * Do not edit. fnk_" << k << "_launch() checks the dims and the kernel's requirements,\n"
     << " * loads the embedded " << (isPtx ? "PTX (JIT-compiled by the driver)" : "cubin")
     << " into the current context on first use (not thread-safe\n"
     << " * until then) and launches on `stream`. Tensors are row-major contiguous device\n"
     << " * buffers. Returns CUDA_ERROR_INVALID_VALUE for arguments that do not fit"
     << (waits ? ",\n * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE for a grid the GPU cannot hold at once (its CTAs\n"
                                 " * wait for each other)"
                               : "")
     << ". */\n"
     << "#pragma once\n#include <cuda.h>\n#include <stdint.h>\n\n";
  os << "static const unsigned char fnk_" << k << "_image[] = {";
  for (size_t i = 0; i < image.size(); ++i)
    os << (i % 20 ? "" : "\n  ") << static_cast<unsigned>(static_cast<unsigned char>(image[i])) << ",";
  os << "\n  0};\n\n";

  std::vector<nvptx::AbiSlot> abi = nvptx::kernelAbi(fn);
  std::map<const ir::Value*, std::string> names;
  const ir::Block& entry = fn.launch.front();
  std::ostringstream sig, call;
  for (size_t j = 0; j < abi.size(); ++j) {
    const nvptx::AbiSlot& s = abi[j];
    const ir::Param& p = fn.params[s.param];
    std::string n = ident(p.name);
    std::string argName = s.kind == nvptx::AbiKind::I64 && s.dim >= 0 ? n + "_d" + std::to_string(s.dim) : n;
    const char* t = s.kind == nvptx::AbiKind::Ptr ? "CUdeviceptr"
                    : s.kind == nvptx::AbiKind::I64 ? "int64_t"
                    : s.kind == nvptx::AbiKind::I32 ? "int32_t"
                    : s.kind == nvptx::AbiKind::F32 ? "float" : "double";
    sig << ",\n    " << t << " " << argName;
    call << (j ? ", " : "") << "&" << argName;
    if (s.dim < 0) names[entry.argument(static_cast<unsigned>(s.param))] = n;
  }
  os << "static inline CUresult fnk_" << k << "_launch(CUstream stream" << sig.str() << ") {\n";
  // Every use of a dim symbol must agree with its first; literal dims must match.
  std::map<std::string, std::string> firstUse;
  for (const nvptx::AbiSlot& s : abi) {
    if (s.kind != nvptx::AbiKind::I64 || s.dim < 0) continue;
    const ir::Param& p = fn.params[s.param];
    std::string arg = ident(p.name) + "_d" + std::to_string(s.dim), sym = p.type.dims[s.dim];
    if (std::isdigit(static_cast<unsigned char>(sym[0]))) {
      os << "  if (" << arg << " != " << sym << ") return CUDA_ERROR_INVALID_VALUE;\n";
    } else if (auto it = firstUse.find(sym); it != firstUse.end()) {
      os << "  if (" << arg << " != " << it->second << ") return CUDA_ERROR_INVALID_VALUE;  /* dim " << sym << " */\n";
    } else {
      firstUse[sym] = arg;
      os << "  if (" << arg << " < 0) return CUDA_ERROR_INVALID_VALUE;\n";
    }
  }
  std::string grid[3];
  if (Status s = LaunchRegionToC(fn, os, names).emit(grid); !s) return s;
  auto c = fn.cluster();
  c.resize(3, 1);
  os << "  if (" << grid[0] << " < 0 || " << grid[1] << " < 0 || " << grid[2] << " < 0) return CUDA_ERROR_INVALID_VALUE;\n"
     << "  if (" << grid[0] << " == 0 || " << grid[1] << " == 0 || " << grid[2] << " == 0) return CUDA_SUCCESS;\n"
     << "  static CUmodule module;\n  static CUfunction function;\n";
  // A kernel past 48 KiB of shared memory exports how much it needs
  // (nvptx::kDynamicSharedSymbol, in the image's symbol table).
  const bool dynamicShared = image.find(nvptx::kDynamicSharedSymbol) != std::string::npos;
  if (dynamicShared) os << "  static unsigned dynamic_shared;\n";
  os << "  if (!function) {\n"
     << "    CUresult r = cuModuleLoadData(&module, fnk_" << k << "_image);\n"
     << "    if (r != CUDA_SUCCESS) return r;\n"
     << "    r = cuModuleGetFunction(&function, module, \"" << fn.name << "\");\n"
     << "    if (r != CUDA_SUCCESS) return r;\n";
  if (dynamicShared)
    os << "    CUdeviceptr bytes;\n    size_t size;\n"
       << "    r = cuModuleGetGlobal(&bytes, &size, module, \"" << nvptx::kDynamicSharedSymbol << "\");\n"
       << "    if (r != CUDA_SUCCESS) return r;\n"
       << "    r = cuMemcpyDtoH(&dynamic_shared, bytes, sizeof dynamic_shared);\n"
       << "    if (r != CUDA_SUCCESS) return r;\n"
       << "    r = cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dynamic_shared);\n"
       << "    if (r != CUDA_SUCCESS) return r;\n";
  if (fn.clusterCtas() > 8)  // more than Hopper's portable 8 CTAs: a property of the function, set once
    os << "    r = cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);\n"
       << "    if (r != CUDA_SUCCESS) return r;\n";
  const unsigned block = static_cast<unsigned>(32 * fn.warps());
  os << "  }\n";
  os << "  void* params[] = {" << call.str() << "};\n";
  const bool clustered = fn.clusterCtas() > 1;
  // A kernel compiled for programmatic dependent launch (nvptx::kPdlSymbol)
  // is launched so that its launch may overlap the previous kernel's tail.
  const bool pdl = image.find(nvptx::kPdlSymbol) != std::string::npos;
  // One whose CTAs wait for each other is launched cooperatively: the
  // driver's promise that all its CTAs are resident together, even beside
  // other streams' kernels, or CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
  if (!clustered && !pdl && !waits) {
    os << "  return cuLaunchKernel(function, (unsigned)" << grid[0] << ", (unsigned)" << grid[1] << ", (unsigned)" << grid[2]
       << ", " << block << ", 1, 1, " << (dynamicShared ? "dynamic_shared" : "0") << ", stream, params, 0);\n}\n";
  } else {
    const int n = clustered + pdl + waits;
    os << "  CUlaunchAttribute attrs[" << n << "];\n";
    int a = 0;
    if (clustered) {
      os << "  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;\n"
         << "  attrs[0].value.clusterDim.x = " << c[0] << ";\n  attrs[0].value.clusterDim.y = " << c[1]
         << ";\n  attrs[0].value.clusterDim.z = " << c[2] << ";\n";
      ++a;
    }
    if (pdl) {
      os << "  attrs[" << a << "].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;\n"
         << "  attrs[" << a << "].value.programmaticStreamSerializationAllowed = 1;\n";
      ++a;
    }
    if (waits)
      os << "  attrs[" << a << "].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;\n"
         << "  attrs[" << a << "].value.cooperative = 1;\n";
    os << "  CUlaunchConfig config = {(unsigned)" << grid[0] << ", (unsigned)" << grid[1] << ", (unsigned)" << grid[2]
       << ", " << block << ", 1, 1, " << (dynamicShared ? "dynamic_shared" : "0") << ", stream, attrs, " << n << "};\n";
    os << "  return cuLaunchKernelEx(&config, function, params, 0);\n}\n";
  }
  out = os.str();
  return Status::ok();
}

}  // namespace fnk::cubin
