// libFuzzer target over everything that reads text: the fnk front end (parse,
// imports of the stdlib, elaboration to IR, verification, the pass pipeline)
// and the IR text parser. The first byte picks the reader, so one corpus
// covers both. Any crash, hang, sanitizer report or leak is a bug: malformed
// input must end in diagnostics.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontend/Elaborate.h"
#include "frontend/Program.h"
#include "ir/Parser.h"
#include "ir/Pass.h"
#include "ir/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  fnk::SourceManager sm;
  fnk::DiagEngine diags(sm);
  std::unique_ptr<fnk::ir::Module> m;
  if (data[0] & 1) {
    int id = sm.addBuffer("fuzz.fnkir", text);
    m = fnk::ir::parseIR(sm, id, diags);
  } else {
    fnk::Program program(sm, diags, {});
    if (program.loadBuffer("fuzz.fnk", text)) m = fnk::elaborateModule(program, {}, diags);
  }
  if (m && fnk::ir::verify(*m, diags)) (void)fnk::ir::runPipeline(*m, diags, {});
  (void)diags.str();  // rendering diagnostics must not crash either
  return 0;
}
