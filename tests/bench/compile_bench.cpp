// Compile speed of the front end: parse → check → IR (and the pass pipeline)
// for each stdlib and example file. Numbers go in docs/perf-notes.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/Elaborate.h"
#include "frontend/Parse.h"
#include "ir/Pass.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void parseOnly(benchmark::State& state, std::string path) {
  std::string text = readFile(path);
  for (auto _ : state) {
    fnk::SourceManager sm;
    fnk::DiagEngine diags(sm);
    int id = sm.addBuffer(path, text);
    auto m = fnk::parseSource(sm, id, diags);
    if (!m) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(m);
  }
}

void toIR(benchmark::State& state, std::string path, bool pipeline) {
  std::string text = readFile(path);
  for (auto _ : state) {
    fnk::SourceManager sm;
    fnk::DiagEngine diags(sm);
    fnk::Program program(sm, diags, {});
    if (!program.loadBuffer(path, text)) state.SkipWithError("load failed");
    auto m = fnk::elaborateModule(program, {}, diags);
    if (!m) state.SkipWithError("elaboration failed");
    if (pipeline && m) (void)fnk::ir::runPipeline(*m, diags, {});
    benchmark::DoNotOptimize(m);
  }
}

int registerAll() {
  for (const char* dir : {"stdlib/norm", "examples"}) {
    std::filesystem::path d = std::filesystem::path(FNK_SOURCE_DIR) / dir;
    for (const auto& e : std::filesystem::directory_iterator(d)) {
      if (e.path().extension() != ".fnk") continue;
      std::string p = e.path().string(), name = std::string(dir) + "/" + e.path().filename().string();
      benchmark::RegisterBenchmark(("parse/" + name).c_str(), parseOnly, p)->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("ir/" + name).c_str(), toIR, p, false)->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("ir+passes/" + name).c_str(), toIR, p, true)->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}
const int registered = registerAll();

}  // namespace

BENCHMARK_MAIN();
