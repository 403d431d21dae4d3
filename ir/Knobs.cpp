#include "ir/Knobs.h"

#include <array>
#include <cstdlib>

namespace fnk::ir {

namespace {
constexpr std::array<const char*, 3> kNames = {"FNK_NO_WARP_ROWS", "FNK_SCHEDULE", "FNK_FULL_TILES"};  // in Knob's order
static_assert(kNames.size() == static_cast<size_t>(Knob::FullTiles) + 1, "one name per Knob");

const std::array<std::string, kNames.size()>& texts() {
  static const std::array<std::string, kNames.size()> t = [] {
    std::array<std::string, kNames.size()> r;
    for (size_t i = 0; i < kNames.size(); ++i)
      if (const char* e = std::getenv(kNames[i])) r[i] = e;
    return r;
  }();
  return t;
}
}  // namespace

bool knob(Knob k, bool dflt) {
  const std::string& t = texts()[static_cast<size_t>(k)];
  return t.empty() ? dflt : t != "0";
}

std::string knobKey() {
  std::string k;
  for (const std::string& t : texts()) k += "|" + t;
  return k;
}

}  // namespace fnk::ir
