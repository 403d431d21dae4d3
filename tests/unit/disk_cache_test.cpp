// The on-disk module cache's entries: round trip, corruption and truncation
// detected as misses, and concurrent writers that always leave a whole entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "support/DiskCache.h"

namespace fnk {
namespace {

namespace fs = std::filesystem;

fs::path testRoot() { return fs::temp_directory_path() / ("fnk-cache-test-" + std::to_string(::getpid())); }

std::string tempDir() {
  fs::create_directories(testRoot());
  return testRoot().string();
}

// Removes the tests' directory once the suite is done.
class DiskCacheEnv : public ::testing::Environment {
public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(testRoot(), ec);
  }
};
const auto* const kDiskCacheEnv = ::testing::AddGlobalTestEnvironment(new DiskCacheEnv);

TEST(DiskCache, RoundTripsBinaryPayloads) {
  std::string path = tempDir() + "/a/b/k.cubin";  // directories are created
  std::string payload("\0\x01\xff cubin bytes\n", 16);
  writeCacheEntry(path, payload);
  std::string got;
  ASSERT_TRUE(readCacheEntry(path, got));
  EXPECT_EQ(got, payload);
  EXPECT_FALSE(readCacheEntry(tempDir() + "/missing", got));
}

TEST(DiskCache, CorruptOrTruncatedEntriesAreMisses) {
  std::string path = tempDir() + "/k2.cubin", payload(1000, 'x');
  writeCacheEntry(path, payload);
  std::string got;
  // Flip one payload byte: the checksum no longer matches.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(24 + 500);
    f.put('y');
  }
  EXPECT_FALSE(readCacheEntry(path, got));
  // Every truncation of a good entry is a miss.
  writeCacheEntry(path, payload);
  auto size = fs::file_size(path);
  for (auto keep : {uintmax_t(0), uintmax_t(7), uintmax_t(16), uintmax_t(23), size - 1}) {
    writeCacheEntry(path, payload);
    fs::resize_file(path, keep);
    EXPECT_FALSE(readCacheEntry(path, got)) << "kept " << keep << " bytes";
  }
  // Trailing garbage is not ours either.
  writeCacheEntry(path, payload);
  std::ofstream(path, std::ios::app) << "junk";
  EXPECT_FALSE(readCacheEntry(path, got));
}

TEST(DiskCache, ConcurrentWritersLeaveAWholeEntry) {
  std::string path = tempDir() + "/k3.cubin";
  // A whole entry before the race, so that every read below must hit.
  writeCacheEntry(path, std::string(100000, 'z'));
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) writeCacheEntry(path, std::string(100000 + t, static_cast<char>('a' + t)));
    });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        std::string got;
        if (!readCacheEntry(path, got) || got != std::string(got.size(), got[0])) ++bad;
      }
    });
  for (auto& w : writers) w.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(bad.load(), 0);
  std::string got;
  ASSERT_TRUE(readCacheEntry(path, got));
  EXPECT_EQ(got, std::string(got.size(), got[0]));
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace fnk
