#include "support/Diagnostics.h"

#include <ostream>
#include <sstream>

namespace fnk {

Diagnostic& DiagEngine::add(Severity s, SourceRange r, std::string m) {
  if (s == Severity::Error) ++errors_;
  if (diags_.size() >= kMaxStored) {
    overflow_ = Diagnostic{s, r, std::move(m), {}};
    return overflow_;
  }
  diags_.push_back(Diagnostic{s, r, std::move(m), {}});
  return diags_.back();
}

Diagnostic& DiagEngine::error(SourceRange range, std::string message) {
  return add(Severity::Error, range, std::move(message));
}

Diagnostic& DiagEngine::warning(SourceRange range, std::string message) {
  return add(Severity::Warning, range, std::move(message));
}

void DiagEngine::note(Diagnostic& d, SourceRange range, std::string message) {
  d.notes.push_back(Diagnostic{Severity::Note, range, std::move(message), {}});
}

static const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

void DiagEngine::printOne(std::ostream& os, const Diagnostic& d) const {
  if (!d.range.valid() || d.range.begin.file >= sm_.fileCount()) {
    os << "fnk: " << severityName(d.severity) << ": " << d.message << "\n";
    return;
  }
  LineCol lc = sm_.lineCol(d.range.begin);
  os << sm_.name(d.range.begin.file) << ":" << lc.line << ":" << lc.col << ": "
     << severityName(d.severity) << ": " << d.message << "\n";
  std::string_view line = sm_.lineText(d.range.begin.file, lc.line);
  // Long or binary lines are shown clipped so the caret stays readable.
  constexpr size_t kMaxShown = 200;
  if (line.size() > kMaxShown || lc.col > kMaxShown) return;
  std::string shown;
  for (char c : line) shown += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
  os << "  " << shown << "\n  ";
  for (unsigned i = 1; i < lc.col; ++i) os << (i - 1 < line.size() && line[i - 1] == '\t' ? '\t' : ' ');
  os << '^';
  uint32_t len = d.range.end > d.range.begin.offset ? d.range.end - d.range.begin.offset : 1;
  size_t room = line.size() >= lc.col ? line.size() - lc.col + 1 : 1;
  for (uint32_t i = 1; i < len && i < room; ++i) os << '~';
  os << "\n";
}

void DiagEngine::print(std::ostream& os) const {
  for (const Diagnostic& d : diags_) {
    printOne(os, d);
    for (const Diagnostic& n : d.notes) printOne(os, n);
  }
  if (errors_ > kMaxStored) os << "fnk: note: " << errors_ - kMaxStored << " more errors not shown\n";
}

std::string DiagEngine::str() const {
  std::ostringstream ss;
  print(ss);
  return ss.str();
}

}  // namespace fnk
