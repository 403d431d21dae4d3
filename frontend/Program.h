// A program: the root source file and every module it imports, parsed. Imports
// resolve `a.b.c` to `a/b/c.fnk` under the importing file's directory, then
// each -I directory; `std.x.y` resolves to `x/y.fnk` under the stdlib
// directory (found by default). A file that is also valid fnk IR text
// (`.fnkir`) is not a Program: see ir/Parser.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "frontend/Ast.h"
#include "support/Diagnostics.h"

namespace fnk {

struct FrontendOptions {
  std::vector<std::string> includeDirs;
  std::string stdlibDir;  // empty: the build's default (FNK_STDLIB_DIR) or $FNK_STDLIB
};

std::string defaultStdlibDir();

class Program {
public:
  Program(SourceManager& sm, DiagEngine& diags, FrontendOptions opts)
      : sm_(sm), diags_(diags), opts_(std::move(opts)) {}

  /// Parses the root file (from disk or a buffer) and its imports. False on any error.
  bool loadFile(const std::string& path);
  bool loadBuffer(const std::string& name, const std::string& text);

  const ast::Module* root() const { return modules_.empty() ? nullptr : modules_.front().get(); }
  const std::vector<std::unique_ptr<ast::Module>>& modules() const { return modules_; }
  /// The function `name` as seen from the root module: its own decls first,
  /// then those of imported modules.
  const ast::FuncDecl* lookup(const std::string& name) const;
  SourceManager& sources() const { return sm_; }

private:
  bool loadImports(size_t index);
  std::string resolveImport(const std::string& module, const std::string& fromFile) const;
  SourceManager& sm_;
  DiagEngine& diags_;
  FrontendOptions opts_;
  std::vector<std::unique_ptr<ast::Module>> modules_;
};

}  // namespace fnk
