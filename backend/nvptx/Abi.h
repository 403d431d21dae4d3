// The launch ABI of a kernel compiled by backend/nvptx, shared by the code
// generator (which declares the parameters) and the runtime (which packs the
// arguments). In the order of ir::Function::params:
//
//   tensor<T>[d0, ..., dk-1]  -> T* (global address space), then one i64 per dim
//                                (row-major, contiguous: strides follow from dims)
//   scalar i1/i8/i16/i32/u8/u32 -> i32 (zero- or sign-extended by the host)
//   scalar i64                -> i64
//   scalar f16/bf16/f32       -> f32 (rounded to the dtype in the kernel)
//   scalar f64                -> f64
//
// Tensors must be row-major contiguous and their base address aligned to
// their element size; vector accesses check 16-byte alignment at run time.
#pragma once
#include <vector>

#include "ir/IR.h"

namespace fnk::nvptx {

/// A kernel whose shared memory passes the 48 KiB a kernel may declare
/// statically uses dynamic shared memory, and its module exports the bytes
/// it needs as this global (a .u32 in global memory): the loader reads it,
/// opts the function in to that much and passes it at every launch.
inline constexpr const char* kDynamicSharedSymbol = "fnk_dyn_smem_bytes";

/// A kernel compiled for programmatic dependent launch (every kernel unless
/// FNK_PDL=0) exports this global (a .u32 1): it waits at its entry until the
/// previous kernel has finished and its writes are visible
/// (griddepcontrol.wait); with FNK_PDL=1 it also lets the next kernel in the
/// stream launch as soon as all its CTAs have started
/// (griddepcontrol.launch_dependents). Launchers that find it launch the
/// kernel with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, so its
/// launch overlaps the previous kernel's tail; without the attribute the two
/// instructions do nothing.
inline constexpr const char* kPdlSymbol = "fnk_pdl";

enum class AbiKind { Ptr, I32, I64, F32, F64 };

struct AbiSlot {
  AbiKind kind;
  int param;  // index into Function::params
  int dim;    // for the i64 dims of a tensor: which dim; -1 otherwise
};

inline AbiKind scalarAbi(ir::DType t) {
  switch (t) {
    case ir::DType::I64: return AbiKind::I64;
    case ir::DType::F16: case ir::DType::BF16: case ir::DType::F32: return AbiKind::F32;
    case ir::DType::F64: return AbiKind::F64;
    default: return AbiKind::I32;
  }
}

inline std::vector<AbiSlot> kernelAbi(const ir::Function& fn) {
  std::vector<AbiSlot> slots;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Type& t = fn.params[i].type;
    if (t.isTensor()) {
      slots.push_back({AbiKind::Ptr, static_cast<int>(i), -1});
      for (size_t d = 0; d < t.dims.size(); ++d) slots.push_back({AbiKind::I64, static_cast<int>(i), static_cast<int>(d)});
    } else {
      slots.push_back({scalarAbi(t.dtype), static_cast<int>(i), -1});
    }
  }
  return slots;
}

}  // namespace fnk::nvptx
