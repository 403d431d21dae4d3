// Source text → AST. Runs the ANTLR-generated parser (grammar/Fnk.g4) and
// reports syntax errors through the DiagEngine with the offending token's
// range. Guards make pathological input end in a diagnostic, not a crash:
// invalid UTF-8, files over kMaxSourceBytes, nesting deeper than kMaxNesting,
// statements longer than kMaxStatementTokens,
// and more than kMaxSyntaxErrors syntax errors stop the parse early.
#pragma once
#include <memory>

#include "frontend/Ast.h"
#include "support/Diagnostics.h"

namespace fnk {

constexpr size_t kMaxSourceBytes = 4u << 20;
constexpr int kMaxNesting = 200;
constexpr unsigned kMaxSyntaxErrors = 20;
constexpr int kMaxStatementTokens = 2048;

/// Parses buffer `fileId`. Returns null when the file has syntax errors.
std::unique_ptr<ast::Module> parseSource(const SourceManager& sm, int fileId, DiagEngine& diags);

}  // namespace fnk
