#include "tools/LineReader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace fnk {

LineReader::LineReader(std::istream& in) : in_(in) {
  if (&in != &std::cin || !isatty(STDIN_FILENO)) return;
  for (const char* name : {"libedit.so.2", "libedit.so"}) {
    lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib_) break;
  }
  if (!lib_) return;
  readline_ = reinterpret_cast<char* (*)(const char*)>(dlsym(lib_, "readline"));
  addHistory_ = reinterpret_cast<int (*)(const char*)>(dlsym(lib_, "add_history"));
  readHistory_ = reinterpret_cast<int (*)(const char*)>(dlsym(lib_, "read_history"));
  writeHistory_ = reinterpret_cast<int (*)(const char*)>(dlsym(lib_, "write_history"));
  if (const char* home = std::getenv("HOME")) historyPath_ = std::string(home) + "/.fnk_history";
  if (readHistory_ && !historyPath_.empty()) readHistory_(historyPath_.c_str());
}

LineReader::~LineReader() {
  if (writeHistory_ && !historyPath_.empty()) writeHistory_(historyPath_.c_str());
  // libedit stays loaded: it may have registered atexit handlers.
}

std::optional<std::string> LineReader::read(const char* prompt) {
  if (readline_) {
    char* line = readline_(prompt);
    if (!line) return std::nullopt;
    std::string s = line;
    std::free(line);
    if (!s.empty() && addHistory_) addHistory_(s.c_str());
    return s;
  }
  std::string s;
  if (!std::getline(in_, s)) return std::nullopt;
  return s;
}

}  // namespace fnk
