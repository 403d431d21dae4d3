// The elementwise rules of tile IR. Floats compute in double and round once to
// the result dtype: for f32/f16/bf16 operands this gives correctly rounded
// add/sub/mul/div/sqrt, because double has more than 2p+2 significand bits
// (Figueroa, "When is double rounding innocuous?"). Integers compute in 64-bit
// two's complement and wrap to their width, as the GPU's integer units do.
#include <bit>
#include <cmath>
#include <limits>

#include "backend/interp/Eval.h"
#include "support/Float.h"

namespace fnk::interp::detail {

namespace {

using ir::DType;

// Tile elements of an integer dtype are integers already wrapped to their
// width, so this conversion is exact and defined; the guard keeps malformed
// inputs (a float tile fed to an int op) from undefined behaviour.
int64_t asInt(double v) {
  if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18)) return 0;
  return static_cast<int64_t>(v);
}

// Wraps a 64-bit two's complement result to the width of `t` (i1 keeps the low bit).
double wrapBits(uint64_t r, DType t) {
  if (t == DType::I1) return static_cast<double>(r & 1);
  int b = ir::bitWidth(t);
  if (b >= 64) return static_cast<double>(static_cast<int64_t>(r));
  uint64_t m = r & ((uint64_t{1} << b) - 1);
  if (ir::isSigned(t) && (m >> (b - 1))) return static_cast<double>(static_cast<int64_t>(m) - (int64_t{1} << b));
  return static_cast<double>(m);
}

template <class F>
void map1(const double* a, double* r, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) r[i] = f(a[i]);
}
template <class F>
void map2(const double* a, const double* b, double* r, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) r[i] = f(a[i], b[i]);
}

Status opError(const ir::Operation& op, const std::string& m) { return Status::error(std::string(op.name()) + ": " + m); }

Status intPow(const ir::Operation& op, DType t, const double* a, const double* b, double* r, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t base = asInt(a[i]), e = asInt(b[i]);
    if (e < 0) {
      if (base == 0) return opError(op, "integer 0 raised to a negative power");
      r[i] = base == 1 ? 1 : base == -1 ? (e % 2 ? -1 : 1) : 0;  // truncation of 1/base^|e|
      continue;
    }
    uint64_t acc = 1, x = static_cast<uint64_t>(base);
    for (auto k = static_cast<uint64_t>(e); k; k >>= 1, x *= x)
      if (k & 1) acc *= x;
    r[i] = wrapBits(acc, t);
  }
  return Status::ok();
}

Status intBinary(const ir::Operation& op, DType t, const double* a, const double* b, double* r, int64_t n) {
  const int width = ir::bitWidth(t);
  auto u = [](double v) { return static_cast<uint64_t>(asInt(v)); };
  switch (op.kind()) {
    case ir::OpKind::Add: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) + u(y), t); }); break;
    case ir::OpKind::Sub: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) - u(y), t); }); break;
    case ir::OpKind::Mul: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) * u(y), t); }); break;
    case ir::OpKind::Div:
    case ir::OpKind::Rem: {
      bool div = op.kind() == ir::OpKind::Div;
      for (int64_t i = 0; i < n; ++i) {
        int64_t x = asInt(a[i]), y = asInt(b[i]);
        if (y == 0) return opError(op, std::string("integer ") + (div ? "division" : "remainder") + " by zero");
        if (y == -1) r[i] = div ? wrapBits(0 - static_cast<uint64_t>(x), t) : 0;  // INT_MIN / -1 wraps
        else r[i] = wrapBits(static_cast<uint64_t>(div ? x / y : x % y), t);
      }
      break;
    }
    case ir::OpKind::Pow: return intPow(op, t, a, b, r, n);
    case ir::OpKind::Min: map2(a, b, r, n, [](double x, double y) { return x < y ? x : y; }); break;
    case ir::OpKind::Max: map2(a, b, r, n, [](double x, double y) { return x > y ? x : y; }); break;
    case ir::OpKind::And: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) & u(y), t); }); break;
    case ir::OpKind::Or: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) | u(y), t); }); break;
    case ir::OpKind::Xor: map2(a, b, r, n, [&](double x, double y) { return wrapBits(u(x) ^ u(y), t); }); break;
    // Shift amounts outside [0, width) give what PTX's clamped shifts give:
    // 0, or the sign fill for an arithmetic right shift.
    case ir::OpKind::Shl:
      map2(a, b, r, n, [&](double x, double y) {
        int64_t s = asInt(y);
        return s < 0 || s >= width ? 0.0 : wrapBits(u(x) << s, t);
      });
      break;
    case ir::OpKind::Shr:
      map2(a, b, r, n, [&](double x, double y) {
        int64_t v = asInt(x), s = asInt(y);
        if (s < 0 || s >= width) return v < 0 ? -1.0 : 0.0;
        return wrapBits(static_cast<uint64_t>(v >> s), t);  // v is sign-extended, so >> is arithmetic
      });
      break;
    default: return opError(op, "internal error: not an integer binary op");
  }
  return Status::ok();
}

Status floatBinary(const ir::Operation& op, DType in, const double* a, const double* b, double* r, int64_t n) {
  switch (op.kind()) {
    case ir::OpKind::Add: map2(a, b, r, n, [](double x, double y) { return x + y; }); break;
    case ir::OpKind::Sub: map2(a, b, r, n, [](double x, double y) { return x - y; }); break;
    case ir::OpKind::Mul: map2(a, b, r, n, [](double x, double y) { return x * y; }); break;
    case ir::OpKind::Div: map2(a, b, r, n, [](double x, double y) { return x / y; }); break;
    case ir::OpKind::Rem: map2(a, b, r, n, [](double x, double y) { return std::fmod(x, y); }); break;
    case ir::OpKind::Pow: map2(a, b, r, n, [](double x, double y) { return std::pow(x, y); }); break;
    // fmin/fmax: a NaN operand yields the other operand, as PTX min/max.f32 do.
    case ir::OpKind::Min: map2(a, b, r, n, [](double x, double y) { return std::fmin(x, y); }); break;
    case ir::OpKind::Max: map2(a, b, r, n, [](double x, double y) { return std::fmax(x, y); }); break;
    default:
      return opError(op, std::string("needs integer operands, got ") + std::string(ir::dtypeName(in)));
  }
  return Status::ok();
}

}  // namespace

Status evalBinary(const ir::Operation& op, DType in, DType out, const double* a, const double* b, double* r,
                  int64_t n) {
  if (op.kind() == ir::OpKind::Cmp) {
    std::string p = op.attrs().getStr("pred");
    // Comparisons on doubles are exact for every dtype's values; NaN compares
    // unequal and unordered (only "ne" is true), like the ordered PTX predicates.
    if (p == "lt") map2(a, b, r, n, [](double x, double y) { return x < y ? 1.0 : 0.0; });
    else if (p == "le") map2(a, b, r, n, [](double x, double y) { return x <= y ? 1.0 : 0.0; });
    else if (p == "gt") map2(a, b, r, n, [](double x, double y) { return x > y ? 1.0 : 0.0; });
    else if (p == "ge") map2(a, b, r, n, [](double x, double y) { return x >= y ? 1.0 : 0.0; });
    else if (p == "eq") map2(a, b, r, n, [](double x, double y) { return x == y ? 1.0 : 0.0; });
    else if (p == "ne") map2(a, b, r, n, [](double x, double y) { return x != y ? 1.0 : 0.0; });
    else return opError(op, "unknown predicate '" + p + "'");
    if (out != DType::I1) roundInPlace(r, n, out);
    return Status::ok();
  }
  Status s = ir::isInt(in) ? intBinary(op, in, a, b, r, n) : floatBinary(op, in, a, b, r, n);
  if (s && (ir::isFloat(in) || out != in)) roundInPlace(r, n, out);
  return s;
}

Status evalUnary(const ir::Operation& op, DType in, DType out, const double* a, double* r, int64_t n) {
  const bool isInt = ir::isInt(in);
  auto u = [](double v) { return static_cast<uint64_t>(asInt(v)); };
  switch (op.kind()) {
    case ir::OpKind::Neg:
      if (isInt) map1(a, r, n, [&](double x) { return wrapBits(0 - u(x), in); });
      else map1(a, r, n, [](double x) { return -x; });
      break;
    case ir::OpKind::Not:
      if (!isInt) return opError(op, "needs an integer operand, got " + std::string(ir::dtypeName(in)));
      map1(a, r, n, [&](double x) { return wrapBits(~u(x), in); });  // on i1 this is logical not
      break;
    case ir::OpKind::Abs:
      if (isInt) map1(a, r, n, [&](double x) { return x < 0 ? wrapBits(0 - u(x), in) : x; });
      else map1(a, r, n, [](double x) { return std::fabs(x); });
      break;
    case ir::OpKind::Exp: map1(a, r, n, [](double x) { return std::exp(x); }); break;
    case ir::OpKind::Exp2: map1(a, r, n, [](double x) { return std::exp2(x); }); break;
    case ir::OpKind::Log: map1(a, r, n, [](double x) { return std::log(x); }); break;
    case ir::OpKind::Log2: map1(a, r, n, [](double x) { return std::log2(x); }); break;
    case ir::OpKind::Sqrt: map1(a, r, n, [](double x) { return std::sqrt(x); }); break;
    case ir::OpKind::Rsqrt: map1(a, r, n, [](double x) { return 1.0 / std::sqrt(x); }); break;
    case ir::OpKind::Tanh: map1(a, r, n, [](double x) { return std::tanh(x); }); break;
    case ir::OpKind::Erf: map1(a, r, n, [](double x) { return std::erf(x); }); break;
    case ir::OpKind::Sigmoid: map1(a, r, n, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }); break;
    default: return opError(op, "internal error: not a unary op");
  }
  roundInPlace(r, n, out);
  return Status::ok();
}

Status evalFma(DType in, DType out, const double* a, const double* b, const double* c, double* r, int64_t n) {
  if (ir::isInt(in)) {
    for (int64_t i = 0; i < n; ++i)
      r[i] = wrapBits(static_cast<uint64_t>(asInt(a[i])) * static_cast<uint64_t>(asInt(b[i])) +
                          static_cast<uint64_t>(asInt(c[i])),
                      in);
  } else if (in == DType::F64 || out == DType::F64) {
    for (int64_t i = 0; i < n; ++i) r[i] = std::fma(a[i], b[i], c[i]);
  } else {
    // a*b is exact in double for f32/f16/bf16 operands. The sum is formed with
    // round-to-odd (TwoSum gives the error, an inexact even result moves one
    // ulp toward it), and a round-to-odd double rounds to the narrow format as
    // the exact sum would: a*b+c rounded once (Boldo & Melquiond 2008).
    for (int64_t i = 0; i < n; ++i) {
      double p = a[i] * b[i], s = p + c[i];
      double bb = s - p;
      double e = (p - (s - bb)) + (c[i] - bb);
      if (e != 0 && std::isfinite(s) && (std::bit_cast<uint64_t>(s) & 1) == 0)
        s = std::nextafter(s, e > 0 ? INFINITY : -INFINITY);
      r[i] = s;
    }
  }
  roundInPlace(r, n, out);
  return Status::ok();
}

void evalCast(DType in, DType out, const double* a, double* r, int64_t n) {
  for (int64_t i = 0; i < n; ++i) r[i] = castToDType(a[i], in, out);
}

}  // namespace fnk::interp::detail
