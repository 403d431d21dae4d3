#include "support/DiskCache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace fnk {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'F', 'N', 'K', 'C', 'A', 'C', '1', '\n'};
constexpr uint64_t kMaxPayload = uint64_t(1) << 30;
}  // namespace

uint64_t fnv1a64(const std::string& s, uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool readCacheEntry(const std::string& path, std::string& payload) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  char magic[8];
  uint64_t len = 0, sum = 0;
  if (!f.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return false;
  if (!f.read(reinterpret_cast<char*>(&len), 8) || !f.read(reinterpret_cast<char*>(&sum), 8)) return false;
  if (len > kMaxPayload) return false;
  payload.resize(len);
  if (!f.read(payload.data(), static_cast<std::streamsize>(len))) return false;
  if (f.peek() != std::char_traits<char>::eof()) return false;  // trailing bytes: not ours
  return fnv1a64(payload) == sum;
}

void writeCacheEntry(const std::string& path, const std::string& payload) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::random_device rd;
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%08x%08x", static_cast<int>(getpid()), rd(), rd());
  fs::path tmp = path + suffix;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    uint64_t len = payload.size(), sum = fnv1a64(payload);
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&len), 8);
    f.write(reinterpret_cast<const char*>(&sum), 8);
    f.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    f.close();
    if (!f) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace fnk
