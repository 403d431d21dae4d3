// The one diagnostic engine. Every user-facing error of the front end, the IR
// parser and the verifier goes through it and prints as
//   file:line:col: error: message
//     source line
//     ^~~~
// with notes attached to the error they explain. Library code reports here and
// returns failure; only the command-line tools decide to exit.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "support/Source.h"

namespace fnk {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<Diagnostic> notes;
};

class DiagEngine {
public:
  explicit DiagEngine(const SourceManager& sm) : sm_(sm) {}

  /// Reports an error; returns a handle so notes can be attached.
  Diagnostic& error(SourceRange range, std::string message);
  Diagnostic& warning(SourceRange range, std::string message);
  static void note(Diagnostic& d, SourceRange range, std::string message);

  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ > 0; }
  /// After this many errors further ones are counted but not stored, so a
  /// pathological input cannot make the report itself explode.
  static constexpr unsigned kMaxStored = 50;

  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  void print(std::ostream& os) const;
  std::string str() const;
  void clear() { diags_.clear(); errors_ = 0; }

private:
  Diagnostic& add(Severity s, SourceRange r, std::string m);
  void printOne(std::ostream& os, const Diagnostic& d) const;
  const SourceManager& sm_;
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_;
  unsigned errors_ = 0;
};

}  // namespace fnk
