// The pass registry and pipeline: lookup, ordering, --print-after,
// --time-passes, verification around passes. What each pass does is covered
// by the golden tests in tests/lit/passes/.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/Parser.h"
#include "ir/Pass.h"
#include "ir/Printer.h"

namespace fnk::ir {
namespace {

const char* kModule = R"(module @m

kernel @k(%x: tensor<f32>[N], %y: out tensor<f32>[N])
launch {
  %0 = tile.constant {value = 1} : i32
  func.launch_grid %0, %0, %0
}
body {
  %1 = tile.constant {value = 0} : i32
  %2 = tile.load %x, %1 : f32
  %3 = tile.constant {value = 1.0} : f32
  %4 = tile.mul %2, %3 : f32
  %5 = tile.exp %4 : f32
  %6 = tile.exp %2 : f32
  %7 = tile.add %5, %6 : f32
  tile.store %y, %1, %7
  func.return
}
)";

struct Fixture {
  SourceManager sm;
  DiagEngine diags{sm};
  std::unique_ptr<Module> module;
  explicit Fixture(const std::string& text) {
    module = parseIR(sm, sm.addBuffer("t.fnkir", text), diags);
    EXPECT_TRUE(module) << diags.str();
  }
};

TEST(IRPass, RegistryFindsEveryPassByName) {
  ASSERT_GE(allPasses().size(), 3u);
  for (const PassInfo& p : allPasses()) EXPECT_EQ(findPass(p.name), &p);
  EXPECT_EQ(findPass("nope"), nullptr);
  EXPECT_TRUE(isPure(OpKind::Add));
  EXPECT_FALSE(isPure(OpKind::Load));
  EXPECT_FALSE(isPure(OpKind::ClusterReduce));
}

TEST(IRPass, PipelineSimplifiesAndPrintsAfterAPass) {
  Fixture f(kModule);
  std::ostringstream dump;
  PipelineOptions opts;
  opts.printAfter = "cse";
  opts.timePasses = true;
  opts.dump = &dump;
  ASSERT_TRUE(runPipeline(*f.module, f.diags, opts)) << f.diags.str();
  // x*1 is x, so the two exps merge, and the dead constant goes.
  EXPECT_EQ(toString(*f.module), R"(module @m

kernel @k(%x: tensor<f32>[N], %y: out tensor<f32>[N])
launch {
  %0 = tile.constant {value = 1} : i32
  func.launch_grid %0, %0, %0
}
body {
  %1 = tile.constant {value = 0} : i32
  %2 = tile.load %x, %1 : f32
  %3 = tile.exp %2 : f32
  %4 = tile.add %3, %3 : f32
  tile.store %y, %1, %4
  func.return
}
)");
  std::string d = dump.str();
  EXPECT_NE(d.find("IR after cse"), std::string::npos) << d;
  EXPECT_NE(d.find("%5 = tile.add %4, %4 : f32"), std::string::npos) << d;  // the constant 1.0 is still there
  EXPECT_EQ(d.find("IR after dce"), std::string::npos) << d;
  for (const char* name : {"canonicalize", "cse", "dce", "total"})
    EXPECT_NE(d.find(std::string(" ms  ") + name), std::string::npos) << d;
  // Pass output is printable IR that parses back to itself.
  Fixture again(toString(*f.module));
  EXPECT_EQ(toString(*again.module), toString(*f.module));
}

TEST(IRPass, PipelineRejectsBadInputAndUnknownNames) {
  Fixture f(std::string(kModule).replace(std::string(kModule).find("%7 = tile.add %5, %6"), 20, "%7 = tile.add %5, %1"));
  EXPECT_FALSE(runPipeline(*f.module, f.diags, PipelineOptions{}));
  EXPECT_NE(f.diags.str().find("tile.add operands have different types: f32 and i32"), std::string::npos);

  Fixture g(kModule);
  PipelineOptions opts;
  opts.printAfter = "licm";
  EXPECT_FALSE(runPipeline(*g.module, g.diags, opts));
  EXPECT_NE(g.diags.str().find("unknown pass 'licm' in --print-after"), std::string::npos);
  EXPECT_FALSE(runPass(*g.module, "licm", g.diags));
  EXPECT_NE(g.diags.str().find("unknown pass 'licm'"), std::string::npos);
}

TEST(IRPass, PrintAfterAPassThePipelineSkipsWarns) {
  for (const char* name : {"layout", "cse"}) {
    Fixture f(kModule);
    std::ostringstream dump;
    PipelineOptions opts;
    opts.printAfter = name;
    opts.dump = &dump;
    ASSERT_TRUE(runPipeline(*f.module, f.diags, opts)) << f.diags.str();
    const bool ran = std::string(name) == "cse";
    EXPECT_EQ(dump.str().find("IR after") != std::string::npos, ran) << name;
    EXPECT_EQ(f.diags.str().find("did not run in this pipeline, so --print-after printed nothing") != std::string::npos,
              !ran)
        << f.diags.str();
  }
}

TEST(IRPass, RunPassRunsOnePass) {
  Fixture f(kModule);
  ASSERT_TRUE(runPass(*f.module, "dce", f.diags)) << f.diags.str();
  EXPECT_EQ(toString(*f.module), kModule);  // nothing is dead before canonicalize
  ASSERT_TRUE(runPass(*f.module, "canonicalize", f.diags));
  ASSERT_TRUE(runPass(*f.module, "dce", f.diags));
  EXPECT_EQ(toString(*f.module).find("tile.mul"), std::string::npos);
}

}  // namespace
}  // namespace fnk::ir
