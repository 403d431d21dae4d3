// Reads the text form of fnk IR that ir/Printer.h writes, so that golden tests
// can feed IR straight to one pass and tools can dump and reload a module.
//
// The parser is hand-written (a lexer plus recursive descent) and checks syntax
// and names only: op arity and types are the verifier's business. It stops at
// the first error, reports it through the DiagEngine with a precise range, and
// returns null. It never crashes on malformed input: region nesting is capped
// (kMaxRegionDepth) so the recursion stays bounded, and numbers that do not fit
// are reported.
//
// Beyond the printer's output it accepts `//` line comments (so lit RUN and
// CHECK lines can live in a .fnkir file), `bool` for i1 and attributes in any
// key order. Each op sits on one line; its regions open on that line.
#pragma once
#include <memory>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

/// Deeper region nesting than this is reported rather than parsed.
constexpr int kMaxRegionDepth = 256;

/// Parses the whole buffer `fileId` of `sm` as one module holding zero or more
/// kernels. Returns null after reporting an error.
std::unique_ptr<Module> parseIR(const SourceManager& sm, int fileId, DiagEngine& diags);

}  // namespace fnk::ir
