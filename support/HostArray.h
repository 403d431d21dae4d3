// A dense row-major array on the host, the one form in which data enters and
// leaves fnk: .npy files are read into it, the interpreter runs on it (as
// interp::HostTensor) and the runtime copies it to and from the device.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/Types.h"

namespace fnk {

/// Elements are held as double, each already a value of `dtype` (integers are
/// exact up to 2^53; i64 values beyond that are rounded).
struct HostArray {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace fnk
