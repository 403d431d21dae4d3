// One element of a dtype in memory (little-endian, bool as one byte), read
// into or written from the double that HostArray holds. The one place that
// knows each dtype's bytes: .npy files, libfnk's caller memory and device
// buffers all go through it.
#pragma once
#include <cstring>

#include "ir/Types.h"

namespace fnk {

/// A little-endian T at `p` (the hosts fnk runs on are little-endian).
template <class T>
T loadLe(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void storeLe(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

/// Bytes one element occupies in memory (bool: 1).
int elementBytes(ir::DType t);
double loadElement(const void* p, ir::DType t);
/// Rounds `v` to `t` (support/Float.h) and writes it.
void storeElement(void* p, ir::DType t, double v);

}  // namespace fnk
