// AST → tile IR. Elaboration instantiates a kernel for concrete const-generic
// values, checks names, dtypes and shapes (every error located and naming the
// concrete types), and emits tile IR in one walk: tile shapes depend on the
// constants, so checking and lowering happen together, per instantiation, as
// Triton's JIT specialization does. Helper `fn`s are inlined at their call
// sites; `var`s assigned in loops and branches become loop-carried values and
// scf.if results.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "frontend/Program.h"
#include "ir/IR.h"

namespace fnk {

/// Const-generic values given on the command line (`-D NAME=VALUE`), as text.
using ConstOverrides = std::map<std::string, std::string>;

/// Instantiates one kernel. Null on error (diagnostics reported).
std::unique_ptr<ir::Function> elaborateKernel(const Program& program, const ast::FuncDecl& kernel,
                                              const ConstOverrides& consts, DiagEngine& diags);

/// Instantiates every kernel of the root module (or only `onlyKernel`).
/// Several kernels' errors are all reported. Null on any error.
std::unique_ptr<ir::Module> elaborateModule(const Program& program, const ConstOverrides& consts,
                                            DiagEngine& diags, const std::string& onlyKernel = {});

/// Instantiates every root kernel whose const generics all have defaults, so
/// a program's type and shape errors surface when it is loaded (libfnk,
/// `fnk repl`) rather than at the first call. False on any error.
bool checkKernelsWithDefaults(const Program& program, DiagEngine& diags);

/// Limits that keep absurd programs from exhausting the compiler or the GPU.
constexpr int64_t kMaxTileElements = int64_t(1) << 20;
/// Hopper's shared memory per CTA (past 48 KiB the GPU backend places a
/// kernel's shared arrays in dynamic shared memory).
constexpr int64_t kMaxSharedBytes = 227 * 1024;
constexpr int kMaxInlineDepth = 32;

}  // namespace fnk
