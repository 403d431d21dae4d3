// Reads input lines for the REPL: with line editing and history through
// libedit when stdin is a terminal and libedit can be loaded (it is opened at
// run time, so fnk runs where libedit is absent), plain lines otherwise.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

namespace fnk {

class LineReader {
public:
  explicit LineReader(std::istream& in);
  ~LineReader();
  /// The next line without its newline, or nullopt at end of input.
  std::optional<std::string> read(const char* prompt);
  bool interactive() const { return readline_ != nullptr; }

private:
  std::istream& in_;
  void* lib_ = nullptr;
  char* (*readline_)(const char*) = nullptr;
  int (*addHistory_)(const char*) = nullptr;
  int (*readHistory_)(const char*) = nullptr;
  int (*writeHistory_)(const char*) = nullptr;
  std::string historyPath_;
};

}  // namespace fnk
