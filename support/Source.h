// Source buffers and locations. Every AST node and IR op carries a SourceRange
// into a buffer owned by one SourceManager, so any stage can point at the text
// that caused a problem.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fnk {

struct SourceLoc {
  int32_t file = -1;  // -1: no location (generated code)
  uint32_t offset = 0;
  bool valid() const { return file >= 0; }
};

struct SourceRange {
  SourceLoc begin;
  uint32_t end = 0;  // byte offset one past the last character, same file
  bool valid() const { return begin.valid(); }
};

struct LineCol {
  unsigned line = 0, col = 0;  // 1-based
};

class SourceManager {
public:
  /// Adds a buffer and returns its id. The text is copied; invalid UTF-8 is kept
  /// as bytes (the lexer rejects it with a located error).
  int addBuffer(std::string name, std::string text);
  /// Reads a file; returns -1 and sets `error` when it cannot be read.
  int addFile(const std::string& path, std::string& error);

  const std::string& name(int file) const { return files_[file].name; }
  const std::string& text(int file) const { return files_[file].text; }
  LineCol lineCol(SourceLoc loc) const;
  std::string_view lineText(int file, unsigned line) const;
  int fileCount() const { return static_cast<int>(files_.size()); }

private:
  struct File {
    std::string name, text;
    std::vector<uint32_t> lineStarts;
  };
  std::vector<File> files_;
};

}  // namespace fnk
