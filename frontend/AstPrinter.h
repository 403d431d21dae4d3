// `fnkc --emit=ast`: the AST as an indented tree, one node per line with its
// line:col, for debugging the front end and for golden tests.
#pragma once
#include <iosfwd>

#include "frontend/Ast.h"

namespace fnk {
class SourceManager;
void printAst(std::ostream& os, const ast::Module& m, const SourceManager& sm);
}  // namespace fnk
