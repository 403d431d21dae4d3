// NumPy .npy files (format versions 1, 2 and 3), the exchange format for kernel
// inputs, outputs and references. Little-endian, C order only. dtypes:
//   <f8 <f4 <f2 <i8 <i4 <i2 |i1 |u1 <u4 |b1, and bf16 (see writeNpy).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "support/HostArray.h"
#include "support/Status.h"

namespace fnk {

/// Reads `path` into `out`. Any problem (missing file, bad magic, a header that
/// is malformed or too large, an unsupported dtype, fortran order, data shorter
/// than the shape) is an error naming the file; `out` is then unspecified.
Status readNpy(const std::string& path, HostArray& out);

/// Writes a version 1.0 file (2.0 when the header needs it). Values are
/// rounded to `dtype` first. bf16, which NumPy lacks, is written with descr
/// 'bfloat16' (np.load reads it once ml_dtypes is imported); readNpy also
/// accepts '<V2'/'|V2' as bf16, which is what np.save writes for
/// ml_dtypes.bfloat16 arrays.
Status writeNpy(const std::string& path, ir::DType dtype, const std::vector<int64_t>& shape,
                const std::vector<double>& data);
inline Status writeNpy(const std::string& path, const HostArray& a) {
  return writeNpy(path, a.dtype, a.shape, a.data);
}

/// Parses an in-memory .npy image; `name` is used in messages. readNpy is
/// this over the file's bytes (exposed for tests and for .npz members later).
Status parseNpy(const std::string& bytes, const std::string& name, HostArray& out);

}  // namespace fnk
