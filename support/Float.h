// Rounding to fnk dtypes and bit conversions for the 16-bit float formats.
// The interpreter holds every element as a double and rounds it to its dtype
// after each op with these functions, so its results carry the rounding the GPU
// applies; the .npy reader/writer uses the bit conversions.
#pragma once
#include <cstdint>

#include "ir/Types.h"

namespace fnk {

/// Rounds to the nearest bf16 value, ties to even; overflow gives inf, NaN stays NaN.
double roundToBf16(double v);
/// Rounds to the nearest f16 value, ties to even, with f16 subnormals; overflow gives inf.
double roundToF16(double v);

/// Rounds `v` to the value set of `t`: floats round to nearest even (f32 via
/// the hardware conversion), integers truncate toward zero and wrap to their
/// width (NaN gives 0), i1 is 1 for any nonzero value.
double roundToDType(double v, ir::DType t);

/// Rounds every element of `data[0, n)` in place; the dtype switch is outside
/// the loop so whole tiles round quickly.
void roundInPlace(double* data, int64_t n, ir::DType t);

/// A value conversion between dtypes (tile.cast): float to int truncates toward
/// zero and saturates (NaN gives 0); int to int wraps; anything to i1 is "nonzero";
/// to a float rounds to nearest even.
double castToDType(double v, ir::DType from, ir::DType to);

/// The value written into memory that a kernel should not read before writing
/// (poisoned outputs, fresh shared buffers): NaN for floats, 0xA5.. patterns for ints.
double poisonValue(ir::DType t);

/// Bit patterns of the 16-bit float formats. The encoders round to nearest even.
uint16_t bf16Bits(double v);
double bf16FromBits(uint16_t bits);
uint16_t f16Bits(double v);
double f16FromBits(uint16_t bits);

}  // namespace fnk
