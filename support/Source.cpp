#include "support/Source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fnk {

int SourceManager::addBuffer(std::string name, std::string text) {
  File f{std::move(name), std::move(text), {0}};
  for (uint32_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n') f.lineStarts.push_back(i + 1);
  files_.push_back(std::move(f));
  return static_cast<int>(files_.size()) - 1;
}

int SourceManager::addFile(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read '" + path + "'";
    return -1;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    error = "cannot read '" + path + "'";
    return -1;
  }
  return addBuffer(path, ss.str());
}

LineCol SourceManager::lineCol(SourceLoc loc) const {
  if (!loc.valid() || loc.file >= fileCount()) return {};
  const auto& starts = files_[loc.file].lineStarts;
  auto it = std::upper_bound(starts.begin(), starts.end(), loc.offset);
  unsigned line = static_cast<unsigned>(it - starts.begin());
  return {line, loc.offset - starts[line - 1] + 1};
}

std::string_view SourceManager::lineText(int file, unsigned line) const {
  const File& f = files_[file];
  if (line == 0 || line > f.lineStarts.size()) return {};
  uint32_t b = f.lineStarts[line - 1];
  uint32_t e = line < f.lineStarts.size() ? f.lineStarts[line] : f.text.size();
  std::string_view s(f.text.data() + b, e - b);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace fnk
