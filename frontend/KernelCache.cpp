#include "frontend/KernelCache.h"

#include "ir/Pass.h"
#include "ir/Verifier.h"
#include "support/Stack.h"

namespace fnk {

const ir::Function* KernelCache::get(const std::string& kernel, const ConstOverrides& consts, DiagEngine& diags) {
  std::string key = kernel;
  for (const auto& [k, v] : consts) key += "|" + k + "=" + v;
  if (auto it = instances_.find(key); it != instances_.end()) return it->second->functions.front().get();
  std::unique_ptr<ir::Module> mod;
  runWithLargeStack([&] {
    mod = elaborateModule(program_, consts, diags, kernel);
    if (mod && (!ir::verify(*mod, diags) || !ir::runPipeline(*mod, diags, {}))) mod.reset();
  });
  if (!mod || mod->functions.empty()) return nullptr;
  const ir::Function* f = mod->functions.front().get();
  instances_[key] = std::move(mod);
  return f;
}

}  // namespace fnk
