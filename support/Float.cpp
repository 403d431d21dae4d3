#include "support/Float.h"

#include <bit>
#include <cmath>
#include <limits>

namespace fnk {

namespace {

// Rounds to a binary float format of `p` significand bits (implicit bit
// included) with normal exponents [emin, emax], ties to even. Works on the
// double's bits for normal results because that is several times faster than
// frexp/ldexp, and the interpreter rounds every element of every bf16 op.
double roundToBinary(double x, int p, int emin, int emax) {
  if (!std::isfinite(x) || x == 0) return x;
  const double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax);
  double a = std::fabs(x);
  double r;
  if (a < std::ldexp(1.0, emin)) {
    // Subnormal in the target: adding C moves the binary point so that the
    // double's last bit weighs one target quantum 2^(emin-p+1); the hardware
    // add then rounds to nearest even for us, and subtracting C is exact.
    const double c = std::ldexp(1.0, emin - p + 1 + 52);
    volatile double t = a + c;  // volatile: keep the two roundings apart
    r = t - c;
  } else {
    const int drop = 53 - p;  // low significand bits of the double to clear
    uint64_t u = std::bit_cast<uint64_t>(a);
    uint64_t lsb = (u >> drop) & 1;
    u += (uint64_t{1} << (drop - 1)) - 1 + lsb;  // a carry may bump the exponent: still right
    u &= ~((uint64_t{1} << drop) - 1);
    r = std::bit_cast<double>(u);
    if (r > maxFinite) r = std::numeric_limits<double>::infinity();
  }
  return std::signbit(x) ? -r : r;
}

double intMin(ir::DType t) {
  if (!ir::isSigned(t)) return 0;
  return -std::ldexp(1.0, ir::bitWidth(t) - 1);
}
// The largest value of `t` that a double holds; for i64 that is 2^63 - 1024,
// since 2^63 - 1 rounds up to 2^63, which is out of range.
double intMax(ir::DType t) {
  if (t == ir::DType::I1) return 1;
  int b = ir::bitWidth(t);
  double limit = ir::isSigned(t) ? std::ldexp(1.0, b - 1) : std::ldexp(1.0, b);
  return b > 53 ? std::nextafter(limit, 0.0) : limit - 1;
}

double wrapInt(double v, ir::DType t) {
  if (!std::isfinite(v)) return 0;
  v = std::trunc(v);
  if (t == ir::DType::I1) return v != 0 ? 1 : 0;
  if (v >= intMin(t) && v <= intMax(t)) return v + 0.0;  // +0.0 turns -0 into 0
  const double mod = std::ldexp(1.0, ir::bitWidth(t));
  double m = std::fmod(v, mod);
  if (m < 0) m += mod;
  if (ir::isSigned(t) && m >= mod / 2) m -= mod;
  return m + 0.0;
}

}  // namespace

double roundToBf16(double v) { return roundToBinary(v, 8, -126, 127); }
double roundToF16(double v) { return roundToBinary(v, 11, -14, 15); }

double roundToDType(double v, ir::DType t) {
  switch (t) {
    case ir::DType::F64: return v;
    case ir::DType::F32: return static_cast<double>(static_cast<float>(v));
    case ir::DType::BF16: return roundToBf16(v);
    case ir::DType::F16: return roundToF16(v);
    case ir::DType::I1:
    case ir::DType::I8:
    case ir::DType::I16:
    case ir::DType::I32:
    case ir::DType::I64:
    case ir::DType::U8:
    case ir::DType::U32: return wrapInt(v, t);
  }
  return v;
}

void roundInPlace(double* d, int64_t n, ir::DType t) {
  switch (t) {
    case ir::DType::F64: return;
    case ir::DType::F32:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(d[i]);
      return;
    case ir::DType::BF16:
      for (int64_t i = 0; i < n; ++i) d[i] = roundToBf16(d[i]);
      return;
    case ir::DType::F16:
      for (int64_t i = 0; i < n; ++i) d[i] = roundToF16(d[i]);
      return;
    case ir::DType::I1:
    case ir::DType::I8:
    case ir::DType::I16:
    case ir::DType::I32:
    case ir::DType::I64:
    case ir::DType::U8:
    case ir::DType::U32:
      for (int64_t i = 0; i < n; ++i) d[i] = wrapInt(d[i], t);
      return;
  }
}

double castToDType(double v, ir::DType from, ir::DType to) {
  if (to == ir::DType::I1) return v != 0 ? 1 : 0;  // NaN is nonzero, as `x != 0` on the GPU
  if (ir::isFloat(to)) return roundToDType(v, to);
  if (ir::isFloat(from)) {
    if (std::isnan(v)) return 0;
    v = std::trunc(v);
    if (v < intMin(to)) return intMin(to);
    if (v > intMax(to)) return intMax(to);
    return v + 0.0;
  }
  return wrapInt(v, to);
}

double poisonValue(ir::DType t) {
  switch (t) {
    case ir::DType::F16:
    case ir::DType::BF16:
    case ir::DType::F32:
    case ir::DType::F64: return std::numeric_limits<double>::quiet_NaN();
    case ir::DType::I1: return 1;
    case ir::DType::I8: return static_cast<int8_t>(0xA5);
    case ir::DType::U8: return 0xA5;
    case ir::DType::I16: return static_cast<int16_t>(0xA5A5);
    case ir::DType::I32: return static_cast<int32_t>(0xA5A5A5A5u);
    case ir::DType::U32: return 0xA5A5A5A5u;
    case ir::DType::I64: return static_cast<double>(static_cast<int64_t>(0xA5A5A5A5A5A5A000ull));
  }
  return 0;
}

uint16_t bf16Bits(double v) {
  double r = roundToBf16(v);
  if (std::isnan(r)) return std::signbit(r) ? 0xFFC0 : 0x7FC0;
  // r is a bf16 value, so it is exact as a float and its low 16 bits are zero.
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(r)) >> 16);
}

double bf16FromBits(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t f16Bits(double v) {
  double r = roundToF16(v);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isnan(r)) return sign | 0x7E00;
  if (std::isinf(r)) return sign | 0x7C00;
  double a = std::fabs(r);
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::ldexp(a, 24));  // subnormal or zero
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit weighs 2^(e-1)
  auto mant = static_cast<uint16_t>(std::ldexp(a, 11 - e) - 1024);
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | mant;
}

double f16FromBits(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exp = (bits >> 10) & 31;
  int mant = bits & 1023;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(1024 + mant, exp - 25);
}

}  // namespace fnk
