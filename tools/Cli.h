// Shared by the command-line tools: loading a .fnk or .fnkir file into a
// verified IR module, and a small argument reader. Only the tools print and
// exit; everything below them returns errors as values.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/Elaborate.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::cli {

struct LoadOptions {
  FrontendOptions frontend;
  ConstOverrides consts;
  std::string kernel;  // empty: all kernels
};

/// Parses `path` as fnk source (`.fnk`) or IR text (`.fnkir`), instantiates its
/// kernels and verifies the result. Null after reporting errors to `diags`.
/// `program` receives the parsed sources when the input is `.fnk`.
std::unique_ptr<ir::Module> loadModule(const std::string& path, const LoadOptions& opts, SourceManager& sm,
                                       DiagEngine& diags, std::unique_ptr<Program>* program = nullptr);

bool isIRFile(const std::string& path);

/// Splits "NAME=VALUE"; false when there is no '=' or the name is empty.
bool splitAssignment(const std::string& s, std::string& name, std::string& value);

/// Splits a line into words at blanks as a POSIX shell would, without
/// expansions: '...' keeps everything inside, "..." keeps everything but a
/// backslash before " or \\, and outside quotes a backslash keeps the next
/// character (a path with a space: 'my dir/x.npy' or my\\ dir/x.npy). False,
/// with `error` set, on an unterminated quote or a trailing backslash.
bool splitWords(const std::string& line, std::vector<std::string>& words, std::string& error);

/// Reads `--flag=value`, `--flag value`, `-Xvalue` and `-X value` forms.
class ArgReader {
public:
  ArgReader(int argc, char** argv, int start) : args_(argv + start, argv + argc) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& peek() const { return args_[i_]; }
  std::string next() { return args_[i_++]; }
  /// If the current argument is `name` (with `=value`, or followed by a value),
  /// consumes it and sets `value`. `error` is set when the value is missing.
  bool take(const std::string& name, std::string& value, std::string& error);
  bool takeFlag(const std::string& name);

private:
  std::vector<std::string> args_;
  size_t i_ = 0;
};

}  // namespace fnk::cli
