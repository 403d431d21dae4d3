#include "ir/Types.h"

#include <algorithm>

namespace fnk::ir {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  int bits;
  bool isFloat, isSigned;
};
constexpr DTypeInfo kInfo[] = {
    {DType::I1, "i1", 1, false, false},     {DType::I8, "i8", 8, false, true},
    {DType::I16, "i16", 16, false, true},   {DType::I32, "i32", 32, false, true},
    {DType::I64, "i64", 64, false, true},   {DType::U8, "u8", 8, false, false},
    {DType::U32, "u32", 32, false, false},  {DType::F16, "f16", 16, true, true},
    {DType::BF16, "bf16", 16, true, true},  {DType::F32, "f32", 32, true, true},
    {DType::F64, "f64", 64, true, true},
};
const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

std::string_view dtypeName(DType t) { return info(t).name; }
std::optional<DType> parseDType(std::string_view name) {
  if (name == "bool") return DType::I1;
  for (const auto& i : kInfo)
    if (name == i.name) return i.t;
  return std::nullopt;
}
bool isFloat(DType t) { return info(t).isFloat; }
bool isInt(DType t) { return !info(t).isFloat; }
bool atomicAddable(DType t) {
  return t == DType::I32 || t == DType::U32 || t == DType::I64 || t == DType::F32 || t == DType::F64;
}
bool isSigned(DType t) { return info(t).isSigned; }
int bitWidth(DType t) { return info(t).bits; }
int byteSize(DType t) { return t == DType::I1 ? 1 : info(t).bits / 8; }

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeStr(const std::vector<int64_t>& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

std::string Type::str() const {
  auto list = [](const auto& xs) {
    std::string r = "[";
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i) r += ", ";
      if constexpr (std::is_same_v<std::decay_t<decltype(xs[i])>, std::string>) r += xs[i];
      else r += std::to_string(xs[i]);
    }
    return r + "]";
  };
  std::string dt(dtypeName(dtype));
  switch (kind) {
    case Kind::Tile: return shape.empty() ? dt : "tile<" + dt + ">" + list(shape);
    case Kind::Tensor: return std::string(isOut ? "out " : "") + "tensor<" + dt + ">" + list(dims);
    case Kind::Shared: return "shared<" + dt + ">" + list(shape);
  }
  return dt;
}

std::optional<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> r(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    r[i] = x == 1 ? y : x;
  }
  return r;
}

}  // namespace fnk::ir
