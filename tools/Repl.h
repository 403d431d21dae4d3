// `fnk repl`: an interactive session for experiments with kernels — load or
// type kernels, make tensors, run them in the interpreter (or on the GPU when
// the backend is built), inspect and compare results, time launches, show IR.
// Errors are reported and never end the session. With stdin not a terminal it
// reads commands line by line, so `fnk repl < script` runs a script.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace fnk {

struct ReplOptions {
  std::vector<std::string> includeDirs;
  std::vector<std::string> preload;  // files given on the command line
  bool echo = false;                 // echo commands (scripts)
};

/// Runs the session until `quit` or end of input; returns the exit code
/// (0, or 1 when reading a script and any command failed).
int runRepl(const ReplOptions& opts, std::istream& in, std::ostream& out);

}  // namespace fnk
