// Entries of an on-disk cache (compiled kernels): each file holds a magic
// header, the payload's length and a checksum, then the payload. A reader
// detects a corrupt or truncated entry and reports a miss, so the caller
// rebuilds it. A writer writes a private temporary file and renames it into
// place, so concurrent writers (two processes compiling one kernel) leave a
// whole entry, never a mix.
#pragma once
#include <cstdint>
#include <string>

namespace fnk {

uint64_t fnv1a64(const std::string& s, uint64_t seed = 1469598103934665603ull);

/// False when the entry is missing, corrupt or truncated.
bool readCacheEntry(const std::string& path, std::string& payload);
/// Creates the directory as needed. A cache that cannot be written is only
/// slower, so failures are silent.
void writeCacheEntry(const std::string& path, const std::string& payload);

}  // namespace fnk
