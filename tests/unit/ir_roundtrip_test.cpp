// Printing the parse of printed IR gives the same text, over every .fnk file of
// stdlib/, examples/ and bench/ (the candidate schedules): each is elaborated
// (with its defaults, and with T=f32 where every kernel takes a dtype T),
// printed before and after the standard pipeline, parsed back with
// ir::parseIR, verified and printed again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/Elaborate.h"
#include "frontend/Program.h"
#include "ir/Parser.h"
#include "ir/Pass.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/Diagnostics.h"

namespace fnk {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sourceFiles() {
  std::vector<std::string> out;
  for (const char* dir : {"stdlib", "examples", "bench"}) {
    fs::path root = fs::path(FNK_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().extension() == ".fnk")
        out.push_back(fs::relative(e.path(), FNK_SOURCE_DIR).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Parses `text`, verifies it and prints it again.
::testing::AssertionResult roundTrips(const std::string& what, const std::string& text) {
  SourceManager sm;
  DiagEngine diags(sm);
  int id = sm.addBuffer(what + ".fnkir", text);
  std::unique_ptr<ir::Module> parsed = ir::parseIR(sm, id, diags);
  if (!parsed) return ::testing::AssertionFailure() << what << ": the printed IR does not parse:\n" << diags.str();
  if (!ir::verify(*parsed, diags))
    return ::testing::AssertionFailure() << what << ": the parsed IR does not verify:\n" << diags.str();
  std::string again = ir::toString(*parsed);
  if (again != text) {
    // Point at the first line that differs.
    std::istringstream a(text), b(again);
    std::string la, lb;
    int line = 1;
    while (true) {
      bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
      if (!ga && !gb) break;
      if (!ga || !gb || la != lb)
        return ::testing::AssertionFailure() << what << ": reprinted IR differs at line " << line << ":\n  printed:   "
                                             << (ga ? la : "<end>") << "\n  reprinted: " << (gb ? lb : "<end>");
      ++line;
    }
    return ::testing::AssertionFailure() << what << ": reprinted IR differs";
  }
  return ::testing::AssertionSuccess();
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, PrintParsePrint) {
  const std::string file = GetParam();
  // Which const sets to try: the defaults, and T=f32 when every kernel has T.
  std::vector<ConstOverrides> variants{{}};
  // A fresh source manager and program per load: each elaboration starts clean.
  auto load = [&](SourceManager& sm, DiagEngine& diags) {
    FrontendOptions fo;
    fo.stdlibDir = std::string(FNK_SOURCE_DIR) + "/stdlib";
    auto program = std::make_unique<Program>(sm, diags, fo);
    EXPECT_TRUE(program->loadFile(std::string(FNK_SOURCE_DIR) + "/" + file)) << diags.str();
    return program;
  };
  {
    SourceManager sm;
    DiagEngine diags(sm);
    auto loaded = load(sm, diags);
    ASSERT_FALSE(diags.hasErrors());
    const Program& program = *loaded;
    bool anyKernel = false, allHaveT = true;
    for (const auto& d : program.root()->decls) {
      if (!d->isKernel) continue;
      anyKernel = true;
      allHaveT &= std::any_of(d->generics.begin(), d->generics.end(), [](const auto& g) { return g.name == "T"; });
    }
    if (anyKernel && allHaveT) variants.push_back({{"T", "f32"}});
  }
  for (const ConstOverrides& consts : variants) {
    std::string what = file + (consts.empty() ? "" : " (T=f32)");
    SCOPED_TRACE(what);
    SourceManager sm;
    DiagEngine diags(sm);
    auto loaded = load(sm, diags);
    ASSERT_FALSE(diags.hasErrors());
    const Program& program = *loaded;
    std::unique_ptr<ir::Module> m = elaborateModule(program, consts, diags);
    ASSERT_TRUE(m) << diags.str();
    ASSERT_TRUE(ir::verify(*m, diags)) << diags.str();
    const std::string printed = ir::toString(*m);
    for (const auto& f : m->functions) {
      std::string header = "kernel @";
      header += f->name;
      EXPECT_NE(printed.find(header), std::string::npos) << "kernel " << f->name << " is not printed";
    }
    EXPECT_TRUE(roundTrips(what + " before the pipeline", printed));
    std::ostringstream dump;
    ir::PipelineOptions po;
    po.dump = &dump;
    ASSERT_TRUE(ir::runPipeline(*m, diags, po)) << diags.str() << dump.str();
    EXPECT_TRUE(roundTrips(what + " after the pipeline", ir::toString(*m)));
  }
}

std::string fileTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char ch : info.param) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(SourceFiles, RoundTripTest, ::testing::ValuesIn(sourceFiles()), fileTestName);

TEST(RoundTripFiles, FindsTheStdlibAndExamples) {
  std::vector<std::string> files = sourceFiles();
  EXPECT_NE(std::find(files.begin(), files.end(), "stdlib/norm/rmsnorm.fnk"), files.end());
  EXPECT_NE(std::find(files.begin(), files.end(), "examples/dit_modulate.fnk"), files.end());
}

}  // namespace
}  // namespace fnk
