// Pass infrastructure: the registry of IR passes (for `fnkc --pass=NAME`),
// the one pipeline that runs them in order, and small helpers the passes share.
// Each pass lives in ir/passes/<Name>.{h,cpp}; its header says what it does,
// expects and guarantees.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace fnk::ir {

struct PassInfo {
  const char* name;     // the --pass flag and the golden test's file name
  const char* summary;  // one line for --help
  bool (*run)(Module&, DiagEngine&);  // false after reporting an error
};

/// Every pass, in pipeline order.
const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(std::string_view name);

struct PipelineOptions {
  std::string printAfter;       // print the module to `dump` after this pass
  bool timePasses = false;      // print a table of milliseconds per pass to `dump`
  bool verifyEach = true;       // verify the input and the output of every pass
  std::ostream* dump = nullptr; // std::cerr when null
  bool layouts = false;         // end with the layout pass (fnkc with a GPU --emit)
};

/// Runs the standard pipeline. Returns false after reporting an error (a pass
/// failed, the IR did not verify, or printAfter names no pass).
bool runPipeline(Module& m, DiagEngine& diags, const PipelineOptions& opts);

/// Verifies `m`, runs the pass called `name`, and verifies the result; for
/// `fnkc --pass=NAME` and golden tests. Reports unknown names.
bool runPass(Module& m, std::string_view name, DiagEngine& diags);

// --- helpers for passes ---------------------------------------------------

/// True for ops that neither read nor write memory nor synchronize, so two
/// with equal operands and attributes compute the same value and an unused
/// one can be dropped. Loads are not pure: a store in between may change what
/// they read. A switch without default keeps this list complete.
bool isPure(OpKind k);

/// Inserts `op` into `b` before `pos` and returns it.
Operation* insertBefore(Block& b, Block::OpList::iterator pos, std::unique_ptr<Operation> op);

}  // namespace fnk::ir
